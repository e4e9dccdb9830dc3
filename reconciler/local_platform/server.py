"""Loopback HTTP server for the local Platform.

The command itself (``osmosis-platform-emulator``) is ``cli``, which imports this module;
this one imports no command line.

Standard library only (``http.server.ThreadingHTTPServer``); every request is answered by
``LocalPlatform.handle``, the same code path as the in-process transport. A "drop" answer
closes the socket without writing a byte; the misbehaving-server faults (``Faults``:
``silent``, ``trickle_ms``, ``stall_downloads_after``) hold the connection open without
answering, write one byte at a time, or stop halfway through a body. A held connection is
let go when the client closes it or the server is closed.
"""

from __future__ import annotations

import re
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO

from reconciler.local_platform.answers import Response
from reconciler.local_platform.app import LocalPlatform

_PRESIGNED_RE = re.compile(r"^/_presigned/[^/]+")


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a client that opens more connections at
    # once (the transfer threads of a parallel download) had connections dropped by the
    # kernel (TcpExtListenOverflows) and waited for TCP's retransmit, a second at a time.
    request_queue_size = 128


def _log_path(target: str) -> str:
    """The path as logged: no query string, presigned signatures redacted."""
    path = target.split("?", 1)[0]
    return _PRESIGNED_RE.sub("/_presigned/<redacted>", path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "osmosis-local-platform"
    sys_version = ""
    # Set on the subclass made per server.
    platform: LocalPlatform
    access_log: IO[str] | None
    log_lock: threading.Lock
    stopping: threading.Event
    """Set when the server closes: held connections are let go."""
    HOLD_MAX_S = 600.0

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without TCP_NODELAY, Nagle plus the
        # client's delayed ACK adds ~40 ms to every keep-alive response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        started = time.monotonic()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        headers = {k: v for k, v in self.headers.items()}
        try:
            answer = self.platform.handle(self.command, self.path, headers, body)
        except Exception:  # a bug must not kill the server thread silently: answer 500
            import traceback

            traceback.print_exc(file=sys.stderr)
            answer = Response(
                500, {"Content-Type": "application/json"}, b'{"error":"Internal error"}'
            )
        if answer.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._log(answer.status, started, dropped=True)
            return
        if answer.silent or answer.trickle_s > 0 or answer.stall_after is not None:
            self._misbehave(answer)
            self._log(answer.status, started, dropped=answer.silent)
            return
        self.send_response(answer.status)
        for key, value in answer.headers.items():
            if key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)
        self._log(answer.status, started)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = _serve

    def _misbehave(self, answer: Response) -> None:
        """Answer as a broken server would: not at all, a byte at a time, or halfway."""
        self.close_connection = True
        if answer.silent:
            self._hold()
            return
        reason = self.responses.get(answer.status, ("",))[0]
        head = [f"HTTP/1.1 {answer.status} {reason}"]
        head += [f"{k}: {v}" for k, v in answer.headers.items() if k.lower() != "content-length"]
        head += [f"Content-Length: {len(answer.body)}", "Connection: close", "", ""]
        raw = "\r\n".join(head).encode("latin-1")
        body = b"" if self.command == "HEAD" else answer.body
        try:
            if answer.stall_after is not None:
                self.connection.sendall(raw + body[: answer.stall_after])
                self._hold()
                return
            for byte in raw + body:
                self.connection.sendall(bytes((byte,)))
                if self.stopping.wait(answer.trickle_s):
                    return
        except OSError:  # the client gave up: that is the point
            return

    def _hold(self) -> None:
        """Keep the connection open, sending nothing, until the client closes it."""
        end = time.monotonic() + self.HOLD_MAX_S
        while time.monotonic() < end and not self.stopping.is_set():
            try:
                readable, _, _ = select.select([self.connection], [], [], 0.1)
                if readable and not self.connection.recv(4096):
                    return
            except OSError:
                return

    def _log(self, status: int, started: float, dropped: bool = False) -> None:
        if self.access_log is None:
            return
        ms = (time.monotonic() - started) * 1000
        shown = "dropped" if dropped else str(status)
        line = f"{self.command} {_log_path(self.path)} {shown} {ms:.1f}ms\n"
        with self.log_lock:
            self.access_log.write(line)
            self.access_log.flush()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        # http.server's own log would print the full path and query; ours is _log.
        return


@dataclass
class ServerHandle:
    """A running loopback server: ``url``, ``port``, ``close()``."""

    server: ThreadingHTTPServer
    thread: threading.Thread
    url: str
    port: int
    platform: LocalPlatform
    stopping: threading.Event = field(default_factory=threading.Event)

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_server(
    platform: LocalPlatform,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    access_log: IO[str] | None = None,
) -> ServerHandle:
    """Serve ``platform`` on ``host:port`` (0 = a free port) from a daemon thread.

    When the platform still has the default ``public_url``, it is pointed at the bound
    address so presigned URLs and ``platform_url`` links work over loopback.
    """
    stopping = threading.Event()
    handler = type(
        "LocalPlatformHandler",
        (_Handler,),
        {
            "platform": platform,
            "access_log": access_log,
            "log_lock": threading.Lock(),
            "stopping": stopping,
        },
    )
    server = _Server((host, port), handler)
    server.daemon_threads = True
    bound = server.server_address[1]
    url = f"http://{host}:{bound}"
    if platform.public_url == "http://localhost":
        platform.public_url = url
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name=f"local-platform-{bound}",
        daemon=True,
    )
    thread.start()
    return ServerHandle(server, thread, url, bound, platform, stopping)
