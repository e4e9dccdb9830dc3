"""The results statistics against values computed by hand (closed forms) and against scipy
(an independent implementation, test-only) for the t distribution and the resampling tests."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sp

from reconciler.results import stats
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
    p, method = stats.sign_flip_p(diffs)
    assert method == "sign-flip exact"
    nonzero = [d for d in diffs if d != 0]
    ref = sp.permutation_test(
        (nonzero,),
        lambda x, axis: x.mean(axis=axis),
        permutation_type="samples",
        n_resamples=math.inf,
        alternative="two-sided",
    )
    assert p == pytest.approx(ref.pvalue, abs=1e-9)


def test_random_sign_flip_is_seeded_and_close_to_scipy() -> None:
    rng = random.Random(5)
    diffs = [rng.choice([-1.0, 0.0, 0.4, 1.0]) for _ in range(60)]
    p1, method = stats.sign_flip_p(diffs, seed=1)
    p2, _ = stats.sign_flip_p(diffs, seed=1)
    assert p1 == p2  # same inputs, same seed: same number
    assert method.startswith("sign-flip 10,000 random")
    nonzero = [d for d in diffs if d != 0]
    ref = sp.permutation_test(
        (nonzero,),
        lambda x, axis: x.mean(axis=axis),
        permutation_type="samples",
        n_resamples=20_000,
        alternative="two-sided",
        random_state=7,
    )
    assert p1 == pytest.approx(ref.pvalue, abs=0.02)


def test_bootstrap_interval_is_seeded_and_close_to_scipy() -> None:
    rng = random.Random(11)
    rates = [rng.choice([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]) for _ in range(80)]
    ci = stats.bootstrap_ci(rates, seed=4, rounds=4000)
    assert ci == stats.bootstrap_ci(rates, seed=4, rounds=4000)
    ref = sp.bootstrap(
        (rates,), lambda x, axis: x.mean(axis=axis), method="percentile",
        n_resamples=20_000, random_state=9,
    ).confidence_interval  # fmt: skip
    assert ci.low == pytest.approx(ref.low, abs=0.01)
    assert ci.high == pytest.approx(ref.high, abs=0.01)


def test_rate_interval_chooses_wilson_or_bootstrap() -> None:
    assert stats.rate_interval([1.0, 0.0, 1.0, 1.0], 1).method == "wilson"
    assert stats.rate_interval([1.0, 0.0] * 200, 1).method == "normal"
    assert stats.rate_interval([1.0, 0.5, 0.0, 0.5], 2).method == "bootstrap"


def _outcomes(rates: dict[str, tuple[int, int]]) -> dict[str, TaskOutcome]:
    return {t: TaskOutcome(passes=p, attempts=n) for t, (p, n) in rates.items()}


def test_two_identical_runs_are_no_change() -> None:
    rng = random.Random(2)
    run = _outcomes({f"t{i}": (rng.randint(0, 3), 3) for i in range(40)})
    c = compare_outcomes(run, dict(run))
    assert c.delta == 0.0
    assert c.verdict is Verdict.NO_CHANGE
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
    # Paired CI: t with 47 df on the differences.
    diffs = [1.0] * 15 + [-1.0] * 3 + [0.0] * 30
    sd = math.sqrt(stats.variance(diffs))
    half = sp.t.ppf(0.975, 47) * sd / math.sqrt(48)
    assert (c.ci.low, c.ci.high) == pytest.approx((12 / 48 - half, 12 / 48 + half))


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
