"""Whether an observed run is this repository's: from positive evidence only.

Repositories share workspaces, and an organisation often has one service token for all of
them: two repositories with the same config submit runs that look the same, by the same
creator, at any time. Timing and creator are therefore no evidence. A run is this
repository's only when something this repository wrote names it:

* a pending ``submit`` intent of its lockfile (a crash between the POST and recording the
  answer): the run created inside the intent's window with the fingerprint of the body
  that was sent (``plan.intents``, which looks before any other phase);
* its id in the lockfile, current entries or history (already recorded: never adopted
  again, never "unmanaged");
* its id in the remote state record (``Observation.vouched``): the lockfile the last apply
  against this Platform and workspace recorded on ``origin``. It covers the one case the
  branch's lockfile cannot: an apply whose lockfile commit never reached the branch.

Every other run that does exactly what a config asks is named (a possible duplicate, with
``osmosis-import RUN``) and never adopted or stopped. Runs adopted under the older rule are
in the lockfile, so they stay recorded.
"""

from __future__ import annotations

from enum import Enum

from reconciler.model import LockState, Observation, ObservedRun

__all__ = ["Evidence", "evidence_of", "recorded_ids"]


class Evidence(Enum):
    """What shows that a run is this repository's."""

    INTENT = "intent"
    """A pending submit intent of this repository (decided by ``plan.intents``)."""
    LOCKFILE = "lockfile"
    """Its id is in this repository's lockfile (current or history)."""
    STATE_RECORD = "state_record"
    """Its id is in the remote state record of this Platform and workspace."""


def recorded_ids(state: LockState) -> frozenset[str]:
    """Every run id a lockfile names: current entries, intents and history."""
    ids = {entry.run_id for entry in state.runs.values() if entry.run_id}
    ids |= {e.intent.run_id for e in state.runs.values() if e.intent and e.intent.run_id}
    ids |= {entry.run_id for entry in state.history if entry.run_id}
    return frozenset(ids)


def evidence_of(run: ObservedRun, recorded: LockState, observed: Observation) -> Evidence | None:
    """The evidence that ``run`` is this repository's, None when there is none (the run is
    someone else's as far as this repository can prove, whatever its timing or creator)."""
    if run.id in recorded_ids(recorded):
        return Evidence.LOCKFILE
    if run.id in observed.vouched:
        return Evidence.STATE_RECORD
    return None
