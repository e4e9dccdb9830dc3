"""``osmosis-apply --wait``: wait for the active runs to end, then download their outputs.

``wait_and_download`` runs after the executor has carried out the plan, on the same state
store: it polls the recorded active runs until they end or the time runs out
(``observe.wait_for_runs``), observes the Platform again, records the statuses and carries
out what a plan of the new snapshots holds for the ended runs: their downloads, and the full
run of a config whose smoke run ended well while waiting (the plan the apply carried out
showed it, "smoke first: ..., then N"; docs/smoke.md). A full run submitted so is waited
for too, in another round.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reconciler.engine.context import Context
from reconciler.engine.load import observe_platform
from reconciler.engine.observe import refresh_statuses, wait_for_runs
from reconciler.engine.report import ApplyProgress, Notices, RunRef, WaitReport
from reconciler.model import Action, DesiredRun, LockState, Plan, RunStatus
from reconciler.plan import compute_plan
from reconciler.state.store import StateStore

if TYPE_CHECKING:
    from reconciler.engine.executor import Applier
    from reconciler.engine.report import Outcome


@dataclass
class Waited:
    """What ``wait_and_download`` did."""

    outcomes: list[Outcome] = field(default_factory=list)
    """The downloads and full runs it carried out."""
    waits: list[WaitReport] = field(default_factory=list)
    """How each round of waiting ended (the last is the apply's)."""
    addresses: list[str] = field(default_factory=list)
    """The addresses of the runs it waited for."""


def wait_and_download(
    ctx: Context,
    notices: Notices,
    applier: Applier,
    store: StateStore,
    progress: ApplyProgress,
    *,
    timeout: float,
    cancel: threading.Event,
    desired: tuple[DesiredRun, ...],
) -> Waited:
    """Wait for the active runs ``store`` records, then carry out what is left for the
    ended ones; again while a smoke run's full run was submitted."""
    waited = Waited()
    while True:
        active = _active_runs(store.state)
        if active:
            waited.addresses.extend(r.address for r in active)
            waited.waits.append(_wait_for(ctx, active, progress, timeout, cancel, store.state))
        left = _left_to_do(ctx, notices, store, desired, cancel)
        if left is None:
            return waited
        outcomes = applier.apply(left, parallelism=ctx.settings.parallelism).outcomes
        waited.outcomes.extend(outcomes)
        if not any(o.ok and o.item.smoke is not None for o in outcomes):
            return waited


def _active_runs(state: LockState) -> list[RunRef]:
    return [
        RunRef(address, e.run_id, e.run_name, e.status)
        for address, e in sorted(state.runs.items())
        if e.run_id and RunStatus.of(e.status).is_active
    ]


def _wait_for(
    ctx: Context,
    active: list[RunRef],
    progress: ApplyProgress,
    timeout: float,
    cancel: threading.Event,
    state: LockState,
) -> WaitReport:
    """Poll ``active`` until each ended, the time ran out or the apply was cancelled."""
    created = [state.runs[r.address].submitted_at for r in active]
    since = None if None in created or not created else min(c for c in created if c)
    progress.waiting(active, timeout)
    last: dict[str, int] = {}

    def polled(statuses: Mapping[str, str]) -> None:
        counts: dict[str, int] = {}
        for status in statuses.values():
            counts[status] = counts.get(status, 0) + 1
        if counts != last:
            last.clear()
            last.update(counts)
            progress.wait_progress(counts)

    statuses = wait_for_runs(
        ctx.client,
        [r.run_id for r in active if r.run_id],
        timeout=timeout,
        cancel=cancel,
        since=since,
        on_poll=polled,
    )
    still = tuple(
        RunRef(r.address, r.run_id, r.run_name, statuses.get(r.run_id or "", r.status))
        for r in active
        if RunStatus.of(statuses.get(r.run_id or "", r.status)).is_active
    )
    report = WaitReport(timeout, timed_out=bool(still) and not cancel.is_set(), active=still)
    progress.waited(report)
    return report


def _left_to_do(
    ctx: Context,
    notices: Notices,
    store: StateStore,
    desired: tuple[DesiredRun, ...],
    cancel: threading.Event,
) -> Plan | None:
    """The downloads of the ended runs and the full runs now due, after observing the
    Platform again and recording its statuses (None: nothing is left)."""
    observation = observe_platform(ctx, notices, desired, store.state)
    if refresh_statuses(store.state, observation) != store.state:
        store.update(lambda s: refresh_statuses(s, observation))
    # Without --replace (or --retry-errored): a re-run this apply submitted has ended, so
    # what is left of the request is its download, not another paid re-run.
    settings = ctx.settings.model_copy(update={"replace": (), "retry_errored": ()})
    plan = compute_plan(desired, store.state, observation, settings)
    downloads = [i for i in plan.items if i.action is Action.DOWNLOAD]
    # The full runs whose smoke run ended well while waiting; not when a guard stops the plan.
    full_runs = [
        i
        for i in plan.items
        if i.action is Action.SUBMIT
        and i.smoke is not None
        and i.smoke.stage == "full"
        and not plan.errors
        and not cancel.is_set()
    ]
    if not downloads and not full_runs:
        return None
    return plan.model_copy(update={"items": (*downloads, *full_runs)})
