"""The results statistics against values computed by hand (closed forms) and against scipy
(an independent implementation, test-only) for the t distribution and the resampling tests."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sp

from reconciler.results import paired, stats
from reconciler.results.compare import Verdict, compare_outcomes, decide
from reconciler.results.data import TaskOutcome


def test_wilson_interval_by_hand() -> None:
    # 8 of 10, z = 1.959964: centre (0.8 + z²/20) / (1 + z²/10), half-width
    # z·sqrt(0.8·0.2/10 + z²/400) / (1 + z²/10), worked out by hand:
    # z² = 3.841459; denom = 1.3841459; centre = 0.9920729 / 1.3841459 = 0.716744
    # half = 1.959964 · sqrt(0.016 + 0.0096036) / 1.3841459 = 0.226567
    ci = stats.wilson(8, 10)
    assert ci.method == "wilson"
    assert ci.low == pytest.approx(0.490162, abs=1e-5)
    assert ci.high == pytest.approx(0.943318, abs=1e-5)
    # The same as scipy's Wilson interval for a binomial test.
    ref = sp.binomtest(8, 10).proportion_ci(0.95, method="wilson")
    assert (ci.low, ci.high) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_mcnemar_exact_by_hand() -> None:
    # b = 12, c = 3: 2 · P(X ≤ 3), X ~ Bin(15, ½) = 2 · (1 + 15 + 105 + 455) / 32768
    assert stats.mcnemar_exact(12, 3) == pytest.approx(2 * 576 / 32768)
    assert round(stats.mcnemar_exact(12, 3), 3) == 0.035
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(5, 5) == 1.0


def test_clustered_se_with_several_attempts_by_hand() -> None:
    # Three tasks × two attempts: scores (1,1), (1,0), (0,0); mean 0.5, n = 6, C = 3.
    # Cluster sums of deviations: +1, 0, −1 → Σ² = 2; SE = sqrt(3/2 · 2) / 6 = sqrt(3)/6.
    clusters = [[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    assert stats.clustered_se(clusters) == pytest.approx(math.sqrt(3) / 6)
    # With equal cluster sizes it is sd(task rates)/sqrt(T): rates 1, .5, 0 → sd .5, /√3.
    rates = [1.0, 0.5, 0.0]
    assert stats.clustered_se(clusters) == pytest.approx(
        math.sqrt(stats.variance(rates)) / math.sqrt(3)
    )
    # The naive SE (attempts as independent n) is smaller: the reason for clustering.
    flat = [s for c in clusters for s in c]
    naive = math.sqrt(stats.variance(flat, ddof=0) / len(flat))
    assert naive < stats.clustered_se(clusters)


def test_mde_matches_the_worked_table() -> None:
    # results.md's worked example: Var(x)=0.15, rho=0.7, E[sigma²]=0.08, alpha .05, power .8.
    def at(tasks: int, k: int) -> float:
        return stats.mde(
            tasks=tasks,
            var_x_left=0.15,
            var_x_right=0.15,
            covariance=0.7 * 0.15,
            sigma2_left=0.08,
            sigma2_right=0.08,
            attempts_left=k,
            attempts_right=k,
        )

    # By hand for 89 × 1: omega² = 0.3 − 0.21 + 0.16 = 0.25; 2.8016 · 0.5 / sqrt(89) = 0.1485.
    assert at(89, 1) == pytest.approx(0.148486, abs=1e-5)
    table = {(89, 1): 14.8, (89, 3): 11.2, (89, 5): 10.4, (89, 10): 9.7,
             (200, 1): 9.9, (200, 5): 6.9, (500, 1): 6.3, (500, 10): 4.1}  # fmt: skip
    for (tasks, k), points in table.items():
        assert round(at(tasks, k) * 100, 1) == points


def test_pass_at_k_unbiased_estimator_by_hand() -> None:
    # n = 5, c = 2, k = 2: 1 − C(3,2)/C(5,2) = 1 − 3/10; pass^2 = C(2,2)/C(5,2) = 1/10.
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert stats.pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert stats.pass_at_k(5, 0, 3) == 0.0
    assert stats.pass_at_k(5, 4, 2) == 1.0


@pytest.mark.parametrize("df", [1, 2, 5, 10, 30, 88])
def test_t_quantile_and_cdf_match_scipy(df: int) -> None:
    for p in (0.6, 0.9, 0.975, 0.995):
        assert stats.t_quantile(p, df) == pytest.approx(sp.t.ppf(p, df), abs=1e-7)
    for t in (-3.0, -0.5, 0.0, 1.2, 4.0):
        assert stats.student_t_cdf(t, df) == pytest.approx(sp.t.cdf(t, df), abs=1e-9)


def test_exact_sign_flip_matches_scipy_permutation_test() -> None:
    rng = random.Random(3)
    diffs = [rng.choice([-1, -0.5, 0, 0.5, 1, 1]) for _ in range(14)]
    test = paired.paired_test(diffs, binary=False)
    assert test.method == "sign-flip exact"
    ref = sp.permutation_test(
        (diffs,),
        lambda x, axis: x.mean(axis=axis),
        permutation_type="samples",
        n_resamples=math.inf,
        alternative="two-sided",
    )
    assert test.p_value == pytest.approx(ref.pvalue, abs=1e-9)


def _shifted_p(diffs: list[float], delta: float) -> float:
    """scipy's exact sign-flip p-value of "symmetric about delta"."""
    return float(
        sp.permutation_test(
            ([d - delta for d in diffs],),
            lambda x, axis: x.mean(axis=axis),
            permutation_type="samples",
            n_resamples=math.inf,
            alternative="two-sided",
        ).pvalue
    )


def test_the_sign_flip_interval_is_the_set_the_test_accepts() -> None:
    # Inverting the test: just inside each end scipy does not reject at 5%, just outside it
    # does. An independent implementation checks both ends.
    rng = random.Random(8)
    diffs = [rng.choice([-2 / 3, -1 / 3, 0.0, 1 / 3, 2 / 3, 1.0]) for _ in range(12)]
    ci = paired.paired_test(diffs, binary=False).interval(0.05)
    for end, inward in ((ci.low, 1e-6), (ci.high, -1e-6)):
        assert _shifted_p(diffs, end + inward) > 0.05
        assert _shifted_p(diffs, end - inward) <= 0.05


def test_random_sign_flip_is_seeded_and_close_to_scipy() -> None:
    rng = random.Random(5)
    diffs = [rng.choice([-1.0, 0.0, 0.4, 1.0]) for _ in range(60)]
    first = paired.paired_test(diffs, binary=False, seed=1)
    assert first.p_value == paired.paired_test(diffs, binary=False, seed=1).p_value
    assert first.method == "sign-flip 10,000 random"
    ref = sp.permutation_test(
        (diffs,),
        lambda x, axis: x.mean(axis=axis),
        permutation_type="samples",
        n_resamples=20_000,
        alternative="two-sided",
        random_state=7,
    )
    assert first.p_value == pytest.approx(ref.pvalue, abs=0.02)


@pytest.mark.parametrize("seed", range(40))
def test_the_printed_p_value_and_the_interval_never_disagree(seed: int) -> None:
    # Finding 3: a 4-0 split printed "worse" beside p = 0.125. Now the interval excludes 0
    # exactly when p < alpha, for both tests, at any alpha (Holm's levels too).
    rng = random.Random(seed)
    tasks = rng.choice([4, 6, 9, 15, 40])
    binary = seed % 2 == 0
    values = [-1.0, 0.0, 1.0] if binary else [-1.0, -2 / 3, -1 / 3, 0.0, 1 / 3, 2 / 3, 1.0]
    diffs = [rng.choice(values) for _ in range(tasks)]
    test = paired.paired_test(diffs, binary=binary)
    for alpha in (0.05, 0.01, 0.005, 0.1):
        ci = test.interval(alpha)
        assert (ci.low > 0 or ci.high < 0) == (test.p_value < alpha), (diffs, alpha, ci)
    assert test.interval(0.05).high > test.interval(0.05).low  # never zero width


def test_a_four_to_nothing_split_is_not_worse() -> None:
    # 4 tasks went down, none up, 26 tied: exact McNemar p = 2/16 = 0.125, so the interval
    # includes 0 and the verdict is inconclusive (it used to say "worse").
    left = _outcomes({f"t{i}": (1, 1) for i in range(4)} | {f"s{i}": (0, 1) for i in range(26)})
    right = _outcomes({f"t{i}": (0, 1) for i in range(4)} | {f"s{i}": (0, 1) for i in range(26)})
    c = compare_outcomes(left, right)
    assert c.p_value == pytest.approx(0.125)
    assert c.ci.low < 0 < c.ci.high
    assert c.verdict is Verdict.INCONCLUSIVE


def _outcomes(rates: dict[str, tuple[int, int]]) -> dict[str, TaskOutcome]:
    return {t: TaskOutcome(passes=p, attempts=n) for t, (p, n) in rates.items()}


def test_two_identical_runs_decide_nothing_from_a_zero_width_interval() -> None:
    # Finding 2: every task tied used to give the interval [0, 0] and "no change". Tied
    # tasks bound Δ only as far as they bound the share of tasks that change: at 40 tasks
    # |Δ| could still be 8.8 points, so "no change within ±3" is not shown.
    rng = random.Random(2)
    run = _outcomes({f"t{i}": (rng.randint(0, 3), 3) for i in range(40)})
    c = compare_outcomes(run, dict(run))
    assert c.delta == 0.0
    assert c.verdict is Verdict.INCONCLUSIVE
    assert not c.decisive
    assert c.ci.low == pytest.approx(-(1 - 0.025 ** (1 / 40))) and c.ci.high == -c.ci.low
    assert c.ci.high > 0.08
    assert c.up == () and c.down == () and c.tied == 40


def test_paired_comparison_one_attempt_uses_mcnemar() -> None:
    # 15 tasks flip up, 3 down, 30 tied (both pass on 10, fail on 20).
    left = _outcomes(
        {f"u{i}": (0, 1) for i in range(15)}
        | {f"d{i}": (1, 1) for i in range(3)}
        | {f"p{i}": (1, 1) for i in range(10)}
        | {f"f{i}": (0, 1) for i in range(20)}
    )
    right = _outcomes(
        {f"u{i}": (1, 1) for i in range(15)}
        | {f"d{i}": (0, 1) for i in range(3)}
        | {f"p{i}": (1, 1) for i in range(10)}
        | {f"f{i}": (0, 1) for i in range(20)}
    )
    c = compare_outcomes(left, right)
    assert c.test == "mcnemar exact"
    assert c.p_value == pytest.approx(stats.mcnemar_exact(15, 3))
    assert c.delta == pytest.approx(12 / 48)
    assert c.verdict is Verdict.BETTER
    reverse = compare_outcomes(right, left)
    assert reverse.verdict is Verdict.WORSE
    # The interval inverts the same exact test: π (the share of the 18 changed tasks that
    # went up) by Clopper-Pearson, scaled by ψ (the share of tasks that changed, 18 of 48,
    # its exact 95% interval): Δ = ψ(2π − 1), each end at the corner that makes it widest.
    pi = sp.binomtest(15, 18).proportion_ci(0.95, method="exact")
    psi = sp.binomtest(18, 48).proportion_ci(0.95, method="exact")
    assert c.ci.low == pytest.approx(psi.low * (2 * pi.low - 1), abs=1e-9)
    assert c.ci.high == pytest.approx(psi.high * (2 * pi.high - 1), abs=1e-9)
    assert c.ci.low > 0  # p = 0.0075 < 0.05: the interval excludes 0, as the test does


def test_alignment_reports_missing_new_and_changed_tasks() -> None:
    left = _outcomes({"a": (1, 1), "b": (0, 1), "c": (1, 1), "gone": (1, 1)})
    right = _outcomes({"a": (1, 1), "b": (1, 1), "c": (1, 1), "new": (0, 1)})
    left["c"].checksum, right["c"].checksum = "v1", "v2"
    c = compare_outcomes(left, right)
    assert c.only_left == ("gone",) and c.only_right == ("new",) and c.changed == ("c",)
    assert c.tasks == 2


def test_verdicts() -> None:
    i = stats.Interval
    assert decide(i(0.01, 0.05, "t"), 0.03) is Verdict.BETTER
    assert decide(i(-0.05, -0.01, "t"), 0.03) is Verdict.WORSE
    assert decide(i(-0.02, 0.02, "t"), 0.03) is Verdict.NO_CHANGE
    assert decide(i(-0.08, 0.02, "t"), 0.03) is Verdict.INCONCLUSIVE
