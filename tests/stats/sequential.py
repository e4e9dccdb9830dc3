"""``make stats-decide``: the simulation suite of decisions at minimum cost (issue 39).

Run: ``python -m tests.stats.sequential [--replicates N] [--decisions N] [--workers N]
[--seed S] [--cells 89x1,200x3] [--plant naive-boundary]``. Offline, seeded, numpy only
(a test dependency, via scipy). Prints one table per cell and the budget check, then the
time; exits 1 when a goal is missed.

**The data.** Each replicate draws ``T`` tasks from a super-population with task-difficulty
heterogeneity: task ``t`` has a logit difficulty ``ℓ_t ~ N(μ, τ²)``; the left agent passes
an attempt with ``expit(ℓ_t)``, the right agent with ``expit(ℓ_t + η_t + s)``, where
``η_t ~ N(0, ν²)`` is the task × agent interaction (so the two sides' per-task rates
correlate but are not equal) and ``s`` is the shift that makes the mean difference of
pass rates ``Δ`` exactly (Gauss–Hermite quadrature). Each side makes ``k`` attempts per
task; the paired statistic is on ``d_t`` = the difference of the per-task rates (clustered
by task), as ``judge`` computes it: Student's t at interim looks, the sign-flip score
statistic at the last.

**The cell.** The margin is the fixed design's minimum detectable effect at ``T`` tasks
(α = 0.05, power 0.8, Miller's formula with t quantiles and the model's exact ``ω²``,
so the fixed design's test has power 0.80 there), the maximum is
``T`` (no inflation), the looks are 4 equal batches. Scenarios: Δ = 0, margin, 1.6 × margin.

**The rules.** The decisions use the boundaries of ``reconciler.results.sequential`` and
its ``t_critical``, vectorised over replicates (``tests/stats/test_decide_simulation.py``
checks them against ``judge`` and ``anytime_look`` replicate by replicate):

* ``fixed``: one look at ``T`` (the reference);
* ``peek-4``: the strawman, four looks at the fixed-sample ``p < 0.05``;
* ``peek-every``: the strawman, a look after every task (from 10 tasks);
* ``obf``: O'Brien–Fleming-type α-spending, 4 looks, no futility rule;
* ``obf+eq``: the same with the equivalence (futility) rule;
* ``pocock``: Pocock-type α-spending, 4 looks (a library option);
* ``anytime``: the normal-mixture confidence sequence read after every task (with its
  no-change stop).

**Goals** (issue 39): false alarms at most α + 2 Monte Carlo SE for every offered stopping
rule (``obf``, ``obf+eq``, ``pocock``, ``anytime``); ``peek-4`` near 0.13; power ≥ 0.78 at
the margin for ``obf`` and ``obf+eq``; expected tasks ≤ 82 % of the fixed design at the
margin and ≤ 61 % at 1.6 ×, and ≤ 90 % under Δ = 0 with the futility rule; 0 dollar-budget
overshoots in ``--decisions`` decisions. Each estimate misses its goal only when it is
beyond it by more than 2 Monte Carlo SE (``check``).

``--plant naive-boundary`` replaces the spending boundaries with the fixed-sample 1.96 at
every look: the suite must then fail (the harness can see inflation).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from scipy import stats as sp

from reconciler.results import sequential as seq

ALPHA = 0.05
POWER = 0.8
LOOKS = 4
TASKS = (89, 200, 500)
ATTEMPTS = (1, 3, 5)
SCENARIOS = (0.0, 1.0, 1.6)
"""True Δ as multiples of the margin."""
REPLICATES = 50_000
DECISIONS = 10_000
SEED = 39
CHUNK_VALUES = 1_500_000
"""Replicates × tasks per numpy chunk (about 12 MB per float array)."""
PEEK_EVERY_FROM = 10

# The task population (logit scale): mean pass rate about 0.46, task difficulty spread
# τ = 1.5 (rates from about 5 % to 95 %), task × agent interaction ν = 0.8.
MU, TAU, NU = -0.2, 1.5, 0.8

RULES = ("fixed", "peek-4", "peek-every", "obf", "obf+eq", "pocock", "anytime")
OFFERED = ("obf", "obf+eq", "pocock", "anytime")
"""Stopping rules that must keep α (``fixed`` is the one-look reference; the strawmen are
shown to inflate it)."""
SEQUENTIAL = ("obf", "obf+eq")
"""Rules held to the power and expected-tasks goals."""

GOAL_POWER = 0.78
GOAL_TASKS_AT_MARGIN = 0.82
GOAL_TASKS_AT_1_6 = 0.61
GOAL_TASKS_UNDER_ZERO = 0.90
PEEK_4_RANGE = (0.11, 0.15)


# --------------------------------------------------------------------------- the model

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
_WEIGHTS = _WEIGHTS / math.sqrt(2 * math.pi)


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _mean_rate(shift: float, spread: float) -> float:
    """E[expit(N(μ + shift, spread²))] by Gauss–Hermite quadrature."""
    return float(np.sum(_WEIGHTS * _expit(MU + shift + spread * _NODES)))


@cache
def shift_for(delta: float) -> float:
    """The logit shift ``s`` of the right agent that makes E[p_R − p_L] = ``delta``."""
    left = _mean_rate(0.0, TAU)
    spread = math.hypot(TAU, NU)
    low, high = -10.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        if _mean_rate(mid, spread) - left < delta:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@cache
def omega2(attempts: int, shift: float = 0.0) -> float:
    """Var(d_t) per task: Var(p_R − p_L) + E[p_R(1 − p_R)]/k + E[p_L(1 − p_L)]/k."""
    ell = MU + TAU * _NODES[:, None]
    eta = NU * _NODES[None, :]
    weight = _WEIGHTS[:, None] * _WEIGHTS[None, :]
    left = _expit(ell) + 0 * eta
    right = _expit(ell + eta + shift)
    diff = right - left
    mean = float(np.sum(weight * diff))
    between = float(np.sum(weight * diff * diff)) - mean * mean
    within = float(np.sum(weight * (right * (1 - right) + left * (1 - left)))) / attempts
    return between + within


def margin_for(tasks: int, attempts: int) -> float:
    """The cell's margin: the fixed design's MDE at ``tasks`` (α 0.05, power 0.8). The
    fixed design is the paired t-test on ``T − 1`` degrees of freedom, so its MDE is
    Miller's formula with t quantiles, ``(t_{T−1}(1 − α/2) + t_{T−1}(power)) ω / √T``
    (the z form is 1 % smaller at 89 tasks and gives the t-test 0.79 power, not 0.80)."""
    df = tasks - 1
    z = sp.t.ppf(1 - ALPHA / 2, df) + sp.t.ppf(POWER, df)
    return float(z * math.sqrt(omega2(attempts)) / math.sqrt(tasks))


def draw_differences(
    rng: np.random.Generator, replicates: int, tasks: int, attempts: int, shift: float
) -> np.ndarray:
    """Per-task paired differences ``d_t`` of ``replicates`` decisions (rows)."""
    ell = MU + TAU * rng.standard_normal((replicates, tasks))
    eta = NU * rng.standard_normal((replicates, tasks))
    left = rng.binomial(attempts, _expit(ell))
    right = rng.binomial(attempts, _expit(ell + eta + shift))
    return (right - left) / attempts


# --------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class CellRules:
    """Everything a chunk needs to apply the rules of one cell (picklable)."""

    tasks: int
    attempts: int
    margin: float
    ends: tuple[int, ...]
    obf: tuple[float, ...]
    """The O'Brien–Fleming-type efficacy boundaries ``c_k`` at each look."""
    equivalence: tuple[float, ...]
    """The equivalence boundaries ``e_k`` at each look."""
    pocock: tuple[float, ...]
    fixed: float
    """The one-look design's boundary, z_{1−α/2}."""
    rho: float
    """The anytime mixture's ρ (intrinsic time Σd², narrowest at T tasks)."""


def cell_rules(tasks: int, attempts: int, plant: str | None = None) -> CellRules:
    ends = seq.batch_ends(tasks, LOOKS)
    fractions = tuple(n / tasks for n in ends)
    obf = seq.boundaries(
        fractions, alpha=ALPHA, equivalence=seq.equivalence_error(ALPHA), final=True
    )
    pocock = seq.boundaries(fractions, alpha=ALPHA, spending="pocock", final=True)
    fixed = float(sp.norm.ppf(1 - ALPHA / 2))
    efficacy = obf.efficacy
    if plant == "naive-boundary":
        efficacy = tuple(fixed for _ in ends)
    return CellRules(
        tasks=tasks,
        attempts=attempts,
        margin=margin_for(tasks, attempts),
        ends=ends,
        obf=efficacy,
        equivalence=obf.equivalence,
        pocock=pocock.efficacy,
        fixed=fixed,
        rho=seq.anytime_rho(tasks * omega2(attempts), ALPHA),
    )


# Outcome codes of one replicate under one rule.
BETTER, WORSE, NO_CHANGE, INCONCLUSIVE = 1, 2, 3, 4


@dataclass
class Tally:
    """Sums over replicates for one rule in one scenario."""

    replicates: int = 0
    better: int = 0
    worse: int = 0
    no_change: int = 0
    tasks: float = 0.0
    tasks_squared: float = 0.0
    covered: int = 0
    """Replicates whose interval at the stop covers the true Δ."""

    def add(self, other: Tally) -> None:
        self.replicates += other.replicates
        self.better += other.better
        self.worse += other.worse
        self.no_change += other.no_change
        self.tasks += other.tasks
        self.tasks_squared += other.tasks_squared
        self.covered += other.covered

    @property
    def reject(self) -> float:
        return (self.better + self.worse) / self.replicates

    @property
    def mc_se(self) -> float:
        p = self.reject
        return math.sqrt(max(p * (1 - p), 1e-12) / self.replicates)

    def mean_tasks(self) -> float:
        return self.tasks / self.replicates

    def tasks_se(self) -> float:
        """The Monte Carlo SE of ``mean_tasks``."""
        mean = self.mean_tasks()
        var = max(self.tasks_squared / self.replicates - mean * mean, 0.0)
        return math.sqrt(var / self.replicates)

    @property
    def coverage(self) -> float:
        return self.covered / self.replicates


def _tally(outcome: np.ndarray, tasks: np.ndarray, covered: np.ndarray) -> Tally:
    return Tally(
        replicates=int(outcome.size),
        better=int(np.sum(outcome == BETTER)),
        worse=int(np.sum(outcome == WORSE)),
        no_change=int(np.sum(outcome == NO_CHANGE)),
        tasks=float(np.sum(tasks)),
        tasks_squared=float(np.sum(np.asarray(tasks, dtype=np.float64) ** 2)),
        covered=int(np.sum(covered)),
    )


@dataclass(frozen=True)
class Paths:
    """Running sums of each replicate's differences (rows), computed once per chunk and
    read by every rule: column ``n − 1`` holds the first ``n`` tasks."""

    total: np.ndarray
    squares: np.ndarray

    @classmethod
    def of(cls, d: np.ndarray) -> Paths:
        return cls(np.cumsum(d, axis=1), np.cumsum(d * d, axis=1))

    @property
    def rows(self) -> int:
        return int(self.total.shape[0])

    @property
    def tasks(self) -> int:
        return int(self.total.shape[1])


Rows = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Per replicate: the outcome code, the tasks used and whether the interval covered Δ."""


def group_sequential(
    paths: Paths,
    ends: Sequence[int],
    efficacy: Sequence[float],
    delta: float,
    *,
    margin: float,
    equivalence: Sequence[float] | None = None,
) -> Tally:
    """The tally of ``group_sequential_rows``."""
    return _tally(
        *group_sequential_rows(paths, ends, efficacy, delta, margin=margin, equivalence=equivalence)
    )


def group_sequential_rows(
    paths: Paths,
    ends: Sequence[int],
    efficacy: Sequence[float],
    delta: float,
    *,
    margin: float,
    equivalence: Sequence[float] | None = None,
) -> Rows:
    """``judge`` on every row at once, looks at ``ends``: at interim looks Student's t at
    the boundary's nominal level (``t_critical``), at the last look the sign-flip score
    statistic ``Σd/√Σd²`` against ``c_K``; no change when the equivalence interval lies
    inside ±margin; the interval at the stop is the repeated CI."""
    rows = paths.rows
    outcome = np.zeros(rows, dtype=np.int8)
    stop_n = np.full(rows, ends[-1], dtype=np.int64)
    covered = np.zeros(rows, dtype=bool)
    last = len(ends) - 1

    def half_width(z: float, n: int, spread: np.ndarray, final: bool) -> np.ndarray:
        if final:
            if n <= z * z:
                return np.full(rows, np.inf)
            return z * spread / math.sqrt(n - z * z)
        return seq.t_critical(z, n - 1) * spread / math.sqrt(n - 1)

    for k, n in enumerate(ends):
        final = k == last
        open_ = outcome == 0
        total = paths.total[:, n - 1]
        squares = paths.squares[:, n - 1]
        mean = total / n
        spread = np.sqrt(np.maximum(squares / n - mean * mean, 0.0))
        varies = spread > 0
        c = efficacy[k]
        if final:
            z = np.where(squares > 0, total / np.sqrt(np.where(squares > 0, squares, 1.0)), 0.0)
            reject = varies & (np.abs(z) >= c)
        else:
            z = np.where(varies, mean * math.sqrt(n - 1) / np.where(varies, spread, 1.0), 0.0)
            reject = varies & (np.abs(z) >= seq.t_critical(c, n - 1))
        no_change = np.zeros(rows, dtype=bool)
        if equivalence is not None and equivalence[k] > 0:
            half = half_width(equivalence[k], n, spread, final)
            no_change = varies & ~reject & (mean - half > -margin) & (mean + half < margin)
        elif equivalence is None and final:  # the repeated CI inside ±margin at the end
            half = half_width(c, n, spread, final)
            no_change = varies & ~reject & (mean - half > -margin) & (mean + half < margin)
        stop = open_ & (reject | no_change | final)
        code = np.where(
            reject, np.where(z > 0, BETTER, WORSE), np.where(no_change, NO_CHANGE, INCONCLUSIVE)
        )
        outcome = np.where(stop, code, outcome)
        stop_n = np.where(stop, n, stop_n)
        half = half_width(c, n, spread, final)
        covered = np.where(stop, (mean - half <= delta) & (delta <= mean + half), covered)
        if not np.any(outcome == 0):
            break
    return outcome, stop_n, covered


def _bound2(v: np.ndarray, rho: float) -> np.ndarray:
    """The squared mixture boundary B(v) = (v + ρ) log((v + ρ)/(ρ α²))."""
    return (v + rho) * np.log((v + rho) / (rho * ALPHA * ALPHA))


def anytime(paths: Paths, delta: float, *, margin: float, rho: float) -> Tally:
    """The tally of ``anytime_rows``."""
    return _tally(*anytime_rows(paths, delta, margin=margin, rho=rho))


def anytime_rows(paths: Paths, delta: float, *, margin: float, rho: float) -> Rows:
    """``anytime_look`` after every task on every row at once: the self-normalised
    confidence sequence; better/worse when it excludes 0, no change inside ±margin."""
    rows, tasks = paths.rows, paths.tasks
    n = np.arange(1, tasks + 1, dtype=np.float64)
    total, squares = paths.total, paths.squares

    def excess(at: float) -> np.ndarray:
        v = np.maximum(squares - 2 * at * total + n * at * at, 0.0)
        return (total - n * at) ** 2 - _bound2(v, rho)

    edge_v = squares + 2 * np.abs(total) + n
    usable = (n > np.log((edge_v + rho) / (rho * ALPHA * ALPHA)) + 1) & (n >= 2)
    mean = total / n
    reject = usable & (excess(0.0) >= 0)
    no_change = usable & ~reject & (np.abs(mean) < margin) & (excess(margin) >= 0)
    no_change &= excess(-margin) >= 0
    event = reject | no_change
    any_event = event.any(axis=1)
    first = np.where(any_event, event.argmax(axis=1), tasks - 1)
    idx = np.arange(rows)
    outcome = np.where(
        any_event,
        np.where(reject[idx, first], np.where(mean[idx, first] > 0, BETTER, WORSE), NO_CHANGE),
        INCONCLUSIVE,
    )
    out_at_delta = usable & (excess(delta) >= 0)
    covered = ~out_at_delta[idx, first]
    return outcome, first + 1, covered


def peek_every(paths: Paths, delta: float, *, start: int) -> Tally:
    """The strawman: the fixed-sample t-test after every task from ``start``."""
    rows, tasks = paths.rows, paths.tasks
    n = np.arange(1, tasks + 1, dtype=np.float64)
    total, squares = paths.total, paths.squares
    mean = total / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(squares - total * total / n, 0.0) / (n - 1)
    sd = np.sqrt(np.where(n > 1, var, 0.0))
    crit = sp.t.ppf(1 - ALPHA / 2, np.maximum(n - 1, 1))
    half = crit * sd / np.sqrt(n)
    reject = (sd > 0) & (np.abs(mean) >= half)
    reject[:, : start - 1] = False
    any_event = reject.any(axis=1)
    first = np.where(any_event, reject.argmax(axis=1), tasks - 1)
    idx = np.arange(rows)
    outcome = np.where(any_event, np.where(mean[idx, first] > 0, BETTER, WORSE), INCONCLUSIVE)
    m, h = mean[idx, first], half[idx, first]
    return _tally(outcome, first + 1, (m - h <= delta) & (delta <= m + h))


@dataclass(frozen=True)
class Job:
    rules: CellRules
    scenario: float
    replicates: int
    seed: tuple[int, ...]


def run_job(job: Job) -> tuple[int, int, float, dict[str, Tally]]:
    """One chunk of one cell and scenario: every rule on the same data."""
    rules = job.rules
    delta = job.scenario * rules.margin
    rng = np.random.default_rng(np.random.SeedSequence(list(job.seed)))
    paths = Paths.of(
        draw_differences(rng, job.replicates, rules.tasks, rules.attempts, shift_for(delta))
    )
    margin = rules.margin
    out = {
        "fixed": group_sequential(paths, (rules.tasks,), (rules.fixed,), delta, margin=margin),
        "peek-4": group_sequential(paths, rules.ends, [rules.fixed] * LOOKS, delta, margin=margin),
        "peek-every": peek_every(paths, delta, start=PEEK_EVERY_FROM),
        "obf": group_sequential(paths, rules.ends, rules.obf, delta, margin=margin),
        "obf+eq": group_sequential(
            paths, rules.ends, rules.obf, delta, margin=margin, equivalence=rules.equivalence
        ),
        "pocock": group_sequential(paths, rules.ends, rules.pocock, delta, margin=margin),
        "anytime": anytime(paths, delta, margin=margin, rho=rules.rho),
    }
    return rules.tasks, rules.attempts, job.scenario, out


# --------------------------------------------------------------------------- the budget


@dataclass
class BudgetResult:
    decisions: int = 0
    overshoots: int = 0
    naive_overshoots: int = 0
    """Overshoots of the strawman that plans a batch when its *expected* cost fits."""
    stopped_by_budget: int = 0
    spent_share: float = 0.0
    """Mean dollars spent / budget."""


@cache
def _bounds(tasks: int, ends: tuple[int, ...], final: bool) -> seq.Boundaries:
    return seq.boundaries(
        tuple(n / tasks for n in ends),
        alpha=ALPHA,
        equivalence=seq.equivalence_error(ALPHA),
        final=final,
    )


def budget_job(args: tuple[int, int]) -> BudgetResult:
    """``count`` decisions with a dollar budget, each batch sized by ``affordable_tasks``
    from the worst case of its tasks; every attempt costs at most its task's worst case
    (a fifth of them exactly that), the budget is 10–100 % of the maximum's worst case."""
    count, seed = args
    rng = np.random.default_rng(seed)
    result = BudgetResult()
    for _ in range(count):
        tasks = int(rng.choice(TASKS))
        attempts = int(rng.choice(ATTEMPTS))
        rules = cell_rules_cached(tasks, attempts)
        delta = float(rng.choice(SCENARIOS)) * rules.margin
        d = draw_differences(rng, 1, tasks, attempts, shift_for(delta))[0]
        # Worst case per attempt of each task (long tasks cost more), both sides.
        worst_attempt = 0.05 * rng.lognormal(0.0, 0.8, size=tasks)
        worst_task = 2 * attempts * worst_attempt
        exact = rng.random((tasks, 2 * attempts)) < 0.2
        actual = np.where(exact, 1.0, rng.random((tasks, 2 * attempts))) * worst_attempt[:, None]
        actual_task = actual.sum(axis=1)
        budget = float(rng.uniform(0.1, 1.0) * worst_task.sum())
        spent = 0.0
        done = 0
        looks: list[int] = []
        by_budget = False
        for end in rules.ends:
            fits = seq.affordable_tasks(budget, spent, worst_task[done:end].tolist())
            if fits == 0:
                by_budget = True
                break
            spent = math.fsum([spent, *actual_task[done : done + fits].tolist()])
            done += fits
            looks.append(done)
            short = done < end
            if done < 2:
                continue
            bounds = _bounds(tasks, tuple(looks), short)
            verdict = seq.judge(
                d[:done].tolist(), bounds, len(looks) - 1, margin=rules.margin, last=short
            ).verdict
            if short:
                by_budget = True
            if verdict is not seq.Verdict.CONTINUE or short:
                break
        result.decisions += 1
        result.overshoots += spent > budget
        result.stopped_by_budget += by_budget
        result.spent_share += spent / budget
        # The strawman: a batch when its expected cost (half the worst case) fits.
        naive_spent = 0.0
        done = 0
        for end in rules.ends:
            if naive_spent + 0.5 * float(worst_task[done:end].sum()) > budget:
                break
            naive_spent += float(actual_task[done:end].sum())
            done = end
        result.naive_overshoots += naive_spent > budget
    return result


@cache
def cell_rules_cached(tasks: int, attempts: int) -> CellRules:
    return cell_rules(tasks, attempts)


# --------------------------------------------------------------------------- the suite


@dataclass
class Report:
    tallies: dict[tuple[int, int, float, str], Tally] = field(default_factory=dict)
    margins: dict[tuple[int, int], float] = field(default_factory=dict)
    budget: BudgetResult = field(default_factory=BudgetResult)
    replicates: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def _jobs(
    cells: Sequence[tuple[int, int]], replicates: int, seed: int, plant: str | None
) -> list[Job]:
    jobs = []
    for tasks, attempts in cells:
        rules = cell_rules(tasks, attempts, plant)
        per_chunk = max(1, min(replicates, CHUNK_VALUES // tasks))
        for s_index, scenario in enumerate(SCENARIOS):
            done = chunk = 0
            while done < replicates:
                size = min(per_chunk, replicates - done)
                jobs.append(Job(rules, scenario, size, (seed, tasks, attempts, s_index, chunk)))
                done += size
                chunk += 1
    # Largest first, so two workers finish together.
    jobs.sort(key=lambda j: -j.replicates * j.rules.tasks)
    return jobs


def run(
    *,
    cells: Sequence[tuple[int, int]],
    replicates: int,
    decisions: int,
    seed: int = SEED,
    workers: int = 2,
    plant: str | None = None,
) -> Report:
    """The whole suite: every cell and scenario, then the budget decisions."""
    started = time.perf_counter()
    report = Report(replicates=replicates)
    jobs = _jobs(cells, replicates, seed, plant)
    budget_parts = [
        (decisions // workers + (1 if i < decisions % workers else 0), seed * 1000 + i)
        for i in range(workers)
    ]
    if workers > 1:
        context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        with context.Pool(workers) as pool:
            results = pool.map(run_job, jobs, chunksize=1)
            budgets = pool.map(budget_job, budget_parts) if decisions else []
    else:
        results = [run_job(job) for job in jobs]
        budgets = [budget_job(part) for part in budget_parts] if decisions else []
    for tasks, attempts, scenario, tallies in results:
        for rule, tally in tallies.items():
            report.tallies.setdefault((tasks, attempts, scenario, rule), Tally()).add(tally)
    for tasks, attempts in cells:
        report.margins[(tasks, attempts)] = margin_for(tasks, attempts)
    for part in budgets:
        report.budget.decisions += part.decisions
        report.budget.overshoots += part.overshoots
        report.budget.naive_overshoots += part.naive_overshoots
        report.budget.stopped_by_budget += part.stopped_by_budget
        report.budget.spent_share += part.spent_share
    report.failures = check(report, cells)
    report.seconds = time.perf_counter() - started
    return report


def check(report: Report, cells: Sequence[tuple[int, int]]) -> list[str]:
    """Every goal the issue sets, as a list of what was missed (empty: all met).

    Each goal is about a true rate, estimated here with Monte Carlo error, so each is
    checked as the issue words the false-alarm goal: missed only when the estimate is
    beyond the goal by more than 2 Monte Carlo SE (power below 0.78 − 2 SE, tasks above
    82 % + 2 SE, ...). The table prints every estimate with its SE."""
    missed = []
    for tasks, attempts in cells:
        cell = f"T={tasks} k={attempts}"

        def at(scenario: float, rule: str, tasks: int = tasks, attempts: int = attempts) -> Tally:
            return report.tallies[(tasks, attempts, scenario, rule)]

        for rule in OFFERED:
            null = at(0.0, rule)
            bound = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / null.replicates)
            if null.reject > bound:
                missed.append(f"{cell} {rule}: false alarms {null.reject:.4f} > {bound:.4f}")
        peek = at(0.0, "peek-4").reject
        if not PEEK_4_RANGE[0] <= peek <= PEEK_4_RANGE[1]:
            missed.append(f"{cell} peek-4: false alarms {peek:.4f} not near 0.13")
        for rule in SEQUENTIAL:
            margin = at(1.0, rule)
            if margin.reject + 2 * margin.mc_se < GOAL_POWER:
                missed.append(
                    f"{cell} {rule}: power {margin.reject:.4f} ± {margin.mc_se:.4f} < {GOAL_POWER}"
                )
            for scenario, goal in ((1.0, GOAL_TASKS_AT_MARGIN), (1.6, GOAL_TASKS_AT_1_6)):
                tally = at(scenario, rule)
                share, se = tally.mean_tasks() / tasks, tally.tasks_se() / tasks
                if share - 2 * se > goal:
                    missed.append(
                        f"{cell} {rule}: expected tasks {share:.4f} ± {se:.4f} of fixed at "
                        f"{scenario}x margin > {goal}"
                    )
        null = at(0.0, "obf+eq")
        share, se = null.mean_tasks() / tasks, null.tasks_se() / tasks
        if share - 2 * se > GOAL_TASKS_UNDER_ZERO:
            missed.append(
                f"{cell} obf+eq: expected tasks {share:.4f} ± {se:.4f} of fixed under Δ=0 > "
                f"{GOAL_TASKS_UNDER_ZERO}"
            )
    if report.budget.overshoots:
        missed.append(f"budget: {report.budget.overshoots} overshoots")
    return missed


def render(report: Report, cells: Sequence[tuple[int, int]]) -> str:
    lines = [
        f"Decisions at minimum cost: {report.replicates:,} replicates per cell and scenario, "
        f"α = {ALPHA}, power {POWER}, {LOOKS} looks, margin = the fixed design's MDE, "
        "maximum = T.",
        "Columns: false alarms (Δ = 0) ± MC SE; power at the margin and at 1.6 × it; "
        "tasks used as % of the fixed design at Δ = 0 / margin / 1.6 × margin; "
        "'no change' verdicts at Δ = 0; coverage of the interval at the stop at the margin.",
    ]
    header = (
        f"{'rule':<11} {'false alarm':>15} {'power':>14} {'@1.6':>6} "
        f"{'tasks 0':>8} {'tasks m':>8} {'tasks 1.6m':>10} {'no chg 0':>9} {'cover':>6}"
    )
    for tasks, attempts in cells:
        margin = report.margins[(tasks, attempts)]
        lines += ["", f"T = {tasks}, k = {attempts}: margin {100 * margin:.1f} pts", header]
        for rule in RULES:
            t0, tm, t16 = (report.tallies[(tasks, attempts, s, rule)] for s in SCENARIOS)
            lines.append(
                f"{rule:<11} {t0.reject:>8.4f} ±{t0.mc_se:.4f} "
                f"{tm.reject:>7.4f} ±{tm.mc_se:.4f} {t16.reject:>6.3f} "
                f"{100 * t0.mean_tasks() / tasks:>7.1f}% {100 * tm.mean_tasks() / tasks:>7.1f}% "
                f"{100 * t16.mean_tasks() / tasks:>9.1f}% "
                f"{t0.no_change / t0.replicates:>9.3f} {tm.coverage:>6.3f}"
            )
    budget = report.budget
    if budget.decisions:
        lines += [
            "",
            f"Dollar budget: {budget.decisions:,} decisions, {budget.overshoots} overshoots "
            f"(strawman planning on the expected cost: {budget.naive_overshoots}), "
            f"{budget.stopped_by_budget:,} stopped by the budget, mean spend "
            f"{100 * budget.spent_share / budget.decisions:.1f} % of the budget.",
        ]
    lines += ["", f"Time: {report.seconds:.1f} s"]
    if report.failures:
        lines += ["", "MISSED:"] + [f"  {f}" for f in report.failures]
    else:
        lines += ["", "All goals met."]
    return "\n".join(lines)


def _cells(text: str | None) -> list[tuple[int, int]]:
    if not text:
        return [(t, k) for t in TASKS for k in ATTEMPTS]
    out = []
    for item in text.split(","):
        tasks, attempts = item.lower().split("x")
        out.append((int(tasks), int(attempts)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.stats.sequential")
    parser.add_argument("--replicates", type=int, default=REPLICATES)
    parser.add_argument("--decisions", type=int, default=DECISIONS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--cells", help="e.g. 89x1,200x3 (default: every T × k)")
    parser.add_argument("--plant", choices=("naive-boundary",))
    args = parser.parse_args(argv)
    cells = _cells(args.cells)
    report = run(
        cells=cells,
        replicates=args.replicates,
        decisions=args.decisions,
        seed=args.seed,
        workers=args.workers,
        plant=args.plant,
    )
    print(render(report, cells))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
