"""The engine's seam to the printer: what a step tells people and scripts while it works.

The engine never prints (style.md, "Import direction"): each operation is handed a
``Notices`` for its notes and warnings, and ``engine.apply.apply`` an ``ApplyProgress`` for the
apply's live report (each action as it starts and ends, the ``--wait``, the closing
summary). Both are protocols: the one printer, ``reconciler.cli.output.Output`` and its
``ApplyReport``, implements them, and a test may hand in anything with these methods. The
values an apply reports (``Outcome``, ``RunRef``, ``WaitReport``) are defined here, with the
engine that makes them; ``apply_result`` (what an apply ended with) holds them and imports
them from here, never the other way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from reconciler.errors import ConfigIssue
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
    blocked: bool = False
    """A blocked item, reported and not attempted (``ok`` is False): never a failure of the
    apply by itself (issue 34: a standing block turned every apply red). A saved plan's
    item the recomputed plan refuses is a failure, not this."""
    directory: str | None = None
    """For a download: the run's directory, relative to the repository root, where its
    files went (set when some arrived, even if others failed)."""


@dataclass(frozen=True)
class RunRef:
    """A recorded run named in an apply's report (still active, or ended unsuccessfully)."""

    address: str
    run_id: str | None
    run_name: str | None
    status: str | None

    def label(self) -> str:
        run = self.run_name or self.run_id or ""
        return f"{self.address} {run}".rstrip()


@dataclass(frozen=True)
class WaitReport:
    """How a ``--wait`` ended."""

    timeout: float
    timed_out: bool
    active: tuple[RunRef, ...] = ()
    """Runs still active when the wait ended (empty unless it timed out or was cut short)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "timeout_s": self.timeout,
            "timed_out": self.timed_out,
            "active": [asdict(r) for r in self.active],
        }


class Notices(Protocol):
    """Notes and warnings a step gives while it works (the printer decides where they go)."""

    def info(self, text: str) -> None:
        """A note (the Platform banner, waiting for a lock); silenced by ``-q``."""

    def warning(self, message: str, *, hint: str | None = None) -> None:
        """A warning, also recorded as a diagnostic."""

    def issue(self, issue: ConfigIssue) -> None:
        """A problem in a config file (warnings; errors end the command as a ``ConfigError``)."""

    def alert(self, text: str) -> None:
        """A line people must read even with ``-q`` (the apply lock was lost)."""


class ApplyProgress(Protocol):
    """The live report of one apply. ``started`` and ``finished`` are called from the
    ``Applier``'s worker threads; the rest by the apply (``engine.apply``), in order."""

    def started(self, item: PlanItem) -> None:
        """An action is about to start."""

    def finished(self, outcome: Outcome) -> None:
        """An action ended (well or not)."""

    def waiting(self, runs: Sequence[RunRef], timeout: float) -> None:
        """``--wait`` starts waiting for these active runs."""

    def wait_progress(self, counts: Mapping[str, int]) -> None:
        """The runs waited for, counted by status (called when the counts change)."""

    def waited(self, report: WaitReport) -> None:
        """The wait ended: every run ended, the time ran out, or it was cancelled."""

    def summarise(
        self,
        unsuccessful: Sequence[RunRef],
        *,
        unsaved: str | None = None,
        lockfile: str | None = None,
    ) -> None:
        """The apply ended. ``unsuccessful``: runs it touched that ended failed or stopped;
        ``unsaved``: why the lockfile could not be written at the end, when it could not;
        ``lockfile``: its path, when there is something to commit."""
