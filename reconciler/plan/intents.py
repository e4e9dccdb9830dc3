"""Phase 1: pending submit intents (apply stopped between its POST and recording the answer).

An intent's run is looked for first, before any other phase can claim an unrecorded run: a
run created inside the intent's window with the fingerprint of the body that was sent is
that submit's run and is adopted. Only when no run can be it is the config submitted again.
"""

from __future__ import annotations

from reconciler.model import (
    Action,
    PlanItem,
    Reason,
    RecordedRun,
    Smoke,
    canonical_digest,
    spec_fingerprint,
)
from reconciler.plan.changes import spec_changes
from reconciler.plan.draft import CLOCK_SKEW, Draft, run_label, timestamp
from reconciler.plan.preflight import paid_item
from reconciler.plan.smoke import SMOKE


def resolve_intents(draft: Draft) -> None:
    """Decide every address whose entry holds a pending ``submit`` intent."""
    for address in sorted(draft.recorded.runs):
        entry = draft.recorded.runs[address]
        if entry.intent is not None and entry.intent.op == "submit":
            draft.handled.add(address)
            _resolve_submit_intent(draft, entry)


def _resolve_submit_intent(draft: Draft, entry: RecordedRun) -> None:
    """A submit was in flight when apply stopped: adopt its run, or submit again."""
    intent = entry.intent
    assert intent is not None
    wanted = draft.desired.get(entry.address)
    spec = intent.spec
    if (
        not intent.spec
        and wanted is not None
        and intent.body_digest
        in (
            wanted.spec_digest,
            draft.raw_digests.get(entry.address),
        )
    ):
        spec = wanted.spec
    fingerprint = spec_fingerprint(spec, intent.benchmark_id) if spec else None
    # What the intent was for, in the plan's canonical digest form (old intents recorded
    # the plain digest of their body).
    sent = canonical_digest(intent.spec, intent.benchmark_id) if intent.spec else intent.body_digest
    if intent.stage == SMOKE:
        # A smoke run's submit: what it was for is the full config (its digest).
        sent = intent.body_digest
    since = timestamp(intent.started_at) - CLOCK_SKEW.total_seconds()
    window = [
        run
        for run in draft.unrecorded
        if run.id not in draft.claimed
        and (run.created_at is None or timestamp(run.created_at) >= since)
    ]
    match = next((run for run in window if fingerprint and run.fingerprint == fingerprint), None)
    before = entry.spec_digest if entry.run_id else None
    if match is not None:
        draft.claimed.add(match.id)
        warnings: list[str] = []
        if wanted is None:
            warnings.append(
                "its config was deleted since the submit; the next plan will stop or "
                "forget the adopted run"
            )
        elif wanted.spec_digest != sent:
            warnings.append(
                "its config changed since the submit; the next plan will show the change"
            )
        draft.items.append(
            PlanItem(
                action=Action.ADOPT,
                address=entry.address,
                reason=Reason.INTENT_PENDING,
                run_id=match.id,
                run_name=match.name or None,
                before_digest=before,
                after_digest=sent,
                benchmark_id=match.benchmark_id or intent.benchmark_id,
                warnings=tuple(warnings),
                spec=dict(spec) if spec else None,
                requested_by=wanted.requested_by if wanted else None,
                requested_subject=wanted.requested_subject if wanted else None,
                smoke=Smoke(stage=SMOKE) if intent.stage == SMOKE else None,
            )
        )
        return
    undecided = [
        run
        for run in window
        if run.fingerprint is None
        and (
            intent.benchmark_id is None
            or run.benchmark_id is None
            or run.benchmark_id == intent.benchmark_id
        )
    ]
    if undecided:
        details = [
            f"run {run_label(run.name, run.id)}, created after the interrupted submit, "
            "could not be compared with it (its configuration was not fetched)"
            for run in undecided
        ]
        details.append(
            "fix: re-run `osmosis-plan`; it fetches the configuration of such runs and "
            "adopts the matching one instead of paying for a second run"
        )
        draft.items.append(
            PlanItem(
                action=Action.BLOCKED,
                address=entry.address,
                reason=Reason.INTENT_PENDING,
                before_digest=before,
                after_digest=sent,
                details=tuple(details),
            )
        )
        return
    if wanted is None:
        draft.items.append(
            PlanItem(
                action=Action.FORGET,
                address=entry.address,
                reason=Reason.CONFIG_DELETED,
                run_id=entry.run_id,
                run_name=entry.run_name,
                before_digest=entry.spec_digest,
                details=("the interrupted submit left no run on the Platform",),
            )
        )
        return
    changes: tuple[str, ...] = ()
    if entry.run_id and wanted.spec_digest != entry.spec_digest:
        changes = spec_changes(entry.spec, wanted.spec)
    draft.items.append(
        paid_item(
            draft,
            Action.SUBMIT,
            Reason.RESUBMIT_AFTER_LOST,
            wanted,
            run_id=entry.run_id,
            run_name=entry.run_name,
            before=before,
            changes=changes,
        )
    )
