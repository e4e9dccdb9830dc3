"""Find the config files under the benchmarks directory.

Every ``*.toml`` below the directory, recursively, sorted by address; hidden files and
folders (a name starting with ``.``) are skipped. A symlink is followed only when it stays
inside the benchmarks directory: one that points outside could make a pull request submit a
config nobody reviewed, so it is an error, as is a dangling one or a loop.

The directory itself is checked from the repository root down, one ``lstat`` per path
component: it must lie inside the repository and no component may be a symlink (a
``benchmarks`` link to a directory elsewhere would be resolved before any comparison, so
every config below it would look "inside"). Entries that can never be configs but are
surely mistakes are reported, not skipped: FIFOs, sockets and devices (reading a FIFO would
block forever) and names that are not UTF-8 (an address must be text).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from reconciler.paths import check_inside, describe_link

CONFIG_SUFFIX = ".toml"
GENERATOR_SUFFIX = ".matrix.toml"


def is_generator(relpath: str) -> bool:
    """A run generator's file name (``config.generator`` expands it; here so a plan of plain
    configs need not import the generator)."""
    return relpath.endswith(GENERATOR_SUFFIX)


def looks_like_generator(parsed: Mapping[str, Any]) -> bool:
    """A plain config with generator tables (G15): it gets one targeted error."""
    return any(key in parsed for key in ("generate", "base", "axis"))


class Found(msgspec.Struct, frozen=True):
    """One config file: its address, its path relative to the repo root, where to read it."""

    address: str
    relpath: str
    fspath: str


class Refused(msgspec.Struct, frozen=True):
    """A directory entry that must not be read, and why."""

    relpath: str
    message: str
    hint: str


class RootError(Exception):
    """The benchmarks directory itself cannot be used (outside the repo, a symlink, a loop)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
_LINK_HINT = (
    "replace the link with the directory itself, so that every config the plan submits "
    "is reviewed in this repository"
)


def special_kind(mode: int) -> str | None:
    """``a FIFO (named pipe)``, ``a socket``, ... for a file that is neither regular nor a directory."""
    for test, kind in _SPECIAL_KINDS:
        if test(mode):
            return kind
    return None


def bad_name_byte(name: str) -> int | None:
    """The first byte of a file name that is not UTF-8 (``os.fsdecode`` kept it as a surrogate)."""
    if name.isascii():
        return None
    raw = os.fsencode(name)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return raw[exc.start]
    return None


def check_root(repo_root: str, rel: str) -> str:
    """The benchmarks directory as an absolute path, checked from the repository root down.

    Raises ``RootError`` when it is outside the repository or any component is a symlink
    (``reconciler.paths.check_inside``), ``FileNotFoundError`` / ``NotADirectoryError``
    when it is missing or not a directory.
    """
    target = os.path.normpath(os.path.join(repo_root, rel))
    problem = check_inside(repo_root, rel)
    if problem is not None:
        if problem.message == "is outside the repository":
            raise RootError(
                f"benchmarks directory '{rel}' is outside the repository",
                "keep the configs in the repository (default: benchmarks/), so that every "
                "config the plan submits is reviewed there",
            )
        if problem.message == "is not a directory":
            raise NotADirectoryError(target)
        where = (
            "benchmarks directory"
            if os.path.join(repo_root, problem.path) == target
            else "path component"
        )
        raise RootError(f"{where} '{problem.path}' {problem.message}", _LINK_HINT)
    if not os.path.lexists(target):
        raise FileNotFoundError(target)
    return target


def _relpath(path: str, repo_root: str) -> str:
    try:
        rel = os.path.relpath(path, repo_root)
    except ValueError:  # another drive on Windows
        return path
    return rel.replace(os.sep, "/")


def discover(repo_root: Path, benchmarks_dir: str) -> tuple[list[Found], list[Refused]]:
    """Walk ``repo_root / benchmarks_dir``; return the configs and the refused entries.

    Raises ``FileNotFoundError`` / ``NotADirectoryError`` when the directory itself is
    missing or is not a directory, ``RootError`` when it must not be read (see
    ``check_root``); the loader turns these into issues.
    """
    # The repository root may itself be reached through a link; everything below it is
    # checked component by component.
    repo = os.path.realpath(repo_root)
    top = check_root(repo, benchmarks_dir)
    top_real = top

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
            byte = bad_name_byte(name)
            if byte is not None:
                refused.append(
                    Refused(
                        _relpath(shown, repo),
                        f"file name is not valid UTF-8 (byte 0x{byte:02x})",
                        "rename it with a UTF-8 name: the address of a config is text, "
                        "recorded in the lockfile",
                    )
                )
                continue
            is_link = entry.is_symlink()
            if is_link:
                target = os.path.realpath(shown)
                if not os.path.exists(target):
                    kind, _text = describe_link(shown)
                    if kind == "loop":
                        refused.append(
                            Refused(
                                _relpath(shown, repo),
                                "symlink loop (it leads back to itself)",
                                "fix or remove the symlink",
                            )
                        )
                    elif name.endswith(CONFIG_SUFFIX):
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
            else:
                try:
                    special = special_kind(entry.stat().st_mode)
                except OSError:
                    special = None
                if special is not None:
                    refused.append(
                        Refused(
                            _relpath(shown, repo),
                            f"is {special}, not a regular file",
                            "remove it from the benchmarks directory: configs are regular files",
                        )
                    )
    found.sort(key=lambda f: f.address)
    refused.sort(key=lambda r: r.relpath)
    return found, refused
