"""``tests/perf/bench_projects.py`` (``make perf``, issue 38) at a reduced size, so the
benchmark keeps working between perf runs: it builds its root, serves its Platform, and
its changed-since plan selects exactly the project it touched. Its times are not checked
(no timed assertions in tests; the figures are in docs/performance.md)."""

from __future__ import annotations

import re

import pytest

from tests.perf import bench_projects


def test_the_projects_benchmark_runs_at_a_reduced_size(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--projects", "4", "--configs", "8", "--workspaces", "2", "--latency-ms", "0"]
    assert bench_projects.main(argv) == 0
    out = capsys.readouterr().out
    assert "projects: 4 projects, 8 configs, 2 workspaces, 0 ms per Platform call" in out
    assert re.search(r"one project changed +[\d.]+ s +\(goal <= 5 s; selected: p03\)", out), out
    assert re.search(r"all projects +[\d.]+ s +\(goal <= 60 s; 4 planned\)", out), out
    assert re.search(r"all, serially +[\d.]+ s", out), out
