"""docs/import-and-state.md ("Bring existing runs under management"), run for real.

It continues the README's walkthrough: the walkthrough's command blocks run first, then the
page's, in one bash process with the embedded local Platform (see
``test_readme_walkthrough``); each ```text block lists lines that must appear, in order,
in the output of the command block before it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.support import docs

from .test_readme_walkthrough import assert_lines_in_order, run_readme_blocks, walkthrough_blocks

PAGE = docs.DOCS / "import-and-state.md"


def test_the_readme_import_section_runs_as_written(tmp_path: Path) -> None:
    blocks = docs.page_blocks(PAGE)
    commands = [body for lang, body in blocks if lang == "sh"]
    assert len(commands) >= 5, "the section lost its command blocks"
    outputs, expected = run_readme_blocks(
        tmp_path, blocks, prelude=walkthrough_blocks(), langs=("text",), timeout=180
    )
    assert len(outputs) == len(commands)
    for i, (_, want) in expected.items():
        assert_lines_in_order(want, outputs[i], f"import section block {i + 1}")

    repo = tmp_path / "walkthrough"
    with (repo / "state" / "osmosis.lock").open("rb") as fh:
        lock = tomllib.load(fh)
    (address,) = lock["runs"]
    assert address == "terminal-bench/smoke-terminus"
    assert lock["runs"][address]["imported_with"] == (
        "osmosis-import happy-eagle --model-type provider"
    )
    assert [h["reason"] for h in lock["history"]] == ["moved", "forgotten", "rerun"]
