"""Phase 4: drift, reported on its own and never mixed with actions (design.md §6)."""

from __future__ import annotations

from reconciler.model import DriftKind, RecordedRun, is_active
from reconciler.plan.draft import Draft, drift_fingerprint, run_label

DRIFT_ORDER = {
    DriftKind.RUN_MISSING: 0,
    DriftKind.STOPPED_OUTSIDE: 1,
    DriftKind.FAILED_OUTSIDE: 2,
    DriftKind.FILES_CHANGED: 3,
    DriftKind.UNKNOWN_RUN: 4,
}

__all__ = ["DRIFT_ORDER", "drift_fingerprint", "find_drift"]


def find_drift(draft: Draft) -> None:
    """Recorded runs changed outside the tool, then unrecorded runs no item claimed."""
    for address in sorted(draft.recorded.runs):
        _status_drift(draft, draft.recorded.runs[address])
    for run in sorted(draft.unrecorded, key=lambda r: r.id):
        if run.id not in draft.claimed:
            draft.add_drift(
                DriftKind.UNKNOWN_RUN,
                None,
                run.id,
                f"run {run_label(run.name, run.id)}"
                f"{' of ' + run.benchmark_name if run.benchmark_name else ''}"
                f" ({run.status or 'unknown status'}) is in workspace "
                f"{draft.observed.workspace} but not in the lockfile",
            )


def _status_drift(draft: Draft, entry: RecordedRun) -> None:
    intent = entry.intent
    if intent is not None and intent.op == "submit":
        return  # in flight: the intent phase explains this entry
    if not entry.run_id:
        return
    run = draft.observed.runs.get(entry.run_id)
    label = run_label(entry.run_name, entry.run_id)
    if run is None:
        draft.add_drift(
            DriftKind.RUN_MISSING,
            entry.address,
            entry.run_id,
            f"recorded run {label} no longer exists on the Platform",
        )
        return
    if entry.status is None or not is_active(entry.status):
        return
    if run.status == "stopped" and not (intent is not None and intent.op == "stop"):
        draft.add_drift(
            DriftKind.STOPPED_OUTSIDE,
            entry.address,
            run.id,
            f"run {label} was stopped outside osmosis-reconciler (recorded {entry.status})",
        )
    elif run.status == "failed":
        draft.add_drift(
            DriftKind.FAILED_OUTSIDE,
            entry.address,
            run.id,
            f"run {label} failed (recorded {entry.status}); see "
            f"`osmosis benchmark runs logs {run.name or run.id}`",
        )
