"""Exit codes live in one table (``reconciler/exit_codes.py``, issue 33): the numbers are
the frozen ones of design.md §4, ``--help`` states them, and no command line returns a
number of its own (each returns an ``Ending``; the error handlers turn it into the code)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reconciler.exit_codes import PLAN_AND_APPLY_HELP, Ending, exit_code

PACKAGE = Path(__file__).resolve().parents[2] / "reconciler"
COMMAND_LINES = ("cli", "ci")
NOT_EXIT_CODES = {"cli/results.py:terminal_width"}
"""Functions of the command lines that return a literal int that is not an exit code."""


def test_the_table_is_the_frozen_one() -> None:
    assert {ending: exit_code(ending) for ending in Ending} == {
        Ending.DONE: 0,
        Ending.FAILED: 1,
        Ending.PENDING: 2,
        Ending.PARTIAL: 3,
        Ending.BLOCKED: 4,
        Ending.WAIT_TIMED_OUT: 4,
        Ending.INTERRUPTED: 130,
    }


def test_the_help_states_every_code_of_plan_and_apply() -> None:
    stated = re.findall(r"^ +(?:osmosis-\w+|both)? +(\d+)  \w", PLAN_AND_APPLY_HELP, re.M)
    assert sorted(map(int, stated)) == [0, 0, 1, 1, 2, 3, 4, 4, 130]
    assert set(map(int, stated)) == {exit_code(e) for e in Ending}


def literal_returns(source: str, where: str) -> list[str]:
    """``where:function`` of every function annotated ``-> int`` that returns an int literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.returns is None or ast.unparse(node.returns) != "int":
            continue
        for inner in ast.walk(node):
            if (
                isinstance(inner, ast.Return)
                and isinstance(inner.value, ast.Constant)
                and type(inner.value.value) is int
            ):
                found.append(f"{where}:{node.name}")
                break
    return found


def test_no_command_line_returns_a_number_of_its_own() -> None:
    found = [
        name
        for package in COMMAND_LINES
        for path in sorted((PACKAGE / package).rglob("*.py"))
        for name in literal_returns(
            path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix()
        )
    ]
    assert set(found) == NOT_EXIT_CODES, "return an Ending; exit_codes.exit_code picks the number"


def test_the_probe_finds_a_literal_exit_code() -> None:
    source = "def main() -> int:\n    if x:\n        return 3\n    return code\n"
    assert literal_returns(source, "m.py") == ["m.py:main"]
    assert literal_returns("def f() -> str:\n    return 3\n", "m.py") == []
