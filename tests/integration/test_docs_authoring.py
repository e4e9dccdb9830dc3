"""The command blocks of docs/generators.md and docs/authoring.md run as written: one bash
process per page, in a new directory, with the installed commands on PATH; every line of an
output block (``...`` stands for lines left out) appears in that command block's output, in
order."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.osmosis import PROJECT_ROOT

from .test_readme_walkthrough import walkthrough_env

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def page_blocks(name: str) -> list[tuple[str, str]]:
    return BLOCK.findall((PROJECT_ROOT / "docs" / name).read_text(encoding="utf-8"))


def run_page(name: str, home: Path) -> list[tuple[str, str | None]]:
    """Each sh block's output, with the output block shown after it (or None)."""
    script = ["set -e", "exec 2>&1", "git config --global user.name Docs",
              "git config --global user.email docs@example.com"]  # fmt: skip
    expected: list[str | None] = []
    for lang, body in page_blocks(name):
        if lang == "sh":
            script += [f"echo '@@block {len(expected)}@@'", body.rstrip("\n")]
            expected.append(None)
        elif lang == "text" and expected:
            expected[-1] = body
    script.append("echo '@@end@@'")
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=home,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=300,
        env=walkthrough_env(home),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and "@@end@@" in done.stdout, done.stdout[-3000:]
    outputs = re.split(r"^@@block \d+@@\n", done.stdout.split("@@end@@")[0], flags=re.M)[1:]
    return list(zip(outputs, expected, strict=True))


def contains_in_order(output: str, shown: str) -> bool:
    lines = output.splitlines()
    position = 0
    for want in shown.splitlines():
        if want.strip() == "...":
            continue
        if want.endswith("..."):
            prefix = want[:-3]
            found = next(
                (i for i in range(position, len(lines)) if lines[i].startswith(prefix)), None
            )
        else:
            found = next((i for i in range(position, len(lines)) if lines[i] == want), None)
        if found is None:
            return False
        position = found + 1
    return True


@pytest.mark.parametrize("page", ["generators.md", "authoring.md"])
def test_the_page_runs_as_written(tmp_path: Path, page: str) -> None:
    for output, shown in run_page(page, tmp_path):
        if shown is not None:
            assert contains_in_order(output, shown), f"expected:\n{shown}\ngot:\n{output}"
