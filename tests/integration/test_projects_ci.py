"""A root of many projects on the CI engine (issue 38, docs/projects.md, "The CI engine
does the fan-out"): ``--emit-matrix`` against the published matrix schema, the documented
project workflows run job by job through ``actions_runner.Runner`` against a loopback
Platform, and what the jobs post on GitHub (a sticky comment and statuses per project)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reconciler.cli.output import SCHEMA_FILE
from tests.support import docs
from tests.support.git import git, git_run
from tests.support.github_fake import FakeGitHub
from tests.support.osmosis import PROJECT_ROOT, TOKEN, Osmosis, Platform
from tests.support.projects import ROOT_SETTINGS, project_config, write

from .actions_runner import Runner, find_environment

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


# --------------------------------------------------------------------------- the workflows

DEV = ("Dev", "dev@example.com")
SIX = {f"team-{n}": ("e2e" if n % 2 else "e2e-b") for n in range(6)}
"""Six projects, in two workspaces (their ``workspace`` setting, the matrix's workspace)."""


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repo="acme/evals").start()
    yield fake
    fake.close()


def test_the_jobs_of_a_6_project_matrix_plan_and_apply_each_project(
    tmp_path: Path, platform: Platform, github: FakeGitHub
) -> None:
    workflows = project_workflows()
    (action_ref,) = set(
        re.findall(r"uses: (osmosis-ai/osmosis-reconciler@\S+)", "".join(workflows.values()))
    )
    platforms = {"e2e": platform, "e2e-b": platform.in_workspace("e2e-b")}
    remote = tmp_path / "evals.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(remote), str(dev))
    git(dev, "checkout", "-q", "-b", "main")
    for name, text in workflows.items():
        write(dev / ".github" / "workflows" / name, text)
    write(dev / ".gitignore", ".osmosis/\n")
    write(dev / "osmosis.toml", ROOT_SETTINGS)
    for project, workspace in SIX.items():
        write(
            dev / "teams" / project / "osmosis.toml",
            f'id = "{project}"\nworkspace = "{workspace}"\n',
        )
    git(dev, "add", "-A")
    git(dev, "commit", "-q", "-m", "Six projects, no configs yet", author=DEV)
    base = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "main")

    # -- a pull request gives each project a config ------------------------------------------
    git(dev, "checkout", "-q", "-b", "configs")
    for project in SIX:
        write(dev / "teams" / project / "benchmarks" / "tb" / "r0.toml", project_config(project))
    git(dev, "add", "-A")
    git(dev, "commit", "-q", "-m", "A config per project", author=DEV)
    head = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "configs")
    github.add_pull(7, head, merged=False, commits=(head,))
    runner = Runner(
        remote=remote,
        work=tmp_path / "runner",
        repository=github.repo,
        actions={action_ref: PROJECT_ROOT},
        secrets={"OSMOSIS_TOKEN": TOKEN},
        variables={"OSMOSIS_PLATFORM_URL": platform.url},
        env={
            **find_environment(Path(sys.executable).parent),
            "GITHUB_API_URL": github.url,
            "HOME": str(tmp_path),
            "GIT_CONFIG_NOSYSTEM": "1",
        },
        github_token=github.token,
    )
    folder = dev / ".github" / "workflows"
    pr_event = {"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}}}
    pr: dict[str, Any] = {
        "sha": head,
        "base_ref": "main",
        "ref": "refs/pull/7/merge",
        "ref_name": "7/merge",
    }
    select = runner.run_job(
        folder / "osmosis-projects-plan.yml", "select", "pull_request", pr_event, **pr
    )
    assert select.ok, select.log
    matrix = json.loads(select.outputs["matrix"])
    assert matrix_errors(matrix) == []
    assert [(e["project"], e["dir"], e["workspace"]) for e in matrix["include"]] == [
        (p, f"teams/{p}", w) for p, w in SIX.items()
    ]
    needs = {"select": {"outputs": select.outputs}}
    for _push in range(2):  # a second push updates each project's comment
        for entry in matrix["include"]:
            job = runner.run_job(
                folder / "osmosis-projects-plan.yml",
                "plan",
                "pull_request",
                pr_event,
                matrix=entry,
                needs=needs,
                **pr,
            )
            assert job.ok, job.log
    bodies = github.bodies(7)
    assert len(bodies) == 6, [b.splitlines()[0] for b in bodies]
    for project, body in zip(SIX, bodies, strict=True):
        first = body.splitlines()[0]
        assert first.startswith(f"<!-- osmosis-reconciler:plan project={project} workspace="), first
        assert "tb/r0" in body and "1 to submit" in body, body
    assert sum(p.submits() for p in platforms.values()) == 0  # plans submit nothing

    # -- merged: one apply job per project ---------------------------------------------------
    git(dev, "checkout", "-q", "main")
    git(dev, "merge", "-q", "--no-ff", "configs", "-m", "Merge pull request #7", author=DEV)
    merge = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "main")
    push_event = {
        "before": base,
        "head_commit": {"id": merge, "author": {"email": DEV[1]}},
        "repository": {"default_branch": "main"},
    }
    select = runner.run_job(
        folder / "osmosis-projects-apply.yml", "select", "push", push_event, sha=merge
    )
    assert select.ok, select.log
    assert json.loads(select.outputs["matrix"]) == matrix
    needs = {"select": {"outputs": select.outputs}}
    for entry in matrix["include"]:
        job = runner.run_job(
            folder / "osmosis-projects-apply.yml",
            "apply",
            "push",
            push_event,
            matrix=entry,
            needs=needs,
            sha=merge,
        )
        assert job.ok, job.log
    assert platforms["e2e"].submits() == 3 and platforms["e2e-b"].submits() == 3
    for project, workspace in SIX.items():
        lock = git_run(remote, "show", f"main:teams/{project}/state/osmosis.lock").stdout
        assert f'workspace = "{workspace}"' in lock
        assert '[runs."tb/r0"]' in lock
    messages = git(remote, "log", "--format=%s", f"{merge}..main").splitlines()
    assert len(messages) == 6 and all(m.startswith("osmosis-apply: 1 submitted") for m in messages)
