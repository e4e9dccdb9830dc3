"""Derived facts have one reader (issue 33): ``attempts_per_task`` is read from a submit
body by ``model.attempts_per_task`` alone; a config carries it as
``DesiredRun.attempts_per_task`` (with ``planned_attempts``), a recorded run as
``RecordedRun.attempts_per_task``.

The scan has a companion test proving its probe can fail.
"""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.config import load_configs
from reconciler.model import AgentResult, LockState, RecordedRun, RunResults, attempts_per_task
from reconciler.plan.cost import cost_table
from reconciler.state.history import retire_run

PACKAGE = Path(__file__).resolve().parents[2] / "reconciler"
READER = PACKAGE / "model" / "base.py"
KEY = "attempts_per_task"


def raw_reads(source: str) -> list[int]:
    """Lines that read ``KEY`` out of a mapping (``m.get(KEY ...)`` or ``m[KEY]``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == KEY
        ):
            lines.append(node.lineno)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == KEY
        ):
            lines.append(node.lineno)
    return lines


def is_local_platform(path: Path) -> bool:
    """The embedded Platform is the other side of the wire: it reads the request body as
    the Platform does (and may use the same rule), not the reconciler's values."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] == "local_platform" or parts[:2] == ("platform", "local")


def test_only_the_model_reads_attempts_per_task_from_a_body() -> None:
    found = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != READER
        and not is_local_platform(path)
        and (lines := raw_reads(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "read it with model.attempts_per_task (or the value a model carries)"
    assert raw_reads(READER.read_text(encoding="utf-8")), "the one reader moved: update READER"


def test_the_probe_finds_both_kinds_of_read() -> None:
    source = (
        'a = spec.get("execution_config", {}).get("attempts_per_task", 1)\n'
        'b = execution["attempts_per_task"]\n'
        'execution["attempts_per_task"] = 1\n'  # a write, not a read
    )
    assert raw_reads(source) == [1, 2]


@pytest.mark.parametrize(
    ("execution", "expected"),
    [
        (None, 1),
        ({}, 1),
        ({"attempts_per_task": 3}, 3),
        ({"attempts_per_task": True}, 1),
        ({"attempts_per_task": "3"}, 1),
        ({"attempts_per_task": 2.0}, 1),
        ({"attempts_per_task": 0}, 0),  # the Platform refuses it: preflight blocks it
    ],
)
def test_the_rule(execution: dict | None, expected: int) -> None:
    assert attempts_per_task(execution) == expected


VALID = """\
[experiment]
benchmark = "terminal-bench"

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5"
api_key_secret = "OPENAI_API_KEY"

[execution]
attempts_per_task = 3
"""


def test_a_config_carries_its_attempts_and_counts_planned_attempts(tmp_path: Path) -> None:
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "a.toml").write_text(VALID, encoding="utf-8")
    (run,) = load_configs(tmp_path).runs
    assert (run.agent_count, run.attempts_per_task) == (2, 3)
    assert run.planned_attempts(10) == 60


def recorded(execution: dict | None) -> RecordedRun:
    spec: dict = {"agents": [{"model": {"type": "provider", "model": "openai/gpt-5"}}]}
    if execution is not None:
        spec["execution_config"] = execution
    return RecordedRun(address="a", spec_digest="sha256:x", spec=spec, run_id="run_1")


@pytest.mark.parametrize(
    ("execution", "expected"),
    [(None, 1), ({"attempts_per_task": 4}, 4), ({"attempts_per_task": 0}, 1)],
)
def test_a_recorded_run_reads_its_body_once_at_least_one(
    execution: dict | None, expected: int
) -> None:
    assert recorded(execution).attempts_per_task == expected


def test_history_and_cost_take_the_recorded_value() -> None:
    run = recorded({"attempts_per_task": 4}).model_copy(
        update={
            "benchmark_id": "bm_1",
            "results": RunResults(agents=(AgentResult(agent_index=0, cost_per_task=2.0),)),
        }
    )
    state = LockState(lineage="l", platform="local", workspace="w", runs={"a": run})
    ((sample,),) = cost_table(state).values()
    assert sample.per_attempt == 0.5
    retired = retire_run(state, "a", "forgotten", ended_at=datetime(2026, 1, 2, tzinfo=UTC))
    (entry,) = retired.history
    assert entry.attempts_per_task == 4
    assert cost_table(retired)["openai/gpt-5"][0].per_attempt == 0.5
    once = LockState(lineage="l", platform="local", workspace="w", runs={"a": recorded(None)})
    assert retire_run(once, "a", "forgotten").history[0].attempts_per_task is None
