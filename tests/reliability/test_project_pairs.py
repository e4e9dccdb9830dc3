"""100 generated pairs of concurrent ``osmosis-apply`` processes at a root of many projects
(issue 38; the scenario: tests/support/project_pairs.py). Disjoint projects in one
workspace never wait on each other, overlapping ones always exclude each other, and the
Platform counts 0 duplicate submits. ``make test`` runs the first four pairs
(tests/integration/test_projects.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from tests.support import project_pairs
from tests.support.osmosis import start_platform

from . import report

pytestmark = pytest.mark.reliability

PAIRS = 100


def test_100_generated_pairs_of_concurrent_applies(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    platform = start_platform(tmp_path / "platform", faults=Faults(hold_submits_while=str(gate)))
    tally = project_pairs.Tally()
    pairs = project_pairs.generate(PAIRS)
    try:
        template = project_pairs.template(tmp_path)
        for pair in pairs:
            repo = project_pairs.copy_template(template, tmp_path / f"pair-{pair.index}" / "repo")
            project_pairs.run_pair(pair, platform, repo, gate, tally)
    finally:
        platform.close()
    r = report.record
    r("project pairs", "pairs of osmosis-apply processes", tally.pairs)
    r("project pairs", "  disjoint (one workspace)", tally.disjoint)
    r("project pairs", "  overlapping", tally.overlapping)
    r("project pairs", "  second apply in its own clone", tally.clones)
    r("project pairs", "disjoint pairs holding their locks at once", tally.held_together)
    r("project pairs", "shared projects refused, holder named", tally.refused_naming_holder)
    r("project pairs", "disjoint projects that waited", tally.disjoint_waited, must_be_zero=True)
    r(
        "project pairs",
        "overlapping projects not excluded",
        tally.overlapping_not_excluded,
        must_be_zero=True,
    )
    r("project pairs", "duplicate submits", tally.duplicate_submits, must_be_zero=True)
    r(
        "project pairs",
        "runs missing from lockfiles",
        tally.runs_not_in_lockfiles,
        must_be_zero=True,
    )
    r("project pairs", "unexpected outcomes", tally.unexpected, must_be_zero=True)
    assert tally.failures() == 0, tally.notes[:20]
    assert tally.held_together == tally.disjoint == PAIRS // 2
    assert tally.refused_naming_holder == sum(len(p.shared) for p in pairs)
