"""Statistics for deciding with benchmark results (pure: standard library only).

The method follows Miller (2024), "Adding Error Bars to Evals", as recipe'd for task ×
attempt data in ``shared/results.md``:

* **The task is the cluster.** A run's per-task rate ``x_t`` is the mean of its attempts;
  pass@1 is the mean of the rates and its standard error is ``sd(x_t) / sqrt(T)``, which is
  Miller's clustered SE with equal cluster sizes (``clustered_se`` computes the general form;
  the tests check they agree). Attempts are never counted as independent samples.
* **Intervals that hold on small task sets.** One attempt per task on fewer than
  ``WILSON_BELOW`` tasks: Wilson (the CLT is too narrow there, Bowyer et al. 2025); several
  attempts: a seeded percentile bootstrap over tasks.
* **Paired comparisons.** ``d_t = x_right,t - x_left,t`` over the tasks both ran; the CI is a
  t-interval on ``d`` with ``T - 1`` degrees of freedom; the p-value is exact McNemar with one
  attempt per task, and a sign-flip permutation test with several (exact up to
  ``EXACT_FLIPS_UP_TO`` non-zero differences, else ``FLIP_ROUNDS`` seeded random flips).
* **Power.** ``mde`` is Miller's recommendation 5 solved for the effect.

Nothing here reads a clock or global randomness: every resampling takes a seed, so the same
inputs give the same numbers.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "EXACT_FLIPS_UP_TO",
    "FLIP_ROUNDS",
    "BOOTSTRAP_ROUNDS",
    "WILSON_BELOW",
    "Interval",
    "binom_cdf",
    "bootstrap_ci",
    "clustered_se",
    "correlation",
    "mcnemar_exact",
    "mde",
    "mean",
    "pass_at_k",
    "pass_hat_k",
    "rate_interval",
    "sign_flip_p",
    "student_t_cdf",
    "t_quantile",
    "variance",
    "wilson",
    "z_quantile",
]

WILSON_BELOW = 300
"""With one attempt per task and fewer tasks than this, pass@1 gets a Wilson interval."""
EXACT_FLIPS_UP_TO = 20
"""Sign-flip tests enumerate all 2^n flips up to this many non-zero differences."""
FLIP_ROUNDS = 10_000
BOOTSTRAP_ROUNDS = 2_000
DEFAULT_SEED = 20241101
"""Resampling seed when the caller gives none (any fixed value: results must be repeatable)."""

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval and the method that produced it."""

    low: float
    high: float
    method: str
    """``wilson``, ``normal``, ``bootstrap``, ``t`` or ``none`` (too little data)."""

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def z_quantile(p: float) -> float:
    """The standard normal quantile."""
    return _NORMAL.inv_cdf(p)


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def variance(values: Sequence[float], ddof: int = 1) -> float:
    """Sample variance (``ddof=1``) or population variance (``ddof=0``); 0 below 2 values."""
    n = len(values)
    if n - ddof <= 0:
        return 0.0
    m = mean(values)
    return math.fsum((v - m) ** 2 for v in values) / (n - ddof)


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None when either side has no variance (r is undefined)."""
    if len(xs) < 2:
        return None
    mx, my = mean(xs), mean(ys)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


# --------------------------------------------------------------------------- intervals


def wilson(passes: int, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for ``passes`` of ``n`` independent trials."""
    if n <= 0:
        return Interval(0.0, 1.0, "none")
    z = z_quantile(0.5 + level / 2)
    p = passes / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom), "wilson")


def clustered_se(clusters: Sequence[Sequence[float]]) -> float:
    """Miller's clustered standard error of the mean of all scores (App. A, with the
    finite-cluster correction C/(C-1)): ``sqrt(C/(C-1) * sum_c (sum_i (s_i - mean))^2) / n``.
    """
    scores = [s for cluster in clusters for s in cluster]
    c, n = len(clusters), len(scores)
    if c < 2 or n == 0:
        return 0.0
    m = mean(scores)
    total = math.fsum(math.fsum(s - m for s in cluster) ** 2 for cluster in clusters)
    return math.sqrt(c / (c - 1) * total) / n


def bootstrap_ci(
    rows: Sequence[float],
    statistic: Callable[[Sequence[float]], float] = mean,
    *,
    seed: int = DEFAULT_SEED,
    rounds: int = BOOTSTRAP_ROUNDS,
    level: float = 0.95,
) -> Interval:
    """Percentile bootstrap over ``rows`` (one value per task: tasks are resampled, never
    attempts), seeded."""
    n = len(rows)
    if n == 0:
        return Interval(0.0, 0.0, "none")
    rng = random.Random(seed)
    stats = sorted(statistic([rows[rng.randrange(n)] for _ in range(n)]) for _ in range(rounds))
    alpha = (1 - level) / 2
    return Interval(_quantile(stats, alpha), _quantile(stats, 1 - alpha), "bootstrap")


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def rate_interval(
    rates: Sequence[float],
    attempts: int,
    *,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> Interval:
    """The interval of pass@1 = mean of per-task ``rates`` with ``attempts`` per task:
    Wilson for one attempt on small task sets, normal (clustered SE) for one attempt on
    large ones, a task-level bootstrap with several attempts."""
    t = len(rates)
    if t == 0:
        return Interval(0.0, 1.0, "none")
    if attempts <= 1:
        passes = round(math.fsum(rates))
        if t < WILSON_BELOW:
            return wilson(passes, t, level)
        p = passes / t
        half = z_quantile(0.5 + level / 2) * math.sqrt(p * (1 - p) / t)
        return Interval(max(0.0, p - half), min(1.0, p + half), "normal")
    return bootstrap_ci(rates, seed=seed, level=level)


# --------------------------------------------------------------------------- distributions


def binom_cdf(k: int, n: int, p: float = 0.5) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed exactly."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar p-value: ``b`` pairs went one way, ``c`` the other (ties ignored)."""
    if b + c == 0:
        return 1.0
    return min(1.0, 2 * binom_cdf(min(b, c), b + c, 0.5))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c if abs(1 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c if abs(1 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    """The CDF of Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The quantile of Student's t (bisection on the CDF; ample for interval bounds)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


# --------------------------------------------------------------------------- tests


def sign_flip_p(
    diffs: Sequence[float], *, seed: int = DEFAULT_SEED, rounds: int = FLIP_ROUNDS
) -> tuple[float, str]:
    """Two-sided sign-flip permutation p-value of ``mean(diffs) == 0``, and the method.

    Zero differences cannot change sign and are dropped. Up to ``EXACT_FLIPS_UP_TO``
    non-zero differences every sign pattern is enumerated; beyond, ``rounds`` seeded random
    patterns are drawn (and the observed one counted, so p is never 0).
    """
    nonzero = [d for d in diffs if d != 0]
    if not nonzero:
        return 1.0, "sign-flip exact"
    observed = abs(math.fsum(nonzero))
    eps = 1e-12 * max(1.0, observed)
    if len(nonzero) <= EXACT_FLIPS_UP_TO:
        extreme = total = 0
        for signs in itertools.product((1, -1), repeat=len(nonzero)):
            total += 1
            if abs(math.fsum(s * d for s, d in zip(signs, nonzero, strict=True))) >= observed - eps:
                extreme += 1
        return extreme / total, "sign-flip exact"
    rng = random.Random(seed)
    extreme = 1
    for _ in range(rounds):
        flipped = math.fsum(d if rng.random() < 0.5 else -d for d in nonzero)
        if abs(flipped) >= observed - eps:
            extreme += 1
    return extreme / (rounds + 1), f"sign-flip {rounds:,} random"


# --------------------------------------------------------------------------- pass@k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: ``c`` passes in ``n`` attempts (1 - C(n-c,k)/C(n,k))."""
    if k > n:
        raise ValueError("k cannot exceed the attempts")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task: the chance that k attempts drawn all pass (C(c,k)/C(n,k))."""
    if k > n:
        raise ValueError("k cannot exceed the attempts")
    return math.comb(c, k) / math.comb(n, k)


# --------------------------------------------------------------------------- power


def mde(
    *,
    tasks: int,
    var_x_left: float,
    var_x_right: float,
    covariance: float,
    sigma2_left: float,
    sigma2_right: float,
    attempts_left: int,
    attempts_right: int,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Minimum detectable difference of a paired comparison (Miller's recommendation 5):
    ``(z_{1-alpha/2} + z_power) * omega / sqrt(T)`` with
    ``omega^2 = Var(x_L) + Var(x_R) - 2 Cov + E[sigma_L^2]/K_L + E[sigma_R^2]/K_R``."""
    if tasks <= 0:
        return math.inf
    omega2 = (
        var_x_left
        + var_x_right
        - 2 * covariance
        + sigma2_left / max(1, attempts_left)
        + sigma2_right / max(1, attempts_right)
    )
    z = z_quantile(1 - alpha / 2) + z_quantile(power)
    return z * math.sqrt(max(0.0, omega2)) / math.sqrt(tasks)


ASSUMED_RHO = 0.5
"""Correlation of two runs' per-task rates assumed when planning from a summary alone
(Miller reports 0.3–0.7 between frontier models; 0.5 is the middle)."""


def planning_mde(
    pass_rate: float,
    tasks: int,
    *,
    rho: float = ASSUMED_RHO,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The MDE of a paired comparison of a new run with a previous one, estimated before
    paying from the previous run's pass@1 alone: a per-task variance of ``p(1-p)`` (the
    binomial bound, counting all of it as between-task variance, which attempts cannot
    reduce: conservative) correlated ``rho`` between the runs, so
    ``omega^2 = 2 (1 - rho) p (1 - p)``."""
    p = min(1.0, max(0.0, pass_rate))
    var = p * (1 - p)
    return mde(
        tasks=tasks,
        var_x_left=var,
        var_x_right=var,
        covariance=rho * var,
        sigma2_left=0.0,
        sigma2_right=0.0,
        attempts_left=1,
        attempts_right=1,
        alpha=alpha,
        power=power,
    )
