"""The local Platform's scores agree with its own leaderboards (issue 37, finding 8).

A run's expected pass@1 is the leaderboard's value for a listed (model, harness) and lies
within the span of the leaderboard's intervals for any other model; a finished run's
pass@1, with its own 95 % interval, meets the leaderboard's interval (sampling noise is
real: a run of a listed model is one more sample, not a copy of the listed number).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reconciler.local_platform.catalog import seed_catalog, wilson
from reconciler.local_platform.simulation import (
    Run,
    agent_skill,
    make_schedule,
    off_ms,
    pass_at_1_by_agent,
)
from reconciler.model.status import RunStatus

BOARDS = [b for b in seed_catalog() if b["_leaderboard"]]
UNLISTED = ("openai/gpt-5.2", "terminus-2")


def board_tasks(benchmark: dict[str, Any]) -> tuple[str, ...]:
    """The tasks the leaderboard was measured on (the recommended set, else every task)."""
    recommended = [s["name"] for s in benchmark["task_sets"] if s["recommended"]]
    if recommended:
        return tuple(benchmark["_task_set_members"][recommended[0]])
    return tuple(t["name"] for t in benchmark["tasks"])


def agents(benchmark: dict[str, Any]) -> list[dict[str, Any]]:
    listed = [
        {"harness": row["harness"], "model": {"type": "provider", "model": row["model"]}}
        for row in benchmark["_leaderboard"]
    ]
    model, harness = UNLISTED
    return [*listed, {"harness": harness, "model": {"type": "provider", "model": model}}]


def finished_run(benchmark: dict[str, Any], seed: int) -> Run:
    tasks = board_tasks(benchmark)
    team = agents(benchmark)
    schedule = make_schedule(f"bmr_score{seed}", seed, len(tasks) * len(team))
    schedule = dataclasses.replace(schedule, final_status=RunStatus.FINISHED)
    body = {"agents": team}
    return Run(f"bmr_score{seed}", "n", "local", benchmark, body, tasks, 0.0, schedule, None, seed)


def span(benchmark: dict[str, Any]) -> tuple[float, float]:
    rows = [row["pass_at_1"] for row in benchmark["_leaderboard"]]
    return min(r["ci_low"] for r in rows), max(r["ci_high"] for r in rows)


@pytest.mark.parametrize("benchmark", BOARDS, ids=lambda b: b["source_ref"])
def test_the_expected_pass_at_1_is_the_leaderboards(benchmark: dict[str, Any]) -> None:
    from reconciler.local_platform.simulation import expected_pass_at_1, task_shifts

    run = finished_run(benchmark, 0)
    shifts = task_shifts(benchmark, run.tasks)
    team = agents(benchmark)
    for row, agent in zip(benchmark["_leaderboard"], team, strict=False):
        expected = expected_pass_at_1(agent_skill(run, agent), shifts)
        assert expected == pytest.approx(row["pass_at_1"]["value"], abs=1e-6), row["model"]
    low, high = span(benchmark)
    assert low <= expected_pass_at_1(agent_skill(run, team[-1]), shifts) <= high


@pytest.mark.parametrize("benchmark", BOARDS, ids=lambda b: b["source_ref"])
@pytest.mark.parametrize("seed", range(4))
def test_a_finished_runs_interval_meets_the_leaderboards(
    benchmark: dict[str, Any], seed: int
) -> None:
    run = finished_run(benchmark, seed)
    scores = pass_at_1_by_agent(run, off_ms(run.schedule.end_off))
    bounds = [
        (r["pass_at_1"]["ci_low"], r["pass_at_1"]["ci_high"]) for r in benchmark["_leaderboard"]
    ]
    bounds.append(span(benchmark))
    for index, (low, high) in enumerate(bounds):
        n, value = scores[index]
        run_low, run_high = wilson(value, n)
        assert run_low <= high and run_high >= low, (index, value, (low, high))


def test_hle_gpt_5_2_is_no_longer_far_below_every_entry() -> None:
    """The finding: HLE with gpt-5.2 scored 4 % beside a leaderboard of 9-25 %."""
    (hle,) = [b for b in BOARDS if b["source_ref"] == "hle"]
    run = finished_run(hle, 0)
    n, value = pass_at_1_by_agent(run, off_ms(run.schedule.end_off))[len(hle["_leaderboard"])]
    low, high = span(hle)
    assert n == 249 and low <= value <= high
