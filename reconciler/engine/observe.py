"""Observation: what the Platform and the local disk say now, as one ``Observation``.

The plan is its first user (``osmosis-plan`` observes, then plans); apply re-observes under
its lock. A plan's cost must not grow with the workspace's history: a shared workspace holds
months of runs made by hand and by other repositories, none of which this repository needs
to read again. So a converged plan reads:

* the newest runs, page by page, only until it reaches the lockfile's watermark
  (``LockState.observed_until``, minus ``CLOCK_SKEW``): new runs can resolve a pending
  intent, be adopted, or be a duplicate payment; older ones were seen by an earlier plan;
* each recorded run that can still change (not ended) and was not among them, by one direct
  read (E5), or the whole list when that is fewer requests;
* the catalog entries the configs name, and the secret names once.

Recorded ended runs are not read at all: an ended run never changes. The list's order is
"not determinable" (platform-api.md §3 E4), so the walk checks, page by page, that
``created_at`` never increases; where it does, it lists every run instead and says so once.
``--refresh=full`` (the scheduled drift check) always lists every run.

A recorded run is declared missing only when a direct read answers 404: a list that omits a
run proves nothing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from reconciler.engine.context import DOWNLOAD_ROOT
from reconciler.errors import NotFoundError, PlatformError
from reconciler.model import (
    BenchmarkInfo,
    BenchmarkRef,
    DesiredRun,
    ErroredAttempts,
    LocalOutputs,
    LockState,
    Observation,
    ObservedRun,
    RecordedRun,
    RetriedResult,
    RunStatus,
    TaskCounts,
    canonical_digest,
    creator_digest,
    glob_match,
    selection_digest,
    spec_fingerprint,
)
from reconciler.outputs.kept import read_kept_outcomes
from reconciler.outputs.scan import scan_outputs
from reconciler.plan import CLOCK_SKEW
from reconciler.plan.draft import recorded_digest
from reconciler.platform import PlatformClient, RunSummary
from reconciler.platform.client import PAGE_LIMIT
from reconciler.results.data import RunOutcomes
from reconciler.results.runs import accepted_run, address_runs, comparable_runs

LIST_READ_AHEAD = 4
"""Run-list pages requested at a time when every run is listed."""
DIRECT_READS_MIN = 3
"""Recorded runs read one by one (E5) at most this many, or one per page the full list would
still cost, whichever is more; beyond it, listing every run is fewer requests."""
DUPLICATE_DETAILS_MAX = 50
"""Details (E5) fetched per plan to compare recent unrecorded runs with configs that already
have their run (possible duplicate payments); newest first."""


@dataclass
class RunWalk:
    """The run list (E4) read newest first, as far as needed and no further.

    ``runs`` keeps every run seen, once, as the plan needs it (``ObservedRun``, a slots
    dataclass): each page is reduced as it arrives, so the list is never held as models
    (20,000 runs: ~3 MB instead of ~30). ``ordered`` stays True while every page continued
    the order the walk relies on (``created_at`` non-increasing); ``complete`` once the end
    of the list was read.
    """

    client: PlatformClient
    runs: dict[str, ObservedRun] = field(default_factory=dict)
    total: int | None = None
    pages: int = 0
    complete: bool = False
    ordered: bool = True
    disorder: str | None = None
    """Why the order could not be relied on, for the one note the plan shows."""
    oldest: datetime | None = None
    """The oldest ``created_at`` of the ordered prefix read so far."""
    newest: datetime | None = None
    _next: int | None = 0

    def read_page(self) -> None:
        """Read the next page (the first one when none was read)."""
        if self.complete or self._next is None:
            self.complete = True
            return
        page = self.client.run_page(self._next)
        self.pages += 1
        if self.total is None:
            self.total = page.total_count
        for summary in page.runs:
            if summary.id in self.runs:
                continue  # runs created meanwhile shift the offsets: seen on two pages
            run = self.runs[summary.id] = summary.to_observed()
            self._check_order(run)
        self._next = page.next_offset
        if self._next is None:
            self.complete = True

    def _check_order(self, run: ObservedRun) -> None:
        created = run.created_at
        if created is not None and (self.newest is None or created > self.newest):
            self.newest = created
        if not self.ordered:
            return
        if created is None:
            self.ordered = False
            self.disorder = f"run {run.name or run.id} has no created_at"
        elif self.oldest is not None and created > self.oldest:
            self.ordered = False
            self.disorder = (
                f"run {run.name or run.id} (created {created.isoformat()}) comes after a run "
                f"created {self.oldest.isoformat()}"
            )
        else:
            self.oldest = created

    def until(self, since: datetime) -> None:
        """Read pages until every run created at or after ``since - CLOCK_SKEW`` was seen
        (or the order broke, or the list ended)."""
        horizon = since - CLOCK_SKEW
        if self.pages == 0:
            self.read_page()
        while not self.complete and self.ordered and self.oldest is not None:
            if self.oldest < horizon:
                return
            self.read_page()

    def all(self) -> None:
        """Read every remaining page (several at a time)."""
        if self.pages == 0:
            self.read_page()
        if self.complete:
            return
        pages = self.client.iter_run_pages(ahead=LIST_READ_AHEAD, start=self._next or 0)
        for page in pages:
            self.pages += 1
            for summary in page:
                if summary.id in self.runs:
                    continue
                run = self.runs[summary.id] = summary.to_observed()
                if run.created_at is not None and (
                    self.newest is None or run.created_at > self.newest
                ):
                    self.newest = run.created_at
        self.complete = True
        self._next = None

    @property
    def remaining_pages(self) -> int:
        """Pages a full listing would still cost (an estimate from ``total_count``)."""
        if self.complete:
            return 0
        if self.total is None:
            return 1
        return max(1, math.ceil((self.total - len(self.runs)) / PAGE_LIMIT))

    @property
    def watermark(self) -> datetime | None:
        """The next ``observed_until``: the newest run seen, when the walk can vouch for
        every run up to it (an ordered walk, or a complete list)."""
        if (self.complete or self.ordered) and self.newest is not None:
            # Whole seconds, as the lockfile records it (earlier is always safe).
            return self.newest.replace(microsecond=0)
        return None


def listing_horizon(state: LockState) -> datetime | None:
    """How far back the run list must be read for ``state`` (None: every run).

    The lockfile's watermark, moved back to cover the window of every pending submit intent
    (its run may have been created after the watermark was taken).
    """
    since = state.observed_until
    if since is None:
        return None
    for entry in state.runs.values():
        intent = entry.intent
        if intent is not None and intent.op == "submit":
            since = min(since, intent.started_at)
    return since


def _who_submits(client: PlatformClient, state: LockState) -> str | None:
    """The token's own user (its ``creator_digest``), when a submit's outcome is pending and
    the Platform says; None otherwise (the plan then adopts by the body alone, as before)."""
    if not any(e.intent and e.intent.op == "submit" for e in state.runs.values()):
        return None
    try:
        user = client.verify().get("user")
    except PlatformError:
        return None
    email = user.get("email") if isinstance(user, dict) else None
    return creator_digest(email if isinstance(email, str) else None)


def observe(
    client: PlatformClient,
    desired: Sequence[DesiredRun],
    state: LockState,
    *,
    platform: str,
    workspace: str,
    repo_root: Path,
    head: str | None,
    now: datetime,
    full: bool = False,
    want_unmanaged: bool = False,
    verify_outputs: bool = True,
    walk: RunWalk | None = None,
    outputs: Mapping[str, LocalOutputs] | None = None,
    download_root: Path | None = None,
    rerun: Iterable[str] = (),
    retry_errored: Sequence[str] = (),
) -> Observation:
    """Build the observed snapshot with as few requests as the plan allows.

    ``full`` lists every run (``--refresh=full``); ``want_unmanaged`` does too and keeps the
    runs the lockfile does not know. ``walk`` is a ``RunWalk`` the caller already started,
    ``outputs`` the ``scan_recorded_outputs`` of ``state`` when already scanned (``engine.load``
    overlaps both with reading the files). ``download_root`` is unused (kept for callers).
    """
    del download_root
    walk = walk or RunWalk(client)
    notes: list[str] = []
    since = None if (full or want_unmanaged) else listing_horizon(state)
    if since is None:
        walk.all()
    else:
        walk.until(since)
        if not walk.ordered:
            notes.append(
                "the Platform's run list is not ordered newest first here "
                f"({walk.disorder}), so every run was listed instead of only the new ones"
            )
            walk.all()

    runs = dict(walk.runs)
    missing = _read_recorded(client, walk, state, runs)
    if missing and not walk.complete:
        # A missing run's config first looks for its run among the unrecorded ones: list back
        # to when it was submitted.
        starts = [_recorded_since(state, run_id) for run_id in missing]
        if any(start is None for start in starts):
            walk.all()
        else:
            walk.until(min(start for start in starts if start is not None))
        for run in walk.runs.values():
            runs.setdefault(run.id, run)

    benchmarks = read_benchmarks(client, desired)
    secrets, personal_secrets = read_secrets(client, desired, benchmarks)
    elsewhere = find_secrets_elsewhere(client, desired, benchmarks, secrets)
    me = _who_submits(client, state)
    catalog = list_catalog(client) if any(b is None for b in benchmarks.values()) else None
    read_meant(client, benchmarks, catalog)
    runs = _fingerprint_candidates(
        client, runs, desired, state, benchmarks, missing, seen_before=since
    )

    if outputs is None:
        outputs = scan_recorded_outputs(state, repo_root, verify=verify_outputs)
    unmanaged = _unmanaged_runs(state, runs, now) if want_unmanaged else None
    return Observation(
        platform=platform,
        workspace=workspace,
        observed_at=now,
        runs=runs,
        listing="full" if walk.complete else "incremental",
        missing=frozenset(missing),
        workspace_runs=walk.total
        if walk.total is not None
        else (len(walk.runs) if walk.complete else None),
        unmanaged=unmanaged,
        newest_created=walk.watermark,
        benchmarks=benchmarks,
        secrets=secrets,
        personal_secrets=personal_secrets,
        secrets_elsewhere=elsewhere,
        me=me,
        outputs=dict(outputs),
        head=head,
        notes=tuple(notes),
        catalog=catalog,
        task_counts=planning_counts(state, desired, benchmarks, repo_root, rerun=rerun),
        errored=errored_attempts(state, desired, repo_root, retry_errored),
        retried=kept_retried_results(state, benchmarks.values(), repo_root),
    )


def _unmanaged_runs(
    state: LockState, runs: Mapping[str, ObservedRun], now: datetime
) -> tuple[ObservedRun, ...]:
    """The listed runs the lockfile does not know, newest first (undated ones last)."""
    known = _known_run_ids(state)
    return tuple(
        sorted(
            (run for run_id, run in runs.items() if run_id not in known),
            key=lambda r: (r.created_at is None, r.created_at or now, r.id),
            reverse=True,
        )
    )


def kept_retried_results(
    state: LockState, benchmarks: Iterable[BenchmarkInfo | None], repo_root: Path
) -> dict[str, RetriedResult]:
    """The results of the addresses whose recorded run is a retry run, merged from the kept
    ``results.csv`` files (read only, never fetched): the plan's results table shows them.
    The results statistics are imported only when a retry is recorded (start-up)."""
    if not any(entry.retry_of for entry in state.runs.values()):
        return {}
    from reconciler.results.retried import catalog_thresholds, retried_results

    return retried_results(
        state,
        lambda run: read_kept_outcomes(repo_root, run, repo_root / DOWNLOAD_ROOT),
        catalog_thresholds(benchmarks),
    )


def errored_attempts(
    state: LockState, desired: Sequence[DesiredRun], repo_root: Path, patterns: Sequence[str]
) -> dict[str, ErroredAttempts]:
    """The errored attempts of the result of every address matching ``patterns`` (the
    retries asked for), read from the kept ``results.csv`` of its run and of the retry runs
    already recorded (``plan.retries``)."""
    out: dict[str, ErroredAttempts] = {}
    if not patterns:
        return out
    from reconciler.results.retried import merged_outcomes  # start-up: only when asked

    for wanted in desired:
        if not glob_match(wanted.address, tuple(patterns)):
            continue
        current = next((r for r in address_runs(state, wanted.address) if r.current), None)
        if current is None:
            continue
        outcomes, left_out = merged_outcomes(
            current, lambda run: read_kept_outcomes(repo_root, run, repo_root / DOWNLOAD_ROOT)
        )
        unreadable = None
        if outcomes is None:
            unreadable = f"the results.csv of run {current.label} is not on this disk"
        elif left_out:
            unreadable = f"the results.csv of its retry run {left_out[0]} is not on this disk"
        elif not outcomes.paired:
            unreadable = f"its results.csv lacks {', '.join(outcomes.missing)}"
        agents = {}
        if unreadable is None and outcomes is not None:
            agents = {
                index: {t: o.errored for t, o in tasks.items() if o.errored}
                for index, tasks in outcomes.tasks.items()
            }
            agents = {index: tasks for index, tasks in agents.items() if tasks}
        out[wanted.address] = ErroredAttempts(
            run_id=current.run_id, agents=agents, unreadable=unreadable
        )
    return out


PLANNING_RUNS = 2
"""Per submit, the comparable recorded runs whose per-task files the plan reads: the one
it will be compared with, and one more to measure the spread between two runs."""


def planning_counts(
    state: LockState,
    desired: Sequence[DesiredRun],
    benchmarks: Mapping[str, Any],
    repo_root: Path,
    *,
    rerun: Iterable[str] = (),
) -> dict[str, TaskCounts]:
    """Per-task outcomes (run id -> counts) of the newest comparable runs of every config
    that would be submitted (new, changed, or asked to re-run), read from the files already
    on disk: the plan's power line estimates its spread from them (``plan.power``)."""
    again = set(rerun)
    out: dict[str, TaskCounts] = {}
    for wanted in desired:
        if wanted.decide is not None:
            _decision_counts(state, wanted.address, wanted.decide.baseline, repo_root, out)
        entry = state.runs.get(wanted.address)
        if entry is not None and entry.spec_digest == wanted.spec_digest:
            if wanted.address not in again:
                continue
        info = benchmarks.get(wanted.benchmark)
        selection = selection_digest(wanted.spec)
        found = comparable_runs(state, wanted.address, getattr(info, "id", None), selection)
        for run in found[:PLANNING_RUNS]:
            if run.run_id in out:
                continue
            outcomes = read_kept_outcomes(repo_root, run, repo_root / DOWNLOAD_ROOT)
            if outcomes is not None and outcomes.paired:
                out[run.run_id] = _counts(outcomes)
    return out


def _counts(outcomes: RunOutcomes) -> TaskCounts:
    return TaskCounts(
        agents={
            index: {t: (o.passes, o.attempts) for t, o in tasks.items() if o.attempts}
            for index, tasks in outcomes.tasks.items()
        },
        checksums={
            index: stated
            for index, tasks in outcomes.tasks.items()
            if (stated := {t: o.checksum for t, o in tasks.items() if o.checksum})
        },
    )


def _decision_counts(
    state: LockState,
    address: str,
    wanted_baseline: str | None,
    repo_root: Path,
    out: dict[str, TaskCounts],
) -> None:
    """Per-task outcomes of a decision's batch runs that ended and were downloaded, and of
    the run its ``baseline`` names: the plan's next look is computed from them
    (``plan.batches``)."""
    record = state.decisions.get(address)
    baselines = []
    if record is not None and record.baseline_run and record.spec.baseline:
        baselines += [
            r for r in address_runs(state, record.spec.baseline) if r.run_id == record.baseline_run
        ]
    if wanted_baseline is not None:
        # A new decision (or a changed [decide]) compares with the accepted run of now.
        accepted = accepted_run(state, wanted_baseline)
        baselines += [accepted] if accepted is not None else []
    for baseline in baselines:
        if baseline.run_id in out or not baseline.outputs_complete:
            continue
        outcomes = read_kept_outcomes(repo_root, baseline, repo_root / DOWNLOAD_ROOT)
        if outcomes is not None:
            out[baseline.run_id] = _counts(outcomes)
    if record is None:
        return
    entry = state.runs.get(address)
    wanted = set(record.batch_runs)
    if entry is not None and entry.run_id:
        wanted.add(entry.run_id)
    for run in address_runs(state, address):
        if run.run_id not in wanted or run.run_id in out or not run.outputs_complete:
            continue
        if not RunStatus.of(run.status).is_terminal:
            continue
        outcomes = read_kept_outcomes(repo_root, run, repo_root / DOWNLOAD_ROOT)
        if outcomes is not None:
            out[run.run_id] = _counts(outcomes)


def list_catalog(client: PlatformClient) -> tuple[BenchmarkRef, ...] | None:
    """The workspace's benchmarks (one E1 walk), for did-you-mean hints; None if unlisted.

    Only called when a config's benchmark did not resolve, so a plan whose benchmarks all
    resolve costs no extra request.
    """
    try:
        return tuple(b.to_ref() for b in client.list_benchmarks())
    except PlatformError:
        return None


def read_meant(
    client: PlatformClient,
    benchmarks: dict[str, Any],
    catalog: Sequence[BenchmarkRef] | None,
) -> None:
    """Add to ``benchmarks`` the entry of the benchmark each unknown name most likely means
    (preflight checks the rest of such a config against it), by its key."""
    if not catalog:
        return
    from reconciler.plan.preflight import nearest_benchmark  # an unknown name: loaded only then

    for name in [n for n, info in benchmarks.items() if info is None]:
        nearest = nearest_benchmark(name, catalog)
        if nearest is None or nearest.key in benchmarks:
            continue
        try:
            benchmarks[nearest.key] = client.get_benchmark(nearest.key).to_info()
        except PlatformError:
            continue


def _recorded_since(state: LockState, run_id: str) -> datetime | None:
    for entry in state.runs.values():
        if entry.run_id == run_id:
            moments = [m for m in (entry.submitted_at, entry.observed_at) if m is not None]
            return min(moments) if moments else None
    return None


def _needs_read(entry: RecordedRun, complete: bool) -> bool:
    """Whether a recorded run absent from the walk must be read directly."""
    if not entry.run_id:
        return False
    if complete:
        return True  # a full list that omits it proves nothing: ask for the run itself
    if entry.intent is not None and entry.intent.op == "stop":
        return True
    return not RunStatus.of(entry.status).is_terminal


def _read_recorded(
    client: PlatformClient, walk: RunWalk, state: LockState, runs: dict[str, ObservedRun]
) -> set[str]:
    """Read the recorded runs the walk did not show; return those a read says are gone."""
    wanted = [e for e in state.runs.values() if e.run_id not in runs and _needs_read(e, False)]
    if not walk.complete and len(wanted) > max(DIRECT_READS_MIN, walk.remaining_pages):
        walk.all()
        for run in walk.runs.values():
            runs.setdefault(run.id, run)
    complete = walk.complete
    missing: set[str] = set()
    for entry in sorted(state.runs.values(), key=lambda e: e.address):
        run_id = entry.run_id
        if run_id is None or run_id in runs or not _needs_read(entry, complete):
            continue
        try:
            detail = client.get_run(run_id)
        except NotFoundError:
            missing.add(run_id)
            continue
        if detail.summary.id != run_id:
            # Looked up by id but answered with another run (a name that is also an id?):
            # the recorded run itself was not found.
            missing.add(run_id)
            continue
        runs[run_id] = detail.to_observed()
    return missing


def read_benchmarks(client: PlatformClient, desired: Sequence[DesiredRun]) -> dict[str, Any]:
    """The catalog entry (E2) of every benchmark the configs name; None for a name the
    Platform does not know."""
    benchmarks: dict[str, Any] = {}
    for name in sorted({d.benchmark for d in desired}):
        try:
            benchmarks[name] = client.get_benchmark(name).to_info()
        except NotFoundError:
            benchmarks[name] = None
    return benchmarks


def read_secrets(
    client: PlatformClient, desired: Sequence[DesiredRun], benchmarks: Mapping[str, Any]
) -> tuple[frozenset[str] | None, frozenset[str]]:
    """(every stored secret record name, or None when the lookup failed; the names found
    only at personal scope)."""
    needs_secrets = any(d.secret_names for d in desired) or any(
        b and b.required_secret_names for b in benchmarks.values()
    )
    if not needs_secrets:
        return frozenset(), frozenset()
    try:
        records = client.list_secrets()
    except PlatformError:
        return None, frozenset()
    names = frozenset(s.name for s in records)
    # Names stored only as someone's personal record: this token sees them, CI's does not.
    shared = {s.name for s in records if s.scope != "user"}
    return names, frozenset(names - shared)


ELSEWHERE_WORKSPACES = 20
"""At most this many other workspaces are searched for a secret a plan misses: a hint, not
worth a long walk on an account with many workspaces."""


def find_secrets_elsewhere(
    client: PlatformClient,
    desired: Sequence[DesiredRun],
    benchmarks: Mapping[str, Any],
    found: frozenset[str] | None,
) -> dict[str, tuple[tuple[str, str], ...]]:
    """Secret name -> where a record of that name exists outside this workspace, as
    (workspace name, ``workspace`` or ``user`` scope) pairs, for every secret the configs need that
    ``found`` (this workspace's records) lacks. Names and scopes only, never a value: W1
    lists the workspaces, S1 each one's records the token can use. Any Platform error leaves
    the hint out (it is never worth failing a plan for)."""
    if found is None:
        return {}
    needed: set[str] = set()
    for run in desired:
        needed.update(run.secret_names)
        info = benchmarks.get(run.benchmark)
        if info is not None:
            needed.update(info.required_secret_names)
    missing = needed - found
    if not missing:
        return {}
    try:
        workspaces = client.list_workspaces()
    except PlatformError:
        return {}
    here_name, here_repo = client.workspace, client.git_identity
    places: dict[str, list[tuple[str, str]]] = {}
    others = [
        w
        for w in workspaces
        if w.name
        and w.name != here_name
        and not (here_name is None and here_repo and w.connected_repo == here_repo)
    ]
    for workspace in others[:ELSEWHERE_WORKSPACES]:
        try:
            records = client.list_secrets(workspace=workspace.name)
        except PlatformError:
            continue
        for record in records:
            if record.name in missing:
                scope = "user" if record.scope == "user" else "workspace"
                places.setdefault(record.name, []).append((workspace.name, scope))
    return {name: tuple(where) for name, where in sorted(places.items())}


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
                anchor=repo_root,
            )
    return outputs


def _known_run_ids(state: LockState) -> set[str]:
    known = {e.run_id for e in state.runs.values() if e.run_id}
    known.update(h.run_id for h in state.history if h.run_id)
    known.update(e.intent.run_id for e in state.runs.values() if e.intent and e.intent.run_id)
    return known


def _fingerprint_candidates(
    client: PlatformClient,
    runs: dict[str, ObservedRun],
    desired: Sequence[DesiredRun],
    state: LockState,
    benchmarks: Mapping[str, Any],
    missing: frozenset[str] | set[str] = frozenset(),
    *,
    seen_before: datetime | None = None,
) -> dict[str, ObservedRun]:
    """Fetch details (E5) of the unrecorded runs the plan must compare with a config.

    Each kind of candidate is narrowed by what the run list already says, so a busy
    workspace does not cost one request per run:

    * for an address that needs a run (none recorded, a pending intent, a changed config,
      or a recorded run that is gone), an unrecorded run of the same benchmark with the
      same agent count: it may be the address's own run, recorded nowhere after a crash;
    * for a pending submit intent, every unrecorded run of its benchmark created since the
      intent (minus clock skew): the plan must not resubmit while any of those is undecided;
    * for an address that has its run, recent unrecorded runs of the same shape created
      since the config reached the branch: a possible second payment for one config
      (newest first, at most ``DUPLICATE_DETAILS_MAX``). Runs older than ``seen_before``
      (the lockfile's watermark) were compared by the plan that set it, so an incremental
      plan compares only the new ones; a full refresh compares them all again.
    """
    known = _known_run_ids(state)
    shapes: set[tuple[str, int]] = set()
    recent: dict[tuple[str, int], datetime] = {}
    for d in desired:
        entry = state.runs.get(d.address)
        info = benchmarks.get(d.benchmark)
        if info is None:
            continue
        shape = (info.id, d.agent_count)
        if (
            entry is None
            or entry.run_id is None
            or entry.intent is not None
            or recorded_digest(entry, benchmarks)
            not in (d.spec_digest, canonical_digest(d.spec, info.id))
            or entry.run_id in missing
        ):
            shapes.add(shape)
        elif d.arrived_at is not None:
            since = d.arrived_at - CLOCK_SKEW
            if seen_before is not None:
                since = max(since, seen_before - CLOCK_SKEW)
            recent[shape] = min(since, recent.get(shape, since))
    windows: dict[str, datetime] = {}
    for entry in state.runs.values():
        intent = entry.intent
        if intent is not None and intent.op == "submit" and intent.benchmark_id:
            since = intent.started_at - CLOCK_SKEW
            windows[intent.benchmark_id] = min(since, windows.get(intent.benchmark_id, since))
    if not shapes and not windows and not recent:
        return runs
    updated = dict(runs)
    wanted: list[str] = []
    duplicates: list[ObservedRun] = []
    for run_id, run in runs.items():
        if run_id in known or run.fingerprint is not None:
            continue
        by_shape = run.benchmark_id is not None and any(
            bid == run.benchmark_id and (run.agent_count is None or run.agent_count == n)
            for bid, n in shapes
        )
        # A listed run without a benchmark id could belong to any intent's benchmark: the
        # plan cannot rule it out, so its details are fetched too.
        window = (
            windows.get(run.benchmark_id)
            if run.benchmark_id is not None
            else min(windows.values(), default=None)
        )
        by_window = window is not None and (run.created_at is None or run.created_at >= window)
        if by_shape or by_window:
            wanted.append(run_id)
            continue
        if run.benchmark_id is not None and run.created_at is not None:
            for (bid, n), after in recent.items():
                if (
                    bid == run.benchmark_id
                    and run.agent_count in (None, n)
                    and (run.created_at >= after)
                ):
                    duplicates.append(run)
                    break
    duplicates.sort(key=lambda r: r.created_at or datetime.min, reverse=True)
    wanted.extend(r.id for r in duplicates[:DUPLICATE_DETAILS_MAX])
    for run_id in wanted:
        try:
            detail = client.get_run(run_id)
        except NotFoundError:
            continue
        updated[run_id] = replace(runs[run_id], fingerprint=detail.fingerprint())
    return updated


def poll_statuses(
    client: PlatformClient, run_ids: Sequence[str], *, since: datetime | None
) -> dict[str, str]:
    """Current status of each run (id -> status) for ``--wait``, without listing history:
    the newest runs back to ``since`` (the oldest of them was created then), and a direct
    read of any run not among them (or every run, when that is fewer requests)."""
    walk = RunWalk(client)
    if since is None:
        walk.all()
    else:
        walk.until(since)
        if not walk.ordered:
            walk.all()
    unseen = [run_id for run_id in run_ids if run_id not in walk.runs]
    if unseen and not walk.complete and len(unseen) > max(DIRECT_READS_MIN, walk.remaining_pages):
        walk.all()
        unseen = [run_id for run_id in run_ids if run_id not in walk.runs]
    statuses = {run_id: walk.runs[run_id].status for run_id in run_ids if run_id in walk.runs}
    for run_id in unseen:
        try:
            statuses[run_id] = client.get_run(run_id).summary.status
        except NotFoundError:
            statuses[run_id] = "missing"
    return statuses


def find_submitted_run(
    client: PlatformClient,
    spec: Mapping[str, Any],
    benchmark_id: str | None,
    *,
    since: datetime,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> RunSummary | None:
    """The run a submit of ``spec`` started at ``since`` may have created, if the Platform
    has one: created since then (minus clock skew), of the same benchmark, not in
    ``exclude``, whose detail (E5) does exactly what ``spec`` asks. Newest first."""
    walk = RunWalk(client)
    walk.until(since)
    if not walk.ordered:
        walk.all()
    horizon = since - CLOCK_SKEW
    fingerprint = spec_fingerprint(spec, benchmark_id)
    for run in walk.runs.values():
        if run.id in exclude or (run.created_at is not None and run.created_at < horizon):
            continue
        if benchmark_id is not None and run.benchmark_id not in (None, benchmark_id):
            continue
        try:
            detail = client.get_run(run.id)
        except NotFoundError:
            continue
        if detail.fingerprint() == fingerprint:
            return detail.summary
    return None


def refresh_statuses(state: LockState, observation: Observation) -> LockState:
    """Copy observed statuses (and creators, names and creation times not yet known) into
    the recorded entries that changed; an unchanged state is returned as is (stable
    lockfile)."""
    runs = dict(state.runs)
    changed = False
    for address, entry in state.runs.items():
        run = observation.runs.get(entry.run_id or "")
        if run is None:
            continue
        update: dict[str, Any] = {}
        if run.status and run.status != entry.status:
            update.update(status=run.status, observed_at=observation.observed_at)
        if run.creator and entry.creator is None:
            update["creator"] = run.creator
        # A run recorded by id alone (``osmosis-state resolve --submitted RUN``) takes what
        # the Platform says of it: its name (the download directory) and creation time.
        if entry.run_name is None and run.name:
            update["run_name"] = run.name
        if entry.submitted_at is None and run.created_at is not None:
            update["submitted_at"] = run.created_at
        if update:
            runs[address] = entry.model_copy(update=update)
            changed = True
    return state.model_copy(update={"runs": runs}) if changed else state


def wait_for_runs(
    client: PlatformClient,
    run_ids: Iterable[str],
    *,
    timeout: float,
    cancel: threading.Event,
    since: datetime | None = None,
    on_poll: Callable[[dict[str, str]], None] = lambda _s: None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """Poll with backoff until every run is terminal or ``timeout`` passes.

    Each poll reads the run list back to ``since`` (when the oldest waited run was created;
    None lists every run) and reads directly any run not on it, so its cost follows the runs
    waited on, not the workspace's history. Returns run id -> status.
    """
    pending = set(run_ids)
    statuses: dict[str, str] = {}
    deadline = monotonic() + timeout
    delay = 1.0
    while pending and not cancel.is_set():
        statuses.update(poll_statuses(client, sorted(pending), since=since))
        on_poll(dict(statuses))
        pending = {r for r in pending if RunStatus.of(statuses.get(r)).is_active}
        if not pending or monotonic() >= deadline:
            break
        cancel.wait(min(delay, max(0.0, deadline - monotonic())))
        delay = min(delay * 1.5, 15.0)
    return statuses
