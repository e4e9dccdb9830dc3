"""What a submit may cost in dollars, from what recorded runs of the same benchmark and model
cost per attempt. Only an estimate (tasks differ in length), so it is a range with its basis,
and only where every agent's model has a recorded run on the benchmark."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.model import DesiredRun, LockState, model_identity


@dataclass(frozen=True)
class CostEstimate:
    low: float
    high: float
    basis: str
    """Where the figures come from, for people."""


CostTable = Mapping[tuple[str, str], tuple[float, ...]]
"""(benchmark id, model) -> cost per attempt (USD) of each recorded run's agent."""


def cost_table(state: LockState) -> dict[tuple[str, str], tuple[float, ...]]:
    """Cost per attempt of every recorded run's agents that have scores: the agent's
    ``cost_per_task`` (all its attempts of one task) over the run's ``attempts_per_task``."""
    table: dict[tuple[str, str], list[float]] = {}
    for entry in state.runs.values():
        if entry.results is None or not entry.benchmark_id or not entry.spec:
            continue
        agents = entry.spec.get("agents") or []
        per_task = _attempts_per_task(entry.spec)
        for agent in entry.results.agents:
            if agent.cost_per_task is None or not 0 <= agent.agent_index < len(agents):
                continue
            model = model_identity((agents[agent.agent_index] or {}).get("model") or {})
            table.setdefault((entry.benchmark_id, model), []).append(agent.cost_per_task / per_task)
    return {key: tuple(sorted(values)) for key, values in table.items()}


def estimate(
    wanted: DesiredRun, benchmark_id: str | None, tasks: int | None, table: CostTable
) -> CostEstimate | None:
    """The dollar range of ``wanted``'s attempts; None without a recorded cost for every
    agent's model on this benchmark."""
    if benchmark_id is None or tasks is None:
        return None
    attempts = tasks * wanted.attempts_per_task
    low = high = 0.0
    runs = 0
    models: list[str] = []
    for agent in wanted.spec.get("agents") or []:
        model = model_identity(agent.get("model") or {})
        samples = table.get((benchmark_id, model))
        if not samples:
            return None
        low += samples[0] * attempts
        high += samples[-1] * attempts
        runs += len(samples)
        if model not in models:
            models.append(model)
    if not models:
        return None
    what = "run" if runs == 1 else "runs"
    return CostEstimate(
        low=round(low, 4),
        high=round(high, 4),
        basis=f"cost per attempt of {runs} recorded {what} of {', '.join(models)} on this "
        "benchmark",
    )


def _attempts_per_task(spec: Mapping[str, Any]) -> int:
    value = (spec.get("execution_config") or {}).get("attempts_per_task", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
