"""Re-run only what errored (``--retry-errored ADDR``, docs/retrying.md) (pure).

Runs after ``diff``: for each address a retry was asked for, whose run ended and whose
outputs are on disk, the errored attempts of the address's result
(``Observation.errored``, read from the kept ``results.csv`` files, a recorded retry's
attempts already in place of the ones it re-ran) become one paid ``retry`` item: the
config's body narrowed to the errored tasks (``tasks_config.task_names``) and agents, with
as many attempts per task as errored there.

The Platform takes one ``attempts_per_task`` per run and runs every agent of a body on
every task, so the errored attempts are grouped by (attempts, agents): the tasks that
errored the same number of times for the same agents. Each group is a run of its own, and
exactly the errored attempts are paid for. The largest group goes first; the others are
named on the item and planned, one per apply, once the one before has ended and been
downloaded (the address records one run at a time, and the next group is read from the
merged result).

The item is submitted through the ordinary pay-once path (intent before the POST, the
twin guard, crash recovery by adoption): the retry run becomes the address's recorded run
with its provenance (``RecordedRun.retry_of``), and the retried run moves to the history
(``retried``), still the address's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.model import (
    Action,
    Blocked,
    DesiredRun,
    PlanItem,
    Reason,
    RecordedRun,
    Retry,
    RunStatus,
    glob_match,
)
from reconciler.plan.draft import Draft, plural

__all__ = ["errored_groups", "narrowed_run", "plan_retries"]

Group = tuple[int, tuple[int, ...], tuple[str, ...]]
"""(attempts per task, agent indexes, tasks) of one retry run."""


def errored_groups(agents: Mapping[int, Mapping[str, int]]) -> list[Group]:
    """The errored attempts as retry runs: tasks grouped by (errored attempts, the agents
    that errored that often on them), the group with the most attempts first."""
    by_task: dict[str, dict[int, list[int]]] = {}
    for agent, tasks in agents.items():
        for task, count in tasks.items():
            if count > 0:
                by_task.setdefault(task, {}).setdefault(count, []).append(agent)
    groups: dict[tuple[int, tuple[int, ...]], list[str]] = {}
    for task, counts in by_task.items():
        for count, who in counts.items():
            groups.setdefault((count, tuple(sorted(who))), []).append(task)
    out = [(count, who, tuple(sorted(tasks))) for (count, who), tasks in groups.items()]
    out.sort(key=lambda g: (-g[0] * len(g[1]) * len(g[2]), g[0], g[1], g[2]))
    return out


def group_text(group: Group) -> str:
    """``3 tasks x 1 agent x 2 attempts``."""
    count, agents, tasks = group
    return (
        f"{plural(len(tasks), 'task')} x {plural(len(agents), 'agent')} x "
        f"{plural(count, 'attempt')}"
    )


def narrowed_run(wanted: DesiredRun, group: Group) -> DesiredRun:
    """``wanted`` as the retry run of ``group``: its tasks, its agents, its attempts per
    task. The digest stays the config's: the retry run does not change what the address
    asks for (``RecordedRun.retry_of``)."""
    count, agents, tasks = group
    spec: dict[str, Any] = dict(wanted.spec)
    spec["tasks_config"] = {"task_names": list(tasks)}
    spec["agents"] = [spec["agents"][i] for i in agents]
    execution = dict(spec.get("execution_config") or {})
    execution["attempts_per_task"] = count
    spec["execution_config"] = execution
    harnesses = wanted.harnesses
    return wanted.model_copy(
        update={
            "spec": spec,
            "task_names": tasks,
            "task_set": None,
            "categories": None,
            "agent_count": len(agents),
            "attempts_per_task": count,
            "harnesses": tuple(harnesses[i] for i in agents if i < len(harnesses)),
            "decide": None,
        }
    )


def plan_retries(draft: Draft) -> None:
    """A ``retry`` item (or why there is none) for every address a retry was asked for."""
    patterns = draft.settings.retry_errored
    if not patterns:
        return
    matched = [a for a in sorted(draft.desired) if glob_match(a, patterns)]
    for pattern in patterns:
        if not any(glob_match(a, (pattern,)) for a in matched):
            draft.warnings.append(
                f"--retry-errored {pattern}: matches no config, so nothing is retried"
            )
    for address in matched:
        _plan_retry(draft, draft.desired[address])


def _plan_retry(draft: Draft, wanted: DesiredRun) -> None:
    address = wanted.address
    entry = draft.recorded.runs.get(address)
    if entry is None or entry.run_id is None:
        draft.warnings.append(f"{address}: nothing to retry: no run of it is recorded yet")
        return
    others = [i for i in draft.items if i.address == address]
    if any(i.action is not Action.DOWNLOAD for i in others):
        doing = ", ".join(sorted({i.action.value for i in others}))
        draft.warnings.append(
            f"{address}: not retried: this plan already has {doing} for it; ask again once "
            "its run has ended and been downloaded"
        )
        return
    run = draft.run_of(entry)
    status = (run.status if run is not None else entry.status) or "unknown"
    label = entry.run_name or entry.run_id
    if not RunStatus.of(status).is_terminal:
        _blocked(draft, entry, f"run {label} is {status}: only an ended run can be retried")
        return
    errored = draft.observed.errored.get(address)
    if others or errored is None or errored.unreadable:
        why = (
            errored.unreadable
            if errored is not None and errored.unreadable
            else "its outputs are not downloaded yet"
        )
        _blocked(
            draft,
            entry,
            f"run {label} ended ({status}), but {why}: run `osmosis-apply` to download "
            "them, then ask for the retry again",
        )
        return
    groups = errored_groups(errored.agents)
    result = errored.run_id
    if not groups:
        draft.warnings.append(
            f"{address}: nothing to retry: no attempt of its result (run "
            f"{_name_of(draft, address, result)}) errored"
        )
        return
    total = sum(count * len(agents) * len(tasks) for count, agents, tasks in groups)
    _add_item(draft, wanted, entry, groups, result, total)


def _add_item(
    draft: Draft,
    wanted: DesiredRun,
    entry: RecordedRun,
    groups: list[Group],
    result: str,
    total: int,
) -> None:
    # Here, not at the top: a plan that retries nothing never loads preflight.
    from reconciler.plan.preflight import paid_item

    first = groups[0]
    count, agents, tasks = first
    narrowed = narrowed_run(wanted, first)
    item = paid_item(
        draft,
        Action.RETRY,
        Reason.RETRY_ERRORED,
        narrowed,
        run_id=entry.run_id,
        run_name=entry.run_name,
        before=entry.spec_digest,
    )
    name = _name_of(draft, wanted.address, result)
    retry = Retry(
        retry_of=result,
        retry_of_name=name if name != result else None,
        agents=agents,
        tasks=tasks,
        attempts_per_task=count,
        errored=total,
        later=tuple(group_text(g) for g in groups[1:]),
    )
    details = [
        f"re-runs {plural(total, 'errored attempt')} of run {name}"
        + (f": this run {group_text(first)}" if len(groups) > 1 else f" ({group_text(first)})"),
    ]
    if len(groups) > 1:
        details.append(
            f"then {plural(len(groups) - 1, 'more retry run')} ({'; '.join(retry.later)}): "
            "the Platform takes one attempts count per run; each is planned by "
            "--retry-errored once the one before has ended and been downloaded"
        )
    # A retry is never staged: it is already the smallest run that answers the question.
    draft.items.append(
        item.model_copy(
            update={
                "retry": retry,
                "smoke": None,
                # The selection's warnings (task set, harness) were the retried run's.
                "warnings": (),
                "details": (*details, *item.details),
                # The retry requests it carries out (``Osmosis-Retry-Errored``), recorded
                # with its intent; never the config's re-run requests.
                "reruns": wanted.retry_requests,
            }
        )
    )


def _name_of(draft: Draft, address: str, run_id: str) -> str:
    entry = draft.recorded.runs.get(address)
    if entry is not None and entry.run_id == run_id and entry.run_name:
        return entry.run_name
    for old in draft.recorded.history:
        if old.run_id == run_id and old.run_name:
            return old.run_name
    return run_id


def _blocked(draft: Draft, entry: RecordedRun, why: str) -> None:
    draft.items.append(
        PlanItem(
            action=Action.BLOCKED,
            address=entry.address,
            reason=Reason.RETRY_NOT_READY,
            run_id=entry.run_id,
            run_name=entry.run_name,
            before_digest=entry.spec_digest,
            after_digest=entry.spec_digest,
            details=(why,),
            blocked=Blocked(intended_action=Action.RETRY, intended_reason=Reason.RETRY_ERRORED),
        )
    )
