"""Two clones of one git remote apply at once, 20 times (issue 15): the git lock lets
exactly one pay, the other is refused naming the holder; a holder SIGKILLed on another
host is taken over once its lock expires, with no duplicate run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from . import report
from .gitrace import GitTally, killed_holder_elsewhere, race

pytestmark = pytest.mark.reliability

CONFIGS = 10
RACES = 20
KILLS = 2

_tally = GitTally()


def _publish() -> None:
    t, r = _tally, report.record
    r("git lock", "races of 2 clones", t.races)
    r("git lock", "  losers naming the holder", t.losers_naming_holder)
    r("git lock", "  losers refused as behind", t.losers_behind)
    r(
        "git lock",
        "races where != 1 clone submitted",
        t.races_without_single_applier,
        must_be_zero=True,
    )
    r("git lock", "losers without holder details", t.losers_without_holder, must_be_zero=True)
    r("git lock", "holders SIGKILLed on another host", t.holders_killed)
    r("git lock", "  taken over after expiry", t.taken_over)
    r("git lock", "  not taken over", t.not_taken_over, must_be_zero=True)
    r("git lock", "  unknown outcomes (?) settled by hand", t.unknown_outcomes_settled)
    r("git lock", "duplicate submits", t.duplicates, must_be_zero=True)
    r("git lock", "desired runs never submitted", t.never_submitted, must_be_zero=True)


def test_twenty_races_of_two_clones(tmp_path: Path) -> None:
    for index in range(RACES):
        race(tmp_path / f"race-{index:02d}", _tally, configs=CONFIGS)
        shutil.rmtree(tmp_path / f"race-{index:02d}", ignore_errors=True)
    _publish()
    assert _tally.races_without_single_applier == 0, _tally.notes
    assert _tally.losers_without_holder == 0, _tally.notes
    assert _tally.duplicates == 0 and _tally.never_submitted == 0, _tally.notes


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_killed_holder_on_another_host_is_taken_over_after_expiry(tmp_path: Path) -> None:
    for index in range(KILLS):
        killed_holder_elsewhere(tmp_path / f"kill-{index}", _tally, configs=CONFIGS)
    _publish()
    assert _tally.not_taken_over == 0, _tally.notes
    assert _tally.duplicates == 0 and _tally.never_submitted == 0, _tally.notes
