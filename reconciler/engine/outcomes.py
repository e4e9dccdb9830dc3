"""What an apply ended with, as the command reports it: each plan item's outcome, the
statuses it recorded and the runs it touched that ended failed or stopped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reconciler.engine.report import RunRef, WaitReport
from reconciler.model import Action, LockState, PlanItem, RecordedChange
from reconciler.model.status import RunStatus


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

    @property
    def exit_code(self) -> int:
        """0 all applied; 3 partial (something succeeded or reached the Platform); 1 nothing."""
        if not self.failures and self.unsaved is None:
            return 0
        return 3 if self.succeeded or self.unrecorded else 1


def recorded_changes(before: LockState, after: LockState) -> tuple[RecordedChange, ...]:
    """What ``after`` records that ``before`` does not (statuses, by address)."""
    changes = []
    for address, entry in sorted(after.runs.items()):
        old = before.runs.get(address)
        if old is not None and old.status != entry.status:
            changes.append(
                RecordedChange(
                    address=address,
                    run_id=entry.run_id,
                    run_name=entry.run_name,
                    before=old.status,
                    after=entry.status,
                )
            )
    return tuple(changes)


def unsuccessful_runs(state: LockState, result: ApplyResult, waited: Sequence[str]) -> list[RunRef]:
    """Runs this apply submitted, adopted, downloaded or waited for that ended failed or
    stopped (a stop it made itself is not news)."""
    touched = {
        o.item.address
        for o in result.outcomes
        if o.ok and o.item.action in (Action.SUBMIT, Action.REPLACE, Action.ADOPT, Action.DOWNLOAD)
    }
    touched.update(waited)
    runs = []
    for address in sorted(touched):
        entry = state.runs.get(address)
        if entry is not None and RunStatus.of(entry.status).is_unsuccessful:
            runs.append(RunRef(address, entry.run_id, entry.run_name, entry.status))
    return runs
