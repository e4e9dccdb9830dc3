"""What a submit may cost in dollars, from what recorded runs of the same model cost per
attempt. Only an estimate (tasks differ in length), so it is a range with its basis.

The samples come from every run this lockfile recorded scores for: the current entries and
the history (a replaced or re-run config's previous runs are the best evidence of what the
next one costs). Per agent, runs of the same model on the same benchmark are used first;
without any, runs of the same model on other benchmarks, and the basis says so. A config
with an agent whose model has no recorded cost anywhere has no estimate (``None``), which
the budget guard names rather than passing it silently (``plan.guards``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from reconciler.model import DesiredRun, LockState, RunResults, model_identity


class CostEstimate(msgspec.Struct, frozen=True):
    low: float
    high: float
    basis: str
    """Where the figures come from, for people."""


class CostSample(msgspec.Struct, frozen=True):
    """One recorded run's cost per attempt for one of its agents."""

    run: str
    """The run it comes from (its id, else its address): runs are counted, not agents."""
    benchmark_id: str
    per_attempt: float


CostTable = Mapping[str, tuple[CostSample, ...]]
"""Model (``model_identity``) -> the samples of every recorded run's agents of that model."""


def cost_table(state: LockState) -> dict[str, tuple[CostSample, ...]]:
    """Cost per attempt of every recorded agent with scores, current entries and history:
    the agent's ``cost_per_task`` (all its attempts of one task) over the run's
    ``attempts_per_task``."""
    table: dict[str, list[CostSample]] = {}

    def add(
        run: str,
        benchmark_id: str | None,
        models: Sequence[str],
        per_task: int,
        results: RunResults | None,
    ) -> None:
        if results is None or not benchmark_id:
            return
        for agent in results.agents:
            if agent.cost_per_task is None or not 0 <= agent.agent_index < len(models):
                continue
            sample = CostSample(run, benchmark_id, agent.cost_per_task / per_task)
            table.setdefault(models[agent.agent_index], []).append(sample)

    for entry in state.runs.values():
        if entry.spec:
            add(
                entry.run_id or entry.address,
                entry.benchmark_id,
                spec_models(entry.spec),
                entry.attempts_per_task,
                entry.results,
            )
    for old in state.history:
        if old.models:
            add(
                old.run_id or old.address,
                old.benchmark_id,
                old.models,
                old.attempts_per_task or 1,  # None: 1 (not written when 1)
                old.results,
            )
    return {
        model: tuple(sorted(samples, key=lambda s: (s.per_attempt, s.run)))
        for model, samples in table.items()
    }


def spec_models(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Each agent's model (``model_identity``) of a submit body, in agent order."""
    return tuple(
        model_identity((agent or {}).get("model") or {}) for agent in spec.get("agents") or []
    )


def estimate(
    wanted: DesiredRun, benchmark_id: str | None, tasks: int | None, table: CostTable
) -> CostEstimate | None:
    """The dollar range of ``wanted``'s attempts; None when some agent's model has no
    recorded cost (on any benchmark)."""
    if tasks is None:
        return None
    attempts = tasks * wanted.attempts_per_task
    low = high = 0.0
    same: set[str] = set()
    other: set[str] = set()
    same_models: list[str] = []
    other_models: list[str] = []
    models = spec_models(wanted.spec)
    if not models:
        return None
    for model in models:
        samples = table.get(model, ())
        here = [s for s in samples if benchmark_id is not None and s.benchmark_id == benchmark_id]
        used = here or list(samples)
        if not used:
            return None
        low += used[0].per_attempt * attempts
        high += used[-1].per_attempt * attempts
        runs, names = (same, same_models) if here else (other, other_models)
        runs.update(s.run for s in used)
        if model not in names:
            names.append(model)
    parts = []
    if same_models:
        parts.append(f"{_runs(len(same))} of {', '.join(same_models)} on this benchmark")
    if other_models:
        parts.append(f"{_runs(len(other))} of {', '.join(other_models)} on other benchmarks")
    return CostEstimate(
        low=round(low, 4),
        high=round(high, 4),
        basis="cost per attempt of " + "; ".join(parts),
    )


def _runs(count: int) -> str:
    return f"{count} recorded run" if count == 1 else f"{count} recorded runs"
