"""Which projects a command at the root runs, and why.

``--all`` (the default), ``--project ID`` (repeatable) or ``--changed-since REF``: the
projects whose inputs changed. A project's inputs are what loading its configs reads
(``config.project.load_project_settings``, ``config.load_configs``): every file in its
directory (its settings file, its configs and generators under ``benchmarks/``) except what
the reconciler writes there (its lockfile, ``.osmosis/``), and the settings of the root
settings file it inherits (a changed setting the project sets itself is not its input).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.config.project import NOT_INHERITED, settings_source
from reconciler.errors import UsageError, closest
from reconciler.projects.discover import OSMOSIS_DIR, Project, Root


@dataclass(frozen=True)
class Selected:
    project: Project
    reason: str
    """Why it runs: ``planned because teams/a/benchmarks/tb/x.toml changed``."""


def select(
    root: Root,
    *,
    ids: tuple[str, ...] = (),
    changed: set[str] | None = None,
    failed: tuple[str, ...] | None = None,
    root_keys: set[str] | None = None,
) -> list[Selected]:
    """The selected projects, in ``after`` order (see the module docstring)."""
    by_id = root.by_id()
    if failed is not None:
        return [
            Selected(by_id[i], "left undone by an apply at the root (--failed)")
            for i in _known(root, tuple(i for i in failed if i in by_id))
        ]
    if ids:
        wanted = set(_known(root, ids))
        return [Selected(p, "selected with --project") for p in root.projects if p.id in wanted]
    if changed is None:
        return [Selected(p, "all projects (--all)") for p in root.projects]
    selected = []
    for project in root.projects:
        inputs = sorted(path for path in changed if reads(root, project, path, root_keys))
        if not inputs:
            continue
        first = inputs[0]
        if first == root.settings_file and root_keys is not None:
            first += f" ({', '.join(sorted(inherited(root, project, root_keys)))})"
        more = f" (and {len(inputs) - 1} more)" if len(inputs) > 1 else ""
        selected.append(Selected(project, f"planned because {first} changed{more}"))
    return selected


def changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> set[str]:
    """The settings whose values differ between two tables of the root settings file."""
    return {key for key in set(before) | set(after) if before.get(key) != after.get(key)}


def inherited(root: Root, project: Project, keys: set[str]) -> set[str]:
    """Of the root's changed ``keys``, the ones ``project`` inherits (it does not set them
    itself); a change of ``projects`` concerns every project."""
    if "projects" in keys:
        return {"projects"}
    source = settings_source(root.path / project.dir)
    own = set(source.table) if source is not None else set()
    return keys - own - set(NOT_INHERITED)


def reads(root: Root, project: Project, path: str, root_keys: set[str] | None = None) -> bool:
    """Whether loading ``project``'s configs reads the file ``path`` (relative to the root).
    The root settings file counts when ``root_keys`` (its changed settings; None: unknown)
    holds one the project inherits."""
    if path == root.settings_file:
        return root_keys is None or bool(inherited(root, project, root_keys))
    prefix = project.dir + "/"
    if not path.startswith(prefix):
        return False
    inner = path[len(prefix) :]
    return not (inner == project.state or inner.startswith(OSMOSIS_DIR + "/"))


def _known(root: Root, ids: tuple[str, ...]) -> list[str]:
    by_id = root.by_id()
    for project_id in ids:
        if project_id not in by_id:
            close = closest(project_id, by_id)
            raise UsageError(
                f"--project {project_id}: no such project in {root.settings_file}",
                f"did you mean '{close}'?"
                if close
                else f"known projects: {', '.join(sorted(by_id)) or 'none'}",
            )
    return list(dict.fromkeys(ids))
