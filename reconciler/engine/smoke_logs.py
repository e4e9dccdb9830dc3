"""The smoke run's last error lines, quoted by the full run it blocks (docs/smoke.md).

The plan is pure; this reads the log lines (E6) of each smoke run that did not end well
after the plan was computed, and hands them to ``plan.smoke.with_log_lines``. Bounded: a
few lines, each escaped and cut, and one overall deadline for every fetch of a plan. A log
that cannot be read, or not in time, is said in the plan and never fails it.
"""

from __future__ import annotations

from reconciler import deadlines
from reconciler.errors import ReconcilerError
from reconciler.log import get_logger
from reconciler.model import Action, Plan, PlanItem, Reason
from reconciler.plan.smoke import LOG_LINES, with_log_lines
from reconciler.platform import PlatformClient
from reconciler.platform.logs import last_error_lines

__all__ = ["DEADLINE_ENV", "DEFAULT_DEADLINE_S", "with_smoke_logs"]

DEADLINE_ENV = "OSMOSIS_SMOKE_LOG_DEADLINE"
DEFAULT_DEADLINE_S = 10.0
"""Seconds a plan gives all its smoke runs' log fetches together."""


def _blocked_by_smoke(item: PlanItem) -> bool:
    return item.action is Action.BLOCKED and item.reason is Reason.SMOKE_FAILED


def with_smoke_logs(plan: Plan, client: PlatformClient, *, seconds: float | None = None) -> Plan:
    """``plan`` with the last error lines of every smoke run that blocks a full run."""
    if not any(_blocked_by_smoke(item) and item.run_id for item in plan.items):
        return plan
    if seconds is None:
        seconds = deadlines.seconds_from_env(DEADLINE_ENV, DEFAULT_DEADLINE_S)
    items: list[PlanItem] = []
    with deadlines.budget(seconds) as budget:
        for item in plan.items:
            if _blocked_by_smoke(item) and item.run_id:
                item = _quote_log(item, item.run_id, client, budget, seconds)
            items.append(item)
    return plan.model_copy(update={"items": tuple(items)})


def _quote_log(
    item: PlanItem,
    run_id: str,
    client: PlatformClient,
    budget: deadlines.Budget,
    seconds: float,
) -> PlanItem:
    late = f"not within the {seconds:g} s the plan gives them ({DEADLINE_ENV}=SECONDS)"
    if budget.remaining() <= 0:
        return with_log_lines(item, None, late)
    try:
        lines = last_error_lines(client, run_id, count=LOG_LINES)
    except ReconcilerError as exc:
        problem = late if budget.expired else exc.message
        get_logger().warning("smoke run log not read", run_id=run_id, error=problem)
        return with_log_lines(item, None, problem)
    return with_log_lines(item, lines, None)
