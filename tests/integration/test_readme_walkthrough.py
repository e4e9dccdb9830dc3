"""The README's "Walkthrough" section, run for real (issue 6, "Done when").

Every ```sh block of the section runs, in order, in one bash process in a temp directory,
with the venv's bin dir first on PATH and the embedded local Platform (no token). Each
```text block that follows a command block lists lines that must appear, in that order, in
that block's output (``...`` skips lines; 7-hex commit shas are compared as placeholders).
A ```json block is a part of the JSON document the command printed: every key shown has
the value shown (the document may have more keys).

The JSON examples of docs/machine-output.md validate against the published schema.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from collections.abc import Sequence
from pathlib import Path

from jsonschema import Draft202012Validator, FormatChecker

from reconciler.cli.output import SCHEMA_FILE
from tests.support import docs
from tests.support.osmosis import BIN_DIR

SECTION = "## Walkthrough"
SHORT_SHA = re.compile(r"\b[0-9a-f]{7}\b")


def walkthrough_blocks() -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block in the README's Walkthrough section."""
    return docs.section_blocks(docs.README, SECTION)


def assert_json_part(expected: object, actual: object, where: str) -> None:
    """Every key of ``expected`` is in ``actual`` with the same value (recursively)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{where}: no key {key!r} in {sorted(actual)}"
            assert_json_part(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: {actual!r}"
        for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
            assert_json_part(want, got, f"{where}[{i}]")
    else:
        assert expected == actual, f"{where}: README shows {expected!r}, output has {actual!r}"


def normalise(line: str) -> str:
    return SHORT_SHA.sub("<sha>", line.rstrip())


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


def walkthrough_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OSMOSIS_", "GITHUB_", "GIT_")) and k not in ("CI", "NO_COLOR")
    }
    env.update(
        {
            "PATH": f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}",
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "PYTHONUNBUFFERED": "1",  # stdout and stderr interleave as a reader sees them
            # A slow simulated clock: the first run is still active when the re-run is planned,
            # whatever the speed of this machine.
            "OSMOSIS_LOCAL_PLATFORM_SPEED": "0.01",
            # Run names and ids come from the data dir's own seed; the walkthrough fixes it
            # so the names it prints (happy-eagle, ...) stay as the README shows them.
            "OSMOSIS_LOCAL_PLATFORM_SEED": "0",
        }
    )
    return env


def run_readme_blocks(
    home: Path,
    blocks: list[tuple[str, str]],
    *,
    prelude: Sequence[tuple[str, str]] = (),
    langs: tuple[str, ...] = ("text", "json"),
    timeout: float,
) -> tuple[list[str], dict[int, tuple[str, str]]]:
    """Run the ``sh`` blocks of ``prelude`` then of ``blocks`` in one bash process (stderr
    folded into stdout, as a reader sees it): the output of each of ``blocks``' command
    blocks, and for each command block followed by an output block (one of ``langs``) that
    block as ``(lang, body)``."""
    script = ["set -e", "exec 2>&1"]
    script += [body.rstrip("\n") for lang, body in prelude if lang == "sh"]
    expected: dict[int, tuple[str, str]] = {}
    index = -1
    for lang, body in blocks:
        if lang == "sh":
            index += 1
            script += [f"echo '@@block {index}@@'", body.rstrip("\n")]
        elif lang in langs:
            assert index >= 0, "an output block before any command block"
            expected[index] = (lang, body)
    script.append("echo '@@end@@'")
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=home,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        env=walkthrough_env(home),
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and "@@end@@" in done.stdout, done.stdout
    outputs = re.split(r"^@@block \d+@@\n", done.stdout.split("@@end@@")[0], flags=re.M)[1:]
    return outputs, expected


def test_the_readme_walkthrough_runs_as_written(tmp_path: Path) -> None:
    blocks = walkthrough_blocks()
    commands = [body for lang, body in blocks if lang == "sh"]
    assert len(commands) >= 5, "the walkthrough lost its command blocks"

    outputs, expected = run_readme_blocks(tmp_path, blocks, timeout=120)
    assert len(outputs) == len(commands)
    kinds = {i: lang for i, (lang, _) in expected.items()}
    for i, (kind, want) in expected.items():
        if kind == "json":
            assert_json_part(json.loads(want), json.loads(outputs[i]), f"block {i + 1}")
        else:
            assert_lines_in_order(want, outputs[i], f"walkthrough block {i + 1}")
    assert "json" in kinds.values(), "the walkthrough lost its JSON example"

    # What the outputs claim is true of the repository the walkthrough built.
    repo = tmp_path / "walkthrough"
    log = subprocess.run(
        ["git", "log", "--format=%H %s"],
        cwd=repo,
        text=True,
        capture_output=True,
        check=True,
        env=walkthrough_env(tmp_path),
    ).stdout
    shas = {subject: sha for sha, subject in (line.split(" ", 1) for line in log.splitlines())}
    added, rerun = shas["Add the Terminal-Bench smoke run"], shas["Re-run smoke"]
    text = "".join(outputs)
    assert f'requested by {added[:7]} "Add the Terminal-Bench smoke run"' in text
    assert f'requested by {rerun[:7]} "Re-run smoke"' in text
    with (repo / "state" / "osmosis.lock").open("rb") as fh:
        lock = tomllib.load(fh)
    entry = lock["runs"]["terminal-bench/smoke"]
    assert entry["requested_by"] == rerun and entry["applied_at_commit"] == rerun
    assert [h["run_name"] for h in lock["history"]] == ["eager-hare"]
    assert "sk-local-only" not in text.split("secret set OPENAI_API_KEY", 1)[-1]
    assert "sk-local-only" not in (repo / "state" / "osmosis.lock").read_text()


def test_the_machine_output_json_examples_follow_the_published_schema() -> None:
    validator = Draft202012Validator(
        json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
    )
    blocks = docs.page_blocks(docs.DOCS / "machine-output.md")
    values = []
    for lang, body in blocks:
        if lang == "json":
            values.append(json.loads(body))
        elif lang == "jsonl":
            values.extend(json.loads(line) for line in body.splitlines() if line.strip())
    assert len(values) >= 5, "the section lost its examples"
    for value in values:
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]
        assert not errors, (value, errors)
