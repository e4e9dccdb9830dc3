"""Phase 5: what the plan keeps (targets, skips), the guards it must pass, and its summary."""

from __future__ import annotations

from datetime import datetime, timedelta

from reconciler.model import (
    Action,
    ObservedRun,
    Plan,
    PlanItem,
    PlanSummary,
    Reason,
    glob_match,
)
from reconciler.plan.draft import Draft, plural
from reconciler.plan.drift import DRIFT_ORDER
from reconciler.plan.results import result_rows

ACTION_ORDER = {
    Action.MOVE: 0,
    Action.ADOPT: 1,
    Action.STOP: 2,
    Action.REPLACE: 3,
    Action.SUBMIT: 4,
    Action.RETRY: 4,
    Action.BLOCKED: 5,
    Action.UNKNOWN: 5,
    Action.DOWNLOAD: 6,
    Action.FORGET: 7,
}
"""Order of items of one address (stops before submits, as apply runs them)."""


def finish(draft: Draft) -> Plan:
    """Narrow the items to the targets, hold back skips, check the guards, summarise."""
    settings = draft.settings
    kept, other_pending = _select(draft)
    summary = summarise(kept, drift=len(draft.drift))
    errors = [*draft.errors, *_guard_errors(draft, summary, kept)]
    drift = sorted(
        draft.drift,
        key=lambda d: (d.address is None, d.address or "", DRIFT_ORDER[d.kind], d.run_id or ""),
    )
    unmanaged_count, unmanaged = _unmanaged(draft)
    return Plan(
        items=tuple(kept),
        drift=tuple(drift),
        warnings=(*draft.observed.notes, *draft.warnings),
        errors=tuple(errors),
        summary=summary,
        lineage=draft.recorded.lineage,
        serial=draft.recorded.serial,
        platform=draft.observed.platform,
        workspace=draft.observed.workspace,
        head=draft.observed.head,
        config_digests={a: draft.raw_digests[a] for a in sorted(draft.raw_digests)},
        other_pending=other_pending,
        results=result_rows(
            draft.recorded,
            settings.targets,
            draft.observed.benchmarks.values(),
            draft.observed.retried,
        ),
        unmanaged_count=unmanaged_count,
        unmanaged=unmanaged,
        observed_until=_watermark(draft, kept),
        generators=tuple(sorted(draft.generators, key=lambda g: g.file)),
        decisions={a: draft.decisions[a] for a in sorted(draft.decisions)},
    )


def _unmanaged(draft: Draft) -> tuple[int | None, tuple[ObservedRun, ...]]:
    """How many runs of the workspace this repository does not manage, and which (when
    listed): every run minus the ones the lockfile records and the ones this plan adopts."""
    if draft.settings.unmanaged == "ignore":
        return None, ()
    claimed = draft.claimed
    listed = draft.observed.unmanaged
    runs = tuple(r for r in listed if r.id not in claimed) if listed is not None else ()
    if listed is not None:
        return len(runs), runs
    total = draft.observed.workspace_runs
    if total is None:
        return None, ()
    recorded = {e.run_id for e in draft.recorded.runs.values() if e.run_id}
    recorded.update(h.run_id for h in draft.recorded.history if h.run_id)
    return max(0, total - len(recorded | claimed)), ()


def _watermark(draft: Draft, kept: list[PlanItem]) -> datetime | None:
    """The run-list watermark apply may record with this plan: the newest run observed, but
    never past a run this plan would adopt and does not carry out (left out by a target or
    a skip), so a later plan still sees that run."""
    mark = draft.observed.newest_created
    if mark is None:
        return None
    kept_ids = {id(item) for item in kept}
    for item in draft.items:
        if item.action is Action.ADOPT and id(item) not in kept_ids and item.run_id:
            run = draft.observed.runs.get(item.run_id)
            if run is not None and run.created_at is not None:
                mark = min(mark, run.created_at - timedelta(seconds=1))
    return mark


def _select(draft: Draft) -> tuple[list[PlanItem], int]:
    settings = draft.settings
    items = sorted(draft.items, key=lambda it: (it.address, ACTION_ORDER[it.action]))
    kept: list[PlanItem] = []
    other_pending = 0
    if settings.refresh_only:
        return kept, other_pending
    for item in items:
        addresses = [item.address] + ([item.from_address] if item.from_address else [])
        if settings.targets and not any(glob_match(a, settings.targets) for a in addresses):
            other_pending += 1
            # Left for later, but what the observation says about it is still said.
            draft.warnings.extend(f"{item.address}: {warning}" for warning in item.warnings)
            continue
        # A skip holds back what would change the config's runs. A download changes none
        # and costs nothing, and neither does recording the run of a submit this repository
        # already paid for (an adoption of its kept intent); held back, either would wait for
        # the next commit of the lockfile, which an apply that does nothing else never makes.
        if (
            settings.skip
            and not _records_what_was_paid(item)
            and any(glob_match(a, settings.skip) for a in addresses)
        ):
            draft.warnings.append(
                f"{item.address}: {item.action.value} held back by a skip "
                "(Osmosis-Skip); it stays pending for a later plan"
            )
            draft.warnings.extend(f"{item.address}: {warning}" for warning in item.warnings)
            continue
        kept.append(item)
    return kept, other_pending


def _records_what_was_paid(item: PlanItem) -> bool:
    """Whether ``item`` only records what already happened: a download, or the adoption of
    the run a submit of this repository created (its answer lost)."""
    if item.action is Action.DOWNLOAD:
        return True
    return item.action is Action.ADOPT and item.reason is Reason.INTENT_PENDING


def summarise(kept: list[PlanItem], *, drift: int) -> PlanSummary:
    """The counts, attempts and estimated cost of ``kept`` (also used by ``--only``)."""
    counts = {action: 0 for action in Action}
    for item in kept:
        counts[item.action] += 1
    paid = [it for it in kept if it.action in (Action.SUBMIT, Action.REPLACE, Action.RETRY)]
    attempts = sum(it.attempts for it in paid)
    deferred = [
        it.smoke.full_attempts for it in paid if it.smoke is not None and it.smoke.stage == "smoke"
    ]
    priced = [it.cost for it in paid if it.cost is not None]
    return PlanSummary(
        cost_usd_low=round(sum(c.usd_low or 0.0 for c in priced), 4) if priced else None,
        cost_usd_high=round(sum(c.usd_high for c in priced), 4) if priced else None,
        unestimated=len(paid) - len(priced),
        submit=counts[Action.SUBMIT],
        replace=counts[Action.REPLACE],
        stop=counts[Action.STOP],
        download=counts[Action.DOWNLOAD],
        forget=counts[Action.FORGET],
        adopt=counts[Action.ADOPT],
        move=counts[Action.MOVE],
        blocked=counts[Action.BLOCKED],
        retry=counts[Action.RETRY],
        standing=sum(1 for it in kept if it.standing),
        attempts=attempts,
        deferred=len(deferred),
        deferred_attempts=sum(deferred),
        deferred_each=deferred[0] if deferred and len(set(deferred)) == 1 else None,
        drift=drift,
    )


def _guard_errors(draft: Draft, summary: PlanSummary, kept: list[PlanItem]) -> list[str]:
    settings = draft.settings
    errors: list[str] = []
    stops = summary.stop + summary.replace
    if stops > settings.max_stops and not settings.allow_mass_stop:
        errors.append(
            f"the plan would stop {plural(stops, 'run')} ({summary.stop} to stop, "
            f"{summary.replace} to replace), more than max_stops = {settings.max_stops}; "
            "re-run with --allow-mass-stop if that is intended, or raise max_stops in "
            f"{settings.settings_where}"
        )
    if summary.attempts > settings.max_attempts and not settings.allow_over_budget:
        errors.append(
            f"the plan would start {summary.attempts:,} new attempts, more than max_attempts = "
            f"{settings.max_attempts:,}; re-run with --allow-over-budget if that is "
            f"intended, or raise max_attempts in {settings.settings_where}"
        )
    cost = summary.cost_usd_high
    limit = settings.max_cost_usd
    if limit is not None and cost is not None and cost > limit and not settings.allow_over_budget:
        unpriced = (
            f" ({plural(summary.unestimated, 'submit')} without an estimate not counted)"
            if summary.unestimated
            else ""
        )
        errors.append(
            f"the plan's new attempts may cost up to ${cost:,.2f} (estimated from recorded "
            f"runs{unpriced}), more than max_cost_usd = ${limit:,.2f}; re-run with "
            "--allow-over-budget if that is intended, or raise max_cost_usd in "
            f"{settings.settings_where}"
        )
    if limit is not None and not (settings.allow_unestimated or settings.allow_over_budget):
        # A budget that cannot be checked is not passed silently: each submit without an
        # estimate is named (no recorded run of its model, on any benchmark).
        unestimated = [
            item
            for item in kept
            if item.action in (Action.SUBMIT, Action.REPLACE, Action.RETRY) and item.cost is None
        ]
        if unestimated:
            names = ", ".join(item.address for item in unestimated[:10])
            more = f" and {len(unestimated) - 10} more" if len(unestimated) > 10 else ""
            count = len(unestimated)
            errors.append(
                f"max_cost_usd = ${limit:,.2f} is set, but {plural(count, 'submit')} "
                f"{'has' if count == 1 else 'have'} no cost estimate (no recorded run "
                f"of its model): {names}{more}; re-run with --allow-unestimated if that is "
                "intended"
            )
    return errors
