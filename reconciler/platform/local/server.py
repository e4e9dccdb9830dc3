"""Loopback HTTP server for the local Platform and the ``osmosis-platform-emulator`` CLI.

Standard library only (``http.server.ThreadingHTTPServer``); every request is answered by
``LocalPlatform.handle``, the same code path as the in-process transport. A "drop" answer
closes the socket without writing a byte.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO

from .app import LocalPlatform
from .faults import Faults

DEFAULT_DATA_DIR = ".osmosis/local-platform"
_PRESIGNED_RE = re.compile(r"^/_presigned/[^/]+")


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
            from .app import Response

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

    def close(self) -> None:
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
    handler = type(
        "LocalPlatformHandler",
        (_Handler,),
        {"platform": platform, "access_log": access_log, "log_lock": threading.Lock()},
    )
    server = ThreadingHTTPServer((host, port), handler)
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
    return ServerHandle(server, thread, url, bound, platform)


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="osmosis-platform-emulator",
        description="The local Osmosis Platform: serve it over loopback HTTP, or seed its data.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the Platform API on 127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="port (0 = a free port, printed)")
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    serve.add_argument("--data", default=DEFAULT_DATA_DIR, help="data directory (SQLite)")
    serve.add_argument("--speed", type=float, default=1.0, help="simulated-time factor")
    serve.add_argument("--seed", type=int, default=0, help="seed for names and outcomes")
    serve.add_argument("--token", help="the only accepted bearer token (default: any)")
    serve.add_argument(
        "--workspace", action="append", default=[], help="workspace to create (repeatable)"
    )
    serve.add_argument(
        "--strict-workspaces", action="store_true", help="unknown workspaces are refused"
    )
    serve.add_argument("--latency-ms", type=int, default=0)
    serve.add_argument("--latency-spike-ms", type=int, default=0)
    serve.add_argument("--latency-spike-rate", type=float, default=0.0)
    serve.add_argument("--error-rate", type=float, default=0.0, help="share of 5xx answers")
    serve.add_argument("--rate-limit-rate", type=float, default=0.0, help="share of 429 answers")
    serve.add_argument("--retry-after", type=int, default=1, help="Retry-After seconds on 429")
    serve.add_argument("--drop-rate", type=float, default=0.0, help="share of dropped connections")
    serve.add_argument(
        "--drop-after-submit-rate", type=float, default=0.0,
        help="share of submits committed and then answered by a dropped connection",
    )  # fmt: skip
    serve.add_argument("--after-submit-delay-ms", type=int, default=0)
    serve.add_argument("--presign-ttl", type=int, default=900, help="presigned URL lifetime (s)")
    serve.add_argument("--benchmarks-disabled", action="store_true", help="the feature gate")
    serve.add_argument(
        "--rate-limit-after-submit-rate", type=float, default=0.0,
        help="share of submits committed and then answered 429",
    )  # fmt: skip
    serve.add_argument(
        "--wrong-submit-reply-rate", type=float, default=0.0,
        help="share of submits committed and then answered with a body of the wrong shape",
    )  # fmt: skip
    serve.add_argument(
        "--list-omit-rate", type=float, default=0.0,
        help="share of runs the run list leaves out (a direct read still returns them)",
    )  # fmt: skip
    serve.add_argument("--fault-seed", type=int, default=0)
    serve.add_argument("--access-log", help="file for access-log lines (default: stderr)")

    secret = sub.add_parser("secret", help="manage secrets in a data dir")
    secret_sub = secret.add_subparsers(dest="secret_command", required=True)
    sset = secret_sub.add_parser("set", help="store a secret through the S2 route")
    sset.add_argument("name")
    sset.add_argument("--data", default=DEFAULT_DATA_DIR)
    sset.add_argument("--workspace", default="default")
    sset.add_argument("--scope", choices=("workspace", "user"), default="workspace")
    sset.add_argument(
        "--from-env", metavar="VAR", help="read the value from this env var (default: stdin)"
    )

    bench = sub.add_parser("benchmark", help="manage the catalog in a data dir")
    bench_sub = bench.add_subparsers(dest="benchmark_command", required=True)
    bsync = bench_sub.add_parser("sync", help="set a benchmark's sync status")
    bsync.add_argument("ref", help="key, name or id")
    bsync.add_argument("--data", default=DEFAULT_DATA_DIR)
    bsync.add_argument("--status", choices=("ready", "pending", "syncing", "failed"), required=True)
    bsync.add_argument("--synced", type=int)
    bsync.add_argument("--error")
    return parser


def _serve(args: argparse.Namespace) -> int:
    faults = Faults(
        latency_ms=args.latency_ms,
        latency_spike_ms=args.latency_spike_ms,
        latency_spike_rate=args.latency_spike_rate,
        error_rate=args.error_rate,
        rate_limit_rate=args.rate_limit_rate,
        retry_after_s=args.retry_after,
        drop_rate=args.drop_rate,
        drop_after_submit_rate=args.drop_after_submit_rate,
        after_submit_delay_ms=args.after_submit_delay_ms,
        presign_ttl_s=args.presign_ttl,
        benchmarks_disabled=args.benchmarks_disabled,
        rate_limit_after_submit_rate=args.rate_limit_after_submit_rate,
        wrong_submit_reply_rate=args.wrong_submit_reply_rate,
        list_omit_rate=args.list_omit_rate,
        seed=args.fault_seed,
    )
    platform = LocalPlatform(
        Path(args.data),
        speed=args.speed,
        seed=args.seed,
        token=args.token,
        faults=faults,
        auto_workspaces=not args.strict_workspaces,
        workspaces=tuple(args.workspace) or ("default",),
    )
    log: IO[str] = open(args.access_log, "a", encoding="utf-8") if args.access_log else sys.stderr  # noqa: SIM115
    handle = start_server(platform, args.host, args.port, access_log=log)
    print(f"listening on {handle.url}", flush=True)
    stop = threading.Event()
    try:
        import signal

        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    except ValueError:  # not the main thread
        pass
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()
        if log is not sys.stderr:
            log.close()
    return 0


def _secret_set(args: argparse.Namespace) -> int:
    import json

    if args.from_env:
        value = os.environ.get(args.from_env, "")
    else:
        value = sys.stdin.read().rstrip("\r\n")
    if not value:
        print("error: empty secret value", file=sys.stderr)
        return 2
    platform = LocalPlatform(Path(args.data), workspaces=(args.workspace,))
    body = json.dumps({"name": args.name, "value": value, "scope": args.scope}).encode()
    answer = platform.handle(
        "POST",
        "/api/cli/environment-secrets",
        {
            "Authorization": "Bearer local",
            "X-Osmosis-Workspace": args.workspace,
            "Content-Type": "application/json",
        },
        body,
    )
    if answer.status != 200:
        print(f"error: {answer.json().get('error')}", file=sys.stderr)
        return 1
    print(f"secret {args.name} set ({args.scope} scope, workspace {args.workspace})")
    return 0


def _benchmark_sync(args: argparse.Namespace) -> int:
    platform = LocalPlatform(Path(args.data))
    try:
        platform.set_benchmark_sync(
            args.ref, args.status, synced_task_count=args.synced, sync_error=args.error
        )
    except KeyError:
        print(f"error: no benchmark {args.ref!r}", file=sys.stderr)
        return 1
    print(f"benchmark {args.ref}: sync_status {args.status}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``osmosis-platform-emulator``."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "secret":
        return _secret_set(args)
    return _benchmark_sync(args)


if __name__ == "__main__":
    sys.exit(main())
