"""Comparing two runs (or two agents) on the tasks both ran, with a four-way verdict (pure).

``Δ = RIGHT − LEFT`` in pass@1, the headline definition (an errored attempt counts as not
passed), so ``compare BASELINE NEW`` is negative when NEW is worse. The interval, the
p-value and the verdict come from one test (``results.paired``: exact McNemar with one
attempt per task, the sign-flip test with several), so they never disagree:

* **better** / **worse**: the interval of Δ excludes 0 (the p-value is below α); a decline
  is **beyond the margin** when the whole interval lies below −margin;
* **no change**: the interval lies inside ±margin (an equivalence result: "no evidence of
  a change of ``margin`` or more"), the margin stated;
* **inconclusive**: anything else, and always when every task tied (a zero-width interval
  decides nothing); the minimum detectable effect of this comparison is printed with it.

A family of comparisons (a regression gate) is adjusted with Holm (``holm``): each
comparison's interval is taken at the level Holm's step-down gives its test, so the
adjusted interval and the adjusted p-value agree as the unadjusted ones do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from statistics import NormalDist
from typing import Protocol

from reconciler.results import paired, power, stats
from reconciler.results.data import TaskOutcome

__all__ = [
    "ALPHA",
    "DEFAULT_MARGIN",
    "Comparison",
    "Procedure",
    "Verdict",
    "compare_outcomes",
    "compare_summaries",
    "decide",
    "holm",
]

DEFAULT_MARGIN = 0.03
"""±3 points: the default ``regression_margin_pp`` setting, as a fraction."""
ALPHA = 0.05
"""The family-wise error rate of one comparison, or of a gate's family after Holm."""


class Verdict(str, Enum):
    BETTER = "better"
    WORSE = "worse"
    NO_CHANGE = "no change"
    INCONCLUSIVE = "inconclusive"


class Procedure(Protocol):
    """A test of Δ = 0 whose inversion gives the interval at any level."""

    @property
    def method(self) -> str: ...

    @property
    def p_value(self) -> float: ...

    @property
    def decisive(self) -> bool: ...

    def interval(self, alpha: float = ALPHA) -> stats.Interval: ...


class _NormalTest:
    """The unpaired fallback's test: two binomial proportions, a normal interval."""

    def __init__(self, delta: float, se: float) -> None:
        self.delta, self.se = delta, se
        self.method = "normal (unpaired)"
        self.decisive = 0.0 < se < math.inf
        p = 1.0
        if self.decisive:
            p = 2 * (1 - NormalDist().cdf(abs(delta) / se))
        self.p_value = max(0.0, min(1.0, p))

    def interval(self, alpha: float = ALPHA) -> stats.Interval:
        if not self.decisive:
            return stats.Interval(-1.0, 1.0, "none")
        half = stats.z_quantile(1 - alpha / 2) * self.se
        return stats.Interval(self.delta - half, self.delta + half, "normal")


@dataclass(frozen=True)
class Comparison:
    """One comparison's numbers; fractions in [0, 1] (Δ in [-1, 1])."""

    paired: bool
    """False: the per-task data was missing and the summaries were compared instead."""
    tasks: int
    """Tasks both sides attempted (paired), or the smaller side's task count (unpaired)."""
    left: float
    """LEFT's pass@1 over these tasks."""
    right: float
    delta: float
    ci: stats.Interval
    """The interval of Δ at level ``1 − alpha`` (inverting ``test``)."""
    test: str
    """``mcnemar exact``, ``sign-flip exact``, ``sign-flip 10,000 random`` or
    ``normal (unpaired)``."""
    p_value: float
    """Two-sided p-value of Δ = 0 (unadjusted)."""
    verdict: Verdict
    margin: float
    mde: float
    """Minimum detectable |Δ| at 80% power for this comparison's test, at its α."""
    decisive: bool = True
    """False when every task tied: the interval has no width to decide from."""
    alpha: float = ALPHA
    """The level the interval and verdict use: α, or Holm's level for this comparison."""
    adjusted_p: float | None = None
    """Holm-adjusted p-value when the comparison is one of a family."""
    family: str | None = None
    """``Holm over 10 comparisons`` when adjusted."""
    correlation: float | None = None
    unpaired_ci: stats.Interval | None = None
    up: tuple[str, ...] = ()
    """Tasks whose rate rose (RIGHT above LEFT)."""
    down: tuple[str, ...] = ()
    tied: int = 0
    only_left: tuple[str, ...] = ()
    """Tasks only LEFT attempted (missing on the right)."""
    only_right: tuple[str, ...] = ()
    """Tasks only RIGHT attempted (new)."""
    changed: tuple[str, ...] = ()
    """Tasks both ran whose checksum differs: left out of the comparison."""
    attempts_left: int = 1
    """Attempts per task LEFT's config asked for."""
    attempts_right: int = 1
    errored_left: int = 0
    """LEFT's errored attempts on the compared tasks (counted as not passed)."""
    total_left: int = 0
    """LEFT's attempts on the compared tasks."""
    errored_right: int = 0
    total_right: int = 0
    errored_differ: bool = False
    """The two sides' error rates differ (by 2 points, or beyond chance): Δ includes it."""
    same_config: bool = False
    """Both runs were submitted with identical bodies: any Δ is run-to-run noise or drift."""
    note: str | None = None
    """Why the comparison is unpaired, or anything else a reader must know."""
    procedure: Procedure | None = field(default=None, repr=False, compare=False)
    """The test (``paired.Paired`` or the unpaired one): intervals at other levels."""

    @property
    def beyond_margin(self) -> bool:
        """Worse, with the whole interval below −margin: what fails a gate."""
        return self.verdict is Verdict.WORSE and self.ci.high < -self.margin

    @property
    def non_inferior(self) -> bool:
        """The interval's lower end lies above −margin (non-inferiority shown)."""
        return self.decisive and self.ci.low > -self.margin


def decide(ci: stats.Interval, margin: float, *, decisive: bool = True) -> Verdict:
    """The four-way verdict of an interval of Δ against ±``margin``."""
    if not decisive or ci.method == "none":
        return Verdict.INCONCLUSIVE
    if ci.low > 0:
        return Verdict.BETTER
    if ci.high < 0:
        return Verdict.WORSE
    if -margin < ci.low and ci.high < margin:
        return Verdict.NO_CHANGE
    return Verdict.INCONCLUSIVE


ERRORED_GAP = 0.02
"""Error rates this far apart (2 points) are worth a warning even when few attempts erred."""


def _errored_differ(e_left: int, n_left: int, e_right: int, n_right: int) -> bool:
    """Whether the two sides' error rates differ: by ``ERRORED_GAP`` or more, or beyond
    chance (conditional on the errored attempts, how many fell on the left is Binomial(e,
    n_left / (n_left + n_right)); exact, p < 0.05)."""
    errors = e_left + e_right
    if not errors or not n_left or not n_right:
        return False
    if abs(e_left / n_left - e_right / n_right) >= ERRORED_GAP:
        return True
    share = n_left / (n_left + n_right)

    def tail(upto: int, p: float) -> float:
        return math.fsum(
            math.comb(errors, i) * p**i * (1 - p) ** (errors - i) for i in range(upto + 1)
        )

    return min(1.0, 2 * min(tail(e_left, share), tail(e_right, 1 - share))) < 0.05


def _comparison_mde(
    diffs: Sequence[float], binary: bool, k_left: int, k_right: int, alpha: float
) -> float:
    """This comparison's MDE: its own spread (the observed ``Var(d)``), its tasks and
    attempts, its test."""
    tasks = len(diffs)
    spread = power.Spread(stats.variance(diffs), 0.0, 0.0, "this comparison")
    if binary:
        k_left = k_right = 1
    return power.mde(tasks=tasks, k_left=k_left, k_right=k_right, spread=spread, alpha=alpha)


def compare_outcomes(
    left: Mapping[str, TaskOutcome],
    right: Mapping[str, TaskOutcome],
    *,
    margin: float = DEFAULT_MARGIN,
    seed: int = stats.DEFAULT_SEED,
    asked: tuple[int, int] | None = None,
    same_config: bool = False,
    alpha: float = ALPHA,
) -> Comparison:
    """A paired comparison of two agents' per-task outcomes (tasks with an attempt count;
    ``asked``: the attempts per task each config asked for)."""
    left = {t: o for t, o in left.items() if o.attempts}
    right = {t: o for t, o in right.items() if o.attempts}
    changed = sorted(
        t
        for t in left.keys() & right.keys()
        if left[t].checksum and right[t].checksum and left[t].checksum != right[t].checksum
    )
    common = sorted((left.keys() & right.keys()) - set(changed))
    xl = [left[t].rate for t in common]
    xr = [right[t].rate for t in common]
    diffs = [r - lo for lo, r in zip(xl, xr, strict=True)]
    k_left, k_right = asked or (
        max((left[t].attempts for t in common), default=1),
        max((right[t].attempts for t in common), default=1),
    )
    binary = all(left[t].attempts == 1 and right[t].attempts == 1 for t in common)
    up = tuple(t for t, d in zip(common, diffs, strict=True) if d > 0)
    down = tuple(t for t, d in zip(common, diffs, strict=True) if d < 0)
    e_left = sum(left[t].errored for t in common)
    n_left = sum(left[t].attempts for t in common)
    e_right = sum(right[t].errored for t in common)
    n_right = sum(right[t].attempts for t in common)
    base = {
        "paired": True,
        "tasks": len(common),
        "margin": margin,
        "alpha": alpha,
        "up": up,
        "down": down,
        "tied": len(common) - len(up) - len(down),
        "only_left": tuple(sorted(left.keys() - right.keys())),
        "only_right": tuple(sorted(right.keys() - left.keys())),
        "changed": tuple(changed),
        "attempts_left": k_left,
        "attempts_right": k_right,
        "errored_left": e_left,
        "total_left": n_left,
        "errored_right": e_right,
        "total_right": n_right,
        "errored_differ": _errored_differ(e_left, n_left, e_right, n_right),
        "same_config": same_config,
    }
    if len(common) < 2:
        return Comparison(
            left=stats.mean(xl) if xl else 0.0,
            right=stats.mean(xr) if xr else 0.0,
            delta=stats.mean(diffs) if diffs else 0.0,
            ci=stats.Interval(-1.0, 1.0, "none"),
            test="none (fewer than 2 common tasks)",
            p_value=1.0,
            verdict=Verdict.INCONCLUSIVE,
            mde=math.inf,
            decisive=False,
            **base,  # type: ignore[arg-type]
        )
    test = paired.paired_test(diffs, binary=binary, seed=seed)
    ci = test.interval(alpha)
    n = len(common)
    delta = stats.mean(diffs)
    unpaired_se = math.sqrt(stats.variance(xl) / n + stats.variance(xr) / n)
    z = stats.z_quantile(1 - alpha / 2)
    return Comparison(
        left=stats.mean(xl),
        right=stats.mean(xr),
        delta=delta,
        ci=ci,
        test=test.method,
        p_value=test.p_value,
        verdict=decide(ci, margin, decisive=test.decisive),
        mde=_comparison_mde(diffs, binary, k_left, k_right, alpha),
        decisive=test.decisive,
        correlation=stats.correlation(xl, xr),
        unpaired_ci=stats.Interval(delta - z * unpaired_se, delta + z * unpaired_se, "normal"),
        procedure=test,
        **base,  # type: ignore[arg-type]
    )


def compare_summaries(
    left: float,
    left_n: int,
    right: float,
    right_n: int,
    *,
    margin: float = DEFAULT_MARGIN,
    note: str,
    same_config: bool = False,
    alpha: float = ALPHA,
) -> Comparison:
    """The unpaired fallback: two pass@1 values and their task counts, as independent
    binomial proportions (wider than a paired CI would be; ``note`` says why it is used)."""
    se = math.inf
    if left_n > 0 and right_n > 0:
        se = math.sqrt(left * (1 - left) / left_n + right * (1 - right) / right_n)
    test = _NormalTest(right - left, se)
    ci = test.interval(alpha)
    mde = math.inf
    if test.decisive:
        mde = (stats.z_quantile(1 - alpha / 2) + stats.z_quantile(power.TARGET_POWER)) * se
    return Comparison(
        paired=False,
        tasks=min(left_n, right_n),
        left=left,
        right=right,
        delta=right - left,
        ci=ci,
        test=test.method,
        p_value=test.p_value,
        verdict=decide(ci, margin, decisive=test.decisive),
        margin=margin,
        mde=mde,
        decisive=test.decisive,
        alpha=alpha,
        unpaired_ci=ci,
        same_config=same_config,
        note=note,
        procedure=test,
    )


def holm(comparisons: Sequence[Comparison], alpha: float = ALPHA) -> list[Comparison]:
    """The comparisons of one family adjusted with Holm's step-down: each one's adjusted
    p-value, and its interval and verdict at the level Holm gives it
    (``alpha · p / p_adjusted``), so the adjusted interval excludes 0 exactly when the
    adjusted p-value is below ``alpha``. A family of one is left as it is."""
    m = len(comparisons)
    if m < 2:
        return list(comparisons)
    order = sorted(range(m), key=lambda i: comparisons[i].p_value)
    adjusted = [1.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * comparisons[index].p_value))
        adjusted[index] = running
    out = []
    for c, p_adj in zip(comparisons, adjusted, strict=True):
        level = alpha * c.p_value / p_adj if p_adj > 0 else alpha / m
        procedure = c.procedure
        ci = procedure.interval(level) if procedure is not None else c.ci
        out.append(
            replace(
                c,
                ci=ci,
                alpha=level,
                adjusted_p=p_adj,
                family=f"Holm over {m} comparisons",
                verdict=decide(ci, c.margin, decisive=c.decisive),
            )
        )
    return out
