"""The projects of a root: directories matching its ``projects`` globs that hold a settings
file with an ``id``; ids unique; ``after`` names known ids without a cycle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reconciler.config.project import (
    SETTINGS_FILES,
    dir_glob_matches,
    has_settings,
    load_project_settings,
    settings_source,
)
from reconciler.errors import UsageError

OSMOSIS_DIR = ".osmosis"


@dataclass(frozen=True)
class Project:
    """One project of a root."""

    id: str
    dir: str
    """Its directory relative to the root, ``/``-separated."""
    after: tuple[str, ...] = ()
    """Ids of the projects whose apply must succeed first."""
    workspace: str | None = None
    """Its ``workspace`` setting (inherited from the root when it has none)."""
    on_remove: str | None = None
    benchmarks: str = "benchmarks"
    state: str = "state/osmosis.lock"
    settings_file: str = "osmosis.toml"
    """Its settings file, relative to the root."""


@dataclass(frozen=True)
class Root:
    """A root of many projects: its settings and its projects in dependency order."""

    path: Path
    globs: tuple[str, ...]
    projects: tuple[Project, ...]
    settings_file: str
    on_project_remove: str = "forget"

    def by_id(self) -> dict[str, Project]:
        return {p.id: p for p in self.projects}


def root_globs(root: Path) -> tuple[str, ...]:
    """The root's ``projects`` globs; empty: a repository of one project."""
    return tuple(load_project_settings(root).get("projects", ()))


def load_root(root: Path) -> Root:
    """The projects of ``root`` (its settings file must list ``projects``)."""
    settings = load_project_settings(root)
    globs = tuple(settings.get("projects", ()))
    source = settings_source(root)
    name = source.name if source is not None else SETTINGS_FILES[0]
    projects: list[Project] = []
    seen: dict[str, str] = {}
    for directory in _project_dirs(root, globs):
        relative = directory.relative_to(root).as_posix()
        values = load_project_settings(directory)
        project_source = settings_source(directory)
        where = f"{relative}/{project_source.name if project_source else 'osmosis.toml'}"
        if "id" not in values:
            raise UsageError(
                f"{where}: a project needs an id (it matches projects = {list(globs)} in {name})",
                f'add id = "{directory.name}" to {where}: the id, never the path, names the '
                "project's lock and runs, so moving the directory keeps them",
            )
        project_id = values["id"]
        if project_id in seen:
            raise UsageError(
                f"two projects claim the id {project_id!r}: {seen[project_id]} and {relative}",
                f"give one of them another id in its settings file ({where})",
            )
        seen[project_id] = relative
        projects.append(
            Project(
                id=project_id,
                dir=relative,
                after=tuple(values.get("after", ())),
                workspace=values.get("workspace"),
                on_remove=values.get("on_remove"),
                benchmarks=values.get("benchmarks", "benchmarks"),
                state=values.get("state", "state/osmosis.lock"),
                settings_file=where,
            )
        )
    ordered = order(projects, name)
    return Root(
        path=root,
        globs=globs,
        projects=tuple(ordered),
        settings_file=name,
        on_project_remove=settings.get("on_project_remove", "forget"),
    )


def _project_dirs(root: Path, globs: tuple[str, ...]) -> list[Path]:
    """Directories below ``root`` matching a glob and holding a settings file, sorted."""
    found: set[Path] = set()
    for glob in globs:
        pattern = glob.strip().strip("/")
        if pattern.startswith("..") or "/../" in f"/{pattern}/" or Path(pattern).is_absolute():
            raise UsageError(
                f"projects: {glob!r} leaves the repository",
                'list directories below the root, e.g. projects = ["teams/*"]',
            )
        for candidate in root.glob(pattern):
            relative = candidate.relative_to(root).as_posix()
            if any(part.startswith(".") for part in relative.split("/")):
                continue
            if candidate.is_dir() and not candidate.is_symlink() and candidate != root:
                if dir_glob_matches(relative, pattern) and has_settings(candidate):
                    found.add(candidate)
    return sorted(found)


def order(projects: list[Project], settings_name: str = "osmosis.toml") -> list[Project]:
    """``projects`` in ``after`` order (a project after every project it names), ties by id;
    an unknown id or a cycle is an error naming the projects."""
    by_id = {p.id: p for p in projects}
    for project in projects:
        for other in project.after:
            if other not in by_id:
                raise UsageError(
                    f"{project.settings_file}: after names {other!r}, which is no project",
                    f"known projects: {', '.join(sorted(by_id)) or 'none'}",
                )
    done: list[Project] = []
    placed: set[str] = set()
    remaining = sorted(projects, key=lambda p: p.id)
    while remaining:
        ready = [p for p in remaining if all(a in placed for a in p.after)]
        if not ready:
            cycle = ", ".join(p.id for p in remaining)
            raise UsageError(
                f"the projects' after = [...] form a cycle among: {cycle}",
                "remove one of the after entries so that some project comes first",
            )
        for project in ready:
            done.append(project)
            placed.add(project.id)
        remaining = [p for p in remaining if p.id not in placed]
    return done


def dependents(root: Root, failed: set[str]) -> set[str]:
    """Every project that comes after one in ``failed`` (directly or through others)."""
    out: set[str] = set()
    changed = True
    while changed:
        changed = False
        for project in root.projects:
            if project.id in out or project.id in failed:
                continue
            if any(a in failed or a in out for a in project.after):
                out.add(project.id)
                changed = True
    return out
