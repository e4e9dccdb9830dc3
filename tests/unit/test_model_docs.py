"""Every field of the plan and lockfile models says what it holds (style.md rule 10).

The docstrings are read from the source here: nothing reads them at import time.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from reconciler import model

PLAN_MODELS = [
    model.Plan,
    model.PlanItem,
    model.Blocked,
    model.Cost,
    model.BenchmarkFacts,
    model.Fix,
    model.DriftItem,
    model.PlanSummary,
    model.ResultRow,
    model.RecordedChange,
]
LOCKFILE_MODELS = [
    model.LockState,
    model.RecordedRun,
    model.Intent,
    model.Downloads,
    model.RunResults,
    model.AgentResult,
    model.Rejection,
    model.HistoryEntry,
]


def documented_fields(cls: type) -> set[str]:
    """Names of the class's annotated fields that a string literal follows."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    return {
        stmt.target.id
        for stmt, after in zip(body, body[1:], strict=False)
        if isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }


@pytest.mark.parametrize("cls", PLAN_MODELS + LOCKFILE_MODELS, ids=lambda c: c.__name__)
def test_every_field_has_a_docstring(cls: type[model.Frozen]) -> None:
    assert cls.__doc__, cls.__name__
    undocumented = sorted(set(cls.field_names()) - documented_fields(cls))
    assert undocumented == [], f"{cls.__name__}: document {', '.join(undocumented)}"


def test_the_check_sees_a_missing_docstring() -> None:
    class Bare(model.Frozen, frozen=True):
        documented: int = 0
        """Has one."""
        bare: int = 0

    assert set(Bare.field_names()) - documented_fields(Bare) == {"bare"}
