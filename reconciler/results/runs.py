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
    LockState,
    RunResults,
    RunStatus,
    selection_digest,
)

__all__ = [
    "RecordedResult",
    "RunRef",
    "address_runs",
    "leaderboard_comparable",
    "parse_ref",
    "previous_comparable",
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
    stage: str | None = None
    """``smoke`` for a smoke run (docs/smoke.md): a narrowed test of the config, never a
    baseline nor the address's result."""

    @property
    def smoke(self) -> bool:
        return self.stage == "smoke"

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


def address_runs(state: LockState, address: str) -> list[RecordedResult]:
    """Every recorded run of ``address`` with an id, newest first (current, then history)."""
    out: list[RecordedResult] = []
    seen: set[str] = set()
    entry = state.runs.get(address)
    if entry is not None and entry.run_id is not None:
        seen.add(entry.run_id)
        out.append(
            RecordedResult(
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
            )
        )
    for old in state.history:
        if old.address != address or old.run_id is None or old.run_id in seen:
            continue
        seen.add(old.run_id)
        out.append(
            RecordedResult(
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
            )
        )
    return out


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
        if older.results is None:
            continue  # nothing recorded to compare with
        reasons = what_changed(newer, older)
        if not reasons:
            return older, first_reasons
        if not first_reasons:
            first_reasons = reasons
    return None, first_reasons


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
