"""Fuzz targets: the config parser, the settings parser, the lockfile reader and the saved-
plan reader, each fed hostile edits of a valid document (``strategies.documents``)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reconciler.config.discover import Found
from reconciler.config.load import load_file
from reconciler.config.project import load_project_settings
from reconciler.engine.saved_plan import SAVED_PLAN_KIND, read_saved_plan
from reconciler.errors import ReconcilerError, StateError, UsageError
from reconciler.paths import relative_path_problem
from reconciler.render import render_json, render_markdown, render_text
from reconciler.state.lockfile import parse
from tests.support.strategies import documents, json_values

from .conftest import exercise, fuzz_target

ROOT = Path(__file__).resolve().parents[2]
CONFIG = (ROOT / "benchmarks" / "terminal-bench" / "smoke.toml").read_text(encoding="utf-8")
LOCKFILE = (ROOT / "tests" / "golden" / "lockfile_full.toml").read_text(encoding="utf-8")
PLAN = json.loads((ROOT / "tests" / "golden" / "plan_full.json").read_text(encoding="utf-8"))
SAVED = json.dumps({"kind": SAVED_PLAN_KIND, "plan": PLAN})
SETTINGS = """\
benchmarks = "benchmarks"
state = "state/osmosis.lock"
download_types = ["summary", "results"]
on_delete = "stop"
on_change = "replace"
max_stops = 5
max_attempts = 5000
parallelism = 8
max_cost_usd = 250.0
ignore = ["templates/**"]
lock = "local"
lock_ttl = 30
"""
WORK = Path(
    tempfile.mkdtemp(prefix="osmosis-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
)
"""One scratch repository for the reader targets (each example overwrites its file)."""


def _write(rel: str, text: str) -> Path:
    path = WORK / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


@fuzz_target
@given(documents(CONFIG))
def test_config_parser(text: str) -> None:
    path = _write("benchmarks/tb/fuzzed.toml", text)
    found = Found("tb/fuzzed", "benchmarks/tb/fuzzed.toml", str(path))

    def call() -> object:
        run, issues = load_file(found)
        # A clear error is an issue with a message, in the file, with a hint for errors.
        for issue in issues:
            assert issue.message and issue.file == "benchmarks/tb/fuzzed.toml", issue
            assert issue.severity != "error" or issue.hint, issue
        assert (run is None) == any(i.severity == "error" for i in issues), issues
        return run

    exercise("config", call, (), refused=lambda run: run is None)


@fuzz_target
@given(documents(SETTINGS), st.booleans())
def test_settings_parser(text: str, in_pyproject: bool) -> None:
    for name in ("osmosis.toml", "pyproject.toml"):
        (WORK / name).unlink(missing_ok=True)
    if in_pyproject:
        _write("pyproject.toml", "[tool.osmosis-reconciler]\n" + text)
    else:
        _write("osmosis.toml", text)
    exercise("settings", lambda: load_project_settings(WORK), (UsageError,))


@fuzz_target
@given(documents(LOCKFILE))
def test_lockfile_reader(text: str) -> None:
    def call() -> object:
        state = parse(text, "state/osmosis.lock")
        # What the reader lets through can never lead a writer out of the repository.
        for address, run in state.runs.items():
            assert relative_path_problem(address) is None, address
            if run.downloads is not None:
                assert relative_path_problem(run.downloads.directory) is None
        for entry in state.history:
            assert relative_path_problem(entry.address) is None, entry.address
        return state

    exercise("lockfile", call, (StateError,))


@st.composite
def saved_plans(draw: st.DrawFn) -> str:
    payload: Any = json.loads(SAVED)
    for _ in range(draw(st.integers(0, 3))):
        node: Any = payload
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            key = draw(
                st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node)))
            )
            child = node[key]
            if not isinstance(child, (dict, list)) or not child or draw(st.integers(0, 3)) == 0:
                node[key] = draw(json_values)
                break
            node = child
    text = json.dumps(payload, indent=None if draw(st.booleans()) else 1)
    if draw(st.integers(0, 4)) == 0:
        text = draw(documents(text))
    return text


@fuzz_target
@given(saved_plans())
def test_saved_plan_reader(text: str) -> None:
    path = _write("fuzzed.plan.json", text)

    def call() -> object:
        plan = read_saved_plan(path)
        # What `osmosis-reconciler show` prints of it, in each format.
        render_text(plan, color=True)
        render_markdown(plan)
        render_json(plan)
        return plan

    exercise("saved plan", call, (ReconcilerError,))
