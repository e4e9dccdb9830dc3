"""The run listing fetched on a thread while the configs and the lockfile are read."""

from __future__ import annotations

import threading
from collections.abc import Callable

from reconciler.engine.observe import RunWalk


class Prefetch:
    """Runs ``fetch`` on a daemon thread; ``result()`` returns its value or raises its error.

    Daemon, so a config error that ends the command never waits for the fetch to finish
    (its own error, if any, is then dropped).
    """

    def __init__(self, fetch: Callable[[], RunWalk]) -> None:
        self._fetch = fetch
        self._value: RunWalk | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="prefetch-runs", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fetch()
        except BaseException as exc:  # re-raised by result(), in the caller's thread
            self._error = exc

    def result(self) -> RunWalk:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value
