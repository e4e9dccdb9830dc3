"""``osmosis-ci`` in the matrix job of one project of a root of many (issue 38,
docs/projects.md): each project keeps a sticky plan comment of its own, and its commit
statuses name it. Against ``tests/support/github_fake.py`` over loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.ci import comment as sticky
from reconciler.ci.main import main
from reconciler.state.lockfile import write_lockfile
from tests.support.github_fake import FakeGitHub
from tests.support.plan_fixtures import SHA, lock
from tests.unit.test_ci_lockfile_helpers import finished

PLAN = "<!-- osmosis-reconciler:plan workspace=acme -->\n### Osmosis plan for `acme`\n"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    server = FakeGitHub(repo="o/r").start()
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    for key in ("GITHUB_ACTIONS", "GITHUB_SERVER_URL", "GITHUB_RUN_ID"):
        monkeypatch.delenv(key, raising=False)
    yield server
    server.close()


def root_of(tmp_path: Path, *ids: str) -> Path:
    """A root listing ``teams/*`` with a project per id (its plan body written beside it)."""
    (tmp_path / "osmosis.toml").write_text('projects = ["teams/*"]\n', encoding="utf-8")
    for project in ids:
        where = tmp_path / "teams" / project
        where.mkdir(parents=True)
        (where / "osmosis.toml").write_text(f'id = "{project}"\n', encoding="utf-8")
    (tmp_path / "plan.md").write_text(PLAN, encoding="utf-8")
    return tmp_path


def comment(root: Path, directory: str, *extra: str) -> int:
    body = str(root / "plan.md")
    return main(
        ["--dir", str(root / directory), "comment", "--pr", "7", "--body-file", body, *extra]
    )


def test_each_project_keeps_a_sticky_comment_of_its_own(fake: FakeGitHub, tmp_path: Path) -> None:
    root = root_of(tmp_path, "coding", "coding-agents", "browsing")
    for _push in range(2):
        for project in ("coding", "coding-agents", "browsing"):
            assert comment(root, f"teams/{project}", "--exit-code", "0") == 0
    firsts = [body.splitlines()[0] for body in fake.bodies(7)]
    assert firsts == [
        "<!-- osmosis-reconciler:plan project=coding workspace=acme -->",
        "<!-- osmosis-reconciler:plan project=coding-agents workspace=acme -->",
        "<!-- osmosis-reconciler:plan project=browsing workspace=acme -->",
    ]
    # The root's own plan (a repository of one project's marker) is a comment of its own.
    assert comment(root, ".", "--exit-code", "0") == 0
    assert len(fake.bodies(7)) == 4
    assert fake.bodies(7)[3].startswith("<!-- osmosis-reconciler:plan workspace=acme -->")
    # --project names it explicitly (a job whose --dir is not the project's directory).
    assert comment(root, ".", "--exit-code", "0", "--project", "browsing") == 0
    assert len(fake.bodies(7)) == 4


def test_a_project_marker_never_matches_another_project_or_the_bare_marker() -> None:
    mine = sticky.sticky_marker("coding")
    assert sticky.has_marker("<!-- osmosis-reconciler:plan project=coding workspace=w -->", mine)
    assert not sticky.has_marker("<!-- osmosis-reconciler:plan project=coding-agents -->", mine)
    assert not sticky.has_marker(
        "<!-- osmosis-reconciler:plan project=coding -->", sticky.MARKER_PREFIX
    )
    assert sticky.has_marker("<!-- osmosis-reconciler:plan workspace=w -->", sticky.MARKER_PREFIX)
    body = sticky.prepare_comment_body("no marker here", exit_code=0, project="coding")
    assert body.startswith("<!-- osmosis-reconciler:plan project=coding -->\n")


def test_a_projects_commit_statuses_name_it(fake: FakeGitHub, tmp_path: Path) -> None:
    root = root_of(tmp_path, "coding", "browsing")
    fake.add_pull(7, SHA)
    for project in ("coding", "browsing"):
        state = root / "teams" / project / "state" / "osmosis.lock"
        write_lockfile(state, lock(finished(run_id=f"r-{project}", observed_at=datetime.now(UTC))))
        code = main(["--dir", str(root / "teams" / project), "--format", "json", "announce"])
        assert code == 0
    contexts = sorted(status["context"] for status in fake.statuses[SHA])
    assert contexts == ["osmosis/browsing/tb/a", "osmosis/coding/tb/a"]
    assert len(fake.bodies(7)) == 2  # one results comment per run
