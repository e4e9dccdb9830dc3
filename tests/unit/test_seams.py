"""The seams between features in the pure core (issue 22, part B): plain values in, a plan
out. The end-to-end halves are in ``tests/integration/test_seams.py``.

* item 5: an unknown outcome is its own state (``?``) until the quiet period is over;
* item 6: a saved plan is carried out only as far as the recomputed plan still holds it;
* item 7: warnings come from the observation: a re-run, a target, a skip or ``--only`` never
  drop them;
* item 8: cost is estimated from history too, runs are counted (not agents), and an
  unestimated submit under ``max_cost_usd`` fails the plan, naming it;
* item 9: a secret found only at personal scope is a warning with the fix;
* item 10: a rename plus an edit names ``osmosis-state mv``;
* lockfile format 2: format 1 is read and written back as 2; newer formats are refused.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from reconciler.model import (
    Action,
    AgentResult,
    DriftKind,
    HistoryEntry,
    Intent,
    PlanItem,
    Reason,
    RunResults,
    digest,
)
from reconciler.plan import compute_plan
from reconciler.plan.recheck import still_planned
from reconciler.plan.restrict import restrict_plan
from reconciler.state.lockfile import parse, retire_run, serialize
from tests.support.plan_fixtures import (
    ALL_SECRETS,
    NOW,
    desired,
    downloads,
    fingerprint_of,
    lock,
    observation,
    observed_run,
    recorded_run,
    settings,
)

A = desired("hle/a", arrived_at=NOW - timedelta(days=1))
FILES = ("summary.json", "results.jsonl")


# --------------------------------------------------------------------------- item 5


def test_an_unknown_outcome_says_the_time_left_and_the_commands() -> None:
    intent = Intent(
        op="submit",
        started_at=NOW - timedelta(minutes=10),
        body_digest=digest(A.spec),
        spec=A.spec,
        benchmark_id="bench-hle",
        listings=(NOW - timedelta(minutes=5),),
    )
    plan = compute_plan(
        [A], lock(recorded_run(A, None, status=None, intent=intent)), observation(), settings()
    )
    (item,) = plan.items
    assert (item.action, item.action.symbol, item.reason) == (
        Action.UNKNOWN,
        "?",
        Reason.OUTCOME_UNKNOWN,
    )
    assert "2 of 3 run listings since then showed none" in item.details[0]
    assert "after 2026-09-01 12:20 UTC (in 20 minutes)" in item.details[1]
    assert "`osmosis-state resolve hle/a --submitted RUN`" in item.details[2]
    assert "`osmosis-state resolve hle/a --not-submitted`" in item.details[2]
    assert item.listed_at == NOW
    assert plan.summary.submit == 0 and plan.summary.attempts == 0


def test_an_unknown_outcome_is_recorded_by_a_collect_job_and_never_paid() -> None:
    unknown = PlanItem(action=Action.UNKNOWN, address="a", reason=Reason.OUTCOME_UNKNOWN)
    submit = PlanItem(action=Action.SUBMIT, address="b", reason=Reason.NEW_CONFIG)
    plan = compute_plan([], lock(), observation(), settings()).model_copy(
        update={"items": (unknown, submit)}
    )
    kept = restrict_plan(plan, {"download", "refresh"})
    assert [i.action for i in kept.items] == [Action.UNKNOWN]


# --------------------------------------------------------------------------- item 6


def test_a_saved_item_the_recomputed_plan_does_not_hold_is_refused() -> None:
    entry = recorded_run(A, "r1", status="running")
    current = compute_plan([A], lock(entry), observation(observed_run("r1")), settings())
    assert current.items == ()
    injected = PlanItem(
        action=Action.STOP,
        address="other/theirs",
        reason=Reason.CONFIG_DELETED,
        run_id="x-theirs",
        run_name="their-run",
    )
    saved = current.model_copy(update={"items": (injected,)})
    (refused,) = still_planned(saved, current).items
    assert refused.action is Action.BLOCKED and refused.blocked is not None
    assert refused.blocked.intended_action is Action.STOP
    assert (
        "stop of run their-run at other/theirs is not in the plan recomputed now"
        in (refused.details[0])
    )


def test_a_saved_item_is_carried_out_as_recomputed_not_as_written() -> None:
    current = compute_plan([A], lock(), observation(), settings())
    (submit,) = current.items
    edited = submit.model_copy(update={"spec": {"agents": "edited"}})
    saved = current.model_copy(update={"items": (edited,)})
    (kept,) = still_planned(saved, current).items
    assert kept.spec == A.spec


# --------------------------------------------------------------------------- item 7


def theirs_identical_run() -> tuple:
    """A recorded, ended run of A and a colleague's identical running run made later."""
    entry = recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))
    twin = observed_run(
        "x-twin", "running", fingerprint=fingerprint_of(A), created_at=NOW - timedelta(hours=1)
    )
    return entry, twin


def test_a_rerun_request_keeps_the_possible_duplicate_warning() -> None:
    entry, twin = theirs_identical_run()
    obs = observation(observed_run("r1", "finished"), twin)
    plain = compute_plan([A], lock(entry), obs, settings())
    assert [(d.kind, d.run_id) for d in plain.drift] == [(DriftKind.POSSIBLE_DUPLICATE, "x-twin")]
    rerun = compute_plan([A], lock(entry), obs, settings(replace=("hle/a",)))
    # The twin is active: the re-run waits for a decision (issue 34), and the twin is named.
    assert [i.action for i in rerun.items if i.address == "hle/a"][0] is Action.BLOCKED
    assert [(d.kind, d.run_id) for d in rerun.drift] == [(DriftKind.POSSIBLE_DUPLICATE, "x-twin")]
    allowed = settings(replace=("hle/a",), allow_duplicate=("hle/a",))
    rerun = compute_plan([A], lock(entry), obs, allowed)
    assert [i.action for i in rerun.items if i.address == "hle/a"][0] is Action.SUBMIT
    assert [(d.kind, d.run_id) for d in rerun.drift] == [(DriftKind.POSSIBLE_DUPLICATE, "x-twin")]


def test_warnings_of_items_left_out_by_a_target_or_only_are_kept() -> None:
    b = desired("tb/b", "terminal-bench-2-1", harness="codex", task_set=None, judge=None)
    targeted = compute_plan([A, b], lock(), observation(), settings(targets=("hle/a",)))
    assert [i.address for i in targeted.items] == ["hle/a"]
    assert any(w.startswith("tb/b: agent 1 uses harness") for w in targeted.warnings)
    whole = compute_plan([A, b], lock(), observation(), settings())
    only = restrict_plan(whole, {"download"})
    assert only.items == ()
    assert any(w.startswith("tb/b: agent 1 uses harness") for w in only.warnings)


# --------------------------------------------------------------------------- item 8


def priced_history(run_id: str, model_costs: tuple[float, ...], benchmark_id: str) -> HistoryEntry:
    agents = tuple(
        AgentResult(agent_index=i, cost_per_task=cost) for i, cost in enumerate(model_costs)
    )
    return HistoryEntry(
        address="hle/a",
        run_id=run_id,
        run_name=f"name-{run_id}",
        spec_digest="sha256:old",
        status="finished",
        reason="replaced",
        results=RunResults(agents=agents),
        benchmark_id=benchmark_id,
        models=tuple("openai/gpt-5" for _ in model_costs),
    )


def test_a_replace_is_estimated_from_history_counting_runs_not_agents() -> None:
    # One earlier run of openai/gpt-5 on HLE with two agents: $0.40 and $1.00 per task.
    old = priced_history("h1", (0.40, 1.00), "bench-hle")
    plan = compute_plan([A], lock(history=(old,)), observation(), settings())
    (item,) = plan.items
    assert item.cost is not None
    assert (item.cost.usd_low, item.cost.usd_high) == (99.6, 249.0)  # 249 parity tasks
    assert item.cost.basis == "cost per attempt of 1 recorded run of openai/gpt-5 on this benchmark"


def test_without_the_same_benchmark_the_same_model_elsewhere_is_used_and_labelled() -> None:
    old = priced_history("h1", (0.50,), "bench-tb")
    plan = compute_plan([A], lock(history=(old,)), observation(), settings())
    (item,) = plan.items
    assert item.cost is not None and item.cost.usd_high == 124.5
    assert item.cost.basis == (
        "cost per attempt of 1 recorded run of openai/gpt-5 on other benchmarks"
    )


def test_an_unestimated_submit_trips_the_budget_guard_naming_it() -> None:
    b = desired("hle/b", models=("anthropic/claude-sonnet-4",))
    old = priced_history("h1", (0.40,), "bench-hle")
    state = lock(history=(old,))
    guarded = compute_plan([A, b], state, observation(), settings(max_cost_usd=1000.0))
    (error,) = guarded.errors
    assert "max_cost_usd = $1,000.00 is set, but 1 submit has no cost estimate" in error
    assert "hle/b" in error and "hle/a" not in error and "--allow-unestimated" in error
    for flag in ("allow_unestimated", "allow_over_budget"):
        assert not compute_plan(
            [A, b], state, observation(), settings(max_cost_usd=1000.0, **{flag: True})
        ).errors
    assert not compute_plan([A, b], state, observation(), settings()).errors


def test_retiring_a_run_keeps_its_cost_inputs_and_owed_outputs() -> None:
    two = desired("hle/a", models=("openai/gpt-5", "openai/o3"), attempts=2)
    entry = recorded_run(two, "r1", status="finished").model_copy(
        update={"benchmark_id": "bench-hle"}
    )
    retired = retire_run(lock(entry), "hle/a", "replaced", ended_at=NOW)
    (old,) = retired.history
    assert old.models == ("openai/gpt-5", "openai/o3") and old.attempts_per_task == 2
    assert old.benchmark_id == "bench-hle" and old.outputs_pending is True
    done = entry.model_copy(update={"downloads": downloads(*FILES)})
    assert retire_run(lock(done), "hle/a", "replaced").history[0].outputs_pending is None
    moved = retire_run(lock(entry), "hle/a", "stopped").history[0]
    assert moved.outputs_pending is True
    active = entry.model_copy(update={"status": "stopped"})
    assert retire_run(lock(active), "hle/a", "replaced").history[0].outputs_pending is None


# --------------------------------------------------------------------------- item 9


def test_a_secret_only_at_personal_scope_warns_with_the_fix() -> None:
    obs = observation(secrets=ALL_SECRETS).model_copy(
        update={"personal_secrets": frozenset({"OPENAI_API_KEY"})}
    )
    (item,) = compute_plan([A], lock(), obs, settings()).items
    assert item.action is Action.SUBMIT
    (warning,) = [w for w in item.warnings if "personal scope" in w]
    assert "CI" in warning
    assert "secret set OPENAI_API_KEY --scope workspace" in warning


# --------------------------------------------------------------------------- item 10


def test_a_rename_plus_edit_names_osmosis_state_mv() -> None:
    old = recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))
    renamed = desired("hle/a-parity", models=("openai/gpt-5.2",))
    plan = compute_plan(
        [renamed],
        lock(old),
        observation(observed_run("r1", "finished"), outputs={}),
        settings(),
    )
    by_action = {item.action: item for item in plan.items}
    assert set(by_action) == {Action.SUBMIT, Action.FORGET}
    mv = "`osmosis-state mv hle/a hle/a-parity`"
    assert any(mv in w and "looks like" in w for w in by_action[Action.SUBMIT].warnings)
    assert any(mv in w for w in by_action[Action.FORGET].warnings)
    unrelated = desired("other/else", models=("x/y", "z/w"), task_set=None)
    quiet = compute_plan(
        [unrelated], lock(old), observation(observed_run("r1", "finished")), settings()
    )
    assert not any("osmosis-state mv" in w for i in quiet.items for w in i.warnings)


# --------------------------------------------------------------------------- lockfile


def test_a_format_1_lockfile_is_read_and_written_as_format_3(tmp_path: Path) -> None:
    text = serialize(lock(recorded_run(A, "r1"))).replace("version = 3", "version = 1")
    state = parse(text, "state/osmosis.lock")
    assert serialize(state).splitlines()[1] == "version = 3"


def test_format_2_fields_round_trip() -> None:
    intent = Intent(
        op="submit",
        started_at=NOW - timedelta(minutes=10),
        body_digest=digest(A.spec),
        spec=A.spec,
        listings=(NOW - timedelta(minutes=5), NOW),
    )
    old = priced_history("h1", (0.4,), "bench-hle").model_copy(
        update={"outputs_pending": True, "attempts_per_task": 3}
    )
    state = lock(recorded_run(A, None, status=None, intent=intent), history=(old,))
    text = serialize(state)
    assert parse(text, "state/osmosis.lock") == state
    assert serialize(parse(text, "state/osmosis.lock")) == text
