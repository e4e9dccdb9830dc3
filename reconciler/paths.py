"""Paths inside the repository, checked from its root down.

Everything the tool reads as input or writes lives below the repository root: the configs
(``benchmarks/``), the lockfile and its lock (``state/``), downloads (``.osmosis/benchmarks/
<run>/``), the crash log and the embedded Platform's data (``.osmosis/``). A symlink on the
way to any of them could point elsewhere, and a check that resolves the path before
comparing it looks at a path that is already elsewhere (``benchmarks -> /tmp/x`` made every
config under ``/tmp/x`` look "inside"). So every check here starts at the repository root
and looks at each component with ``lstat``: a symlinked component is refused whatever it
points to, and so is a path that leaves the repository (absolute, or through ``..``).

Writers that keep writing after the check (downloads) go further and open each directory
relative to its parent's descriptor with ``O_NOFOLLOW`` (see ``reconciler.outputs.downloads``).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PathProblem", "check_inside", "describe_link"]


@dataclass(frozen=True)
class PathProblem:
    """Why a path below the repository root must not be used."""

    path: str
    """The offending component, relative to the repository root, ``/``-separated."""
    message: str
    """``is a symlink (to /elsewhere)``, ``is a symlink loop ...``, ``is outside the
    repository``, ``is not a directory``: reads after the path, as in ``f"{path} {message}"``."""


def describe_link(path: str | Path) -> tuple[str, str]:
    """What the symlink at ``path`` leads to: (``loop`` | ``missing`` | ``ok``, message)."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "loop", "is a symlink loop (it leads back to itself)"
        return "missing", "is a symlink to a missing path"
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return "ok", f"is a symlink (to {target})"


def check_inside(
    repo_root: str | Path, rel: str | Path, *, last_is_file: bool = False
) -> PathProblem | None:
    """The first problem on the way from ``repo_root`` to ``repo_root / rel``, or None.

    ``repo_root`` is taken as it is (callers resolve it once); each existing component of
    ``rel`` must be a real directory (the last one may be a regular file with
    ``last_is_file``) and none may be a symlink. A component that does not exist yet ends
    the walk without a problem: whoever creates it creates a real directory.
    """
    root = os.fspath(repo_root)
    target = os.path.normpath(os.path.join(root, os.fspath(rel)))
    inside = target == root or target.startswith(root.rstrip(os.sep) + os.sep)
    if not inside:
        return PathProblem(os.fspath(rel).replace(os.sep, "/"), "is outside the repository")
    parts = [p for p in os.path.relpath(target, root).split(os.sep) if p not in ("", ".")]
    current = root
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        shown = "/".join(parts[: index + 1])
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return PathProblem(shown, f"cannot be read: {exc.strerror or exc}")
        if stat.S_ISLNK(st.st_mode):
            return PathProblem(shown, describe_link(current)[1])
        last = index == len(parts) - 1
        if stat.S_ISDIR(st.st_mode) or (last and last_is_file and stat.S_ISREG(st.st_mode)):
            continue
        return PathProblem(
            shown, "is not a directory" if not last or not last_is_file else "is not a regular file"
        )
    return None
