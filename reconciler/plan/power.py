"""Power before paying: every submit with a comparable recorded run gets the smallest
difference its comparison with that run can detect, and whether more tasks or more
attempts would lower it more (pure).

Comparable: a complete full run on the same benchmark and task selection (``results.runs.
comparable_runs``): the address's own newest (a re-run, or a changed config), else another
address's (a new config on the same tasks). The spread is Miller's ω² (``results.power``):
estimated from the per-task outcomes of that run and, when there is one, a second
comparable run (which measures the spread between two runs, correlation included), read
by ``engine.observe`` into ``Observation.task_counts``; without per-task files, from the
recorded summary (pass@1 and pass@k). The power is that of the verdict's own test
(exact McNemar at one attempt on both sides, the sign-flip test otherwise), at α = 0.05
for one comparison; a gate of several comparisons adjusts further (Holm).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from reconciler.model import Action, DesiredRun, PlanItem, TaskCounts, selection_digest
from reconciler.plan.draft import Draft
from reconciler.results.runs import RecordedResult, comparable_runs

if TYPE_CHECKING:
    from reconciler.results.power import Spread

# ``results.power`` (and ``statistics``) load only when a submit has a comparable run: a
# plan without one, and the command's start-up, never pay for them.

__all__ = ["note_power", "power_line"]


def _spread(
    basis: RecordedResult,
    other: RecordedResult | None,
    counts: dict[str, TaskCounts],
    *,
    same_config: bool,
) -> Spread | None:
    from reconciler.results import power

    mine = counts.get(basis.run_id)
    if mine is not None and 0 in mine.agents:
        theirs = counts.get(other.run_id) if other is not None else None
        second = theirs.agents.get(0) if theirs is not None else None
        name = f"{basis.label}'s per-task results" + (
            f" and {other.label}'s" if second is not None and other is not None else ""
        )
        return power.spread_from_tasks(mine.agents[0], second, same_config=same_config, basis=name)
    agent = next((a for a in basis.agents if a.agent_index == 0), None)
    if agent is None or agent.pass_at_1 is None or not agent.n:
        return None
    return power.spread_from_summary(
        agent.pass_at_1,
        agent.n,
        basis.attempts_per_task,
        k=agent.k,
        pass_at_k=agent.pass_at_k,
        same_config=same_config,
        basis=f"{basis.label}'s summary (no per-task file)",
    )


def _pts(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value * 100:.1f} pts"


def power_line(
    item: PlanItem,
    wanted: DesiredRun,
    runs: list[RecordedResult],
    counts: dict[str, TaskCounts],
    *,
    benchmark_tasks: int | None = None,
) -> str | None:
    """The ``power:`` line of one submit (None: nothing comparable to estimate from);
    ``benchmark_tasks``: how many the benchmark has (more cannot be selected)."""
    from reconciler.results import power

    if not runs or not item.task_count:
        return None
    basis = runs[0]
    other = next((r for r in runs[1:] if r.run_id in counts), None)
    same = basis.spec_digest == wanted.spec_digest
    spread = _spread(basis, other, counts, same_config=same)
    if spread is None:
        return None
    tasks, k_new, k_old = item.task_count, wanted.attempts_per_task, basis.attempts_per_task

    now = power.mde(tasks=tasks, k_left=k_old, k_right=k_new, spread=spread)
    test = "exact McNemar" if k_old == 1 and k_new == 1 else "sign-flip test"
    where = basis.label if basis.address == item.address else f"{basis.address}@{basis.label}"
    if math.isinf(now):
        return (
            f"power: against {where}, {tasks} tasks cannot show any difference at α 0.05 "
            f"(the {test} needs at least {power.exact_minimum_tasks()} tasks that changed)"
        )
    # The design question is about comparisons whose both sides run this way (the recorded
    # run cannot gain tasks or attempts): twice the tasks against twice the attempts.
    more_tasks = power.mde(tasks=2 * tasks, k_left=k_new, k_right=k_new, spread=spread)
    more_attempts = power.mde(tasks=tasks, k_left=2 * k_new, k_right=2 * k_new, spread=spread)
    better = "more tasks" if more_tasks < more_attempts else "more attempts"
    if benchmark_tasks is not None and tasks >= benchmark_tasks:
        advice = (
            f"with both sides at twice the attempts {_pts(more_attempts)} (the benchmark has no "
            "more tasks): more attempts are what can lower it"
        )
    else:
        advice = (
            f"with both sides at twice the tasks {_pts(more_tasks)}, at twice the attempts "
            f"{_pts(more_attempts)}: {better} lower it more"
        )
    return (
        f"power: against {where}, {tasks} tasks × {k_new} attempt{'s' if k_new != 1 else ''} "
        f"detect |Δ| ≥ {_pts(now)} (80% power, {test}, α 0.05; spread from {spread.basis}); "
        + advice
    )


def note_power(draft: Draft) -> None:
    """Add a ``power:`` line to the details of every submit or replace that has a
    comparable recorded run."""
    counts = draft.observed.task_counts
    for index, item in enumerate(draft.items):
        if item.action not in (Action.SUBMIT, Action.REPLACE) or not item.task_count:
            continue
        wanted = draft.desired.get(item.address)
        info = draft.observed.benchmarks.get(wanted.benchmark) if wanted is not None else None
        if wanted is None or info is None:
            continue
        runs = comparable_runs(draft.recorded, item.address, info.id, selection_digest(wanted.spec))
        line = power_line(item, wanted, runs, dict(counts), benchmark_tasks=info.task_count or None)
        if line is not None:
            draft.items[index] = item.model_copy(update={"details": (*item.details, line)})
