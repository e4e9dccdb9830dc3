"""Which projects a command at the root runs, and why.

``--all`` (the default), ``--project ID`` (repeatable) or ``--changed-since REF``: the
projects whose inputs changed. A project's inputs are what loading its configs reads
(``config.project.load_project_settings``, ``config.load_configs``): every file in its
directory (its settings file, its configs and generators under ``benchmarks/``) except what
the reconciler writes there (its lockfile, ``.osmosis/``), and the root settings file it
inherits defaults and policy from. A change to the root settings file selects every project.
"""

from __future__ import annotations

from dataclasses import dataclass

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
) -> list[Selected]:
    """The selected projects, in ``after`` order (see the module docstring)."""
    by_id = root.by_id()
    if failed is not None:
        return [
            Selected(by_id[i], "failed in the last apply (--failed)")
            for i in _known(root, tuple(i for i in failed if i in by_id))
        ]
    if ids:
        wanted = set(_known(root, ids))
        return [Selected(p, "selected with --project") for p in root.projects if p.id in wanted]
    if changed is None:
        return [Selected(p, "all projects (--all)") for p in root.projects]
    selected = []
    for project in root.projects:
        inputs = sorted(path for path in changed if reads(root, project, path))
        if not inputs:
            continue
        more = f" (and {len(inputs) - 1} more)" if len(inputs) > 1 else ""
        selected.append(Selected(project, f"planned because {inputs[0]} changed{more}"))
    return selected


def reads(root: Root, project: Project, path: str) -> bool:
    """Whether loading ``project``'s configs reads the file ``path`` (relative to the root)."""
    if path == root.settings_file:
        return True
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
