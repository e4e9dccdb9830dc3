"""An address's recorded runs, newest first, and which of them may be compared (pure).

Comparable by construction:

* a run is **partial** when it did not finish (failed, stopped) or its outputs are
  incomplete; partial runs are labelled, never a baseline, never another run's "previous";
* "vs previous" is only against the newest earlier run with the same benchmark, task
  selection and agents (``what_changed`` says why another run is not comparable);
* "vs leaderboard" only for a full benchmark or one of its recommended task sets
  (``leaderboard_comparable``): a 1-task or one-category run says nothing about a
  published score.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from reconciler.errors import UsageError
from reconciler.model import (
    AgentResult,
    BenchmarkInfo,
    HistoryEntry,
    LockState,
    RecordedRun,
    RunResults,
    RunStatus,
    SmokeStage,
    selection_digest,
    spec_pass_threshold,
)

__all__ = [
    "RecordedResult",
    "RunRef",
    "accepted_run",
    "address_runs",
    "comparable_runs",
    "leaderboard_comparable",
    "parse_ref",
    "previous_comparable",
    "renamed_from",
    "resolve",
    "what_changed",
]


class RecordedResult(msgspec.Struct, frozen=True):
    """One recorded run of an address, current or from history."""

    address: str
    run_id: str
    run_name: str | None
    status: str | None
    current: bool
    requested_by: str | None = None
    submitted_at: datetime | None = None
    benchmark_id: str | None = None
    task_count: int | None = None
    selection: str | None = None
    results: RunResults | None = None
    outputs_complete: bool = True
    spec: Mapping[str, Any] = msgspec.field(default_factory=dict)
    stage: SmokeStage | None = None
    """``smoke`` for a smoke run (docs/smoke.md): a narrowed test of the config, never a
    baseline nor the address's result."""
    attempts_per_task: int = 1
    """The attempts per task the config asked for: k."""
    spec_digest: str | None = None
    """Digest of the body it was submitted with: equal digests, the same configuration."""
    retry_of: str | None = None
    """For a retry run (``--retry-errored``): the run whose errored attempts it re-ran;
    ``address_runs`` lists it under that run (``retries``), never as a row of its own."""
    retry_agents: tuple[int, ...] = ()
    """For a retry run: the retried run's agent index of each of its agents."""
    retries: tuple[RecordedResult, ...] = ()
    """The retry runs of this run, oldest first: their attempts replace its errored ones
    in its result (``results.data.merge_retry``)."""
    pass_threshold: float | None = None
    """The threshold recorded with the run (the config's, else the catalog's, when it was
    recorded); for a current entry recorded before that, its config's. None: not known
    here, and results use the catalog's now (``summary.threshold_of``), saying so."""

    @property
    def smoke(self) -> bool:
        return self.stage == SmokeStage.SMOKE

    @property
    def partial(self) -> bool:
        """Did not finish, or its outputs are incomplete."""
        return RunStatus.of(self.status) is not RunStatus.FINISHED or not self.outputs_complete

    @property
    def label(self) -> str:
        return self.run_name or self.run_id

    @property
    def agents(self) -> tuple[AgentResult, ...]:
        return self.results.agents if self.results else ()


def renamed_from(state: LockState, address: str) -> list[str]:
    """The addresses ``address``'s runs were recorded under before a rename (``moved``
    history entries carry the run id on to the new address), oldest rename last."""
    found: list[str] = []
    ids = {entry.run_id} if (entry := state.runs.get(address)) and entry.run_id else set()
    ids |= {h.run_id for h in state.history if h.address == address and h.run_id}
    grew = True
    while grew:  # a run renamed twice: follow it back through both names
        grew = False
        for h in state.history:
            if h.reason != "moved" or h.run_id not in ids or h.address in (address, *found):
                continue
            found.append(h.address)
            ids |= {x.run_id for x in state.history if x.address == h.address and x.run_id}
            grew = True
    return found


def _current(address: str, entry: RecordedRun) -> RecordedResult:
    assert entry.run_id is not None
    return RecordedResult(
        address=address,
        run_id=entry.run_id,
        run_name=entry.run_name,
        status=entry.status,
        current=True,
        requested_by=entry.requested_by,
        submitted_at=entry.submitted_at,
        benchmark_id=entry.benchmark_id,
        task_count=entry.task_count,
        selection=selection_digest(entry.spec) if entry.spec else None,
        results=entry.results,
        outputs_complete=entry.downloads.complete if entry.downloads else True,
        spec=entry.spec,
        stage=entry.stage,
        attempts_per_task=entry.attempts_per_task,
        spec_digest=entry.spec_digest,
        retry_of=entry.retry_of,
        retry_agents=tuple(entry.retry_agents or ()),
        pass_threshold=(
            entry.pass_threshold
            if entry.pass_threshold is not None
            else spec_pass_threshold(entry.spec)
        ),
    )


def _former(address: str, old: HistoryEntry) -> RecordedResult:
    assert old.run_id is not None
    return RecordedResult(
        address=address,
        run_id=old.run_id,
        run_name=old.run_name,
        status=old.status,
        current=False,
        requested_by=old.requested_by,
        submitted_at=old.submitted_at,
        benchmark_id=old.benchmark_id,
        task_count=old.task_count,
        selection=old.selection,
        results=old.results,
        stage=old.stage,
        attempts_per_task=old.attempts_per_task or 1,
        spec_digest=old.spec_digest,
        retry_of=old.retry_of,
        retry_agents=tuple(old.retry_agents or ()),
        # A history entry keeps no config: only what was recorded with the run.
        pass_threshold=old.pass_threshold,
    )


def address_runs(state: LockState, address: str) -> list[RecordedResult]:
    """Every recorded run of ``address`` with an id, newest first (current, then history,
    then the history of the addresses it was renamed from: runs follow a rename). A
    ``moved`` entry is the run that now lives under the new address, never a row of its own."""
    out: list[RecordedResult] = []
    seen: set[str] = set()
    entry = state.runs.get(address)
    if entry is not None and entry.run_id is not None:
        seen.add(entry.run_id)
        out.append(_current(address, entry))
    names = (address, *renamed_from(state, address))
    for old in state.history:
        if old.address not in names or old.reason == "moved":
            continue
        if old.run_id is None or old.run_id in seen:
            continue
        seen.add(old.run_id)
        out.append(_former(address, old))
    return _fold_retries(out)


def _fold_retries(runs: list[RecordedResult]) -> list[RecordedResult]:
    """Each retry run under the run it retried (``retries``, oldest first); that run is
    the address's current result when its newest retry is the recorded run. A retry whose
    run is no longer recorded stays a row of its own."""
    if not any(r.retry_of for r in runs):
        return runs
    ids = {r.run_id for r in runs if not r.retry_of}
    under: dict[str, list[RecordedResult]] = {}
    for run in runs:
        if run.retry_of and run.retry_of in ids:
            under.setdefault(run.retry_of, []).insert(0, run)  # newest first -> oldest first
    out = []
    for run in runs:
        if run.retry_of and run.retry_of in ids:
            continue
        retries = under.get(run.run_id)
        if retries:
            current = run.current or any(r.current for r in retries)
            run = msgspec.structs.replace(run, retries=tuple(retries), current=current)
        out.append(run)
    return out


def accepted_run(state: LockState, address: str) -> RecordedResult | None:
    """The run a decision's ``baseline = "ADDR"`` compares with: the address's accepted
    baseline (``osmosis-results accept``) when it has one, else its newest finished,
    complete, non-smoke run; None when there is neither."""
    runs = address_runs(state, address)
    accepted = state.baselines.get(address)
    if accepted is not None:
        return next((r for r in runs if r.run_id == accepted.run_id), None)
    return next((r for r in runs if not r.partial and not r.smoke), None)


def _same_agent(a: AgentResult, b: AgentResult) -> bool:
    """The same model (by id when both runs recorded it, else by name) and harness."""
    if a.harness != b.harness:
        return False
    if a.model_id and b.model_id:
        return a.model_id == b.model_id
    return (a.model or a.model_id) == (b.model or b.model_id)


def what_changed(newer: RecordedResult, older: RecordedResult) -> list[str]:
    """Why two runs are not comparable (empty: they are)."""
    changes: list[str] = []
    if older.partial:
        changes.append(f"{older.label} is partial ({older.status})")
    if newer.benchmark_id and older.benchmark_id and newer.benchmark_id != older.benchmark_id:
        changes.append("benchmark changed")
    if newer.selection and older.selection and newer.selection != older.selection:
        changes.append("task selection changed")
    elif newer.task_count and older.task_count and newer.task_count != older.task_count:
        changes.append(f"tasks {older.task_count} -> {newer.task_count}")
    if (
        newer.agents
        and older.agents
        and (
            len(newer.agents) != len(older.agents)
            or not all(_same_agent(a, b) for a, b in zip(newer.agents, older.agents, strict=True))
        )
    ):
        changes.append("agents changed")
    return changes


def previous_comparable(
    runs: list[RecordedResult], index: int
) -> tuple[RecordedResult | None, list[str]]:
    """The newest run older than ``runs[index]`` that is comparable with it, and, when the
    immediately older run is not, what changed."""
    newer = runs[index]
    first_reasons: list[str] = []
    for older in runs[index + 1 :]:
        if older.results is None or older.smoke:
            continue  # nothing recorded to compare with; a smoke run is never "previous"
        reasons = what_changed(newer, older)
        if not reasons:
            return older, first_reasons
        if not first_reasons:
            first_reasons = reasons
    return None, first_reasons


def comparable_runs(
    state: LockState, address: str, benchmark_id: str | None, selection: str
) -> list[RecordedResult]:
    """The recorded runs a new run of ``address`` (on ``benchmark_id`` with task selection
    ``selection``) will be compared with, best first: complete full runs with scores on the
    same benchmark and selection, the address's own newest first (a re-run), then other
    addresses' newest first (a new config on the same tasks)."""
    if benchmark_id is None:
        return []

    def usable(run: RecordedResult) -> bool:
        return not run.partial and not run.smoke and run.selection == selection

    # The address's own runs: an older record that lacks the benchmark or the selection is
    # taken as the same (what ``what_changed`` does); other addresses' must match.
    own = [
        r
        for r in address_runs(state, address)
        if r.results is not None
        and not r.partial
        and not r.smoke
        and r.benchmark_id in (benchmark_id, None)
        and r.selection in (selection, None)
    ]
    seen = {r.run_id for r in own}
    others: list[RecordedResult] = []
    # Filtered on the cheap fields first: a plan asks this for every submit.
    for other, entry in state.runs.items():
        if other == address or entry.benchmark_id != benchmark_id or entry.results is None:
            continue
        if entry.run_id is not None and entry.run_id not in seen:
            others.append(_current(other, entry))
            seen.add(entry.run_id)
    for old in state.history:
        if old.address == address or old.reason == "moved" or old.run_id is None:
            continue
        if old.benchmark_id != benchmark_id or old.results is None or old.run_id in seen:
            continue
        others.append(_former(old.address, old))
        seen.add(old.run_id)
    others = [r for r in others if usable(r)]
    others.sort(key=lambda r: r.submitted_at.timestamp() if r.submitted_at else 0.0, reverse=True)
    return own + others


def leaderboard_comparable(spec: Mapping[str, Any], info: BenchmarkInfo | None) -> bool:
    """Whether a run's task selection is the full benchmark or a recommended task set (the
    only selections a published score describes)."""
    tasks = spec.get("tasks_config") or {}
    if tasks.get("task_names") or tasks.get("categories"):
        return False
    task_set = tasks.get("task_set")
    if task_set in (None, "full"):
        return True
    return info is not None and task_set in info.recommended_task_sets


class RunRef(msgspec.Struct, frozen=True):
    """``ADDR``, ``ADDR@RUN`` or ``ADDR@RUN#AGENT`` (RUN: a run name or id, or ``~N`` for
    the N-th run before the newest; AGENT: a 1-based agent number)."""

    address: str
    run: str | None = None
    agent: int | None = None
    """0-based agent index."""

    @property
    def text(self) -> str:
        out = self.address + (f"@{self.run}" if self.run else "")
        return out + (f"#{self.agent + 1}" if self.agent is not None else "")


def parse_ref(text: str) -> RunRef:
    """Parse a run reference; a malformed one is a ``UsageError`` saying the forms."""
    forms = "ADDR, ADDR@RUN or ADDR@RUN#AGENT (RUN: run name or id, or ~N: N runs before the newest; AGENT: 1, 2, ...)"
    rest, _, agent_text = text.partition("#")
    address, _, run = rest.partition("@")
    agent: int | None = None
    if agent_text:
        if not agent_text.isdigit() or int(agent_text) < 1:
            raise UsageError(f"{text!r}: the agent after '#' must be a number from 1", forms)
        agent = int(agent_text) - 1
    if not address or ("@" in rest and not run):
        raise UsageError(f"{text!r} is not a run reference", forms)
    return RunRef(address=address, run=run or None, agent=agent)


def resolve(state: LockState, ref: RunRef) -> RecordedResult:
    """The recorded run a reference names (``ADDR`` alone: its newest run)."""
    runs = address_runs(state, ref.address)
    if not runs:
        known = ", ".join(sorted(state.runs)[:5]) or "none"
        raise UsageError(
            f"{ref.address}: no recorded run in the lockfile",
            f"check the address (recorded: {known}); `osmosis-state list` lists them",
        )
    if ref.run is None:
        return runs[0]
    if ref.run.startswith("~") and ref.run[1:].isdigit():
        back = int(ref.run[1:])
        if back >= len(runs):
            raise UsageError(
                f"{ref.text}: {ref.address} has {len(runs)} recorded run(s)",
                f"~N counts back from the newest run: ~0 to ~{len(runs) - 1}",
            )
        return runs[back]
    for run in runs:
        if ref.run in (run.run_id, run.run_name):
            return run
    names = ", ".join(r.label for r in runs[:6])
    raise UsageError(
        f"{ref.text}: {ref.address} has no recorded run {ref.run!r}",
        f"its runs, newest first: {names}",
    )
