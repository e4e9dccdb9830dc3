"""A decision's looks as recorded (issue 39): each look after a batch, stopping at the
boundary; the replay recomputes every look bit for bit and names the first difference."""

from __future__ import annotations

import msgspec

from reconciler.model import DecisionRecord, DecisionSpec
from reconciler.results.sequential import batch_ends
from reconciler.results.sequential.record import first_difference, record_look, report
from tests.support.decisions import pay_all as run
from tests.support.decisions import per_task_diffs, start


def test_a_clear_difference_stops_early_and_reports_the_saving() -> None:
    spec = DecisionSpec(margin_pp=10, seed=3, looks=4)
    record = run(start(spec), per_task_diffs(0.25, seed=1), usd_per_task=0.5)
    assert record.verdict == "better"
    out = report(record, dollars_per_task=0.5)
    assert out["tasks_used"] < record.max_tasks  # type: ignore[operator]
    assert len(out["looks"]) == len(record.looks) < spec.looks  # type: ignore[arg-type]
    assert out["dollars_spent"] == out["tasks_used"] * 0.5  # type: ignore[operator]
    assert out["dollars_saved"] == record.fixed_tasks * 0.5 - out["dollars_spent"]
    assert 0 < out["alpha_spent"] < spec.alpha  # type: ignore[operator]
    last = record.looks[-1]
    assert abs(last.statistic) >= last.boundary


def test_no_difference_runs_on_and_never_declares_one() -> None:
    spec = DecisionSpec(margin_pp=10, seed=3, looks=4)
    record = run(start(spec), per_task_diffs(0.0, seed=2), usd_per_task=0.5)
    assert record.verdict in ("no change", "inconclusive")
    assert all(abs(r.statistic) < r.boundary for r in record.looks)


def test_the_replay_matches_after_a_round_trip_through_the_lockfile_encoding() -> None:
    spec = DecisionSpec(margin_pp=10, seed=3, looks=4)
    diffs = per_task_diffs(0.15, seed=4)
    record = run(start(spec), diffs, usd_per_task=0.5)
    stored = msgspec.json.decode(msgspec.json.encode(record), type=DecisionRecord)
    assert stored == record
    assert first_difference(stored, diffs) is None


def test_the_replay_names_the_first_difference() -> None:
    spec = DecisionSpec(margin_pp=10, seed=3, looks=4)
    diffs = per_task_diffs(0.15, seed=4)
    record = run(start(spec), diffs, usd_per_task=0.5)
    changed = dict(diffs)
    first_task = record.order[0]
    changed[first_task] = diffs[first_task] - 1.0 / 3
    found = first_difference(record, changed)
    assert found is not None and found.startswith("look 1: total recorded ")
    tampered = record.model_copy(
        update={
            "looks": (record.looks[0].model_copy(update={"verdict": "worse"}), *record.looks[1:])
        }
    )
    assert (
        first_difference(tampered, diffs)
        == "look 1: verdict recorded 'worse', recomputed 'continue'"
    )


def test_the_lockfile_keeps_a_decision_exactly_and_only_when_there_is_one() -> None:
    from reconciler.state.lockfile import new_state, parse, serialize

    spec = DecisionSpec(margin_pp=10.0, seed=3, looks=4, budget_usd=250.0, where="b/ab.toml:9")
    diffs = per_task_diffs(0.15, seed=4)
    record = run(start(spec), diffs, usd_per_task=0.37)
    empty = new_state("local", "acme/evals")
    assert "decisions" not in serialize(empty)
    state = empty.model_copy(update={"decisions": {"tb/ab": record}})
    text = serialize(state)
    assert '\n[decisions."tb/ab"]\nversion = 1\n' in text
    assert '\n[decisions."tb/ab".spec]\nmargin_pp = 10.0\n' in text
    assert text.count('[[decisions."tb/ab".looks]]') == len(record.looks)
    again = parse(text, "state/osmosis.lock")
    assert again.decisions == {"tb/ab": record}
    assert serialize(again) == text
    assert first_difference(again.decisions["tb/ab"], diffs) is None


def test_a_decision_of_an_unknown_version_is_refused_with_its_line() -> None:
    import pytest

    from reconciler.errors import StateError
    from reconciler.state.lockfile import new_state, parse, serialize

    record = start(DecisionSpec(margin_pp=10, seed=3))
    text = serialize(new_state("local", "w").model_copy(update={"decisions": {"a": record}}))
    with pytest.raises(StateError) as caught:
        parse(text.replace("version = 1\nmax_tasks", "version = 2\nmax_tasks"), "osmosis.lock")
    assert "decisions.a.version" in str(caught.value)
    assert "reads decision version 1" in str(caught.value)


def pay(record: DecisionRecord, diffs: dict[str, float], usd: float) -> DecisionRecord:
    """The apply's loop as ``next_batch`` drives it: pay the slice, then look."""
    from reconciler.results.sequential.record import next_batch

    while (batch := next_batch(record, usd)) is not None:
        record = record.model_copy(
            update={
                "batch_ends": (*record.batch_ends, batch.end),
                "batch_runs": (*record.batch_runs, f"run-{batch.index}"),
                "dollars_spent": record.dollars_spent + len(batch.tasks) * usd,
            }
        )
        record = record_look(record, diffs, last=batch.last)
    return record


def test_batches_are_consecutive_slices_of_the_order_until_a_verdict() -> None:
    from reconciler.results.sequential.record import next_batch

    spec = DecisionSpec(margin_pp=10.0, seed=3, looks=4)
    record = start(spec)
    first = next_batch(record, 0.5)
    assert first is not None and first.index == 1 and not first.last
    assert first.tasks == record.order[: first.end]
    assert first.end == batch_ends(record.max_tasks, 4)[0]
    paid = record.model_copy(update={"batch_ends": (first.end,)})
    assert next_batch(paid, 0.5) is None  # no second batch before the first look
    # The same decisions as the loop by hand, stopping at the same look.
    diffs = per_task_diffs(0.25, seed=1)
    assert pay(record, diffs, 0.5) == run(record, diffs, 0.5)
    still = pay(record, per_task_diffs(0.0, seed=2), 0.5)
    assert still.verdict != "continue" and next_batch(still, 0.5) is None


def test_the_budget_cuts_the_last_batch_and_is_never_overshot() -> None:
    spec = DecisionSpec(margin_pp=10.0, seed=3, looks=4, budget_usd=40.0)
    record = pay(start(spec), per_task_diffs(0.0, seed=2), 0.5)
    assert record.dollars_spent <= 40.0
    # $0.50 at worst a task: 79 tasks fit (each cost rounded up by a nanodollar), 80 do not.
    assert record.batch_ends[-1] == 79
    assert record.looks[-1].final
    assert record.verdict in ("inconclusive", "no change", "better", "worse")
