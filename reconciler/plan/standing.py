"""Standing blocks: a blocked item whose cause the lockfile already records.

Red means something new went wrong (issue 34: a generator cell blocked after its smoke run
failed turned every later apply red, and CI with it, until someone edited the generator).
A block whose cause an apply has already recorded in the lockfile is *standing*: it is
listed in every plan, PR comment and drift report, but it no longer fails the plan
(``osmosis-plan`` exits 4 only for blocks that are new since the last recorded apply):

* a full run blocked by its smoke run, once the lockfile records that smoke run as ended
  (the apply after it ended recorded its status);
* a config the Platform refused, remembered in the lockfile (``[rejections]``).

Every other block (a missing secret, a twin, a recorded run that went missing) is decided
from what is observed now, so it is new in every plan until it is fixed. Pure.
"""

from __future__ import annotations

from reconciler.model import Action, PlanItem, Reason, RunStatus
from reconciler.plan.draft import Draft

__all__ = ["mark_standing"]


def mark_standing(draft: Draft) -> None:
    """Mark the blocked items whose block the lockfile already records."""
    draft.items[:] = [
        item.model_copy(update={"standing": True}) if _recorded(draft, item) else item
        for item in draft.items
    ]


def _recorded(draft: Draft, item: PlanItem) -> bool:
    if item.action is not Action.BLOCKED:
        return False
    if item.reason is Reason.SMOKE_FAILED:
        entry = draft.recorded.runs.get(item.address)
        return (
            entry is not None and entry.stage == "smoke" and RunStatus.of(entry.status).is_terminal
        )
    if item.reason is Reason.PLATFORM_REFUSED:
        return item.address in draft.recorded.rejections
    return False
