"""How many file transfers of one apply run at once: few while the store answers at once,
more while transfers wait for it.

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


class TransferLimit:
    """A limit on transfers in flight that opens from ``low`` to ``high`` under latency."""

    def __init__(self, low: int, high: int) -> None:
        self.low = max(1, low)
        self.high = max(self.low, high)
        self.limit = self.low
        self.peak = 0
        """Most transfers in flight at once so far."""
        self._active = 0
        self._waits: deque[float] = deque(maxlen=WINDOW)
        self._cond = threading.Condition()

    def acquire(self, stop: Callable[[], bool] = lambda: False) -> bool:
        """Take a slot for a transfer; False, without one, once ``stop`` is true."""
        with self._cond:
            while self._active >= self.limit:
                if stop():
                    return False
                self._cond.wait(POLL_S)
            self._active += 1
            self.peak = max(self.peak, self._active)
        return True

    def release(self) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify()

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
