"""Two clones on one machine race applies against one loopback Platform, 20 rounds, under
the default (machine-wide) lock and under ``lock = "git"`` (issue 34): no duplicate run, no
desired run left unsubmitted, and both clones converge after a pull and an apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import report
from .clonerace import GIT_LOCK, MACHINE_LOCK, RaceTally, race_rounds, waited_race

pytestmark = pytest.mark.reliability

ROUNDS = 20


def _publish(suite: str, t: RaceTally) -> None:
    r = report.record
    r(suite, "rounds of 2 racing clones", t.rounds)
    r(suite, "  desired runs (configs x rounds)", t.desired)
    r(suite, "  losers blocked by an active twin", t.losers_blocked_by_twins)
    r(suite, "  losers refused as behind", t.losers_refused_behind)
    r(suite, "  losers otherwise", t.losers_other)
    r(suite, "rounds where != 1 clone paid", t.not_one_payer, must_be_zero=True)
    r(suite, "clones not converged after pull+apply", t.not_converged, must_be_zero=True)
    r(suite, "duplicate runs", t.duplicates, must_be_zero=True)
    r(suite, "desired runs never submitted", t.never_submitted, must_be_zero=True)
    r(suite, "superseded runs left active", t.superseded_active, must_be_zero=True)


def _check(t: RaceTally) -> None:
    assert t.duplicates == 0 and t.never_submitted == 0, t.notes
    assert t.not_one_payer == 0 and t.not_converged == 0, t.notes
    assert t.superseded_active == 0, t.notes


@pytest.mark.parametrize(
    ("suite", "pyproject"),
    [("clone race, machine lock", MACHINE_LOCK), ("clone race, git lock", GIT_LOCK)],
    ids=["machine-lock", "git-lock"],
)
def test_twenty_rounds_of_two_clones_on_one_machine(
    tmp_path: Path, suite: str, pyproject: str
) -> None:
    tally = RaceTally()
    race_rounds(tmp_path, tally, rounds=ROUNDS, pyproject=pyproject)
    _publish(suite, tally)
    _check(tally)


WAITED = 5


def test_two_clones_waiting_for_their_runs_pay_once(tmp_path: Path) -> None:
    """With ``--wait`` the first apply holds the machine-wide lock until its runs ended; the
    second finds only ended identical runs, made while it waited for the lock, and pays for
    none of them (``Observation.concurrent_since``: such a run is a twin, ended or not)."""
    tally = RaceTally()
    for index in range(WAITED):
        waited_race(tmp_path / f"waited-{index}", tally)
    suite = "clone race, machine lock, --wait"
    report.record(suite, "rounds of 2 clones applying with --wait", tally.waited_rounds)
    report.record(
        suite,
        "runs paid again for an identical run made meanwhile",
        tally.ended_twins_paid,
        must_be_zero=True,
    )
    report.record(suite, "desired runs never submitted", tally.never_submitted, must_be_zero=True)
    assert tally.never_submitted == 0, tally.notes
    assert tally.ended_twins_paid == 0, tally.notes
