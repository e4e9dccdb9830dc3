"""Assembling reports from the lockfile and the runs' per-task outcomes (pure: the outcomes
come from a loader the caller passes in)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reconciler.errors import UsageError
from reconciler.model import LockState, glob_match
from reconciler.results import stats
from reconciler.results.compare import (
    DEFAULT_MARGIN,
    Comparison,
    compare_outcomes,
    compare_summaries,
)
from reconciler.results.data import RunOutcomes
from reconciler.results.report import AddressReport, CompareReport, RunLine
from reconciler.results.runs import (
    RecordedResult,
    RunRef,
    address_runs,
    previous_comparable,
    resolve,
)
from reconciler.results.summary import score_run

__all__ = ["Loader", "build_address_reports", "build_compare"]

Loader = Callable[[RecordedResult], RunOutcomes | None]


def _addresses(state: LockState, patterns: Sequence[str]) -> list[str]:
    known = sorted(set(state.runs) | {h.address for h in state.history if h.run_id})
    if not patterns:
        return known
    chosen = [a for a in known if glob_match(a, tuple(patterns))]
    if not chosen:
        raise UsageError(
            f"no recorded run matches {', '.join(patterns)}",
            "`osmosis-results` with no address lists every recorded one",
        )
    return chosen


def build_address_reports(
    state: LockState,
    patterns: Sequence[str],
    load: Loader,
    *,
    local_dir: Callable[[RecordedResult], str | None] = lambda _run: None,
    seed: int = stats.DEFAULT_SEED,
) -> list[AddressReport]:
    """One report per address: each recorded run's scores, each compared with the previous
    comparable run of the address (partial runs never serve as one)."""
    reports: list[AddressReport] = []
    for address in _addresses(state, patterns):
        runs = address_runs(state, address)
        baseline = state.baselines.get(address)
        scored = [score_run(run, load(run), seed=seed) for run in runs]
        lines: list[RunLine] = []
        for index, report in enumerate(scored):
            older, changes = previous_comparable(runs, index)
            versus: dict[int, float] = {}
            if older is not None:
                before = {a.index: a.pass_at_1 for a in scored[runs.index(older)].agents}
                for agent in report.agents:
                    prior = before.get(agent.index)
                    if agent.pass_at_1 is not None and prior is not None:
                        versus[agent.index] = agent.pass_at_1 - prior
            lines.append(
                RunLine(
                    report=report,
                    previous=older.label if older is not None else None,
                    previous_changes=tuple(changes) if older is None else (),
                    versus_previous=versus,
                    baseline=baseline is not None and baseline.run_id == report.run.run_id,
                    local_dir=local_dir(report.run),
                )
            )
        reports.append(
            AddressReport(
                address=address,
                runs=tuple(lines),
                baseline=(baseline.run_name or baseline.run_id) if baseline else None,
            )
        )
    return reports


def _agent_label(run: RecordedResult, outcomes: RunOutcomes | None, index: int) -> str:
    if outcomes is not None and index in outcomes.agents:
        return outcomes.agents[index].label
    for agent in run.agents:
        if agent.agent_index == index:
            return f"{agent.model or f'agent {index + 1}'} · {agent.harness or 'default'}"
    return f"agent {index + 1}"


def _check_agent(ref: RunRef, run: RecordedResult, outcomes: RunOutcomes | None) -> int:
    index = ref.agent or 0
    known = set(outcomes.tasks) if outcomes is not None and outcomes.paired else set()
    known |= {a.agent_index for a in run.agents}
    if known and index not in known:
        raise UsageError(
            f"{ref.text}: run {run.label} has no agent {index + 1}",
            f"its agents: {', '.join(str(i + 1) for i in sorted(known))}",
        )
    return index


def build_compare(
    state: LockState,
    left_ref: RunRef,
    right_ref: RunRef,
    load: Loader,
    *,
    margin: float = DEFAULT_MARGIN,
    seed: int = stats.DEFAULT_SEED,
) -> list[CompareReport]:
    """The comparison of two runs (or agents). With no agent named and both runs having
    the same number of agents, agent i is compared with agent i, one report each."""
    left, right = resolve(state, left_ref), resolve(state, right_ref)
    lo, ro = load(left), load(right)
    if left_ref.agent is None and right_ref.agent is None:
        left_agents = sorted(lo.tasks) if lo and lo.paired else [a.agent_index for a in left.agents]
        right_agents = (
            sorted(ro.tasks) if ro and ro.paired else [a.agent_index for a in right.agents]
        )
        pairs = (
            list(zip(left_agents, right_agents, strict=True))
            if len(left_agents) == len(right_agents) and left_agents
            else [(0, 0)]
        )
    else:
        pairs = [(_check_agent(left_ref, left, lo), _check_agent(right_ref, right, ro))]
    notes: list[str] = []
    for run in (left, right):
        if run.partial:
            notes.append(f"{run.label} is partial ({run.status}): its missing tasks are left out")
    reports: list[CompareReport] = []
    for li, ri in pairs:
        if lo is not None and ro is not None and lo.paired and ro.paired:
            comparison = compare_outcomes(
                lo.tasks.get(li, {}), ro.tasks.get(ri, {}), margin=margin, seed=seed
            )
        else:
            comparison = _unpaired(left, lo, li, right, ro, ri, margin)
        reports.append(
            CompareReport(
                left=f"{left.address}@{left.label}",
                right=f"{right.address}@{right.label}",
                left_agent=_agent_label(left, lo, li),
                right_agent=_agent_label(right, ro, ri),
                comparison=comparison,
                notes=tuple(notes),
            )
        )
    return reports


def _unpaired(
    left: RecordedResult,
    lo: RunOutcomes | None,
    li: int,
    right: RecordedResult,
    ro: RunOutcomes | None,
    ri: int,
    margin: float,
) -> Comparison:
    missing: list[str] = []
    for run, outcomes in ((left, lo), (right, ro)):
        if outcomes is None:
            missing.append(f"{run.label}: results.csv not available")
        elif outcomes.missing:
            missing.append(f"{run.label}: results.csv lacks {', '.join(outcomes.missing)}")
    note = "unpaired comparison of the Platform summaries (" + "; ".join(missing) + ")"
    la = next((a for a in left.agents if a.agent_index == li), None)
    ra = next((a for a in right.agents if a.agent_index == ri), None)
    if la is None or ra is None or la.pass_at_1 is None or ra.pass_at_1 is None:
        raise UsageError(
            f"cannot compare {left.label} with {right.label}: no per-task results and no "
            "recorded pass@1 for both",
            "run `osmosis-apply` to download the ended runs' outputs, or check the "
            "Platform is reachable so `osmosis-results` can fetch them",
        )
    return compare_summaries(
        la.pass_at_1, la.n or 0, ra.pass_at_1, ra.n or 0, margin=margin, note=note
    )
