"""docs/smoke.md: the commands it shows run as real processes against the local Platform,
and say what the page says they say."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.support import docs
from tests.support.clock import FakeClock
from tests.support.osmosis import Osmosis, Platform, init_repo, plan_items, read_lock

from .test_smoke_stage import FINISHED, SETTINGS, full_config

DOC = docs.DOCS / "smoke.md"
SECTION = "## Trying it on the local Platform"


def doc_commands(section: str = SECTION) -> list[list[str]]:
    (block,) = [b for b in docs.blocks(DOC) if b.lang == "sh" and section in b.headings]
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


def test_how_to_go_on_after_a_smoke_run_that_did_not_end_well(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    text = full_config("my-org/model", endpoint="https://always-errors.example.invalid/v1")
    repo = init_repo(tmp_path / "repo", configs={"tb/full": text}, pyproject=SETTINGS)
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    clock.advance(FINISHED)

    # The blocked reason reads as the page shows it (run names and times aside).
    plan = osm.plan().out
    page = DOC.read_text(encoding="utf-8")
    (shown,) = [
        b.body
        for b in docs.blocks(DOC)
        if b.lang == "text" and "## When the smoke run did not end well" in b.headings
    ]
    run = read_lock(repo)["runs"]["tb/full"]["run_name"]
    for line in shown.splitlines():
        if "run page" in line or line.lstrip().startswith(("run:", "*     ")):
            continue
        assert line.replace("eager-hare", run) in plan, line
    quoted = [line for line in plan.splitlines() if line.lstrip().startswith("*     ")]
    assert len(quoted) == 1 and "ERROR   [complete] Run failed: every attempt errored" in quoted[0]
    assert "OSMOSIS_SMOKE_LOG_DEADLINE" in page

    logs, skip = doc_commands("## When the smoke run did not end well")
    shown_logs = osm.run(*logs)
    assert shown_logs.code == 0, shown_logs
    assert "the model endpoint answered 502 Bad Gateway" in shown_logs.out
    applied = osm.run(*skip)
    assert applied.code == 0, applied
    assert "+ tb/full (smoke stage skipped on request)" in applied.out
    entry = read_lock(repo)["runs"]["tb/full"]
    assert "stage" not in entry and entry["attempts"] == 178
    assert platform.submits() == 2
    assert "tb/full" not in plan_items(osm.plan("--format", "json"))
