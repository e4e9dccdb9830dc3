"""Anytime-valid monitoring: a confidence sequence read after every task (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from reconciler.results import stats
from reconciler.results.sequential.boundaries import (
    GRID_R,
    INFINITE,
    Boundaries,
    Operating,
    batch_ends,
    operating,
)
from reconciler.results.sequential.looks import Look, Sums, Verdict

ANYTIME_PLANNING_LOOKS = 40
"""Looks used to *plan* an anytime decision (power and expected tasks); monitoring after
every task can only stop sooner, so the plan's power is a lower bound and its expected
tasks an upper bound."""


def anytime_rho(optimal: float, alpha: float) -> float:
    """The mixture parameter ρ that makes the confidence sequence narrowest at intrinsic
    time ``optimal`` (Howard et al. 2021): ``u − log(1 + u) = 2 log(1/α)``, ``ρ = v/u``
    (the derivative of ``(v + ρ) log((v + ρ)/(ρ α²))`` in ρ set to zero)."""
    target = 2 * math.log(1 / alpha)
    low, high = 1e-9, 1e6
    for _ in range(200):
        mid = (low + high) / 2
        if mid - math.log1p(mid) < target:
            low = mid
        else:
            high = mid
    return optimal / ((low + high) / 2)


def mixture_bound(v: float, alpha: float, rho: float) -> float:
    """Robbins' two-sided normal-mixture boundary (Howard et al. 2021, eq. (14)):
    ``|S| < √((v + ρ) log((v + ρ)/(ρ α²)))`` for all times with probability ≥ 1 − α."""
    return math.sqrt((v + rho) * math.log((v + rho) / (rho * alpha * alpha)))


def anytime_half_width(tasks: int, alpha: float, rho: float) -> float:
    """The boundary per task in units of the per-task SD, ``mixture_bound(n) / n`` with
    ``v = n`` and ρ in tasks: the planning form of the confidence sequence."""
    return mixture_bound(float(tasks), alpha, rho) / tasks


def _anytime_excess(sums: Sums, delta: float, alpha: float, rho: float) -> float:
    """``(S − nΔ₀)² − B(V(Δ₀))`` with ``V(Δ₀) = Σ(d − Δ₀)²``: Δ₀ is outside the sequence
    when it is ≥ 0."""
    n = sums.tasks
    v = max(0.0, sums.squares - 2 * delta * sums.total + n * delta * delta)
    gap = sums.total - n * delta
    return gap * gap - mixture_bound(v, alpha, rho) ** 2


def confidence_sequence(sums: Sums, alpha: float, rho: float) -> stats.Interval:
    """The anytime-valid interval for Δ after ``sums.tasks`` tasks: the Δ₀ that the
    self-normalised mixture test keeps. With ``V = Σ(d − Δ₀)²`` as intrinsic time the
    mixture ``√(ρ/(V+ρ)) exp((S − nΔ₀)²/(2(V+ρ)))`` is a supermartingale when the
    differences are symmetric about Δ₀ (de la Peña 1999, the sign-flip null; Howard et
    al. 2021 §3), so Ville's inequality holds at every task and no variance is plugged
    in. The excess ``(S − nΔ₀)² − B(V)`` grows with ``(Δ₀ − mean)²`` once
    ``n > log((V+ρ)/(ρα²)) + 1``, so the set is an interval found by bisection; below that
    (a handful of tasks) the whole [−1, 1] is returned."""
    n = sums.tasks
    edge_v = sums.squares + 2 * abs(sums.total) + n  # V(Δ₀) at |Δ₀| = 1, its largest
    if n <= math.log((edge_v + rho) / (rho * alpha * alpha)) + 1:
        return stats.Interval(-1.0, 1.0, "confidence sequence")
    mean = sums.mean

    def edge(toward: float) -> float:
        if _anytime_excess(sums, toward, alpha, rho) < 0:
            return toward
        inside, outside = mean, toward
        for _ in range(100):
            mid = (inside + outside) / 2
            if _anytime_excess(sums, mid, alpha, rho) < 0:
                inside = mid
            else:
                outside = mid
        return outside

    return stats.Interval(edge(-1.0), edge(1.0), "confidence sequence")


def anytime_look(
    diffs: Sequence[float] | Sums,
    *,
    max_tasks: int,
    omega2: float,
    margin: float,
    alpha: float,
    futility: bool,
    last: bool,
) -> Look:
    """A look of an anytime decision (valid after any task): better/worse when the
    confidence sequence excludes 0, no change when it lies inside ±margin. ρ is fixed by
    the plan: narrowest at ``max_tasks`` tasks of variance ``omega2`` (both recorded when
    the decision starts, never re-estimated from the data)."""
    sums = diffs if isinstance(diffs, Sums) else Sums.of(diffs)
    if sums.tasks < 2:
        raise ValueError("a look needs at least two tasks")
    rho = anytime_rho(max_tasks * omega2, alpha)
    interval = confidence_sequence(sums, alpha, rho)
    bound = mixture_bound(sums.squares, alpha, rho)
    if interval.low > 0 or interval.high < 0:
        verdict = Verdict.BETTER if interval.low > 0 else Verdict.WORSE
    elif futility and -margin < interval.low and interval.high < margin:
        verdict = Verdict.NO_CHANGE
    else:
        verdict = Verdict.INCONCLUSIVE if last else Verdict.CONTINUE
    return Look(
        index=0,
        tasks=sums.tasks,
        fraction=min(1.0, sums.tasks / max_tasks),
        estimate=sums.mean,
        statistic=sums.statistic,
        boundary=bound / math.sqrt(sums.squares) if sums.squares > 0 else INFINITE,
        alpha_spent=alpha,
        interval=interval,
        equivalence=interval if futility else None,
        verdict=verdict,
    )


def anytime_operating(
    max_tasks: int,
    drift: float,
    *,
    alpha: float,
    looks: int = ANYTIME_PLANNING_LOOKS,
    r: int = GRID_R,
) -> Operating:
    """The anytime confidence sequence's chance to exclude 0 and its expected tasks at
    ``drift``, read at ``looks`` equally spaced looks (a lower bound on its power and an
    upper bound on its expected tasks when it is read after every task)."""
    rho = anytime_rho(max_tasks, alpha)
    ends = batch_ends(max_tasks, min(looks, max_tasks))
    fractions = tuple(n / max_tasks for n in ends)
    # The sequence's boundary on the z scale at n tasks: √((n + ρ) log((n + ρ)/(ρ α²))) / √n.
    efficacy = tuple(anytime_half_width(n, alpha, rho) * math.sqrt(n) for n in ends)
    bounds = Boundaries(
        fractions,
        efficacy,
        tuple(0.0 for _ in ends),
        tuple(INFINITE for _ in ends),
        tuple(0.0 for _ in ends),
        alpha,
        None,
        "anytime",
    )
    return operating(bounds, drift, futility=False, r=r)
