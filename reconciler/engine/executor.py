"""The executor: carries out the items of a plan, one action each (``Applier``).

The apply operation (``engine/apply.py``) hands it the plan it checked and approved; this
module performs each action against the Platform and records it in the state store.

The ordering rule of every paid action (style rule 8): write the intent to the lockfile,
then call the Platform, then record the response. A crash between any two steps leaves a
lockfile that the next plan resolves without paying twice: an intent with no recorded run
is adopted when the Platform has a matching run, and only resubmitted when it has none.

This module receives the edges it drives (platform client, state store, download client)
as arguments; it never prints.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

from reconciler.crashpoints import crash_point
from reconciler.engine.apply_result import ApplyResult
from reconciler.engine.intents import (
    clear_failed_intent,
    leaving_reason,
    retire,
    submit_intent,
    with_submit_intent,
)
from reconciler.engine.observe import find_submitted_run
from reconciler.engine.report import Outcome
from reconciler.errors import (
    AuthError,
    ConflictError,
    FeatureGateError,
    NotFoundError,
    OutcomeUnknownError,
    PlatformError,
    RateLimitedError,
    ReconcilerError,
    ScopeError,
    StateError,
)
from reconciler.escaping import escape_text
from reconciler.log import get_logger
from reconciler.model import (
    HASHED_OUTPUTS,
    Action,
    DesiredRun,
    Downloads,
    Intent,
    LockState,
    Plan,
    PlanItem,
    Reason,
    RecordedRun,
    Rejection,
    RunResults,
    RunStatus,
    Settings,
    effective_pass_threshold,
)
from reconciler.outputs.downloads import (
    DownloadInterrupted,
    DownloadResult,
    download_run,
    run_dir_name,
)
from reconciler.outputs.pace import RunGate, TransferLimit
from reconciler.plan.smoke import SMOKE
from reconciler.platform import PlatformClient, RunSummary, SubmittedRun
from reconciler.state.lockfile import put_run, rekey_run
from reconciler.state.store import StateStore

Clock = Callable[[], datetime]
DOWNLOAD_WORKERS = 8
"""File transfers in flight per run being downloaded at once (``parallelism``): a run's
files are fetched side by side, and so are the runs, up to ``MAX_DOWNLOAD_WORKERS``."""
MAX_DOWNLOAD_WORKERS = 32
"""Concurrent file transfers of one apply, across all the runs it downloads."""
DOWNLOAD_RUNS_PER_SLOT = 2
"""Runs in progress per ``parallelism`` slot when downloading: ``parallelism`` of them make
their Platform requests (manifest, download URLs, details) while as many again wait for
their files, so the round trips of the next runs overlap the transfers of the last."""
REFUSAL_STATUSES = frozenset({400, 404, 409, 422})
"""Answers to a submit that mean "not this body" (remembered as a ``Rejection``); scope,
feature-gate and auth errors, rate limits, outages and deployment conflicts are not."""
MAX_SUBMIT_RETRY_AFTER = 60.0
"""Longest wait (s) after a 429 to a submit, whatever ``Retry-After`` asks."""


def utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# --------------------------------------------------------------------------- apply


def _one_line(details: Sequence[str]) -> str:
    """A blocked item's details on one line: "; " between them, except after a detail that
    introduces the lines under it (ending in ":", such as a smoke run's last error lines)."""
    parts: list[str] = []
    for detail in details:
        if parts and parts[-1].endswith(":"):
            parts[-1] += " " + detail.strip()
        else:
            parts.append(detail.strip())
    return "; ".join(parts)


@dataclass
class Applier:
    """Carries out the items of a plan against one Platform and one state store."""

    client: PlatformClient
    store: StateStore
    http: httpx.Client | Callable[[], httpx.Client]
    """The client for presigned GETs, or what returns it (asked for by each download once
    its manifest is read)."""
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
    _transfers: TransferLimit | None = field(default=None, init=False, repr=False)
    """How many of the pool's file transfers run at once (``reconciler.outputs.pace``)."""
    _gate: RunGate | None = field(default=None, init=False, repr=False)
    """``parallelism`` slots for the Platform requests of the runs being downloaded."""
    _download_dir: PurePosixPath | None = field(default=None, init=False, repr=False)
    _claims: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _claimed: set[str] = field(default_factory=set, init=False, repr=False)
    """Runs found after a 429 and recorded by a worker: no other worker may take them."""
    _reached: set[int] = field(default_factory=set, init=False, repr=False)
    """``id`` of the items whose paid call went through (see ``Outcome.reached_platform``)."""
    _reached_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _recorded_directory(self, run_dir: Path) -> str:
        """A run directory as the lockfile records it: relative to the repository."""
        if self._download_dir is None:
            self._download_dir = PurePosixPath(_relative(self.download_root, self.repo_root))
        return (self._download_dir / run_dir.name).as_posix()

    def apply(self, plan: Plan, *, parallelism: int) -> ApplyResult:
        result = ApplyResult()
        # A blocked item is reported, not attempted: it fails the plan that first shows it
        # (exit 4 in the pull request), never the apply by itself (issue 34: a standing block
        # turned every apply red). A saved item the recomputed plan refuses is a failure.
        for item in plan.items:
            if item.action is Action.BLOCKED:
                refused = item.blocked is not None and item.blocked.refused
                message = _one_line(item.details) or "cannot succeed"
                outcome = Outcome(item, False, message, blocked=not refused)
                self.report(outcome)
                result.outcomes.append(outcome)
        items = [i for i in plan.items if i.action is not Action.BLOCKED]
        local = [
            i
            for i in items
            if i.action in (Action.MOVE, Action.FORGET, Action.ADOPT, Action.UNKNOWN)
        ]
        remote = [
            i
            for i in items
            if i.action in (Action.STOP, Action.REPLACE, Action.SUBMIT, Action.RETRY)
        ]
        downloads = [i for i in items if i.action is Action.DOWNLOAD]

        # Runs making their Platform requests at once (the gate's slots) when the Platform is
        # far; as many again wait for their files (DOWNLOAD_RUNS_PER_SLOT).
        runs_at_once = max(1, min(parallelism, len(downloads)))
        if downloads:
            # One pool of file transfers for the whole apply, sized by how many runs download
            # at once: with 8 files in flight in all, 8 runs in parallel waited on each
            # other's files and gained 1.7x over one at a time at 50 ms latency.
            transfers = min(DOWNLOAD_WORKERS * runs_at_once, MAX_DOWNLOAD_WORKERS)
            # At most ``transfers`` at once, fewer while the store answers at once (pace);
            # the run details (E5) are fetched on this pool too, beside the transfers.
            self._files = ThreadPoolExecutor(
                max_workers=transfers + runs_at_once, thread_name_prefix="osmosis-dl"
            )
            self._transfers = TransferLimit(DOWNLOAD_WORKERS, transfers)
            # Parallelism 1 too: one run at a time makes its requests while the last one's
            # files transfer (200 runs on loopback: 2.05 s against 2.26 s one after the other).
            # Past 1, only while the Platform is far enough for its round trips to be the
            # apply's time (pace.RunGate).
            self._gate = RunGate(
                1, runs_at_once, lambda: self.client.round_trip_s, waiting=DOWNLOAD_RUNS_PER_SLOT
            )
        try:
            # State-only actions first: a move or adoption must be recorded before any submit
            # of the same spec could be considered.
            for item in local:
                result.outcomes.append(self._run(item))
            self._record_watermark(plan, result)
            for batch, workers in (
                (remote, parallelism),
                (downloads, runs_at_once * DOWNLOAD_RUNS_PER_SLOT),
            ):
                if self.cancel.is_set():
                    break
                result.outcomes.extend(self._parallel(batch, workers))
        finally:
            self._gate = None
            self._transfers = None
            if self._files is not None:
                self._files.shutdown(wait=True, cancel_futures=True)
                self._files = None
            try:
                self.store.flush()
            except StateError as exc:
                # A full disk must not turn a partial apply into "nothing applied".
                result.unsaved = exc.message
        result.cancelled = self.cancel.is_set()
        return result

    def _record_watermark(self, plan: Plan, result: ApplyResult) -> None:
        """Record how far back the run list was read for this plan, so the next plan reads
        only newer runs. Not when an adoption failed: its run must stay in view."""
        mark = plan.observed_until
        if (
            mark is None
            or self.store.state.observed_until == mark
            or any(o.item.action is Action.ADOPT and not o.ok for o in result.outcomes)
        ):
            return  # (every store update bumps the serial: none for nothing)

        def record(state: LockState) -> LockState:
            if state.observed_until == mark:
                return state
            return state.model_copy(update={"observed_until": mark})

        self.store.update(record, durable=False)

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
        gate = self._gate if item.action is Action.DOWNLOAD else None
        with gate.run if gate is not None else nullcontext():
            if self.cancel.is_set():
                return None
            return self._run(item)

    def _run(self, item: PlanItem) -> Outcome:
        log = get_logger(address=item.address, action=item.action.value)
        handler = {
            Action.SUBMIT: self._submit,
            Action.RETRY: self._submit,
            Action.REPLACE: self._replace,
            Action.STOP: self._stop,
            Action.FORGET: self._forget,
            Action.DOWNLOAD: self._download,
            Action.ADOPT: self._adopt,
            Action.MOVE: self._move,
            Action.UNKNOWN: self._record_unknown,
        }[item.action]
        self.started(item)
        try:
            outcome = handler(item)
        except OutcomeUnknownError as exc:
            log.warning("submit outcome unknown", error=exc.message)
            outcome = Outcome(
                item,
                False,
                f"{exc.message} The intent is kept: a later plan adopts the run if the "
                "Platform created it, and resubmits only after run lists kept showing none "
                "over a quiet period (or `osmosis-state resolve`).",
            )
        except ReconcilerError as exc:
            log.warning("action failed", error=exc.message)
            message = exc.message + (f" ({exc.hint})" if exc.hint else "")
            outcome = Outcome(item, False, message)
        else:
            log.info("action done", run_id=outcome.run_id)
        if not outcome.ok and not outcome.reached_platform:
            with self._reached_lock:
                reached = id(item) in self._reached
            if reached:  # e.g. a replace whose stop went through before the submit failed
                outcome = replace(outcome, reached_platform=True)
        self.report(outcome)
        return outcome

    def _reached_platform(self, item: PlanItem) -> None:
        with self._reached_lock:
            self._reached.add(id(item))

    # -- paid actions --------------------------------------------------------

    def _submit(self, item: PlanItem) -> Outcome:
        spec = item.spec or {}
        now = self.clock()
        intent = submit_intent(item, spec, now)
        reason = leaving_reason(item)
        head = self.head

        def write_intent(state: LockState) -> LockState:
            return with_submit_intent(state, item, intent, reason, head)

        crash_point("submit.before_intent")
        try:
            self.store.update(write_intent)
        except StateError as exc:
            raise StateError(f"{exc.message}; nothing was submitted", exc.hint) from None
        crash_point("submit.before_post")
        try:
            created = self._post_submit(item, spec, now)
        except OutcomeUnknownError:
            raise
        except ReconcilerError as exc:
            self._record_refusal(item, exc, now)
            raise
        crash_point("submit.after_post")
        desired = self.desired.get(item.address)
        attempts, planned, message = _attempts_of(item, created.task_count)

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
                attempts=attempts,
                planned_attempts=planned,
                platform_url=created.platform_url,
                stage=intent.stage,
                retry_of=intent.retry_of,
                retry_agents=intent.retry_agents,
                pass_threshold=_pass_threshold(item, spec),
            )
            old = state.runs.get(item.address)
            if intent.retry_of and old is not None and old.run_id not in (None, created.id):
                state = retire(state, item.address, reason, now)
            state = put_run(state, entry)
            if item.address in state.rejections:
                rejections = {k: v for k, v in state.rejections.items() if k != item.address}
                state = state.model_copy(update={"rejections": rejections})
            return state

        self._reached_platform(item)
        try:
            self.store.update(record)
        except StateError as exc:
            # The run exists and is paid for; only its record is missing. The intent is on
            # disk, so the next plan adopts the run instead of paying again.
            return Outcome(
                item,
                False,
                f"the run was created ({created.name or created.id}) but could not be recorded: "
                f"{exc.message}. Its intent is in the lockfile, so the next apply adopts it; "
                "do not resubmit by hand",
                created.id,
                created.name,
                created.status,
                reached_platform=True,
            )
        if planned is not None:
            get_logger(address=item.address).warning("task count differs", message=message)
        return Outcome(item, True, message, created.id, created.name, created.status)

    def _record_refusal(self, item: PlanItem, exc: ReconcilerError, now: datetime) -> None:
        """The Platform answered a submit with a refusal: no run exists, so the intent goes,
        and a refusal of this body is remembered so no later apply POSTs it again."""
        rejection = self._rejection(item, exc, now)

        def refused(state: LockState) -> LockState:
            state = clear_failed_intent(state, item.address)
            if rejection is None:
                return state
            return state.model_copy(
                update={"rejections": {**state.rejections, item.address: rejection}}
            )

        self.store.update(refused)

    def _rejection(self, item: PlanItem, exc: ReconcilerError, now: datetime) -> Rejection | None:
        """The refusal to remember, for the errors that say the Platform will not take this
        body (not for an outage, a rate limit or an expired token)."""
        if (
            not isinstance(exc, PlatformError)
            or isinstance(exc, ScopeError | FeatureGateError | AuthError)
            or exc.status_code not in REFUSAL_STATUSES
            or exc.code == "deployment_conflict"
            or item.context is None
        ):
            return None
        lines = [line.strip() for line in exc.message.splitlines() if line.strip()]
        issues = tuple(line[2:] if line.startswith("- ") else line for line in lines[1:])
        return Rejection(
            spec_digest=item.after_digest or "",
            context=item.context,
            message=lines[0] if lines else type(exc).__name__,
            issues=issues[:50],
            status=getattr(exc, "status_code", None),
            code=getattr(exc, "code", None),
            rejected_at=now,
            at_commit=self.head,
        )

    def _post_submit(self, item: PlanItem, spec: dict[str, Any], started: datetime) -> SubmittedRun:
        """POST the submit once. A 429 can come after the run was committed (a limiter
        behind the handler), so it is an unknown outcome like a dropped answer: the run is
        looked for once (after ``Retry-After``), and when the list does not show it the
        submit is never sent again by this apply (the intent stays; see ``plan.intents``)."""
        try:
            return self.client.submit_run(spec)
        except RateLimitedError as exc:
            delay = min(exc.retry_after or 2.0, MAX_SUBMIT_RETRY_AFTER)
            get_logger(address=item.address).info("submit rate limited", look_in=delay)
            if self.cancel.wait(delay):
                raise self._unknown_after_429(item) from None
            found = self._find_own_run(item, spec, started)
            if found is None:
                raise self._unknown_after_429(item) from None
            return SubmittedRun(
                id=found.id,
                name=found.name,
                status=found.status or "pending",
                created_at=found.created_at,
                platform_url=found.platform_url,
            )

    def _find_own_run(
        self, item: PlanItem, spec: dict[str, Any], started: datetime
    ) -> RunSummary | None:
        state = self.store.state
        with self._claims:
            exclude = {e.run_id for e in state.runs.values() if e.run_id}
            exclude.update(h.run_id for h in state.history if h.run_id)
            exclude.update(self._claimed)
            found = find_submitted_run(
                self.client, spec, item.benchmark_id, since=started, exclude=exclude
            )
            if found is not None:
                self._claimed.add(found.id)
            return found

    @staticmethod
    def _unknown_after_429(item: PlanItem) -> OutcomeUnknownError:
        return OutcomeUnknownError(
            f"The Platform answered 429 (rate limited) to the submit of {item.address}, and "
            "its run list does not show a run of it yet; a run may have been created before "
            "that answer, so it is not sent again now.",
            "run osmosis-plan: it adopts the run once the Platform lists it, and shows the "
            "address as an unknown outcome (?) until then",
        )

    def _replace(self, item: PlanItem) -> Outcome:
        stopped = self._stop(item)
        outcome = self._submit(item)
        if item.run_id is None:
            return outcome
        # The line must name the run it stopped, not only the one it started.
        old = item.run_name or item.run_id
        if item.run_name and item.run_name != item.run_id:
            old = f"{item.run_name} ({item.run_id})"
        return replace(outcome, message=f"{stopped.message} {old}; {outcome.message}")

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
        self._reached_platform(item)

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

    def _record_unknown(self, item: PlanItem) -> Outcome:
        """A submit whose outcome is still unknown: record that this apply's run list, read
        back to the submit, showed no run of it (evidence for the quiet period); the
        Platform is not called."""
        listed = item.listed_at
        first = "; ".join(item.details[:2])

        def record(state: LockState) -> LockState:
            entry = state.runs.get(item.address)
            if entry is None or entry.intent is None or entry.intent.op != "submit":
                return state
            intent = entry.intent
            known = intent.listings or ()
            if listed is None or listed in known or listed < intent.started_at:
                return state
            listings = tuple(sorted((*known, listed)))
            return put_run(
                state,
                entry.model_copy(
                    update={"intent": intent.model_copy(update={"listings": listings})}
                ),
            )

        self.store.update(record)
        return Outcome(item, True, f"outcome still unknown: {first}")

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
            source = item.from_address
            if source and source in state.runs and item.address not in state.runs:
                # The config moved while the submit's outcome was pending: the entry that
                # holds the intent moves with it, then takes the run.
                state = rekey_run(state, source, item.address, ended_at=self.clock())
            old = state.runs.get(item.address)
            # The run of a submit whose answer was lost was applied at that submit's commit:
            # a re-run request committed since is still pending (issue 34: an adoption
            # recorded today's commit and consumed requests nobody carried out).
            lost = old is not None and old.intent is not None and old.intent.op == "submit"
            applied = old.applied_at_commit if lost and old and old.applied_at_commit else self.head
            if old is not None and old.run_id is not None and old.run_id != run.id:
                why = SMOKE if old.stage == SMOKE else "replaced"
                if item.retry is not None:
                    why = "retried"
                state = retire(state, item.address, why, self.clock())
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
                applied_at_commit=applied,
                benchmark_id=run.benchmark_id or item.benchmark_id,
                task_count=item.task_count,
                attempts=item.attempts or None,
                platform_url=run.platform_url,
                stage=SMOKE if item.smoke is not None and item.smoke.stage == SMOKE else None,
                retry_of=item.retry.retry_of if item.retry is not None else None,
                retry_agents=item.retry.agents if item.retry is not None else None,
                pass_threshold=_pass_threshold(item, spec),
            )
            return put_run(state, entry)

        self.store.update(record)
        return Outcome(item, True, "adopted", run.id, run.name, run.status or None)

    # -- downloads -----------------------------------------------------------

    def _download(self, item: PlanItem) -> Outcome:
        entry = self.store.state.runs.get(item.address)
        if item.run_id is not None and (entry is None or entry.run_id != item.run_id):
            # The run left its address (this apply replaced or forgot it, or an earlier one
            # did): its outputs are still fetched, and recorded in its history entry.
            return self._download_history(item, item.run_id)
        if entry is None or entry.run_id is None:
            return Outcome(item, False, "no recorded run to download")
        run_id = entry.run_id
        types = tuple(item.download_types or self.settings.download_types)
        # An ended run's scores never change: fetched once (a download again keeps them),
        # beside its outputs, for the results table; a failed fetch never fails a download.
        terminal = RunStatus.of(entry.status).is_terminal
        ask_scores = terminal and entry.results is None
        fetching: list[Future[RunResults]] = []

        def fetch_scores() -> None:  # once the run holds its gate slot, beside the manifest
            if ask_scores and self._files is not None:
                fetching.append(
                    self._files.submit(lambda: self.client.get_run(run_id).to_results())
                )

        try:
            result = download_run(
                self.client,
                self.http,
                run_id=run_id,
                run_name=entry.run_name,
                root=self.download_root,
                types=types,
                # A running run's files change without changing size: a snapshot is always
                # fetched again (the page's --overwrite); changed files likewise.
                overwrite=item.reason is Reason.RESULTS_CHANGED or not terminal,
                executor=self._files,
                repo_root=self.repo_root,
                gate=self._slot(fetch_scores),
                limit=self._transfers,
            )
        except DownloadInterrupted as exc:
            # SIGTERM mid-run: the files that arrived are recorded before the apply ends.
            for scores in fetching:
                scores.cancel()
            self._record_download(item, entry, exc.result, types, None, terminal)
            raise
        except BaseException:
            for scores in fetching:
                scores.cancel()
            raise
        results = self._scores(
            fetching[0] if fetching else None, run_id, item.address, wanted=ask_scores
        )
        self._record_download(item, entry, result, types, results, terminal)
        directory = self._recorded_directory(result.directory)
        if result.failures:
            failed = "; ".join(f"{escape_text(p)}: {e}" for p, e in result.failures[:5])
            return Outcome(
                item,
                False,
                f"{len(result.failures)} file(s) failed: {failed}",
                entry.run_id,
                entry.run_name,
                entry.status,
                directory=directory,
            )
        return Outcome(
            item,
            True,
            f"{result.files_downloaded} file(s), {result.bytes_downloaded:,} bytes downloaded, "
            f"{result.files_skipped} up to date, in {escape_text(directory)}/",
            entry.run_id,
            entry.run_name,
            entry.status,
            directory=directory,
        )

    @contextmanager
    def _slot(self, start: Callable[[], None] = lambda: None) -> Iterator[None]:
        """Hold one slot of the download gate (when there is one), then call ``start``."""
        if self._gate is None:
            start()
            yield
            return
        with self._gate.requests:
            start()
            yield

    def _download_history(self, item: PlanItem, run_id: str) -> Outcome:
        old = next(
            (
                h
                for h in self.store.state.history
                if h.run_id == run_id and h.address == item.address
            ),
            None,
        )
        if old is None:
            return Outcome(item, False, f"run {run_id} is not recorded at {item.address}")
        types = tuple(item.download_types or self.settings.download_types)
        result = download_run(
            self.client,
            self.http,
            run_id=run_id,
            run_name=old.run_name,
            root=self.download_root,
            types=types,
            overwrite=item.reason.value == "results_changed",
            executor=self._files,
            repo_root=self.repo_root,
            gate=self._slot(),
            limit=self._transfers,
        )
        done = result.complete and not result.failures
        results = self._scores(None, run_id, item.address, wanted=done and old.results is None)

        def record(state: LockState) -> LockState:
            history = []
            for entry in state.history:
                if entry.run_id == run_id and entry.address == item.address:
                    update: dict[str, Any] = {"outputs_pending": None if done else True}
                    if results is not None:
                        update["results"] = results
                    entry = entry.model_copy(update=update)
                history.append(entry)
            return state.model_copy(update={"history": tuple(history)})

        self.store.update(record)
        directory = self._recorded_directory(result.directory)
        if result.failures:
            failed = "; ".join(f"{escape_text(p)}: {e}" for p, e in result.failures[:5])
            message = f"{len(result.failures)} file(s) failed: {failed}"
            return Outcome(
                item, False, message, run_id, old.run_name, old.status, directory=directory
            )
        return Outcome(
            item,
            True,
            f"{result.files_downloaded} file(s), {result.bytes_downloaded:,} bytes downloaded, "
            f"{result.files_skipped} up to date, in {escape_text(directory)}/ (an earlier run, "
            "kept in the history)",
            run_id,
            old.run_name,
            old.status,
            directory=directory,
        )

    def _record_download(
        self,
        item: PlanItem,
        entry: RecordedRun,
        result: DownloadResult,
        types: tuple[str, ...],
        results: RunResults | None,
        terminal: bool,
    ) -> None:
        directory = self._recorded_directory(result.directory)
        hashed = {p: h for p, h in sorted(result.sha256.items()) if p in HASHED_OUTPUTS}
        others = sorted((p, h) for p, h in result.sha256.items() if p not in HASHED_OUTPUTS)
        downloads = Downloads(
            types=types,
            files=len(result.sha256),
            bytes=result.total_bytes,
            sha256=hashed,
            others=len(others) or None,
            others_sha256=hashlib.sha256(
                "".join(f"{p} {h}\n" for p, h in others).encode("utf-8")
            ).hexdigest()
            if others
            else None,
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


def _pass_threshold(item: PlanItem, spec: Mapping[str, Any]) -> float | None:
    """The pass threshold recorded with the run ``item`` submits or adopts: the config's,
    else the catalog's the plan saw (``RecordedRun.pass_threshold``)."""
    return effective_pass_threshold(spec, item.benchmark.pass_threshold if item.benchmark else None)


def _attempts_of(item: PlanItem, task_count: int | None) -> tuple[int | None, int | None, str]:
    """(attempts the Platform will schedule, the plan's figure when it differs, the outcome
    message): the plan promised ``item.task_count`` tasks; the submit reply says how many
    the Platform selected (a difference is said and recorded, never silent)."""
    planned = item.attempts or None
    if task_count is None or not item.task_count or planned is None:
        return planned, None, "submitted"
    per_task = planned // item.task_count
    actual = task_count * per_task
    if task_count == item.task_count:
        return actual, None, "submitted"
    return (
        actual,
        planned,
        f"submitted; warning: the Platform selected {task_count:,} task(s), the plan counted "
        f"{item.task_count:,}: {actual:,} attempts instead of {planned:,}",
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def run_dir_for(entry: RecordedRun) -> str:
    return run_dir_name(entry.run_name, entry.run_id or "")
