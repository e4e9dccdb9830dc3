"""How many file transfers, and how many runs, of one apply download at once: few while the
store and the Platform answer at once, more while they are far.

More transfers in flight only help while each one waits on the network (an object store
tens of milliseconds away). When the store answers at once, a transfer is CPU work under
the interpreter lock, and every thread beyond a handful adds lock hand-offs instead
(``make perf``, 2 cores: 40 runs at ``--parallelism 8`` took 0.86 s with 32 transfers
allowed and 0.68 s with 8, against 0.75 s for a plain pool of 8 threads; 200 runs on
loopback spent a quarter of their CPU time switching threads).

``TransferLimit`` starts at ``low`` and watches how long each transfer waits for the
store's first byte. Once the median of the last ``WINDOW`` waits reaches ``SLOW_S``, the
transfers are waiting on the network and the limit opens to ``high``; it closes again once
the median falls under a quarter of that. A transfer waiting for a slot holds no
connection and costs no CPU.

``RunGate`` does the same for the runs: how many make their Platform requests at once, and
how many are downloaded at once, from how far the Platform is.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

WINDOW = 8
"""First-byte waits the limit looks at (the most recent ones)."""
SLOW_S = 0.02
"""Median wait for the first byte past which transfers are waiting on the network."""
POLL_S = 0.2
"""Longest wait for a slot before ``stop`` is asked again."""


class Slots:
    """Holders in flight, at most ``limit()`` at once (asked again whenever one waits)."""

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self.peak = 0
        """Most holders at once so far."""
        self._active = 0
        self._cond = threading.Condition()

    def acquire(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Take a slot; False, without one, once ``stop`` is true."""
        with self._cond:
            while self._active >= self._limit():
                if stop():
                    return False
                self._cond.wait(POLL_S)  # also how a limit that opened is seen
            self._active += 1
            self.peak = max(self.peak, self._active)
        return True

    def release(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class TransferLimit(Slots):
    """A limit on transfers in flight that opens from ``low`` to ``high`` under latency."""

    def __init__(self, low: int, high: int) -> None:
        super().__init__(lambda: self.limit)
        self.low = max(1, low)
        self.high = max(self.low, high)
        self.limit = self.low
        self._waits: deque[float] = deque(maxlen=WINDOW)

    def first_byte(self, seconds: float) -> None:
        """Record how long a transfer waited for the store's first byte."""
        with self._cond:
            self._waits.append(seconds)
            if len(self._waits) < WINDOW:
                return
            median = sorted(self._waits)[WINDOW // 2]
            if median >= SLOW_S:
                wanted = self.high
            elif median < SLOW_S / 4:
                wanted = self.low
            else:
                return
            if wanted > self.limit:
                self._cond.notify(wanted - self.limit)
            self.limit = wanted


FAR_S = 0.005
"""Quickest Platform round trip from which runs make their requests side by side (see
``RunGate``). A Platform in another process on loopback answers in 0.6 ms; the embedded
one shares this process's interpreter lock, and its first answer under load took 2.1 ms.
A run's own work in the gate is about 5 ms, so from there on a run's two round trips are
most of its turn."""


class RunGate:
    """How many runs of one apply download at once: ``low`` while the Platform answers at
    once, ``high`` while a round trip to it takes ``FAR_S`` or more.

    Each run costs two or more serial round trips to the Platform (its manifest, its
    download URLs) before its files move. Far from the Platform those waits are the apply's
    time, and only runs making them side by side shorten it. Near it they are CPU work, and
    runs side by side only contend for the interpreter lock: on loopback a run held the gate
    5 ms alone and 60 ms beside 7 others, and 16 runs in flight cost 5 % more CPU than 2.

    How long a run takes cannot tell the two apart (contention lengthens it as much as
    distance), so the gate asks ``round_trip``: the Platform client's quickest round trip,
    which the plan before an apply has measured already, on a quiet process (none yet:
    ``low`` until the first answer). A busy machine only ever lengthens a round trip, so
    the quickest one is how far the Platform is.

    ``requests`` is held while a run makes its Platform requests (``limit`` runs at once);
    ``run`` while it is downloaded at all, its files included (``waiting`` times as many).
    """

    def __init__(
        self,
        low: int,
        high: int,
        round_trip: Callable[[], float | None],
        *,
        waiting: int = 2,
    ) -> None:
        self.low = max(1, low)
        self.high = max(self.low, high)
        self._round_trip = round_trip
        self.requests = Slots(self.limit)
        self.run = Slots(lambda: self.limit() * max(1, waiting))

    def limit(self) -> int:
        seconds = self._round_trip()
        return self.high if seconds is not None and seconds >= FAR_S else self.low
