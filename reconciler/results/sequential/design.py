"""Planning a decision before paying: the fixed design's tasks, the sequential maximum,
the boundaries and what to expect at no difference, the margin and 1.6 × it (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from reconciler.results.sequential.anytime import (
    ANYTIME_PLANNING_LOOKS,
    anytime_half_width,
    anytime_rho,
)
from reconciler.results.sequential.boundaries import (
    GRID_R,
    INFINITE,
    Boundaries,
    Operating,
    batch_ends,
    boundaries,
    equivalence_error,
    operating,
)
from reconciler.results.sequential.looks import t_critical

_NORMAL = NormalDist()


def fixed_design_tasks(*, omega2: float, margin: float, alpha: float, power: float) -> float:
    """Tasks a one-look paired comparison needs to detect ``margin`` with ``power``:
    Miller (2024), recommendation 5, solved for n, ``(q_{1−α/2} + q_power)² ω² / margin²``,
    with Student's quantiles on ``n − 1`` degrees of freedom (the fixed comparison is a
    t-test; z quantiles undersize it by about 2 % at 89 tasks), found by iterating from
    the z form."""
    if margin <= 0:
        raise ValueError("the margin must be positive")
    if not 0 < alpha < 1 or not 0.5 < power < 1:
        raise ValueError("alpha must be in (0, 1) and power in (0.5, 1)")
    z_alpha = _NORMAL.inv_cdf(1 - alpha / 2)
    z_power = _NORMAL.inv_cdf(power)
    scale = omega2 / (margin * margin)
    n = (z_alpha + z_power) ** 2 * scale
    for _ in range(50):
        df = max(1, math.ceil(n) - 1)
        q = t_critical(z_alpha, df) + t_critical(z_power, df)
        updated = q * q * scale
        if abs(updated - n) < 1e-9:
            break
        n = updated
    return n


def _margin_drift(ratio: float, alpha: float, power: float) -> float:
    """θ at Δ = margin when the maximum is ``ratio`` times the fixed design."""
    return (_NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)) * math.sqrt(ratio)


def inflation(
    looks: int,
    *,
    alpha: float,
    power: float,
    futility: bool,
    spending: str = "obrien-fleming",
    r: int = GRID_R,
) -> float:
    """``R``: the sequential maximum over the fixed design's tasks that keeps ``power`` at
    the margin (J&T §7.2.2; futility obeyed), by the secant method on ``R``."""
    fractions = tuple((k + 1) / looks for k in range(looks))
    gamma = equivalence_error(alpha) if futility else None
    bounds = boundaries(fractions, alpha=alpha, equivalence=gamma, spending=spending, r=r)

    def shortfall(ratio: float) -> float:
        theta = _margin_drift(ratio, alpha, power)
        return operating(bounds, theta, margin_drift=theta, r=r).reject - power

    low, high = 1.0, 1.5
    f_low, f_high = shortfall(low), shortfall(high)
    if f_low >= 0:
        return 1.0
    for _ in range(30):
        ratio = high - f_high * (high - low) / (f_high - f_low)
        f = shortfall(ratio)
        if abs(f) < 1e-7:
            return ratio
        low, f_low, high, f_high = high, f_high, ratio, f
    return high


@dataclass(frozen=True)
class Design:
    """A decision's plan before paying: sizes, boundaries and what to expect."""

    margin: float
    omega2: float
    """The per-task variance of the paired difference the sizes assume."""
    alpha: float
    power: float
    looks: int
    futility: bool
    monitor: str
    """``batches`` or ``anytime``."""
    spending: str
    fixed_tasks: int
    """What a one-look comparison needs for ``power`` at ``margin`` (Miller's formula)."""
    inflation: float
    """The sequential maximum that keeps ``power``, over ``fixed_tasks``."""
    max_tasks: int
    batch_ends: tuple[int, ...]
    """Tasks completed at each planned look (anytime: the planning looks)."""
    boundaries: Boundaries
    attained_power: float
    """The power at ``margin`` with ``max_tasks`` (below ``power`` when the maximum is
    capped: the decision is inconclusive by design that often)."""
    under_zero: Operating
    at_margin: Operating
    at_1_6_margin: Operating

    @property
    def reaches_power(self) -> bool:
        return self.attained_power >= self.power - 5e-4

    def expected_tasks(self, at: Operating) -> float:
        return at.expected_fraction * self.max_tasks


def design(
    *,
    margin: float,
    omega2: float,
    alpha: float = 0.05,
    power: float = 0.8,
    looks: int = 4,
    futility: bool = True,
    max_tasks: int | None = None,
    monitor: str = "batches",
    spending: str = "obrien-fleming",
    r: int = GRID_R,
) -> Design:
    """Plan a decision: the fixed design's tasks, the sequential maximum (``max_tasks``,
    or ``None`` for the inflated fixed size), the boundaries at equally sized batches and
    the operating characteristics at Δ = 0, margin and 1.6 × margin."""
    fixed = max(
        1,
        math.ceil(
            fixed_design_tasks(omega2=omega2, margin=margin, alpha=alpha, power=power) - 1e-9
        ),
    )
    if monitor == "anytime":
        ratio = 1.0
        maximum = max_tasks if max_tasks is not None else fixed
        plan_looks = min(ANYTIME_PLANNING_LOOKS, maximum)
        ends = batch_ends(maximum, plan_looks)
        rho = anytime_rho(maximum, alpha)
        fractions = tuple(n / maximum for n in ends)
        bounds = Boundaries(
            fractions,
            tuple(anytime_half_width(n, alpha, rho) * math.sqrt(n) for n in ends),
            tuple(0.0 for _ in ends),
            tuple(INFINITE for _ in ends),
            tuple(0.0 for _ in ends),
            alpha,
            None,
            "anytime",
        )
    else:
        ratio = inflation(
            looks, alpha=alpha, power=power, futility=futility, spending=spending, r=r
        )
        maximum = max_tasks if max_tasks is not None else math.ceil(ratio * fixed - 1e-9)
        ends = batch_ends(maximum, looks)
        fractions = tuple(n / maximum for n in ends)
        gamma = equivalence_error(alpha) if futility else None
        bounds = boundaries(fractions, alpha=alpha, equivalence=gamma, spending=spending, r=r)
    # θ at Δ = margin with ``maximum`` tasks: margin √(N / ω²).
    theta = margin * math.sqrt(maximum / omega2)

    def at(multiple: float) -> Operating:
        return operating(bounds, multiple * theta, margin_drift=theta, futility=futility, r=r)

    margin_point = at(1.0)
    return Design(
        margin=margin,
        omega2=omega2,
        alpha=alpha,
        power=power,
        looks=looks,
        futility=futility,
        monitor=monitor,
        spending=spending,
        fixed_tasks=fixed,
        inflation=ratio,
        max_tasks=maximum,
        batch_ends=ends,
        boundaries=bounds,
        attained_power=margin_point.reject,
        under_zero=at(0.0),
        at_margin=margin_point,
        at_1_6_margin=at(1.6),
    )
