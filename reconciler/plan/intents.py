"""Phase 1: pending submit intents (apply stopped between its POST and recording the answer,
or the Platform's answer said nothing clear: a dropped connection, a wrong-shaped reply, a
429 after the run may have been committed).

An intent's run is looked for first, before any other phase can claim an unrecorded run: a
run created inside the intent's window with the fingerprint of the body that was sent is
that submit's run and is adopted. A run list can be late or leave a run out, so a list that
shows no such run is not yet proof that none was created: the address is shown as an
unknown outcome (``?``) until run lists read by applies keep showing no match over a quiet
period (``Settings.unknown_outcome_listings`` lists spanning
``unknown_outcome_quiet_minutes`` since the submit), and only then is the config submitted
again. A person can decide at once with ``osmosis-state resolve``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from reconciler.model import (
    Action,
    DesiredRun,
    Intent,
    ObservedRun,
    PlanItem,
    Reason,
    RecordedRun,
    Retry,
    Smoke,
    SmokeStage,
    canonical_digest,
    spec_attempts_per_task,
    spec_fingerprint,
)
from reconciler.plan.changes import spec_changes
from reconciler.plan.draft import CLOCK_SKEW, Draft, run_label, timestamp
from reconciler.plan.smoke import SMOKE, passed_smoke_run, rule_for


def resolve_intents(draft: Draft) -> None:
    """Decide every address whose entry holds a pending ``submit`` intent."""
    for address in sorted(draft.recorded.runs):
        entry = draft.recorded.runs[address]
        if entry.intent is not None and entry.intent.op == "submit":
            draft.handled.add(address)
            _resolve_submit_intent(draft, entry)


def _someone_elses(run: ObservedRun, me: str | None) -> bool:
    """Whether the Platform says another user created ``run``: then this repository's
    interrupted submit cannot have made it (found by the lifecycle suite: a colleague's
    identical run was adopted for a submit that crashed before its POST)."""
    return me is not None and run.creator is not None and run.creator != me


def _moved_to(draft: Draft, entry: RecordedRun, sent: str) -> str | None:
    """The new address of a config renamed while its submit's outcome was pending: an
    address not recorded yet whose config is the body that was sent (or whose generator's
    ``[[moved]]`` names this address). Its run, if the submit made one, is that config's;
    it must never be paid for again (found by the lifecycle suite)."""
    for address in sorted(draft.desired):
        if address in draft.recorded.runs or address in draft.handled:
            continue
        wanted = draft.desired[address]
        if entry.address in wanted.moved_from or wanted.spec_digest == sent:
            return address
    return None


@dataclass(frozen=True)
class _PendingSubmit:
    """What a pending submit intent was for, and the runs that could be its run."""

    intent: Intent
    wanted: DesiredRun | None
    """The config at the intent's address now (None: deleted or renamed)."""
    spec: Mapping[str, Any] | None
    """The body that was sent (the config's own when the intent recorded only its digest)."""
    sent: str
    """What the intent was for, in the plan's canonical digest form."""
    moved_to: str | None
    """The config's new address when it was renamed (``_moved_to``)."""
    before: str | None
    """The recorded entry's digest when it has a run."""
    window: tuple[ObservedRun, ...]
    """Unrecorded runs, not claimed, created since the submit by no one else."""

    @classmethod
    def read(cls, draft: Draft, entry: RecordedRun) -> _PendingSubmit:
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
        # What the intent was for, in the plan's canonical digest form (old intents recorded
        # the plain digest of their body).
        sent = (
            canonical_digest(intent.spec, intent.benchmark_id)
            if intent.spec
            else intent.body_digest
        )
        if intent.stage == SMOKE or intent.retry_of is not None:
            # A smoke run's or a retry run's submit: what it was for is the full config (its
            # digest); the narrowed body it sent is ``spec``.
            sent = intent.body_digest
        since = timestamp(intent.started_at) - CLOCK_SKEW.total_seconds()
        window = tuple(
            run
            for run in draft.unrecorded
            if run.id not in draft.claimed
            and (run.created_at is None or timestamp(run.created_at) >= since)
            and not _someone_elses(run, draft.observed.me)
        )
        return cls(
            intent=intent,
            wanted=wanted,
            spec=spec,
            sent=sent,
            moved_to=_moved_to(draft, entry, sent) if wanted is None else None,
            before=entry.spec_digest if entry.run_id else None,
            window=window,
        )

    def match(self) -> ObservedRun | None:
        """The run in the window with the fingerprint of the body that was sent."""
        if not self.spec:
            return None
        fingerprint = spec_fingerprint(self.spec, self.intent.benchmark_id)
        return next((run for run in self.window if run.fingerprint == fingerprint), None)

    def undecided(self) -> list[ObservedRun]:
        """Runs in the window that could be the submit's but were not compared (their
        configuration was not fetched)."""
        benchmark_id = self.intent.benchmark_id
        return [
            run
            for run in self.window
            if run.fingerprint is None
            and (
                benchmark_id is None or run.benchmark_id is None or run.benchmark_id == benchmark_id
            )
        ]


def _resolve_submit_intent(draft: Draft, entry: RecordedRun) -> None:
    """A submit was in flight when apply stopped: adopt its run, or submit again."""
    pending = _PendingSubmit.read(draft, entry)
    if pending.moved_to is not None:
        # The renamed config waits on this submit's outcome (or takes its run).
        draft.handled.add(pending.moved_to)
    match = pending.match()
    if match is not None:
        draft.claimed.add(match.id)
        draft.items.append(_adopt_item(draft, entry, pending, match))
        return
    undecided = pending.undecided()
    if undecided:
        draft.items.append(_blocked_item(entry, pending, undecided))
        return
    if pending.intent.retry_of is not None and entry.run_id is not None:
        _resolve_lost_retry(draft, entry, pending)
        return
    if pending.wanted is not None:
        draft.items.append(_resend_item(draft, entry, pending, pending.wanted))
    elif not _quiet_period_over(draft, pending.intent):
        # Deleted or renamed: the run may still appear (the list can be late); until the
        # quiet period is over it is adopted if it does, and a renamed config is not paid
        # for again.
        draft.items.append(_unknown_gone_item(draft, entry, pending))
    else:
        if pending.moved_to is not None:
            draft.handled.discard(pending.moved_to)  # no run came of it: the new address is new
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


def _resolve_lost_retry(draft: Draft, entry: RecordedRun, pending: _PendingSubmit) -> None:
    """A retry run's submit (``plan.retries``) with no run found: its outcome stays unknown
    until the quiet period is over; then the retried run is the address's entry as before,
    and the retry is paid for only when asked for again (never the whole config)."""
    intent = pending.intent
    if not _quiet_period_over(draft, intent):
        draft.items.append(_unknown_item(draft, entry, intent, pending.before, pending.sent))
        return
    draft.handled.discard(entry.address)
    draft.warnings.append(
        f"{entry.address}: the interrupted retry of run {entry.run_name or entry.run_id} left "
        "no run on the Platform; to pay for it now, ask again: "
        f"`osmosis-apply --retry-errored {entry.address}`"
    )


def _adopt_item(
    draft: Draft, entry: RecordedRun, pending: _PendingSubmit, match: ObservedRun
) -> PlanItem:
    """The submit's run found: adopted at the config's address (its new one if renamed)."""
    intent, moved_to, sent = pending.intent, pending.moved_to, pending.sent
    wanted = draft.desired[moved_to] if moved_to is not None else pending.wanted
    warnings: list[str] = []
    if wanted is None:
        warnings.append(
            "its config was deleted since the submit; the next plan will stop or "
            "forget the adopted run"
        )
    elif wanted.spec_digest != sent:
        warnings.append("its config changed since the submit; the next plan will show the change")
    return PlanItem(
        action=Action.ADOPT,
        address=moved_to or entry.address,
        from_address=entry.address if moved_to else None,
        reason=Reason.INTENT_PENDING,
        run_id=match.id,
        run_name=match.name or None,
        before_digest=pending.before,
        after_digest=sent,
        benchmark_id=match.benchmark_id or intent.benchmark_id,
        warnings=tuple(warnings),
        spec=dict(pending.spec) if pending.spec else None,
        requested_by=wanted.requested_by if wanted else None,
        requested_subject=wanted.requested_subject if wanted else None,
        smoke=Smoke(stage=SMOKE) if intent.stage == SMOKE else None,
        retry=_retry_of_intent(intent),
    )


def _retry_of_intent(intent: Intent) -> Retry | None:
    """The provenance an adopted retry run is recorded with (``RecordedRun.retry_of``)."""
    if intent.retry_of is None:
        return None
    tasks = (intent.spec.get("tasks_config") or {}).get("task_names") or ()
    return Retry(
        retry_of=intent.retry_of,
        agents=tuple(intent.retry_agents or ()),
        tasks=tuple(tasks),
        attempts_per_task=spec_attempts_per_task(intent.spec),
        errored=0,
    )


def _blocked_item(
    entry: RecordedRun, pending: _PendingSubmit, undecided: list[ObservedRun]
) -> PlanItem:
    """Runs that may be the submit's could not be compared: nothing is paid for."""
    details = [
        f"run {run_label(run.name, run.id)}, created after the interrupted submit, "
        "could not be compared with it (its configuration was not fetched)"
        for run in undecided
    ]
    details.append(
        "fix: re-run `osmosis-plan`; it fetches the configuration of such runs and "
        "adopts the matching one instead of paying for a second run"
    )
    return PlanItem(
        action=Action.BLOCKED,
        address=entry.address,
        reason=Reason.INTENT_PENDING,
        before_digest=pending.before,
        after_digest=pending.sent,
        details=tuple(details),
    )


def _unknown_gone_item(draft: Draft, entry: RecordedRun, pending: _PendingSubmit) -> PlanItem:
    """The outcome is still unknown and the config was deleted or renamed."""
    item = _unknown_item(draft, entry, pending.intent, pending.before, pending.sent)
    moved_to = pending.moved_to
    if moved_to is None:
        return item
    waits = (
        f"its config is now {moved_to} (renamed): {moved_to} takes this run if it "
        "appears, and is submitted only once the outcome is known",
    )
    return item.model_copy(update={"details": waits + item.details})


def _resend_item(
    draft: Draft, entry: RecordedRun, pending: _PendingSubmit, wanted: DesiredRun
) -> PlanItem:
    """The config is still wanted: unknown until the quiet period is over, then paid for
    again (as the full run when the lost submit was a full run after its smoke run)."""
    from reconciler.plan.preflight import paid_item  # a pending submit: loaded only then

    intent, sent = pending.intent, pending.sent
    # A lost full run's submit (its smoke run, if any, already ended well: it is in the
    # history) is the full run's unknown outcome, and is sent again as the full run.
    full_run = intent.stage != SMOKE and wanted.spec_digest == sent
    after_smoke = passed_smoke_run(draft.recorded, entry.address, sent) if full_run else None
    if not _quiet_period_over(draft, intent):
        item = _unknown_item(draft, entry, intent, pending.before, sent)
        if after_smoke is not None:
            full = paid_item(draft, Action.SUBMIT, Reason.RESUBMIT_AFTER_LOST, wanted)
            smoke = Smoke(
                stage=SmokeStage.FULL, full_attempts=full.attempts, smoke_run_id=after_smoke
            )
            item = item.model_copy(update={"smoke": smoke})
        return item
    changes: tuple[str, ...] = ()
    if entry.run_id and wanted.spec_digest != entry.spec_digest:
        changes = spec_changes(entry.spec, wanted.spec)
    return paid_item(
        draft,
        Action.SUBMIT,
        Reason.RESUBMIT_AFTER_LOST,
        wanted,
        run_id=entry.run_id,
        run_name=entry.run_name,
        before=pending.before,
        changes=changes,
        after_smoke=after_smoke,
        resend_full=full_run and rule_for(draft.settings, entry.address) is not None,
    )


def listings_with_now(draft: Draft, intent: Intent) -> tuple[datetime, ...]:
    """The intent's recorded no-match listings plus this plan's own (the observation lists
    back to every pending intent's start, ``observe.listing_horizon``), oldest first."""
    now = draft.observed.observed_at
    recorded = sorted({moment for moment in intent.listings or () if moment >= intent.started_at})
    if timestamp(now) > timestamp(intent.started_at) and now not in recorded:
        recorded.append(now)
    return tuple(recorded)


def _quiet_period_over(draft: Draft, intent: Intent) -> bool:
    """Whether enough complete listings, spanning long enough since the submit, showed no
    run that could be the submit's: only then may it be sent again."""
    settings = draft.settings
    listings = listings_with_now(draft, intent)
    if len(listings) < settings.unknown_outcome_listings or not listings:
        return False
    quiet = timedelta(minutes=settings.unknown_outcome_quiet_minutes)
    return timestamp(listings[-1]) - timestamp(intent.started_at) >= quiet.total_seconds()


def resubmit_after(draft: Draft, intent: Intent) -> datetime:
    """The earliest time the quiet period can be over (given enough listings by then)."""
    return intent.started_at + timedelta(minutes=draft.settings.unknown_outcome_quiet_minutes)


def _unknown_item(
    draft: Draft, entry: RecordedRun, intent: Intent, before: str | None, sent: str
) -> PlanItem:
    settings = draft.settings
    listings = listings_with_now(draft, intent)
    due = resubmit_after(draft, intent)
    left = max(0.0, timestamp(due) - timestamp(draft.observed.observed_at))
    needed = settings.unknown_outcome_listings
    started = intent.started_at.strftime("%Y-%m-%d %H:%M UTC")
    address = entry.address
    details = (
        f"the submit of {address} at {started} got no clear answer, and no run that could be "
        f"its run is listed yet: {len(listings)} of {needed} run listings since then showed "
        "none; it is not sent again until the Platform had time to list it",
        f"sent again automatically by an apply after {due.strftime('%Y-%m-%d %H:%M UTC')} "
        f"(in {_minutes(left)}) once {needed} listings have shown no match; adopted at once "
        "if the run appears",
        f"fix: if you know the outcome, say so: `osmosis-state resolve {address} --submitted "
        f"RUN` (the run it created) or `osmosis-state resolve {address} --not-submitted`",
    )
    return PlanItem(
        action=Action.UNKNOWN,
        address=address,
        reason=Reason.OUTCOME_UNKNOWN,
        before_digest=before,
        after_digest=sent,
        benchmark_id=intent.benchmark_id,
        details=details,
        listed_at=draft.observed.observed_at,
    )


def _minutes(seconds: float) -> str:
    minutes = int((seconds + 59) // 60)
    return "1 minute" if minutes == 1 else f"{minutes} minutes"
