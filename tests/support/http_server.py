"""A small HTTP server on 127.0.0.1 in a thread: the skeleton of the tests' fake servers.

The fakes (``tests/support/github_fake.py``'s GitHub, ``tests/support/hostile_http.py``'s
hostile Platform) decide what to answer; this starts the server on a free port, passes
every request to their ``handle(handler, method)``, and stops it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handle = Callable[[BaseHTTPRequestHandler, str], None]
"""Answers one request: the handler (headers, body, output) and its method."""

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class LoopbackServer:
    """``handle`` served on ``127.0.0.1:0`` until ``close()``; ``url`` is where."""

    def __init__(self, handle: Handle, *, http11: bool = False) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if http11 else "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass  # the fakes keep their own request logs

        for method in METHODS:
            setattr(Handler, f"do_{method}", _dispatch(handle, method))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A request still being answered (a trickle, a huge body) never holds up shutdown.
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _dispatch(handle: Handle, method: str) -> Callable[[BaseHTTPRequestHandler], None]:
    def do(self: BaseHTTPRequestHandler) -> None:
        handle(self, method)

    return do
