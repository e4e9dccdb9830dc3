"""Boundaries of a group-sequential decision and what they do at a true difference (pure).

α-spending (Lan & DeMets 1983), the recursive integration of the canonical joint
distribution (Armitage, McPherson & Rowe 1969; J&T ch. 19) and the operating
characteristics (stopping probabilities, expected tasks). The package docstring has the
formulas and their sources.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

SPENDING_FUNCTIONS = ("obrien-fleming", "pocock")
GRID_R = 16
"""J&T's grid parameter ``r`` (ch. 19): ``6r − 1`` grid points per region. At 16 the
boundaries agree to 4 decimals with r = 8 and r = 24 (tests/unit/test_sequential.py)."""
INFINITE = math.inf
TINY = 1e-15
"""Error left to spend below which a look gets no boundary (``inf``)."""
EQUIVALENCE_PER_ALPHA = 1.5
"""γ = 1.5 α: the no-change error per side (docs/deciding.md, "The futility rule")."""
_SEARCH_HIGH = 40.0
_NORMAL = NormalDist()
_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)

Region = tuple[tuple[float, float], ...]
"""Where the statistic continues at a look: disjoint ``(low, high)`` intervals of z."""


# --------------------------------------------------------------------------- spending


def spent(kind: str, fraction: float, level: float) -> float:
    """The error spent by information ``fraction`` (Lan & DeMets 1983; J&T §7.2.1):
    ``obrien-fleming``: ``2 − 2 Φ(z_{1−level/2} / √t)``; ``pocock``:
    ``level · ln(1 + (e − 1) t)``. 0 at ``t ≤ 0``, ``level`` at ``t ≥ 1``."""
    if fraction <= 0:
        return 0.0
    t = min(1.0, fraction)
    if kind == "obrien-fleming":
        return 2.0 * normal_tail(_NORMAL.inv_cdf(1 - level / 2) / math.sqrt(t))
    if kind == "pocock":
        return level * math.log(1 + (math.e - 1) * t)
    raise ValueError(f"unknown spending function {kind!r}: use one of {SPENDING_FUNCTIONS}")


# --------------------------------------------------------------------------- integration


def normal_tail(x: float) -> float:
    """``1 − Φ(x)``, accurate far into the tail."""
    return 0.5 * math.erfc(x / _SQRT2)


@dataclass(frozen=True)
class _State:
    """The sub-density of ``Z_k`` on the continuation region, as Simpson weight × density at
    grid points, after the look at ``fraction``. Before the first look: a point mass at 0."""

    points: tuple[float, ...]
    masses: tuple[float, ...]
    fraction: float


_START = _State((0.0,), (1.0,), 0.0)


def _grid(centre: float, low: float, high: float, r: int) -> tuple[list[float], list[float]]:
    """J&T §19.2.1: grid points on ``(low, high)`` around ``centre`` (the mean of ``Z_k``)
    with Simpson weights; empty when the interval lies beyond the grid (no mass there)."""
    base = []
    for i in range(1, 6 * r):
        if i < r:
            x = -3 - 4 * math.log(r / i)
        elif i <= 5 * r:
            x = -3 + 3 * (i - r) / (2 * r)
        else:
            x = 3 + 4 * math.log(r / (6 * r - i))
        base.append(centre + x)
    if high <= base[0] or low >= base[-1]:
        return [], []
    odd = [max(low, base[0])]
    odd += [x for x in base if low < x < high and x > odd[0]]
    end = min(high, base[-1])
    if end > odd[-1]:
        odd.append(end)
    if len(odd) < 2:
        return [], []
    points = []
    for a, b in zip(odd, odd[1:], strict=False):
        points += [a, (a + b) / 2]
    points.append(odd[-1])
    weights = [0.0] * len(points)
    for i in range(0, len(points) - 1, 2):
        h = (points[i + 2] - points[i]) / 6
        weights[i] += h
        weights[i + 1] += 4 * h
        weights[i + 2] += h
    return points, weights


def _coefficients(state: _State, fraction: float, drift: float) -> tuple[float, float, float]:
    """``(a, b, m)`` with ``Z_k`` given ``Z_{k−1} = u`` standardised as ``a z − b u − m``."""
    step = fraction - state.fraction
    if step <= 0:
        raise ValueError("information fractions must increase from look to look")
    root = math.sqrt(step)
    return (
        math.sqrt(fraction) / root,
        math.sqrt(state.fraction) / root,
        drift * step / root,
    )


def _above(state: _State, fraction: float, drift: float, level: float) -> float:
    """P(no earlier stop, ``Z_k ≥ level``)."""
    if level == INFINITE:
        return 0.0
    if level == -INFINITE:
        return math.fsum(state.masses)
    a, b, m = _coefficients(state, fraction, drift)
    return math.fsum(
        w * normal_tail(a * level - b * u - m)
        for u, w in zip(state.points, state.masses, strict=True)
    )


def _below(state: _State, fraction: float, drift: float, level: float) -> float:
    """P(no earlier stop, ``Z_k ≤ level``)."""
    if level == -INFINITE:
        return 0.0
    if level == INFINITE:
        return math.fsum(state.masses)
    a, b, m = _coefficients(state, fraction, drift)
    return math.fsum(
        w * normal_tail(-(a * level - b * u - m))
        for u, w in zip(state.points, state.masses, strict=True)
    )


def _advance(state: _State, fraction: float, drift: float, region: Region, r: int) -> _State:
    """The sub-density at the look at ``fraction`` on ``region`` (the recursion above)."""
    a, b, m = _coefficients(state, fraction, drift)
    points: list[float] = []
    weights: list[float] = []
    for low, high in region:
        p, w = _grid(drift * math.sqrt(fraction), low, high, r)
        points += p
        weights += w
    shifted = [b * u + m for u in state.points]
    scale = a / _SQRT2PI
    exp = math.exp
    masses = []
    for z, weight in zip(points, weights, strict=True):
        az = a * z
        density = 0.0
        for s, mass in zip(shifted, state.masses, strict=True):
            d = az - s
            density += mass * exp(-0.5 * d * d)
        masses.append(weight * density * scale)
    return _State(tuple(points), tuple(masses), fraction)


def _solve_decreasing(f: Callable[[float], float], target: float, low: float) -> float:
    """The ``x ≥ low`` with ``f(x) = target`` for a decreasing ``f`` (bisection to 1e-10);
    infinite when nothing is left to spend."""
    if target <= TINY:
        return INFINITE
    high = _SEARCH_HIGH
    if f(low) <= target:
        return low
    while high - low > 1e-10:
        mid = (low + high) / 2
        if f(mid) > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _check_fractions(fractions: Sequence[float]) -> None:
    if not fractions:
        raise ValueError("a design needs at least one look")
    previous = 0.0
    for t in fractions:
        if not previous < t <= 1.0 + 1e-12:
            raise ValueError(
                f"information fractions must increase within (0, 1], got {tuple(fractions)}"
            )
        previous = t


# --------------------------------------------------------------------------- boundaries


@dataclass(frozen=True)
class Boundaries:
    """The boundaries of a design at its looks (z scale; ``inf``: no stop at that look)."""

    fractions: tuple[float, ...]
    """Information fractions ``t_k = n_k / N`` of the looks."""
    efficacy: tuple[float, ...]
    """``c_k``: better or worse when ``|Z_k| ≥ c_k``."""
    alpha_spent: tuple[float, ...]
    """α spent by each look (cumulative)."""
    equivalence: tuple[float, ...]
    """``e_k``: no change when ``Δ̂ ± e_k · se`` lies inside ±margin; all ``inf`` without
    the futility rule."""
    equivalence_spent: tuple[float, ...]
    """Equivalence error spent by each look (cumulative; zeros without the futility rule)."""
    alpha: float
    equivalence_level: float | None
    """The equivalence error γ per side, None without the futility rule."""
    spending: str


def boundaries(
    fractions: Sequence[float],
    *,
    alpha: float,
    equivalence: float | None = None,
    spending: str = "obrien-fleming",
    final: bool = False,
    r: int = GRID_R,
) -> Boundaries:
    """Efficacy (and, with ``equivalence`` = γ, no-change) boundaries at ``fractions``.

    ``final``: the last look is the decision's last (tasks or budget exhausted before
    ``t = 1``): it spends all that is left, α and γ (J&T §7.2.2; legitimate because the
    reason to stop there does not depend on the data)."""
    _check_fractions(fractions)
    spend_at = [spent(spending, t, alpha) for t in fractions]
    if final:
        spend_at[-1] = alpha
    efficacy, alpha_spent = _solve(fractions, spend_at, r, two_sided=True)
    if equivalence is None:
        inf = tuple(INFINITE for _ in fractions)
        return Boundaries(
            tuple(fractions),
            efficacy,
            alpha_spent,
            inf,
            tuple(0.0 for _ in fractions),
            alpha,
            None,
            spending,
        )
    gamma_at = [spent(spending, t, equivalence) for t in fractions]
    if final:
        gamma_at[-1] = equivalence
    equivalent, gamma_spent = _solve(fractions, gamma_at, r, two_sided=False)
    return Boundaries(
        tuple(fractions),
        efficacy,
        alpha_spent,
        equivalent,
        gamma_spent,
        alpha,
        equivalence,
        spending,
    )


_Solved = tuple[_State, tuple[float, ...], tuple[float, ...]]
"""The sub-density after some looks, their boundaries and the error spent by each."""


def _crossing(state: _State, fraction: float, level: float, two_sided: bool) -> float:
    """P_0(no earlier stop, crossing ``level`` at this look)."""
    up = _above(state, fraction, 0.0, level)
    return up + _below(state, fraction, 0.0, -level) if two_sided else up


def _solve_look(
    solved: _Solved, fraction: float, cumulative: float, two_sided: bool
) -> tuple[float, float]:
    """The boundary of the next look, spending ``cumulative`` minus what was spent, and
    the error it actually spends."""
    state, _, spent_so_far = solved
    total = spent_so_far[-1] if spent_so_far else 0.0
    low = 0.0 if two_sided else -_SEARCH_HIGH
    level = _solve_decreasing(
        lambda c: _crossing(state, fraction, c, two_sided), cumulative - total, low
    )
    if level == INFINITE:
        return level, total
    return level, total + _crossing(state, fraction, level, two_sided)


@functools.lru_cache(maxsize=512)
def _after(
    fractions: tuple[float, ...], cumulative: tuple[float, ...], r: int, two_sided: bool
) -> _Solved:
    """The looks at ``fractions`` solved and the sub-density past the last of them.

    Cached by prefix: a decision's next look (and a replay) recomputes its boundaries from
    the first look on, and every look but the new one is a prefix already solved, so each
    look costs one integration step instead of all of them again."""
    if not fractions:
        return _START, (), ()
    solved = _after(fractions[:-1], cumulative[:-1], r, two_sided)
    level, total = _solve_look(solved, fractions[-1], cumulative[-1], two_sided)
    region: Region = ((-level, level),) if two_sided else ((-INFINITE, level),)
    state = _advance(solved[0], fractions[-1], 0.0, region, r)
    return state, (*solved[1], level), (*solved[2], total)


def _solve(
    fractions: Sequence[float], cumulative: Sequence[float], r: int, *, two_sided: bool
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Two-sided: ``c_k`` with ``P_0(first |Z_k| ≥ c_k at look k) = α(t_k) − α(t_{k−1})``.
    One-sided: ``e_k`` with ``P_0(first Z_k ≥ e_k at look k) = γ(t_k) − γ(t_{k−1})`` (by
    symmetry the lower boundary of each equivalence side, centred at its margin)."""
    solved = _after(tuple(fractions[:-1]), tuple(cumulative[:-1]), r, two_sided)
    level, total = _solve_look(solved, fractions[-1], cumulative[-1], two_sided)
    return (*solved[1], level), (*solved[2], total)


# --------------------------------------------------------------------------- operating


@dataclass(frozen=True)
class Operating:
    """What a design does at one true drift ``θ`` (probabilities over the whole decision)."""

    drift: float
    better: float
    """P(stop with *better*)."""
    worse: float
    no_change: float
    """P(stop, or end, with *no change of practical size*)."""
    expected_fraction: float
    """E[tasks] / N."""
    stop_at: tuple[float, ...]
    """P(the decision stops at look k), the last look taking what remains."""

    @property
    def reject(self) -> float:
        """P(better or worse): the false-alarm rate at θ = 0, the power elsewhere."""
        return self.better + self.worse


def _wedge(bounds: Boundaries, k: int, margin_drift: float) -> float:
    """The no-change wedge ``θ_m √t_k − e_k`` (0 or less: no such stop at look k)."""
    e = bounds.equivalence[k]
    if e == INFINITE:
        return 0.0
    return max(0.0, margin_drift * math.sqrt(bounds.fractions[k]) - e)


def operating(
    bounds: Boundaries,
    drift: float,
    *,
    margin_drift: float | None = None,
    futility: bool = True,
    r: int = GRID_R,
) -> Operating:
    """The design's stopping probabilities and expected tasks at ``drift`` θ = Δ √I_N.
    ``margin_drift`` (θ at Δ = margin) places the no-change wedge; the futility rule is
    obeyed when ``futility`` (and the design has one)."""
    use_wedge = futility and bounds.equivalence_level is not None and margin_drift is not None
    state = _START
    better = worse = no_change = expected = 0.0
    remaining = 1.0
    stops: list[float] = []
    last = len(bounds.fractions) - 1
    for k, t in enumerate(bounds.fractions):
        c = bounds.efficacy[k]
        up = _above(state, t, drift, c)
        down = _below(state, t, drift, -c)
        wedge = _wedge(bounds, k, margin_drift) if use_wedge and margin_drift is not None else 0.0
        inside = (
            _below(state, t, drift, wedge) - _below(state, t, drift, -wedge) if wedge > 0 else 0.0
        )
        better += up
        worse += down
        no_change += inside
        if k == last:
            stops.append(remaining)
            expected += t * remaining
            break
        stop = up + down + inside
        stops.append(stop)
        expected += t * stop
        remaining -= stop
        region: Region = ((-c, -wedge), (wedge, c)) if wedge > 0 else ((-c, c),)
        state = _advance(state, t, drift, region, r)
    return Operating(drift, better, worse, no_change, expected, tuple(stops))


def equivalence_error(alpha: float) -> float:
    """γ, the error of a *no change* stop per side: ``1.5 α`` (0.075 at α = 0.05, so the
    no-change interval is an 85 % repeated interval). Chosen by measurement, as futility
    boundaries are: γ = α saves too few tasks under no difference (91 % of the fixed
    design), γ = 2α costs 0.005 of power at 89 tasks; docs/deciding.md has the table."""
    return EQUIVALENCE_PER_ALPHA * alpha


def batch_ends(max_tasks: int, looks: int) -> tuple[int, ...]:
    """Tasks completed at each of ``looks`` equally sized batches (the last = ``max_tasks``)."""
    if looks < 1 or max_tasks < looks:
        raise ValueError("need at least one look and one task per look")
    return tuple(-(-k * max_tasks // looks) for k in range(1, looks + 1))
