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


CALLERS = ("osmosis-projects-plan.yml", "osmosis-projects-apply.yml")
"""The workflows a repository runs; each calls its ``-chunk`` workflow once per chunk."""


def test_the_project_workflows_read_only_keys_the_matrix_schema_guarantees() -> None:
    schema = json.loads(MATRIX_SCHEMA.read_text(encoding="utf-8"))
    job = schema["$defs"]["job"]
    workflows = project_workflows()
    chunked = [name.replace(".yml", "-chunk.yml") for name in CALLERS]
    assert sorted(workflows) == sorted([*CALLERS, *chunked])
    for caller, called in zip(CALLERS, chunked, strict=True):
        assert set(re.findall(r"(?<![\w/.])matrix\.([\w-]+)", workflows[caller])) == {"chunk"}
        assert "chunk: ${{ fromJSON(needs.select.outputs.chunks) }}" in workflows[caller]
        assert f"uses: ./.github/workflows/{called}" in workflows[caller]
        read = set(re.findall(r"(?<![\w/.])matrix\.([\w-]+)", workflows[called]))
        assert read and read <= set(job["required"]), (called, read)
        assert "matrix: ${{ fromJSON(inputs.matrix) }}" in workflows[called]


def test_600_projects_through_the_workflows_give_each_project_exactly_one_job(
    tmp_path: Path,
) -> None:
    """The chunks form, driven through the workflows' own expressions: each select job's
    chunk list, each chunk's call, each called workflow's matrix and concurrency group."""
    from collections import Counter

    remote = tmp_path / "evals.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(remote), str(dev))
    git(dev, "checkout", "-q", "-b", "main")
    workflows = project_workflows()
    for name, text in workflows.items():
        write(dev / ".github" / "workflows" / name, text)
    write(dev / "osmosis.toml", ROOT_SETTINGS)
    git(dev, "add", "-A")
    git(dev, "commit", "-q", "-m", "The workflows", author=DEV)
    base = git(dev, "rev-parse", "HEAD")
    expected = {}
    for i in range(600):
        workspace = f"ws-{i % 5}" if i % 3 else ""
        setting = f'workspace = "{workspace}"\n' if workspace else ""
        write(dev / "teams" / f"p{i:03d}" / "osmosis.toml", f'id = "team-{i:03d}"\n{setting}')
        expected[f"team-{i:03d}"] = workspace
    git(dev, "add", "-A")
    git(dev, "commit", "-q", "-m", "600 projects", author=DEV)
    head = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "main")
    runner = Runner(
        remote=remote,
        work=tmp_path / "runner",
        repository="acme/evals",
        actions={},
        secrets={"OSMOSIS_TOKEN": TOKEN},
        env={**find_environment(Path(sys.executable).parent), "HOME": str(tmp_path)},
    )
    folder = dev / ".github" / "workflows"
    events: dict[str, tuple[str, dict[str, Any]]] = {
        "plan": ("pull_request", {"pull_request": {"number": 9, "base": {"sha": base}}}),
        "apply": ("push", {"before": base, "head_commit": {"id": head}}),
    }
    for command, (event_name, event) in events.items():
        workflow = folder / f"osmosis-projects-{command}.yml"
        select = runner.run_job(workflow, "select", event_name, event, sha=head)
        assert select.ok, select.log
        chunks = json.loads(select.outputs["chunks"])
        assert matrix_errors({"chunks": chunks}) == []
        assert [len(c["include"]) for c in chunks] == [256, 256, 88]
        needs = {"select": {"outputs": select.outputs}}
        jobs = runner.expand(workflow, command, event_name, event, needs=needs, sha=head)
        assert {j.workflow.name for j in jobs} == {f"osmosis-projects-{command}-chunk.yml"}
        assert Counter(j.matrix["project"] for j in jobs) == Counter(list(expected))
        assert all(j.matrix["workspace"] == expected[j.matrix["project"]] for j in jobs)
        assert all(j.matrix["dir"] == f"teams/p{j.matrix['project'][5:]}" for j in jobs)
        assert all(j.secrets == {"token": TOKEN} for j in jobs)
        prefix = "osmosis-plan-9-" if command == "plan" else "osmosis-apply-"
        groups = [j.concurrency for j in jobs]
        assert groups == [f"{prefix}{j.matrix['workspace']}-{j.matrix['project']}" for j in jobs]
        assert len(set(groups)) == 600
        assert not any(j.cancel_in_progress for j in jobs)


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
    (matrix,) = json.loads(select.outputs["chunks"])  # six projects: one chunk
    assert matrix_errors(matrix) == []
    needs = {"select": {"outputs": select.outputs}}
    jobs = runner.expand(
        folder / "osmosis-projects-plan.yml", "plan", "pull_request", pr_event, needs=needs, **pr
    )
    assert [(j.matrix["project"], j.matrix["dir"], j.matrix["workspace"]) for j in jobs] == [
        (p, f"teams/{p}", w) for p, w in SIX.items()
    ]
    assert [j.concurrency for j in jobs] == [f"osmosis-plan-7-{w}-{p}" for p, w in SIX.items()]
    for _push in range(2):  # a second push updates each project's comment
        for planned in jobs:
            job = runner.run_planned(planned, "pull_request", pr_event, **pr)
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
    assert json.loads(select.outputs["chunks"]) == [matrix]
    needs = {"select": {"outputs": select.outputs}}
    jobs = runner.expand(
        folder / "osmosis-projects-apply.yml", "apply", "push", push_event, needs=needs, sha=merge
    )
    assert [j.matrix for j in jobs] == matrix["include"]
    assert [j.concurrency for j in jobs] == [f"osmosis-apply-{w}-{p}" for p, w in SIX.items()]
    for planned in jobs:
        job = runner.run_planned(planned, "push", push_event, sha=merge)
        assert job.ok, job.log
    assert platforms["e2e"].submits() == 3 and platforms["e2e-b"].submits() == 3
    for project, workspace in SIX.items():
        lock = git_run(remote, "show", f"main:teams/{project}/state/osmosis.lock").stdout
        assert f'workspace = "{workspace}"' in lock
        assert '[runs."tb/r0"]' in lock
    messages = git(remote, "log", "--format=%s", f"{merge}..main").splitlines()
    assert len(messages) == 6 and all(m.startswith("osmosis-apply: 1 submitted") for m in messages)
