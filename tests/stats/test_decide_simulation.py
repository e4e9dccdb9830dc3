"""The decision simulation suite (tests/stats/sequential.py, ``make stats-decide``) at a
reduced size: the goals hold, a planted naive boundary is caught, and the vectorised rules
the suite applies are ``judge`` and ``anytime_look`` themselves, replicate by replicate."""

from __future__ import annotations

import numpy as np
import pytest

from reconciler.results import sequential as seq
from tests.stats import sequential as suite

VERDICT_CODES = {
    seq.Verdict.BETTER: suite.BETTER,
    seq.Verdict.WORSE: suite.WORSE,
    seq.Verdict.NO_CHANGE: suite.NO_CHANGE,
    seq.Verdict.INCONCLUSIVE: suite.INCONCLUSIVE,
}


def test_reduced_suite_meets_every_goal() -> None:
    cells = [(89, 1), (200, 3)]
    report = suite.run(cells=cells, replicates=4000, decisions=300, workers=1)
    assert report.failures == [], suite.render(report, cells)
    assert report.budget.decisions == 300 and report.budget.overshoots == 0
    # The probes can fail: peeking inflates, and planning on the expected cost overshoots.
    assert report.tallies[(89, 1, 0.0, "peek-4")].reject > 0.1
    assert report.budget.naive_overshoots > 0


def test_a_naive_boundary_is_caught() -> None:
    cells = [(89, 3)]
    report = suite.run(cells=cells, replicates=4000, decisions=0, workers=1, plant="naive-boundary")
    assert any("obf: false alarms" in failure for failure in report.failures), report.failures


def _differences(tasks: int, attempts: int, multiple: float, rows: int) -> np.ndarray:
    rng = np.random.default_rng(12)
    margin = suite.margin_for(tasks, attempts)
    return suite.draw_differences(rng, rows, tasks, attempts, suite.shift_for(multiple * margin))


@pytest.mark.parametrize("futility", [True, False])
def test_vectorised_rule_is_judge(futility: bool) -> None:
    tasks, attempts = 89, 3
    rules = suite.cell_rules(tasks, attempts)
    d = _differences(tasks, attempts, 0.7, 150)
    equivalence = rules.equivalence if futility else None
    outcome, stop_n, _ = suite.group_sequential_rows(
        suite.Paths.of(d), rules.ends, rules.obf, 0.0, margin=rules.margin, equivalence=equivalence
    )
    bounds = seq.boundaries(
        tuple(n / tasks for n in rules.ends),
        alpha=suite.ALPHA,
        equivalence=seq.equivalence_error(suite.ALPHA) if futility else None,
        final=True,
    )
    seen = set()
    for row in range(d.shape[0]):
        for k, n in enumerate(rules.ends):
            last = k == len(rules.ends) - 1
            look = seq.judge(d[row, :n].tolist(), bounds, k, margin=rules.margin, last=last)
            if look.verdict is not seq.Verdict.CONTINUE:
                break
        assert (VERDICT_CODES[look.verdict], n) == (outcome[row], stop_n[row]), row
        seen.add(look.verdict)
    assert {seq.Verdict.BETTER, seq.Verdict.INCONCLUSIVE} <= seen


def test_vectorised_anytime_is_anytime_look() -> None:
    tasks, attempts = 89, 1
    rules = suite.cell_rules(tasks, attempts)
    d = _differences(tasks, attempts, 1.6, 40)
    outcome, stop_n, _ = suite.anytime_rows(
        suite.Paths.of(d), 0.0, margin=rules.margin, rho=rules.rho
    )
    seen = set()
    for row in range(d.shape[0]):
        for n in range(2, tasks + 1):
            look = seq.anytime_look(
                d[row, :n].tolist(),
                max_tasks=tasks,
                omega2=suite.omega2(attempts),
                margin=rules.margin,
                alpha=suite.ALPHA,
                futility=True,
                last=n == tasks,
            )
            if look.verdict is not seq.Verdict.CONTINUE:
                break
        assert (VERDICT_CODES[look.verdict], n) == (outcome[row], stop_n[row]), row
        seen.add(look.verdict)
    assert seq.Verdict.BETTER in seen
