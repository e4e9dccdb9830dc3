"""docs/smoke.md: the commands it shows run as real processes against the local Platform,
and say what the page says they say."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.support import docs

from .helpers import Osmosis, Platform, init_repo, read_lock
from .test_smoke_stage import SETTINGS, full_config

DOC = docs.DOCS / "smoke.md"
SECTION = "## Trying it on the local Platform"


def doc_commands() -> list[list[str]]:
    (block,) = [b for b in docs.blocks(DOC) if b.lang == "sh" and SECTION in b.headings]
    return [shlex.split(line) for line in block.body.splitlines() if line.strip()]


def test_the_pages_commands(tmp_path: Path, platform: Platform) -> None:
    text = full_config("my-org/model", endpoint="https://always-errors.example.invalid/v1")
    repo = init_repo(tmp_path / "repo", configs={"tb/full": text}, pyproject=SETTINGS)
    osm = Osmosis(repo, platform)
    outputs = []
    for name, *args in doc_commands():
        result = osm.run(name, *args)
        assert result.code in (0, 2), result
        outputs.append(result.out)
    assert re.search(r"\+ tb/full \(smoke first: 1 attempt, then [\d,]+\)", outputs[0])
    assert read_lock(repo)["runs"]["tb/full"]["stage"] == "smoke"
    assert "+ tb/full (smoke stage skipped on request)" in outputs[2] or (
        "-/+ tb/full (smoke stage skipped on request)" in outputs[2]
    )
    page = DOC.read_text(encoding="utf-8")
    for shown in (
        "(smoke first: 1 attempt, then 7,500)",
        "(full run: the smoke run ended well)",
        "(full run blocked: the smoke run did not end well)",
        "(smoke stage skipped on request)",
    ):
        assert shown in page
