"""The apply operation (``osmosis-apply``): one function owns the whole apply.

``apply`` opens the lockfile's door (``state.door``: the locks this Platform and
workspace need), then, in order:

1. the plan: a saved plan (``PLANFILE``) refused when stale and narrowed to what the plan
   recomputed now still holds (``plan.recheck``), or a plan made now; then ``--only``;
2. the view: ``on_plan`` shows it (the CLI prints a fresh plan and starts its report);
3. the refusals: a guard's error ends the apply with nothing done, an empty plan with
   nothing to do; a fresh plan that acts must be approved (``approve``: raises to refuse;
   a saved plan was reviewed when it was made);
4. the executor (``engine.executor.Applier``) on a state store the door hands out, each
   action recorded as it happens; with ``--wait``, ``engine.wait`` after it;
5. the closing report, and the door closes (the locks go).

It returns an ``Applied``: how the apply ended (``Ending``, which ``reconciler.exit_codes``
turns into the exit code), the plan it carried out, and the state it left, so nothing
reads the lockfile again afterwards. ``record_refresh`` is ``osmosis-apply
--refresh-only``: the observed statuses written through the same door. The command line
(flags, prompt, printing) is ``reconciler/cli/apply.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reconciler.engine.apply_result import ApplyResult
from reconciler.engine.context import Context
from reconciler.engine.executor import Applier
from reconciler.engine.load import head, load_desired, load_state, observe_platform
from reconciler.engine.observe import refresh_statuses
from reconciler.engine.outcomes import unsuccessful_runs
from reconciler.engine.plan import (
    Refresh,
    make_plan,
    plan_snapshots,
    refresh,
    with_concurrent_since,
)
from reconciler.engine.report import ApplyProgress, Notices
from reconciler.engine.saved_plan import read_saved_plan, stale_reasons
from reconciler.engine.snapshots import LockfileReader, Snapshots
from reconciler.engine.wait import wait_and_download
from reconciler.errors import StalePlanError
from reconciler.exit_codes import Ending
from reconciler.model import Action, LockState, Observation, Plan
from reconciler.plan.recheck import still_planned
from reconciler.plan.restrict import REFRESH, restrict_plan
from reconciler.state.door import Door, open_door
from reconciler.state.lockfile import read_lockfile_bytes

LOST_LOCK = "Lost the apply lock on the git remote: no new action is started."


@dataclass(frozen=True)
class ApplyRequest:
    """What the command line asks of one apply, as values."""

    command: str
    """The command line, recorded as the lock holder's."""
    planfile: Path | None = None
    """A plan saved by ``osmosis-plan --out`` (None: plan now)."""
    only: frozenset[str] | None = None
    """``--only``: the kinds to perform (``plan.restrict``); None: all of them."""
    lock_timeout: float = 0.0
    """Seconds to wait for another command's lock."""
    wait: bool = False
    """``--wait``: wait for the active runs, then download them."""
    wait_timeout: float = 3600.0


@dataclass(frozen=True)
class Applied:
    """What an apply ended with."""

    ending: Ending
    """How it ended (``exit_codes.exit_code`` gives the number)."""
    plan: Plan
    """The plan it carried out (after the recheck of a saved plan and ``--only``)."""
    state: LockState
    """The recorded state as the apply left it."""
    observation: Observation
    """What the Platform said when the plan was checked."""
    result: ApplyResult | None = None
    """Each action's outcome (None: nothing was carried out)."""


CLOCK_SKEW = timedelta(minutes=2)
"""How far the Platform's clock may run behind ours: a run it dates up to this long before
an apply began still counts as made while the apply waited for its lock."""


def apply(
    ctx: Context,
    notices: Notices,
    request: ApplyRequest,
    *,
    progress: ApplyProgress,
    on_plan: Callable[[Plan, bool], None],
    approve: Callable[[Plan], None] | None,
    lockfile: LockfileReader = read_lockfile_bytes,
) -> Applied:
    """Carry out ``request`` under the lockfile's door (module docstring, steps 1-5).

    ``on_plan(plan, saved)`` is told the plan to carry out (``saved``: it came from a
    planfile). ``approve(plan)`` raises to refuse a fresh plan that acts; None: approved
    (``--auto-approve``).
    """
    cancel = threading.Event()
    began = datetime.now(UTC) - CLOCK_SKEW

    def lost() -> None:
        notices.alert(LOST_LOCK)
        cancel.set()

    with open_door(
        ctx.lock_scope(),
        timeout=request.lock_timeout,
        command=request.command,
        say=notices.info,
        on_lost=lost,
    ) as door:
        meanwhile = began if door.waited else None
        plan, snapshots = _plan_to_apply(ctx, notices, request, lockfile, meanwhile)
        on_plan(plan, request.planfile is not None)
        untouched = Applied(Ending.FAILED, plan, snapshots.state, snapshots.observation)
        if plan.errors:
            return untouched
        only = request.only
        idle = plan.is_empty and not plan.decisions
        if idle and not request.wait and not (only and REFRESH in only):
            return replace(untouched, ending=Ending.DONE)
        if request.planfile is None and not plan.is_empty and approve is not None:
            approve(plan)
        return _execute(ctx, notices, door, plan, snapshots, request, progress, cancel)


def _with_saved_retries(ctx: Context, saved: Plan, snapshots: Snapshots) -> Snapshots:
    """The snapshots with the retries a saved plan holds asked for again: the flag that
    asked for them (``--retry-errored``) was given to the plan, not to this apply, and the
    recomputed plan must hold them to carry them out (``plan.recheck``)."""
    wanted = sorted({i.address for i in saved.items if i.action is Action.RETRY})
    wanted = [a for a in wanted if a not in snapshots.observation.errored]
    if not wanted:
        return snapshots
    from reconciler.engine.observe import errored_attempts

    settings = snapshots.settings
    found = errored_attempts(snapshots.state, snapshots.desired, ctx.repo_root, wanted)
    return replace(
        snapshots,
        settings=settings.model_copy(update={"retry_errored": (*settings.retry_errored, *wanted)}),
        observation=snapshots.observation.model_copy(
            update={"errored": {**snapshots.observation.errored, **found}}
        ),
    )


def _plan_to_apply(
    ctx: Context,
    notices: Notices,
    request: ApplyRequest,
    lockfile: LockfileReader,
    began: datetime | None,
) -> tuple[Plan, Snapshots]:
    """The plan to carry out and the snapshots it is checked against (step 1). ``began``:
    when this apply began, if it then waited for a lock another held; runs created since
    were made meanwhile, and an identical one is a twin even once it has ended."""
    if request.planfile is not None:
        # Re-observed (design.md §7.2): statuses that changed since the plan was made are
        # recorded before acting (a run that ended meanwhile downloads as ended), and
        # only the saved items the plan recomputed now still holds are carried out.
        saved, snapshots = _load_saved_plan(ctx, notices, request.planfile, lockfile)
        snapshots = with_concurrent_since(snapshots, began)
        snapshots = _with_saved_retries(ctx, saved, snapshots)
        fresh = plan_snapshots(ctx, snapshots)
        plan = still_planned(saved, fresh)
        # A decision's record moves with the state it was computed from: the plan of now.
        plan = plan.model_copy(update={"decisions": fresh.decisions})
    else:
        plan, snapshots = make_plan(ctx, notices, lockfile=lockfile, concurrent_since=began)
    if request.only is not None:
        plan = restrict_plan(plan, request.only)
    return plan, snapshots


def _load_saved_plan(
    ctx: Context, notices: Notices, path: Path, lockfile: LockfileReader
) -> tuple[Plan, Snapshots]:
    """A saved plan, refused when stale, and the snapshots to apply it against: the
    configs and the lockfile read now, the Platform observed again."""
    plan = read_saved_plan(path)
    configs = load_desired(ctx, notices)
    state = load_state(ctx, lockfile)
    stale = stale_reasons(
        plan,
        state=state,
        config_digests={d.address: d.spec_digest for d in configs.runs},
        platform=ctx.platform_id,
        workspace=ctx.workspace,
        head=head(ctx),
    )
    if stale:
        raise StalePlanError(
            f"the saved plan {path} is stale: " + "; ".join(stale),
            "run `osmosis-plan --out PLANFILE` again and apply the new plan",
        )
    snapshots = Snapshots(
        desired=configs.runs,
        state=state,
        observation=observe_platform(ctx, notices, configs.runs, state),
        settings=ctx.settings,
        ignored=configs.ignored,
        generators=configs.generators,
    )
    return plan, snapshots


def _execute(
    ctx: Context,
    notices: Notices,
    door: Door,
    plan: Plan,
    snapshots: Snapshots,
    request: ApplyRequest,
    progress: ApplyProgress,
    cancel: threading.Event,
) -> Applied:
    """Steps 4 and 5: the executor (and the wait) on the door's store, then the report."""
    state = refresh_statuses(snapshots.state, snapshots.observation)
    # Under the git lock every write reaches the remote state record too (before the
    # POST that follows an intent): evidence a killed apply leaves for the next one.
    store = door.store(state, publish=True)
    if state != snapshots.state:
        store.update(lambda s: s)
    if plan.decisions:
        # Before any item: a batch's record (its slice of the order) is on disk before the
        # submit's intent, so a crash between them plans the same batch again (plan.batches).
        store.update(
            lambda s: s.model_copy(update={"decisions": {**s.decisions, **plan.decisions}})
        )
    if any(i.action is Action.DOWNLOAD for i in plan.items):
        ctx.prepare_http()  # beside the first downloads' requests to the Platform
    applier = Applier(
        client=ctx.client,
        store=store,
        http=ctx.thread_http,  # one client per transfer thread
        repo_root=ctx.repo_root,
        download_root=ctx.download_root,
        settings=ctx.settings,
        head=head(ctx),
        report=progress.finished,
        started=progress.started,
        cancel=cancel,
        desired={d.address: d for d in snapshots.desired},
    )
    waited: list[str] = []
    try:
        result = applier.apply(plan, parallelism=ctx.settings.parallelism)
        if request.wait and not cancel.is_set():
            more = wait_and_download(
                ctx,
                notices,
                applier,
                store,
                progress,
                timeout=request.wait_timeout,
                cancel=cancel,
                desired=snapshots.desired,
            )
            result.outcomes.extend(more.outcomes)
            result.wait = more.waits[-1] if more.waits else None
            waited = more.addresses
    except KeyboardInterrupt:
        cancel.set()
        raise
    finally:
        unsaved = store.flush_or_why()
    if unsaved is not None and result.unsaved is None:
        result.unsaved = unsaved
    result.unsuccessful = tuple(unsuccessful_runs(store.state, result, waited))
    progress.summarise(
        result.unsuccessful,
        unsaved=result.unsaved,
        # A try-out's state stays beside the embedded Platform's data: nothing to commit.
        lockfile=None if ctx.tryout else ctx.settings.state,
    )
    return Applied(_ending(result), plan, store.state, snapshots.observation, result)


def _ending(result: ApplyResult) -> Ending:
    """Partial when an action failed but another succeeded or a failed one's paid call
    reached the Platform (or the lockfile could not be written at the end), failed when
    nothing was done, the wait's timeout when runs were still active at its end."""
    if result.failures or result.unsaved is not None:
        return Ending.PARTIAL if result.succeeded or result.unrecorded else Ending.FAILED
    if result.wait is not None and result.wait.timed_out:
        return Ending.WAIT_TIMED_OUT
    return Ending.DONE


def record_refresh(
    ctx: Context,
    notices: Notices,
    *,
    command: str,
    lock_timeout: float,
    lockfile: LockfileReader = read_lockfile_bytes,
) -> Refresh:
    """``osmosis-apply --refresh-only``: under the lockfile's door, record the statuses the
    Platform reports now; the plan returned is the one after recording."""
    with open_door(
        ctx.lock_scope(),
        timeout=lock_timeout,
        command=command,
        say=notices.info,
        on_lost=lambda: notices.alert(LOST_LOCK),
    ) as door:
        found = refresh(ctx, notices, lockfile=lockfile)
        if not found.changes:
            return found
        written = door.write(found.refreshed)
        plan = plan_snapshots(ctx, replace(found.snapshots, state=written))
        return replace(found, plan=plan, refreshed=written, recorded=True)
