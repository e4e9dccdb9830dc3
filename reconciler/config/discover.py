"""Find the config files under the benchmarks directory.

Every ``*.toml`` below the directory, recursively, sorted by address; hidden files and
folders (a name starting with ``.``) are skipped. A symlink is followed only when it stays
inside the benchmarks directory: one that points outside could make a pull request submit a
config nobody reviewed, so it is an error, as is a dangling one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CONFIG_SUFFIX = ".toml"


@dataclass(frozen=True, slots=True)
class Found:
    """One config file: its address, its path relative to the repo root, where to read it."""

    address: str
    relpath: str
    fspath: str


@dataclass(frozen=True, slots=True)
class Refused:
    """A directory entry that must not be read, and why."""

    relpath: str
    message: str
    hint: str


def _relpath(path: str, repo_root: str) -> str:
    try:
        rel = os.path.relpath(path, repo_root)
    except ValueError:  # another drive on Windows
        return path
    return rel.replace(os.sep, "/")


def discover(repo_root: Path, benchmarks_dir: str) -> tuple[list[Found], list[Refused]]:
    """Walk ``repo_root / benchmarks_dir``; return the configs and the refused entries.

    Raises ``FileNotFoundError`` / ``NotADirectoryError`` when the directory itself is
    missing or is not a directory (the loader turns these into issues).
    """
    root_display = str(repo_root / benchmarks_dir)
    if not os.path.exists(root_display):
        raise FileNotFoundError(root_display)
    if not os.path.isdir(root_display):
        raise NotADirectoryError(root_display)
    repo = os.path.abspath(repo_root)
    top = os.path.abspath(root_display)
    top_real = os.path.realpath(top)

    # Relative paths are built by joining names: os.path.relpath per file is measurably slow.
    top_rel = _relpath(top, repo)
    top_rel = "" if top_rel == "." else top_rel + "/"
    found: list[Found] = []
    refused: list[Refused] = []
    seen_dirs = {top_real}
    # (absolute path as seen through the tree, address prefix)
    stack: list[tuple[str, str]] = [(top, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            refused.append(
                Refused(
                    _relpath(directory, repo),
                    f"cannot list directory: {exc.strerror or exc}",
                    "check the directory's permissions",
                )
            )
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            shown = os.path.join(directory, name)
            is_link = entry.is_symlink()
            if is_link:
                target = os.path.realpath(shown)
                if not os.path.exists(target):
                    if name.endswith(CONFIG_SUFFIX):
                        refused.append(
                            Refused(
                                _relpath(shown, repo),
                                "symlink points to a missing file",
                                "fix or remove the symlink",
                            )
                        )
                    continue
                if target != top_real and not target.startswith(top_real + os.sep):
                    refused.append(
                        Refused(
                            _relpath(shown, repo),
                            "symlink points outside the benchmarks directory",
                            "copy the config into the benchmarks directory instead of linking it, "
                            "so that every submitted config is reviewed in this repository",
                        )
                    )
                    continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                real = os.path.realpath(shown)
                if real in seen_dirs:
                    continue  # a symlink loop or a second link to the same folder
                seen_dirs.add(real)
                stack.append((shown, f"{prefix}{name}/"))
            elif name.endswith(CONFIG_SUFFIX) and entry.is_file():
                found.append(
                    Found(
                        f"{prefix}{name[: -len(CONFIG_SUFFIX)]}", f"{top_rel}{prefix}{name}", shown
                    )
                )
    found.sort(key=lambda f: f.address)
    refused.sort(key=lambda r: r.relpath)
    return found, refused
