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

The rest of the layer:

* ``relative_path_problem`` says why a string read from a file (a lockfile address, a
  download directory, a manifest path) cannot be a relative path below a root: absolute,
  ``..`` or ``.`` or empty components, backslashes, NUL and control characters. Readers
  refuse such values when they read them, before anything joins them to a path.
* ``read_regular`` is how a command reads a file it was given (a saved plan, settings, a
  commit message, a lockfile): a regular file, never a FIFO or a device (``/dev/zero``
  read until memory ran out, a FIFO blocked forever), of at most ``max_bytes``, opened
  without following a final symlink when asked to stay in the repository.
* ``write_inside`` writes a file below the repository root: every existing component
  checked from the root down, directories created as real directories, the file itself
  never written through a symlink.
* ``read_named`` and ``write_named`` are for a path the user names on the command line (a
  saved plan, ``--out``, ``--html``, a body file): it may be anywhere, but it is never
  reached through a symlink (each component as written is checked with ``lstat``, from the
  current directory for a relative path, from ``/`` for an absolute one). A file a pull
  request commits as a link to ``/etc/...`` or ``~/.ssh/...`` is then never read or
  overwritten because a workflow step named its path.

Every command reads and writes through these (issue 36): the configs, the lockfile, the
kept results and the downloads as repository files (``check_inside``, ``read_regular`` with
``repo_root``, ``write_inside``), everything else as named files. docs/limits.md, "Files",
lists the caps.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

import msgspec

from reconciler.errors import ReconcilerError, UsageError


class UnsafeInputError(UsageError):
    """A file a command was given cannot be read safely (not regular, too large, outside)."""


__all__ = [
    "MAX_INPUT_BYTES",
    "PathProblem",
    "UnsafeInputError",
    "check_inside",
    "check_named",
    "describe_link",
    "read_named",
    "read_regular",
    "relative_path_problem",
    "write_inside",
    "write_named",
]

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""Default cap on a file a command reads whole (a saved plan, a message, a lockfile)."""


class PathProblem(msgspec.Struct, frozen=True):
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
            shown,
            "is not a directory"
            if not last or not last_is_file
            else f"is {_kind(st.st_mode)}, not a regular file",
        )
    return None


def relative_path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a ``/``-separated relative path below a root, or None.

    Reads after the value, as in ``f"{value!r} {problem}"``.
    """
    if not value:
        return "is empty"
    if "\0" in value:
        return "contains a NUL character"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "contains a control character"
    if "\\" in value:
        return "contains a backslash (paths are /-separated)"
    if value.startswith("/") or (len(value) > 1 and value[1] == ":"):
        return "is an absolute path (it must be relative)"
    if any(part in ("", ".", "..") for part in value.split("/")):
        return "has an empty, '.' or '..' component"
    if len(value) > 4096 or any(
        len(part.encode("utf-8", "surrogatepass")) > 255 for part in value.split("/")
    ):
        return "is too long"
    return None


def _kind(mode: int) -> str:
    """``a FIFO``, ``a device``, ...: what a path that should be a regular file is."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def read_regular(
    path: str | Path,
    *,
    what: str,
    max_bytes: int = MAX_INPUT_BYTES,
    repo_root: str | Path | None = None,
    error: type[ReconcilerError] = UnsafeInputError,
    follow: bool = True,
) -> bytes:
    """The bytes of the regular file ``path`` (``what`` names it in errors).

    Refused, with ``error``: a FIFO, device, socket or directory (opened without blocking,
    so a FIFO with no writer cannot hang the command), a file over ``max_bytes``, and with
    ``repo_root`` a path that leaves the repository or has a symlink on the way (checked
    from the root down, the file opened with ``O_NOFOLLOW``; ``follow=False`` opens it so
    without a root). A missing file raises ``FileNotFoundError`` as ``open`` would.
    """
    shown = os.fspath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    if repo_root is not None:
        root = os.fspath(repo_root)
        full = os.path.abspath(shown)
        rel = os.path.relpath(full, root)
        problem = check_inside(root, rel, last_is_file=True)
        if problem is not None:
            raise error(
                f"{what} {shown}: {problem.path} {problem.message}",
                "use a regular file inside the repository (no symlinks on the way)",
            )
        flags |= getattr(os, "O_NOFOLLOW", 0)
    if "\0" in shown:
        raise error(f"{what} {shown!r}: the path contains a NUL character", "fix the path")
    try:
        fd = os.open(shown, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{what} {shown}: is a symlink", "use the file itself") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(
                f"{what} {shown}: is {_kind(st.st_mode)}, not a regular file",
                "pass a regular file",
            )
        if st.st_size > max_bytes:
            raise error(
                f"{what} {shown}: is {st.st_size:,} bytes, more than the {max_bytes:,} allowed",
                "pass the right file; it cannot be this large",
            )
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise error(
                    f"{what} {shown}: more than the {max_bytes:,} bytes allowed",
                    "pass the right file; it cannot be this large",
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_inside(repo_root: str | Path, rel: str, data: bytes) -> Path:
    """Write ``data`` to ``repo_root / rel`` (``/``-separated, relative) safely; the path.

    ``rel`` must pass ``relative_path_problem``; every existing component on the way must
    be a real directory (the file itself a regular file or absent), checked from the root
    down before and after the missing directories are created; the file is opened with
    ``O_NOFOLLOW`` and written whole through a temporary file and a rename.
    """
    problem = relative_path_problem(rel)
    if problem is not None:
        raise UnsafeInputError(f"{rel!r} {problem}", "write inside the repository only")
    root = os.fspath(repo_root)
    for attempt in ("before", "after"):
        found = check_inside(root, rel, last_is_file=True)
        if found is not None:
            raise UnsafeInputError(
                f"{found.path} {found.message}: refusing to write {rel} through it",
                f"replace {found.path} with a real directory (or remove it) in the repository",
            )
        if attempt == "before":
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
    target = os.path.join(root, rel)
    directory = os.path.dirname(target)
    temp = os.path.join(directory, f".{os.path.basename(rel)}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return Path(target)


def check_named(
    path: str | Path, *, what: str, error: type[ReconcilerError] = UnsafeInputError
) -> None:
    """Refuse (``error``) a path the user named that is reached through a symlink.

    Each component as written is looked at with ``lstat``, in order, from the current
    directory (a relative path) or from ``/``: the first symlink is refused, whatever it
    points to, and so is a NUL. A component that does not exist ends the walk (whoever
    writes creates it). ``..`` is taken as written, after the components before it were
    found to be real directories, so it cannot lead back out through a link.
    """
    shown = os.fspath(path)
    if "\0" in shown:
        raise error(f"{what} {shown!r}: the path contains a NUL character", "fix the path")
    parts = shown.split(os.sep)
    current = os.sep if shown.startswith(os.sep) else ""
    for part in parts:
        if part in ("", "."):
            continue
        current = os.path.join(current, part) if current else part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise error(
                    f"{what} {shown[:200]}...: the path is too long", "fix the path"
                ) from None
            return  # left for the open to report
        if stat.S_ISLNK(st.st_mode):
            raise error(
                f"{what} {shown}: {current} {describe_link(current)[1]}",
                "name the file by a path without symbolic links (the link's target itself)",
            )


def read_named(
    path: str | Path,
    *,
    what: str,
    max_bytes: int = MAX_INPUT_BYTES,
    error: type[ReconcilerError] = UnsafeInputError,
) -> bytes:
    """The bytes of a regular file the user named (``check_named``, then ``read_regular``
    opening it with ``O_NOFOLLOW``)."""
    check_named(path, what=what, error=error)
    return read_regular(path, what=what, max_bytes=max_bytes, error=error, follow=False)


def write_named(
    path: str | Path,
    data: bytes,
    *,
    what: str,
    error: type[ReconcilerError] = UnsafeInputError,
) -> Path:
    """Write ``data`` to a path the user named (``--out``, ``--html``): anywhere, but never
    through a symlink. Missing directories are created one at a time and the path checked
    again after; the file is written whole through a temporary file (``O_EXCL``,
    ``O_NOFOLLOW``) renamed over it, so a reader never sees half of it."""
    shown = os.fspath(path)
    check_named(shown, what=what, error=error)
    directory = os.path.dirname(shown) or "."
    os.makedirs(directory, exist_ok=True)
    check_named(shown, what=what, error=error)
    try:
        mode = os.lstat(shown).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        # Renamed over, /dev/null would become a file (for root, in a CI container).
        raise error(f"{what} {shown}: is {_kind(mode)}, not a regular file", "name a regular file")
    name = os.path.basename(shown)
    temp = os.path.join(directory, f".{name}.{os.getpid()}.partial")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # left by a killed run of this same pid number
    fd = os.open(temp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, shown)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return Path(shown)
