"""Fault injection for the local Platform: deterministic given ``Faults.seed``.

Each API request draws the same five numbers from one seeded generator, whatever knobs are
set, so a given request order always meets the same faults. The knobs of a misbehaving
server (``trickle_ms``, ``silent``, ``stall_downloads_after``) are not drawn: they apply to
every request they name. Presigned downloads (``/_presigned/...``) meet only
``stall_downloads_after``. These three need the loopback server (``start_server``): in
process (``LocalTransport``) a silent or stalled answer becomes an immediate read timeout
and a trickled one arrives whole.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Faults:
    """Knobs for reliability tests; the defaults inject nothing.

    * ``latency_ms``: added to every API request.
    * ``latency_spike_ms`` / ``latency_spike_rate``: an extra delay on that share of requests.
    * ``error_rate``: share of requests answered 500/502/503 with a JSON error body, before
      anything is done.
    * ``rate_limit_rate``: share answered 429 with ``Retry-After: retry_after_s``.
    * ``drop_rate``: share of requests whose connection is closed without any response,
      before anything is done.
    * ``drop_after_submit_rate``: share of *successful* submits whose run is committed and
      whose connection is then closed without a response (the lost-response case).
    * ``after_submit_delay_ms``: sleep after a submit commits, before answering (a window
      for crash tests to kill the client).
    * ``hold_submits_while``: a file path; while that file exists, a committed submit is not
      answered (for at most ``HOLD_MAX_S``). A test holds several applies inside their locks
      at once this way, with no timing to guess: it waits until the Platform has counted the
      submits it expects, then removes the file.
    * ``presign_ttl_s``: lifetime of presigned download URLs.
    * ``benchmarks_disabled``: the feature gate: every benchmark and run route answers 403
      "Benchmarks is not available for your account".
    * ``rate_limit_after_submit_rate``: share of successful submits whose run is committed
      and which are then answered 429 anyway (a limiter behind the handler).
    * ``wrong_submit_reply_rate``: share of successful submits whose run is committed and
      which are answered with a body of the wrong shape (``{"id": 5, "name": null}``).
    * ``list_omit_rate``: share of runs (chosen by id, so always the same ones) that the run
      list (E4) leaves out although a direct read (E5) still returns them.
    * ``workspace_concurrency_limit``: a workspace limit no client can know in advance
      (the page's "within your workspace limits"): a submit asking for more
      ``max_concurrent_attempts`` is refused 400 with an issue naming the limit.
    * ``trickle_ms``: every API answer (status line and headers included) is written one
      byte at a time, this many milliseconds apart: a per-read timeout never fires.
    * ``silent``: every API request is read and never answered; the connection stays open
      until the client gives up.
    * ``stall_downloads_after``: presigned GETs after the first N (counted from 0) send
      their headers and half of the body, then nothing more; -1 (default) never stalls.
    * ``silent_logs`` / ``failing_logs``: a run's log (E6) is never answered (as
      ``silent``), or answered 500; every other request is served (a plan quoting a smoke
      run's log lines must not fail for them).

    The three submit knobs draw from a generator of their own, only on committed submits, so
    the other knobs meet the same requests whatever they are set to.
    """

    latency_ms: int = 0
    latency_spike_ms: int = 0
    latency_spike_rate: float = 0.0
    error_rate: float = 0.0
    rate_limit_rate: float = 0.0
    retry_after_s: int = 1
    drop_after_submit_rate: float = 0.0
    drop_rate: float = 0.0
    after_submit_delay_ms: int = 0
    hold_submits_while: str | None = None
    presign_ttl_s: int = 900
    benchmarks_disabled: bool = False
    rate_limit_after_submit_rate: float = 0.0
    wrong_submit_reply_rate: float = 0.0
    list_omit_rate: float = 0.0
    workspace_concurrency_limit: int | None = None
    trickle_ms: int = 0
    silent: bool = False
    stall_downloads_after: int = -1
    silent_logs: bool = False
    failing_logs: bool = False
    seed: int = 0


HOLD_MAX_S = 300.0
"""The longest ``hold_submits_while`` holds a submit: a test that died before removing its
file must not leave the server's threads waiting for ever."""


def hold_while(path: str | None) -> None:
    """Wait while the file ``path`` exists (``Faults.hold_submits_while``)."""
    if path is None:
        return
    deadline = time.monotonic() + HOLD_MAX_S
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


@dataclass(frozen=True)
class Draw:
    """What the injector decided for one request."""

    delay_s: float
    drop: bool
    error_status: int | None
    rate_limited: bool
    drop_after_submit: bool


class FaultInjector:
    """Draws per-request fault decisions and counts what was injected."""

    _ERROR_STATUSES = (500, 502, 503)

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self._rng = random.Random(faults.seed)
        self._submit_rng = random.Random(faults.seed + 1)
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def draw(self) -> Draw:
        f = self.faults
        with self._lock:
            spike, drop, error, limit, after = (self._rng.random() for _ in range(5))
            status = self._ERROR_STATUSES[self._rng.randrange(len(self._ERROR_STATUSES))]
        delay = f.latency_ms / 1000.0
        if spike < f.latency_spike_rate:
            delay += f.latency_spike_ms / 1000.0
            self.count("latency_spike")
        return Draw(
            delay_s=delay,
            drop=drop < f.drop_rate,
            error_status=status if error < f.error_rate else None,
            rate_limited=limit < f.rate_limit_rate,
            drop_after_submit=after < f.drop_after_submit_rate,
        )

    def after_commit(self) -> str | None:
        """What to answer a committed submit with instead of its run: ``rate_limit``,
        ``wrong_reply`` or None (the run)."""
        f = self.faults
        if not (f.rate_limit_after_submit_rate or f.wrong_submit_reply_rate):
            return None
        with self._lock:
            limit, wrong = self._submit_rng.random(), self._submit_rng.random()
        if limit < f.rate_limit_after_submit_rate:
            return "rate_limit"
        if wrong < f.wrong_submit_reply_rate:
            return "wrong_reply"
        return None

    def omitted_from_list(self, run_id: str) -> bool:
        """Whether the run list leaves ``run_id`` out (the same answer every time)."""
        rate = self.faults.list_omit_rate
        if rate <= 0:
            return False
        digest = hashlib.sha256(f"{self.faults.seed}:{run_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < rate

    def count(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1

    def stall_download(self) -> bool:
        """Whether this presigned GET stalls (``Faults.stall_downloads_after``); counts it."""
        after = self.faults.stall_downloads_after
        if after < 0:
            return False
        with self._lock:
            seen = self.counts["presigned_get"]
            self.counts["presigned_get"] += 1
            if seen < after:
                return False
            self.counts["stalled_download"] += 1
            return True
