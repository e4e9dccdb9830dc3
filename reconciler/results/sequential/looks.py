"""One look of a batches decision: the statistic, its intervals and the verdict (pure)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from statistics import NormalDist

from reconciler.results import stats
from reconciler.results.sequential.boundaries import (
    INFINITE,
    TINY,
    Boundaries,
    boundaries,
    equivalence_error,
    normal_tail,
)

_NORMAL = NormalDist()


class Verdict(str, Enum):
    """What a look concludes."""

    CONTINUE = "continue"
    BETTER = "better"
    WORSE = "worse"
    NO_CHANGE = "no change"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Sums:
    """What a look needs of the per-task differences: their count, sum and sum of squares
    (so the lockfile can record a look and a replay can check it without floats drifting
    through a different summation order)."""

    tasks: int
    total: float
    """``S = Σ d_t``."""
    squares: float
    """``Q = Σ d_t²``."""

    @classmethod
    def of(cls, diffs: Sequence[float]) -> Sums:
        return cls(len(diffs), math.fsum(diffs), math.fsum(d * d for d in diffs))

    @property
    def mean(self) -> float:
        return self.total / self.tasks if self.tasks else 0.0

    @property
    def spread(self) -> float:
        """``√(Q/n − mean²)``: the population SD of the differences."""
        if not self.tasks:
            return 0.0
        return math.sqrt(max(0.0, self.squares / self.tasks - self.mean**2))

    @property
    def statistic(self) -> float:
        """The sign-flip score statistic ``S / √Q`` (0 when every difference is 0)."""
        return self.total / math.sqrt(self.squares) if self.squares > 0 else 0.0


def score_interval(sums: Sums, critical: float, method: str) -> stats.Interval:
    """The Δ₀ that the score test ``|S − nΔ₀| / √Σ(d − Δ₀)² < critical`` keeps: solving
    the quadratic, ``mean ± critical · spread / √(n − critical²)`` (everything when
    ``n ≤ critical²``, where no Δ₀ can be rejected), clipped to [−1, 1] where Δ lies."""
    n = sums.tasks
    if critical == INFINITE or n <= critical * critical:
        return stats.Interval(-1.0, 1.0, method)
    half = critical * sums.spread / math.sqrt(n - critical * critical)
    return stats.Interval(max(-1.0, sums.mean - half), min(1.0, sums.mean + half), method)


@dataclass(frozen=True)
class Look:
    """One look of a decision: the statistic, its boundaries and the verdict."""

    index: int
    """1-based (anytime looks: 0)."""
    tasks: int
    fraction: float
    estimate: float
    """Δ̂: the mean paired difference (right − left), a fraction."""
    statistic: float
    """On the z scale: the sign-flip score statistic ``Σd / √Σd²`` at the last look,
    Student's t converted at its level before (anytime: the score statistic)."""
    boundary: float
    """The efficacy boundary ``c_k`` on the same scale (anytime: ``√(B(Q)/Q)``)."""
    alpha_spent: float
    interval: stats.Interval
    """The repeated CI (anytime: the confidence sequence), valid at the stop."""
    equivalence: stats.Interval | None
    """The no-change interval, None without the futility rule."""
    verdict: Verdict


@functools.lru_cache(maxsize=4096)
def t_critical(z: float, df: int) -> float:
    """Student's t on ``df`` degrees of freedom with the nominal level of boundary ``z``
    (J&T §11.3): the ``t`` whose upper tail is ``1 − Φ(z)``; infinite when that tail is
    below 1e-15 (nothing is spent there) or ``z`` is."""
    if z == INFINITE:
        return INFINITE
    if z <= 0:
        raise ValueError("a t boundary needs a positive z")
    target = normal_tail(z)
    if target < TINY:
        return INFINITE
    low, high = 0.0, 1.0
    while stats.student_t_cdf(-high, df) > target:
        low, high = high, high * 2
        if high > 1e12:
            return INFINITE
    for _ in range(200):
        mid = (low + high) / 2
        if stats.student_t_cdf(-mid, df) > target:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * high:
            break
    return high


def _z_of_t(t: float, df: int) -> float:
    """The standard normal value with the same one-sided level as ``t`` on ``df``."""
    tail = stats.student_t_cdf(-abs(t), df)
    z = INFINITE if tail <= 0 else -_NORMAL.inv_cdf(tail) if tail < 0.5 else 0.0
    return z if t >= 0 else -z


def t_interval(sums: Sums, critical_z: float, method: str) -> stats.Interval:
    """``mean ± t_critical(z, n − 1) · s / √n`` (``s`` the sample SD), clipped to [−1, 1]."""
    n = sums.tasks
    q = t_critical(critical_z, n - 1)
    if q == INFINITE:
        return stats.Interval(-1.0, 1.0, method)
    half = q * sums.spread / math.sqrt(n - 1)  # s / √n = spread · √(n/(n−1)) / √n
    return stats.Interval(max(-1.0, sums.mean - half), min(1.0, sums.mean + half), method)


def judge(
    diffs: Sequence[float] | Sums,
    bounds: Boundaries,
    index: int,
    *,
    margin: float,
    last: bool,
) -> Look:
    """The verdict of look ``index`` (0-based into ``bounds``) on the paired differences of
    every completed task: *better*/*worse* past the efficacy boundary, *no change* when
    the equivalence interval lies inside ±margin, else continue (*inconclusive* at the
    ``last`` look). Nothing is decided when the differences do not vary (a zero-width
    interval).

    The statistic (docs/deciding.md, "Which statistic"):

    * at an interim look, Student's ``t = Δ̂ / (s/√n)`` at the boundary's nominal level on
      ``n − 1`` degrees of freedom (J&T §11.3), its intervals ``Δ̂ ± t_{n−1} · s/√n``;
    * at the ``last`` look, the sign-flip score statistic ``Z = Σd / √Σd²``: the normal
      form of the fixed comparison's own test (McNemar's with one attempt per task, the
      sign-flip test with several), whose variance under "no difference" is exactly 1
      given the ``|d_t|``. With one attempt per task the differences take three values
      and the t reference over-spends the last look (0.0279 where 0.0261 is spent, 300,000
      replicates at 89 tasks); the score statistic keeps it. Its intervals invert the
      same test (``score_interval``). At interim looks the score's normal reference is
      the conservative one (0.0043 spent of 0.0057 at the second look), hence t there.

    ``Look.statistic`` is on the z scale at every look (t converted at its own level), so
    statistics and boundaries chart on one axis."""
    sums = diffs if isinstance(diffs, Sums) else Sums.of(diffs)
    n = sums.tasks
    if n < 2:
        raise ValueError("a look needs at least two tasks")
    c = bounds.efficacy[index]
    varies = sums.spread > 0
    if last:
        z = sums.statistic
        crosses = varies and abs(z) >= c
        interval = score_interval(sums, c, "repeated")
    else:
        t = sums.mean / (sums.spread / math.sqrt(n - 1)) if varies else 0.0
        z = _z_of_t(t, n - 1)
        crosses = varies and abs(t) >= t_critical(c, n - 1)
        interval = t_interval(sums, c, "repeated")
    equivalence = None
    no_change = False
    if bounds.equivalence_level is not None:
        e = bounds.equivalence[index]
        if e > 0:
            equivalence = (score_interval if last else t_interval)(sums, e, "equivalence")
            no_change = varies and -margin < equivalence.low and equivalence.high < margin
        else:  # a boundary at or below 0 (nothing spent yet): no equivalence stop here
            equivalence = stats.Interval(-1.0, 1.0, "equivalence")
    if crosses:
        verdict = Verdict.BETTER if z > 0 else Verdict.WORSE
    elif no_change or (
        # Without the futility rule the last look still reports an equivalence the
        # repeated CI shows (it covers Δ with probability ≥ 1 − α at every look).
        last
        and equivalence is None
        and varies
        and -margin < interval.low
        and interval.high < margin
    ):
        verdict = Verdict.NO_CHANGE
    else:
        verdict = Verdict.INCONCLUSIVE if last else Verdict.CONTINUE
    return Look(
        index=index + 1,
        tasks=n,
        fraction=bounds.fractions[index],
        estimate=sums.mean,
        statistic=z,
        boundary=c,
        alpha_spent=bounds.alpha_spent[index],
        interval=interval,
        equivalence=equivalence,
        verdict=verdict,
    )


def look(
    diffs: Sequence[float] | Sums,
    previous_tasks: Sequence[int],
    *,
    max_tasks: int,
    margin: float,
    alpha: float,
    futility: bool,
    last: bool,
    spending: str = "obrien-fleming",
) -> Look:
    """The next look of a batches decision, its boundaries computed at the fractions of
    the looks actually made (``previous_tasks``, then this look's tasks)."""
    sums = diffs if isinstance(diffs, Sums) else Sums.of(diffs)
    ends = [*previous_tasks, sums.tasks]
    fractions = tuple(min(1.0, n / max_tasks) for n in ends)
    bounds = boundaries(
        fractions,
        alpha=alpha,
        equivalence=equivalence_error(alpha) if futility else None,
        spending=spending,
        final=last,
    )
    return judge(sums, bounds, len(ends) - 1, margin=margin, last=last)
