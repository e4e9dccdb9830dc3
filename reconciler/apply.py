"""Orchestration: observe the world, carry a plan out, wait for runs, download outputs.

The ordering rule of every paid action (style rule 8): write the intent to the lockfile,
then call the Platform, then record the response. A crash between any two steps leaves a
lockfile that the next plan resolves without paying twice: an intent with no recorded run
is adopted when the Platform has a matching run, and only resubmitted when it has none.

This module receives the edges it drives (platform client, state store, download client)
as arguments; it never prints.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

from .crashpoints import crash_point
from .downloads import download_run, run_dir_name, scan_outputs
from .errors import (
    ConflictError,
    NotFoundError,
    OutcomeUnknownError,
    PlatformError,
    ReconcilerError,
)
from .lockfile import StateStore, put_run, rekey_run, retire_run
from .log import get_logger
from .model import (
    Action,
    DesiredRun,
    Downloads,
    Intent,
    LocalOutputs,
    LockState,
    Observation,
    ObservedRun,
    Plan,
    PlanItem,
    RecordedRun,
    RunResults,
    Settings,
    is_active,
    is_terminal,
)
from .plan import CLOCK_SKEW
from .platform import PlatformClient, RunSummary

Clock = Callable[[], datetime]
LIST_READ_AHEAD = 4
"""Run-list pages requested at a time: the list is most of a large plan's wall time."""
DOWNLOAD_WORKERS = 8
"""Concurrent file transfers of one apply, across all the runs it downloads."""


def utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# --------------------------------------------------------------------------- observe


def observe(
    client: PlatformClient,
    desired: Sequence[DesiredRun],
    state: LockState,
    *,
    platform: str,
    workspace: str,
    download_root: Path,
    repo_root: Path,
    head: str | None,
    now: datetime,
    verify_outputs: bool = True,
    listed: Sequence[RunSummary] | None = None,
    outputs: Mapping[str, LocalOutputs] | None = None,
) -> Observation:
    """Build the observed snapshot with as few requests as the plan allows.

    One paginated list gives every run and its status; catalog info is fetched once per
    distinct benchmark; secrets are listed once; run details (E5) only for runs that might
    have to be adopted, never one request per recorded run. ``listed`` is that list when
    the caller already fetched it, ``outputs`` the ``scan_recorded_outputs`` of ``state``
    when already scanned (the session overlaps both with reading the files).
    """
    if listed is None:
        listed = client.list_runs(ahead=LIST_READ_AHEAD)
    runs = {run.id: run.to_observed() for run in listed}

    names = sorted({d.benchmark for d in desired})
    benchmarks = {}
    for name in names:
        try:
            benchmarks[name] = client.get_benchmark(name).to_info()
        except NotFoundError:
            benchmarks[name] = None

    secrets: frozenset[str] | None = None
    needs_secrets = any(d.secret_names for d in desired) or any(
        b and b.required_secret_names for b in benchmarks.values()
    )
    if needs_secrets:
        try:
            secrets = frozenset(s.name for s in client.list_secrets())
        except PlatformError:
            secrets = None
    else:
        secrets = frozenset()

    runs = _fingerprint_candidates(client, runs, desired, state, benchmarks)

    if outputs is None:
        outputs = scan_recorded_outputs(state, repo_root, verify=verify_outputs)
    return Observation(
        platform=platform,
        workspace=workspace,
        observed_at=now,
        runs=runs,
        benchmarks=benchmarks,
        secrets=secrets,
        outputs=dict(outputs),
        head=head,
    )


def scan_recorded_outputs(
    state: LockState, repo_root: Path, *, verify: bool = True
) -> dict[str, LocalOutputs]:
    """What is on disk for every recorded run with downloads (see ``scan_outputs``)."""
    outputs: dict[str, LocalOutputs] = {}
    for address, entry in state.runs.items():
        if entry.downloads is not None:
            outputs[address] = scan_outputs(
                repo_root / entry.downloads.directory,
                entry.downloads.sha256,
                verify=verify,
            )
    return outputs


def _fingerprint_candidates(
    client: PlatformClient,
    runs: dict[str, ObservedRun],
    desired: Sequence[DesiredRun],
    state: LockState,
    benchmarks: Mapping[str, Any],
) -> dict[str, ObservedRun]:
    """Fetch details (E5) of the unrecorded runs that an address could have to adopt.

    Two kinds of candidates, each narrowed by what the run list already says so a busy
    workspace does not cost one request per run: for an address with no recorded run, an
    unrecorded run of the same benchmark with the same agent count; for a pending submit
    intent, every unrecorded run of its benchmark created since the intent (minus clock
    skew), since the plan must not resubmit while any of those is undecided.
    """
    known = {e.run_id for e in state.runs.values() if e.run_id}
    known.update(h.run_id for h in state.history if h.run_id)
    shapes: set[tuple[str, int]] = set()
    for d in desired:
        entry = state.runs.get(d.address)
        info = benchmarks.get(d.benchmark)
        if info is not None and (entry is None or entry.run_id is None or entry.intent):
            shapes.add((info.id, d.agent_count))
        elif info is not None and entry is not None and entry.spec_digest != d.spec_digest:
            # A changed config may match a run whose recording was lost after an apply.
            shapes.add((info.id, d.agent_count))
    windows: dict[str, datetime] = {}
    for entry in state.runs.values():
        intent = entry.intent
        if intent is not None and intent.op == "submit" and intent.benchmark_id:
            since = intent.started_at - CLOCK_SKEW
            windows[intent.benchmark_id] = min(since, windows.get(intent.benchmark_id, since))
    if not shapes and not windows:
        return runs
    updated = dict(runs)
    for run_id, run in runs.items():
        if run_id in known:
            continue
        by_shape = run.benchmark_id is not None and any(
            bid == run.benchmark_id and (run.agent_count is None or run.agent_count == n)
            for bid, n in shapes
        )
        # A listed run without a benchmark id could belong to any intent's benchmark: the
        # plan cannot rule it out, so its details are fetched too.
        since = (
            windows.get(run.benchmark_id)
            if run.benchmark_id is not None
            else min(windows.values(), default=None)
        )
        by_window = since is not None and (run.created_at is None or run.created_at >= since)
        if not (by_shape or by_window):
            continue
        try:
            detail = client.get_run(run_id)
        except NotFoundError:
            continue
        updated[run_id] = run.model_copy(update={"fingerprint": detail.fingerprint()})
    return updated


# --------------------------------------------------------------------------- state edits


def retire(state: LockState, address: str, reason: str, now: datetime) -> LockState:
    """Move the run recorded at ``address`` into history (newest first, capped)."""
    return retire_run(state, address, reason, ended_at=now)


def refresh_statuses(state: LockState, observation: Observation) -> LockState:
    """Copy observed statuses into the recorded entries that changed (stable lockfile)."""
    runs = dict(state.runs)
    changed = False
    for address, entry in state.runs.items():
        run = observation.runs.get(entry.run_id or "")
        if run is None or not run.status or run.status == entry.status:
            continue
        runs[address] = entry.model_copy(
            update={"status": run.status, "observed_at": observation.observed_at}
        )
        changed = True
    return state.model_copy(update={"runs": runs}) if changed else state


# --------------------------------------------------------------------------- apply


@dataclass(frozen=True)
class Outcome:
    """What happened to one plan item."""

    item: PlanItem
    ok: bool
    message: str
    run_id: str | None = None
    run_name: str | None = None
    status: str | None = None
    """The run's status as last seen by the action (``failed`` and ``stopped`` are shown)."""


@dataclass
class ApplyResult:
    outcomes: list[Outcome] = field(default_factory=list)
    cancelled: bool = False

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def succeeded(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok]


@dataclass
class Applier:
    """Carries out the items of a plan against one Platform and one state store."""

    client: PlatformClient
    store: StateStore
    http: httpx.Client
    repo_root: Path
    download_root: Path
    settings: Settings
    head: str | None = None
    clock: Clock = utcnow
    report: Callable[[Outcome], None] = lambda _outcome: None
    """Called with every outcome as it happens (from worker threads too)."""
    started: Callable[[PlanItem], None] = lambda _item: None
    """Called when an action starts (from worker threads too)."""
    cancel: threading.Event = field(default_factory=threading.Event)
    desired: Mapping[str, DesiredRun] = field(default_factory=dict)
    _files: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)
    """File transfers of every download of one ``apply`` call share this pool."""
    _download_dir: PurePosixPath | None = field(default=None, init=False, repr=False)

    def _recorded_directory(self, run_dir: Path) -> str:
        """A run directory as the lockfile records it: relative to the repository."""
        if self._download_dir is None:
            self._download_dir = PurePosixPath(_relative(self.download_root, self.repo_root))
        return (self._download_dir / run_dir.name).as_posix()

    def apply(self, plan: Plan, *, parallelism: int) -> ApplyResult:
        result = ApplyResult()
        # A blocked item is reported as failed, so that a merge whose config cannot run
        # fails its apply job visibly instead of passing with nothing done.
        for item in plan.items:
            if item.action is Action.BLOCKED:
                outcome = Outcome(item, False, "; ".join(item.details) or "cannot succeed")
                self.report(outcome)
                result.outcomes.append(outcome)
        items = [i for i in plan.items if i.action is not Action.BLOCKED]
        local = [i for i in items if i.action in (Action.MOVE, Action.FORGET, Action.ADOPT)]
        remote = [i for i in items if i.action in (Action.STOP, Action.REPLACE, Action.SUBMIT)]
        downloads = [i for i in items if i.action is Action.DOWNLOAD]

        # State-only actions first: a move or adoption must be recorded before any submit
        # of the same spec could be considered.
        if downloads:
            self._files = ThreadPoolExecutor(
                max_workers=DOWNLOAD_WORKERS, thread_name_prefix="osmosis-dl"
            )
        try:
            for item in local:
                result.outcomes.append(self._run(item))
            for batch in (remote, downloads):
                if self.cancel.is_set():
                    break
                result.outcomes.extend(self._parallel(batch, parallelism))
        finally:
            if self._files is not None:
                self._files.shutdown(wait=True, cancel_futures=True)
                self._files = None
            self.store.flush()
        result.cancelled = self.cancel.is_set()
        return result

    def _parallel(self, items: Sequence[PlanItem], parallelism: int) -> list[Outcome]:
        if not items:
            return []
        if parallelism <= 1 or len(items) == 1:
            out = []
            for item in items:
                if self.cancel.is_set():
                    break
                try:
                    out.append(self._run(item))
                except BaseException:
                    self.cancel.set()
                    raise
            return out
        outcomes = []
        with ThreadPoolExecutor(max_workers=parallelism) as pool:
            futures = [pool.submit(self._run_unless_cancelled, i) for i in items]
            try:
                for future in as_completed(futures):
                    outcome = future.result()
                    if outcome is not None:
                        outcomes.append(outcome)
            except BaseException:
                # ^C or SIGTERM: queued actions must not start while the pool drains; the
                # ones in flight finish and record their result before the lock is released.
                self.cancel.set()
                raise
        order = {id(i): n for n, i in enumerate(items)}
        return sorted(outcomes, key=lambda o: order[id(o.item)])

    def _run_unless_cancelled(self, item: PlanItem) -> Outcome | None:
        if self.cancel.is_set():
            return None
        return self._run(item)

    def _run(self, item: PlanItem) -> Outcome:
        log = get_logger(address=item.address, action=item.action.value)
        handler = {
            Action.SUBMIT: self._submit,
            Action.REPLACE: self._replace,
            Action.STOP: self._stop,
            Action.FORGET: self._forget,
            Action.DOWNLOAD: self._download,
            Action.ADOPT: self._adopt,
            Action.MOVE: self._move,
        }[item.action]
        self.started(item)
        try:
            outcome = handler(item)
        except OutcomeUnknownError as exc:
            log.warning("submit outcome unknown", error=exc.message)
            outcome = Outcome(
                item,
                False,
                f"{exc.message} The intent is kept: the next plan adopts the run if the "
                "Platform created it, and only resubmits when it did not.",
            )
        except ReconcilerError as exc:
            log.warning("action failed", error=exc.message)
            message = exc.message + (f" ({exc.hint})" if exc.hint else "")
            outcome = Outcome(item, False, message)
        else:
            log.info("action done", run_id=outcome.run_id)
        self.report(outcome)
        return outcome

    # -- paid actions --------------------------------------------------------

    def _submit(self, item: PlanItem) -> Outcome:
        spec = item.spec or {}
        now = self.clock()
        intent = Intent(
            op="submit",
            started_at=now,
            body_digest=item.after_digest or "",
            spec=spec,
            benchmark_id=item.benchmark_id,
        )
        reason = "rerun" if item.reason.value == "replace_requested" else "replaced"

        def write_intent(state: LockState) -> LockState:
            old = state.runs.get(item.address)
            if old is not None and old.run_id is not None:
                state = retire(state, item.address, reason, now)
            entry = RecordedRun(
                address=item.address,
                spec_digest=item.after_digest or "",
                spec=spec,
                benchmark_id=item.benchmark_id,
                intent=intent,
            )
            return put_run(state, entry)

        crash_point("submit.before_intent")
        self.store.update(write_intent)
        crash_point("submit.before_post")
        try:
            created = self.client.submit_run(spec)
        except OutcomeUnknownError:
            raise
        except ReconcilerError:
            # The Platform answered with a refusal: no run exists, so the intent goes.
            self.store.update(lambda s: _clear_failed_intent(s, item.address))
            raise
        crash_point("submit.after_post")
        desired = self.desired.get(item.address)

        def record(state: LockState) -> LockState:
            entry = RecordedRun(
                address=item.address,
                spec_digest=item.after_digest or "",
                spec=spec,
                run_id=created.id,
                run_name=created.name,
                status=created.status,
                observed_at=self.clock(),
                submitted_at=created.created_at or now,
                requested_by=(desired.requested_by if desired else item.requested_by),
                applied_at_commit=self.head,
                benchmark_id=item.benchmark_id,
                task_count=created.task_count,
                attempts=item.attempts or None,
                platform_url=created.platform_url,
            )
            return put_run(state, entry)

        self.store.update(record)
        return Outcome(item, True, "submitted", created.id, created.name, created.status)

    def _replace(self, item: PlanItem) -> Outcome:
        self._stop(item)
        return self._submit(item)

    def _stop(self, item: PlanItem) -> Outcome:
        run_id = item.run_id
        if run_id is None:
            return Outcome(item, True, "nothing to stop")
        now = self.clock()

        def write_intent(state: LockState) -> LockState:
            entry = state.runs.get(item.address)
            if entry is None:
                return state
            intent = Intent(op="stop", started_at=now, body_digest=entry.spec_digest, run_id=run_id)
            return put_run(state, entry.model_copy(update={"intent": intent}))

        self.store.update(write_intent)
        crash_point("stop.before_post")
        status = "stopped"
        try:
            self.client.stop_run(run_id)
        except (ConflictError, NotFoundError):
            # Already terminal (or gone): the goal of a stop is reached either way.
            try:
                status = self.client.get_run(run_id).summary.status or status
            except NotFoundError:
                status = "missing"

        def record(state: LockState) -> LockState:
            entry = state.runs.get(item.address)
            if entry is None:
                return state
            entry = entry.model_copy(
                update={"intent": None, "status": status, "observed_at": self.clock()}
            )
            state = put_run(state, entry)
            if item.action is Action.STOP:
                state = retire(state, item.address, "stopped", self.clock())
            return state

        self.store.update(record)
        return Outcome(item, True, status, run_id, item.run_name, status)

    # -- state-only actions --------------------------------------------------

    def _forget(self, item: PlanItem) -> Outcome:
        now = self.clock()
        self.store.update(lambda s: retire(s, item.address, "forgotten", now))
        return Outcome(item, True, "forgotten", item.run_id, item.run_name)

    def _move(self, item: PlanItem) -> Outcome:
        source = item.from_address or ""

        def move(state: LockState) -> LockState:
            if source not in state.runs or item.address in state.runs:
                return state
            return rekey_run(state, source, item.address, ended_at=self.clock())

        self.store.update(move)
        return Outcome(item, True, f"moved from {source}", item.run_id, item.run_name)

    def _adopt(self, item: PlanItem) -> Outcome:
        if item.run_id is None:
            return Outcome(item, False, "no run to adopt")
        detail = self.client.get_run(item.run_id)
        run = detail.summary
        desired = self.desired.get(item.address)
        # The adopted run is what was submitted then (item.spec), which may differ from the
        # config now: recording it as such lets the next plan show the change.
        spec = item.spec if item.spec else (desired.spec if desired else {})
        digest_ = item.after_digest or (desired.spec_digest if desired else "")

        def record(state: LockState) -> LockState:
            old = state.runs.get(item.address)
            if old is not None and old.run_id is not None and old.run_id != run.id:
                state = retire(state, item.address, "replaced", self.clock())
            entry = RecordedRun(
                address=item.address,
                spec_digest=digest_,
                spec=spec,
                run_id=run.id,
                run_name=run.name or None,
                status=run.status or None,
                observed_at=self.clock(),
                submitted_at=run.created_at,
                requested_by=desired.requested_by if desired else None,
                applied_at_commit=self.head,
                benchmark_id=run.benchmark_id or item.benchmark_id,
                task_count=item.task_count,
                attempts=item.attempts or None,
                platform_url=run.platform_url,
            )
            return put_run(state, entry)

        self.store.update(record)
        return Outcome(item, True, "adopted", run.id, run.name, run.status or None)

    # -- downloads -----------------------------------------------------------

    def _download(self, item: PlanItem) -> Outcome:
        entry = self.store.state.runs.get(item.address)
        if entry is None or entry.run_id is None:
            return Outcome(item, False, "no recorded run to download")
        run_id = entry.run_id
        types = tuple(item.download_types or self.settings.download_types)
        # An ended run's scores no longer change: fetch them once, beside its outputs, for
        # the plan's results table, while the files transfer. They are informational, so a
        # failed fetch never fails the download.
        terminal = is_terminal(entry.status or "")
        scores: Future[RunResults] | None = None
        if terminal and self._files is not None:
            scores = self._files.submit(lambda: self.client.get_run(run_id).to_results())
        try:
            result = download_run(
                self.client,
                self.http,
                run_id=run_id,
                run_name=entry.run_name,
                root=self.download_root,
                types=types,
                overwrite=item.reason.value == "results_changed",
                executor=self._files,
            )
        except BaseException:
            if scores is not None:
                scores.cancel()
            raise
        results = self._scores(scores, run_id, item.address, wanted=terminal)
        directory = self._recorded_directory(result.directory)
        downloads = Downloads(
            types=types,
            files=len(result.sha256),
            bytes=result.total_bytes,
            sha256=dict(sorted(result.sha256.items())),
            directory=directory,
            complete=result.complete and terminal,
        )
        update: dict[str, Any] = {"downloads": downloads}
        if not result.failures and results is not None:
            update["results"] = results

        def record(state: LockState) -> LockState:
            current = state.runs.get(item.address)
            if current is None or current.run_id != entry.run_id:
                return state
            return put_run(state, current.model_copy(update=update))

        # Not durable: a record lost to a crash costs a re-hash of files already on disk.
        self.store.update(record, durable=False)
        if result.failures:
            failed = "; ".join(f"{p}: {e}" for p, e in result.failures[:5])
            return Outcome(
                item,
                False,
                f"{len(result.failures)} file(s) failed: {failed}",
                entry.run_id,
                entry.run_name,
                entry.status,
            )
        return Outcome(
            item,
            True,
            f"{result.files_downloaded} file(s), {result.bytes_downloaded:,} bytes downloaded, "
            f"{result.files_skipped} up to date",
            entry.run_id,
            entry.run_name,
            entry.status,
        )

    def _scores(
        self, pending: Future[RunResults] | None, run_id: str, address: str, *, wanted: bool
    ) -> RunResults | None:
        """The run's results from E5 (fetched now unless ``pending`` already holds them)."""
        if not wanted:
            return None
        try:
            if pending is not None:
                return pending.result()
            return self.client.get_run(run_id).to_results()
        except ReconcilerError as exc:
            get_logger(address=address, run_id=run_id).warning(
                "run results not fetched", error=exc.message
            )
            return None


def _clear_failed_intent(state: LockState, address: str) -> LockState:
    entry = state.runs.get(address)
    if entry is None or entry.intent is None:
        return state
    if entry.run_id is None:
        return state.model_copy(
            update={"runs": {k: v for k, v in state.runs.items() if k != address}}
        )
    return put_run(state, entry.model_copy(update={"intent": None}))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


# --------------------------------------------------------------------------- wait


def wait_for_runs(
    client: PlatformClient,
    run_ids: Iterable[str],
    *,
    timeout: float,
    cancel: threading.Event,
    on_poll: Callable[[dict[str, str]], None] = lambda _s: None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """Poll the run list with backoff until every run is terminal or ``timeout`` passes.

    One paginated list per poll, whatever the number of runs. Returns run id -> status.
    """
    pending = set(run_ids)
    statuses: dict[str, str] = {}
    deadline = monotonic() + timeout
    delay = 1.0
    while pending and not cancel.is_set():
        listed = {
            r.id: r.status
            for r in client.list_runs(ahead=LIST_READ_AHEAD)
            if r.id in pending or r.id in statuses
        }
        statuses.update(listed)
        on_poll(dict(statuses))
        pending = {r for r in pending if is_active(statuses.get(r, "pending"))}
        if not pending or monotonic() >= deadline:
            break
        cancel.wait(min(delay, max(0.0, deadline - monotonic())))
        delay = min(delay * 1.5, 15.0)
    return statuses


def run_dir_for(entry: RecordedRun) -> str:
    return run_dir_name(entry.run_name, entry.run_id or "")
