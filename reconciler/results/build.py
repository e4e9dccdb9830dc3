"""Assembling reports from the lockfile and the runs' per-task outcomes (pure: the outcomes
come from a loader the caller passes in).

The regression gate is one family: each address's newest full run against its accepted
baseline, agent by agent. ``build_gate`` adjusts the family with Holm, and
``build_compare`` of a pair that belongs to the gate returns the same adjusted comparison,
so ``compare``, the pull-request comment and the report never show another verdict for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from reconciler.errors import UsageError
from reconciler.model import LockState, glob_match
from reconciler.results import stats
from reconciler.results.compare import (
    DEFAULT_MARGIN,
    Comparison,
    compare_outcomes,
    compare_summaries,
    holm,
)
from reconciler.results.data import RunOutcomes
from reconciler.results.gate import Gate
from reconciler.results.report import AddressReport, CompareReport, RunLine
from reconciler.results.runs import (
    RecordedResult,
    RunRef,
    address_runs,
    previous_comparable,
    renamed_from,
    resolve,
)
from reconciler.results.summary import score_run, threshold_note, threshold_of

__all__ = [
    "Gate",
    "Loader",
    "build_address_reports",
    "build_compare",
    "build_gate",
    "gate_pairs",
]

Loader = Callable[[RecordedResult], RunOutcomes | None]


def _addresses(state: LockState, patterns: Sequence[str]) -> list[str]:
    candidates = set(state.runs) | {
        h.address for h in state.history if h.run_id and h.reason != "moved"
    }
    # An address renamed away is shown under its new name, with its runs.
    followed = {old for address in state.runs for old in renamed_from(state, address)}
    known = sorted(a for a in candidates - followed if address_runs(state, a))
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
    thresholds: Mapping[str, float] | None = None,
) -> list[AddressReport]:
    """One report per address: each recorded run's numbers, each compared with the previous
    comparable run of the address (partial and smoke runs never serve as one).
    ``thresholds``: benchmark id -> the catalog's pass threshold, where known."""
    reports: list[AddressReport] = []
    for address in _addresses(state, patterns):
        runs = address_runs(state, address)
        baseline = state.baselines.get(address)
        scored = [score_run(run, load(run), thresholds=thresholds) for run in runs]
        lines: list[RunLine] = []
        for index, report in enumerate(scored):
            older, changes = previous_comparable(runs, index)
            versus: dict[int, float] = {}
            if older is not None and not report.run.smoke:
                before = {a.index: a.pass_at_1 for a in scored[runs.index(older)].agents}
                for agent in report.agents:
                    prior = before.get(agent.index)
                    if agent.pass_at_1 is not None and prior is not None:
                        versus[agent.index] = agent.pass_at_1 - prior
            lines.append(
                RunLine(
                    report=report,
                    previous=older.label if older is not None and versus else None,
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


@dataclass(frozen=True)
class _Side:
    run: RecordedResult
    outcomes: RunOutcomes | None
    threshold: float | None


def _agent_pairs(
    left: _Side, right: _Side, left_ref: RunRef, right_ref: RunRef
) -> list[tuple[int, int]]:
    if left_ref.agent is not None or right_ref.agent is not None:
        return [
            (
                _check_agent(left_ref, left.run, left.outcomes),
                _check_agent(right_ref, right.run, right.outcomes),
            )
        ]

    def indices(side: _Side) -> list[int]:
        if side.outcomes is not None and side.outcomes.paired:
            return sorted(side.outcomes.tasks)
        return [a.agent_index for a in side.run.agents]

    lefts, rights = indices(left), indices(right)
    if len(lefts) == len(rights) and lefts:
        return list(zip(lefts, rights, strict=True))
    return [(0, 0)]


def _compare_pairs(
    state: LockState,
    left_ref: RunRef,
    right_ref: RunRef,
    load: Loader,
    *,
    margin: float,
    seed: int,
    thresholds: Mapping[str, float] | None,
) -> list[CompareReport]:
    """The comparison of two runs (or agents), unadjusted."""
    sides = []
    for ref in (left_ref, right_ref):
        run = resolve(state, ref)
        outcomes = load(run)
        sides.append(_Side(run, outcomes, threshold_of(run, outcomes, thresholds)))
    left, right = sides
    same = (
        left.run.run_id != right.run.run_id
        and left.run.spec_digest is not None
        and left.run.spec_digest == right.run.spec_digest
    )
    notes = tuple(
        f"{side.run.label} is partial ({side.run.status}): its missing tasks are left out"
        for side in (left, right)
        if side.run.partial
    ) + tuple(
        f"{side.run.label}: {note}"
        for side in (left, right)
        if (note := threshold_note(side.run, side.threshold))
    )
    reports: list[CompareReport] = []
    for li, ri in _agent_pairs(left, right, left_ref, right_ref):
        lo, ro = left.outcomes, right.outcomes
        if lo is not None and ro is not None and lo.paired and ro.paired:
            comparison = compare_outcomes(
                lo.attempted(li, left.threshold),
                ro.attempted(ri, right.threshold),
                margin=margin,
                seed=seed,
                asked=(left.run.attempts_per_task, right.run.attempts_per_task),
                same_config=same and li == ri,
            )
        else:
            comparison = _unpaired(left, li, right, ri, margin, same and li == ri)
        reports.append(
            CompareReport(
                left=f"{left.run.address}@{left.run.label}",
                right=f"{right.run.address}@{right.run.label}",
                left_agent=_agent_label(left.run, lo, li),
                right_agent=_agent_label(right.run, ro, ri),
                comparison=comparison,
                notes=notes,
                left_run=left.run.run_id,
                right_run=right.run.run_id,
            )
        )
    return reports


def gate_pairs(state: LockState, patterns: Sequence[str] = ()) -> list[tuple[str, str, str]]:
    """(address, baseline run id, newest full run id) of every address the gate checks:
    one with an accepted baseline and a newer full (never smoke) run."""
    pairs = []
    for address, baseline in sorted(state.baselines.items()):
        if patterns and not glob_match(address, tuple(patterns)):
            continue
        newest = next((r for r in address_runs(state, address) if not r.smoke), None)
        if newest is None or newest.run_id == baseline.run_id:
            continue
        if not any(r.run_id == baseline.run_id for r in address_runs(state, address)):
            continue
        pairs.append((address, baseline.run_id, newest.run_id))
    return pairs


def build_gate(
    state: LockState,
    load: Loader,
    *,
    patterns: Sequence[str] = (),
    margin: float = DEFAULT_MARGIN,
    seed: int = stats.DEFAULT_SEED,
    thresholds: Mapping[str, float] | None = None,
    strict: bool = False,
) -> Gate:
    """Every address's newest full run against its accepted baseline, one family (Holm)."""
    reports: list[CompareReport] = []
    for address, baseline_id, newest_id in gate_pairs(state, patterns):
        reports += _compare_pairs(
            state,
            RunRef(address, baseline_id),
            RunRef(address, newest_id),
            load,
            margin=margin,
            seed=seed,
            thresholds=thresholds,
        )
    adjusted = holm([r.comparison for r in reports])
    return Gate(
        tuple(replace(r, comparison=c) for r, c in zip(reports, adjusted, strict=True)),
        strict=strict,
    )


def build_compare(
    state: LockState,
    left_ref: RunRef,
    right_ref: RunRef,
    load: Loader,
    *,
    margin: float = DEFAULT_MARGIN,
    seed: int = stats.DEFAULT_SEED,
    thresholds: Mapping[str, float] | None = None,
) -> list[CompareReport]:
    """The comparison of two runs (or agents). With no agent named and both runs having
    the same number of agents, agent i is compared with agent i, one report each. A pair
    the regression gate checks (an accepted baseline and its address's newest full run)
    comes adjusted as the gate adjusts it, with a note saying so."""
    reports = _compare_pairs(
        state, left_ref, right_ref, load, margin=margin, seed=seed, thresholds=thresholds
    )
    pairs = {(b, n) for _a, b, n in gate_pairs(state)}
    if not reports or (reports[0].left_run, reports[0].right_run) not in pairs:
        return reports
    gate = build_gate(state, load, margin=margin, seed=seed, thresholds=thresholds)
    if len(gate.comparisons) < 2:
        return reports
    adjusted = {(r.left_run, r.right_run, r.left_agent, r.right_agent): r for r in gate.comparisons}
    out = []
    for r in reports:
        found = adjusted.get((r.left_run, r.right_run, r.left_agent, r.right_agent))
        out.append(
            replace(found, notes=(*found.notes, f"{gate.summary_line()}: this pair is one of them"))
            if found is not None
            else r
        )
    return out


def _unpaired(left: _Side, li: int, right: _Side, ri: int, margin: float, same: bool) -> Comparison:
    missing: list[str] = []
    for side in (left, right):
        if side.outcomes is None:
            missing.append(f"{side.run.label}: results.csv not available")
        elif side.outcomes.missing:
            missing.append(
                f"{side.run.label}: results.csv lacks {', '.join(side.outcomes.missing)}"
            )
    note = "unpaired comparison of the Platform summaries (" + "; ".join(missing) + ")"
    la = next((a for a in left.run.agents if a.agent_index == li), None)
    ra = next((a for a in right.run.agents if a.agent_index == ri), None)
    if la is None or ra is None or la.pass_at_1 is None or ra.pass_at_1 is None:
        raise UsageError(
            f"cannot compare {left.run.label} with {right.run.label}: no per-task results and "
            "no recorded pass@1 for both (" + "; ".join(missing) + ")",
            "run `osmosis-apply` to download the ended runs' outputs, or check the "
            "Platform is reachable so `osmosis-results` can fetch them",
        )
    return compare_summaries(
        la.pass_at_1, la.n or 0, ra.pass_at_1, ra.n or 0, margin=margin, note=note, same_config=same
    )
