"""``plan.retries`` (docs/retrying.md): which errored attempts a retry re-runs, in how many
runs, and why a retry is blocked or not planned, on plain values."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from reconciler.model import (
    Action,
    ErroredAttempts,
    Intent,
    LocalOutputs,
    Plan,
    PlanItem,
    Reason,
    RecordedRun,
)
from reconciler.plan import compute_plan
from reconciler.plan.retries import errored_groups
from tests.support.plan_fixtures import (
    NOW,
    TB_TASKS,
    canonical_of,
    desired,
    downloads,
    lock,
    observation,
    observed_run,
    recorded_run,
    settings,
)

ADDRESS = "tb/full"
T1, T2, T3 = TB_TASKS[0], TB_TASKS[1], TB_TASKS[2]


def tb(**kwargs: Any) -> Any:
    return desired(
        ADDRESS,
        "terminal-bench-2-1",
        harness="terminus-2",
        task_set=None,
        judge=None,
        **kwargs,
    )


def ended(want: Any, **update: Any) -> RecordedRun:
    entry = recorded_run(
        want, "run-1", status="finished", downloads=downloads("summary.csv", "results.csv")
    )
    return entry.model_copy(update=update) if update else entry


def plan_with(
    want: Any,
    entry: RecordedRun,
    errored: dict[int, dict[str, int]] | None,
    *,
    status: str = "finished",
    unreadable: str | None = None,
    retry: tuple[str, ...] = (ADDRESS,),
    **more: Any,
) -> Plan:
    found = {}
    if errored is not None:
        found[ADDRESS] = ErroredAttempts(
            run_id=entry.run_id or "", agents=errored, unreadable=unreadable
        )
    observed = observation(
        observed_run(entry.run_id or "", status, name=entry.run_name or ""),
        outputs={ADDRESS: LocalOutputs(present=frozenset({"summary.csv", "results.csv"}))},
    ).model_copy(update={"errored": found})
    return compute_plan([want], lock(entry), observed, settings(retry_errored=retry, **more))


def only(plan: Plan) -> PlanItem:
    (item,) = [i for i in plan.items if i.address == ADDRESS]
    return item


def test_groups_pay_exactly_the_errored_attempts() -> None:
    groups = errored_groups({0: {T1: 1, T2: 1, T3: 2}, 1: {T1: 1, T3: 1}})
    # (attempts, agents, tasks); biggest first: T1 by both agents once, T3 twice by agent
    # 0, T2 and T3 once by one agent each.
    assert groups == [
        (1, (0, 1), (T1,)),
        (2, (0,), (T3,)),
        (1, (0,), (T2,)),
        (1, (1,), (T3,)),
    ]
    paid = sum(count * len(agents) * len(tasks) for count, agents, tasks in groups)
    assert paid == 1 + 1 + 2 + 1 + 1  # every errored attempt, once
    assert errored_groups({0: {}}) == []


def test_one_group_is_one_retry_item_with_its_size_and_body() -> None:
    want = tb(attempts=3)
    plan = plan_with(want, ended(want), {0: {T2: 1, T1: 1}})
    item = only(plan)
    assert item.action is Action.RETRY
    assert item.reason is Reason.RETRY_ERRORED
    assert item.spec is not None
    assert item.spec["tasks_config"] == {"task_names": [T1, T2]}
    assert item.spec["execution_config"]["attempts_per_task"] == 1
    assert item.spec["agents"] == want.spec["agents"]
    assert item.task_count == 2
    assert item.attempts == 2
    assert item.after_digest == canonical_of(want)  # the config's, unchanged
    assert item.retry is not None
    assert (item.retry.retry_of, item.retry.agents, item.retry.errored) == ("run-1", (0,), 2)
    assert item.retry.later == ()
    assert "re-runs 2 errored attempts of run name-run-1" in item.details[0]
    assert plan.summary.retry == 1
    assert plan.summary.attempts == 2


def test_several_groups_first_the_largest_then_named() -> None:
    want = tb(attempts=3, models=("openai/gpt-5", "anthropic/claude-sonnet-4"))
    plan = plan_with(want, ended(want), {0: {T1: 2, T2: 2}, 1: {T3: 1}})
    item = only(plan)
    assert item.retry is not None
    assert item.retry.agents == (0,)
    assert item.retry.attempts_per_task == 2
    assert item.spec is not None
    assert len(item.spec["agents"]) == 1
    assert item.spec["agents"][0] == want.spec["agents"][0]
    assert item.attempts == 4
    assert item.retry.later == ("1 task x 1 agent x 1 attempt",)
    assert "then 1 more retry run (1 task x 1 agent x 1 attempt)" in item.details[1]


def test_nothing_errored_says_so_and_plans_nothing() -> None:
    want = tb()
    plan = plan_with(want, ended(want), {})
    assert not plan.items
    assert any("nothing to retry" in w and "name-run-1" in w for w in plan.warnings)


def test_active_or_not_downloaded_runs_are_blocked_not_paid() -> None:
    want = tb()
    running = only(plan_with(want, ended(want, status="running"), None, status="running"))
    assert running.action is Action.BLOCKED
    assert running.reason is Reason.RETRY_NOT_READY
    assert running.blocked is not None
    assert running.blocked.intended_action is Action.RETRY
    assert "only an ended run can be retried" in running.details[0]

    unread = plan_with(
        want, ended(want), {}, unreadable="the results.csv of run name-run-1 is not on this disk"
    )
    item = only(unread)
    assert item.action is Action.BLOCKED
    assert "is not on this disk: run `osmosis-apply` to download them" in item.details[0]
    assert unread.summary.attempts == 0


def test_a_download_due_blocks_the_retry_beside_it() -> None:
    want = tb()
    entry = ended(want, downloads=None)
    observed = observation(
        observed_run("run-1", "finished", name="name-run-1"),
    ).model_copy(update={"errored": {}})
    plan = compute_plan([want], lock(entry), observed, settings(retry_errored=(ADDRESS,)))
    kinds = sorted(i.action.value for i in plan.items if i.address == ADDRESS)
    assert kinds == ["blocked", "download"]


def test_a_changed_config_is_not_retried() -> None:
    want = tb()
    entry = ended(want)
    changed = tb(attempts=2)
    plan = plan_with(changed, entry, {0: {T1: 1}})
    assert [i.action for i in plan.items] == [Action.SUBMIT]
    assert any("not retried" in w for w in plan.warnings)


def test_a_pattern_that_matches_nothing_is_named() -> None:
    want = tb()
    plan = plan_with(want, ended(want), {0: {T1: 1}}, retry=(ADDRESS, "tb/nope"))
    assert only(plan).action is Action.RETRY
    assert any("--retry-errored tb/nope: matches no config" in w for w in plan.warnings)


def test_a_recorded_retry_run_keeps_the_config_unchanged() -> None:
    want = tb()
    narrowed = dict(want.spec, tasks_config={"task_names": [T1]})
    retry = ended(want).model_copy(
        update={
            "run_id": "run-2",
            "run_name": "name-run-2",
            "spec": narrowed,
            "spec_digest": canonical_of(want),
            "retry_of": "run-1",
            "retry_agents": (0,),
        }
    )
    observed = observation(
        observed_run("run-2", "finished", name="name-run-2"),
        outputs={ADDRESS: LocalOutputs(present=frozenset({"summary.csv", "results.csv"}))},
    )
    plan = compute_plan([want], lock(retry), observed, settings())
    assert plan.is_empty, plan.items


def test_an_interrupted_retry_is_adopted_as_a_retry_and_never_resent_whole() -> None:
    want = tb()
    base = ended(want)
    narrowed = dict(want.spec, tasks_config={"task_names": [T1]})
    intent = Intent(
        op="submit",
        started_at=NOW - timedelta(minutes=2),
        body_digest=want.spec_digest,
        spec=narrowed,
        benchmark_id="bench-tb",
        retry_of="run-1",
        retry_agents=(0,),
    )
    pending = base.model_copy(update={"intent": intent})
    # No run listed yet: the outcome is unknown; nothing is paid.
    quiet = compute_plan(
        [want],
        lock(pending),
        observation(observed_run("run-1", "finished", name="name-run-1")),
        settings(),
    )
    assert [i.action for i in quiet.items] == [Action.UNKNOWN]
    # Its run appears: adopted, with the retry's provenance.
    from tests.support.plan_fixtures import fingerprint_of

    run = observed_run(
        "run-9",
        "running",
        fingerprint=fingerprint_of(want.model_copy(update={"spec": narrowed})),
        created_at=NOW - timedelta(minutes=1),
        name="late-run",
    )
    found = compute_plan(
        [want],
        lock(pending),
        observation(observed_run("run-1", "finished", name="name-run-1"), run),
        settings(),
    )
    item = only(found)
    assert item.action is Action.ADOPT
    assert item.after_digest == want.spec_digest  # what the intent was for
    assert item.retry is not None
    assert (item.retry.retry_of, item.retry.tasks) == ("run-1", (T1,))
    # The quiet period over with no run: the address is as before; the whole config is
    # never paid for again.
    later = observation(observed_run("run-1", "finished", name="name-run-1")).model_copy(
        update={"observed_at": NOW + timedelta(hours=2)}
    )
    listings = tuple(NOW + timedelta(minutes=m) for m in (40, 50, 60))
    stale = pending.model_copy(update={"intent": intent.model_copy(update={"listings": listings})})
    over = compute_plan([want], lock(stale), later, settings())
    assert not [i for i in over.items if i.action in (Action.SUBMIT, Action.RETRY)]
    assert any("interrupted retry" in w for w in over.warnings)


def test_the_budget_guard_counts_a_retry() -> None:
    want = tb()
    plan = plan_with(want, ended(want), {0: {T1: 1, T2: 1}}, max_attempts=1)
    assert only(plan).action is Action.RETRY
    assert any("would start 2 new attempts, more than max_attempts = 1" in e for e in plan.errors)
