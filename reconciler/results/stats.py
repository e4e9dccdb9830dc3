"""Statistics for deciding with benchmark results (pure: standard library only).

The method follows Miller (2024), "Adding Error Bars to Evals", as recipe'd for task ×
attempt data in ``shared/results.md``; this module holds the distributions and estimators
the others build on:

* **The task is the cluster.** A run's per-task rate ``x_t`` is the mean of its attempts;
  pass@1 is the mean of the rates and its standard error is ``sd(x_t) / sqrt(T)``, which is
  Miller's clustered SE with equal cluster sizes (``clustered_se`` computes the general form;
  the tests check they agree). Attempts are never counted as independent samples.
* **pass@1's interval** is Wilson's over the tasks (``wilson`` with the sum of the rates),
  the Platform's own, so every surface shows the same one (``results.numbers``).
* **Paired comparisons** (``results.paired``): exact McNemar (``mcnemar_exact``) and the
  sign-flip test, each inverted into the interval of Δ.
* **Power** (``results.power``); ``mde`` is Miller's recommendation 5 solved for the
  effect with normal quantiles, as his paper writes it.

Nothing here reads a clock or global randomness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "DEFAULT_SEED",
    "Interval",
    "beta_quantile",
    "binom_cdf",
    "clustered_se",
    "correlation",
    "mcnemar_exact",
    "mde",
    "mean",
    "pass_at_k",
    "pass_hat_k",
    "student_t_cdf",
    "t_quantile",
    "variance",
    "wilson",
    "z_quantile",
]

DEFAULT_SEED = 20241101
"""Resampling seed when the caller gives none (any fixed value: results must be repeatable)."""

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval and the method that produced it."""

    low: float
    high: float
    method: str
    """``wilson``, ``mcnemar exact``, ``sign-flip exact``, ``sign-flip 10,000 random``,
    ``normal`` or ``none`` (too little data)."""

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


def wilson(passes: float, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for ``passes`` of ``n`` independent trials (``passes`` may be a
    sum of per-task rates: the Platform's interval of pass@1 over tasks)."""
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


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of Beta(a, b) (bisection on the regularised incomplete beta)."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if _betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return (lo + hi) / 2


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
