"""The paired test of Δ and its interval, from one procedure (pure: standard library only).

A comparison prints a p-value, an interval and a verdict. All three come from the test
built here, so they can never disagree: the interval at level ``1 − a`` is the set of
differences ``δ`` the test does not reject at ``a``, and it excludes 0 exactly when the
p-value of ``Δ = 0`` is below ``a``.

* **One attempt per task on both sides** (every per-task difference is −1, 0 or +1):
  exact McNemar. Conditional on the ``n`` tasks that changed, the ``b`` that went up are
  Binomial(n, π); the exact (Clopper–Pearson) interval of π inverts the exact conditional
  test, and π = ½ is outside it exactly when McNemar's p is below ``a``. Δ = ψ·(2π − 1),
  where ψ is the share of tasks that change at all; ψ's own exact interval scales π's, so a
  comparison where every task tied reads ``[−ψ_U, +ψ_U]`` (at 5 tasks about ±52 points)
  rather than a zero-width "no change". The scaling uses ψ's interval at ``PSI_LEVEL``,
  chosen by ``make stats`` so the interval covers the true Δ at least 95% of the time.
* **Several attempts** (differences in steps of 1/K): the sign-flip permutation test of
  ``Σ (d_t − δ)``, inverted. Every sign pattern is enumerated while the distinct patterns
  number at most ``EXACT_PATTERNS`` (tasks with equal differences are exchangeable, so a
  pattern is how many of each group flip); beyond, ``FLIP_ROUNDS`` seeded random patterns
  (plus the observed one, so p is never 0). For each pattern the δ where it is at least as
  extreme as the data solve one quadratic, an interval that always contains Δ̂, so the
  accepted set is one interval whose ends are read off sorted roots: no bisection, no
  tolerance between the p-value and the interval.

Neither test ever decides from a zero-width interval: ``Paired.decisive`` is False when
nothing varied (every task tied), and the verdict is then inconclusive.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from reconciler.results.stats import DEFAULT_SEED, Interval, beta_quantile, mcnemar_exact

__all__ = [
    "EXACT_PATTERNS",
    "FLIP_ROUNDS",
    "PSI_LEVEL",
    "Paired",
    "paired_test",
]

EXACT_PATTERNS = 20_000
"""The sign-flip test enumerates every distinct pattern up to this many, else samples."""
FLIP_ROUNDS = 10_000
"""Seeded random sign patterns when the distinct patterns are too many to enumerate."""
PSI_LEVEL = 0.95
"""Confidence of the interval of ψ (the share of tasks that changed) that scales McNemar's
interval of π: with ψ at 99%, the interval of Δ covers at least 95% (``make stats``)."""

_TINY = 1e-12
_ROOT_EPS = 1e-9


@dataclass(frozen=True)
class Paired:
    """A paired test of ``Δ = 0`` and the intervals that invert it."""

    method: str
    """``mcnemar exact``, ``sign-flip exact`` or ``sign-flip 10,000 random``."""
    p_value: float
    """Two-sided p-value of Δ = 0."""
    decisive: bool
    """False when every task tied: the data cannot say which way, or how far."""
    _mcnemar: tuple[int, int, int] | None = None
    """(up, down, tasks) for McNemar."""
    _lows: tuple[float, ...] = field(default=(), repr=False)
    _low_weights: tuple[float, ...] = field(default=(), repr=False)
    _highs: tuple[float, ...] = field(default=(), repr=False)
    _high_weights: tuple[float, ...] = field(default=(), repr=False)

    def interval(self, alpha: float = 0.05) -> Interval:
        """The set of δ this test does not reject at ``alpha`` (two-sided), within [−1, 1]."""
        if self._mcnemar is not None:
            return _mcnemar_interval(*self._mcnemar, alpha, self.method)
        return Interval(
            max(-1.0, _bound(self._lows, self._low_weights, alpha)),
            min(1.0, -_bound(self._highs, self._high_weights, alpha)),
            self.method,
        )


def _bound(roots: Sequence[float], cumulative: Sequence[float], alpha: float) -> float:
    """The first root (ascending) at which the accumulated pattern weight exceeds ``alpha``."""
    index = bisect.bisect_right(cumulative, alpha + _TINY)
    if index >= len(roots):
        return math.inf  # nothing is ever accepted: cannot happen (Δ̂ always is)
    return roots[index]


def _clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    if trials == 0:
        return 0.0, 1.0
    low = 0.0 if successes == 0 else beta_quantile(alpha / 2, successes, trials - successes + 1)
    high = (
        1.0
        if successes == trials
        else beta_quantile(1 - alpha / 2, successes + 1, trials - successes)
    )
    return low, high


def _mcnemar_interval(
    up: int, down: int, tasks: int, alpha: float, method: str = "mcnemar exact"
) -> Interval:
    n = up + down
    pi_low, pi_high = _clopper_pearson(up, n, alpha)
    psi_low, psi_high = _clopper_pearson(n, tasks, 1 - PSI_LEVEL)
    lo = 2 * pi_low - 1
    hi = 2 * pi_high - 1
    low = lo * (psi_high if lo < 0 else psi_low)
    high = hi * (psi_high if hi > 0 else psi_low)
    return Interval(max(-1.0, low), min(1.0, high), method)


def _binomial_table(m: int) -> list[float]:
    """Cumulative Binomial(m, ½) probabilities, for sampling by inversion."""
    out, acc = [], 0.0
    for k in range(m + 1):
        acc += math.exp(
            math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1) - m * math.log(2)
        )
        out.append(acc)
    out[-1] = 1.0
    return out


def _exact_sums(values: Sequence[float], counts: Sequence[int]) -> list[tuple[float, float, float]]:
    """Every distinct sign pattern, as (probability, A, B): ``A = Σ s_t d_t``, ``B = Σ s_t``.
    A pattern is how many of each group of equal differences flip."""
    scale = 2 ** sum(counts)
    out = []
    for ks in itertools.product(*(range(m + 1) for m in counts)):
        weight = math.prod(math.comb(m, k) for m, k in zip(counts, ks, strict=True)) / scale
        a = math.fsum(v * (2 * k - m) for v, m, k in zip(values, counts, ks, strict=True))
        b = float(sum(2 * k - m for m, k in zip(counts, ks, strict=True)))
        out.append((weight, a, b))
    return out


def _random_sums(
    values: Sequence[float], counts: Sequence[int], seed: int
) -> list[tuple[float, float, float]]:
    """``FLIP_ROUNDS`` seeded random sign patterns and the observed one, as (weight, A, B)."""
    tasks = sum(counts)
    total = math.fsum(v * m for v, m in zip(values, counts, strict=True))
    rng = random.Random(seed)
    # A pattern is T random bits; a group's flips are the bits set under its mask.
    masks, start = [], 0
    for m in counts:
        masks.append(((1 << m) - 1) << start)
        start += m
    weight = 1.0 / (FLIP_ROUNDS + 1)
    out = [(weight, total, float(tasks))]  # the observed pattern
    twice = [2 * v for v in values]
    for _ in range(FLIP_ROUNDS):
        bits = rng.getrandbits(tasks)
        flips = [(bits & mask).bit_count() for mask in masks]
        # A = Σ v (2k − m) = 2 Σ v k − D and B = 2 Σ k − T.
        a = sum([w * k for w, k in zip(twice, flips)]) - total  # noqa: B905 (hot loop)
        out.append((weight, a, float(2 * sum(flips) - tasks)))
    return out


def _sign_flip(diffs: Sequence[float], seed: int) -> Paired:
    tasks = len(diffs)
    groups = sorted(Counter(round(d, 9) for d in diffs).items())
    values = [v for v, _ in groups]
    counts = [m for _, m in groups]
    total = math.fsum(v * m for v, m in groups)
    if math.prod(m + 1 for m in counts) <= EXACT_PATTERNS:
        method = "sign-flip exact"
        sums = _exact_sums(values, counts)
    else:
        method = f"sign-flip {FLIP_ROUNDS:,} random"
        sums = _random_sums(values, counts, seed)
    roots: list[tuple[float, float, float]] = []
    for w, a, b in sums:
        a2 = b * b - tasks * tasks
        if a2 > -_TINY:
            roots.append((w, -math.inf, math.inf))  # every sign the same: always extreme
            continue
        a1 = -2 * (a * b - total * tasks)
        a0 = a * a - total * total
        disc = max(0.0, a1 * a1 - 4 * a2 * a0)
        r1 = (-a1 + math.sqrt(disc)) / (2 * a2)
        r2 = (-a1 - math.sqrt(disc)) / (2 * a2)
        # Widened by a rounding margin, once: the p-value below and the interval read the
        # same roots, so a pattern exactly as extreme as the data counts in both.
        roots.append((w, min(r1, r2) - _ROOT_EPS, max(r1, r2) + _ROOT_EPS))
    p_value = min(1.0, math.fsum(w for w, r1, r2 in roots if r1 <= 0.0 <= r2))
    lows = sorted((r1, w) for w, r1, _ in roots)
    highs = sorted((-r2, w) for w, _, r2 in roots)
    return Paired(
        method=method,
        p_value=p_value,
        decisive=any(d != 0 for d in diffs),
        _lows=tuple(r for r, _ in lows),
        _low_weights=tuple(itertools.accumulate(w for _, w in lows)),
        _highs=tuple(r for r, _ in highs),
        _high_weights=tuple(itertools.accumulate(w for _, w in highs)),
    )


def paired_test(diffs: Sequence[float], *, binary: bool, seed: int = DEFAULT_SEED) -> Paired:
    """The paired test of per-task differences ``d_t = x_right − x_left``.

    ``binary``: both sides ran one attempt per task (every difference is −1, 0 or +1), so
    the test is exact McNemar; otherwise the sign-flip test.
    """
    if binary:
        up = sum(1 for d in diffs if d > 0)
        down = sum(1 for d in diffs if d < 0)
        return Paired(
            method="mcnemar exact",
            p_value=mcnemar_exact(up, down),
            decisive=up + down > 0,
            _mcnemar=(up, down, len(diffs)),
        )
    if not any(diffs):
        # Every task tied: no sign to flip. All the data says is that the share of tasks
        # that change is small, so Δ is bounded as McNemar bounds it with none changed.
        return Paired(
            method="sign-flip exact",
            p_value=1.0,
            decisive=False,
            _mcnemar=(0, 0, len(diffs)),
        )
    return _sign_flip(diffs, seed)
