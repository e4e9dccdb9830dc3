"""Recorded runs with per-task outcomes, built in memory for the results tests: a lockfile
state, each run's ``results.csv`` text, and the loader ``osmosis-results`` would use."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from reconciler.model import (
    AgentResult,
    Baseline,
    HistoryEntry,
    LockState,
    RecordedRun,
    RunResults,
    selection_digest,
)
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.runs import RecordedResult

BENCHMARK = "bench-tb"
SPEC = {
    "experiment_config": {"benchmark": "terminal-bench-2-1"},
    "tasks_config": {"categories": ["software-engineering"]},
    "agents": [{"harness": "terminus-2", "model": {"model": "openai/gpt-5.2"}}],
}
T0 = datetime(2026, 5, 1, tzinfo=UTC)

Attempt = tuple[str, str, float, float]
"""(task, outcome, reward, cost) of one attempt."""


def results_csv(attempts: Sequence[Attempt], *, model: str = "openai/gpt-5.2") -> str:
    """A ``results.csv`` with the local Platform's columns (one agent)."""
    lines = ["result_id,agent_index,harness,model,task,attempt,outcome,reward,input_tokens,"
             "output_tokens,cost_usd"]  # fmt: skip
    seen: dict[str, int] = {}
    for n, (task, outcome, reward, cost) in enumerate(attempts):
        seen[task] = seen.get(task, 0) + 1
        lines.append(
            f"res_{n},0,terminus-2,{model},{task},{seen[task]},{outcome},{reward},30000,5000,{cost}"
        )
    return "\n".join(lines) + "\n"


def attempts_of(rates: Sequence[float], k: int, rng: random.Random) -> list[Attempt]:
    """k attempts at each task of the given true pass rates."""
    return [
        (f"t{t:03d}", "passed" if rng.random() < rate else "failed", 0.0, 0.25)
        for t, rate in enumerate(rates)
        for _ in range(k)
    ]


def with_rewards(attempts: Sequence[Attempt]) -> list[Attempt]:
    """The same attempts with their reward set from the outcome (1 passed, 0 otherwise)."""
    return [(t, o, 1.0 if o == "passed" else 0.0, c) for t, o, _r, c in attempts]


def summary(outcomes: RunOutcomes, *, k: int) -> RunResults:
    """The Platform's summary of a run, computed by its own rules (as the local Platform
    does): pass@1 over tasks with errored attempts as not passed, Wilson over the tasks."""
    from reconciler.results.numbers import count_numbers

    numbers = count_numbers(
        outcomes.attempted(0), asked_k=k, has_cost=outcomes.has_cost, has_tokens=True
    )
    assert numbers.pass_at_1 is not None and numbers.ci is not None
    return RunResults(
        agents=(
            AgentResult(
                agent_index=0,
                harness="terminus-2",
                model="openai/gpt-5.2",
                model_id="openai/gpt-5.2",
                pass_at_1=round(numbers.pass_at_1, 4),
                ci_low=round(numbers.ci.low, 4),
                ci_high=round(numbers.ci.high, 4),
                n=numbers.tasks,
                k=k if k > 1 else None,
                pass_at_k=round(numbers.pass_at_k, 4) if numbers.pass_at_k is not None else None,
                cost_per_task=numbers.cost_per_task,
                tokens_per_task=numbers.tokens_per_task,
                errored=numbers.errored,
                attempts_per_task=k,
            ),
        ),
        errored=numbers.errored,
    )


class Family:
    """Recorded runs of several addresses: ``add`` them, then ``state`` and ``load``."""

    def __init__(self) -> None:
        self.runs: dict[str, RecordedRun] = {}
        self.history: list[HistoryEntry] = []
        self.files: dict[str, str] = {}
        self.baselines: dict[str, Baseline] = {}
        self.clock = T0

    def add(
        self,
        address: str,
        run_id: str,
        csv_text: str,
        *,
        k: int = 1,
        spec: Mapping[str, object] | None = None,
        digest: str = "sha256:" + "a" * 64,
        stage: str | None = None,
        status: str = "finished",
    ) -> None:
        """A run of ``address`` (the newest so far); the one before moves to history."""
        body = dict(spec or {**SPEC, "execution_config": {"attempts_per_task": k}})
        self.clock += timedelta(hours=1)
        self.files[run_id] = csv_text
        results = summary(parse_results_csv(csv_text), k=k)
        old = self.runs.get(address)
        if old is not None and old.run_id is not None:
            self.history.insert(
                0,
                HistoryEntry(
                    address=address,
                    run_id=old.run_id,
                    run_name=old.run_name,
                    spec_digest=old.spec_digest,
                    status=old.status,
                    submitted_at=old.submitted_at,
                    reason="rerun",
                    benchmark_id=BENCHMARK,
                    task_count=old.task_count,
                    selection=selection_digest(old.spec),
                    results=old.results,
                    stage=old.stage,
                    attempts_per_task=k,
                ),
            )
        self.runs[address] = RecordedRun(
            address=address,
            spec_digest=digest,
            spec=body,
            run_id=run_id,
            run_name=f"name-{run_id}",
            status=status,
            submitted_at=self.clock,
            observed_at=self.clock,
            benchmark_id=BENCHMARK,
            task_count=results.agents[0].n,
            results=results,
            stage=stage,  # type: ignore[arg-type]
            requested_by="0123456789abcdef0123456789abcdef01234567",
        )

    def accept(self, address: str, run_id: str) -> None:
        self.baselines[address] = Baseline(
            run_id=run_id, run_name=f"name-{run_id}", accepted_at=self.clock
        )

    def state(self) -> LockState:
        return LockState(
            lineage="l",
            platform="local",
            workspace="w",
            repository="github.com/acme/evals",
            runs=dict(self.runs),
            history=tuple(self.history),
            baselines=dict(self.baselines),
        )

    def load(self) -> Callable[[RecordedResult], RunOutcomes | None]:
        def loader(run: RecordedResult) -> RunOutcomes | None:
            text = self.files.get(run.run_id)
            return parse_results_csv(text) if text is not None else None

        return loader
