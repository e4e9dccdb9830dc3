"""``tests/perf/bench_projects.py`` (``make perf``, issue 38) at a reduced size, so the
benchmark keeps working between perf runs: run as ``make perf`` runs it, it builds its
root, serves its Platform, and its changed-since plan selects exactly the project it
touched. Its times are not checked (no timed assertions in tests; the figures are in
docs/performance.md)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.osmosis import PROJECT_ROOT


def test_the_projects_benchmark_runs_at_a_reduced_size() -> None:
    argv = ["--projects", "4", "--configs", "8", "--workspaces", "2", "--latency-ms", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "tests.perf.bench_projects", *argv],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "projects: 4 projects, 8 configs, 2 workspaces, 0 ms per Platform call" in out
    assert re.search(r"one project changed +[\d.]+ s +\(goal <= 5 s; selected: p03\)", out), out
    assert re.search(r"all projects +[\d.]+ s +\(goal <= 60 s; 4 planned\)", out), out
    assert re.search(r"all, serially +[\d.]+ s", out), out
