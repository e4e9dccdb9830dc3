"""The commands docs/development.md shows under "The lifecycle suite", run: ``make
lifecycle`` as its Makefile recipe (scaled down to a few short sequences: the full run is
minutes), and the replay of a printed sequence, one that breaks an invariant (the planted
bug) and one that keeps them all."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import docs

ROOT = docs.PROJECT_ROOT
SECTION = "## The lifecycle suite"
SMALL = {
    "LIFECYCLE_EXAMPLES": "2",
    "LIFECYCLE_STEPS": "4",
    "LIFECYCLE_JOBS": "1",
    "LIFECYCLE_MIN_COVERAGE": "0",
}
"""The scale of the test (the page's sizes are for the real run)."""
PLANTED = """\
state = LifecycleMachine()
state.first_config(pick=0, model='openai/gpt-5.2', attempts=1)
state.apply()
state.time_passes()
state.apply()
state.teardown()
"""


def shown_lines() -> list[str]:
    (body,) = [
        b.body
        for b in docs.blocks(docs.DOCS / "development.md")
        if b.lang == "sh" and SECTION in b.headings
    ]
    return [line.strip() for line in body.splitlines() if line.strip()]


def recipe() -> list[str]:
    """The command of the Makefile's ``lifecycle`` target, with ``$(BIN)`` resolved."""
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^lifecycle:.*\n\t(.+)$", makefile, re.M)
    assert match, "the Makefile has no lifecycle target"
    return shlex.split(match.group(1).replace("$(BIN)/python", sys.executable))


def split(line: str) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(line)
    env = {}
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        name, _eq, value = words.pop(0).partition("=")
        env[name] = value
    return env, words


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LIFECYCLE_")}
    full.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run(argv, cwd=cwd, env=full, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_make_lifecycle_lines_run_and_print_their_tables(tmp_path: Path) -> None:
    lines = [line for line in shown_lines() if line.endswith("make lifecycle")]
    assert len(lines) == 2, lines
    for line in lines:
        env, words = split(line)
        assert words == ["make", "lifecycle"], line
        done = run(recipe(), {**env, **SMALL}, tmp_path)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        seed = env.get("LIFECYCLE_SEED", r"\d+")
        assert re.search(f"lifecycle: seed {seed} ", out), out
        assert "invariant (violations)" in out and "rule (times run)" in out, out
        assert re.search(r"one_paid_run_per_request\s+0\n", out), out


@pytest.mark.slow
def test_the_replay_line_replays_a_printed_sequence(tmp_path: Path) -> None:
    (line,) = [line for line in shown_lines() if "tests.lifecycle.replay" in line]
    env, words = split(line)
    assert words[0] == ".venv/bin/python"
    argv = [sys.executable, *words[1:]]
    (tmp_path / words[-1]).write_text(PLANTED)
    broken = run(argv, {**env, "LIFECYCLE_PLANT": "lost-record"}, tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "invariant one_paid_run_per_request violated: 2 runs paid for 1 requests" in (
        broken.stdout
    ), broken.stdout + broken.stderr
    kept = run(argv, env, tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "replayed: every invariant held" in kept.stdout
