"""Issue 35's findings 1-8, one test each (each fails on main 35dc349, where the finding was
made): the number a run shows, the intervals and verdicts, the plan's power line, the
gate, fractional scores and k, an identical-config pair, and the report's order."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from reconciler.model import (
    AgentResult,
    LockState,
    Observation,
    RunResults,
    TaskCounts,
)
from reconciler.plan import compute_plan
from reconciler.results import html as html_report
from reconciler.results.build import build_address_reports, build_compare, build_gate
from reconciler.results.compare import Comparison, Verdict, compare_outcomes
from reconciler.results.data import RunOutcomes, TaskOutcome, parse_results_csv
from reconciler.results.gate import Gate
from reconciler.results.report import (
    AddressReport,
    CompareReport,
    render_addresses_text,
    render_compare_text,
)
from reconciler.results.runs import RecordedResult, RunRef
from reconciler.results.stats import Interval
from reconciler.results.summary import score_run
from reconciler.state.lockfile import parse, put_run, retire_run, serialize
from tests.support.plan_fixtures import (
    desired,
    lock,
    observation,
    observed_run,
    recorded_run,
    settings,
)
from tests.support.results import T0, Family, attempts_of, results_csv, with_rewards


def _outcomes(spec: dict[str, tuple[int, int, int]]) -> dict[str, TaskOutcome]:
    """task -> (passes, attempts, errored)."""
    return {t: TaskOutcome(passes=p, attempts=n, errored=e) for t, (p, n, e) in spec.items()}


# --------------------------------------------------------------------------- finding 1


def test_1_one_pass_at_1_and_cost_per_task_and_per_attempt_errored_beside_them() -> None:
    # 4 tasks × 2 attempts; t0 passed twice, t1 passed once and errored once, t2 failed and
    # errored, t3 errored twice. Cost $0.25 an attempt (errored ones are billed too).
    rows = [("t0", "passed"), ("t0", "passed"), ("t1", "passed"), ("t1", "errored"),
            ("t2", "failed"), ("t2", "errored"), ("t3", "errored"), ("t3", "errored")]  # fmt: skip
    family = Family()
    family.add("tb/a", "r1", results_csv([(t, o, 0.0, 0.25) for t, o in rows]), k=2)
    (report,) = build_address_reports(family.state(), (), family.load())
    numbers = report.runs[0].report.agents[0].numbers
    # pass@1 = mean of (2/2, 1/2, 0/2, 0/2) = 37.5%: an errored attempt is not passed.
    assert numbers.pass_at_1 == pytest.approx(0.375)
    assert numbers.scored_rate == pytest.approx((1 + 1 + 0) / 3)  # secondary, labelled
    assert (numbers.errored, numbers.attempts, numbers.tasks) == (4, 8, 4)
    assert numbers.cost_per_task == pytest.approx(0.50)
    assert numbers.cost_per_attempt == pytest.approx(0.25)
    text = render_addresses_text([report], width=240)
    assert "37.5% [" in text and "· 4 errored" in text
    assert "cost/task" in text and "cost/attempt" in text and "$0.50" in text
    # The Platform's summary recorded for the run shows the same pass@1 and costs.
    recorded = family.state().runs["tb/a"].results
    assert recorded is not None and recorded.agents[0].pass_at_1 == 0.375


def test_1_an_agent_that_regresses_by_crashing_does_not_look_better() -> None:
    # LEFT: 14 of 20 pass. RIGHT: 13 pass, 3 fail, 4 crash. Leaving the crashes out read
    # RIGHT as 13/16 = 81% (+11 points); as not passed it is 65%, 5 points worse, and the
    # comparison warns that the error rates differ.
    left = _outcomes({f"t{i}": (1 if i < 14 else 0, 1, 0) for i in range(20)})
    right = _outcomes({f"t{i}": (1 if i < 13 else 0, 1, 1 if i >= 16 else 0) for i in range(20)})
    c = compare_outcomes(left, right)
    assert c.delta == pytest.approx(-0.05)
    assert (c.errored_left, c.errored_right) == (0, 4) and c.errored_differ
    text = render_compare_text([CompareReport("a@l", "a@r", "x", "x", c)])
    assert "warning: errored attempts (counted as not passed): LEFT 0 of 20" in " ".join(
        text.split()
    )


# --------------------------------------------------------------------------- finding 2


def test_2_two_tasks_both_failing_are_not_worse() -> None:
    # Both tasks passed before and fail now: exact McNemar p = 0.5. A zero-width interval
    # (sd 0) used to read "worse" and fail the gate.
    c = compare_outcomes(_outcomes({"a": (1, 1, 0), "b": (1, 1, 0)}),
                         _outcomes({"a": (0, 1, 0), "b": (0, 1, 0)}))  # fmt: skip
    assert c.p_value == 0.5
    assert c.verdict is Verdict.INCONCLUSIVE and c.ci.low < 0 < c.ci.high


def test_2_five_tied_tasks_bound_delta_to_half_the_scale() -> None:
    c = compare_outcomes(_outcomes({f"t{i}": (1, 1, 0) for i in range(5)}),
                         _outcomes({f"t{i}": (1, 1, 0) for i in range(5)}))  # fmt: skip
    assert not c.decisive and c.verdict is Verdict.INCONCLUSIVE
    assert c.ci.high == pytest.approx(1 - 0.025**0.2) and c.ci.high > 0.5


# --------------------------------------------------------------------------- finding 3


def test_3_a_four_nothing_split_prints_the_p_value_its_verdict_follows() -> None:
    left = _outcomes({f"t{i}": (1, 1, 0) for i in range(4)} | {"s": (0, 1, 0)})
    right = _outcomes({f"t{i}": (0, 1, 0) for i in range(4)} | {"s": (0, 1, 0)})
    c = compare_outcomes(left, right)
    text = render_compare_text([CompareReport("a@l", "a@r", "x", "x", c)])
    assert "p = 0.125" in text and "Verdict: inconclusive" in text


# --------------------------------------------------------------------------- finding 4


def _power_line(plan_items: tuple, address: str) -> str:
    (item,) = [i for i in plan_items if i.address == address and i.action.value == "submit"]
    (line,) = [d for d in item.details if d.startswith("power:")]
    return str(line)


def _power_plan(
    *, attempts: int, counts: dict[str, TaskCounts], p1: float, other_address: bool = False
) -> str:
    address = "hle/b" if other_address else "hle/a"
    old = desired("hle/a", attempts=attempts)
    want = desired(address, attempts=attempts, models=("openai/gpt-5.2",))
    ran = recorded_run(old, "run-1", status="finished").model_copy(
        update={
            "benchmark_id": "bench-hle",
            "results": RunResults(
                agents=(
                    AgentResult(agent_index=0, pass_at_1=p1, n=249, attempts_per_task=attempts),
                )
            ),
        }
    )
    seen: Observation = observation(observed_run("run-1", "finished")).model_copy(
        update={"task_counts": counts}
    )
    plan = compute_plan([want], lock(ran), seen, settings())
    return _power_line(plan.items, address)


def _counts(rates: list[float], k: int, seed: int) -> TaskCounts:
    rng = random.Random(seed)
    return TaskCounts(
        agents={
            0: {f"t{i}": (sum(rng.random() < r for _ in range(k)), k) for i, r in enumerate(rates)}
        }
    )


def _figures(line: str) -> tuple[float, float, float]:
    """(MDE now, at twice the tasks, at twice the attempts) of a power line."""
    now = float(line.split("|Δ| ≥ ")[1].split(" pts")[0])
    tasks = float(line.split("twice the tasks ")[1].split(" pts")[0])
    attempts = float(line.split("twice the attempts ")[1].split(" pts")[0])
    return now, tasks, attempts


def test_4_the_power_line_plans_with_attempts_and_says_which_lowers_it_more() -> None:
    # A re-run where every task's rate is 0.5: all of the spread is attempt-to-attempt, so
    # twice the attempts lowers the MDE about as much as twice the tasks (main had no
    # attempts in its formula and said "more tasks, not attempts" whatever the data).
    rates = [0.5] * 249
    three = _power_plan(attempts=3, counts={"run-1": _counts(rates, 3, 1)}, p1=0.5)
    assert "249 tasks × 3 attempts detect |Δ| ≥ " in three and "per-task results" in three
    now, tasks, attempts = _figures(three)
    assert attempts < 0.8 * now and attempts < 1.1 * tasks
    # Tasks always or never solved: attempts add nothing, only tasks do.
    fixed = [1.0] * 120 + [0.0] * 129
    line = _power_plan(
        attempts=3, counts={"run-1": _counts(fixed, 3, 2)}, p1=120 / 249, other_address=True
    )
    now, tasks, attempts = _figures(line)
    assert attempts > 0.95 * now and tasks < 0.75 * now
    assert line.endswith(": more tasks lower it more")


def test_4_a_run_at_zero_never_claims_to_detect_zero_points() -> None:
    line = _power_plan(attempts=1, counts={}, p1=0.0)
    assert "|Δ| ≥ 0.0 pts" not in line
    detect = float(line.split("|Δ| ≥ ")[1].split(" pts")[0])
    assert detect > 1.0


def test_4_a_new_config_on_the_same_tasks_gets_the_line_too() -> None:
    line = _power_plan(attempts=1, counts={}, p1=0.4, other_address=True)
    assert line.startswith("power: against hle/a@name-run-1, 249 tasks × 1 attempt")


# --------------------------------------------------------------------------- finding 5


def _comparison(low: float, high: float, p: float) -> CompareReport:
    ci = Interval(low, high, "mcnemar exact")
    from reconciler.results.compare import decide

    c = Comparison(paired=True, tasks=89, left=0.5, right=0.5 + (low + high) / 2,
                   delta=(low + high) / 2, ci=ci, test="mcnemar exact", p_value=p,
                   verdict=decide(ci, 0.03), margin=0.03, mde=0.1)  # fmt: skip
    return CompareReport("a@base", "a@new", "x", "x", c)


def test_5_the_gate_fails_only_beyond_the_margin_and_says_so_in_one_line() -> None:
    within = _comparison(-0.025, -0.005, 0.01)  # a significant decline within ±3
    drop = _comparison(-0.08, 0.01, 0.2)  # inconclusive, could be a 8-point drop
    beyond = _comparison(-0.09, -0.04, 0.001)
    quiet = _comparison(-0.02, 0.02, 0.9)
    assert not Gate((within, drop, quiet)).failed
    assert Gate((within, drop, quiet), strict=True).failed  # --fail-on-inconclusive-drop
    assert Gate((beyond,)).failed
    line = Gate((within, drop, quiet, beyond)).summary_line()
    assert line == (
        "gate: 1 worse, 1 worse within the margin, 1 inconclusive, 1 no change; "
        "4 comparisons, Holm; FAILED"
    )


def test_5_a_gates_family_is_adjusted_with_holm() -> None:
    # Ten configs, nothing changed but one borderline decline (p = 0.03 alone): adjusted
    # over the family of ten it is no longer significant.
    rng = random.Random(6)
    family = Family()
    for n in range(10):
        rates = [rng.random() for _ in range(89)]
        family.add(f"tb/c{n}", f"b{n}", results_csv(attempts_of(rates, 1, rng)))
        family.accept(f"tb/c{n}", f"b{n}")
        family.add(f"tb/c{n}", f"n{n}", results_csv(attempts_of(rates, 1, rng)))
    gate = build_gate(family.state(), family.load())
    assert len(gate.comparisons) == 10
    assert all(r.comparison.family == "Holm over 10 comparisons" for r in gate.comparisons)
    assert all(r.comparison.adjusted_p is not None for r in gate.comparisons)
    assert all(r.comparison.adjusted_p >= r.comparison.p_value for r in gate.comparisons)  # type: ignore[operator]
    assert gate.summary_line().endswith("10 comparisons, Holm; passed")
    # compare shows the same adjusted verdict for a gate pair.
    (pair,) = build_compare(
        family.state(), RunRef("tb/c3", "b3"), RunRef("tb/c3", "n3"), family.load()
    )
    assert pair.comparison == next(r for r in gate.comparisons if r.left.endswith("b3")).comparison


# --------------------------------------------------------------------------- finding 6


def test_6_fractional_rewards_give_a_score_and_the_config_threshold_decides_a_pass() -> None:
    rewards = [0.9, 0.8, 0.75, 0.7, 0.65, 0.49]  # mean 0.715
    text = results_csv([(f"t{i}", "failed", r, 0.1) for i, r in enumerate(rewards)])
    spec = {"tasks_config": {}, "execution_config": {"attempts_per_task": 1, "pass_threshold": 0.7}}
    family = Family()
    family.add("gdp/a", "r1", text, spec=spec)
    (report,) = build_address_reports(family.state(), (), family.load())
    numbers = report.runs[0].report.agents[0].numbers
    assert numbers.score == pytest.approx(0.715)
    # reward ≥ 0.7, the config's threshold; pass@1 is kept at the Platform's 4 decimals
    assert numbers.pass_at_1 == round(4 / 6, 4)
    assert numbers.pass_threshold == 0.7
    # Without the config's, the catalog's threshold (read only for fractional rewards).
    family.add("gdp/b", "r2", text)
    (other,) = build_address_reports(family.state(), ["gdp/b"], family.load(),
                                     thresholds={"bench-tb": 0.5})  # fmt: skip
    assert other.runs[0].report.agents[0].numbers.pass_at_1 == round(5 / 6, 4)


def test_6_k_is_what_the_config_asked_for_and_short_tasks_are_named() -> None:
    rng = random.Random(3)
    rows = with_rewards(attempts_of([0.6] * 30, 3, rng))
    rows[4] = (rows[4][0], "errored", 0.0, 0.25)  # one errored attempt: still 3 attempts
    rows = [r for r in rows if not (r[0] == "t029" and r is rows[-1])]  # t029: 2 attempts
    family = Family()
    family.add("tb/a", "r1", results_csv(rows), k=3)
    (report,) = build_address_reports(family.state(), (), family.load())
    numbers = report.runs[0].report.agents[0].numbers
    assert numbers.asked_k == 3 and numbers.k == 3 and numbers.pass_at_k is not None
    assert numbers.short_of_k == ("t029",)
    text = render_addresses_text([report], width=240)
    assert "30×3 (1 short)" in text and "fewer than the 3 attempts asked: t029" in text


def _compared(left: str, right: str, k: int, threshold: float | None = None) -> Comparison:
    """The comparison ``osmosis-results compare`` makes of two runs of the same config (two
    addresses: each run's recorded spec carries its ``pass_threshold``)."""
    execution: dict[str, object] = {"attempts_per_task": k}
    if threshold is not None:
        execution["pass_threshold"] = threshold
    spec = {"tasks_config": {}, "execution_config": execution}
    family = Family()
    family.add("tb/a", "r1", left, k=k, spec=spec)
    family.add("tb/b", "r2", right, k=k, spec=spec)
    (pair,) = build_compare(family.state(), RunRef("tb/a", "r1"), RunRef("tb/b", "r2"),
                            family.load())  # fmt: skip
    return pair.comparison


def test_6_an_errored_attempt_keeps_k_and_the_interval_method_of_several_attempts() -> None:
    # shared/results.md §2.3: exact McNemar at one attempt, the inverted sign-flip test at
    # several. k is the attempts asked for, so errored attempts (even 2 of a task's 3,
    # leaving it one scored attempt) never turn 3 attempts into 1 and McNemar.
    rng = random.Random(8)
    rates = [rng.random() for _ in range(30)]
    left = attempts_of(rates, 3, rng)
    right = attempts_of(rates, 3, rng)
    right[0] = (right[0][0], "errored", 0.0, 0.25)
    right[1] = (right[1][0], "errored", 0.0, 0.25)  # t000: 1 scored attempt of 3
    right[5] = (right[5][0], "errored", 0.0, 0.25)
    c = _compared(results_csv(left), results_csv(right), 3)
    assert (c.attempts_left, c.attempts_right, c.errored_right) == (3, 3, 3)
    assert c.test.startswith("sign-flip"), c.test
    assert c.ci.method == c.test  # the interval inverts the test the verdict follows
    # One attempt per task, errored ones included: exact McNemar.
    one_left = attempts_of(rates, 1, rng)
    one_right = [(t, "errored" if i < 3 else o, r, cost)
                 for i, (t, o, r, cost) in enumerate(attempts_of(rates, 1, rng))]  # fmt: skip
    single = _compared(results_csv(one_left), results_csv(one_right), 1)
    assert single.errored_right == 3
    assert single.test == single.ci.method == "mcnemar exact"


def test_6_fractional_rewards_compare_passes_at_the_threshold_by_the_attempts_method() -> None:
    # A fractional reward is a pass at or above the threshold: at one attempt the per-task
    # differences are −1, 0 or +1 and the test is exact McNemar on those passes; at
    # several attempts, the sign-flip test.
    rng = random.Random(9)
    rates = [rng.random() for _ in range(30)]

    def rewarded(k: int) -> list[tuple[str, str, float, float]]:
        return [(f"t{t:03d}", "failed", round(rng.uniform(0.5, 1.0) * rate, 3), 0.1)
                for t, rate in enumerate(rates) for _ in range(k)]  # fmt: skip

    left, right = rewarded(1), rewarded(1)
    c = _compared(results_csv(left), results_csv(right), 1, threshold=0.6)
    assert c.test == c.ci.method == "mcnemar exact"
    passed_left = [r >= 0.6 for _t, _o, r, _c in left]
    passed_right = [r >= 0.6 for _t, _o, r, _c in right]
    up = sum(b and not a for a, b in zip(passed_left, passed_right, strict=True))
    down = sum(a and not b for a, b in zip(passed_left, passed_right, strict=True))
    assert (len(c.up), len(c.down)) == (up, down) and up + down > 0
    assert c.delta == pytest.approx((up - down) / 30)  # passes, not mean rewards
    several = _compared(results_csv(rewarded(3)), results_csv(rewarded(3)), 3, threshold=0.6)
    assert several.test.startswith("sign-flip") and several.ci.method == several.test


def _rewarded(rewards: list[float]) -> str:
    return results_csv([(f"t{i:02d}", "failed", r, 0.1) for i, r in enumerate(rewards)])


def _replaced(spec: Mapping[str, object], first: dict[str, object]) -> LockState:
    """``gdp/a``'s run r1 (``spec``, its entry updated with ``first``) replaced by r2 of
    ``spec``, as apply replaces a run (``retire_run``), read back from the lockfile's text."""
    family = Family()
    family.add("gdp/a", "r1", _rewarded([0.5]), spec=spec)
    family.add("gdp/b", "r2", _rewarded([0.5]), spec=spec)
    old = family.runs["gdp/a"].model_copy(update=first)
    new = family.runs["gdp/b"].model_copy(update={"address": "gdp/a"})
    state = put_run(family.state().model_copy(update={"runs": {}}), old)
    state = retire_run(state, "gdp/a", "replaced", ended_at=T0, replacement=new)
    return parse(serialize(state), "state/osmosis.lock")


def _compare_r1_r2(
    state: LockState, files: dict[str, str], catalog: float
) -> tuple[CompareReport, AddressReport]:
    def load(run: RecordedResult) -> RunOutcomes | None:
        return parse_results_csv(files[run.run_id])

    thresholds = {"bench-tb": catalog}
    (pair,) = build_compare(state, RunRef("gdp/a", "r1"), RunRef("gdp/a", "r2"), load,
                            thresholds=thresholds)  # fmt: skip
    (report,) = build_address_reports(state, ["gdp/a"], load, thresholds=thresholds)
    return pair, report


SPEC_06 = {"tasks_config": {}, "execution_config": {"attempts_per_task": 1, "pass_threshold": 0.6}}


def test_6_a_run_in_history_keeps_the_pass_threshold_it_ran_with() -> None:
    # r1 and r2 ran the same config (pass_threshold 0.6; the catalog's is 1.0) with the
    # same fractional rewards. r1 left its address for history, which keeps no config:
    # its rewards were counted at the catalog's 1.0 (pass@1 0) and r2 read "better".
    text = _rewarded([0.62, 0.7, 0.75, 0.8, 0.9, 0.95] * 5)
    state = _replaced(SPEC_06, {})  # an entry from before thresholds were recorded
    pair, report = _compare_r1_r2(state, {"r1": text, "r2": text}, catalog=1.0)
    c = pair.comparison
    assert (c.left, c.right, c.delta) == (1.0, 1.0, 0.0)
    (former,) = state.history
    assert (former.run_id, former.pass_threshold) == ("r1", 0.6)  # its config's, kept
    assert c.verdict is not Verdict.BETTER and not any("catalog" in n for n in pair.notes)
    assert [line.report.agents[0].numbers.pass_threshold for line in report.runs] == [0.6, 0.6]
    assert [line.report.agents[0].numbers.pass_at_1 for line in report.runs] == [1.0, 1.0]


def test_6_the_threshold_recorded_with_a_run_outlives_its_config() -> None:
    # Recorded when submitted (the config's, else the catalog's then): the history entry
    # keeps it even when the entry's body says nothing (the catalog's 0.6 at submit time;
    # the catalog says 1.0 now).
    spec = {"tasks_config": {}, "execution_config": {"attempts_per_task": 1}}
    state = _replaced(spec, {"pass_threshold": 0.6})
    assert "pass_threshold = 0.6" in serialize(state)
    assert state.history[0].pass_threshold == 0.6
    text = _rewarded([0.62, 0.7, 0.75, 0.8, 0.9, 0.95] * 5)
    pair, _report = _compare_r1_r2(state, {"r1": text, "r2": text}, catalog=1.0)
    assert (pair.comparison.left, pair.comparison.right) == (1.0, 0.0)  # r2 has none recorded


def test_6_a_history_run_recorded_without_a_threshold_falls_back_to_the_catalogs() -> None:
    # A lockfile written before thresholds were recorded, whose entry kept no config either:
    # r1's rewards are counted at the catalog's threshold, and compare and the table say so.
    text = _rewarded([0.4, 0.55, 0.7, 0.9] * 5)
    state = _replaced(SPEC_06, {"spec": {}})
    assert state.history[0].pass_threshold is None
    pair, report = _compare_r1_r2(state, {"r1": text, "r2": text}, catalog=0.8)
    assert (pair.comparison.left, pair.comparison.right) == (0.25, 0.5)  # 0.8 vs 0.6
    said = (
        "no pass threshold is recorded with this run (a lockfile written before it was): "
        "its rewards are counted at the catalog's 0.8"
    )
    assert f"name-r1: {said}" in pair.notes
    assert "catalog's 0.8" in " ".join(render_compare_text([pair]).split())
    assert f"name-r1: {said}" in " ".join(render_addresses_text([report], width=240).split())


# --------------------------------------------------------------------------- finding 7


def test_7_a_compare_of_identical_configs_says_so() -> None:
    rng = random.Random(1)
    rates = [rng.random() for _ in range(40)]
    family = Family()
    family.add("tb/one", "r1", results_csv(attempts_of(rates, 1, rng)), digest="sha256:" + "c" * 64)
    family.add("tb/two", "r2", results_csv(attempts_of(rates, 1, rng)), digest="sha256:" + "c" * 64)
    (c,) = build_compare(family.state(), RunRef("tb/one"), RunRef("tb/two"), family.load())
    assert c.comparison.same_config
    text = " ".join(render_compare_text([c]).split())
    assert "same configuration: both runs were submitted with identical bodies" in text
    assert "run-to-run noise or Platform drift" in text


# --------------------------------------------------------------------------- finding 8


def test_8_the_report_leads_with_the_verdicts_without_any_flag() -> None:
    rng = random.Random(9)
    family = Family()
    rates = [rng.random() for _ in range(40)]
    family.add("tb/a", "b", results_csv(attempts_of(rates, 1, rng)))
    family.accept("tb/a", "b")
    family.add("tb/a", "s", results_csv(attempts_of(rates[:2], 1, rng)), stage="smoke")
    family.add("tb/a", "n", results_csv(attempts_of(rates, 1, rng)))
    state, load = family.state(), family.load()
    reports = build_address_reports(state, (), load)
    outcomes = {r: parse_results_csv(t) for r, t in family.files.items()}
    page = html_report.render_html(
        reports, outcomes, build_gate(state, load),
        about=html_report.About("github.com/acme/evals", "abc123", "2026-05-01T00:00:00Z"),
    )  # fmt: skip
    top = page[: page.index("<h2")]
    assert "github.com/acme/evals · abc123 · 2026-05-01T00:00:00Z" in top
    assert "gate: " in top and "1 comparison" in top and 'data-verdict="' in top
    assert "smoke, complete" in page


def test_8_a_renamed_address_carries_its_runs_and_leaves_no_ghost() -> None:
    from reconciler.state.history import rekey_run

    rng = random.Random(2)
    family = Family()
    rates = [rng.random() for _ in range(10)]
    family.add("tb/old", "r1", results_csv(attempts_of(rates, 1, rng)))
    family.add("tb/old", "r2", results_csv(attempts_of(rates, 1, rng)), status="queued")
    state = rekey_run(family.state(), "tb/old", "tb/new")
    reports = build_address_reports(state, (), family.load())
    assert [r.address for r in reports] == ["tb/new"]
    assert [line.report.run.run_id for line in reports[0].runs] == ["r2", "r1"]


def test_8_score_run_labels_its_source() -> None:
    family = Family()
    family.add("tb/a", "r1", results_csv([("t0", "passed", 1.0, 0.1)]))
    (run,) = [r for r in build_address_reports(family.state(), (), lambda _r: None)[0].runs]
    assert run.report.source == "summary"
    assert score_run(run.report.run, None).agents[0].numbers.source == "Platform summary"
