"""The apply lock ``state/.osmosis.lock.held``: one ``osmosis-apply`` at a time.

Two layers, each for what it is good at:

* an OS lock (``fcntl.flock``, exclusive, non-blocking, polled until the timeout) decides
  who holds the lock. The kernel drops it when the holder dies, however it dies, so a lock
  left by a killed apply never blocks the next one;
* holder JSON written into the same file after the lock is taken (lock id, pid, host,
  command, CI run URL, start time) tells a waiting user who holds it and which id to pass to
  ``osmosis-apply --force-unlock``. A dead holder's JSON is simply overwritten.

The file is removed on release. Because a waiter may have opened the old file before it was
removed, whoever takes the flock checks that its descriptor is still the file at the path
and starts over if not; otherwise two processes could each hold a lock on a different inode.

``osmosis-plan`` never takes this lock.

Which lock guards an apply depends on where the Platform lives (``choose_lock``): the
embedded Platform lives in its clone, so the clone's own lock is the whole guard; a loopback
Platform lives on one machine, so by default a machine-wide lock in the user's runtime (or
cache) directory keyed by the Platform URL and workspace (``machine_lock_path``) makes two
clones on that machine exclude each other, and nothing is written to any remote; a real
Platform is shared by machines, so the git lock (``gitlock``) is added whenever ``origin``
exists. ``lock = "local"`` keeps to the clone's lock; ``lock = "git"`` asks for the git lock
(against a loopback Platform too, which is how its tests run).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from reconciler.errors import LockHeldError, StateError, UsageError
from reconciler.loopback import is_loopback_url

__all__ = [
    "LockInfo",
    "LockKind",
    "choose_lock",
    "ci_run_url",
    "force_unlock",
    "hold_lock",
    "machine_lock_dir",
    "machine_lock_path",
    "read_holder",
]

EMBEDDED_PLATFORM = "local"
"""``Context.platform_id`` of the embedded Platform."""


class LockKind(Enum):
    """Which lock guards an apply against one (Platform, workspace)."""

    CLONE = "clone"
    """The clone's own OS lock (``state/.osmosis.lock.held``) only."""
    MACHINE = "machine"
    """A machine-wide OS lock keyed by Platform URL and workspace (a loopback Platform)."""
    GIT = "git"
    """The clone's OS lock plus the git lock on ``origin`` (``gitlock``)."""


def choose_lock(
    mode: str | None, platform: str, *, has_origin: bool | Callable[[], bool]
) -> LockKind:
    """The lock for ``platform`` (``Context.platform_id``) under the ``lock`` setting.
    ``has_origin`` may be a function, asked only when the choice depends on it (a git call
    a command against a local or loopback Platform does not need to make)."""
    ask = has_origin if callable(has_origin) else lambda: bool(has_origin)
    if platform == EMBEDDED_PLATFORM:
        return LockKind.CLONE  # its data is in this clone: no other clone can reach it
    if mode == "local":
        return LockKind.CLONE
    if mode == "git":
        if not ask():
            raise UsageError(
                'lock = "git" in [tool.osmosis-reconciler], but the repository has no origin '
                "remote",
                "add the remote that everyone pushes to (`git remote add origin URL`), "
                'or set lock = "local"',
            )
        return LockKind.GIT
    if is_loopback_url(platform):
        return LockKind.MACHINE
    return LockKind.GIT if ask() else LockKind.CLONE


def machine_lock_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where machine-wide locks live: ``$XDG_RUNTIME_DIR`` (per user, cleared at logout),
    else ``$XDG_CACHE_HOME`` or ``~/.cache``; under ``osmosis-reconciler/locks``."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_dir():
        base = Path(runtime)
    else:
        base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "osmosis-reconciler" / "locks"


def machine_lock_path(
    platform: str,
    workspace: str,
    env: Mapping[str, str] | None = None,
    project: str | None = None,
) -> Path:
    """The machine-wide apply lock of one loopback Platform, workspace and project (the
    project's id in a repository of many; None keeps the key of a repository of one)."""
    text = f"{platform.rstrip('/')}\n{workspace.strip()}"
    if project is not None:
        text += f"\n{project}"
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return machine_lock_dir(env) / f"{key}.held"


_POLL_FIRST = 0.05
_POLL_MAX = 0.5


@dataclass(frozen=True)
class LockInfo:
    """Who holds the apply lock; written as JSON into the lock file."""

    lock_id: str
    """Random id; the argument of ``osmosis-apply --force-unlock``."""
    pid: int
    host: str
    command: str
    """The command line of the holder, e.g. ``osmosis-apply --auto-approve``."""
    ci_url: str | None
    """The CI run that holds the lock (GitHub Actions run URL), when there is one."""
    started_at: str
    """UTC RFC 3339 time the lock was taken."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ci_run_url(env: Mapping[str, str] | None = None) -> str | None:
    """The GitHub Actions run URL from the standard variables, when all are present."""
    env = os.environ if env is None else env
    server = env.get("GITHUB_SERVER_URL", "").rstrip("/")
    repository = env.get("GITHUB_REPOSITORY", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    if server and repository and run_id:
        return f"{server}/{repository}/actions/runs/{run_id}"
    return None


def read_holder(path: Path) -> dict | None:
    """The holder JSON in the lock file, or None when there is no (readable) holder."""
    try:
        data = Path(path).read_bytes()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return None
    if not data.strip():
        return None
    try:
        holder = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # being written right now, or garbage: either way nobody we can name
    return holder if isinstance(holder, dict) else None


def _describe_holder(path: Path, holder: Mapping[str, Any] | None) -> str:
    if not holder:
        return f"the apply lock {path} is held by another process (holder details not written yet)"
    text = (
        f"the apply lock {path} is held by pid {holder.get('pid', '?')} on "
        f"{holder.get('host', '?')} running `{holder.get('command', '?')}` since "
        f"{holder.get('started_at', '?')} (lock id {holder.get('lock_id', '?')})"
    )
    if holder.get("ci_url"):
        text += f"; CI run: {holder['ci_url']}"
    return text


def _held_error(path: Path, timeout: float) -> LockHeldError:
    holder = read_holder(path)
    # The holder writes its details right after taking the lock: a contender that arrives
    # in between gives it a moment rather than reporting an anonymous holder.
    for _ in range(50):
        if holder:
            break
        time.sleep(0.01)
        holder = read_holder(path)
    lock_id = (holder or {}).get("lock_id") or "<LOCK_ID>"
    waited = f" after waiting {timeout:g}s" if timeout > 0 else ""
    return LockHeldError(
        _describe_holder(path, holder) + waited,
        "wait for that apply to finish, retry with --lock-timeout SECONDS to wait for it, "
        f"or, if you are sure no apply is running: osmosis-apply --force-unlock {lock_id}",
        holder=holder or {},
    )


def _open_lock_file(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_CLOEXEC (the default for os.open) keeps child processes from inheriting the lock.
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _still_at_path(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path`` (the holder may have removed it)."""
    try:
        at_path = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (at_path.st_dev, at_path.st_ino)


def _acquire(path: Path, timeout: float, on_wait: Callable[[dict], None] | None) -> int:
    deadline = time.monotonic() + max(timeout, 0.0)
    delay = _POLL_FIRST
    told = False
    while True:
        fd = _open_lock_file(path)
        try:
            if _try_flock(fd):
                if _still_at_path(fd, path):
                    return fd
                os.close(fd)  # we locked a file the previous holder already removed
                continue
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        now = time.monotonic()
        if now >= deadline:
            raise _held_error(path, timeout)
        if not told and on_wait is not None:
            told = True
            on_wait(read_holder(path) or {})
        time.sleep(min(delay, deadline - now))
        delay = min(delay * 2, _POLL_MAX)


def _write_holder(fd: int, info: LockInfo) -> None:
    data = (json.dumps(info.to_dict(), indent=2, sort_keys=True) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)


@contextmanager
def hold_lock(
    path: Path,
    *,
    timeout: float = 0.0,
    command: str,
    on_wait: Callable[[dict], None] | None = None,
    ci_url: str | None = None,
) -> Iterator[LockInfo]:
    """Hold the apply lock for the duration of the ``with`` block.

    Waits up to ``timeout`` seconds (0: do not wait) and then raises ``LockHeldError``
    naming the holder. ``on_wait`` is called once with the holder's details when the lock
    is busy and we are about to wait, so the CLI can say so. ``ci_url`` defaults to the
    GitHub Actions run URL from the environment.
    """
    path = Path(path)
    fd = _acquire(path, timeout, on_wait)
    try:
        info = LockInfo(
            lock_id=str(uuid.uuid4()),
            pid=os.getpid(),
            host=socket.gethostname(),
            command=command,
            ci_url=ci_url if ci_url is not None else ci_run_url(),
            started_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        _write_holder(fd, info)
        yield info
    finally:
        # Remove the file while still holding the flock: a waiter that then locks the old
        # inode sees it is no longer at the path and retries on a fresh file.
        try:
            if _still_at_path(fd, path):
                os.unlink(path)
        except OSError:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
        finally:
            os.close(fd)  # closing the last descriptor releases the flock


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def force_unlock(path: Path, lock_id: str) -> None:
    """Remove the apply lock, but only the one whose holder has ``lock_id``.

    Refused when the id does not match, and when the holder process is still alive on this
    host and still holds the OS lock (breaking it would let two applies run at once).
    """
    path = Path(path)
    holder = read_holder(path)
    if holder is None:
        raise UsageError(
            f"no apply lock is held at {path}",
            "nothing to unlock; run osmosis-apply again",
        )
    if holder.get("lock_id") != lock_id:
        raise UsageError(
            f"lock id {lock_id} does not match the holder of {path} "
            f"(lock id {holder.get('lock_id', '?')})",
            "copy the lock id from the error that reported the held lock; "
            + _describe_holder(path, holder),
        )
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return  # released between our read and now: nothing left to do
    try:
        if _try_flock(fd):
            # Nobody holds the OS lock: the holder is gone and left its JSON behind.
            if _still_at_path(fd, path):
                os.unlink(path)
            return
        same_host = holder.get("host") == socket.gethostname()
        pid = holder.get("pid")
        if same_host and isinstance(pid, int) and pid_alive(pid):
            raise LockHeldError(
                f"{_describe_holder(path, holder)}; that process is still running",
                f"let it finish or stop it (kill {pid}), then run osmosis-apply again",
                holder=holder,
            )
        # The OS lock is held by a process that is not the recorded holder (another host
        # over a shared filesystem, or a leaked descriptor). The user asked to force it:
        # removing the path lets the next apply lock a fresh file.
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StateError(
                f"cannot remove {path}: {exc.strerror}", "remove the file by hand"
            ) from None
    finally:
        os.close(fd)
