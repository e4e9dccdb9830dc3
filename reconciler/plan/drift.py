"""Phase 4: drift, reported on its own and never mixed with actions (design.md §6)."""

from __future__ import annotations

from reconciler.model import (
    Action,
    DriftKind,
    Reason,
    RecordedRun,
    RunStatus,
    SmokeStage,
    spec_fingerprint,
)
from reconciler.plan.draft import CLOCK_SKEW, Draft, drift_fingerprint, run_label, timestamp

DRIFT_ORDER = {
    DriftKind.RUN_MISSING: 0,
    DriftKind.STOPPED_OUTSIDE: 1,
    DriftKind.FAILED_OUTSIDE: 2,
    DriftKind.FILES_CHANGED: 3,
    DriftKind.POSSIBLE_DUPLICATE: 4,
}

_TAKES_OVER = frozenset({Action.SUBMIT, Action.REPLACE, Action.ADOPT, Action.MOVE, Action.BLOCKED})
"""Items after which the address no longer keeps its recorded run."""

__all__ = ["DRIFT_ORDER", "drift_fingerprint", "find_drift"]


def find_drift(draft: Draft) -> None:
    """Recorded runs changed outside the tool, then possible duplicate payments.

    Runs of the workspace that this repository never recorded are not drift: they are
    someone else's (``unmanaged``, counted in the summary), unless one does exactly what a
    config asks after that config reached the branch while the config has its own run.
    """
    for address in sorted(draft.recorded.runs):
        _status_drift(draft, draft.recorded.runs[address])
    _possible_duplicates(draft)


def _possible_duplicates(draft: Draft) -> None:
    skew = CLOCK_SKEW.total_seconds()
    # A re-run keeps the address's config and recorded run: the runs that duplicate it are
    # still worth naming (the re-run is about to pay for one more).
    decided = {
        item.address
        for item in draft.items
        if item.action in _TAKES_OVER
        and Reason.REPLACE_REQUESTED
        not in (item.reason, item.blocked.intended_reason if item.blocked else None)
    }
    for address in sorted(draft.desired):
        wanted = draft.desired[address]
        entry = draft.recorded.runs.get(address)
        benchmark = draft.observed.benchmarks.get(wanted.benchmark)
        if (
            entry is None
            or entry.run_id is None
            or address in decided
            or benchmark is None
            or wanted.arrived_at is None
            or entry.spec_digest != wanted.spec_digest
        ):
            continue
        fingerprint = spec_fingerprint(wanted.spec, benchmark.id)
        after = timestamp(wanted.arrived_at) - skew
        for run in draft.unrecorded:
            if (
                run.id in draft.claimed
                or run.fingerprint != fingerprint
                or run.created_at is None
                or timestamp(run.created_at) < after
            ):
                continue
            draft.add_drift(
                DriftKind.POSSIBLE_DUPLICATE,
                address,
                run.id,
                f"run {run_label(run.name, run.id)} was made"
                + (f" by {run.creator_name}" if run.creator_name else "")
                + " outside this repository's "
                f"applies but does exactly what {wanted.path} asks, whose run is "
                f"{run_label(entry.run_name, entry.run_id)}: a second payment for one config? "
                f"Stop it with `osmosis benchmark runs stop {run.name or run.id}` if it is "
                "not wanted",
            )


def _status_drift(draft: Draft, entry: RecordedRun) -> None:
    intent = entry.intent
    if intent is not None and intent.op == "submit":
        return  # in flight: the intent phase explains this entry
    if not entry.run_id:
        return
    label = run_label(entry.run_name, entry.run_id)
    if entry.run_id in draft.observed.missing:
        draft.add_drift(
            DriftKind.RUN_MISSING,
            entry.address,
            entry.run_id,
            f"recorded run {label} no longer exists on the Platform (a direct read answered 404)",
        )
        return
    run = draft.observed.runs.get(entry.run_id)
    if run is None:
        return  # not looked at: an ended run never changes
    if entry.status is None or not RunStatus.of(entry.status).is_active:
        return
    if entry.stage == SmokeStage.SMOKE:
        return  # a smoke run's end is what its plan item judges (plan/smoke.py)
    now = RunStatus.of(run.status)
    if now is RunStatus.STOPPED and not (intent is not None and intent.op == "stop"):
        draft.add_drift(
            DriftKind.STOPPED_OUTSIDE,
            entry.address,
            run.id,
            f"run {label} was stopped on the Platform, not by osmosis-reconciler (recorded "
            f"{entry.status})",
        )
    elif now is RunStatus.FAILED:
        draft.add_drift(
            DriftKind.FAILED_OUTSIDE,
            entry.address,
            run.id,
            f"run {label} failed on the Platform (recorded {entry.status}); see "
            f"`osmosis benchmark runs logs {run.name or run.id}`",
        )
