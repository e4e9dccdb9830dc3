"""The plan operation (``osmosis-plan``): load the snapshots, compute the plan of them.

``make_plan`` reads (``engine.load``) and plans (``plan_snapshots``: the pure
``compute_plan``, plus the notes loading found and the last error lines of the smoke runs
that block a full run). ``refresh`` is ``osmosis-plan --refresh-only``: the observed
statuses the lockfile does not hold yet; ``engine.apply.record_refresh`` writes them.
Nothing here takes a lock or writes; ``ending`` is how a plan ends the command
(``reconciler.exit_codes``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import msgspec

from reconciler.engine.context import Context
from reconciler.engine.load import load
from reconciler.engine.observe import refresh_statuses
from reconciler.engine.outcomes import recorded_changes
from reconciler.engine.report import Notices
from reconciler.engine.smoke_logs import with_smoke_logs
from reconciler.engine.snapshots import LockfileReader, Snapshots
from reconciler.errors import UsageError
from reconciler.exit_codes import Ending
from reconciler.log import get_logger
from reconciler.model import LockState, Plan, RecordedChange
from reconciler.plan import compute_plan
from reconciler.state.lockfile import read_lockfile_bytes


def make_plan(
    ctx: Context,
    notices: Notices,
    *,
    lockfile: LockfileReader = read_lockfile_bytes,
    changed_since: str | None = None,
    concurrent_since: datetime | None = None,
) -> tuple[Plan, Snapshots]:
    """``load``, then ``plan_snapshots``: the plan and the snapshots it was computed from.
    ``changed_since``: only the configs changed since this git revision (a PR's base);
    ``concurrent_since``: see ``with_concurrent_since``."""
    snapshots = with_concurrent_since(load(ctx, notices, lockfile), concurrent_since)
    return plan_snapshots(ctx, snapshots, changed_since=changed_since), snapshots


def with_concurrent_since(snapshots: Snapshots, since: datetime | None) -> Snapshots:
    """``snapshots`` whose observation says that runs created from ``since`` on were made
    while this command waited for its lock (``Observation.concurrent_since``)."""
    if since is None:
        return snapshots
    observation = msgspec.structs.replace(snapshots.observation, concurrent_since=since)
    return replace(snapshots, observation=observation)


def plan_snapshots(ctx: Context, snapshots: Snapshots, *, changed_since: str | None = None) -> Plan:
    """The plan of ``snapshots`` (a pure ``compute_plan``), with loading's notes."""
    settings = snapshots.settings
    if changed_since:
        settings = settings.model_copy(update={"targets": _changed_targets(ctx, changed_since)})
    plan = compute_plan(
        snapshots.desired,
        snapshots.state,
        snapshots.observation,
        settings,
        snapshots.generators,
    )
    # The smoke runs that block a full run quote their last error lines (not pure: read
    # here, with a deadline; a log that cannot be read is said, never a failure).
    plan = with_smoke_logs(plan, ctx.client)
    _log_plan(plan, snapshots)
    notes = [*snapshots.notes, *_ignored_notes(ctx, snapshots)]
    if notes:
        plan = plan.model_copy(update={"warnings": (*plan.warnings, *notes)})
    if snapshots.ignored:
        plan = plan.model_copy(update={"ignored": snapshots.ignored})
    return plan


def _log_plan(plan: Plan, snapshots: Snapshots) -> None:
    log = get_logger()
    log.info(
        "plan computed",
        actions=len(plan.items),
        drift=len(plan.drift),
        observed_runs=len(snapshots.observation.runs),
        configs=len(snapshots.desired),
    )
    for item in plan.items:
        log.debug(
            "planned",
            address=item.address,
            action=item.action.value,
            reason=item.reason.value,
            run_id=item.run_id,
        )


def _ignored_notes(ctx: Context, snapshots: Snapshots) -> list[str]:
    """A note for each ignored config whose address has a recorded run."""
    notes = []
    configured = {d.address for d in snapshots.desired}
    prefix = ctx.settings.benchmarks.rstrip("/") + "/"
    for path, _why in snapshots.ignored:
        address = path.removeprefix(prefix).removesuffix(".toml")
        if address in snapshots.state.runs and address not in configured:
            notes.append(
                f"{path} is ignored but has a recorded run: the plan treats its config "
                "as deleted (remove the ignore, or let its run be stopped or forgotten)"
            )
    return notes


def _changed_targets(ctx: Context, rev: str) -> tuple[str, ...]:
    git = ctx.git
    if git is None:
        raise UsageError("--changed-since needs a git repository")
    changed = git.changed_since(rev)
    # git names files from its top level; a project of a root of many (docs/projects.md)
    # is a directory below it, whose benchmarks/ is relative to the project.
    inside = ctx.repo_root.resolve().relative_to(git.root.resolve()).as_posix()
    bench = ("" if inside == "." else inside + "/") + ctx.settings.benchmarks.rstrip("/") + "/"
    # A changed generator (X.matrix.toml) stands for every cell under X/, the vanished
    # ones included: their removals are part of the change.
    targets = tuple(
        p[len(bench) : -len(".matrix.toml")] + "/**"
        if p.endswith(".matrix.toml")
        else p[len(bench) : -len(".toml")]
        for p in sorted(changed)
        if p.startswith(bench) and p.endswith(".toml")
    )
    return targets or ("\0no-target",)


def ending(plan: Plan, *, detailed: bool) -> Ending:
    """How ``plan`` ends ``osmosis-plan``: failed on a guard's error, blocked when an item
    is newly blocked (a standing block, recorded by an earlier apply, is listed but does not
    turn the check red: issue 34), pending (only with ``--detailed-exitcode``) when it has
    changes."""
    if plan.errors:
        return Ending.FAILED
    if plan.newly_blocked:
        return Ending.BLOCKED
    return Ending.PENDING if detailed and plan.has_changes else Ending.DONE


# --------------------------------------------------------------------------- refresh


@dataclass(frozen=True)
class Refresh:
    """What a refresh found: the observed statuses the lockfile does not hold yet."""

    plan: Plan
    """The plan: the drift that stays and the actions a refresh does not take (after
    recording, when the refresh was recorded)."""
    changes: tuple[RecordedChange, ...]
    """The statuses to record (or recorded), by address."""
    snapshots: Snapshots
    """The snapshots the refresh read."""
    refreshed: LockState
    """``snapshots.state`` with the observed statuses recorded."""
    recorded: bool = False
    """Whether the changes were written to the lockfile (``engine.apply.record_refresh``)."""

    def ending(self, *, detailed: bool) -> Ending:
        """Pending (only with ``--detailed-exitcode``) when there is something to record
        or drift."""
        return Ending.PENDING if detailed and (self.changes or self.plan.drift) else Ending.DONE


def refresh(
    ctx: Context, notices: Notices, *, lockfile: LockfileReader = read_lockfile_bytes
) -> Refresh:
    """``osmosis-plan --refresh-only``: what a refresh would record; writes nothing."""
    snapshots = load(ctx, notices, lockfile)
    plan = plan_snapshots(ctx, snapshots)
    refreshed = refresh_statuses(snapshots.state, snapshots.observation)
    return Refresh(
        plan=plan,
        changes=recorded_changes(snapshots.state, refreshed),
        snapshots=snapshots,
        refreshed=refreshed,
    )
