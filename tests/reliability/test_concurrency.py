"""Concurrency suite (issue 7, suite 3): eight ``osmosis-apply`` processes on one repository.

Exactly one applies; the others exit 1 naming the holder (pid, host, ``--force-unlock``)
or, when told to wait, wait and then find nothing left to pay for. A lock whose holder was
SIGKILLed never blocks the next apply. Every scenario ends with one run per config.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.local_platform import Faults

from . import report
from .concurrency import Tally, eight_applies, killed_holder_then_apply, killed_holder_with_waiters

pytestmark = pytest.mark.reliability

CONFIGS = 30
PROCESSES = 8
ROUNDS = 2

_tally = Tally()


def _publish() -> None:
    t, r = _tally, report.record
    r("concurrency", "osmosis-apply processes started", t.processes)
    r("concurrency", "races of 8 processes", t.races)
    r("concurrency", "  exited 1 naming the holder", t.refused_with_holder)
    r("concurrency", "  waited for the lock", t.waited)
    r("concurrency", "lock holders SIGKILLed", t.holders_killed)
    r(
        "concurrency",
        "races where != 1 process submitted",
        t.races_without_single_applier,
        must_be_zero=True,
    )
    r(
        "concurrency",
        "refusals without holder details",
        t.refusals_without_holder,
        must_be_zero=True,
    )
    r(
        "concurrency",
        "applies blocked by a dead holder",
        t.blocked_by_dead_holder,
        must_be_zero=True,
    )
    r("concurrency", "unexpected exit codes", t.unexpected_exits, must_be_zero=True)
    r("concurrency", "duplicate submits", t.findings.duplicate_submits, must_be_zero=True)
    r("concurrency", "desired runs never submitted", t.findings.never_submitted, must_be_zero=True)
    r(
        "concurrency",
        "created runs missing from lockfile",
        t.findings.missing_from_lockfile,
        must_be_zero=True,
    )
    r(
        "concurrency",
        "lockfiles that fail to parse",
        t.findings.lockfile_parse_failures,
        must_be_zero=True,
    )


def _assert_clean() -> None:
    t = _tally
    assert t.races_without_single_applier == 0, t.notes
    assert t.refusals_without_holder == 0, t.notes
    assert t.blocked_by_dead_holder == 0, t.notes
    assert t.unexpected_exits == 0, t.notes
    assert t.findings.total() == 0, t.findings.details[:20]


@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("wait", [False, True], ids=["no-wait", "lock-timeout"])
def test_eight_concurrent_applies(tmp_path: Path, wait: bool, round_: int) -> None:
    # 30 ms per request keeps the first apply busy long enough for all eight to collide.
    eight_applies(
        tmp_path,
        _tally,
        configs=CONFIGS,
        processes=PROCESSES,
        wait=wait,
        faults=Faults(latency_ms=30),
    )
    _publish()
    _assert_clean()


@pytest.mark.parametrize(
    "label", ["submit.after_post:3", "lockfile.before_rename:20", "download.mid_file:4"]
)
def test_killed_holder_never_blocks(tmp_path: Path, label: str) -> None:
    killed_holder_then_apply(tmp_path, _tally, configs=CONFIGS, crash_at=label)
    _publish()
    _assert_clean()


def test_killed_holder_with_waiters(tmp_path: Path) -> None:
    killed_holder_with_waiters(tmp_path, _tally, configs=CONFIGS, waiters=PROCESSES - 1)
    _publish()
    _assert_clean()
