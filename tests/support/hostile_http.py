"""A misbehaving HTTP server on 127.0.0.1 (a thread): what a hostile Platform or GitHub does.

Every request gets the same treatment, chosen when the server starts:

* ``huge``: a 200 JSON-looking answer of ``size`` bytes, generated on the fly (never held
  in memory), with or without ``Content-Length`` (``announce``);
* ``trickle``: a 200 whose body arrives one byte every ``interval`` seconds, forever;
* ``echo_auth``: a 401 whose ``message`` quotes the request's ``Authorization`` header, as
  some proxies and GitHub Enterprise error pages do;
* ``redirect``: a 307 to ``location`` with no body.

``requests`` counts what arrived; ``sent`` the body bytes written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.support.http_server import LoopbackServer

CHUNK = b" " * 65536


@dataclass
class HostileServer:
    mode: str
    size: int = 1024**3
    announce: bool = True
    interval: float = 2.0
    location: str = "https://elsewhere.example/api"
    requests: int = 0
    sent: int = 0
    _server: LoopbackServer | None = field(default=None, repr=False)

    def start(self) -> HostileServer:
        self._server = LoopbackServer(self._any, http11=True)
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return self._server.url

    def _any(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        del method  # every request gets the same treatment
        self.requests += 1
        length = int(handler.headers.get("Content-Length") or 0)
        if length:
            handler.rfile.read(length)
        try:
            getattr(self, "_" + self.mode)(handler)
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- the treatments ---------------------------------------------------------------

    def _huge(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if self.announce:
            handler.send_header("Content-Length", str(self.size))
        else:
            handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(b'{"items": "')
        left = self.size - 11
        while left > 0:
            part = CHUNK[: min(left, len(CHUNK))]
            handler.wfile.write(part)
            self.sent += len(part)
            left -= len(part)
        handler.close_connection = True

    def _trickle(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        for _ in range(100000):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            self.sent += 1
            time.sleep(self.interval)

    def _echo_auth(self, handler: BaseHTTPRequestHandler) -> None:
        auth = handler.headers.get("Authorization") or ""
        body = json.dumps(
            {"message": f"Bad credentials: {auth} was refused", "echo": {"authorization": auth}}
        ).encode()
        handler.send_response(401)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _redirect(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(307)
        handler.send_header("Location", self.location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()


@dataclass(frozen=True)
class Finished:
    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float
    """The command's own peak resident memory (``wait4``'s ``ru_maxrss``), in MiB."""


_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_pid, status, usage = os.wait4(pid, 0)
with open(os.environ["OSMOSIS_MEASURE_RSS_FILE"], "w") as handle:
    handle.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs the command as its child and reports the child's ``ru_maxrss``. Linux keeps a
process's high-water mark across ``exec``, so a command forked straight from a big test
process would be charged that process's memory (433 MB measured under ``make test``); a
small launcher in between makes the figure the command's own."""


def run_measured(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str, timeout: float = 300.0
) -> Finished:
    """Run a command to its end; its exit code, output, wall time and peak memory."""
    with tempfile.TemporaryDirectory() as tmp:
        rss_file = os.path.join(tmp, "rss")
        start = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-c", _LAUNCHER, *argv],
                env={**env, "OSMOSIS_MEASURE_RSS_FILE": rss_file},
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
            )
        finally:
            seconds = time.monotonic() - start
        with open(rss_file, encoding="utf-8") as handle:
            peak_kib = int(handle.read())
    return Finished(
        code=done.returncode,
        stdout=done.stdout.decode("utf-8", "replace"),
        stderr=done.stderr.decode("utf-8", "replace"),
        seconds=seconds,
        peak_rss_mb=peak_kib / 1024,
    )
