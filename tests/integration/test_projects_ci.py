"""A root of many projects on the CI engine (issue 38, docs/projects.md, "The CI engine
does the fan-out"): ``--emit-matrix`` against the published matrix schema, the documented
project workflows run job by job through ``actions_runner.Runner`` against a loopback
Platform, and what the jobs post on GitHub (a sticky comment and statuses per project)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reconciler.cli.output import SCHEMA_FILE
from tests.support import docs
from tests.support.osmosis import Osmosis, Platform
from tests.support.projects import ROOT_SETTINGS, write

MATRIX_SCHEMA = SCHEMA_FILE.with_name("matrix.schema.json")


def matrix_errors(document: Any) -> list[str]:
    """Every complaint, those of each ``oneOf`` branch included."""
    validator = Draft202012Validator(json.loads(MATRIX_SCHEMA.read_text(encoding="utf-8")))
    found = []
    pending = list(validator.iter_errors(document))
    while pending:
        error = pending.pop()
        found.append(f"{list(error.absolute_path)}: {error.message}")
        pending += error.context
    return found


def project_workflows() -> dict[str, str]:
    """The project workflows docs/projects.md shows, by file name."""
    text = (docs.DOCS / "projects.md").read_text(encoding="utf-8")
    found = re.findall(r"`\.github/workflows/([\w-]+\.yml)`:\n\n```yaml\n(.*?)```", text, re.S)
    return dict(found)


def test_emit_matrix_of_600_projects_follows_the_matrix_schema(
    tmp_path: Path, platform: Platform
) -> None:
    repo = tmp_path / "repo"
    write(repo / "osmosis.toml", ROOT_SETTINGS)
    for i in range(600):
        workspace = f'workspace = "ws-{i % 5}"\n' if i % 3 else ""
        write(repo / "teams" / f"p{i:03d}" / "osmosis.toml", f'id = "team-{i:03d}"\n{workspace}')
    result = Osmosis(repo, platform).run("osmosis-plan", "--emit-matrix")
    assert result.code == 0, result
    document = json.loads(result.out)
    assert matrix_errors(document) == []
    chunks = [chunk["include"] for chunk in document["chunks"]]
    assert [len(c) for c in chunks] == [256, 256, 88]
    rows = [row for chunk in chunks for row in chunk]
    assert [r["project"] for r in rows] == [f"team-{i:03d}" for i in range(600)]
    assert rows[1] == {
        "project": "team-001",
        "dir": "teams/p001",
        "workspace": "ws-1",
        "reason": "all projects (--all)",
    }
    # Six projects: one matrix, the form the documented workflows pass to fromJSON.
    six = Osmosis(repo, platform).run(
        "osmosis-plan", "--emit-matrix", *[f"--project=team-{i:03d}" for i in range(6)]
    )
    assert matrix_errors(json.loads(six.out)) == []
    assert len(json.loads(six.out)["include"]) == 6


def test_the_project_workflows_read_only_keys_the_matrix_schema_guarantees() -> None:
    schema = json.loads(MATRIX_SCHEMA.read_text(encoding="utf-8"))
    job = schema["$defs"]["job"]
    workflows = project_workflows()
    assert sorted(workflows) == ["osmosis-projects-apply.yml", "osmosis-projects-plan.yml"]
    for name, body in workflows.items():
        read = set(re.findall(r"\bmatrix\.([\w-]+)", body))
        assert read, name
        assert read <= set(job["required"]), (name, read)
        assert "fromJSON(needs.select.outputs.matrix)" in body, name


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        ({"include": [{"project": "a", "dir": "teams/a", "workspace": ""}]}, "'reason'"),
        (
            {"include": [{"project": "", "dir": "a", "workspace": "", "reason": ""}]},
            "should be non-empty",
        ),
        ({"include": [{"project": "a", "dir": "../a", "workspace": "", "reason": ""}]}, "match"),
        ({"include": [{"project": "a", "dir": "/a", "workspace": "", "reason": ""}]}, "match"),
        (
            {
                "include": [
                    {"project": f"p{i}", "dir": f"t/p{i}", "workspace": "", "reason": ""}
                    for i in range(257)
                ]
            },
            "too long",
        ),
        ({"chunks": [{"include": []}]}, "is too short"),
        ({"include": [], "chunks": []}, "Additional properties"),
    ],
)
def test_the_matrix_schema_refuses_what_a_workflow_cannot_run(
    document: dict[str, Any], complaint: str
) -> None:
    errors = matrix_errors(document)
    assert errors, document
    assert complaint in " ".join(errors), errors
