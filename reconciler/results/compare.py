"""Comparing two runs (or two agents) on the tasks both ran, with a four-way verdict (pure).

``Δ = RIGHT − LEFT`` in pass@1 (so ``compare BASELINE NEW`` is negative when NEW is worse).
The verdict follows paired-eval's wording, never a bare p-value:

* **better** / **worse**: the 95% CI of Δ excludes 0;
* **no change**: the CI lies inside ±margin (an equivalence result: "no evidence of a
  change of ``margin`` or more"), the margin stated;
* **inconclusive**: the CI includes 0 and values beyond ±margin; the minimum detectable
  effect at this many tasks and attempts is printed with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from reconciler.results import stats
from reconciler.results.data import TaskOutcome

__all__ = [
    "DEFAULT_MARGIN",
    "Comparison",
    "Verdict",
    "compare_outcomes",
    "compare_summaries",
    "decide",
]

DEFAULT_MARGIN = 0.03
"""±3 points: the default ``regression_margin_pp`` setting, as a fraction."""


class Verdict(str, Enum):
    BETTER = "better"
    WORSE = "worse"
    NO_CHANGE = "no change"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Comparison:
    """One comparison's numbers; fractions in [0, 1] (Δ in [-1, 1])."""

    paired: bool
    """False: the per-task data was missing and the summaries were compared instead."""
    tasks: int
    """Tasks both sides scored (paired), or the smaller side's task count (unpaired)."""
    left: float
    right: float
    delta: float
    se: float
    ci: stats.Interval
    test: str
    """``mcnemar exact``, ``sign-flip exact``, ``sign-flip 10,000 random`` or
    ``normal (unpaired)``."""
    p_value: float
    verdict: Verdict
    margin: float
    mde: float
    """Minimum detectable |Δ| at 80% power, alpha 0.05, from this comparison's spread."""
    correlation: float | None = None
    unpaired_ci: stats.Interval | None = None
    up: tuple[str, ...] = ()
    """Tasks whose rate rose (RIGHT above LEFT)."""
    down: tuple[str, ...] = ()
    tied: int = 0
    only_left: tuple[str, ...] = ()
    """Tasks only LEFT scored (missing on the right)."""
    only_right: tuple[str, ...] = ()
    """Tasks only RIGHT scored (new)."""
    changed: tuple[str, ...] = ()
    """Tasks both ran whose checksum differs: left out of the comparison."""
    attempts_left: int = 1
    attempts_right: int = 1
    note: str | None = None
    """Why the comparison is unpaired, or anything else a reader must know."""


def decide(ci: stats.Interval, margin: float) -> Verdict:
    """The four-way verdict of a CI of Δ against ±``margin``."""
    if ci.method == "none":
        return Verdict.INCONCLUSIVE
    if ci.low > 0:
        return Verdict.BETTER
    if ci.high < 0:
        return Verdict.WORSE
    if -margin < ci.low and ci.high < margin:
        return Verdict.NO_CHANGE
    return Verdict.INCONCLUSIVE


def _mde(sd: float, tasks: int) -> float:
    if tasks < 2:
        return math.inf
    z = stats.z_quantile(0.975) + stats.z_quantile(0.8)
    return z * sd / math.sqrt(tasks)


def compare_outcomes(
    left: Mapping[str, TaskOutcome],
    right: Mapping[str, TaskOutcome],
    *,
    margin: float = DEFAULT_MARGIN,
    seed: int = stats.DEFAULT_SEED,
) -> Comparison:
    """A paired comparison of two agents' per-task outcomes (only scored tasks count)."""
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
    k_left = min((left[t].attempts for t in common), default=1)
    k_right = min((right[t].attempts for t in common), default=1)
    n = len(common)
    up = tuple(t for t, d in zip(common, diffs, strict=True) if d > 0)
    down = tuple(t for t, d in zip(common, diffs, strict=True) if d < 0)
    only_left = tuple(sorted(left.keys() - right.keys()))
    only_right = tuple(sorted(right.keys() - left.keys()))
    if n < 2:
        ci = stats.Interval(-1.0, 1.0, "none")
        return Comparison(
            paired=True,
            tasks=n,
            left=stats.mean(xl) if xl else 0.0,
            right=stats.mean(xr) if xr else 0.0,
            delta=stats.mean(diffs) if diffs else 0.0,
            se=math.inf,
            ci=ci,
            test="none (fewer than 2 common tasks)",
            p_value=1.0,
            verdict=Verdict.INCONCLUSIVE,
            margin=margin,
            mde=math.inf,
            up=up,
            down=down,
            tied=n - len(up) - len(down),
            only_left=only_left,
            only_right=only_right,
            changed=tuple(changed),
            attempts_left=k_left,
            attempts_right=k_right,
        )
    delta = stats.mean(diffs)
    sd = math.sqrt(stats.variance(diffs))
    se = sd / math.sqrt(n)
    half = stats.t_quantile(0.975, n - 1) * se
    ci = stats.Interval(delta - half, delta + half, "t")
    if k_left == 1 and k_right == 1:
        p_value, test = stats.mcnemar_exact(len(up), len(down)), "mcnemar exact"
    else:
        p_value, test = stats.sign_flip_p(diffs, seed=seed)
    unpaired_se = math.sqrt(stats.variance(xl) / n + stats.variance(xr) / n)
    z = stats.z_quantile(0.975)
    return Comparison(
        paired=True,
        tasks=n,
        left=stats.mean(xl),
        right=stats.mean(xr),
        delta=delta,
        se=se,
        ci=ci,
        test=test,
        p_value=p_value,
        verdict=decide(ci, margin),
        margin=margin,
        mde=_mde(sd, n),
        correlation=stats.correlation(xl, xr),
        unpaired_ci=stats.Interval(delta - z * unpaired_se, delta + z * unpaired_se, "normal"),
        up=up,
        down=down,
        tied=n - len(up) - len(down),
        only_left=only_left,
        only_right=only_right,
        changed=tuple(changed),
        attempts_left=k_left,
        attempts_right=k_right,
    )


def compare_summaries(
    left: float,
    left_n: int,
    right: float,
    right_n: int,
    *,
    margin: float = DEFAULT_MARGIN,
    note: str,
) -> Comparison:
    """The unpaired fallback: two pass@1 values and their task counts, as independent
    binomial proportions (wider than a paired CI would be; ``note`` says why it is used)."""
    if left_n <= 0 or right_n <= 0:
        ci = stats.Interval(-1.0, 1.0, "none")
        se = math.inf
    else:
        se = math.sqrt(left * (1 - left) / left_n + right * (1 - right) / right_n)
        half = stats.z_quantile(0.975) * se
        ci = stats.Interval(right - left - half, right - left + half, "normal")
    delta = right - left
    p_value = 1.0
    if se not in (0.0, math.inf):
        p_value = 2 * (1 - _phi(abs(delta) / se))
    elif se == 0.0 and delta != 0:
        p_value = 0.0
    tasks = min(left_n, right_n)
    return Comparison(
        paired=False,
        tasks=tasks,
        left=left,
        right=right,
        delta=delta,
        se=se,
        ci=ci,
        test="normal (unpaired)",
        p_value=max(0.0, min(1.0, p_value)),
        verdict=decide(ci, margin),
        margin=margin,
        mde=(stats.z_quantile(0.975) + stats.z_quantile(0.8)) * se if se != math.inf else math.inf,
        unpaired_ci=ci,
        note=note,
    )


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))
