"""docs/results.md ("Deciding with results") runs as written.

Every ```sh block runs, in order, in one bash process in a temp directory, with the venv's
bin dir first on PATH and the embedded local Platform (no token, no network). Each ```text
block that follows a command block lists lines that must appear, in that order, in that
block's output (``...`` skips lines; digits are compared as placeholders, so the page does
not pin the simulated scores, only what is said about them).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.support.osmosis import BIN_DIR, PROJECT_ROOT

PAGE = PROJECT_ROOT / "docs" / "results.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
DIGITS = re.compile(r"\d+")
RUN_ID = re.compile(r"\bbmr_[0-9a-f]+\b")


def page_blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(PAGE.read_text(encoding="utf-8"))]


def normalise(line: str) -> str:
    return DIGITS.sub("N", RUN_ID.sub("<run>", line.rstrip()))


def assert_lines_in_order(expected: str, actual: str, where: str) -> None:
    lines = [normalise(line) for line in actual.splitlines()]
    at = 0
    for want in expected.splitlines():
        if not want.strip() or want.strip() == "...":
            continue
        want = normalise(want)
        while at < len(lines) and lines[at] != want:
            at += 1
        assert at < len(lines), f"{where}: line not found (in order): {want!r}\n--- got:\n{actual}"
        at += 1


def test_deciding_with_results_runs_as_written(tmp_path: Path) -> None:
    blocks = page_blocks()
    script = ["set -e", "exec 2>&1"]
    expected: dict[int, str] = {}
    index = -1
    for lang, body in blocks:
        if lang == "sh":
            index += 1
            script += [f"echo '@@block {index}@@'", body.rstrip("\n")]
        elif lang == "text":
            expected[index] = body
    script.append("echo '@@end@@'")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OSMOSIS_", "GITHUB_", "GIT_")) and k not in ("CI", "NO_COLOR")
    }
    env.update(
        {
            "PATH": f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}",
            "HOME": str(tmp_path),
            "GIT_CONFIG_NOSYSTEM": "1",
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "100",
        }
    )
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    assert done.returncode == 0 and "@@end@@" in done.stdout, done.stdout
    outputs = re.split(r"^@@block \d+@@\n", done.stdout.split("@@end@@")[0], flags=re.M)[1:]
    assert len(outputs) == index + 1
    for number, text in expected.items():
        assert_lines_in_order(text, outputs[number], f"docs/results.md block {number}")
    repo = tmp_path / "results-demo"
    assert (repo / "results" / "index.html").is_file()
    assert "[baselines." in (repo / "state" / "osmosis.lock").read_text(encoding="utf-8")
    logs = outputs[-1].splitlines()
    assert any("[complete] Finished:" in line for line in logs), outputs[-1]
