"""Plan a decision before paying (docs/deciding.md, "Plan before paying"; issue 39) (pure).

For every submit or replace whose config carries ``[decide]``, the plan shows the fixed
design's tasks, the sequential maximum, the expected tasks and dollars under no
difference, at the margin and at 1.6 × the margin, and the worst case. A budget (or a
``max_tasks``) that cannot reach the stated power is refused: the plan fails (exit 1) with
*inconclusive by design*.

The variance per task of the paired difference, ``ω²``, is estimated like the plan's power
line (``plan.power``): from the address's latest complete recorded run's pass@1 ``p``, two
sides each with per-task variance ``p(1 − p)`` correlated ``ASSUMED_RHO``:
``ω² = 2 p (1 − p)(1 − ρ)``. Without such a run it is ``DEFAULT_OMEGA2`` (``p = 0.5``, the
largest), documented in docs/deciding.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconciler.model import Action, DesiredRun
from reconciler.model.decision import DecisionSpec
from reconciler.plan.cost import estimate
from reconciler.plan.draft import Draft
from reconciler.results.runs import address_runs

if TYPE_CHECKING:
    from reconciler.results.sequential import Design

__all__ = ["DEFAULT_OMEGA2", "INCONCLUSIVE", "design_of", "note_decisions", "omega2_of"]

ASSUMED_RHO = 0.5
"""The correlation of the two sides' per-task rates (the same as ``stats.ASSUMED_RHO``)."""
DEFAULT_OMEGA2 = 2 * 0.25 * (1 - ASSUMED_RHO)
"""``ω²`` at ``p = 0.5`` (the largest): what a decision without recorded runs assumes."""
INCONCLUSIVE = "inconclusive by design"


def omega2_of(pass_at_1: float | None) -> float:
    """``ω² = 2 p (1 − p)(1 − ρ)``, or ``DEFAULT_OMEGA2`` without a recorded ``p``."""
    if pass_at_1 is None:
        return DEFAULT_OMEGA2
    p = min(max(pass_at_1, 0.0), 1.0)
    return max(2 * p * (1 - p) * (1 - ASSUMED_RHO), 1e-4)


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def note_decisions(draft: Draft) -> None:
    """Add the decision's lines to each submit or replace with ``[decide]``; add an error
    (the plan exits 1) for each that cannot reach its power."""
    for index, item in enumerate(draft.items):
        if item.action not in (Action.SUBMIT, Action.REPLACE):
            continue
        wanted = draft.desired.get(item.address)
        if wanted is None or wanted.decide is None:
            continue
        task_count = item.task_count
        record = draft.decisions.get(item.address) or draft.recorded.decisions.get(item.address)
        if record is not None and record.batch_ends:
            # The item is one batch (plan.batches); the decision is sized on its selection.
            task_count = len(record.order)
            if record.looks:
                k = len(record.batch_ends)
                start = record.batch_ends[-2] if k > 1 else 0
                line = (
                    f"decide: batch {k}: tasks {start + 1}-{record.batch_ends[-1]} of the "
                    f"order (maximum {record.max_tasks}) after look {len(record.looks)}"
                )
                draft.items[index] = item.model_copy(update={"details": (*item.details, line)})
                continue
        lines, error = _decision_lines(draft, wanted, wanted.decide, task_count)
        draft.items[index] = item.model_copy(update={"details": (*item.details, *lines)})
        if error:
            draft.errors.append(error)


def _ends(plan: Design, spec: DecisionSpec) -> tuple[int, ...]:
    """The batches the tasks are bought in (anytime: ``looks`` of them too, though the
    plan's figures read the sequence at more looks)."""
    if spec.monitor == "batches":
        return plan.batch_ends
    from reconciler.results.sequential import batch_ends

    return tuple(batch_ends(plan.max_tasks, min(spec.looks, plan.max_tasks)))


def _basis(draft: Draft, address: str) -> tuple[float | None, str]:
    for run in address_runs(draft.recorded, address):
        rates = [a.pass_at_1 for a in run.agents if a.pass_at_1 is not None]
        if not run.partial and rates:
            p = sum(rates) / len(rates)
            return p, f"from {run.label} (pass@1 {p * 100:.1f}%)"
    return None, "assumed: no recorded run of this selection"


def design_of(
    draft: Draft, wanted: DesiredRun, spec: DecisionSpec, task_count: int | None
) -> Design:
    """The decision's design as the plan sizes it (what its first batch freezes)."""
    from reconciler.results.sequential import design

    p, _ = _basis(draft, wanted.address)
    max_tasks = spec.max_tasks
    if max_tasks is not None and task_count is not None:
        max_tasks = min(max_tasks, task_count)
    return design(
        margin=spec.margin,
        omega2=omega2_of(p),
        alpha=spec.alpha,
        power=spec.power,
        looks=spec.looks,
        futility=spec.futility == "equivalence",
        max_tasks=max_tasks,
        monitor=spec.monitor,
    )


def _decision_lines(
    draft: Draft, wanted: DesiredRun, spec: DecisionSpec, task_count: int | None
) -> tuple[list[str], str | None]:
    # Here, not at the top: a plan without a decision never loads the statistics.
    from reconciler.results.sequential import affordable_tasks, design

    p, basis = _basis(draft, wanted.address)
    omega2 = omega2_of(p)
    futility = spec.futility == "equivalence"
    plan = design_of(draft, wanted, spec, task_count)
    cost = estimate(wanted, None, 1, draft.costs)
    per_task = cost.high if cost is not None else None
    lines = [
        f"decide: margin {spec.margin_pp:g} pts, α {spec.alpha:g}, power {spec.power:g}, "
        f"{plan.looks if spec.monitor == 'batches' else 'anytime'} looks; ω² {omega2:.3f} "
        f"{basis}",
        f"decide: fixed design {plan.fixed_tasks} tasks; sequential maximum {plan.max_tasks} "
        f"in batches ending at {', '.join(str(n) for n in _ends(plan, spec))}",
    ]
    cases = (
        ("no difference", plan.under_zero),
        ("at the margin", plan.at_margin),
        ("at 1.6× the margin", plan.at_1_6_margin),
    )
    for name, at in cases:
        tasks = plan.expected_tasks(at)
        dollars = f", {_usd(tasks * per_task)}" if per_task is not None else ""
        lines.append(f"decide: expected {tasks:.0f} tasks{dollars} {name}")
    worst = f", {_usd(plan.max_tasks * per_task)}" if per_task is not None else ""
    lines.append(f"decide: worst case {plan.max_tasks} tasks{worst}")
    if per_task is None:
        lines.append("decide: dollars unknown: no recorded cost for these models")
    limit = plan.max_tasks
    reasons = []
    if task_count is not None and task_count < limit:
        reasons.append(f"the selection has {task_count} tasks")
        limit = task_count
    if spec.budget_usd is not None and per_task is not None and per_task > 0:
        affordable = affordable_tasks(spec.budget_usd, 0.0, [per_task] * limit)
        if affordable < limit:
            reasons.append(
                f"budget_usd {_usd(spec.budget_usd)} buys {affordable} tasks at "
                f"{_usd(per_task)} each at worst"
            )
            limit = affordable
    if not plan.reaches_power and not reasons:
        reasons.append(f"max_tasks = {plan.max_tasks}")
    if limit == plan.max_tasks:
        power = plan.attained_power
    elif limit < 2:
        power = 0.0
    else:
        power = design(
            margin=spec.margin,
            omega2=omega2,
            alpha=spec.alpha,
            power=spec.power,
            looks=min(spec.looks, limit // 2),
            futility=futility,
            max_tasks=limit,
            monitor=spec.monitor,
        ).attained_power
    target = spec.power
    if spec.monitor == "anytime":
        # A sequence valid after every download costs power at the same tasks (the design
        # note's "Anytime monitoring"): stated here, and the plan is refused only when the
        # budget or the selection cut it below what the monitor itself reaches.
        own = design(
            margin=spec.margin,
            omega2=omega2,
            alpha=spec.alpha,
            power=spec.power,
            futility=futility,
            max_tasks=spec.max_tasks,
            monitor="anytime",
        ).attained_power
        batches = design(
            margin=spec.margin,
            omega2=omega2,
            alpha=spec.alpha,
            power=spec.power,
            looks=spec.looks,
            futility=futility,
            max_tasks=plan.max_tasks,
        ).attained_power
        lines.append(
            f"decide: anytime monitoring costs power: {own:.2f} at the margin with "
            f"{plan.max_tasks} tasks, where {spec.looks} batch looks reach {batches:.2f}"
        )
        target = min(spec.power, own)
    if power >= target - 5e-4:
        return lines, None
    error = (
        f"{wanted.address}: {INCONCLUSIVE}: {'; '.join(reasons)}, and {limit} tasks reach "
        f"power {power:.2f} at a {spec.margin_pp:g}-point margin, not {spec.power:g} "
        f"({spec.where or wanted.path}); raise budget_usd or max_tasks, or widen margin_pp"
    )
    return lines, error
