"""The calibration suite's simulations: benchmark runs drawn the way teams run them, fed to
the same functions ``osmosis-results`` and ``osmosis-plan`` use, so a broken verdict rule
shows here as a number out of its goal.

The model (task-difficulty heterogeneity): each task's true pass rate is
``expit(MU + SIGMA·z_t)``, z_t standard normal, so some tasks are nearly always solved,
some never, most in between (mean pass rate ≈ 0.57, like a mid-table agent). A run draws
each task's k attempts as Bernoulli trials of its rate. A regression of Δ shifts every
task's rate on the logit scale by the amount that moves the population mean by Δ (tasks
near 0 or 1 move little, those in the middle most). Two runs of the same agent (A/A) share
the rates. Every number is seeded.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from reconciler.results import power
from reconciler.results.compare import Comparison, Verdict, compare_outcomes, holm
from reconciler.results.data import TaskOutcome
from reconciler.results.gate import Gate
from reconciler.results.report import CompareReport

MU = 0.4
SIGMA = 1.5
ALPHA = 0.05
MARGIN = 0.03
REGRESSION = -0.20

# The population mean pass rate at a logit shift s, by a fine quadrature over z.
_NODES = [NormalDist().inv_cdf((j + 0.5) / 400) for j in range(400)]


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def population_rate(shift: float) -> float:
    return sum(_expit(MU + SIGMA * z + shift) for z in _NODES) / len(_NODES)


def shift_for(delta: float) -> float:
    """The logit shift that moves the population's mean pass rate by ``delta``."""
    base = population_rate(0.0)
    lo, hi = -12.0, 12.0
    for _ in range(50):
        mid = (lo + hi) / 2
        if population_rate(mid) - base < delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def task_rates(rng: random.Random, tasks: int) -> list[float]:
    return [_expit(MU + SIGMA * rng.gauss(0.0, 1.0)) for _ in range(tasks)]


def run(
    rng: random.Random, rates: Sequence[float], k: int, shift: float = 0.0
) -> dict[str, TaskOutcome]:
    """One run: k attempts at every task (its rate shifted by ``shift`` on the logit scale)."""
    out = {}
    for t, rate in enumerate(rates):
        p = rate if shift == 0.0 else _expit(math.log(rate / (1 - rate)) + shift)
        passes = sum(1 for _ in range(k) if rng.random() < p)
        out[f"t{t:03d}"] = TaskOutcome(passes=passes, attempts=k)
    return out


def counts(outcomes: dict[str, TaskOutcome]) -> dict[str, tuple[int, int]]:
    return {t: (o.passes, o.attempts) for t, o in outcomes.items()}


def mc_se(rate: float, reps: int) -> float:
    """The Monte Carlo standard error of a rate estimated from ``reps`` runs."""
    return math.sqrt(max(rate * (1 - rate), 1e-12) / reps)


@dataclass(frozen=True)
class Cell:
    """One (tasks, attempts) cell of the table."""

    tasks: int
    k: int
    reps: int
    false_alarm: float
    """A/A: share of verdicts "better" or "worse"."""
    no_change_at_regression: float
    """True Δ = −20 points: share of "no change" verdicts."""
    coverage_aa: float
    coverage_regression: float
    mde: float | None
    """The plan's stated MDE (mean over reps; None: not attainable at this many tasks)."""
    power: float | None
    """Share of "worse" verdicts at a true Δ of the plan's stated MDE."""
    power_reps: int

    @property
    def alarm_bound(self) -> float:
        return ALPHA + 2 * mc_se(ALPHA, self.reps)


def _compare(left: dict[str, TaskOutcome], right: dict[str, TaskOutcome], seed: int) -> Comparison:
    return compare_outcomes(left, right, margin=MARGIN, seed=seed)


def aa_and_regression(
    tasks: int, k: int, reps: int, seed: int
) -> tuple[float, float, float, float]:
    """(false alarm, coverage at Δ = 0, "no change" at Δ = −20, coverage at Δ = −20)."""
    rng = random.Random(f"aa:{tasks}:{k}:{seed}")
    shift = shift_for(REGRESSION)
    alarms = covered = no_change = covered_regression = 0
    for rep in range(reps):
        rates = task_rates(rng, tasks)
        aa = _compare(run(rng, rates, k), run(rng, rates, k), rep)
        alarms += aa.verdict in (Verdict.BETTER, Verdict.WORSE)
        covered += aa.ci.low <= 0.0 <= aa.ci.high
        worse = _compare(run(rng, rates, k), run(rng, rates, k, shift), rep)
        no_change += worse.verdict is Verdict.NO_CHANGE
        covered_regression += worse.ci.low <= REGRESSION <= worse.ci.high
    return alarms / reps, covered / reps, no_change / reps, covered_regression / reps


def power_at_mde(tasks: int, k: int, reps: int, seed: int) -> tuple[float | None, float | None]:
    """(mean stated MDE, share of "worse" at a true Δ of that MDE) for a re-run planned from
    two recorded runs of the same config: the plan's estimate, then the comparison. None
    for the power when no regression that large can happen (the MDE exceeds the pass rate)
    or the plan says no difference can be shown."""
    rng = random.Random(f"power:{tasks}:{k}:{seed}")
    ceiling = population_rate(0.0)
    mdes: list[float] = []
    found = tried = 0
    for rep in range(reps):
        rates = task_rates(rng, tasks)
        basis, second = run(rng, rates, k), run(rng, rates, k)
        spread = power.spread_from_tasks(
            counts(basis), counts(second), same_config=True, basis="simulated"
        )
        stated = power.mde(tasks=tasks, k_left=k, k_right=k, spread=spread, alpha=ALPHA)
        if math.isinf(stated):
            return None, None
        mdes.append(stated)
        if stated >= ceiling:
            continue  # no regression that large can happen
        tried += 1
        new = run(rng, rates, k, shift_for(-stated))
        found += _compare(basis, new, rep).verdict is Verdict.WORSE
    mean_mde = sum(mdes) / len(mdes)
    return mean_mde, (found / tried if tried >= reps / 2 else None)


def cell(tasks: int, k: int, reps: int, power_reps: int, seed: int = 1) -> Cell:
    alarm, cov_aa, no_change, cov_reg = aa_and_regression(tasks, k, reps, seed)
    mde, found = power_at_mde(tasks, k, power_reps, seed) if power_reps else (None, None)
    return Cell(tasks, k, reps, alarm, no_change, cov_aa, cov_reg, mde, found, power_reps)


@dataclass(frozen=True)
class GateCell:
    configs: int
    tasks: int
    k: int
    reps: int
    family_false_alarm: float
    """Nothing changed: share of gate runs that failed (Holm, worse beyond the margin)."""
    unadjusted_false_alarm: float
    """The same runs judged as before: any significant decline, unadjusted, fails."""
    unadjusted_beyond_margin: float = 0.0
    """The same runs judged by the gate's rule without the family's adjustment: any
    comparison worse beyond the margin at its own α fails."""

    @property
    def bound(self) -> float:
        return ALPHA


def gate(
    configs: int,
    tasks: int,
    k: int,
    reps: int,
    seed: int = 1,
    adjust: Callable[[Sequence[Comparison]], list[Comparison]] = holm,
    margin: float = MARGIN,
) -> GateCell:
    """A gate of ``configs`` addresses where nothing changed (each its own agent: its own
    task rates), run ``reps`` times, at ``regression_margin_pp`` = ``margin``. At a margin
    of 0 every config sits at the margin (a true Δ of −margin, as close to failing as a
    config that did not regress beyond it can be): each significant decline fails, and
    the family's adjustment is all that keeps the gate at its 5%."""
    name = f"gate:{configs}:{tasks}:{k}:{seed}" + (f":{margin}" if margin != MARGIN else "")
    rng = random.Random(name)
    failed = naive = beyond = 0
    for rep in range(reps):
        family = []
        for config in range(configs):
            rates = task_rates(rng, tasks)
            family.append(
                compare_outcomes(
                    run(rng, rates, k), run(rng, rates, k), margin=margin, seed=rep * 100 + config
                )
            )
        naive += any(c.verdict is Verdict.WORSE for c in family)
        beyond += any(c.beyond_margin for c in family)
        reports = tuple(
            CompareReport(f"a{i}@base", f"a{i}@new", "agent", "agent", c)
            for i, c in enumerate(adjust(family))
        )
        failed += Gate(reports).failed
    return GateCell(configs, tasks, k, reps, failed / reps, naive / reps, beyond / reps)


@dataclass(frozen=True)
class WeeklyCell:
    """One config checked every week against a fixed, accepted baseline, nothing changed."""

    tasks: int
    k: int
    weeks: int
    reps: int
    per_week: float
    """Share of weekly gate runs that failed (a family of one: the gate's own α)."""
    over_weeks: float
    """Share of ``weeks``-long series in which the gate failed at least once."""
    before_over_weeks: float
    """The same series judged as before: any significant decline raises the alarm."""


def weekly(tasks: int, k: int, weeks: int, reps: int, seed: int = 1) -> WeeklyCell:
    """``reps`` series of ``weeks`` gate runs: the same agent (its task rates fixed), one
    baseline run accepted once, a new run each week compared with it."""
    rng = random.Random(f"weekly:{tasks}:{k}:{weeks}:{seed}")
    failed_weeks = series_failed = series_alarmed = 0
    for rep in range(reps):
        rates = task_rates(rng, tasks)
        baseline = run(rng, rates, k)
        failed = alarmed = False
        for week in range(weeks):
            c = _compare(baseline, run(rng, rates, k), rep * 100 + week)
            gate = Gate((CompareReport("a@baseline", "a@week", "agent", "agent", c),))
            failed_weeks += gate.failed
            failed = failed or gate.failed
            alarmed = alarmed or c.verdict is Verdict.WORSE
        series_failed += failed
        series_alarmed += alarmed
    return WeeklyCell(
        tasks,
        k,
        weeks,
        reps,
        failed_weeks / (reps * weeks),
        series_failed / reps,
        series_alarmed / reps,
    )
