"""The safe tree: a run directory opened from the repository root down, one component at a time, never through a symlink."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from reconciler.errors import (
    DownloadError,
)
from reconciler.outputs.layout import (
    is_within,
)
from reconciler.outputs.seam import (
    MSG_SYMLINK,
    FileFailed,
)
from reconciler.paths import check_inside

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _mkdir(name: str, dir_fd: int) -> bool:
    """Make the directory ``name`` in ``dir_fd``: whether this call made it."""
    try:
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    except FileExistsError:
        return False
    return True


class RunTree:
    """Which paths below a run directory are safe to write: none may lead outside it.

    The way to the run directory is checked from ``anchor`` (the repository root) down:
    ``.osmosis``, ``.osmosis/benchmarks`` and the run directory itself must be real
    directories, never symlinks, whatever they point to (resolving the run directory first
    made a linked one look like the root of its own tree). ``open_dir`` then opens every
    directory one component at a time relative to its parent's descriptor with
    ``O_NOFOLLOW``, creating what is missing with ``mkdirat``, so no symlink planted on the
    way after the check can redirect a write.

    Below the run directory, paths are POSIX and relative to it (manifest paths, already
    checked by ``classify_path``). Each directory is looked at once per ``download_run``
    call, with one ``lstat`` per segment not seen before; only a symlink is resolved, and it
    must point inside the run directory. (Resolving every destination walked the whole path
    from ``/`` per file: a tenth of the CPU time of downloading small files.) A directory
    that does not exist yet is not remembered, so it is checked again once created.
    """

    def __init__(self, run_dir: Path, anchor: Path) -> None:
        self.run_dir = run_dir
        self.anchor = anchor
        self.top = str(run_dir)
        self._safe: set[str] = {""}
        self._lock = threading.Lock()
        self._run_fd: int | None = None
        self._run_created = False

    @cached_property
    def root(self) -> Path:
        """The run directory, resolved: asked for only when a symlink is found below it
        (resolving walks the whole path from ``/``, a tenth of a small download's CPU)."""
        return self.run_dir.resolve(strict=False)

    def absent(self) -> bool:
        """Whether the run directory does not exist (yet): nothing below it can be on disk,
        so a first download need not look at each of its paths."""
        try:
            os.lstat(self.run_dir)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return False

    def check_root(self) -> None:
        """Raise ``DownloadError`` unless the way from the anchor to the run directory is
        free of symlinks and stays inside the anchor."""
        problem = check_inside(self.anchor, os.path.relpath(self.run_dir, self.anchor))
        if problem is not None:
            raise DownloadError(
                f"{problem.path} {problem.message}: downloads are written only inside the "
                "repository",
                f"replace {problem.path} with a real directory (or remove it); the next apply "
                "downloads the outputs again",
            )

    def open_dir(self, rel: str) -> tuple[int, bool]:
        """Open (creating as needed) the directory ``rel`` of the run: a new descriptor, and
        whether the directory itself was created by this call.

        Raises ``FileFailed`` when a component is a symlink that is not allowed, OSError
        when the file system refuses.
        """
        if self._run_fd is None:
            parts = Path(os.path.relpath(self.run_dir, self.anchor)).parts
            # The anchor is the caller's own root (the repository): created like mkdir -p.
            os.makedirs(self.anchor, exist_ok=True)
            anchor_fd = os.open(self.anchor, DIR_FLAGS)
            try:
                self._run_fd, self._run_created = self._walk(anchor_fd, parts, below_run=False)
            finally:
                os.close(anchor_fd)
        if not rel:
            return os.dup(self._run_fd), self._run_created
        return self._walk(self._run_fd, tuple(rel.split("/")), below_run=True)

    def _walk(self, base_fd: int, parts: Sequence[str], *, below_run: bool) -> tuple[int, bool]:
        fd = os.dup(base_fd)
        created = False
        try:
            for index, part in enumerate(parts):
                try:
                    # In a directory made just now the next one is not there yet: make it
                    # at once instead of failing to open it first.
                    created = created and _mkdir(part, fd)
                    child = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    created = _mkdir(part, fd)
                    child = os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    # ELOOP: a symlink (O_NOFOLLOW); ENOTDIR: a file, or a link to one.
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    # Below the run directory a symlink that stays inside it is allowed.
                    if not below_run or not self.dir_ok("/".join(parts[: index + 1])):
                        raise FileFailed(MSG_SYMLINK, retry=False) from None
                    child = os.open(part, DIR_FLAGS, dir_fd=fd)
                    created = False
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd, created

    def close(self) -> None:
        if self._run_fd is not None:
            os.close(self._run_fd)
            self._run_fd = None

    def dir_ok(self, rel: str) -> bool:
        with self._lock:
            if rel in self._safe:
                return True
        parent = rel.rpartition("/")[0]
        if not self.dir_ok(parent):
            return False
        state, _ = self._look(rel)
        if state is None:  # not there yet: whoever creates it checks again
            return True
        if state:
            with self._lock:
                self._safe.add(rel)
        return state

    def file(self, rel: str) -> tuple[bool, os.stat_result | None]:
        """Whether writing the file ``rel`` is safe, and its ``lstat`` when it exists.

        Safe: its directories are, and the file is not a symlink leading outside.
        """
        if not self.dir_ok(rel.rpartition("/")[0]):
            return False, None
        inside, st = self._look(rel)
        return inside is not False, st

    def _look(self, rel: str) -> tuple[bool | None, os.stat_result | None]:
        """``(None, None)`` when ``rel`` does not exist; else whether it stays inside the
        run directory, and its ``lstat``."""
        path = os.path.join(self.top, rel)  # rel has no "." or ".." segments
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None, None
        except OSError:  # e.g. not a directory: creating or writing it fails clearly
            return True, None
        if stat.S_ISLNK(st.st_mode):
            return is_within(Path(path).resolve(strict=False), self.root), st
        return True, st
