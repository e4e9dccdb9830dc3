"""One command's work from start to end: load, observe, plan, apply, wait, download.

The CLI builds an ``Invocation`` (what the command line asks, as values), opens a
``Session`` with it and calls its steps. Data flows as values: ``load`` returns the
``Snapshots`` (desired, recorded, observed), ``plan`` computes the ``Plan`` of them, and
``apply`` carries out that plan against the same snapshots. The lockfile is read once per
command (``Session.lockfile`` is the seam a test counts reads through). The steps tell
people and scripts what happens only through the ``output`` they are given (a ``Notices``)
and an apply through its ``ApplyProgress`` (``engine/report.py``): the CLI's one printer
implements both, and the engine imports nothing of the CLI.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.config import load_configs
from reconciler.engine.context import Context, Invocation, open_context
from reconciler.engine.observe import RunWalk, observe, refresh_statuses, scan_recorded_outputs
from reconciler.engine.outcomes import recorded_changes, unsuccessful_runs
from reconciler.engine.prefetch import Prefetch
from reconciler.engine.report import ApplyProgress, Notices, RunRef, WaitReport
from reconciler.engine.smoke_logs import with_smoke_logs
from reconciler.engine.snapshots import (  # noqa: F401  (re-exported)
    Configs,
    LockfileReader,
    Snapshots,
    TrailerRequests,
)
from reconciler.errors import (
    ConfigError,
    ConfigIssue,
    GitError,
    StalePlanError,
    StateError,
    UsageError,
    closest,
)
from reconciler.gitinfo import _DEEPEN_HINT, GitRepo
from reconciler.log import get_logger
from reconciler.model import (
    Action,
    DesiredRun,
    LocalOutputs,
    LockState,
    Observation,
    Plan,
    RecordedChange,
    RunStatus,
    glob_match,
)
from reconciler.paths import UnsafeInputError, read_named, write_named
from reconciler.plan import compute_plan
from reconciler.plan.ownership import recorded_ids
from reconciler.render import (
    parse_saved_plan,
    render_json,
    render_markdown,
    render_text,
    saved_plan_text,
)
from reconciler.state.lockfile import (
    HEADER_BYTES,
    check_provenance,
    check_state_path,
    load_lockfile,
    lockfile_text,
    parse,
    peek_watermark_in,
    read_lockfile_bytes,
    remove_stale_temps,
    write_lockfile,
)
from reconciler.state.locking import LockKind, choose_lock, hold_lock, machine_lock_path
from reconciler.state.store import StateStore

if TYPE_CHECKING:
    # apply (the paid path) is imported by the steps that act, not by every plan.
    from reconciler.engine.apply import Applier
    from reconciler.engine.apply_result import ApplyResult, Outcome
    from reconciler.state.gitlock import GitLock, GuardedRefs


class Session:
    """One invocation's context (``ctx``), output and cancel event. It holds no snapshot:
    every step takes and returns them as values."""

    def __init__(
        self, ctx: Context, output: Notices, lockfile: LockfileReader = read_lockfile_bytes
    ) -> None:
        self.ctx = ctx
        self.output = output
        self.lockfile = lockfile
        self.cancel = threading.Event()
        self.git_lock: GitLock | None = None
        """The git lock while ``hold_lock`` holds one (its ``publish`` records each write)."""

    @classmethod
    @contextmanager
    def open(
        cls,
        invocation: Invocation,
        output: Notices,
        *,
        lockfile: LockfileReader = read_lockfile_bytes,
    ) -> Iterator[Session]:
        ctx = open_context(
            repo_root=invocation.repo_root,
            platform_flag=invocation.platform,
            workspace_flag=invocation.workspace,
            overrides=invocation.overrides,
        )
        if ctx.announcement:
            output.info(ctx.announcement)
        try:
            yield cls(ctx, output, lockfile)
        finally:
            if ctx.client.version_warning:
                output.warning(f"the Platform says: {ctx.client.version_warning}")
            ctx.close()

    # -- snapshots -----------------------------------------------------------

    def load_desired(
        self, on_valid: Callable[[tuple[DesiredRun, ...]], None] | None = None
    ) -> Configs:
        """Load and validate the configs, then add git provenance.

        ``on_valid`` runs once the configs are known to be valid, before the git calls:
        the plan starts its first Platform request there, so invalid input never reaches
        the Platform.
        """
        result = load_configs(
            self.ctx.repo_root,
            self.ctx.settings.benchmarks,
            ignore=self.ctx.settings.ignore,
            policy=self.ctx.settings.policy,
        )
        ignored = tuple((i.path, i.why) for i in result.ignored)
        warnings = [i for i in result.issues if i.severity == "warning"]
        for issue in warnings:
            self.output.issue(issue)
        if not result.ok:
            issues = self._all_issues(result.runs, result.issues)
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
        runs = result.runs
        note = None
        git = self.ctx.git
        if git is not None and runs:
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
            if git.is_shallow():
                unknown = sorted(r.address for r in runs if r.requested_by is None)
                if unknown:
                    note = (
                        f"shallow clone: the git history of {len(unknown)} config(s) is missing, "
                        f"so the commit that requested them is unknown ({', '.join(unknown[:5])}"
                        f"{', ...' if len(unknown) > 5 else ''}); " + _DEEPEN_HINT
                    )
                    get_logger().info("shallow clone: provenance missing", configs=len(unknown))
        return Configs(
            runs=runs, ignored=ignored, provenance_note=note, generators=result.generators
        )

    def _all_issues(
        self, parsed: Sequence[DesiredRun], issues: Sequence[ConfigIssue]
    ) -> list[ConfigIssue]:
        """The errors of the files that did not validate and, in the same report, every
        preflight error of those that did (``engine.precheck``), sorted by file and line."""
        found = list(issues)
        if parsed:
            from reconciler.engine.precheck import try_catalog_issues  # only on config errors

            extra = try_catalog_issues(
                self.ctx.client,
                parsed,
                self.ctx.repo_root,
                platform=self.ctx.platform_id,
                workspace=self.ctx.workspace,
                now=datetime.now(UTC).replace(microsecond=0),
                where=self.ctx.settings.benchmarks,
            )
            for issue in extra:
                if issue.severity == "warning":
                    self.output.issue(issue)
            found += [issue for issue in extra if issue.severity != "warning"]
        return sorted(found, key=lambda i: (i.file, i.line or 0, i.column or 0))

    def read_lockfile(self) -> bytes | None:
        """The lockfile's bytes (None: there is none), through ``self.lockfile``."""
        check_state_path(self.ctx.repo_root, self.ctx.settings.state)
        return self.lockfile(self.ctx.state_path, self.ctx.settings.state)

    def parse_state(
        self, data: bytes | str | None, specs: Mapping[str, Any] | None = None
    ) -> LockState:
        """The state in the lockfile's bytes (or their text, ``lockfile_text``), checked to
        be this repository's own (``check_provenance``). ``specs``: address -> the body its
        config builds, shared by entries that recorded the same one (``parse``)."""
        state = load_lockfile(
            data,
            name=self.ctx.settings.state,
            platform=self.ctx.platform_id,
            workspace=self.ctx.workspace,
            specs=specs,
        )
        git = self.ctx.git
        if git is not None:
            identity = self.repository
            # The header is all the check reads (lineage, serial, repository).
            committed = git.committed_file(self._state_in_repo(git), limit=HEADER_BYTES)
            root = git.root_commit()
            check_provenance(
                state,
                name=self.ctx.settings.state,
                repository=identity,
                committed=committed,
                allow_foreign=self.ctx.settings.allow_foreign_state,
                root_commit=root,
            )
            if identity is not None and (state.repository != identity or state.root_commit != root):
                # Recorded with the next write (older lockfiles, a remote added since, or
                # an accepted rename).
                state = state.model_copy(update={"repository": identity, "root_commit": root})
        return state

    def load_state(self) -> LockState:
        """Read the lockfile and check it is this repository's own."""
        return self.parse_state(self.read_lockfile())

    @cached_property
    def repository(self) -> str | None:
        """This repository's identity (``GitRepo.identity``), asked of git once."""
        return self.ctx.git.identity() if self.ctx.git else None

    def _state_in_repo(self, git: GitRepo) -> str:
        try:
            return self.ctx.state_path.resolve().relative_to(git.root.resolve()).as_posix()
        except ValueError:
            return self.ctx.settings.state

    def head(self) -> str | None:
        return self.ctx.git.head() if self.ctx.git else None

    @property
    def _full_listing(self) -> bool:
        settings = self.ctx.settings
        return settings.refresh == "full" or settings.unmanaged == "list"

    def observe(
        self,
        desired: Sequence[DesiredRun],
        state: LockState,
        walk: RunWalk | None = None,
        outputs: Mapping[str, LocalOutputs] | None = None,
    ) -> Observation:
        observation = observe(
            self.ctx.client,
            tuple(desired),
            state,
            platform=self.ctx.platform_id,
            workspace=self.ctx.workspace,
            repo_root=self.ctx.repo_root,
            head=self.head(),
            now=datetime.now(UTC).replace(microsecond=0),
            full=self.ctx.settings.refresh == "full",
            want_unmanaged=self.ctx.settings.unmanaged == "list",
            walk=walk,
            outputs=outputs,
        )
        known = recorded_ids(state)
        if any(run_id not in known for run_id in observation.runs):
            vouched = self._vouched_by_state_record()
            if vouched:
                observation = observation.model_copy(update={"vouched": vouched})
        return observation

    def _vouched_by_state_record(self) -> frozenset[str]:
        """Run ids the remote state record of this Platform and workspace names: evidence
        (``plan.ownership``) for a run whose lockfile commit never reached the branch. Read
        only where the git lock guards the Platform (it is what writes the record)."""
        git = self.ctx.git
        if git is None or self.lock_kind() is not LockKind.GIT:
            return frozenset()
        from reconciler.state.gitlock import read_state_record  # the git lock only

        try:
            data = read_state_record(git.root, self.guarded_refs())
        except GitError as exc:
            self.output.warning(
                f"the remote state record could not be read ({exc.message}); runs only it "
                "names are not adopted by this plan"
            )
            return frozenset()
        if data is None:
            return frozenset()
        try:
            record = parse(data.decode("utf-8", "replace"), self.guarded_refs().state)
        except StateError as exc:
            self.output.warning(f"the remote state record is unreadable: {exc.message}")
            return frozenset()
        if record.platform.rstrip("/") != self.ctx.platform_id.rstrip("/"):
            return frozenset()
        return recorded_ids(record)

    def _start_walk(self, lockfile: bytes | None) -> RunWalk:
        """The first pages of the run list, read while the lockfile is parsed: every page
        when the lockfile has no watermark (or a full listing is asked for), else the first.
        A run a concurrent apply records meanwhile is read directly later, never missed."""
        walk = RunWalk(self.ctx.client)
        known, watermark = peek_watermark_in(lockfile)
        if self._full_listing or (known and watermark is None):
            walk.all()
        else:
            walk.read_page()
        return walk

    def load(self) -> Snapshots:
        """The three snapshots of a plan, each read once.

        The run list (the bulk of a plan's wall time on a large workspace) is fetched
        while provenance and the lockfile are parsed; they do not depend on each other.
        """
        prefetches: list[Prefetch] = []
        lockfile: list[bytes | None] = []
        parsed: list[LockState] = []
        specs: dict[str, Any] = {}

        def state() -> LockState:
            if not parsed:
                # The bytes are dropped once parsed: the plan holds the state, never the
                # file's text beside it (11 MB at 20,000 recorded runs).
                data = lockfile.pop()
                text = None if data is None else lockfile_text(data, self.ctx.settings.state)
                del data
                parsed.append(self.parse_state(text, specs))
            return parsed[0]

        def valid(runs: tuple[DesiredRun, ...]) -> None:
            # An unchanged config's recorded body is its body: held once, not twice.
            specs.update((r.address, r.spec) for r in runs)
            lockfile.append(self.read_lockfile())
            data = lockfile[0]
            # The walk needs only the header (the watermark); it runs on past the parse.
            head = None if data is None else data[:HEADER_BYTES]
            del data
            # Before the first Platform request: a misspelt address is a usage error.
            self._check_addresses({r.address for r in runs}, state)
            prefetches.append(Prefetch(lambda: self._start_walk(head)))

        configs = self.load_desired(on_valid=valid)
        recorded = state()
        # Local files are hashed while the list may still be arriving.
        outputs = scan_recorded_outputs(recorded, self.ctx.repo_root)
        walk = prefetches[0].result() if prefetches else None
        observation = self.observe(configs.runs, recorded, walk, outputs)
        trailers = self.trailer_requests(configs.runs, recorded)
        notes = (*trailers.notes, *([configs.provenance_note] if configs.provenance_note else []))
        return Snapshots(
            desired=trailers.desired(configs.runs),
            state=recorded,
            observation=observation,
            settings=trailers.settings(self.ctx.settings),
            ignored=configs.ignored,
            notes=notes,
            generators=configs.generators,
        )

    def make_plan(self, *, changed_since: str | None = None) -> tuple[Plan, Snapshots]:
        """``load``, then ``plan``: the plan and the snapshots it was computed from."""
        snapshots = self.load()
        return self.plan(snapshots, changed_since=changed_since), snapshots

    def plan(self, snapshots: Snapshots, *, changed_since: str | None = None) -> Plan:
        """The plan of ``snapshots`` (a pure ``compute_plan``), with loading's notes."""
        settings = snapshots.settings
        if changed_since:
            settings = settings.model_copy(update={"targets": self._changed_targets(changed_since)})
        plan = compute_plan(
            snapshots.desired,
            snapshots.state,
            snapshots.observation,
            settings,
            snapshots.generators,
        )
        # The smoke runs that block a full run quote their last error lines (not pure: read
        # here, with a deadline; a log that cannot be read is said, never a failure).
        plan = with_smoke_logs(plan, self.ctx.client)
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
        notes = list(snapshots.notes)
        recorded = {d.address for d in snapshots.desired}
        for path, _why in snapshots.ignored:
            address = _address_of(path, self.ctx.settings.benchmarks)
            if address in snapshots.state.runs and address not in recorded:
                notes.append(
                    f"{path} is ignored but has a recorded run: the plan treats its config "
                    "as deleted (remove the ignore, or let its run be stopped or forgotten)"
                )
        if notes:
            plan = plan.model_copy(update={"warnings": (*plan.warnings, *notes)})
        if snapshots.ignored:
            plan = plan.model_copy(update={"ignored": snapshots.ignored})
        return plan

    def _check_addresses(self, desired: set[str], state: Callable[[], LockState]) -> None:
        """``--target`` and ``--replace`` that match nothing are usage errors naming the
        nearest address (a misspelt target would otherwise plan, and apply, nothing).
        ``state`` gives the recorded state, parsed only when a flag matches no config."""
        settings = self.ctx.settings
        flags = [("--target", t) for t in settings.targets] + [
            ("--replace", r) for r in settings.replace
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

    def trailer_requests(self, desired: Sequence[DesiredRun], state: LockState) -> TrailerRequests:
        """The ``Osmosis-Rerun`` / ``Osmosis-Skip`` trailers' requests.

        Only commits since the lockfile was last committed count, and a re-run request is
        spent once the address's recorded run was applied at (or after) that commit, so a
        lockfile that is not committed yet cannot make the same trailer pay twice.
        """
        git = self.ctx.git
        if git is None or git.head() is None:
            return TrailerRequests()
        since = git.last_commit_touching(self.ctx.settings.state)
        trailers = git.trailers_since(
            since, ("Osmosis-Rerun", "Osmosis-Skip", "Osmosis-Skip-Smoke")
        )
        if not trailers:
            return TrailerRequests()
        addresses = [d.address for d in desired]
        replace_: list[str] = []
        skip: list[str] = []
        skip_smoke: list[str] = []
        notes: list[str] = []
        requested: dict[str, tuple[str, str]] = {}
        for trailer in trailers:
            matches = [a for a in addresses if glob_match(a, (trailer.value,))]
            if not matches:
                close = closest(trailer.value, sorted(addresses))
                notes.append(
                    f"{trailer.key}: {trailer.value} (commit {trailer.commit[:7]}) matches no "
                    "config, so it does nothing" + (f"; did you mean {close}?" if close else "")
                )
            if trailer.key == "Osmosis-Skip":
                skip.append(trailer.value)
                continue
            if trailer.key == "Osmosis-Skip-Smoke":
                skip_smoke.append(trailer.value)
                continue
            for address in matches:
                entry = state.runs.get(address)
                applied = entry.applied_at_commit if entry else None
                if applied and git.is_ancestor(trailer.commit, applied):
                    continue
                # A retry the Platform refused again since the trailer is spent too.
                refused = state.rejections.get(address)
                if (
                    refused
                    and refused.at_commit
                    and git.is_ancestor(trailer.commit, refused.at_commit)
                ):
                    continue
                if address not in replace_:
                    replace_.append(address)
                requested[address] = (trailer.commit, trailer.subject)
        return TrailerRequests(
            replace=tuple(replace_),
            skip=tuple(skip),
            requested=requested,
            notes=tuple(notes),
            skip_smoke=tuple(skip_smoke),
        )

    def _changed_targets(self, rev: str) -> tuple[str, ...]:
        git = self.ctx.git
        if git is None:
            raise UsageError("--changed-since needs a git repository")
        changed = git.changed_since(rev)
        bench = self.ctx.settings.benchmarks.rstrip("/") + "/"
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

    # -- output --------------------------------------------------------------

    def render(self, plan: Plan, fmt: str, *, color: bool) -> str:
        if fmt == "json":
            return render_json(plan)
        if fmt == "markdown":
            return render_markdown(plan)
        return render_text(plan, color=color)

    def save_plan(self, plan: Plan, path: Path) -> None:
        # Anywhere the user names, never through a symlink (reconciler.paths, issue 36).
        write_named(path, saved_plan_text(plan).encode("utf-8"), what="--out")

    def load_saved_plan(self, path: Path) -> tuple[Plan, Snapshots]:
        """A saved plan, refused when stale, and the snapshots to apply it against: the
        configs and the lockfile read now, the Platform observed again (design.md §7.2:
        statuses that changed since the plan was made are recorded before acting)."""
        plan = read_saved_plan(path)
        configs = self.load_desired()
        state = self.load_state()
        stale = []
        # No lockfile when planned nor now: each read of a missing lockfile gets a fresh
        # lineage, so only serial 0 on both sides proves the state is unchanged.
        unwritten = plan.serial == 0 and state.serial == 0
        if (not unwritten and plan.lineage not in (None, state.lineage)) or (
            plan.lineage is not None and plan.serial != state.serial
        ):
            stale.append(f"the lockfile changed (serial {plan.serial} -> {state.serial})")
        if plan.platform != self.ctx.platform_id or plan.workspace != self.ctx.workspace:
            stale.append("it was made for another platform or workspace")
        digests = {d.address: d.spec_digest for d in configs.runs}
        if digests != plan.config_digests:
            changed = sorted(set(digests.items()) ^ set(plan.config_digests.items()))
            names = sorted({a for a, _ in changed})
            stale.append(f"configs changed: {', '.join(names[:10])}")
        head = self.head()
        if plan.head != head:
            stale.append(f"HEAD moved ({(plan.head or 'none')[:12]} -> {(head or 'none')[:12]})")
        if stale:
            raise StalePlanError(
                f"the saved plan {path} is stale: " + "; ".join(stale),
                "run `osmosis-plan --out PLANFILE` again and apply the new plan",
            )
        snapshots = Snapshots(
            desired=configs.runs,
            state=state,
            observation=self.observe(configs.runs, state),
            settings=self.ctx.settings,
            ignored=configs.ignored,
            generators=configs.generators,
        )
        return plan, snapshots

    # -- state-changing steps -------------------------------------------------

    @contextmanager
    def hold_lock(self, *, timeout: float, command: str) -> Iterator[None]:
        def waiting(holder: Mapping[str, object]) -> None:
            self.output.info(
                f"Waiting for the apply lock held by pid {holder.get('pid')} on "
                f"{holder.get('host')} since {holder.get('started_at')} ..."
            )

        def lost() -> None:
            self.output.alert("Lost the apply lock on the git remote: no new action is started.")
            self.cancel.set()

        check_state_path(self.ctx.repo_root, self.ctx.settings.state)
        self.ctx.state_path.parent.mkdir(parents=True, exist_ok=True)
        git, settings = self.ctx.git, self.ctx.settings
        kind = self.lock_kind()
        with ExitStack() as stack:
            # The clone's lock always (osmosis-state and announce take it too), then the
            # one that guards the Platform and workspace beyond this clone, if any.
            info = stack.enter_context(
                hold_lock(
                    self.ctx.lock_path,
                    timeout=timeout,
                    command=command,
                    on_wait=waiting,
                    ci_url=_ci_url(),
                )
            )
            if kind is LockKind.MACHINE:
                # A loopback Platform lives on this machine: two clones exclude each other.
                stack.enter_context(
                    hold_lock(
                        machine_lock_path(self.ctx.platform_id, self.ctx.workspace, self.ctx.env),
                        timeout=timeout,
                        command=command,
                        on_wait=waiting,
                        ci_url=info.ci_url,
                    )
                )
            if kind is LockKind.GIT:
                assert git is not None
                from reconciler.state.gitlock import hold_git_lock

                # Across machines too (laptop and CI): see gitlock.py.
                self.git_lock = stack.enter_context(
                    hold_git_lock(
                        git.root,
                        refs=self.guarded_refs(),
                        lock_id=info.lock_id,
                        command=command,
                        ci_url=info.ci_url,
                        ttl=settings.lock_ttl,
                        state_path=self.ctx.state_path,
                        timeout=timeout,
                        on_wait=waiting,
                        on_lost=lost,
                    )
                )
            stack.callback(setattr, self, "git_lock", None)
            # Under the lock, temp files of the lockfile can only be a killed writer's.
            remove_stale_temps(self.ctx.state_path)
            yield

    def lock_kind(self) -> LockKind:
        """Which lock guards this Platform and workspace (``locking.choose_lock``)."""
        git = self.ctx.git
        return choose_lock(
            self.ctx.settings.lock,
            self.ctx.platform_id,
            has_origin=bool(git and git.origin_url()),
        )

    def guarded_refs(self) -> GuardedRefs:
        """The git lock and state refs of this Platform and workspace."""
        from reconciler.state.gitlock import GuardedRefs

        return GuardedRefs(self.ctx.platform_id, self.ctx.workspace)

    def refresh(self, *, record: bool) -> tuple[Plan, tuple[RecordedChange, ...]]:
        """What a refresh records: observed statuses that the lockfile does not hold yet.

        With ``record`` (``osmosis-apply --refresh-only``, under the apply lock) they are
        written, and the returned plan is the one after recording; without it
        (``osmosis-plan --refresh-only``) nothing is written. The plan gives the drift that
        stays and the actions a refresh does not take.
        """
        snapshots = self.load()
        plan = self.plan(snapshots)
        refreshed = refresh_statuses(snapshots.state, snapshots.observation)
        changes = recorded_changes(snapshots.state, refreshed)
        if record and changes:
            written = write_lockfile(self.ctx.state_path, refreshed)
            plan = self.plan(replace(snapshots, state=written))
        return plan, changes

    def apply(
        self,
        plan: Plan,
        snapshots: Snapshots,
        *,
        report: ApplyProgress,
        wait: bool,
        wait_timeout: float,
    ) -> ApplyResult:
        """Carry out ``plan``, computed from (or checked against) ``snapshots``."""
        from reconciler.engine.apply import Applier

        state = refresh_statuses(snapshots.state, snapshots.observation)
        # Under the git lock every write reaches the remote state record too (before the
        # POST that follows an intent): evidence a killed apply leaves for the next one.
        publish = self.git_lock.publish if self.git_lock is not None else None
        store = StateStore(self.ctx.state_path, state, on_write=publish)
        if state != snapshots.state:
            store.update(lambda s: s)

        if any(i.action is Action.DOWNLOAD for i in plan.items):
            self.ctx.prepare_http()  # beside the first downloads' requests to the Platform
        applier = Applier(
            client=self.ctx.client,
            store=store,
            http=self.ctx.thread_http,  # one client per transfer thread
            repo_root=self.ctx.repo_root,
            download_root=self.ctx.download_root,
            settings=self.ctx.settings,
            head=self.head(),
            report=report.finished,
            started=report.started,
            cancel=self.cancel,
            desired={d.address: d for d in snapshots.desired},
        )
        waited: list[str] = []
        waits: list[WaitReport] = []
        try:
            result = applier.apply(plan, parallelism=self.ctx.settings.parallelism)
            if wait and not self.cancel.is_set():
                result.outcomes.extend(
                    self._wait_and_download(
                        applier, store, report, wait_timeout, waited, waits, snapshots.desired
                    )
                )
        except KeyboardInterrupt:
            self.cancel.set()
            raise
        finally:
            unsaved = store.flush_or_why()
        if unsaved is not None and result.unsaved is None:
            result.unsaved = unsaved
        result.wait = waits[-1] if waits else None
        result.unsuccessful = tuple(unsuccessful_runs(store.state, result, waited))
        report.summarise(
            result.unsuccessful,
            unsaved=result.unsaved,
            # A try-out's state stays beside the embedded Platform's data: nothing to commit.
            lockfile=None if self.ctx.tryout else self.ctx.settings.state,
        )
        return result

    def _wait_and_download(
        self,
        applier: Applier,
        store: StateStore,
        report: ApplyProgress,
        timeout: float,
        waited: list[str],
        waits: list[WaitReport],
        desired: tuple[DesiredRun, ...],
    ) -> list[Outcome]:
        from reconciler.engine.observe import wait_for_runs

        entries = [
            (address, e)
            for address, e in sorted(store.state.runs.items())
            if e.run_id and RunStatus.of(e.status).is_active
        ]
        active = [RunRef(address, e.run_id, e.run_name, e.status) for address, e in entries]
        created = [e.submitted_at for _address, e in entries]
        since = None if None in created or not created else min(c for c in created if c)
        if active:
            waited.extend(r.address for r in active)
            report.waiting(active, timeout)
            last: dict[str, int] = {}

            def progress(statuses: dict[str, str]) -> None:
                counts: dict[str, int] = {}
                for status in statuses.values():
                    counts[status] = counts.get(status, 0) + 1
                if counts != last:
                    last.clear()
                    last.update(counts)
                    report.wait_progress(counts)

            statuses = wait_for_runs(
                self.ctx.client,
                [r.run_id for r in active if r.run_id],
                timeout=timeout,
                cancel=self.cancel,
                since=since,
                on_poll=progress,
            )
            still = tuple(
                RunRef(r.address, r.run_id, r.run_name, statuses.get(r.run_id or "", r.status))
                for r in active
                if RunStatus.of(statuses.get(r.run_id or "", r.status)).is_active
            )
            wait_report = WaitReport(
                timeout, timed_out=bool(still) and not self.cancel.is_set(), active=still
            )
            waits.append(wait_report)
            report.waited(wait_report)
        # Re-plan with fresh observations: only downloads remain for finished runs.
        observation = self.observe(desired, store.state)
        refreshed = refresh_statuses(store.state, observation)
        if refreshed != store.state:
            store.update(lambda s: refresh_statuses(s, observation))
        # Without --replace: a re-run this apply submitted has ended, so what is left of the
        # request is its download, not another paid re-run.
        settings = self.ctx.settings.model_copy(update={"replace": ()})
        plan = compute_plan(desired, store.state, observation, settings)
        downloads = [i for i in plan.items if i.action is Action.DOWNLOAD]
        # The full runs whose smoke run ended well while waiting: the plan this apply carried
        # out showed them ("smoke first: ..., then N"), so the same command submits them and
        # waits for them too (docs/smoke.md). Not when a guard stops the plan.
        full_runs = [
            i
            for i in plan.items
            if i.action is Action.SUBMIT
            and i.smoke is not None
            and i.smoke.stage == "full"
            and not plan.errors
            and not self.cancel.is_set()
        ]
        if not downloads and not full_runs:
            return []
        sub = plan.model_copy(update={"items": (*downloads, *full_runs)})
        outcomes = applier.apply(sub, parallelism=self.ctx.settings.parallelism).outcomes
        if any(o.ok and o.item.smoke is not None for o in outcomes):
            outcomes += self._wait_and_download(
                applier, store, report, timeout, waited, waits, desired
            )
        return outcomes

    def exit_code(self, result: ApplyResult) -> int:
        """0 all done; 1 nothing applied; 3 partial; 4 the ``--wait`` ran out (cli.EXIT_CODES).

        Partial (``ApplyResult.exit_code``) includes a failure whose paid call reached the
        Platform, and a lockfile that could not be written at the end.
        """
        if result.failures or result.unsaved is not None:
            return result.exit_code
        if result.wait is not None and result.wait.timed_out:
            return 4
        return 0


def _address_of(path: str, benchmarks: str) -> str:
    prefix = benchmarks.rstrip("/") + "/"
    return path.removeprefix(prefix).removesuffix(".toml")


def _ci_url() -> str | None:
    server, repo, run = (
        os.environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    if server and repo and run:
        return f"{server}/{repo}/actions/runs/{run}"
    return None


def read_saved_plan(path: Path) -> Plan:
    """The plan saved at ``path`` by ``osmosis-plan --out``; a ``UsageError`` for anything
    else (the fuzz suite's saved-plan target: a clear error, never an internal one)."""
    try:
        # A regular file of bounded size (``reconciler.paths``): /dev/zero was read until
        # memory ran out, a FIFO blocked forever.
        return parse_saved_plan(read_named(path, what="saved plan").decode("utf-8"))
    except UnsafeInputError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise UsageError(
            f"{path}: cannot read the saved plan: {exc}",
            "create one with `osmosis-plan --out PLANFILE`",
        ) from exc
