"""Observation: what the Platform and the local disk say now, as one ``Observation``.

The plan is its first user (``osmosis-plan`` observes, then plans); apply re-observes under
its lock. Every request made here is counted against the rule that a plan's cost must not
grow with the workspace's history beyond what the plan needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .downloads import scan_outputs
from .errors import NotFoundError, PlatformError
from .model import BenchmarkRef, DesiredRun, LocalOutputs, LockState, Observation, ObservedRun
from .plan import CLOCK_SKEW
from .platform import PlatformClient, RunSummary

LIST_READ_AHEAD = 4
"""Run-list pages requested at a time: the list is most of a large plan's wall time."""


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

    catalog = list_catalog(client) if any(b is None for b in benchmarks.values()) else None

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
        catalog=catalog,
    )


def list_catalog(client: PlatformClient) -> tuple[BenchmarkRef, ...] | None:
    """The workspace's benchmarks (one E1 walk), for did-you-mean hints; None if unlisted.

    Only called when a config's benchmark did not resolve, so a plan whose benchmarks all
    resolve costs no extra request.
    """
    try:
        return tuple(b.to_ref() for b in client.list_benchmarks())
    except PlatformError:
        return None


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
