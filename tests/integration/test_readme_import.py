"""The README's "Bring existing runs under management" section, run for real.

It continues the walkthrough: the walkthrough's command blocks run first, then this
section's, in one bash process with the embedded local Platform (see
``test_readme_walkthrough``); each ```text block lists lines that must appear, in order,
in the output of the command block before it.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

from .helpers import PROJECT_ROOT
from .test_readme_walkthrough import (
    FENCE,
    assert_lines_in_order,
    walkthrough_blocks,
    walkthrough_env,
)

SECTION = "## Bring existing runs under management"


def section_blocks() -> list[tuple[str, str]]:
    text = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION + "\n")
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else len(text)]
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(section)]


def test_the_readme_import_section_runs_as_written(tmp_path: Path) -> None:
    blocks = section_blocks()
    commands = [body for lang, body in blocks if lang == "sh"]
    assert len(commands) >= 5, "the section lost its command blocks"
    script = ["set -e", "exec 2>&1"]
    script += [body.rstrip("\n") for lang, body in walkthrough_blocks() if lang == "sh"]
    expected: dict[int, str] = {}
    index = -1
    for lang, body in blocks:
        if lang == "sh":
            index += 1
            script += [f"echo '@@block {index}@@'", body.rstrip("\n")]
        elif lang == "text":
            expected[index] = body
    script.append("echo '@@end@@'")
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=180,
        env=walkthrough_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and "@@end@@" in done.stdout, done.stdout
    outputs = re.split(r"^@@block \d+@@\n", done.stdout.split("@@end@@")[0], flags=re.M)[1:]
    assert len(outputs) == len(commands)
    for i, want in expected.items():
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
