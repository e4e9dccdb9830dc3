"""Plan a decision before paying (issue 39): sizes, expectations, dollars, and a budget
that cannot reach the stated power refused as *inconclusive by design* (exit 1)."""

from __future__ import annotations

import pytest

from reconciler.exit_codes import Ending
from reconciler.model import AgentResult, DecisionSpec, LockState, RecordedRun, RunResults
from reconciler.plan import compute_plan
from reconciler.plan.decision import DEFAULT_OMEGA2, omega2_of
from reconciler.render import render_text
from tests.support.plan_fixtures import desired, observation, observed_run, recorded_run, settings

MODELS = ("openai/gpt-5.2", "openai/gpt-5")


def agent(index: int, p1: float, model: str, cost: float | None) -> AgentResult:
    return AgentResult(agent_index=index, model=model, model_id=model, harness="terminus-2",
                       pass_at_1=p1, ci_low=p1 - 0.1, ci_high=p1 + 0.1, n=249,
                       cost_per_task=cost)  # fmt: skip


def state(*runs: RecordedRun) -> LockState:
    return LockState(lineage="l", platform="local", workspace="acme/evals",
                     runs={r.address: r for r in runs})  # fmt: skip


def plan_of(decide: DecisionSpec, *recorded: RecordedRun, observed: tuple = ()):
    want = desired("hle/ab", models=MODELS).model_copy(update={"decide": decide})
    plan = compute_plan([want], state(*recorded), observation(*observed), settings())
    (item,) = [i for i in plan.items if i.address == "hle/ab" and i.action.value == "submit"]
    return plan, [d for d in item.details if d.startswith("decide:")]


def ending(plan) -> Ending:
    from reconciler.engine.plan import ending as plan_ending

    return plan_ending(plan, detailed=False)


def test_omega2_from_a_recorded_pass_rate_and_the_default() -> None:
    # 2 p (1 - p)(1 - 0.5): the power line's estimator (results.stats.planning_mde).
    assert omega2_of(0.5) == pytest.approx(0.25)
    assert omega2_of(0.9) == pytest.approx(0.09)
    assert omega2_of(None) == DEFAULT_OMEGA2 == 0.25


def test_the_plan_shows_sizes_and_expectations_without_history() -> None:
    plan, lines = plan_of(DecisionSpec(margin_pp=10, seed=1))
    assert not plan.errors
    assert ending(plan) is Ending.DONE
    # (1.96 + 0.84)² · 0.25 / 0.1² ≈ 197 tasks with Student's quantiles; 4 looks inflate 1.034.
    assert lines[0].startswith("decide: margin 10 pts, α 0.05, power 0.8, 4 looks; ω² 0.250 ")
    assert "no recorded run of this selection" in lines[0]
    fixed, maximum = int(lines[1].split()[3]), int(lines[1].split()[7])
    assert 190 <= fixed <= 200 and fixed < maximum <= 249
    expected = [float(line.split()[2]) for line in lines[2:5]]
    assert expected[2] < expected[1] < expected[0] < maximum  # 1.6×, margin, no difference
    assert lines[5] == f"decide: worst case {maximum} tasks"
    assert lines[6] == "decide: dollars unknown: no recorded cost for these models"
    assert "decide: fixed design" in render_text(plan)


def test_a_selection_too_small_is_inconclusive_by_design() -> None:
    plan, lines = plan_of(DecisionSpec(margin_pp=5, seed=1, where="benchmarks/hle/ab.toml:30"))
    assert ending(plan) is Ending.FAILED
    (error,) = plan.errors
    assert error.startswith("hle/ab: inconclusive by design: the selection has 249 tasks, and ")
    assert "(benchmarks/hle/ab.toml:30)" in error
    assert lines  # the sizes are still shown, so the reviewer sees why


def test_dollars_from_recorded_costs_and_a_budget_that_cannot_buy_the_power() -> None:
    # The address ran before with another judge: the decision replaces it.
    base = desired("hle/ab", models=MODELS, judge=None)
    ran = recorded_run(base, "run-1", status="finished").model_copy(
        update={
            "benchmark_id": "bench-hle",
            "results": RunResults(
                agents=(agent(0, 0.8, MODELS[0], 0.5), agent(1, 0.8, MODELS[1], 0.5))
            ),
        }  # fmt: skip
    )
    enough = DecisionSpec(margin_pp=10, seed=1, budget_usd=1000)
    plan, lines = plan_of(enough, ran, observed=(observed_run("run-1", "finished"),))
    assert not plan.errors, plan.errors
    assert "from name-run-1 (pass@1 80.0%)" in lines[0] and "ω² 0.160" in lines[0]
    maximum = int(lines[1].split()[7])
    # Two agents at $0.50 per task each: $1.00 a task.
    assert lines[5] == f"decide: worst case {maximum} tasks, ${maximum:,}.00"
    assert lines[3].startswith("decide: expected ") and ", $" in lines[3]
    poor = DecisionSpec(margin_pp=10, seed=1, budget_usd=40)
    plan, _ = plan_of(poor, ran, observed=(observed_run("run-1", "finished"),))
    (error,) = plan.errors
    # 39, not 40: the budget rule rounds each cost up and the budget down by a nanodollar.
    assert "inconclusive by design: budget_usd $40.00 buys 39 tasks at $1.00 each" in error
    assert "39 tasks reach power 0.3" in error
    assert ending(plan) is Ending.FAILED
