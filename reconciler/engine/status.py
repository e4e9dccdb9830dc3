"""``osmosis-reconciler status``: where every address stands, in one row each.

What the lockfile records (the run, its status, its downloads, the accepted baseline), what
the results in the checkout say (the newest run's verdict against that baseline), and what
a plan would do now (pending actions, or why the address is blocked). ``address_statuses``
is pure: it takes the lockfile, the plan and the verdicts; ``status`` loads them (a plan's
reading of the Platform, no write, no lock) and ``baseline_verdicts`` reads the per-task
results already on disk (never fetched: a status is cheap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from reconciler.engine.context import DOWNLOAD_ROOT, Context
from reconciler.engine.report import Notices
from reconciler.errors import UsageError
from reconciler.model import (
    Action,
    AddressStatus,
    DecisionRecord,
    DecisionStatus,
    LockState,
    Plan,
    PlanItem,
    RunStatus,
)
from reconciler.model.observed import Observation


@dataclass(frozen=True)
class StatusReport:
    """What ``status`` shows: one row per address, with the plan's header facts."""

    rows: tuple[AddressStatus, ...]
    workspace: str
    platform: str
    serial: int | None


def _run_label(name: str | None, run_id: str | None) -> str | None:
    return name or run_id


def _blocked_reason(item: PlanItem) -> str:
    """``submit: secret missing``: what the plan would do, and what stops it."""
    from reconciler.render.pieces import REASON_TEXT

    why = REASON_TEXT[item.reason]
    intended = item.blocked.intended_action if item.blocked is not None else None
    return f"{intended.value}: {why}" if intended is not None else why


def _decision(record: DecisionRecord | None) -> DecisionStatus | None:
    if record is None:
        return None
    return DecisionStatus(
        verdict=record.verdict,
        reason=record.reason,
        tasks_used=record.batch_ends[-1] if record.batch_ends else 0,
        max_tasks=record.max_tasks,
        looks=len(record.looks),
        alpha_spent=record.looks[-1].alpha_spent if record.looks else 0.0,
        monitor=record.spec.monitor,
    )


def address_statuses(
    state: LockState,
    plan: Plan | None,
    verdicts: Mapping[str, str],
    observation: Observation | None = None,
) -> tuple[AddressStatus, ...]:
    """The row of every address the lockfile records or the plan names, sorted."""
    items: dict[str, list[PlanItem]] = {}
    for item in plan.items if plan is not None else ():
        items.setdefault(item.address, []).append(item)
    rows = []
    for address in sorted({*state.runs, *items, *state.decisions}):
        entry = state.runs.get(address)
        run_id = entry.run_id if entry is not None else None
        status = entry.status if entry is not None else None
        if observation is not None and run_id is not None and run_id in observation.runs:
            status = observation.runs[run_id].status or status
        downloaded: bool | None = None
        if entry is not None and entry.downloads is not None:
            downloaded = entry.downloads.complete
        elif RunStatus.of(status).is_terminal:
            downloaded = False
        baseline = state.baselines.get(address)
        planned = items.get(address, [])
        blocked = next((i for i in planned if i.action is Action.BLOCKED), None)
        rows.append(
            AddressStatus(
                address=address,
                run=_run_label(entry.run_name, run_id) if entry is not None else None,
                run_id=run_id,
                status=status,
                downloaded=downloaded,
                baseline=_run_label(baseline.run_name, baseline.run_id) if baseline else None,
                verdict=verdicts.get(address) if baseline else None,
                decision=_decision(state.decisions.get(address)),
                pending=tuple(i.action.value for i in planned if i.action is not Action.BLOCKED),
                blocked=_blocked_reason(blocked) if blocked is not None else None,
            )
        )
    return tuple(rows)


def baseline_verdicts(state: LockState, repo_root: Path, margin: float) -> dict[str, str]:
    """The newest full run of each address with a baseline, against that baseline, from the
    per-task results in the checkout (``results/`` or the downloads); never fetched."""
    from reconciler.outputs.kept import ResultsStore
    from reconciler.results.build import build_compare
    from reconciler.results.data import RunOutcomes
    from reconciler.results.runs import RecordedResult, address_runs, parse_ref

    store = ResultsStore(repo_root, download_root=repo_root / DOWNLOAD_ROOT, platform=None)
    cache: dict[str, RunOutcomes | None] = {}

    def load(run: RecordedResult) -> RunOutcomes | None:
        if run.run_id not in cache:
            cache[run.run_id] = store.outcomes(run, fetch=False)
        return cache[run.run_id]

    verdicts: dict[str, str] = {}
    for address, baseline in sorted(state.baselines.items()):
        newest = next((r for r in address_runs(state, address) if not r.smoke), None)
        if newest is None:
            continue
        if newest.run_id == baseline.run_id:
            verdicts[address] = "is the baseline"
            continue
        try:
            reports = build_compare(
                state,
                parse_ref(f"{address}@{baseline.run_id}"),
                parse_ref(f"{address}@{newest.run_id}"),
                load,
                margin=margin,
            )
        except UsageError as exc:
            verdicts[address] = f"not compared: {exc.message}"
            continue
        found = {r.comparison.verdict.value for r in reports}
        verdicts[address] = found.pop() if len(found) == 1 else "mixed: " + ", ".join(sorted(found))
    return verdicts


def status(ctx: Context, notices: Notices) -> StatusReport:
    """Plan (reading only), then one row per address."""
    from reconciler.engine.plan import make_plan

    plan, snapshots = make_plan(ctx, notices)
    margin = snapshots.settings.regression_margin_pp / 100
    verdicts = baseline_verdicts(snapshots.state, ctx.repo_root, margin)
    rows = address_statuses(snapshots.state, plan, verdicts, snapshots.observation)
    return StatusReport(rows, plan.workspace, plan.platform, plan.serial)
