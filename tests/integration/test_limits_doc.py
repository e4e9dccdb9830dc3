"""docs/limits.md shows commands and what they print: run each in a fresh repository and
check that every line shown is printed (the page must not drift from the tool)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.support.osmosis import PROJECT_ROOT, cli_env, init_repo, smoke_config

PAGE = PROJECT_ROOT / "docs" / "limits.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def test_every_command_on_the_limits_page_prints_what_it_shows(tmp_path: Path) -> None:
    blocks = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    pairs = [
        (body, blocks[i + 1][1])
        for i, (lang, body) in enumerate(blocks)
        if lang == "sh" and i + 1 < len(blocks) and blocks[i + 1][0] == "text"
    ]
    assert len(pairs) >= 4, pairs
    for index, (command, shown) in enumerate(pairs):
        repo = init_repo(tmp_path / f"repo{index}", configs={"tb/smoke": smoke_config()})
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=repo,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        printed = done.stdout + done.stderr
        assert done.returncode == 1, (command, printed)
        for line in shown.strip().splitlines():
            assert line in printed.splitlines(), (command, line, printed)
