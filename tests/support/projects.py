"""Builders of a root of many projects (issue 38, docs/projects.md): a real git repository
whose root settings file lists ``teams/*``, each project with its own configs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.git import commit, git
from tests.support.osmosis import smoke_config

ROOT_SETTINGS = 'projects = ["teams/*"]\nmax_attempts = 100\n'


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def project_config(project_id: str, index: int = 0, **kwargs: Any) -> str:
    """A project's own config: its agent carries the project's label, so two projects'
    runs are never twins (an identical active run in the workspace is blocked by the
    twin guard, docs/paying-once.md, whichever project made it)."""
    kwargs.setdefault("attempts", index + 1)
    text = smoke_config(comment=f"{project_id} {index}", **kwargs)
    label = project_id.upper().replace("-", "_")
    return text + f'\n[agents.env]\nOSMOSIS_TEAM = "{label}"\n'


def add_project(
    repo: Path, directory: str, project_id: str, configs: int = 1, extra: str = ""
) -> None:
    write(repo / directory / "osmosis.toml", f'id = "{project_id}"\n{extra}')
    for index in range(configs):
        write(
            repo / directory / "benchmarks" / "tb" / f"r{index}.toml",
            project_config(project_id, index),
        )


def projects_repo(
    tmp_path: Path, ids: dict[str, str], root: str = ROOT_SETTINGS, name: str = "repo"
) -> Path:
    """A repository whose root lists ``teams/*``; ``ids``: directory name -> extra settings."""
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / ".gitignore", ".osmosis/\n")
    write(repo / "osmosis.toml", root)
    for project, extra in ids.items():
        add_project(repo, f"teams/{project}", project, extra=extra)
    commit(repo, "Add projects")
    return repo
