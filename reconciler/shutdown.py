"""The process-wide "we are shutting down" flag (SIGTERM, Ctrl-C).

Set by the CLI's signal handling before the ``KeyboardInterrupt`` unwinds the main thread;
worker threads blocked on the network or in a backoff cannot receive the signal, so they
look at this flag instead (``reconciler.deadlines`` cuts their reads within a fraction of
a second, ``sleep`` returns early). Standard library only, so that importing it costs the
CLI's start-up nothing.
"""

from __future__ import annotations

import threading

__all__ = ["begin", "clear", "event", "requested", "sleep"]

_EVENT = threading.Event()


def begin() -> None:
    """The process is shutting down: every budget ends (after its grace), every sleep returns."""
    _EVENT.set()


def requested() -> bool:
    return _EVENT.is_set()


def clear() -> None:
    """Forget an earlier ``begin`` (a new command in the same process, tests)."""
    _EVENT.clear()


def event() -> threading.Event:
    return _EVENT


def sleep(seconds: float) -> None:
    """``time.sleep`` that returns early once shutdown has begun."""
    if seconds > 0:
        _EVENT.wait(seconds)
