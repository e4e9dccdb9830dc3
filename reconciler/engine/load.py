"""Reading: the three snapshots a plan is computed from, each read once per command.

``load`` returns the ``Snapshots`` of a plan: the configs (desired, with git provenance and
the ``Osmosis-Rerun`` / ``Osmosis-Skip`` trailers' requests), the lockfile (recorded,
checked to be this repository's own) and the Platform (observed). Nothing here takes a
lock, writes a file or renders: ``engine.plan`` computes the plan of the snapshots and
``engine.apply`` takes the lock, then reads through the same functions.

Every command starts with ``open_command``: the ``Context`` of its ``Invocation``, with the
Platform announced and, at the end, the Platform's version warning. The lockfile is read
through a ``LockfileReader`` (the seam a test counts reads through). Notes and warnings go
to the ``Notices`` a command hands in (``engine/report.py``); the engine never prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from reconciler.config import load_configs
from reconciler.config.load import LoadResult
from reconciler.engine.context import Context, Invocation, open_context
from reconciler.engine.observe import RunWalk, observe, scan_recorded_outputs
from reconciler.engine.prefetch import Prefetch
from reconciler.engine.report import Notices
from reconciler.engine.snapshots import Configs, LockfileReader, Snapshots, TrailerRequests
from reconciler.errors import ConfigError, ConfigIssue, GitError, StateError, UsageError, closest
from reconciler.gitinfo import DEEPEN_HINT, GitRepo
from reconciler.log import get_logger
from reconciler.model import DesiredRun, LocalOutputs, LockState, Observation, glob_match
from reconciler.plan.ownership import recorded_ids
from reconciler.state.lockfile import (
    HEADER_BYTES,
    check_provenance,
    check_state_path,
    load_lockfile,
    lockfile_text,
    parse,
    peek_watermark_in,
    read_lockfile_bytes,
)
from reconciler.state.locking import LockKind


@contextmanager
def open_command(
    invocation: Invocation, notices: Notices, *, opener: Callable[..., Context] = open_context
) -> Iterator[Context]:
    """The context of one command (``engine.context.open_context``, or ``opener``: the seam
    a test uses to pass it its own arguments) for the ``with`` block: the Platform it uses
    is announced first, then its plain-http warning, its version warning said last."""
    ctx = opener(
        repo_root=invocation.repo_root,
        platform_flag=invocation.platform,
        workspace_flag=invocation.workspace,
        overrides=invocation.overrides,
    )
    if ctx.announcement:
        notices.info(ctx.announcement)
    if ctx.warning:
        notices.warning(ctx.warning)
    try:
        yield ctx
    finally:
        if ctx.client.version_warning:
            notices.warning(f"the Platform says: {ctx.client.version_warning}")
        ctx.close()


# --------------------------------------------------------------------------- desired


def load_desired(
    ctx: Context,
    notices: Notices,
    on_valid: Callable[[tuple[DesiredRun, ...]], None] | None = None,
) -> Configs:
    """Load and validate the configs, then add git provenance.

    ``on_valid`` runs once the configs are known to be valid, before the git calls:
    the plan starts its first Platform request there, so invalid input never reaches
    the Platform.
    """
    result = load_configs(
        ctx.repo_root,
        ctx.settings.benchmarks,
        ignore=ctx.settings.ignore,
        policy=ctx.settings.policy,
    )
    ignored = tuple((i.path, i.why) for i in result.ignored)
    for issue in result.issues:
        if issue.severity == "warning":
            notices.issue(issue)
    if not result.ok:
        issues = _all_issues(ctx, notices, result)
        # --validate-only does not ask the Platform: with its errors listed too, only a
        # plan shows whether they are gone.
        hint = (
            "fix the configs listed above, then run `osmosis-plan` again"
            if len(issues) > len(result.issues)
            else None
        )
        raise ConfigError(issues, hint)
    if on_valid is not None:
        on_valid(result.runs)
    runs, note = _with_provenance(ctx.git, result.runs)
    return Configs(runs=runs, ignored=ignored, provenance_note=note, generators=result.generators)


def _with_provenance(
    git: GitRepo | None, runs: tuple[DesiredRun, ...]
) -> tuple[tuple[DesiredRun, ...], str | None]:
    """``runs`` with the commit that last changed each config (``requested_by``), and a note
    when a shallow clone's history misses some of them."""
    if git is None or not runs:
        return runs, None
    commits = git.last_commits([r.path for r in runs])
    # A config edited since its last commit was not requested by that commit.
    dirty = git.changed_since("HEAD") if git.head() else set()
    commits = {p: c for p, c in commits.items() if p not in dirty}
    arrivals = git.arrivals(list(commits)) if commits else {}
    runs = tuple(
        r.model_copy(
            update={
                "requested_by": commits[r.path].sha,
                "requested_subject": commits[r.path].subject,
                "arrived_at": arrivals.get(r.path),
            }
        )
        if r.path in commits
        else r
        for r in runs
    )
    if not git.is_shallow():
        return runs, None
    unknown = sorted(r.address for r in runs if r.requested_by is None)
    if not unknown:
        return runs, None
    get_logger().info("shallow clone: provenance missing", configs=len(unknown))
    note = (
        f"shallow clone: the git history of {len(unknown)} config(s) is missing, "
        f"so the commit that requested them is unknown ({', '.join(unknown[:5])}"
        f"{', ...' if len(unknown) > 5 else ''}); " + DEEPEN_HINT
    )
    return runs, note


def _all_issues(ctx: Context, notices: Notices, result: LoadResult) -> list[ConfigIssue]:
    """The errors of the files that did not validate and, in the same report, every
    preflight error of those that did and of those whose other keys still make a run
    (``LoadResult.salvaged``; ``engine.precheck``), sorted by file and line."""
    found = list(result.issues)
    salvaged = {s.run.address: s for s in result.salvaged}
    parsed = [*result.runs, *(s.run for s in result.salvaged)]
    if parsed:
        from reconciler.engine.precheck import try_catalog_issues  # only on config errors

        extra = try_catalog_issues(
            ctx.client,
            parsed,
            ctx.repo_root,
            platform=ctx.platform_id,
            workspace=ctx.workspace,
            now=datetime.now(UTC).replace(microsecond=0),
            where=ctx.settings.benchmarks,
            salvaged=salvaged,
        )
        for issue in extra:
            if issue.severity == "warning":
                notices.issue(issue)
        found += [issue for issue in extra if issue.severity != "warning"]
    return sorted(found, key=lambda i: (i.file, i.line or 0, i.column or 0))


# --------------------------------------------------------------------------- recorded


def read_lockfile(ctx: Context, lockfile: LockfileReader = read_lockfile_bytes) -> bytes | None:
    """The lockfile's bytes (None: there is none), through ``lockfile``."""
    check_state_path(ctx.repo_root, ctx.settings.state)
    return lockfile(ctx.state_path, ctx.settings.state)


def parse_state(
    ctx: Context, data: bytes | str | None, specs: Mapping[str, Any] | None = None
) -> LockState:
    """The state in the lockfile's bytes (or their text, ``lockfile_text``), checked to
    be this repository's own (``check_provenance``). ``specs``: address -> the body its
    config builds, shared by entries that recorded the same one (``parse``)."""
    state = load_lockfile(
        data,
        name=ctx.settings.state,
        platform=ctx.platform_id,
        workspace=ctx.workspace,
        specs=specs,
    )
    instance = ctx.platform_instance
    if instance is not None and state.platform_instance is None:
        # The embedded Platform that writes this state, recorded with the next write: a
        # clone on another machine (another instance) is told none of its runs exist there.
        state = state.model_copy(update={"platform_instance": instance})
    git = ctx.git
    if git is None:
        return state
    identity = git.identity()
    # The header is all the check reads (lineage, serial, repository).
    committed = git.committed_file(_state_in_repo(ctx, git), limit=HEADER_BYTES)
    root = git.root_commit()
    check_provenance(
        state,
        name=ctx.settings.state,
        repository=identity,
        committed=committed,
        allow_foreign=ctx.settings.allow_foreign_state,
        root_commit=root,
    )
    if identity is not None and (state.repository != identity or state.root_commit != root):
        # Recorded with the next write (older lockfiles, a remote added since, or
        # an accepted rename).
        state = state.model_copy(update={"repository": identity, "root_commit": root})
    return state


def load_state(ctx: Context, lockfile: LockfileReader = read_lockfile_bytes) -> LockState:
    """Read the lockfile and check it is this repository's own."""
    return parse_state(ctx, read_lockfile(ctx, lockfile))


def _state_in_repo(ctx: Context, git: GitRepo) -> str:
    try:
        return ctx.state_path.resolve().relative_to(git.root.resolve()).as_posix()
    except ValueError:
        return ctx.settings.state


def head(ctx: Context) -> str | None:
    """The commit checked out (None: no git, or no commit yet)."""
    return ctx.git.head() if ctx.git else None


# --------------------------------------------------------------------------- observed


def observe_platform(
    ctx: Context,
    notices: Notices,
    desired: Sequence[DesiredRun],
    state: LockState,
    walk: RunWalk | None = None,
    outputs: Mapping[str, LocalOutputs] | None = None,
) -> Observation:
    """What the Platform and the local disk say now about ``desired`` and ``state``."""
    observation = observe(
        ctx.client,
        tuple(desired),
        state,
        platform=ctx.platform_id,
        workspace=ctx.workspace,
        repo_root=ctx.repo_root,
        head=head(ctx),
        now=datetime.now(UTC).replace(microsecond=0),
        full=ctx.settings.refresh == "full",
        want_unmanaged=ctx.settings.unmanaged == "list",
        walk=walk,
        outputs=outputs,
        rerun=ctx.settings.replace,
        retry_errored=ctx.settings.retry_errored,
    )
    known = recorded_ids(state)
    if any(run_id not in known for run_id in observation.runs):
        vouched = _vouched_by_state_record(ctx, notices)
        if vouched:
            observation = observation.model_copy(update={"vouched": vouched})
    if ctx.platform_instance is not None:
        observation = observation.model_copy(update={"platform_instance": ctx.platform_instance})
    return observation


def _vouched_by_state_record(ctx: Context, notices: Notices) -> frozenset[str]:
    """Run ids the remote state record of this Platform and workspace names: evidence
    (``plan.ownership``) for a run whose lockfile commit never reached the branch. Read
    only where the git lock guards the Platform (it is what writes the record)."""
    git = ctx.git
    scope = ctx.lock_scope()
    if git is None or scope.kind() is not LockKind.GIT:
        return frozenset()
    from reconciler.state.gitlock import read_state_record  # the git lock only

    try:
        data = read_state_record(git.root, scope.refs)
    except GitError as exc:
        notices.warning(
            f"the remote state record could not be read ({exc.message}); runs only it "
            "names are not adopted by this plan"
        )
        return frozenset()
    if data is None:
        return frozenset()
    try:
        record = parse(data.decode("utf-8", "replace"), scope.refs.state)
    except StateError as exc:
        notices.warning(f"the remote state record is unreadable: {exc.message}")
        return frozenset()
    if record.platform.rstrip("/") != ctx.platform_id.rstrip("/"):
        return frozenset()
    return recorded_ids(record)


def _start_walk(ctx: Context, lockfile: bytes | None) -> RunWalk:
    """The first pages of the run list, read while the lockfile is parsed: every page
    when the lockfile has no watermark (or a full listing is asked for), else the first.
    A run a concurrent apply records meanwhile is read directly later, never missed."""
    walk = RunWalk(ctx.client)
    known, watermark = peek_watermark_in(lockfile)
    full_listing = ctx.settings.refresh == "full" or ctx.settings.unmanaged == "list"
    if full_listing or (known and watermark is None):
        walk.all()
    else:
        walk.read_page()
    return walk


# --------------------------------------------------------------------------- all three


def load(
    ctx: Context, notices: Notices, lockfile: LockfileReader = read_lockfile_bytes
) -> Snapshots:
    """The three snapshots of a plan, each read once.

    The run list (the bulk of a plan's wall time on a large workspace) is fetched
    while provenance and the lockfile are parsed; they do not depend on each other.
    """
    prefetches: list[Prefetch] = []
    data: list[bytes | None] = []
    parsed: list[LockState] = []
    specs: dict[str, Any] = {}

    def state() -> LockState:
        if not parsed:
            # The bytes are dropped once parsed: the plan holds the state, never the
            # file's text beside it (11 MB at 20,000 recorded runs).
            raw = data.pop()
            text = None if raw is None else lockfile_text(raw, ctx.settings.state)
            del raw
            parsed.append(parse_state(ctx, text, specs))
        return parsed[0]

    def valid(runs: tuple[DesiredRun, ...]) -> None:
        # An unchanged config's recorded body is its body: held once, not twice.
        specs.update((r.address, r.spec) for r in runs)
        data.append(read_lockfile(ctx, lockfile))
        raw = data[0]
        # The walk needs only the header (the watermark); it runs on past the parse.
        header = None if raw is None else raw[:HEADER_BYTES]
        del raw
        # Before the first Platform request: a misspelt address is a usage error.
        _check_addresses(ctx, {r.address for r in runs}, state)
        prefetches.append(Prefetch(lambda: _start_walk(ctx, header)))

    configs = load_desired(ctx, notices, on_valid=valid)
    recorded = state()
    # Local files are hashed while the list may still be arriving.
    outputs = scan_recorded_outputs(recorded, ctx.repo_root)
    walk = prefetches[0].result() if prefetches else None
    observation = observe_platform(ctx, notices, configs.runs, recorded, walk, outputs)
    trailers = trailer_requests(ctx, configs.runs, recorded)
    if trailers.retry_errored:
        # Retries a trailer asks for: their errored attempts are read from the kept files
        # like those of ``--retry-errored`` (the observation read the flag's already).
        from reconciler.engine.observe import errored_attempts

        more = errored_attempts(recorded, configs.runs, ctx.repo_root, trailers.retry_errored)
        observation = observation.model_copy(update={"errored": {**more, **observation.errored}})
    notes = (*trailers.notes, *([configs.provenance_note] if configs.provenance_note else []))
    return Snapshots(
        desired=trailers.desired(configs.runs),
        state=recorded,
        observation=observation,
        settings=trailers.settings(ctx.settings),
        ignored=configs.ignored,
        notes=notes,
        generators=configs.generators,
    )


def _check_addresses(ctx: Context, desired: set[str], state: Callable[[], LockState]) -> None:
    """``--target`` and ``--replace`` that match nothing are usage errors naming the
    nearest address (a misspelt target would otherwise plan, and apply, nothing).
    ``state`` gives the recorded state, parsed only when a flag matches no config."""
    settings = ctx.settings
    flags = [
        *(("--target", t) for t in settings.targets),
        *(("--replace", r) for r in settings.replace),
        *(("--retry-errored", r) for r in settings.retry_errored),
    ]
    if not flags:
        return
    known = set(desired)
    unmatched = [(f, v) for f, v in flags if not any(glob_match(a, (v,)) for a in known)]
    if unmatched:
        known |= set(state().runs)
    for flag, value in unmatched:
        pool = known if flag == "--target" else set(desired)
        if any(glob_match(a, (value,)) for a in pool):
            continue
        what = "config or recorded run" if flag == "--target" else "config"
        close = closest(value, sorted(pool), 0.5)
        hint = (
            f"did you mean `{flag} {close}`?"
            if close
            else (
                f"addresses are config paths under {settings.benchmarks}/ without .toml, e.g. "
                + (f"`{sorted(pool)[0]}`" if pool else "`group/name`")
            )
        )
        raise UsageError(f"{flag} {value} matches no {what}", hint)


def trailer_requests(
    ctx: Context, desired: Sequence[DesiredRun], state: LockState
) -> TrailerRequests:
    """The commit trailers' requests and permissions (``engine.requests``): a re-run request
    stays pending until an apply carries it out; holds and permissions last until the
    lockfile is committed after them."""
    from reconciler.engine.requests import read_requests

    return read_requests(ctx.git, ctx.settings.state, desired, state)
