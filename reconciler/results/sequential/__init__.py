"""Decisions at minimum cost: group-sequential and anytime-valid paired comparisons (pure).

A decision buys tasks in batches and looks at the paired statistic after each batch; it
stops as soon as the answer is clear. Looking repeatedly at a fixed-sample test inflates
false alarms (four looks at ``p < 0.05``: 13 %), so each look is compared with a boundary
that spends the false-alarm rate α over the looks instead.

Notation (J&T = Jennison & Turnbull, *Group Sequential Methods with Applications to
Clinical Trials*, Chapman & Hall/CRC, 2000):

* ``d_t`` the paired difference of task ``t`` (the task is the cluster: ``d_t`` is the
  difference of the two sides' per-task pass rates, each the mean of its attempts), ``Δ``
  its mean, ``ω²`` its variance per task (Miller 2024, recommendation 5);
* ``N`` the maximum number of tasks, ``n_k`` the tasks at look ``k``, ``t_k = n_k / N`` the
  information fraction (information ``I_k = n_k / ω²`` is proportional to tasks);
* ``Z_k = Δ̂_k √I_k`` the standardised statistic at look ``k``; ``θ = Δ √I_N`` the drift.

**The canonical joint distribution** (J&T ch. 3): ``Z_k ~ N(θ √t_k, 1)`` with
``Cov(Z_j, Z_k) = √(t_j / t_k)`` for ``j ≤ k``; equivalently the score ``S_k = Z_k √t_k``
has independent increments ``S_k − S_{k−1} ~ N(θ Δt_k, Δt_k)``. Every probability here is
an integral over that distribution, computed by the recursion of Armitage, McPherson & Rowe
(1969, *J. R. Statist. Soc. A* 132:235–244) as laid out in J&T ch. 19: the sub-density of
``Z_k`` on the region where no earlier look stopped,

    h_k(z) = ∫ h_{k−1}(u) · √t_k/√Δt_k · φ((z √t_k − u √t_{k−1} − θ Δt_k) / √Δt_k) du,

integrated by Simpson's rule on J&T's grid (``6r − 1`` points per region, dense within
three standard deviations of the mean, log-spaced out to about ±14, every region's ends
included, plus the midpoints).

**Efficacy boundaries** (two-sided, symmetric): Lan & DeMets (1983, *Biometrika*
70:659–663) α-spending; the boundary ``c_k`` solves
``P_0(|Z_j| < c_j, j < k; |Z_k| ≥ c_k) = α(t_k) − α(t_{k−1})`` (J&T ch. 7). Spending
functions (Lan & DeMets 1983):

* O'Brien–Fleming type (the default): ``α(t) = 2 − 2 Φ(z_{1−α/2} / √t)``;
* Pocock type: ``α(t) = α ln(1 + (e − 1) t)``.

The boundaries are computed at the fractions of the looks actually made, so an unplanned
batch size (a budget that buys fewer tasks) keeps α (the point of Lan–DeMets).

**Futility: "no change of practical size"** (non-binding). The efficacy boundaries ignore
it (stopping for futility only lowers the false-alarm rate, so the rule may be overruled).
It is an equivalence test in repeated-CI form (J&T ch. 6 and ch. 9): for each side
``Δ = ±margin`` a one-sided boundary ``e_k`` spends the equivalence error ``γ`` with the
same spending function, ``P_{Δ=margin}(Z_k − θ_m √t_k < −e_k first at k) = γ(t_k) −
γ(t_{k−1})``; the decision stops for *no change* when the equivalence interval
``Δ̂_k ± e_k · se_k`` lies inside ±margin, which on the z scale is the inner wedge
``|Z_k| < θ_m √t_k − e_k`` (early stopping in favour of H₀, J&T ch. 5; the β-spending
form of Pampallona & Tsiatis 1994, *J. Statist. Plann. Inference* 42:19–35). A false
"no change" when ``|Δ| ≥ margin`` has probability at most ``γ`` per side.
``γ = 1.5 α`` (``equivalence_error``; an 85 % no-change interval at α = 0.05), chosen by
measurement as futility boundaries are: docs/deciding.md has the trade-off.

**Repeated confidence intervals** (Jennison & Turnbull 1989, *J. R. Statist. Soc. B*
51:305–361; J&T ch. 9): ``Δ̂_k ± c_k · se_k`` cover Δ at every look simultaneously with
probability ``≥ 1 − α``, so the interval reported at the stop is valid whatever the
stopping rule was.

**The statistic with an unknown variance** (``judge``): at interim looks Student's
``t = Δ̂ / (s/√n)`` at the boundary's nominal significance level on ``n − 1`` degrees of
freedom (J&T's "significance level approach" for group sequential t-tests), at the last
look the sign-flip score statistic ``Σd / √Σd²`` (McNemar's with one attempt per task),
whose variance under "no difference" is exact; ``judge`` says why.

**Anytime-valid monitoring** (``monitor = "anytime"``): a confidence sequence that may be
read after every task. Robbins' two-sided normal mixture (Howard, Ramdas, McAuliffe &
Sekhon 2021, *Ann. Statist.* 49(2):1055–1080, §3): with intrinsic time ``v``,
``|S| < √((v + ρ) log((v + ρ)/(ρ α²)))`` at every time with probability ``≥ 1 − α``
(Ville's inequality on the mixture ``√(ρ/(v+ρ)) exp(S²/(2(v+ρ)))``). Here ``S`` is the sum
of the differences and ``v = Σd²`` their self-normalising variance, which makes the
mixture a supermartingale under the sign-flip null without plugging in an estimate
(de la Peña 1999, *Ann. Probab.* 27:537–564). ``ρ`` minimises the boundary at the
maximum tasks: the derivative set to zero gives ``u − log(1 + u) = 2 log(1/α)`` with
``u = v_opt / ρ``.

**Fixed-design size**: ``n = (q_{1−α/2} + q_{power})² ω² / margin²`` (Miller 2024,
recommendation 5, solved for n, with Student's quantiles); the sequential maximum is ``R``
times it, ``R`` (the inflation factor, J&T ch. 2 and 7) chosen so the sequential design
has the stated power.

Modules: ``boundaries`` (spending, the integration, operating characteristics),
``looks`` (the statistic and verdict of a batch), ``anytime`` (the confidence sequence),
``design`` (sizes and expectations before paying), ``schedule`` (the task order and the
dollar budget). Nothing here reads a clock, logs or uses global randomness; the task order
takes a seed.
"""

from __future__ import annotations

from reconciler.results.sequential.anytime import (
    ANYTIME_PLANNING_LOOKS,
    anytime_half_width,
    anytime_look,
    anytime_operating,
    anytime_rho,
    confidence_sequence,
    mixture_bound,
)
from reconciler.results.sequential.boundaries import (
    GRID_R,
    SPENDING_FUNCTIONS,
    Boundaries,
    Operating,
    batch_ends,
    boundaries,
    equivalence_error,
    operating,
    spent,
)
from reconciler.results.sequential.design import (
    Design,
    design,
    fixed_design_tasks,
    inflation,
)
from reconciler.results.sequential.looks import (
    Look,
    Sums,
    Verdict,
    judge,
    look,
    score_interval,
    t_critical,
    t_interval,
)
from reconciler.results.sequential.schedule import affordable_tasks, task_order

__all__ = [
    "ANYTIME_PLANNING_LOOKS",
    "GRID_R",
    "SPENDING_FUNCTIONS",
    "Boundaries",
    "Design",
    "Look",
    "Operating",
    "Sums",
    "Verdict",
    "affordable_tasks",
    "anytime_half_width",
    "anytime_look",
    "anytime_operating",
    "anytime_rho",
    "batch_ends",
    "boundaries",
    "confidence_sequence",
    "design",
    "equivalence_error",
    "fixed_design_tasks",
    "inflation",
    "judge",
    "look",
    "mixture_bound",
    "operating",
    "score_interval",
    "spent",
    "t_critical",
    "t_interval",
    "task_order",
]
