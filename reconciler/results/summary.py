"""Per-run, per-agent numbers (pure): ``numbers.RunNumbers`` for every agent of a run.

From a run's ``results.csv`` outcomes when they are on disk (``numbers.count_numbers``),
else the Platform's summary recorded in the lockfile (``numbers.summary_numbers``), marked
as such. Both follow the same definitions, so a run shows the same pass@1 either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.results import stats
from reconciler.results.data import RunOutcomes
from reconciler.results.numbers import RunNumbers, count_numbers, summary_numbers
from reconciler.results.runs import RecordedResult

__all__ = ["AgentScore", "RunReport", "score_run", "threshold_note", "threshold_of"]


@dataclass(frozen=True)
class AgentScore:
    """One agent of a run: who it is and its numbers."""

    index: int
    label: str
    model: str | None
    harness: str | None
    numbers: RunNumbers

    @property
    def pass_at_1(self) -> float | None:
        return self.numbers.pass_at_1

    @property
    def ci(self) -> stats.Interval | None:
        return self.numbers.ci

    @property
    def tasks(self) -> int | None:
        return self.numbers.tasks


@dataclass(frozen=True)
class RunReport:
    run: RecordedResult
    agents: tuple[AgentScore, ...]
    source: str
    """``results.csv`` (counted here) or ``summary`` (the Platform's, from the lockfile)."""
    note: str | None = None
    retried: int = 0
    """Attempts that came from retry runs (``--retry-errored``), in place of as many
    errored ones of the run."""
    retry_runs: tuple[str, ...] = ()
    """Those retry runs, oldest first."""


def _label(model: str | None, harness: str | None, index: int) -> str:
    return f"{model or f'agent {index + 1}'} · {harness or 'default'}"


def threshold_of(
    run: RecordedResult,
    outcomes: RunOutcomes | None,
    thresholds: Mapping[str, float] | None,
) -> float | None:
    """The pass threshold of a run: the one recorded with it (the config's, else the
    catalog's, when it was recorded), else the catalog's now (``thresholds``: benchmark id
    -> threshold, looked up only for fractional rewards, where it matters; a run from a
    lockfile written before thresholds were recorded, which ``threshold_note`` says).
    None: neither is known, and the Platform's own outcome column decides."""
    if run.pass_threshold is not None:
        return run.pass_threshold
    if outcomes is None or not outcomes.fractional or not thresholds or not run.benchmark_id:
        return None
    return thresholds.get(run.benchmark_id)


def threshold_note(run: RecordedResult, threshold: float | None) -> str | None:
    """What a reader must know when ``threshold`` (``threshold_of``) is the catalog's now
    rather than the run's own: its config may have set another, and the lockfile that
    recorded the run predates the record of it."""
    if threshold is None or run.pass_threshold is not None:
        return None
    return (
        "no pass threshold is recorded with this run (a lockfile written before it was): "
        f"its rewards are counted at the catalog's {threshold:g}"
    )


def score_run(
    run: RecordedResult,
    outcomes: RunOutcomes | None,
    *,
    thresholds: Mapping[str, float] | None = None,
) -> RunReport:
    """The run's per-agent numbers (see the module docstring for the two sources)."""
    recorded = {a.agent_index: a for a in run.agents}
    if outcomes is None or not outcomes.paired or not outcomes.tasks:
        note = None
        if outcomes is not None and outcomes.missing:
            note = "results.csv lacks " + ", ".join(outcomes.missing) + ": Platform summary"
        if run.retries:
            runs = ", ".join(r.label for r in run.retries)
            word = "run" if len(run.retries) == 1 else "runs"
            why = ": the run's results.csv is not at hand" if outcomes is None else ""
            note = "; ".join(n for n in (note, f"retry {word} {runs} not counted{why}") if n)
        agents = tuple(
            AgentScore(
                index=a.agent_index,
                label=_label(a.model, a.harness, a.agent_index),
                model=a.model,
                harness=a.harness,
                numbers=summary_numbers(a, run.attempts_per_task),
            )
            for a in run.agents
        )
        return RunReport(run=run, agents=agents, source="summary", note=note)
    threshold = threshold_of(run, outcomes, thresholds)
    note = threshold_note(run, threshold)
    scores: list[AgentScore] = []
    for index in sorted(outcomes.tasks):
        key = outcomes.agents[index]
        model = key.model or (recorded[index].model if index in recorded else None)
        harness = key.harness or (recorded[index].harness if index in recorded else None)
        numbers = count_numbers(
            outcomes.attempted(index, threshold),
            asked_k=run.attempts_per_task,
            has_cost=outcomes.has_cost,
            has_tokens=outcomes.has_tokens,
            fractional=outcomes.fractional,
            pass_threshold=threshold,
        )
        scores.append(AgentScore(index, _label(model, harness, index), model, harness, numbers))
    return RunReport(
        run=run,
        agents=tuple(scores),
        source="results.csv",
        note="; ".join(n for n in (note, retry_note(outcomes)) if n) or None,
        retried=outcomes.retried_attempts,
        retry_runs=outcomes.retry_runs,
    )


def retry_note(outcomes: RunOutcomes) -> str | None:
    """``6 attempts from retry run calm-yak, in place of errored ones`` (and the retry runs
    not merged because their files are not at hand); None without retries."""
    parts = []
    if outcomes.retry_runs:
        runs = ", ".join(outcomes.retry_runs)
        word = "run" if len(outcomes.retry_runs) == 1 else "runs"
        attempts = outcomes.retried_attempts
        parts.append(
            f"{attempts:,} attempt{'' if attempts == 1 else 's'} from retry {word} {runs}, "
            "in place of errored ones"
        )
    if outcomes.retries_left_out:
        parts.append(
            "retry run "
            + ", ".join(outcomes.retries_left_out)
            + " not counted: its results.csv is not at hand (osmosis-apply downloads it)"
        )
    return "; ".join(parts) or None
