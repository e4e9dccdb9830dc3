"""What an apply ended with: each plan item's ``Outcome`` and the ``ApplyResult`` that
holds them. Only the apply imports this at run time (a plan does not pay for it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reconciler.engine.report import RunRef, WaitReport
    from reconciler.model import PlanItem


@dataclass(frozen=True)
class Outcome:
    """What happened to one plan item."""

    item: PlanItem
    ok: bool
    message: str
    run_id: str | None = None
    run_name: str | None = None
    status: str | None = None
    """The run's status as last seen by the action (``failed`` and ``stopped`` are shown)."""
    reached_platform: bool = False
    """A failed item whose paid call did happen (a run created or stopped) before the
    failure, e.g. when the lockfile could not record it: the apply was partial."""


@dataclass
class ApplyResult:
    outcomes: list[Outcome] = field(default_factory=list)
    cancelled: bool = False
    unsaved: str | None = None
    """Why the last lockfile write failed, when it did (some records are not on disk)."""
    wait: WaitReport | None = None
    """How the ``--wait`` ended (the last wait, when the apply waited more than once)."""
    unsuccessful: tuple[RunRef, ...] = ()
    """Runs the apply touched that ended failed or stopped (set when the apply ends)."""

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def succeeded(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def unrecorded(self) -> list[Outcome]:
        """Failed items that nonetheless changed the Platform (see ``Outcome.reached_platform``)."""
        return [o for o in self.outcomes if not o.ok and o.reached_platform]
