"""Per-run, per-agent scores with honest intervals (pure).

From a run's ``results.csv`` outcomes when they are on disk: pass@1 as the mean of the
per-task rates with ``stats.rate_interval`` (task as the cluster), pass@k by the unbiased
estimator averaged over tasks, mean cost and tokens per task with a task-level bootstrap
interval. Without the file, the Platform's summary recorded in the lockfile (its own
Wilson interval over tasks) is shown and marked as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.results import stats
from reconciler.results.data import RunOutcomes
from reconciler.results.runs import RecordedResult

__all__ = ["AgentScore", "RunReport", "score_run"]


@dataclass(frozen=True)
class AgentScore:
    index: int
    label: str
    model: str | None
    harness: str | None
    pass_at_1: float | None
    ci: stats.Interval | None
    tasks: int | None
    attempts: int | None
    """Scored attempts per task (the smallest over tasks)."""
    k: int | None = None
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    cost_per_task: float | None = None
    cost_ci: stats.Interval | None = None
    tokens_per_task: float | None = None
    errored: int = 0
    """Attempts that errored (infrastructure), excluded from the scores."""


@dataclass(frozen=True)
class RunReport:
    run: RecordedResult
    agents: tuple[AgentScore, ...]
    source: str
    """``results.csv`` (computed here) or ``summary`` (the Platform's, from the lockfile)."""
    note: str | None = None


def _label(model: str | None, harness: str | None, index: int) -> str:
    return f"{model or f'agent {index + 1}'} · {harness or 'default'}"


def score_run(
    run: RecordedResult, outcomes: RunOutcomes | None, *, seed: int = stats.DEFAULT_SEED
) -> RunReport:
    """The run's per-agent scores (see the module docstring for the two sources)."""
    recorded = {a.agent_index: a for a in run.agents}
    if outcomes is None or not outcomes.paired or not outcomes.tasks:
        note = None
        if outcomes is not None and outcomes.missing:
            note = "results.csv lacks " + ", ".join(outcomes.missing) + ": Platform summary"
        agents = tuple(
            AgentScore(
                index=a.agent_index,
                label=_label(a.model, a.harness, a.agent_index),
                model=a.model,
                harness=a.harness,
                pass_at_1=a.pass_at_1,
                ci=stats.Interval(a.ci_low, a.ci_high, "platform")
                if a.ci_low is not None and a.ci_high is not None
                else None,
                tasks=a.n,
                attempts=None,
                k=a.k,
                pass_at_k=a.pass_at_k,
                cost_per_task=a.cost_per_task,
                tokens_per_task=a.tokens_per_task,
            )
            for a in run.agents
        )
        return RunReport(run=run, agents=agents, source="summary", note=note)
    scores: list[AgentScore] = []
    for index in sorted(outcomes.tasks):
        key = outcomes.agents[index]
        tasks = outcomes.scored(index)
        errored = sum(o.errored for o in outcomes.tasks[index].values())
        model = key.model or (recorded[index].model if index in recorded else None)
        harness = key.harness or (recorded[index].harness if index in recorded else None)
        if not tasks:
            scores.append(
                AgentScore(index, _label(model, harness, index), model, harness, None, None, 0, 0,
                           errored=errored)
            )  # fmt: skip
            continue
        k = outcomes.attempts_per_task(index)
        rates = [o.rate for o in tasks.values()]
        pass_k = hat_k = None
        if k > 1:
            pass_k = stats.mean([stats.pass_at_k(o.attempts, o.passes, k) for o in tasks.values()])
            hat_k = stats.mean([stats.pass_hat_k(o.attempts, o.passes, k) for o in tasks.values()])
        cost = cost_ci = tokens = None
        if outcomes.has_cost:
            per_task = [o.cost / o.attempts for o in tasks.values()]
            cost = stats.mean(per_task)
            cost_ci = stats.bootstrap_ci(per_task, seed=seed)
        if outcomes.has_tokens:
            tokens = stats.mean([o.tokens / o.attempts for o in tasks.values()])
        scores.append(
            AgentScore(
                index=index,
                label=_label(model, harness, index),
                model=model,
                harness=harness,
                pass_at_1=stats.mean(rates),
                ci=stats.rate_interval(rates, k, seed=seed),
                tasks=len(tasks),
                attempts=k,
                k=k if k > 1 else None,
                pass_at_k=pass_k,
                pass_hat_k=hat_k,
                cost_per_task=cost,
                cost_ci=cost_ci,
                tokens_per_task=tokens,
                errored=errored,
            )
        )
    return RunReport(run=run, agents=tuple(scores), source="results.csv")
