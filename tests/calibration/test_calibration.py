"""The calibration suite, reduced to run in ``make test`` (``make stats`` runs it in full):
the same simulations and goals on the cells that are cheap to run, enough runs for a broken
verdict rule to show (a "no change" claimed from an interval that does not exclude the
margin, a zero-width interval, an unadjusted gate, a verdict read from another test than
the p-value's)."""

from __future__ import annotations

import pytest

from tests.calibration import simulate
from tests.calibration.run import misses


@pytest.mark.parametrize(("tasks", "k"), [(5, 1), (10, 1), (30, 1), (5, 3), (10, 3)])
def test_verdicts_hold_their_goals(tasks: int, k: int) -> None:
    cell = simulate.cell(tasks, k, reps=250, power_reps=200 if (tasks, k) == (30, 1) else 0)
    assert not misses(cell), cell


def test_a_ten_config_gate_where_nothing_changed_fails_at_most_five_percent() -> None:
    gate = simulate.gate(10, 30, 1, reps=100)
    assert gate.family_false_alarm <= 0.05, gate
