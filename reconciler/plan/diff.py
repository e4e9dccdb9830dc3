"""Phase 3: each desired config against its recorded entry, and each deleted config.

New configs adopt an unrecorded run that does exactly what they ask, else submit; a recorded
config is replaced or resubmitted when it changed, resubmitted when its run is gone, and
otherwise only its outputs are looked at; a deleted config's run is stopped or forgotten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from reconciler.model import (
    OUTPUTS_DUE_STATUSES,
    Action,
    DesiredRun,
    DriftKind,
    LocalOutputs,
    ObservedRun,
    PlanItem,
    Reason,
    RecordedRun,
    RunStatus,
    glob_match,
    spec_fingerprint,
)
from reconciler.plan.changes import spec_changes
from reconciler.plan.draft import CLOCK_SKEW, Draft, plural, run_label, timestamp
from reconciler.plan.missing import plan_missing
from reconciler.plan.ownership import evidence_of
from reconciler.plan.smoke import (
    SMOKE,
    ended_badly,
    passed_smoke_run,
    rule_for,
    skipped,
    smoke_failed_item,
)

if TYPE_CHECKING:
    from reconciler.plan.preflight import paid_item
else:

    def paid_item(*args: Any, **kwargs: Any) -> PlanItem:
        """``preflight.paid_item``, imported on the first paid item: a plan with nothing to
        submit never loads preflight, the submit rules and the cost model."""
        from reconciler.plan.preflight import paid_item as paid

        return paid(*args, **kwargs)


def diff_configs(draft: Draft, new_addresses: list[str]) -> None:
    """New configs first (they may claim unrecorded runs), then every undecided entry, then
    the ended runs in the history whose outputs are still owed."""
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
    _plan_history_downloads(draft)


def _plan_history_downloads(draft: Draft) -> None:
    """A run that ended and left its address before its outputs were fetched (a config
    changed or deleted before a download) is still downloaded: no ended managed run leaves
    the repository without its results (design.md §7.11)."""
    for old in draft.recorded.history:
        if not old.outputs_pending or not old.run_id or old.run_id in draft.observed.missing:
            continue
        draft.items.append(
            PlanItem(
                action=Action.DOWNLOAD,
                address=old.address,
                reason=Reason.RESULTS_MISSING,
                run_id=old.run_id,
                run_name=old.run_name,
                before_digest=old.spec_digest,
                after_digest=old.spec_digest,
                benchmark_id=old.benchmark_id,
                download_types=tuple(draft.settings.download_types),
                details=(f"an earlier run of {old.address} ({old.reason}); kept in the history",),
            )
        )


def _outputs_before_leaving(draft: Draft, entry: RecordedRun, run: ObservedRun | None) -> None:
    """Download an ended run's outputs in the same apply that moves its entry to history
    (never a smoke run's: they are not the address's outputs)."""
    if entry.stage == SMOKE:
        return
    if run is not None and run.status in OUTPUTS_DUE_STATUSES:
        _plan_download(draft, entry, run)


# --------------------------------------------------------------------------- new configs


def _plan_new(draft: Draft, wanted: DesiredRun) -> None:
    match, others = claim_unrecorded(draft, wanted)
    if match is not None:
        draft.items.append(_adopt(wanted, match, before=None))
        return
    # A config whose smoke run ended well and whose full run's submit was then settled as
    # never sent (``osmosis-state resolve --not-submitted``): the full run, not a new smoke.
    after_smoke = passed_smoke_run(draft.recorded, wanted.address, wanted.spec_digest)
    item = paid_item(draft, Action.SUBMIT, Reason.NEW_CONFIG, wanted, after_smoke=after_smoke)
    if others:
        item = item.model_copy(update={"warnings": (*item.warnings, *_not_adopted(wanted, others))})
    draft.items.append(item)


def claim_unrecorded(
    draft: Draft, wanted: DesiredRun, entry: RecordedRun | None = None
) -> tuple[ObservedRun | None, list[ObservedRun]]:
    """The newest unclaimed unrecorded run doing exactly what ``wanted`` asks that is this
    repository's by evidence (``plan.ownership``: the remote state record names it), and
    the other such runs (named, never claimed). Timing and creator are no evidence:
    repositories share workspaces and service tokens.
    """
    benchmark = draft.observed.benchmarks.get(wanted.benchmark)
    if benchmark is None:
        return None, []
    fingerprint = spec_fingerprint(wanted.spec, benchmark.id)
    others: list[ObservedRun] = []
    for run in draft.unrecorded:
        if run.id in draft.claimed or run.fingerprint != fingerprint:
            continue
        if evidence_of(run, draft.recorded, draft.observed) is not None:
            draft.claimed.add(run.id)
            return run, others
        others.append(run)
    return None, others


def _not_adopted(wanted: DesiredRun, runs: list[ObservedRun]) -> tuple[str, ...]:
    lines = []
    for run in runs[:3]:
        created = run.created_at.strftime("%Y-%m-%d %H:%M UTC") if run.created_at else "unknown"
        lines.append(
            f"run {run_label(run.name, run.id)} (created {created}) does exactly what this "
            "config asks but nothing this repository wrote names it, so it is not adopted; "
            "to use it "
            f"instead of a new run: `osmosis-import {run.name or run.id} --to {wanted.path}`"
        )
    if len(runs) > 3:
        lines.append(f"{len(runs) - 3} more such runs")
    return tuple(lines)


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


class _Previous(TypedDict):
    """What a submit or replace of a recorded address says about the run it follows."""

    run_id: str | None
    run_name: str | None
    before: str | None
    changes: tuple[str, ...]


def _plan_recorded(draft: Draft, wanted: DesiredRun, entry: RecordedRun) -> None:
    settings = draft.settings
    run = draft.run_of(entry)
    if run is not None and _record_mismatch(draft, entry, run):
        return
    if (
        run is None
        and entry.stage == SMOKE
        and entry.run_id
        and RunStatus.of(entry.status).is_terminal
    ):
        # A smoke run that ended before it went: judged on what the lockfile recorded.
        run = ObservedRun(id=entry.run_id, name=entry.run_name or "", status=entry.status or "")
    active = run is not None and RunStatus.of(run.status).is_active
    changed = wanted.spec_digest != entry.spec_digest
    changes = spec_changes(entry.spec, wanted.spec) if changed else ()
    requested = glob_match(wanted.address, settings.replace)
    if entry.stage == SMOKE and not changed and not requested and run is not None:
        _plan_after_smoke(draft, wanted, entry, run, active)
        return
    common: _Previous = {
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
        _outputs_before_leaving(draft, entry, run)
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
        _adopt_or_submit(draft, wanted, entry, Reason.SPEC_CHANGED, common)
        _outputs_before_leaving(draft, entry, run)
        return
    if run is None:
        plan_missing(
            draft,
            wanted,
            entry,
            lambda: _adopt_or_submit(draft, wanted, entry, Reason.RUN_MISSING, common),
        )
        return
    _plan_download(draft, entry, run)


def _plan_after_smoke(
    draft: Draft, wanted: DesiredRun, entry: RecordedRun, run: ObservedRun, active: bool
) -> None:
    """The address's smoke run, for the config it was run for: wait while it runs, then
    submit the full run when it ended well, else block the full run (docs/smoke.md)."""
    common: _Previous = {
        "run_id": entry.run_id,
        "run_name": run.name or entry.run_name,
        "before": entry.spec_digest,
        "changes": (),
    }
    if active:
        if skipped(draft.settings, wanted.address):
            # Straight to the full run: the running smoke run is stopped and replaced.
            draft.items.append(
                paid_item(draft, Action.REPLACE, Reason.REPLACE_REQUESTED, wanted, **common)
            )
        return
    why = ended_badly(entry, run, rule_for(draft.settings, wanted.address))
    if why is None:
        draft.items.append(
            paid_item(
                draft,
                Action.SUBMIT,
                Reason.SMOKE_PASSED,
                wanted,
                after_smoke=entry.run_id,
                **common,
            )
        )
        return
    full = paid_item(draft, Action.SUBMIT, Reason.SMOKE_FAILED, wanted, **common)
    if skipped(draft.settings, wanted.address) or full.action is Action.BLOCKED:
        draft.items.append(full)
        return
    full_attempts = full.smoke.full_attempts if full.smoke is not None else full.attempts
    draft.items.append(smoke_failed_item(wanted, entry, run, why, full_attempts))


def _adopt_or_submit(
    draft: Draft, wanted: DesiredRun, entry: RecordedRun, reason: Reason, common: _Previous
) -> None:
    match, others = claim_unrecorded(draft, wanted, entry)
    if match is not None:
        draft.items.append(_adopt(wanted, match, before=entry.spec_digest))
        return
    item = paid_item(draft, Action.SUBMIT, reason, wanted, **common)
    if others:
        item = item.model_copy(update={"warnings": (*item.warnings, *_not_adopted(wanted, others))})
    draft.items.append(item)


def _plan_download(draft: Draft, entry: RecordedRun, run: ObservedRun) -> None:
    settings = draft.settings
    status = run.status
    downloadable = RunStatus.of(status).is_terminal or (
        settings.download_running and RunStatus.of(status).may_have_outputs
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
            # A complete recorded download is done; only `outputs = "disk"` wants the
            # files here too (a fresh clone or CI runner has none of them).
            or (
                settings.outputs == "disk"
                and (
                    any(path not in outputs.present for path in downloads.sha256)
                    or len(outputs.present - set(downloads.sha256)) < (downloads.others or 0)
                )
            )
        ):
            reason = Reason.RESULTS_MISSING
    elif RunStatus.of(status).is_terminal and not RunStatus.of(entry.status).is_terminal:
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
    run = draft.run_of(entry)
    if run is not None and _record_mismatch(draft, entry, run):
        return
    if run is not None and RunStatus.of(run.status).is_active:
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
    _outputs_before_leaving(draft, entry, run)


def _record_mismatch(draft: Draft, entry: RecordedRun, run: ObservedRun) -> bool:
    """Whether the run the Platform shows under the entry's run id is not the run the entry
    recorded (a hand-edited or copied lockfile): then nothing is done to it, least of all a
    stop, and the item says how to repair the lockfile.

    The evidence is what the Platform itself said when the run was recorded: its name and
    its creation time.
    """
    problems = []
    if entry.run_name and run.name and run.name != entry.run_name:
        problems.append(f"its name is {run.name!r}, recorded {entry.run_name!r}")
    if entry.submitted_at is not None and run.created_at is not None:
        apart = abs(timestamp(run.created_at) - timestamp(entry.submitted_at))
        if apart > CLOCK_SKEW.total_seconds():
            problems.append(
                f"it was created {run.created_at.isoformat()}, recorded as submitted "
                f"{entry.submitted_at.isoformat()}"
            )
    if not problems:
        return False
    draft.items.append(
        PlanItem(
            action=Action.BLOCKED,
            address=entry.address,
            reason=Reason.RECORD_MISMATCH,
            run_id=run.id,
            run_name=run.name or None,
            before_digest=entry.spec_digest,
            details=(
                f"run {run.id} on the Platform is not the run this lockfile recorded for "
                f"{entry.address}: " + "; ".join(problems),
                "fix: restore the lockfile from git (`git checkout HEAD -- "
                f"{draft.settings.state}`); if the entry itself is wrong, `osmosis-state "
                f"forget {entry.address}`, then `osmosis-import` the right run",
            ),
        )
    )
    return True


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
