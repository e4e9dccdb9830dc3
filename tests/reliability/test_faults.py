"""Fault suite (issue 7, suite 2): a hostile network between osmosis-apply and the Platform.

20% of API requests answer 5xx, 10% answer 429 with ``Retry-After``, 5% drop the
connection before answering, 10% get a 200 ms latency spike, and 10% of successful submits
are committed and then lose their response. Plain ``osmosis-apply`` rounds must converge
with exactly one run per config, every run recorded and downloaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import report
from .faults import apply_until_converged, hostile_network
from .harness import Findings, RepoFactory, check_converged, platform_server

pytestmark = pytest.mark.reliability

CONFIGS = 30
SEEDS = (1, 2, 3)
MAX_ROUNDS = 15


def test_apply_converges_through_faults(tmp_path: Path) -> None:
    repos = RepoFactory(tmp_path, CONFIGS)
    total = Findings()
    injected: dict[str, int] = {}
    rounds_seen: list[int] = []
    exits: dict[int, int] = {}
    runs = 0
    for seed in SEEDS:
        repo = repos.new()
        with platform_server(tmp_path / f"platform-{seed}", faults=hostile_network(seed)) as server:
            findings = Findings()
            rounds, seen = apply_until_converged(repo, server.url, findings, server, MAX_ROUNDS)
            rounds_seen.append(rounds)
            for code, n in seen.items():
                exits[code] = exits.get(code, 0) + n
            for kind, n in server.calm().items():
                injected[kind] = injected.get(kind, 0) + n
            stats = check_converged(repo, server, CONFIGS, findings, {})
            runs += stats["runs"]
            if stats["downloaded"] != CONFIGS:
                findings.details.append(f"seed {seed}: {stats['downloaded']} runs downloaded")
            total.add(findings)
            assert stats["downloaded"] == CONFIGS, findings.details
    r = report.record
    r("faults", "scenarios (30 configs each)", len(SEEDS))
    r("faults", "faults injected (all kinds)", sum(injected.values()))
    for kind in ("error", "rate_limit", "drop", "latency_spike", "drop_after_submit"):
        r("faults", f"  {kind}", injected.get(kind, 0))
    r("faults", "apply rounds to converge", " / ".join(str(n) for n in rounds_seen))
    r(
        "faults",
        "apply exits (code x count)",
        ", ".join(f"{c}x{n}" for c, n in sorted(exits.items())),
    )
    r("faults", "runs created / desired", f"{runs}/{len(SEEDS) * CONFIGS}")
    r("faults", "duplicate submits", total.duplicate_submits, must_be_zero=True)
    r("faults", "desired runs never submitted", total.never_submitted, must_be_zero=True)
    r(
        "faults",
        "created runs missing from lockfile",
        total.missing_from_lockfile,
        must_be_zero=True,
    )
    r("faults", "lockfiles that fail to parse", total.lockfile_parse_failures, must_be_zero=True)
    r("faults", "half-written files at final paths", total.half_written_files, must_be_zero=True)
    r("faults", "runs that did not converge", total.unconverged, must_be_zero=True)
    assert total.total() == 0, "\n".join(total.details[:20])
    assert injected.get("error", 0) > 0 and injected.get("rate_limit", 0) > 0
    assert injected.get("drop", 0) > 0 and injected.get("latency_spike", 0) > 0
