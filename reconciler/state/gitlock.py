"""The apply lock across machines: a lock ref on the git remote, taken and released with
atomic compare-and-swap pushes.

The local OS lock (``locking``) excludes two applies on one machine; it cannot see a
laptop and a CI runner applying the same repository at once, and both would pay for the
same config. The lockfile already lives on the git remote, so the remote is the natural
place for a lock that all of them see: no server of our own, only ``git push``.

Two refs on ``origin`` per (Platform, workspace), never branches (nothing checks them out,
no workflow runs on them), named ``refs/osmosis/<key>/lock`` and ``refs/osmosis/<key>/state``
where ``key`` is a digest of the Platform URL and the workspace (``GuardedRefs``). They guard
that Platform's runs, not the remote: a try-out against another Platform never touches them,
and two workspaces applied from one repository do not wait for each other.

* ``lock``: exists while an apply holds the lock. It points at a commit
  whose tree holds ``holder.json`` (lock id, pid, host, command, CI run URL, started,
  expires). It is created with ``git push --force-with-lease=refs/osmosis/lock:`` (the
  empty lease: "only if it does not exist"), renewed and deleted with the lease set to the
  commit we pushed last. The receiving git checks the old value under its ref lock, so of
  two pushes racing for the same ref exactly one wins; that is the compare-and-swap.
* ``state``: the lockfile as the last holder left it (``osmosis.lock``, and
  ``applied.json`` with its lineage and serial), updated in the same atomic push that
  deletes the lock. The next holder checks its own lockfile against it: a checkout that is
  behind (the last apply's lockfile commit not pulled yet, or never pushed) would plan to
  pay again for runs it does not know about, so it is refused with the command that brings
  the lockfile in.

A holder renews its lock every ``ttl / 3`` seconds. A lock is taken over when its holder
is dead (same host, pid gone), when its ``expires_at`` has passed (allowing ``CLOCK_SKEW``
between machines), or when a waiter has watched it unchanged for longer than ``ttl`` (its
own clock: no skew at all). A holder whose renewal is refused has lost the lock and says
so through ``on_lost`` (the apply stops starting new actions).

Which lock applies is ``locking.choose_lock``'s decision: never for the embedded Platform
(it lives in its clone) nor, unless ``lock = "git"`` is set, for a loopback Platform (it lives
on one machine); for a real Platform whenever ``origin`` exists.

Refs written by older versions (``refs/osmosis/lock`` and ``refs/osmosis/state``, keyed by
the remote alone) are read once: a legacy state record whose lockfile names this Platform and
workspace is checked like the new one and moved to the new name by the release's atomic push
(``LEGACY_STATE_REF`` deleted under a lease); one of another Platform (a try-out's, pushed by
an older version) is ignored, never allowed to refuse this Platform's apply.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from reconciler.errors import GitError, LockHeldError, StateError, UsageError
from reconciler.gitinfo import BASE, git_env, redact_url
from reconciler.log import get_logger
from reconciler.state.locking import pid_alive as _pid_alive

__all__ = [
    "CLOCK_SKEW",
    "LEGACY_LOCK_REF",
    "LEGACY_STATE_REF",
    "REMOTE",
    "GitLock",
    "GuardedRefs",
    "read_state_record",
    "force_unlock_any",
    "force_unlock_git",
    "hold_git_lock",
    "read_git_holder",
]

REMOTE = "origin"
LEGACY_LOCK_REF = "refs/osmosis/lock"
"""The lock ref of versions that keyed the lock by the remote alone (read, never written)."""
LEGACY_STATE_REF = "refs/osmosis/state"
"""Their state record: read once and migrated to ``GuardedRefs.state``."""
_SEEN_LEGACY_STATE = "refs/osmosis-seen/legacy-state"
CLOCK_SKEW = timedelta(seconds=10)
"""How far another machine's clock may be ahead of ours before its expiry counts."""
_TIMEOUT = 60.0
_POLL_FIRST = 0.2
_POLL_MAX = 2.0
_IDENTITY = {
    "GIT_AUTHOR_NAME": "osmosis-reconciler",
    "GIT_AUTHOR_EMAIL": "osmosis-reconciler@localhost",
    "GIT_COMMITTER_NAME": "osmosis-reconciler",
    "GIT_COMMITTER_EMAIL": "osmosis-reconciler@localhost",
}
_HEADER_RE = re.compile(r'^lineage = "([^"]*)"\s*$.*?^serial = (\d+)\s*$', re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class GuardedRefs:
    """The lock and state refs of one (Platform, workspace) on ``origin``."""

    platform: str
    """The normalised Platform URL (``Context.platform_id``)."""
    workspace: str
    """The workspace label recorded in the lockfile."""
    project: str | None = None
    """The project's id in a repository of many projects (``reconciler.projects``); None
    (one project) keeps the key every earlier version used."""

    @property
    def key(self) -> str:
        """A digest of all three: ref names cannot hold a URL, and all must name the refs."""
        text = f"{self.platform.rstrip('/')}\n{self.workspace.strip()}"
        if self.project is not None:
            text += f"\n{self.project}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def lock(self) -> str:
        return f"refs/osmosis/{self.key}/lock"

    @property
    def state(self) -> str:
        return f"refs/osmosis/{self.key}/state"

    @property
    def seen_lock(self) -> str:
        return f"refs/osmosis-seen/{self.key}/lock"

    @property
    def seen_state(self) -> str:
        return f"refs/osmosis-seen/{self.key}/state"

    def describe(self) -> str:
        project = f" project {self.project}" if self.project is not None else ""
        return f"{self.platform} workspace {self.workspace}{project}"


_HEADER_FIELD = re.compile(r'^(platform|workspace) = "([^"\\]*)"\s*$', re.MULTILINE)


def _guards(lockfile: bytes, refs: GuardedRefs) -> bool:
    """Whether a recorded lockfile names the (Platform, workspace) ``refs`` guard."""
    head = lockfile[:4096].decode("utf-8", "replace").partition("\n[")[0]
    fields = dict(_HEADER_FIELD.findall(head))
    return (
        fields.get("platform", "").rstrip("/") == refs.platform.rstrip("/")
        and fields.get("workspace", "").strip() == refs.workspace.strip()
    )


def _stamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_stamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


# --------------------------------------------------------------------------- git plumbing


class _Git:
    """The few git commands the lock needs, on one repository and its ``origin``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(
        self, *args: str, data: bytes | None = None, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                [*BASE, *args],
                cwd=self.root,
                env={**git_env(), **(env or {})},
                input=data,
                stdin=None if data is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise GitError(
                f"git {args[0]} timed out after {_TIMEOUT:g}s talking to {REMOTE}",
                "check the network and the remote, then run the command again",
            ) from exc

    def out(self, *args: str, data: bytes | None = None) -> str:
        done = self.run(*args, data=data, env=_IDENTITY)
        if done.returncode != 0:
            raise self.error(args, done)
        return done.stdout.decode("utf-8", "replace").strip()

    def error(self, args: tuple[str, ...], done: subprocess.CompletedProcess[bytes]) -> GitError:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        text = redact_url(lines[-1]) if lines else f"exit status {done.returncode}"
        return GitError(
            f"git {args[0]} failed while handling the apply lock on {REMOTE}: {text}",
            f"check that `git ls-remote {REMOTE}` works here (network, credentials), "
            'or set lock = "local" in [tool.osmosis-reconciler] to lock this machine only',
        )

    def commit(self, files: Mapping[str, bytes], message: str) -> str:
        """A parentless commit holding ``files`` (written to the object store only)."""
        entries = []
        for name in sorted(files):
            blob = self.out("hash-object", "-w", "--stdin", data=files[name])
            entries.append(f"100644 blob {blob}\t{name}\n")
        tree = self.out("mktree", data="".join(entries).encode())
        return self.out("commit-tree", tree, "-m", message)

    def fetch(self, ref: str, seen: str) -> str | None:
        """The remote's ``ref`` fetched into the private ``seen`` ref; None when absent."""
        done = self.run(
            "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", REMOTE, f"+{ref}:{seen}"
        )
        if done.returncode == 0:
            return self.out("rev-parse", "--verify", "--quiet", seen)
        stderr = done.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in stderr or "could not find remote ref" in stderr:
            self.run("update-ref", "-d", seen)
            return None
        raise self.error(("fetch",), done)

    def read(self, commit: str, name: str) -> bytes | None:
        done = self.run("cat-file", "blob", f"{commit}:{name}")
        return done.stdout if done.returncode == 0 else None

    def push(self, updates: list[tuple[str | None, str, str | None]]) -> bool:
        """Push ``(new, ref, expected)`` updates atomically, each only if the remote's
        ``ref`` is ``expected`` (None: absent); ``new`` None deletes. False when refused."""
        args = ["push", "--porcelain", "--atomic", "--no-verify"]
        for _new, ref, expected in updates:
            args.append(f"--force-with-lease={ref}:{expected or ''}")
        args.append(REMOTE)
        args.extend(f"{new or ''}:{ref}" for new, ref, _expected in updates)
        done = self.run(*args)
        if done.returncode == 0:
            return True
        report = done.stdout.decode("utf-8", "replace")
        if any(line.startswith("!") for line in report.splitlines()):
            return False  # a lease did not hold: someone else changed the ref first
        raise self.error(("push",), done)


# --------------------------------------------------------------------------- the lock


@dataclass(frozen=True)
class _Seen:
    """The lock ref as last fetched: its commit, the holder in it, and since when (our
    monotonic clock) it has not changed."""

    commit: str
    holder: dict[str, Any]
    since: float


def _local_header(state_path: Path) -> tuple[str, int] | None:
    """``(lineage, serial)`` of the lockfile on disk, None when there is none."""
    try:
        with state_path.open("rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    match = _HEADER_RE.search(head)
    return (match.group(1), int(match.group(2))) if match else None


def describe_git_holder(holder: Mapping[str, Any], ref: str = LEGACY_LOCK_REF) -> str:
    """One sentence naming the holder of the git lock ``ref``."""
    text = (
        f"the apply lock {ref} on {REMOTE} is held by pid {holder.get('pid', '?')} on "
        f"{holder.get('host', '?')} running `{holder.get('command', '?')}` since "
        f"{holder.get('started_at', '?')} (lock id {holder.get('lock_id', '?')}; "
        f"expires {holder.get('expires_at', '?')} unless renewed)"
    )
    if holder.get("ci_url"):
        text += f"; CI run: {holder['ci_url']}"
    return text


class GitLock:
    """One holder's use of the lock ref of ``refs``: ``acquire``, background renewal,
    ``release`` (which also records the lockfile in the state ref)."""

    def __init__(
        self,
        root: Path,
        *,
        refs: GuardedRefs,
        lock_id: str,
        command: str,
        ci_url: str | None,
        ttl: float,
        state_path: Path,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        host: str | None = None,
        pid: int | None = None,
    ) -> None:
        self.git = _Git(root)
        self.refs = refs
        self.lock_id = lock_id
        self.command = command
        self.ci_url = ci_url
        self.ttl = float(ttl)
        self.state_path = state_path
        self.now = now
        self.monotonic = monotonic
        self.sleep = sleep
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is None else pid
        self.started_at = _stamp(now())
        self.commit: str | None = None
        """The lock commit we pushed last (the lease of our next renewal or release)."""
        self.lost = threading.Event()
        self.on_lost: Callable[[], None] | None = None
        """Called from the renewal thread when the lock is lost (``hold_git_lock``'s)."""
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._state_seen: str | None = None
        self._legacy_seen: str | None = None
        """The legacy state record this holder read in place of its own (migrated on release)."""

    # -- holder record --------------------------------------------------------

    def holder(self) -> dict[str, Any]:
        return {
            "lock_id": self.lock_id,
            "pid": self.pid,
            "host": self.host,
            "command": self.command,
            "ci_url": self.ci_url,
            "started_at": self.started_at,
            "expires_at": _stamp(self.now() + timedelta(seconds=self.ttl)),
            "ttl": self.ttl,
            "platform": self.refs.platform,
            "workspace": self.refs.workspace,
        }

    def _new_commit(self) -> str:
        data = (json.dumps(self.holder(), indent=2, sort_keys=True) + "\n").encode()
        return self.git.commit({"holder.json": data}, f"osmosis apply lock {self.lock_id}")

    def _fetch_lock(self, previous: _Seen | None) -> _Seen | None:
        commit = self.git.fetch(self.refs.lock, self.refs.seen_lock)
        if commit is None:
            return None
        if previous is not None and previous.commit == commit:
            return previous
        raw = self.git.read(commit, "holder.json") or b""
        try:
            holder = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            holder = {}
        return _Seen(commit, holder if isinstance(holder, dict) else {}, self.monotonic())

    def _takeover_reason(self, seen: _Seen) -> str | None:
        """Why the lock in ``seen`` may be taken over now, or None while it is valid."""
        holder = seen.holder
        pid = holder.get("pid")
        if holder.get("host") == self.host and isinstance(pid, int) and not _pid_alive(pid):
            return f"its holder (pid {pid} on {self.host}) is no longer running"
        expires = _parse_stamp(holder.get("expires_at"))
        if expires is not None and self.now() > expires + CLOCK_SKEW:
            return f"it expired at {holder.get('expires_at')}"
        held_ttl = holder.get("ttl")
        ttl = held_ttl if isinstance(held_ttl, int | float) else self.ttl
        if self.monotonic() - seen.since > float(ttl) + 1.0:
            return f"it was not renewed for {float(ttl) + 1.0:g}s"
        return None

    # -- acquire / renew / release ----------------------------------------------

    def acquire(self, timeout: float, on_wait: Callable[[dict], None] | None = None) -> GitLock:
        log = get_logger()
        deadline = self.monotonic() + max(timeout, 0.0)
        delay = _POLL_FIRST
        seen: _Seen | None = None
        told = False
        while True:
            mine = self._new_commit()
            if self.git.push([(mine, self.refs.lock, None)]):
                self.commit = mine
                break
            seen = self._fetch_lock(seen)
            if seen is None:
                continue  # released between our push and our fetch: try again at once
            reason = self._takeover_reason(seen)
            if reason is not None:
                if self.git.push([(mine, self.refs.lock, seen.commit)]):
                    log.warning("took over the git apply lock", reason=reason, **seen.holder)
                    self.commit = mine
                    break
                continue  # someone else took it over first
            if self.monotonic() >= deadline:
                waited = f" after waiting {timeout:g}s" if timeout > 0 else ""
                lock_id = seen.holder.get("lock_id") or "<LOCK_ID>"
                raise LockHeldError(
                    describe_git_holder(seen.holder, self.refs.lock) + waited,
                    "wait for that apply to finish, retry with --lock-timeout SECONDS to wait "
                    "for it (an abandoned lock is taken over once it expires), or, if you are "
                    f"sure no apply is running: osmosis-apply --force-unlock {lock_id}",
                    holder=seen.holder,
                )
            if not told and on_wait is not None:
                told = True
                on_wait(seen.holder)
            self.sleep(min(delay, max(0.0, deadline - self.monotonic())))
            delay = min(delay * 2, _POLL_MAX)
        try:
            self._check_lockfile_is_current()
        except BaseException:
            self._delete()
            raise
        self._renewer = threading.Thread(target=self._renew_loop, name="git-lock", daemon=True)
        self._renewer.start()
        return self

    def _check_lockfile_is_current(self) -> None:
        """Refuse a checkout whose lockfile is behind the one the last holder recorded."""
        self._state_seen = self.git.fetch(self.refs.state, self.refs.seen_state)
        record = self._state_seen
        if record is None:
            legacy = self.git.fetch(LEGACY_STATE_REF, _SEEN_LEGACY_STATE)
            if legacy is None or not _guards(
                self.git.read(legacy, "osmosis.lock") or b"", self.refs
            ):
                return  # none, or another Platform's (an older version's try-out): not ours
            record = self._legacy_seen = legacy
        raw = self.git.read(record, "applied.json") or b"{}"
        try:
            applied = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return
        lineage, serial = applied.get("lineage"), applied.get("serial")
        if not isinstance(lineage, str) or not isinstance(serial, int) or serial <= 0:
            return
        local = _local_header(self.state_path)
        if local is not None and local[0] == lineage and local[1] >= serial:
            return
        mine = (
            "has no lockfile"
            if local is None
            else f"has serial {local[1]}" + (" of another lineage" if local[0] != lineage else "")
        )
        by = f" by {applied.get('host', '?')} at {applied.get('at', '?')}"
        if applied.get("ci_url"):
            by += f" (CI run {applied['ci_url']})"
        name = self.state_path.name
        ref = LEGACY_STATE_REF if record == self._legacy_seen else self.refs.state
        raise StateError(
            f"the lockfile here is behind the one the last apply wrote: that apply{by} left "
            f"serial {serial}, this checkout {mine}; applying now could pay again for runs "
            "it recorded",
            "pull the commit that has it (`git pull`), or, if it was never pushed, restore it "
            f"from the remote: `git fetch {REMOTE} {ref} && git show FETCH_HEAD:"
            f"osmosis.lock > {self.state_path.parent.name}/{name}` and commit it. To start a "
            f"new lineage on purpose, delete the record: `git push {REMOTE} :{ref}`",
        )

    def _renew_loop(self) -> None:
        log = get_logger()
        interval = max(self.ttl / 3.0, 0.2)
        deadline = self.monotonic() + self.ttl
        while not self._stop.wait(interval):
            try:
                mine = self._new_commit()
                if self.git.push([(mine, self.refs.lock, self.commit)]):
                    self.commit = mine
                    deadline = self.monotonic() + self.ttl
                    continue
                self._lose("another process took the apply lock over (or force-unlocked it)")
                return
            except GitError as exc:
                log.warning("git apply lock not renewed", error=exc.message)
                if self.monotonic() >= deadline:
                    self._lose("the apply lock could not be renewed before it expired")
                    return

    def _lose(self, why: str) -> None:
        get_logger().error("lost the git apply lock", reason=why)
        self.lost.set()
        if self.on_lost is not None:
            self.on_lost()

    def _delete(self) -> None:
        if self.commit is not None and not self.lost.is_set():
            try:
                self.git.push([(None, self.refs.lock, self.commit)])
            except GitError as exc:
                get_logger().warning("git apply lock not released", error=exc.message)
        self.commit = None

    def release(self) -> None:
        """Stop renewing; record the lockfile in the state ref and delete the lock in one
        atomic push (which also deletes a legacy record read in its place: migrated). A lost
        lock is left alone (it is someone else's now)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=_TIMEOUT)
        if self.commit is None or self.lost.is_set():
            return
        updates: list[tuple[str | None, str, str | None]] = [(None, self.refs.lock, self.commit)]
        state = self._state_commit()
        if state is None and self._legacy_seen is not None:
            state = self._copy_legacy()
        if state is not None:
            updates.append((state, self.refs.state, self._state_seen))
            if self._legacy_seen is not None:
                updates.append((None, LEGACY_STATE_REF, self._legacy_seen))
        try:
            if not self.git.push(updates) and state is not None:
                self.git.push([(None, self.refs.lock, self.commit)])
        except GitError as exc:
            # The lock expires by itself; the state record is only a guard for the next one.
            get_logger().warning("git apply lock not released", error=exc.message)
        self.commit = None

    def publish(self, _state: object = None) -> None:
        """Record the lockfile on disk in the state ref now, while the lock is held.

        Called after every lockfile write of an apply (``StateStore(on_write=...)``), so a
        submit's intent is on the remote before its POST: a holder killed mid-apply (a CI
        job cancelled) leaves evidence of the runs it paid for where the next holder looks,
        and the next holder's checkout, behind it, is refused with the command that
        restores it, instead of paying again. A failed push fails the write: no POST
        follows an intent the remote does not hold.
        """
        if self.commit is None or self.lost.is_set():
            raise LockHeldError(
                f"the apply lock {self.refs.lock} on {REMOTE} is no longer held by this apply",
                "run osmosis-apply again",
            )
        state = self._state_commit()
        if state is None:
            return
        updates: list[tuple[str | None, str, str | None]] = [
            (state, self.refs.state, self._state_seen)
        ]
        if self._legacy_seen is not None:
            updates.append((None, LEGACY_STATE_REF, self._legacy_seen))
        if not self.git.push(updates):
            raise StateError(
                f"the state record {self.refs.state} on {REMOTE} changed while this apply "
                "held the lock",
                "run osmosis-apply again; if it repeats, another tool writes that ref",
            )
        self._state_seen = state
        self._legacy_seen = None

    def _copy_legacy(self) -> str | None:
        """The legacy record's files as a commit for the new ref (nothing changed here)."""
        assert self._legacy_seen is not None
        files = {}
        for name in ("applied.json", "osmosis.lock"):
            data = self.git.read(self._legacy_seen, name)
            if data is None:
                return None
            files[name] = data
        return self.git.commit(files, "osmosis state (migrated from refs/osmosis/state)")

    def _state_commit(self) -> str | None:
        header = _local_header(self.state_path)
        if header is None:
            return None
        seen = self._state_seen or self._legacy_seen
        if seen is not None:
            raw = self.git.read(seen, "applied.json") or b"{}"
            try:
                applied = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                applied = {}
            if (applied.get("lineage"), applied.get("serial")) == header:
                return None  # unchanged: nothing to record
        applied = {
            "lineage": header[0],
            "serial": header[1],
            "lock_id": self.lock_id,
            "host": self.host,
            "ci_url": self.ci_url,
            "at": _stamp(self.now()),
        }
        files = {
            "applied.json": (json.dumps(applied, indent=2, sort_keys=True) + "\n").encode(),
            "osmosis.lock": self.state_path.read_bytes(),
        }
        return self.git.commit(files, f"osmosis state serial {header[1]}")


@contextmanager
def hold_git_lock(
    root: Path,
    *,
    refs: GuardedRefs,
    lock_id: str,
    command: str,
    ci_url: str | None,
    ttl: float,
    state_path: Path,
    timeout: float,
    on_wait: Callable[[dict], None] | None = None,
    on_lost: Callable[[], None] | None = None,
) -> Iterator[GitLock]:
    """Hold the git lock of ``refs`` for the ``with`` block (``locking.choose_lock`` says
    when). ``on_lost`` is called, from the renewal thread, if the lock is taken away while
    held."""
    lock = GitLock(
        root,
        refs=refs,
        lock_id=lock_id,
        command=command,
        ci_url=ci_url,
        ttl=ttl,
        state_path=state_path,
    )
    # Told by the renewal thread itself: a watcher thread polling ``lost`` made every
    # release wait for its next poll (up to half a second per apply).
    lock.on_lost = on_lost
    lock.acquire(timeout, on_wait)
    try:
        yield lock
    finally:
        lock.release()


def read_state_record(root: Path, refs: GuardedRefs) -> bytes | None:
    """The lockfile the last apply against ``refs``' Platform and workspace recorded on
    ``origin`` (its state ref; a legacy record naming the same Platform and workspace until
    it is migrated), or None when there is none. Plans read it as ownership evidence."""
    git = _Git(root)
    commit = git.fetch(refs.state, refs.seen_state)
    if commit is not None:
        return git.read(commit, "osmosis.lock")
    legacy = git.fetch(LEGACY_STATE_REF, _SEEN_LEGACY_STATE)
    if legacy is None:
        return None
    data = git.read(legacy, "osmosis.lock")
    return data if data is not None and _guards(data, refs) else None


def _lock_refs(git: _Git) -> list[str]:
    """Every lock ref on ``origin``: each (Platform, workspace)'s and the legacy one."""
    done = git.run("ls-remote", REMOTE, "refs/osmosis/*")
    if done.returncode != 0:
        raise git.error(("ls-remote",), done)
    refs = []
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        _sha, _tab, ref = line.partition("\t")
        if ref == LEGACY_LOCK_REF or (ref.startswith("refs/osmosis/") and ref.endswith("/lock")):
            refs.append(ref.strip())
    return sorted(refs)


def read_git_holder(root: Path, ref: str) -> tuple[str, dict[str, Any]] | None:
    """``(commit, holder)`` of the git lock ``ref`` on ``origin``, None when nobody holds it."""
    git = _Git(root)
    commit = git.fetch(ref, "refs/osmosis-seen/unlock")
    if commit is None:
        return None
    raw = git.read(commit, "holder.json") or b"{}"
    try:
        holder = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        holder = {}
    return commit, holder if isinstance(holder, dict) else {}


def force_unlock_git(root: Path, lock_id: str) -> str | None:
    """Delete the git lock (of any Platform and workspace) whose holder has ``lock_id``;
    returns its ref, None when no git lock is held at all.

    Refused when no holder has that id, and when the holder runs on this host and is alive.
    """
    git = _Git(root)
    held = [(ref, found) for ref in _lock_refs(git) if (found := read_git_holder(root, ref))]
    if not held:
        return None
    match = [(ref, found) for ref, found in held if found[1].get("lock_id") == lock_id]
    if not match:
        named = "; ".join(describe_git_holder(found[1], ref) for ref, found in held)
        raise UsageError(
            f"lock id {lock_id} does not match the holder of any apply lock on {REMOTE}",
            f"copy the lock id from the error that reported the held lock; {named}",
        )
    ref, (commit, holder) = match[0]
    pid = holder.get("pid")
    if holder.get("host") == socket.gethostname() and isinstance(pid, int) and _pid_alive(pid):
        raise LockHeldError(
            f"{describe_git_holder(holder, ref)}; that process is still running",
            f"let it finish or stop it (kill {pid}), then run osmosis-apply again",
            holder=holder,
        )
    if not git.push([(None, ref, commit)]):
        raise LockHeldError(
            f"the apply lock {ref} on {REMOTE} changed while it was being removed",
            "run osmosis-apply again to see who holds it now",
        )
    return ref


def force_unlock_any(root: Path, lock_paths: list[Path], lock_id: str) -> str:
    """``osmosis-apply --force-unlock ID``: release whichever lock ``ID`` names: a local one
    (the clone's, or a machine-wide one of a loopback Platform: ``lock_paths``), the git one,
    or both (one apply holds both under the same id). Returns where it was released; a usage
    error when none holds that id."""
    from reconciler.gitinfo import GitRepo
    from reconciler.state.locking import force_unlock, read_holder

    released: list[str] = []
    for path in lock_paths:
        local = read_holder(path)
        if local is not None and local.get("lock_id") == lock_id:
            force_unlock(path, lock_id)
            released.append(str(path))
    git = GitRepo.discover(root)
    if git is not None and git.origin_url() is not None:
        try:
            ref = force_unlock_git(git.root, lock_id)
        except (UsageError, GitError):
            if not released:
                raise
            ref = None  # the local lock it named is released; the remote holds none of it
        if ref is not None:
            released.append(f"{ref} on {REMOTE}")
    if released:
        return " and ".join(released)
    # None holds it: let the clone's lock explain (no lock, or another id).
    force_unlock(lock_paths[0], lock_id)
    return str(lock_paths[0])
