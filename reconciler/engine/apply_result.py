"""What an apply ended with: the ``ApplyResult`` that holds each plan item's ``Outcome``
(defined with the other values an apply reports, in ``report``). Only the apply imports
this at run time (a plan does not pay for it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reconciler.engine.report import Outcome, RunRef, WaitReport


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
        """Actions the apply attempted (or was asked to and refused) that did not succeed."""
        return [o for o in self.outcomes if not o.ok and not o.blocked]

    @property
    def blocked(self) -> list[Outcome]:
        """Blocked items: reported, not attempted, no failure by themselves."""
        return [o for o in self.outcomes if o.blocked]

    @property
    def succeeded(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok]

    @property
    def unrecorded(self) -> list[Outcome]:
        """Failed items that nonetheless changed the Platform (see ``Outcome.reached_platform``)."""
        return [o for o in self.outcomes if not o.ok and o.reached_platform]
