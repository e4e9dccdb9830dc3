"""Smoke versions of the reliability suites 1-3, run by ``make test`` (unmarked; the full
ones, marked ``reliability``, run in ``make reliability``).

Same machinery as ``tests/reliability``, smaller: a 10-config repo, a few SIGKILLs at named
crash points and in the submit-committed window, one faulty network, four concurrent
applies and a killed lock holder. Every must-be-0 figure of the full suites is asserted.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from tests.reliability.concurrency import Tally, eight_applies, killed_holder_then_apply
from tests.reliability.faults import apply_until_converged, hostile_network
from tests.reliability.harness import Findings, RepoFactory, check_converged, platform_server
from tests.reliability.scenarios import CrashRunner, KillPoint, summarise

CONFIGS = 10

POINTS = [
    KillPoint("hook", "submit.after_post", 3),
    KillPoint("hook", "lockfile.before_rename", 4),  # writes are grouped: keep n low
    KillPoint("hook", "download.mid_file", 2),
    KillPoint("window", n=5),
]


@pytest.mark.parametrize("point", POINTS, ids=lambda p: p.describe())
def test_crash_smoke(tmp_path: Path, point: KillPoint) -> None:
    result = CrashRunner(tmp_path, CONFIGS).run(point)
    s = summarise([result])
    assert s["kills"] == 1, f"{point.describe()} was never reached"
    for key in (
        "duplicate_submits",
        "never_submitted",
        "missing_from_lockfile",
        "lockfile_parse_failures",
        "half_written_files",
        "unconverged",
        "temps_left",
    ):
        assert s[key] == 0, (key, s["details"])
    assert s["runs_created"] == CONFIGS and s["downloaded"] == CONFIGS


def test_faults_smoke(tmp_path: Path) -> None:
    configs = 6
    repo = RepoFactory(tmp_path, configs).new()
    # Retry-After: 0 keeps the smoke fast; the full suite honours a real one.
    faults = dataclasses.replace(hostile_network(seed=7), retry_after_s=0)
    with platform_server(tmp_path / "platform", faults=faults) as server:
        findings = Findings()
        rounds, _exits = apply_until_converged(repo, server.url, findings, server, 15)
        injected = server.calm()
        stats = check_converged(repo, server, configs, findings, {})
    assert sum(injected.values()) > 0
    assert findings.total() == 0, findings.details
    assert rounds <= 15 and stats["downloaded"] == configs


def test_concurrency_smoke(tmp_path: Path) -> None:
    tally = Tally()
    eight_applies(
        tmp_path / "race",
        tally,
        configs=CONFIGS,
        processes=4,
        wait=False,
        faults=Faults(latency_ms=30),
    )
    killed_holder_then_apply(
        tmp_path / "killed", tally, configs=CONFIGS, crash_at="submit.after_post:2"
    )
    assert tally.races_without_single_applier == 0, tally.notes
    assert tally.refusals_without_holder == 0, tally.notes
    assert tally.blocked_by_dead_holder == 0, tally.notes
    assert tally.unexpected_exits == 0, tally.notes
    assert tally.findings.total() == 0, tally.findings.details
