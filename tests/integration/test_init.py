"""``osmosis-reconciler init`` in a new repository, as a person runs it (issue 37, finding 2).

One command writes the set-up that took three pages and three minutes; its next three
commands, run as printed, make a first plan; ``.osmosis/`` never reaches git; a second run
changes nothing; nothing that differs is overwritten without ``--force``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from jsonschema import Draft202012Validator

from reconciler.scaffold import WORKFLOWS
from tests.support.git import git
from tests.support.osmosis import BIN_DIR, PROJECT_ROOT

SCHEMA = json.loads((PROJECT_ROOT / "reconciler" / "schema" / "output.schema.json").read_text())


def env(home: Path) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OSMOSIS_", "GITHUB_", "GIT_")) and k not in ("CI", "NO_COLOR")
    }
    base.update(
        PATH=f"{BIN_DIR}{os.pathsep}{base.get('PATH', '')}",
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="New Team",
        GIT_AUTHOR_EMAIL="team@example.com",
        GIT_COMMITTER_NAME="New Team",
        GIT_COMMITTER_EMAIL="team@example.com",
    )
    return base


def run(repo: Path, *args: str, shell: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["bash", "-c", shell] if shell else ["osmosis-reconciler", *args]
    return subprocess.run(
        argv, cwd=repo, env=env(repo.parent), capture_output=True, text=True, timeout=300
    )


def test_init_then_the_three_printed_commands_make_a_first_plan(tmp_path: Path) -> None:
    repo = tmp_path / "bench"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    done = run(repo, "init")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:7] == [
        "created     .gitignore",
        "created     osmosis.toml",
        *(f"created     .github/workflows/{name}" for name in WORKFLOWS),
        "created     benchmarks/terminal-bench/smoke.toml",
    ]
    head = git(PROJECT_ROOT, "rev-parse", "HEAD")
    assert f"The workflows pin osmosis-ai/osmosis-reconciler@{head} " in done.stdout
    following = lines[lines.index("Next:") + 1 : lines.index("Next:") + 4]
    assert [line[:2] for line in following] == ["  "] * 3
    for command in following:
        step = run(repo, shell=command.strip())
        assert step.returncode == 0, (command, step.stdout, step.stderr)
    assert "+ terminal-bench/smoke" in step.stdout
    assert "Plan: 1 to submit" in step.stdout
    # The plan made .osmosis/ (the embedded Platform's data): git does not see it.
    assert (repo / ".osmosis").is_dir()
    assert git(repo, "status", "--porcelain", "--ignored=no") == ""
    assert git(repo, "log", "--format=%s") == "Adopt osmosis-reconciler"


def test_a_second_init_changes_nothing_and_keeps_what_differs(tmp_path: Path) -> None:
    repo = tmp_path / "bench"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    assert run(repo, "init").returncode == 0
    snapshot = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    again = run(repo, "init", "--format", "json")
    assert again.returncode == 0, again.stderr
    document = json.loads(again.stdout)
    assert not list(Draft202012Validator(SCHEMA).iter_errors(document))
    assert {f["outcome"] for f in document["files"]} == {"unchanged"}
    assert {p: p.read_bytes() for p in snapshot} == snapshot

    settings = repo / "osmosis.toml"
    settings.write_text("max_attempts = 100\n")
    kept = run(repo, "init")
    assert kept.returncode == 0
    assert "kept        osmosis.toml (it differs; --force overwrites it)" in kept.stdout
    assert settings.read_text() == "max_attempts = 100\n"
    forced = run(repo, "init", "--force")
    assert "overwritten osmosis.toml" in forced.stdout
    assert settings.read_text().startswith("# osmosis-reconciler settings")


def test_a_ref_github_cannot_pin_is_refused(tmp_path: Path) -> None:
    done = run(tmp_path, "init", "--ref", "abc1234")
    assert done.returncode == 1
    assert "--ref 'abc1234': GitHub pins an action to a release tag" in done.stderr
    assert not (tmp_path / ".github").exists()
    tagged = run(tmp_path, "init", "--ref", "v1.2.3")
    assert tagged.returncode == 0, tagged.stderr
    assert (
        "osmosis-ai/osmosis-reconciler@v1.2.3\n"
        in (tmp_path / ".github" / "workflows" / "osmosis-plan.yml").read_text()
    )
    # Outside a git repository the first command makes one.
    assert 'git init -b main && git add -A && git commit -m "Adopt' in tagged.stdout
