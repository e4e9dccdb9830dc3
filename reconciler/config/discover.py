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

from reconciler.escaping import escape_text
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


def unprintable(found: list[Found]) -> tuple[list[Found], list[Refused]]:
    """The configs whose address prints as itself, and the others refused (issue 36).

    An address with a control character (an escape sequence, a newline), a bidirectional
    override or a backslash in its path was planned, applied and recorded, and then could
    not be named to ``osmosis-state`` (it is printed escaped everywhere). Refused here, by
    file, before anything is planned or paid; addresses already recorded so can still be
    edited (``osmosis-state`` takes them exact or as printed)."""
    kept: list[Found] = []
    refused: list[Refused] = []
    for item in found:
        shown = escape_text(item.address)
        if shown == item.address:
            kept.append(item)
            continue
        bad = next(c for c in item.address if escape_text(c) != c)
        refused.append(
            Refused(
                item.relpath,
                f"the path holds {_char_kind(bad)} ({escape_text(bad)}), so its address "
                f"{shown} cannot be typed or printed as it is",
                "rename the file (and its directories) with printable characters: an "
                "address is the config's path, recorded in the lockfile and named to "
                "osmosis-state",
            )
        )
    return kept, refused


def _char_kind(char: str) -> str:
    if char == "\\":
        return "a backslash"
    if ord(char) < 32 or 0x7F <= ord(char) <= 0x9F:
        return "a control character"
    if char in "\u2028\u2029":
        return "a line separator"
    return "a bidirectional control"


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
    return _Walk(repo, check_root(repo, benchmarks_dir)).run()


class _Walk:
    """One walk of the benchmarks directory ``top`` (absolute, checked) in ``repo``."""

    def __init__(self, repo: str, top: str) -> None:
        self.repo = repo
        self.top = top
        # Relative paths are built by joining names: os.path.relpath per file is
        # measurably slow.
        top_rel = _relpath(top, repo)
        self.top_rel = "" if top_rel == "." else top_rel + "/"
        self.found: list[Found] = []
        self.refused: list[Refused] = []
        self.seen_dirs = {top}

    def run(self) -> tuple[list[Found], list[Refused]]:
        # (absolute path as seen through the tree, address prefix)
        stack: list[tuple[str, str]] = [(self.top, "")]
        while stack:
            directory, prefix = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError as exc:
                self.refuse(
                    directory,
                    f"cannot list directory: {exc.strerror or exc}",
                    "check the directory's permissions",
                )
                continue
            for entry in entries:
                below = self.visit(entry, directory, prefix)
                if below is not None:
                    stack.append(below)
        self.found.sort(key=lambda f: f.address)
        self.refused.sort(key=lambda r: r.relpath)
        return self.found, self.refused

    def refuse(self, shown: str, message: str, hint: str) -> None:
        self.refused.append(Refused(_relpath(shown, self.repo), message, hint))

    def visit(self, entry: os.DirEntry[str], directory: str, prefix: str) -> tuple[str, str] | None:
        """Record one entry (a config, or why it is refused): a directory to walk next."""
        name = entry.name
        if name.startswith("."):
            return None
        shown = os.path.join(directory, name)
        byte = bad_name_byte(name)
        if byte is not None:
            self.refuse(
                shown,
                f"file name is not valid UTF-8 (byte 0x{byte:02x})",
                "rename it with a UTF-8 name: the address of a config is text, "
                "recorded in the lockfile",
            )
            return None
        if entry.is_symlink() and not self.link_inside(shown, name):
            return None
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            real = os.path.realpath(shown)
            if real in self.seen_dirs:
                return None  # a symlink loop or a second link to the same folder
            self.seen_dirs.add(real)
            return shown, f"{prefix}{name}/"
        if name.endswith(CONFIG_SUFFIX) and entry.is_file():
            address = f"{prefix}{name[: -len(CONFIG_SUFFIX)]}"
            self.found.append(Found(address, f"{self.top_rel}{prefix}{name}", shown))
            return None
        try:
            special = special_kind(entry.stat().st_mode)
        except OSError:
            special = None
        if special is not None:
            self.refuse(
                shown,
                f"is {special}, not a regular file",
                "remove it from the benchmarks directory: configs are regular files",
            )
        return None

    def link_inside(self, shown: str, name: str) -> bool:
        """Whether a symlink leads to an existing path inside the benchmarks directory; a
        loop, a missing config or a path outside is refused."""
        target = os.path.realpath(shown)
        if not os.path.exists(target):
            kind, _text = describe_link(shown)
            if kind == "loop":
                self.refuse(
                    shown, "symlink loop (it leads back to itself)", "fix or remove the symlink"
                )
            elif name.endswith(CONFIG_SUFFIX):
                self.refuse(shown, "symlink points to a missing file", "fix or remove the symlink")
            return False
        if target != self.top and not target.startswith(self.top + os.sep):
            self.refuse(
                shown,
                "symlink points outside the benchmarks directory",
                "copy the config into the benchmarks directory instead of linking it, "
                "so that every submitted config is reviewed in this repository",
            )
            return False
        return True
