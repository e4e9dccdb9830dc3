"""The one clock fake of the suite: wall and monotonic time that move only when a test says so.

The local Platform takes it as its ``clock`` (``clock()`` is the epoch seconds), the git lock
as ``now``/``monotonic``/``sleep``: runs stay active, leases stay held, until the test moves
time with ``advance`` (or the code under test ``sleep``s). No test sleeps or times itself.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime


class FakeClock:
    """Wall time (``now``, epoch seconds, settable) and monotonic time that move together,
    only on ``advance``/``sleep``. Safe to read and move from the server's threads."""

    def __init__(self, start: float | None = None, *, monotonic_start: float = 1000.0) -> None:
        self._lock = threading.Lock()
        self._now = time.time() if start is None else start
        self._monotonic = monotonic_start

    @property
    def now(self) -> float:
        """The wall clock in epoch seconds; a test may set it (to rewind, say)."""
        with self._lock:
            return self._now

    @now.setter
    def now(self, value: float) -> None:
        with self._lock:
            self._now = value

    def __call__(self) -> float:
        return self.now

    def utcnow(self) -> datetime:
        """The wall clock as an aware UTC datetime."""
        return datetime.fromtimestamp(self.now, UTC)

    def monotonic(self) -> float:
        with self._lock:
            return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both clocks forward."""
        with self._lock:
            self._now += seconds
            self._monotonic += seconds

    def sleep(self, seconds: float) -> None:
        """A sleep that returns at once, having moved time on."""
        self.advance(seconds)
