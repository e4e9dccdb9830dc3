"""Overall deadlines for HTTP requests, and interruptions that reach a blocked read.

httpx's timeouts apply to one network operation at a time: a read timeout of 30 s is
reset by every byte that arrives, so a server that trickles one byte every few seconds
never trips it (``osmosis-plan`` was still waiting after 400 s), and a thread blocked in a
read cannot be told to stop (a stalled presigned download kept the process alive for 500 s
after SIGTERM). Sync httpx has no overall timeout; this module adds one below it, at the
socket, for every client it guards:

* ``budget(seconds)`` opens a budget for the calling thread. Until the block ends, every
  connect, TLS handshake, read and write on a guarded client is cut to the time left, and a
  read waits in slices of at most ``SLICE_S`` so that it notices an interruption.
* ``reconciler.shutdown.begin()`` (called from the CLI's SIGTERM/SIGINT handling) ends
  every budget of the process: reads stop within a slice, after the budget's ``grace``
  (in-flight Platform requests get a moment to answer, so a submit that is being committed
  is not abandoned for nothing; downloads stop at once). ``shutdown.sleep`` is a backoff
  that shutdown cuts short.
* ``guard(client)`` installs the budget-aware network backend under an ``httpx.Client``
  (its own transport and proxy mounts). Clients that do not talk to sockets (the in-process
  local Platform, a test's MockTransport) are left as they are; code that loops over chunks
  also calls ``Budget.check`` between them.

When a budget runs out the operation fails as httpx's ``ReadTimeout`` /
``ConnectTimeout`` / ``WriteTimeout`` would; the caller asks its ``Budget`` whether it was
the overall deadline (``expired``) or an interruption (``interrupted``) and says so.

Budgets nest: a budget opened inside another ends no later than the outer one.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from reconciler import shutdown
from reconciler.errors import UsageError

__all__ = [
    "SLICE_S",
    "Budget",
    "budget",
    "current",
    "guard",
    "guard_transport",
    "is_guarded",
    "seconds_from_env",
    "send",
]

SLICE_S = 0.25
"""Longest single wait of a read while an interruption could come: SIGTERM is answered
within about this (plus the budget's grace)."""

_local = threading.local()
_clock = time.monotonic


def seconds_from_env(name: str, default: float, env: Mapping[str, str] | None = None) -> float:
    """A deadline in seconds from the environment variable ``name``, else ``default``."""
    raw = (os.environ if env is None else env).get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(
            f"{name}={raw!r} is not a number of seconds",
            f"set {name} to a positive number of seconds, e.g. {name}={default:g}",
        )
    return value


class Budget:
    """Time left for one operation of the calling thread (see the module docstring)."""

    __slots__ = ("_cancelled", "_interrupted_at", "_parent", "deadline", "grace", "seconds")

    def __init__(
        self,
        seconds: float | None,
        *,
        grace: float = 0.0,
        cancelled: Callable[[], bool] | None = None,
        parent: Budget | None = None,
    ) -> None:
        self.seconds = seconds
        """The overall deadline asked for, in seconds (None: no deadline of its own)."""
        self.deadline = _clock() + seconds if seconds is not None else math.inf
        self.grace = grace
        """How long an interrupted operation may still run before it is cut."""
        self._cancelled = cancelled
        self._parent = parent
        self._interrupted_at: float | None = None

    def remaining(self, now: float | None = None) -> float:
        """Seconds left (negative once over), interruption and enclosing budgets included."""
        now = _clock() if now is None else now
        end = self.deadline
        if self._interrupted_at is None and (
            shutdown.requested() or (self._cancelled is not None and self._cancelled())
        ):
            self._interrupted_at = now
        if self._interrupted_at is not None:
            end = min(end, self._interrupted_at + self.grace)
        left = end - now
        if self._parent is not None:
            left = min(left, self._parent.remaining(now))
        return left

    @property
    def expired(self) -> bool:
        """The overall deadline (this budget's or an enclosing one's) has passed."""
        now = _clock()
        budget: Budget | None = self
        while budget is not None:
            if now >= budget.deadline:
                return True
            budget = budget._parent
        return False

    @property
    def interrupted(self) -> bool:
        """The operation was cut short by shutdown or its ``cancelled`` callback."""
        self.remaining()
        budget: Budget | None = self
        while budget is not None:
            if budget._interrupted_at is not None:
                return True
            budget = budget._parent
        return False

    def check(self) -> None:
        """Raise httpx's ``ReadTimeout`` when no time is left (for loops over chunks)."""
        if self.remaining() <= 0:
            raise httpx.ReadTimeout(_reason(self))


def _reason(b: Budget) -> str:
    if b.interrupted:
        return "interrupted"
    return f"overall deadline of {b.seconds:g} s exceeded" if b.seconds else "deadline exceeded"


def current() -> Budget | None:
    """The innermost budget of the calling thread, if any."""
    return getattr(_local, "budget", None)


@contextmanager
def budget(
    seconds: float | None,
    *,
    grace: float = 0.0,
    cancelled: Callable[[], bool] | None = None,
) -> Iterator[Budget]:
    """A budget for the calling thread until the block ends (see the module docstring)."""
    parent = current()
    opened = Budget(seconds, grace=grace, cancelled=cancelled, parent=parent)
    _local.budget = opened
    try:
        yield opened
    finally:
        _local.budget = parent


# --------------------------------------------------------------------------- the socket


def _cut(timeout: float | None, b: Budget, exc: type[Exception]) -> float:
    left = b.remaining()
    if left <= 0:
        raise exc(_reason(b))
    return left if timeout is None else min(timeout, left)


class _GuardedStream(httpcore.NetworkStream):
    """A network stream whose operations obey the calling thread's budget."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        b = current()
        if b is None:
            return self._inner.read(max_bytes, timeout)
        idle_end = None if timeout is None else _clock() + timeout
        while True:
            now = _clock()
            left = b.remaining(now)
            if left <= 0:
                raise httpcore.ReadTimeout(_reason(b))
            step = min(left, SLICE_S)
            if idle_end is not None:
                idle = idle_end - now
                if idle <= 0:
                    raise httpcore.ReadTimeout("timed out")
                step = min(step, idle)
            try:
                return self._inner.read(max_bytes, step)
            except httpcore.ReadTimeout:
                # Nothing was consumed (a socket or TLS read that timed out can be retried):
                # look at the clock and the interruption flag, then wait again.
                continue

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        b = current()
        if b is not None:
            timeout = _cut(timeout, b, httpcore.WriteTimeout)
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        b = current()
        if b is not None:
            timeout = _cut(timeout, b, httpcore.ConnectTimeout)
        return _GuardedStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _GuardedBackend(httpcore.NetworkBackend):
    """Wraps httpcore's backend so that every stream it opens obeys the budgets."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        b = current()
        if b is not None:
            timeout = _cut(timeout, b, httpcore.ConnectTimeout)
        return _GuardedStream(
            self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        b = current()
        if b is not None:
            timeout = _cut(timeout, b, httpcore.ConnectTimeout)
        return _GuardedStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _pools(client: httpx.Client) -> list[Any]:
    # httpx has no public hook for httpcore's network backend; its transports keep their
    # connection pool in ``_pool`` (tests/integration/test_deadlines.py fails if that changes).
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    return [t._pool for t in transports if t is not None and hasattr(t, "_pool")]


def send(client: httpx.Client, request: httpx.Request) -> httpx.Response:
    """``client.send(request, stream=True)`` without what this tool never uses of it.

    The request goes straight to the transport ``client`` picks for its URL (its connection
    pool, or a proxy from the environment), so the budget guard and the proxies still hold.
    Skipped: auth flows and redirects (requests carry their own headers; redirects are
    followed by hand or refused), event hooks (none) and the cookie jar (the Platform
    authenticates by token and presigned URLs by signature: a cookie set by either must not
    ride along on later requests). On loopback ``Client.send`` cost about 0.3 ms of CPU per
    request, most of it the cookie jar; downloads make three requests a file.

    Falls back to ``client.send`` when httpx has no ``_transport_for_url``
    (``tests/integration/test_deadlines.py`` fails if that changes).
    """
    pick = getattr(client, "_transport_for_url", None)
    if pick is None or client.is_closed:
        return client.send(request, stream=True, follow_redirects=False, auth=None)
    try:
        response = pick(request.url).handle_request(request)
    except httpx.RequestError as exc:
        exc.request = request
        raise
    response.request = request
    return response


def guard(client: httpx.Client) -> httpx.Client:
    """Make every socket of ``client`` obey the calling thread's budget; returns ``client``."""
    for pool in _pools(client):
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not isinstance(backend, _GuardedBackend):
            pool._network_backend = _GuardedBackend(backend)
    return client


def guard_transport(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """``guard`` for a transport handed to a client we do not build (githubkit's)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None:
        raise RuntimeError("httpx.HTTPTransport has no connection pool to guard")
    if not isinstance(backend, _GuardedBackend):
        pool._network_backend = _GuardedBackend(backend)  # type: ignore[union-attr]
    return transport


def is_guarded(client: httpx.Client) -> bool:
    """Whether ``guard`` took hold: every socket-backed transport of ``client`` is guarded."""
    pools = _pools(client)
    return bool(pools) and all(
        isinstance(getattr(p, "_network_backend", None), _GuardedBackend) for p in pools
    )
