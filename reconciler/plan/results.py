"""The results table: scores of recorded ended runs next to the address's previous run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reconciler.model import (
    AgentResult,
    BenchmarkInfo,
    LeaderboardScore,
    LockState,
    RecordedRun,
    ResultRow,
    RunStatus,
    glob_match,
)


def result_rows(
    recorded: LockState,
    targets: tuple[str, ...] = (),
    benchmarks: Iterable[BenchmarkInfo | None] = (),
) -> tuple[ResultRow, ...]:
    """One row per agent of every recorded ended run that has scores, by address.

    Each row carries the same agent index's scores from the address's newest earlier run
    that has them (history is newest first), so the table can say what changed, and the
    benchmark's published score for the same model and harness (``benchmarks``: the
    observed catalog entries) with its count of unavailable tasks.
    ``targets`` (address globs, empty = all) narrows the table like it narrows the plan.
    """
    catalog = {info.id: info for info in benchmarks if info is not None}
    previous: dict[str, tuple[str | None, str | None, dict[int, Any]]] = {}
    for old in recorded.history:
        if old.results is None or old.address in previous:
            continue
        current = recorded.runs.get(old.address)
        if current is not None and current.run_id == old.run_id:
            continue  # the same run (moved away and back): not an earlier run
        by_index = {agent.agent_index: agent for agent in old.results.agents}
        previous[old.address] = (old.run_id, old.run_name, by_index)
    rows: list[ResultRow] = []
    for address in sorted(recorded.runs):
        entry = recorded.runs[address]
        if entry.results is None or not RunStatus.of(entry.status).is_terminal:
            continue
        if targets and not glob_match(address, targets):
            continue
        prev_id, prev_name, prev_agents = previous.get(address, (None, None, {}))
        info = catalog.get(entry.benchmark_id or "")
        for agent in sorted(entry.results.agents, key=lambda a: a.agent_index):
            before = prev_agents.get(agent.agent_index)
            rows.append(
                ResultRow(
                    address=address,
                    run_id=entry.run_id,
                    run_name=entry.run_name,
                    status=entry.status,
                    agent=agent,
                    previous=before,
                    previous_run_id=prev_id if before is not None else None,
                    previous_run_name=prev_name if before is not None else None,
                    leaderboard=published_score(info, entry, agent) if info else None,
                    unavailable_tasks=len(info.unavailable_tasks) if info else 0,
                    unavailable_reason=info.unavailable_reason if info else None,
                )
            )
    return tuple(rows)


def published_score(
    info: BenchmarkInfo, entry: RecordedRun, agent: AgentResult
) -> LeaderboardScore | None:
    """The leaderboard entry for the agent's model and harness; of several (one per task
    set), the one measured on the run's own selection (``task_set``, else ``full``)."""
    models = {m for m in (agent.model_id, agent.model) if m}
    same = [e for e in info.leaderboard if e.model in models and e.harness == agent.harness]
    if not same:
        return None
    task_set = (entry.spec.get("tasks_config") or {}).get("task_set") or "full"
    return next((e for e in same if e.task_set == task_set), same[0])
