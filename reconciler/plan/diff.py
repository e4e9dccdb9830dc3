"""Phase 3: each desired config against its recorded entry, and each deleted config.

New configs adopt an unrecorded run that does exactly what they ask, else submit; a recorded
config is replaced or resubmitted when it changed, resubmitted when its run is gone, and
otherwise only its outputs are looked at; a deleted config's run is stopped or forgotten.
"""

from __future__ import annotations

from reconciler.model import (
    NOT_DOWNLOADABLE_STATUSES,
    Action,
    DesiredRun,
    DriftKind,
    LocalOutputs,
    ObservedRun,
    PlanItem,
    Reason,
    RecordedRun,
    glob_match,
    is_active,
    is_terminal,
    spec_fingerprint,
)
from reconciler.plan.changes import spec_changes
from reconciler.plan.draft import Draft, plural, run_label
from reconciler.plan.preflight import paid_item


def diff_configs(draft: Draft, new_addresses: list[str]) -> None:
    """New configs first (they may claim unrecorded runs), then every undecided entry."""
    for address in new_addresses:
        _plan_new(draft, draft.desired[address])
    for address in sorted(draft.recorded.runs):
        if address in draft.handled:
            continue
        entry = draft.recorded.runs[address]
        if address in draft.desired:
            _plan_recorded(draft, draft.desired[address], entry)
        else:
            _plan_deleted(draft, entry)


# --------------------------------------------------------------------------- new configs


def _plan_new(draft: Draft, wanted: DesiredRun) -> None:
    match = claim_unrecorded(draft, wanted)
    if match is not None:
        draft.items.append(_adopt(wanted, match, before=None))
    else:
        draft.items.append(paid_item(draft, Action.SUBMIT, Reason.NEW_CONFIG, wanted))


def claim_unrecorded(draft: Draft, wanted: DesiredRun) -> ObservedRun | None:
    """The newest unclaimed unrecorded run doing exactly what ``wanted`` asks, if any."""
    benchmark = draft.observed.benchmarks.get(wanted.benchmark)
    if benchmark is None:
        return None
    fingerprint = spec_fingerprint(wanted.spec, benchmark.id)
    for run in draft.unrecorded:
        if run.id not in draft.claimed and run.fingerprint == fingerprint:
            draft.claimed.add(run.id)
            return run
    return None


def _adopt(wanted: DesiredRun, run: ObservedRun, *, before: str | None) -> PlanItem:
    return PlanItem(
        action=Action.ADOPT,
        address=wanted.address,
        reason=Reason.UNRECORDED_MATCH,
        run_id=run.id,
        run_name=run.name or None,
        before_digest=before,
        after_digest=wanted.spec_digest,
        spec=wanted.spec,
        benchmark_id=run.benchmark_id,
        requested_by=wanted.requested_by,
        requested_subject=wanted.requested_subject,
    )


# --------------------------------------------------------------------------- recorded configs


def _plan_recorded(draft: Draft, wanted: DesiredRun, entry: RecordedRun) -> None:
    settings = draft.settings
    run = draft.observed.runs.get(entry.run_id) if entry.run_id else None
    active = run is not None and is_active(run.status)
    changed = wanted.spec_digest != entry.spec_digest
    changes = spec_changes(entry.spec, wanted.spec) if changed else ()
    requested = glob_match(wanted.address, settings.replace)
    common = {
        "run_id": entry.run_id,
        "run_name": (run.name if run and run.name else entry.run_name),
        "before": entry.spec_digest,
        "changes": changes,
    }
    if entry.intent is not None and entry.intent.op == "stop" and active:
        if requested or (changed and settings.on_change == "replace"):
            draft.items.append(
                paid_item(draft, Action.REPLACE, Reason.STOP_PENDING, wanted, **common)
            )
        else:
            draft.items.append(_stop(entry, run, Reason.STOP_PENDING))
        return
    if requested:
        action = Action.REPLACE if active else Action.SUBMIT
        draft.items.append(paid_item(draft, action, Reason.REPLACE_REQUESTED, wanted, **common))
        return
    if changed:
        if active:
            if settings.on_change == "replace":
                draft.items.append(
                    paid_item(draft, Action.REPLACE, Reason.SPEC_CHANGED, wanted, **common)
                )
            else:
                assert run is not None
                draft.warnings.append(
                    f"{wanted.address}: config changed but run "
                    f"{run_label(common['run_name'], run.id)} is still {run.status or 'active'}; "
                    "on_change = keep leaves it running and submits the new config once "
                    "it has ended"
                )
            return
        # The old run is over (or gone): a run matching the new config that the lockfile
        # missed (an apply whose lockfile commit was lost) is adopted rather than paid twice.
        match = claim_unrecorded(draft, wanted)
        if match is not None:
            draft.items.append(_adopt(wanted, match, before=entry.spec_digest))
        else:
            draft.items.append(
                paid_item(draft, Action.SUBMIT, Reason.SPEC_CHANGED, wanted, **common)
            )
        return
    if run is None:
        match = claim_unrecorded(draft, wanted)
        if match is not None:
            draft.items.append(_adopt(wanted, match, before=entry.spec_digest))
        else:
            draft.items.append(
                paid_item(draft, Action.SUBMIT, Reason.RUN_MISSING, wanted, **common)
            )
        return
    _plan_download(draft, entry, run)


def _plan_download(draft: Draft, entry: RecordedRun, run: ObservedRun) -> None:
    settings = draft.settings
    status = run.status
    downloadable = is_terminal(status) or (
        settings.download_running and status not in NOT_DOWNLOADABLE_STATUSES
    )
    if not downloadable:
        return
    outputs = draft.observed.outputs.get(entry.address, LocalOutputs())
    downloads = entry.downloads
    reason: Reason | None = None
    if downloads is not None:
        changed = sorted(outputs.changed & set(downloads.sha256))
        if changed:
            shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
            draft.add_drift(
                DriftKind.FILES_CHANGED,
                entry.address,
                entry.run_id,
                f"{plural(len(changed), 'downloaded file')} of run "
                f"{run_label(entry.run_name, run.id)} changed on disk: {shown}",
            )
            reason = Reason.RESULTS_CHANGED
        elif (
            not downloads.complete
            or not set(settings.download_types) <= set(downloads.types)
            or any(path not in outputs.present for path in downloads.sha256)
        ):
            reason = Reason.RESULTS_MISSING
    elif is_terminal(status) and (entry.status is None or not is_terminal(entry.status)):
        reason = Reason.RUN_FINISHED
    else:
        reason = Reason.RESULTS_MISSING
    if reason is None:
        return
    draft.items.append(
        PlanItem(
            action=Action.DOWNLOAD,
            address=entry.address,
            reason=reason,
            run_id=run.id,
            run_name=run.name or entry.run_name,
            before_digest=entry.spec_digest,
            after_digest=entry.spec_digest,
            benchmark_id=entry.benchmark_id or run.benchmark_id,
            download_types=tuple(settings.download_types),
        )
    )


# --------------------------------------------------------------------------- deleted configs


def _plan_deleted(draft: Draft, entry: RecordedRun) -> None:
    run = draft.observed.runs.get(entry.run_id) if entry.run_id else None
    if run is not None and is_active(run.status):
        if entry.intent is not None and entry.intent.op == "stop":
            draft.items.append(_stop(entry, run, Reason.STOP_PENDING))
            return
        if draft.settings.on_delete == "stop":
            draft.items.append(_stop(entry, run, Reason.CONFIG_DELETED))
            return
        draft.items.append(
            _forget(
                entry,
                run,
                warnings=(
                    f"run {run_label(run.name or entry.run_name, run.id)} keeps running on "
                    "the Platform (on_delete = forget)",
                ),
            )
        )
        return
    draft.items.append(_forget(entry, run))


def _stop(entry: RecordedRun, run: ObservedRun | None, reason: Reason) -> PlanItem:
    return PlanItem(
        action=Action.STOP,
        address=entry.address,
        reason=reason,
        run_id=run.id if run else entry.run_id,
        run_name=(run.name if run and run.name else entry.run_name),
        before_digest=entry.spec_digest,
        benchmark_id=entry.benchmark_id,
    )


def _forget(
    entry: RecordedRun, run: ObservedRun | None, warnings: tuple[str, ...] = ()
) -> PlanItem:
    return PlanItem(
        action=Action.FORGET,
        address=entry.address,
        reason=Reason.CONFIG_DELETED,
        run_id=entry.run_id,
        run_name=(run.name if run and run.name else entry.run_name),
        before_digest=entry.spec_digest,
        benchmark_id=entry.benchmark_id,
        warnings=warnings,
    )
