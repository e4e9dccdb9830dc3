"""The one writer of the lockfile during an apply (``StateStore``): updates from the
apply's threads applied in order and written in groups (see the class)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from reconciler.errors import StateError
from reconciler.model import LockState
from reconciler.state.lockfile import write_lockfile

__all__ = ["StateStore"]


class StateStore:
    """The one writer of the lockfile during an apply.

    Apply runs actions in threads; each persists its result through ``update``, which
    applies the change to the *current* state under a lock and returns only once a write
    that includes it is on disk, so concurrent updates are never lost. Writes are grouped:
    callers that arrive while a write is in flight are covered by one next write of the
    newest state (serial + 1 per update), which is what lets parallel actions outpace the
    fsyncs of one file.

    An update that is cheap to lose (a download's record: the files stay on disk and the
    next apply re-hashes them instead of fetching them again) may pass ``durable=False``:
    it is written with the next durable update, by ``flush``, or at the latest once
    ``lazy_interval`` seconds have passed since the last write, so a long run of downloads
    costs one lockfile write per interval instead of one per run.
    """

    def __init__(
        self,
        path: Path,
        state: LockState,
        *,
        lazy_interval: float = 1.0,
        on_write: Callable[[LockState], None] | None = None,
    ) -> None:
        self._on_write = on_write
        """Called after each write, inside it (``gitlock.GitLock.publish``: the remote
        state record gets every intent before its POST); an error fails the update."""
        self._path = path
        self._state = state
        self._latest = state
        """Every update applied, written or not."""
        self._applied = 0
        self._durable = 0
        """How many updates the file on disk includes."""
        self._lazy_interval = lazy_interval
        self._written_at = time.monotonic()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    @property
    def state(self) -> LockState:
        """The state as last written (or as given, before the first write)."""
        return self._state

    @property
    def pending(self) -> int:
        """Updates applied but not yet on disk (non-durable ones awaiting a write)."""
        with self._lock:
            return self._applied - self._durable

    def update(self, fn: Callable[[LockState], LockState], *, durable: bool = True) -> LockState:
        """Apply ``fn`` to the current state and persist the result atomically.

        Every call adds 1 to the serial and is written, even when ``fn`` changes nothing:
        callers use ``update(lambda s: s)`` to persist a state the store was constructed
        with. If the write fails the caller gets the error, and its change may still be
        written by a later update (each paid action's ordering is unaffected: its intent
        is on disk before ``update`` returns, or ``update`` raised). With ``durable=False``
        the write may be deferred (see the class docstring); the returned state is then the
        last one written.
        """
        with self._lock:
            base = self._latest
            self._latest = fn(base).model_copy(update={"serial": base.serial + 1})
            self._applied += 1
            mine = self._applied
            if not durable and time.monotonic() - self._written_at < self._lazy_interval:
                return self._state
        return self._write_through(mine)

    def flush(self) -> LockState:
        """Write every update applied so far, if any is not on disk yet."""
        with self._lock:
            mine = self._applied
        return self._write_through(mine)

    def flush_or_why(self) -> str | None:
        """``flush``, and why it failed, if it did (a full disk must not hide the result)."""
        try:
            self.flush()
        except StateError as exc:
            return exc.message
        return None

    def _write_through(self, mine: int) -> LockState:
        with self._write_lock:
            if self._durable < mine:
                with self._lock:
                    target, covered = self._latest, self._applied
                # write_lockfile adds the 1 back.
                unwritten = target.model_copy(update={"serial": target.serial - 1})
                self._state = write_lockfile(self._path, unwritten)
                self._durable = covered
                self._written_at = time.monotonic()
                if self._on_write is not None:
                    self._on_write(self._state)
            return self._state
