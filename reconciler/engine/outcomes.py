"""What an apply ended with, as the command reports it: the statuses it recorded and the
runs it touched that ended failed or stopped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.engine.report import RunRef
from reconciler.model import Action, LockState, RecordedChange
from reconciler.model.status import RunStatus

if TYPE_CHECKING:  # the apply engine is imported only by apply (tests/unit/test_startup_imports.py)
    from reconciler.engine.apply_result import ApplyResult


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
