"""Power and the minimum detectable effect of a paired comparison, for the test the verdict
uses (pure: standard library only).

Miller (2024), recommendation 5: a comparison's per-task difference ``d_t`` has variance
``ω² = Var(x_L − x_R) + E[σ_L²]/K_L + E[σ_R²]/K_R``: the spread between tasks of the two
sides' true rates (what pairing and correlation leave of it), plus each side's
attempt-to-attempt variance divided by its attempts. More tasks shrink all of ω²/T; more
attempts only the second part. ``Spread`` holds the three parts, estimated from recorded
runs (``spread_from_tasks``) or, without per-task files, from a summary
(``spread_from_summary``).

The power is that of the verdict's own test (``results.paired``):

* one attempt per task on both sides: exact McNemar, summed exactly over the number of
  tasks that change (Binomial(T, ψ)) and how they split; under a difference Δ the share
  that changes is ``ψ = ω² + Δ²`` (the spread kept, Miller's assumption), at least |Δ|;
* several attempts: the sign-flip test, which measures ``Σ d_t`` against its spread under
  sign flips, ``sqrt(Σ d_t²)``: under Δ that spread is ``sqrt(T(ω² + Δ²))`` while ``Σ d_t``
  varies by ``sqrt(T)·ω`` (the same form as McNemar's); the difference's variance is at
  least that of a ``|Δ|`` change counted over k attempts, so no spread, however small,
  makes a difference free to detect.

Either exact test needs enough tasks to reach ``p < α`` at all (6 for α = 0.05): below
that the MDE is infinite, and said so. ``mde`` solves power = 80% for |Δ| by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from reconciler.results import stats

__all__ = [
    "ASSUMED_RHO",
    "Spread",
    "exact_minimum_tasks",
    "mde",
    "power",
    "spread_from_summary",
    "spread_from_tasks",
]

_NORMAL = NormalDist()

ASSUMED_RHO = 0.5
"""Correlation of two different configs' per-task rates when no recorded pair measures it
(Miller reports 0.3–0.7 between frontier models; 0.5 is the middle)."""
TARGET_POWER = 0.8
SHIFT_SPREAD = 0.08
"""How much a true difference Δ adds to the per-task difference's variance, as a share of
Δ²: a regression moves tasks of middling difficulty more than nearly-always or never solved
ones (a shift on the logit scale adds 0.13–0.18 Δ² in ``make stats``'s model, less where
rates pushed towards 0 or 1 vary less; 0.08 keeps the power at the stated MDE within 5
points of 80% there, from 10 tasks to 500)."""


@dataclass(frozen=True)
class Spread:
    """The parts of a paired comparison's per-task variance (Miller's ω²)."""

    between: float
    """Var(x_L − x_R): the spread between tasks of the two sides' true rates."""
    within_left: float
    """E[σ²] of the left side: one attempt's variance around its task's rate."""
    within_right: float
    basis: str
    """Where it was estimated from, for people."""

    def omega2(self, k_left: int, k_right: int) -> float:
        return self.between + self.within_left / k_left + self.within_right / k_right


def exact_minimum_tasks(alpha: float = 0.05) -> int:
    """The fewest tasks with which an exact paired test can reach ``p < alpha`` at all: every
    task changing the same way has p = 2 / 2^n."""
    return math.floor(math.log2(2 / alpha)) + 1


def _smoothed(passes: float, attempts: float) -> float:
    """A pass rate kept off 0 and 1 (Laplace), so ``p(1 − p)`` is never 0."""
    return (passes + 1) / (attempts + 2)


# --------------------------------------------------------------------------- estimation


def _task_parts(counts: Mapping[str, tuple[int, int]]) -> tuple[float, float, float, int]:
    """(mean rate, Var of the per-task rates, mean within-task variance, attempts per task)
    of one run's ``task -> (passes, attempts)``; within is None-like (-1) at one attempt."""
    rates = [c / n for c, n in counts.values() if n]
    ks = [n for _c, n in counts.values() if n]
    k = max(1, round(stats.mean([float(n) for n in ks]))) if ks else 1
    if not rates:
        return 0.0, 0.0, -1.0, k
    within = -1.0
    if k > 1:
        within = stats.mean(
            [(c / n) * (1 - c / n) * n / (n - 1) for c, n in counts.values() if n > 1]
        )
    return stats.mean(rates), stats.variance(rates), within, k


def spread_from_tasks(
    newest: Mapping[str, tuple[int, int]],
    other: Mapping[str, tuple[int, int]] | None = None,
    *,
    same_config: bool,
    basis: str,
) -> Spread:
    """The spread of a comparison, from recorded runs' per-task ``(passes, attempts)``.

    ``newest`` is the run the comparison will be against; ``other`` a second comparable run
    (on the same tasks) that measures the spread between two runs directly, correlation
    included. ``same_config``: the new run repeats ``newest``'s configuration, so without a
    second run the two sides' true rates are taken as equal (only attempts differ).
    """
    p, var_rates, within, k = _task_parts(newest)
    attempts = sum(n for _c, n in newest.values())
    floor = _smoothed(p * attempts, attempts)
    floor *= 1 - floor
    if within < 0:
        # One attempt per task cannot split the spread: count all of it as attempt-to-attempt
        # (bounded by p(1 − p)), the conservative side for a re-run.
        within = max(var_rates, floor)
    within = max(within, floor / max(1, len(newest)))
    between_rates = max(0.0, var_rates - within / k)
    if other is not None:
        common = sorted(newest.keys() & other.keys())
        if len(common) >= 2:
            d = [
                newest[t][0] / newest[t][1] - other[t][0] / other[t][1]
                for t in common
                if newest[t][1] and other[t][1]
            ]
            _p2, _v2, within2, k2 = _task_parts({t: other[t] for t in common})
            within2 = within if within2 < 0 else max(within2, floor / max(1, len(common)))
            measured = stats.variance(d)
            noise = within / k + within2 / k2
            if noise > measured:
                # The pair measured less than the attempt-to-attempt estimates allow (they are
                # upper bounds at one attempt): the measured spread is all attempts.
                scale = measured / noise
                return Spread(0.0, within * scale, within2 * scale, basis)
            return Spread(measured - noise, within, within2, basis)
    if same_config:
        return Spread(0.0, within, within, basis)
    # A new config: its rates correlate ASSUMED_RHO with the recorded run's.
    return Spread(2 * (1 - ASSUMED_RHO) * between_rates, within, within, basis)


def spread_from_summary(
    pass_at_1: float,
    tasks: int,
    attempts: int,
    *,
    k: int | None = None,
    pass_at_k: float | None = None,
    same_config: bool,
    basis: str,
) -> Spread:
    """The spread from a recorded summary alone: ``p(1 − p)`` (smoothed off 0 and 1) is the
    whole per-attempt variance; a pass@k (k ≥ 2) splits it between tasks and attempts by the
    Beta distribution of task rates with that mean and pass@k. Without it, all of it is
    taken as attempt-to-attempt variance for a re-run and as spread between tasks (at
    ``ASSUMED_RHO``) plus attempts for a new config: the conservative sides."""
    p = _smoothed(pass_at_1 * tasks * attempts, tasks * attempts)
    total = p * (1 - p)
    between_rates = None
    if k is not None and k >= 2 and pass_at_k is not None:
        between_rates = _beta_between(p, k, pass_at_k)
    if between_rates is None:
        return Spread(0.0, total, total, basis)
    within = max(total - between_rates, total / max(1, tasks))
    if same_config:
        return Spread(0.0, within, within, basis)
    return Spread(2 * (1 - ASSUMED_RHO) * between_rates, within, within, basis)


def _beta_between(p: float, k: int, pass_at_k: float) -> float | None:
    """Var(x) of the Beta(p·s, (1−p)·s) whose pass@k = 1 − E[(1−x)^k] matches."""

    def pass_k(s: float) -> float:
        a, b = p * s, (1 - p) * s
        fail = 1.0
        for i in range(k):
            fail *= (b + i) / (a + b + i)
        return 1 - fail

    # pass@k falls from 1 − (1−p)^k (s → ∞, no spread) towards p (s → 0, all spread).
    lo, hi = 1e-4, 1e6
    if not pass_k(lo) <= pass_at_k <= pass_k(hi):
        return None
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        if pass_k(mid) < pass_at_k:
            lo = mid
        else:
            hi = mid
    s = math.sqrt(lo * hi)
    return p * (1 - p) / (s + 1)


# --------------------------------------------------------------------------- power


def _log_binom_pmf(n: int, k: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


@lru_cache(maxsize=4096)
def _critical(n: int, alpha: float) -> int:
    """The largest c with McNemar's ``2·P(X ≤ c | n, ½) < alpha`` (−1: none)."""
    c, acc = -1, 0.0
    log_half = n * math.log(0.5)
    log_comb = 0.0
    for k in range(n + 1):
        acc += math.exp(log_comb + log_half)
        if 2 * acc >= alpha:
            break
        c = k
        log_comb += math.log((n - k) / (k + 1))
    return c


def _tail(n: int, upto: int, p: float) -> float:
    """P(X ≤ upto) for X ~ Binomial(n, p), by the pmf's recurrence in log space."""
    if upto < 0:
        return 0.0
    if p <= 0.0 or upto >= n:
        return 1.0
    if p >= 1.0:
        return 0.0
    step = math.log(p) - math.log1p(-p)
    log_pmf = n * math.log1p(-p)
    total = 0.0
    for k in range(upto + 1):
        total += math.exp(log_pmf)
        log_pmf += math.log((n - k) / (k + 1)) + step
    return min(1.0, total)


def _mcnemar_power(delta: float, tasks: int, psi: float, alpha: float) -> float:
    pi = min(1.0, 0.5 * (1 + delta / psi))
    sd = math.sqrt(tasks * psi * (1 - psi))
    lo = max(0, math.floor(tasks * psi - 6 * sd - 2))
    hi = min(tasks, math.ceil(tasks * psi + 6 * sd + 2))
    total = 0.0
    for n in range(lo, hi + 1):
        c = _critical(n, alpha)
        if c < 0:
            continue
        weight = math.exp(_log_binom_pmf(tasks, n, psi))
        # Rejected when the downs (or the ups) are at most c.
        total += weight * (_tail(n, c, pi) + _tail(n, c, 1 - pi))
    return min(1.0, total)


def _sign_flip_power(delta: float, tasks: int, omega2: float, alpha: float) -> float:
    """The sign-flip test's power, normal approximation: it compares ``S = Σ d_t`` with its
    spread under sign flips, ``sqrt(Σ d_t²)``; under a difference Δ, ``S`` has mean TΔ and
    variance Tω², and ``Σ d_t² ≈ T(ω² + Δ²)`` (the flips do not know the mean is Δ)."""
    z = stats.z_quantile(1 - alpha / 2)
    omega = math.sqrt(omega2)
    edge = z * math.sqrt(omega2 + delta * delta)
    centre = delta * math.sqrt(tasks)
    return _NORMAL.cdf((centre - edge) / omega) + _NORMAL.cdf((-centre - edge) / omega)


def power(
    delta: float,
    *,
    tasks: int,
    k_left: int,
    k_right: int,
    spread: Spread,
    alpha: float = 0.05,
) -> float:
    """The chance the verdict's test finds a true difference ``delta`` (two-sided)."""
    delta = abs(delta)
    if tasks < exact_minimum_tasks(alpha) or delta <= 0:
        return 0.0 if delta > 0 else alpha
    omega2 = spread.omega2(k_left, k_right)
    if k_left == 1 and k_right == 1:
        psi = min(1.0, max(omega2 + delta * delta, delta))
        return _mcnemar_power(delta, tasks, psi, alpha)
    # A difference moves mid-difficulty tasks most (``SHIFT_SPREAD``), and it has at least
    # the variance of a |Δ| change counted over the attempts.
    floor = delta * (1 - delta) / max(k_left, k_right)
    spread_then = omega2 + SHIFT_SPREAD * delta * delta
    return _sign_flip_power(delta, tasks, max(spread_then, floor, 1e-12), alpha)


def mde(
    *,
    tasks: int,
    k_left: int,
    k_right: int,
    spread: Spread,
    alpha: float = 0.05,
    target: float = TARGET_POWER,
) -> float:
    """The smallest |Δ| the verdict's test finds with probability ``target``; ``inf`` when
    no difference up to 100 points reaches it (too few tasks for the exact test)."""

    def enough(delta: float) -> bool:
        return (
            power(delta, tasks=tasks, k_left=k_left, k_right=k_right, spread=spread, alpha=alpha)
            >= target
        )

    if tasks < exact_minimum_tasks(alpha) or not enough(1.0):
        return math.inf
    lo, hi = 0.0, 1.0
    for _ in range(16):  # to 0.002 points
        mid = (lo + hi) / 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
