"""Projects deleted since a base revision (``--changed-since REF``): removal is explicit.

A project directory that existed at the base (its settings file with an ``id`` matched the
root's ``projects``) and whose id no project has now was deleted (a moved directory keeps
its id, so it is no removal). Its last lockfile is read from git history (``git show
BASE:DIR/state/osmosis.lock``) into ``.osmosis/removed/ID/`` beside an empty
``benchmarks/``, and planned and applied there like any project: every run it recorded is
forgotten (the default, ``on_project_remove = "forget"`` at the root) or stopped (the root's
``on_project_remove = "stop"``, or the project's own ``on_remove``), shown in the plan.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass

from reconciler.config.project import dir_glob_matches
from reconciler.gitinfo import GitRepo
from reconciler.projects.discover import OSMOSIS_DIR, Project, Root
from reconciler.state.door import restore_copy

REMOVED_DIR = f"{OSMOSIS_DIR}/removed"


@dataclass(frozen=True)
class Removed:
    project: Project
    """The project as it was at the base (``dir`` is where it was)."""
    on_remove: str
    lockfile: bytes


def removed_projects(root: Root, git: GitRepo, base: str) -> list[Removed]:
    """The projects of ``base`` that are gone now (see the module docstring)."""
    prefix = root.path.resolve().relative_to(git.root.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    listed = git._git("ls-tree", "-r", "--name-only", "-z", base, "--", prefix or ".")
    current = set(root.by_id())
    gone = []
    for name in sorted(n.decode("utf-8", "replace") for n in listed.split(b"\x00") if n):
        if not name.endswith("/osmosis.toml") or not name.startswith(prefix):
            continue
        directory = name[len(prefix) : -len("/osmosis.toml")]
        if not any(dir_glob_matches(directory, g) for g in root.globs):
            continue
        try:
            settings = tomllib.loads((git.committed_file(name, base) or b"").decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        project_id = settings.get("id")
        if not isinstance(project_id, str) or project_id.strip() in current:
            continue
        state = settings.get("state", "state/osmosis.lock")
        lockfile = git.committed_file(f"{prefix}{directory}/{state}", base)
        if lockfile is None:
            continue  # it never recorded a run: nothing to forget or stop
        on_remove = settings.get("on_remove") or root.on_project_remove
        workspace = settings.get("workspace")
        project = Project(
            id=project_id.strip(),
            dir=directory,
            workspace=workspace if isinstance(workspace, str) else None,
            settings_file=f"{directory}/osmosis.toml",
        )
        gone.append(Removed(project, str(on_remove), lockfile))
    return gone


def stage(root: Root, removed: Removed) -> Project:
    """Write the removed project's last lockfile and an empty ``benchmarks/`` under
    ``.osmosis/removed/ID/``; the project to plan or apply there."""
    where = root.path / REMOVED_DIR / removed.project.id
    if where.exists():
        shutil.rmtree(where)
    (where / "benchmarks").mkdir(parents=True)
    restore_copy(where / "state" / "osmosis.lock", removed.lockfile)
    lines = [
        f'id = "{removed.project.id}"',
        f'on_delete = "{removed.on_remove}"',
        f"max_stops = {10**9}" if removed.on_remove == "stop" else "",
    ]
    if removed.project.workspace:
        lines.append(f"workspace = {_quoted(removed.project.workspace)}")
    (where / "osmosis.toml").write_text("\n".join(x for x in lines if x) + "\n", encoding="utf-8")
    return Project(
        id=removed.project.id,
        dir=f"{REMOVED_DIR}/{removed.project.id}",
        workspace=removed.project.workspace,
        settings_file=f"{REMOVED_DIR}/{removed.project.id}/osmosis.toml",
    )


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
