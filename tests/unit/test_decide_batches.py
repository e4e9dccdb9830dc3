"""A decision's batches in the pure plan (``plan.batches``; issue 39): the first batch is an
ordinary submit of the first slice of a seeded order, nothing new is paid while it runs,
an ended and downloaded batch is looked at and the next slice planned, and a stopped
decision pays nothing more; a task whose ``task_checksum`` changed ends it."""

from __future__ import annotations

from reconciler.model import Action, DecisionSpec, LockState, TaskCounts
from reconciler.plan import compute_plan
from reconciler.plan.batches import count_diffs, slice_of, task_checksums
from reconciler.results.sequential.record import first_difference
from tests.support.plan_fixtures import desired, lock, observation, recorded_run, settings

ADDRESS = "tb/ab"
MODELS = ("openai/gpt-5.2", "openai/gpt-5")
SPEC = DecisionSpec(margin_pp=30, seed=7, looks=3, where="benchmarks/tb/ab.toml:20")


def wanted():
    base = desired(
        ADDRESS,
        "terminal-bench-2-1",
        models=MODELS,
        harness="terminus-2",
        task_set=None,
        judge=None,
    )
    return base.model_copy(update={"decide": SPEC})


def plan(state: LockState, counts: dict[str, TaskCounts] | None = None, *runs):
    observed = observation(*runs)
    if counts:
        observed = observed.model_copy(update={"task_counts": counts})
    return compute_plan([wanted()], state, observed, settings())


def batch_spec(tasks: tuple[str, ...]) -> dict:
    spec = dict(wanted().spec)
    spec["tasks_config"] = {"task_names": list(tasks)}
    return spec


def first_plan():
    return plan(lock())


def counts_for(tasks: tuple[str, ...], *, clear: bool) -> TaskCounts:
    """The first agent passes one attempt of three on every third task; the second nearly
    every attempt (``clear``) or one attempt on every other task."""
    left = {t: (1 if i % 3 == 0 else 0, 3) for i, t in enumerate(tasks)}
    if clear:
        right = {t: (3 if i % 4 else 2, 3) for i, t in enumerate(tasks)}
    else:
        right = {t: (1 if i % 2 == 0 else 0, 3) for i, t in enumerate(tasks)}
    return TaskCounts(agents={0: left, 1: right})


def test_a_new_decision_submits_the_first_slice_of_its_order() -> None:
    made = first_plan()
    record = made.decisions[ADDRESS]
    assert sorted(record.order) == sorted(name for name in record.order)  # every task once
    assert len(set(record.order)) == len(record.order) == 89
    assert record.spec == SPEC.model_copy(update={"where": ""})
    (end,) = record.batch_ends
    assert 0 < end < record.max_tasks <= 89 and not record.looks and not record.batch_runs
    (item,) = made.items
    assert item.action is Action.SUBMIT
    assert item.spec is not None
    assert item.spec["tasks_config"] == {"task_names": list(record.order[:end])}
    assert any(d.startswith("decide: fixed design") for d in item.details)
    # The same seed, the same order: the plan is a function of its inputs.
    assert first_plan().decisions[ADDRESS].order == record.order


def test_a_batch_in_flight_pays_nothing_new_and_names_its_run() -> None:
    record = first_plan().decisions[ADDRESS]
    batch = recorded_run(None, "run-1", address=ADDRESS, spec=batch_spec(slice_of(record, 1)))
    made = plan(lock(batch).model_copy(update={"decisions": {ADDRESS: record}}))
    assert not [i for i in made.items if i.action in (Action.SUBMIT, Action.REPLACE)]
    assert made.decisions[ADDRESS].batch_runs == ("run-1",)
    assert not made.decisions[ADDRESS].looks


def test_an_ended_batch_is_looked_at_and_the_next_slice_submitted() -> None:
    record = first_plan().decisions[ADDRESS]
    record = record.model_copy(update={"batch_runs": ("run-1",)})
    first = slice_of(record, 1)
    batch = recorded_run(None, "run-1", address=ADDRESS, spec=batch_spec(first), status="finished")
    state = lock(batch).model_copy(update={"decisions": {ADDRESS: record}})
    # Not downloaded yet: no look, nothing new.
    waiting = plan(state)
    assert not waiting.decisions and not [i for i in waiting.items if i.action is Action.SUBMIT]

    counts = {"run-1": counts_for(first, clear=False)}
    made = plan(state, counts)
    after = made.decisions[ADDRESS]
    (look,) = after.looks
    assert look.tasks == len(first) and look.verdict == after.verdict == "continue"
    assert f"{ADDRESS}: decision look 1: {len(first)} tasks" in " ".join(made.warnings)
    # The look is what a replay recomputes from the same results.
    assert first_difference(after, count_diffs(counts.values())) is None
    (item,) = [i for i in made.items if i.action is Action.SUBMIT]
    assert item.spec is not None
    assert item.spec["tasks_config"] == {"task_names": list(slice_of(after, 2))}
    assert len(after.batch_ends) == 2 and after.batch_ends[0] == len(first)


def test_a_stopped_decision_pays_nothing_more() -> None:
    record = first_plan().decisions[ADDRESS]
    first = slice_of(record, 1)
    state = lock(
        recorded_run(None, "run-1", address=ADDRESS, spec=batch_spec(first), status="finished")
    ).model_copy(
        update={"decisions": {ADDRESS: record.model_copy(update={"batch_runs": ("run-1",)})}}
    )
    # A clear difference stops it at the first look.
    counts = {"run-1": counts_for(first, clear=True)}
    stopped = plan(state, counts).decisions[ADDRESS]
    assert stopped.verdict == "better" and len(stopped.batch_ends) == len(stopped.looks) == 1
    again = plan(state.model_copy(update={"decisions": {ADDRESS: stopped}}), counts)
    assert not again.decisions
    assert not [i for i in again.items if i.action in (Action.SUBMIT, Action.REPLACE)]


def test_a_changed_decide_table_starts_a_new_decision_visibly() -> None:
    record = first_plan().decisions[ADDRESS].model_copy(update={"batch_runs": ("run-1",)})
    first = slice_of(record, 1)
    batch = recorded_run(None, "run-1", address=ADDRESS, spec=batch_spec(first), status="finished")
    state = lock(batch).model_copy(update={"decisions": {ADDRESS: record}})
    looked = plan(state, {"run-1": counts_for(first, clear=False)}).decisions[ADDRESS]
    edited = looked.model_copy(update={"spec": looked.spec.model_copy(update={"margin_pp": 40.0})})
    made = plan(state.model_copy(update={"decisions": {ADDRESS: edited}}))
    assert made.decisions[ADDRESS].spec.margin_pp == SPEC.margin_pp
    assert not made.decisions[ADDRESS].looks
    assert f"{ADDRESS}: [decide] changed after 1 look(s)" in " ".join(made.warnings)


def ended_batch_state():
    record = first_plan().decisions[ADDRESS].model_copy(update={"batch_runs": ("run-1",)})
    first = slice_of(record, 1)
    batch = recorded_run(None, "run-1", address=ADDRESS, spec=batch_spec(first), status="finished")
    return record, first, lock(batch).model_copy(update={"decisions": {ADDRESS: record}})


def with_checksums(counts: TaskCounts, left: dict[str, str], right: dict[str, str]) -> TaskCounts:
    return counts.model_copy(update={"checksums": {0: left, 1: right}})


def test_a_batch_records_each_tasks_checksum_its_results_show() -> None:
    record, first, state = ended_batch_state()
    sums = {t: f"c-{t}" for t in first}
    counts = {"run-1": with_checksums(counts_for(first, clear=False), sums, sums)}
    after = plan(state, counts).decisions[ADDRESS]
    assert after.checksums == sums and after.verdict == "continue" and len(after.looks) == 1
    # Results without a task_checksum column: nothing recorded, nothing checked.
    plain = plan(state, {"run-1": counts_for(first, clear=False)}).decisions[ADDRESS]
    assert plain.checksums is None and len(plain.looks) == 1


def test_two_sides_of_one_batch_that_ran_different_checksums_end_the_decision() -> None:
    record, first, state = ended_batch_state()
    left = {t: "v1" for t in first}
    right = {**left, first[2]: "v2"}
    counts = {"run-1": with_checksums(counts_for(first, clear=True), left, right)}
    made = plan(state, counts)
    ended = made.decisions[ADDRESS]
    reason = f"task {first[2]}'s checksum differs between the sides of batch 1 (v1, v2)"
    assert (ended.verdict, ended.reason) == ("inconclusive", reason)
    assert not ended.looks  # the batch is not looked at (a clear difference would stop it)
    assert f"{ADDRESS}: decision ends inconclusive: {reason}" in made.warnings
    assert not [i for i in made.items if i.action in (Action.SUBMIT, Action.REPLACE)]
    again = plan(state.model_copy(update={"decisions": {ADDRESS: ended}}), counts)
    assert not again.decisions and not [i for i in again.items if i.action is Action.SUBMIT]


def test_a_later_batch_that_shows_another_checksum_for_a_recorded_task_ends_it() -> None:
    record = first_plan().decisions[ADDRESS]
    record = record.model_copy(update={"batch_ends": (3, 6)})
    one, two = slice_of(record, 1), slice_of(record, 2)
    # As a baseline decision records the accepted run's checksums for the whole order.
    record = record.model_copy(update={"checksums": {t: "v1" for t in record.order}})
    batches = [
        TaskCounts(checksums={0: dict.fromkeys(one, "v1")}),
        TaskCounts(checksums={0: {**dict.fromkeys(two, "v1"), two[1]: "v2"}}),
    ]
    known, reason = task_checksums(record, batches)
    assert reason == f"task {two[1]}'s checksum changed (recorded v1, batch 2's results show v2)"
    assert known[two[1]] == "v1"  # the first seen stays recorded
    # First seen in a batch: recorded, not a change.
    fresh = record.model_copy(update={"checksums": None})
    known, reason = task_checksums(fresh, batches[:1])
    assert reason is None and known == dict.fromkeys(one, "v1")
