"""A run's result with its retry runs' attempts in place of its errored ones (pure, given a
reader): ``osmosis-results``, the plan's retry (``engine.observe``) and the plan's results
table (``retried_results``) read it the same way, so the address has one number on every
surface (docs/retrying.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from reconciler.model import AgentResult, BenchmarkInfo, LockState, RetriedResult
from reconciler.results.data import RunOutcomes, merge_retry
from reconciler.results.runs import RecordedResult, address_runs
from reconciler.results.summary import AgentScore, score_run

__all__ = ["catalog_thresholds", "merged_outcomes", "retried_results"]

Reader = Callable[[RecordedResult], RunOutcomes | None]


def merged_outcomes(
    run: RecordedResult, read: Reader
) -> tuple[RunOutcomes | None, tuple[str, ...]]:
    """``run``'s outcomes with each of its retries (``run.retries``, oldest first) merged in,
    and the retries left out because their ``results.csv`` is not at hand (their labels).
    A retry is merged only after every earlier one: a later retry re-ran what was still
    errored after them."""
    outcomes = read(run)
    if outcomes is None or not run.retries:
        return outcomes, ()
    left_out: list[str] = []
    for retry in run.retries:
        found = read(retry) if not left_out else None
        if found is None or not found.paired:
            left_out.append(retry.label)
            continue
        outcomes = merge_retry(outcomes, found, retry.retry_agents, retry.label)
    if left_out:
        outcomes = replace(outcomes, retries_left_out=tuple(left_out))
    return outcomes, tuple(left_out)


def retried_results(
    state: LockState, read: Reader, thresholds: Mapping[str, float] | None = None
) -> dict[str, RetriedResult]:
    """Address -> its result merged with its retry runs (``merged_outcomes``), counted as
    ``osmosis-results`` counts it (``score_run``), for every address whose recorded run is
    a retry run. ``thresholds``: benchmark id -> the catalog's pass threshold."""
    out: dict[str, RetriedResult] = {}
    for address in sorted(state.runs):
        if state.runs[address].retry_of is None:
            continue
        run = next((r for r in address_runs(state, address) if r.current and r.retries), None)
        if run is None:
            continue
        outcomes, left_out = merged_outcomes(run, read)
        report = score_run(run, outcomes, thresholds=thresholds)
        if report.source != "results.csv":
            out[address] = RetriedResult(
                run_id=run.run_id, not_counted=tuple(r.label for r in run.retries)
            )
            continue
        recorded = {a.agent_index: a for a in run.agents}
        out[address] = RetriedResult(
            run_id=run.run_id,
            agents=tuple(_agent_result(recorded.get(a.index), a) for a in report.agents),
            retry_runs=report.retry_runs,
            not_counted=left_out,
        )
    return out


def catalog_thresholds(infos: Iterable[BenchmarkInfo | None]) -> dict[str, float]:
    """Benchmark id -> the catalog's pass threshold, of the benchmarks that set one."""
    return {
        info.id: info.pass_threshold
        for info in infos
        if info is not None and info.pass_threshold is not None
    }


def _agent_result(recorded: AgentResult | None, score: AgentScore) -> AgentResult:
    """The agent's recorded summary (who it is) with the counted numbers in place of the
    Platform's: the shape the plan's results table reads."""
    n = score.numbers
    base = recorded or AgentResult(agent_index=score.index, model=score.model)
    return base.model_copy(
        update={
            "pass_at_1": n.pass_at_1,
            "ci_low": n.ci.low if n.ci is not None else None,
            "ci_high": n.ci.high if n.ci is not None else None,
            "n": n.tasks,
            "k": n.k,
            "pass_at_k": n.pass_at_k,
            "cost_per_task": n.cost_per_task,
            "tokens_per_task": n.tokens_per_task,
            "errored": n.errored,
            "attempts_per_task": n.asked_k,
        }
    )
