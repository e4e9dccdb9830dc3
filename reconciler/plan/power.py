"""Power before paying: for each submit with history to estimate from, the smallest
difference its comparison with the address's previous comparable run can detect (pure).

Estimated from the previous run's recorded pass@1 alone (``stats.planning_mde``: 80%
power, alpha 0.05, the runs' per-task rates assumed correlated 0.5): the lockfile holds
summaries, not per-task rates, and a plan reads no files. ``osmosis-results compare`` gives
the measured MDE once both runs exist.
"""

from __future__ import annotations

from reconciler.model import Action
from reconciler.plan.draft import Draft
from reconciler.results.runs import address_runs

__all__ = ["note_power"]


def note_power(draft: Draft) -> None:
    """Add a ``power:`` line to the details of every submit or replace whose address has a
    complete earlier run with scores."""
    for index, item in enumerate(draft.items):
        if item.action not in (Action.SUBMIT, Action.REPLACE) or not item.task_count:
            continue
        basis = next(
            (
                run
                for run in address_runs(draft.recorded, item.address)
                if not run.partial and any(a.pass_at_1 is not None for a in run.agents)
            ),
            None,
        )
        if basis is None:
            continue
        # Here, not at the top: a plan without such a submit never loads the statistics.
        from reconciler.results.stats import ASSUMED_RHO, planning_mde

        rates = [a.pass_at_1 for a in basis.agents if a.pass_at_1 is not None]
        p = sum(rates) / len(rates)
        mde = planning_mde(p, item.task_count)
        attempts = (item.spec or {}).get("execution_config", {}).get("attempts_per_task", 1)
        line = (
            f"power: compared with {basis.label} (pass@1 {p * 100:.1f}%), {item.task_count} "
            f"tasks × {attempts} attempts detect |Δ| ≥ {mde * 100:.1f} pts (80% power; "
            f"assumes correlation {ASSUMED_RHO}; more tasks, not attempts, lower it)"
        )
        draft.items[index] = item.model_copy(update={"details": (*item.details, line)})
