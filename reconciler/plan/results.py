"""The results table: scores of recorded ended runs next to the address's previous
comparable run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reconciler.model import (
    AgentResult,
    BenchmarkInfo,
    LeaderboardScore,
    LockState,
    RecordedRun,
    ResultRow,
    RetriedResult,
    RunStatus,
    glob_match,
)
from reconciler.results.runs import address_runs, leaderboard_comparable, previous_comparable


def result_rows(
    recorded: LockState,
    targets: tuple[str, ...] = (),
    benchmarks: Iterable[BenchmarkInfo | None] = (),
    retried: Mapping[str, RetriedResult] | None = None,
) -> tuple[ResultRow, ...]:
    """One row per agent of every recorded ended run that has scores, by address.

    Comparable by construction (``reconciler.results.runs``): each row carries the same
    agent index's scores from the address's previous *comparable* run (same benchmark, task
    selection and agents, and complete: a failed or stopped run is partial and is never
    another run's previous), else what changed; and the benchmark's published score for the
    same model and harness (``benchmarks``: the observed catalog entries) only when the run
    covered the full benchmark or a recommended task set.
    ``targets`` (address globs, empty = all) narrows the table like it narrows the plan.

    An address whose recorded run is a retry run (``--retry-errored``) shows the run it
    retried with the retry runs' attempts in place of its errored ones: ``retried`` (from
    ``results.retried.retried_results``, the rule ``osmosis-results`` counts by), else the
    retried run's own summary, labelled as not counting the retry.
    """
    catalog = {info.id: info for info in benchmarks if info is not None}
    rows: list[ResultRow] = []
    for address in sorted(recorded.runs):
        entry = retried_run(recorded, recorded.runs[address])
        if entry.results is None or not RunStatus.of(entry.status).is_terminal:
            continue
        if targets and not glob_match(address, targets):
            continue
        agents, counted, not_counted = _with_retries(recorded.runs[address], entry, retried)
        runs = address_runs(recorded, address)
        older, changes = previous_comparable(runs, 0) if runs else (None, [])
        prev_agents: dict[int, AgentResult] = (
            {a.agent_index: a for a in older.agents} if older is not None else {}
        )
        info = catalog.get(entry.benchmark_id or "")
        board_ok = info is not None and leaderboard_comparable(entry.spec, info)
        asked = entry.attempts_per_task
        for agent in sorted(agents, key=lambda a: a.agent_index):
            before = prev_agents.get(agent.agent_index)
            if before is not None and before.attempts_per_task is None and older is not None:
                before = before.model_copy(update={"attempts_per_task": older.attempts_per_task})
            if agent.attempts_per_task is None:
                # Recorded before the lockfile kept k: the config asked for it.
                agent = agent.model_copy(update={"attempts_per_task": asked})
            rows.append(
                ResultRow(
                    address=address,
                    run_id=entry.run_id,
                    run_name=entry.run_name,
                    status=entry.status,
                    agent=agent,
                    previous=before,
                    previous_run_id=older.run_id if before is not None and older else None,
                    previous_run_name=older.run_name if before is not None and older else None,
                    previous_note="; ".join(changes) if older is None and changes else None,
                    leaderboard=published_score(info, entry, agent)
                    if info is not None and board_ok
                    else None,
                    unavailable_tasks=len(info.unavailable_tasks) if info else 0,
                    unavailable_reason=info.unavailable_reason if info else None,
                    stage="retried" if entry.retry_of else entry.stage,
                    retry_runs=counted,
                    retries_not_counted=not_counted,
                )
            )
    return tuple(rows)


def retried_run(recorded: LockState, entry: RecordedRun) -> RecordedRun:
    """The run whose result the address shows: for a retry run (``--retry-errored``), the
    run it retried, as the history keeps it (``retry_of`` kept as the mark), whose row is
    labelled so; ``osmosis-results`` merges the retry's attempts into it."""
    if entry.retry_of is None:
        return entry
    old = next(
        (h for h in recorded.history if h.run_id == entry.retry_of and h.address == entry.address),
        None,
    )
    if old is None or old.results is None:
        return entry.model_copy(update={"results": None})
    return entry.model_copy(
        update={
            "run_id": old.run_id,
            "run_name": old.run_name,
            "status": old.status,
            "results": old.results,
            "benchmark_id": old.benchmark_id or entry.benchmark_id,
        }
    )


def _with_retries(
    recorded: RecordedRun, shown: RecordedRun, retried: Mapping[str, RetriedResult] | None
) -> tuple[tuple[AgentResult, ...], tuple[str, ...], tuple[str, ...]]:
    """The agents ``shown`` (``retried_run`` of ``recorded``) is listed with, the retry
    runs their numbers count and those they do not: the merged result when it was counted,
    else the retried run's own summary, which counts no retry."""
    assert shown.results is not None
    if recorded.retry_of is None:
        return shown.results.agents, (), ()
    merged = (retried or {}).get(recorded.address)
    if merged is None or merged.run_id != shown.run_id:
        return shown.results.agents, (), (recorded.run_name or recorded.run_id or "?",)
    if not merged.agents:
        return shown.results.agents, (), merged.not_counted
    return merged.agents, merged.retry_runs, merged.not_counted


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
