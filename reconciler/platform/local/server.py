"""Loopback HTTP server for the local Platform and the ``osmosis-platform-emulator`` CLI.

Standard library only (``http.server.ThreadingHTTPServer``); every request is answered by
``LocalPlatform.handle``, the same code path as the in-process transport. A "drop" answer
closes the socket without writing a byte; the misbehaving-server faults (``Faults``:
``silent``, ``trickle_ms``, ``stall_downloads_after``) hold the connection open without
answering, write one byte at a time, or stop halfway through a body. A held connection is
let go when the client closes it or the server is closed.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from reconciler.platform.local.app import SYNC_STATUSES, LocalPlatform, Response
from reconciler.platform.local.faults import Faults

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
            from reconciler.platform.local.app import Response

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
    return ServerHandle(server, thread, url, bound, platform, stopping)


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
    serve.add_argument(
        "--trickle-ms", type=int, default=0, help="write every API answer a byte at a time"
    )
    serve.add_argument("--silent", action="store_true", help="never answer API requests")
    serve.add_argument(
        "--stall-downloads-after", type=int, default=-1, metavar="N",
        help="presigned GETs after the first N stall halfway through the body",
    )  # fmt: skip
    serve.add_argument("--fault-seed", type=int, default=0)
    serve.add_argument("--access-log", help="file for access-log lines (default: stderr)")

    secret = sub.add_parser("secret", help="manage secrets")
    secret_sub = secret.add_subparsers(dest="secret_command", required=True)
    sset = secret_sub.add_parser(
        "set", help="store a secret through the S2 route (value from stdin or --from-env)"
    )
    sset.add_argument("name")
    # Personal is the default scope, as on the Platform (platform-api.md S2); runs submitted
    # from CI need --scope workspace.
    sset.add_argument("--scope", choices=("user", "workspace"), default="user")
    sset.add_argument(
        "--from-env", metavar="VAR", help="read the value from this env var (default: stdin)"
    )
    _target_args(sset)

    bench = sub.add_parser("benchmark", help="see and manage the catalog")
    bench_sub = bench.add_subparsers(dest="benchmark_command", required=True)
    blist = bench_sub.add_parser("list", help="list the catalog (E1)")
    blist.add_argument("--json", action="store_true", help="print the E1 items as JSON")
    _target_args(blist)
    binfo = bench_sub.add_parser("info", help="show one benchmark (E2)")
    binfo.add_argument("ref", help="key, name or id")
    binfo.add_argument("--tasks", action="store_true", help="list every task")
    binfo.add_argument("--json", action="store_true", help="print the E2 body as JSON")
    _target_args(binfo)
    bsync = bench_sub.add_parser("sync", help="set a benchmark's sync status")
    bsync.add_argument("ref", help="key, name or id")
    bsync.add_argument("--status", choices=SYNC_STATUSES, required=True)
    bsync.add_argument("--synced", type=int)
    bsync.add_argument("--error")
    _target_args(bsync, workspace=False)
    return parser


def _target_args(parser: argparse.ArgumentParser, *, workspace: bool = True) -> None:
    parser.add_argument(
        "--data", default=DEFAULT_DATA_DIR, help="data directory, when no --platform is given"
    )
    parser.add_argument(
        "--platform",
        metavar="URL",
        help="a running emulator (serve) to talk to over HTTP instead of the data directory; "
        "the token is OSMOSIS_TOKEN (any, unless the server was started with --token)",
    )
    if workspace:
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--workspace", help="workspace name (default: default)")
        scope.add_argument("--git", metavar="OWNER/REPO", help="the workspace of this repository")


class _Target:
    """Where a command goes: the data directory in-process, or a running server over HTTP.

    Both answer through ``LocalPlatform.handle`` (the server's own code path), so a command
    does the same thing either way.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.url = args.platform if args.platform not in (None, "", "local") else None
        self.headers = {
            "Authorization": f"Bearer {os.environ.get('OSMOSIS_TOKEN') or 'local'}",
            "Content-Type": "application/json",
        }
        git = getattr(args, "git", None)
        if git:
            self.headers["X-Osmosis-Git"] = git
        else:
            self.headers["X-Osmosis-Workspace"] = getattr(args, "workspace", None) or "default"
        self.platform = None if self.url else LocalPlatform(Path(args.data))

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        import json

        raw = b"" if body is None else json.dumps(body).encode("utf-8")
        if self.platform is not None:
            answer = self.platform.handle(method, path, self.headers, raw)
            return answer.status, answer.json() if answer.body else {}
        assert self.url is not None  # no embedded platform means a URL was given
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=raw or None, headers=self.headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}")
            except ValueError:
                return exc.code, {}
        except (urllib.error.URLError, OSError) as exc:
            return 0, {"error": f"cannot reach {self.url}: {exc}"}


def _fail(status: int, payload: Any) -> int:
    message = payload.get("error") if isinstance(payload, dict) else None
    print(f"error: {message or f'HTTP {status}'}", file=sys.stderr)
    for issue in (payload.get("issues") or []) if isinstance(payload, dict) else []:
        print(f"  - {issue.get('key')}: {issue.get('message')}", file=sys.stderr)
    return 1


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
        trickle_ms=args.trickle_ms,
        silent=args.silent,
        stall_downloads_after=args.stall_downloads_after,
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
    if args.from_env:
        value = os.environ.get(args.from_env, "")
    else:
        value = sys.stdin.read().rstrip("\r\n")
    if not value:
        print("error: empty secret value", file=sys.stderr)
        return 2
    target = _Target(args)
    status, payload = target.call(
        "POST",
        "/api/cli/environment-secrets",
        {"name": args.name, "value": value, "scope": args.scope},
    )
    if status != 200:
        return _fail(status, payload)
    where = f"git {args.git}" if args.git else f"workspace {args.workspace or 'default'}"
    print(f"secret {args.name} set ({args.scope} scope, {where})")
    return 0


def _benchmark_sync(args: argparse.Namespace) -> int:
    if args.platform not in (None, "", "local"):
        from urllib.parse import quote

        status, payload = _Target(args).call(
            "POST",
            f"/_emulator/benchmarks/{quote(args.ref, safe='')}/sync",
            {"status": args.status, "synced": args.synced, "error": args.error},
        )
        if status != 200:
            return _fail(status, payload)
    else:
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


def _benchmark_list(args: argparse.Namespace) -> int:
    import json

    target = _Target(args)
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        status, payload = target.call("GET", f"/api/cli/benchmarks?limit=50&offset={offset}")
        if status != 200:
            return _fail(status, payload)
        items.extend(payload.get("benchmarks") or [])
        offset = payload.get("next_offset") if payload.get("has_more") else None
    if args.json:
        print(json.dumps(items, indent=2))
        return 0
    rows = [("KEY", "NAME", "TASKS", "SYNC")]
    for item in items:
        sync = item.get("sync_status") or "ready"
        if sync == "syncing":
            sync += f" ({item.get('synced_task_count', 0)}/{item.get('task_count', 0)})"
        tasks = "unavailable" if sync == "failed" else str(item.get("task_count", 0))
        rows.append((item["source_ref"], item["name"], tasks, sync))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[3]
        )
    return 0


def _benchmark_info(args: argparse.Namespace) -> int:
    import json
    from urllib.parse import quote

    status, payload = _Target(args).call("GET", f"/api/cli/benchmarks/{quote(args.ref, safe='')}")
    if status != 200:
        return _fail(status, payload)
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    b = payload["benchmark"]
    harness = (
        "official scaffold only"
        if not b.get("supports_harness", True)
        else ("required" if b.get("requires_harness") else "optional")
    )
    if b.get("default_harness"):
        harness += f" (default: {b['default_harness']})"
    judge = "–"
    if b.get("requires_judge_model"):
        judge = f"required (default: {b.get('judge_model_default') or 'none'})"
    elif b.get("requires_judge_api_key"):
        judge = "API key only (pinned grader)"
    sets = ", ".join(
        f"{s['name']} ({s['task_count']}{', recommended' if s.get('recommended') else ''})"
        for s in b.get("task_sets") or []
    )
    categories = ", ".join(f"{c['name']} ({c['task_count']})" for c in b.get("categories") or [])
    unavailable = b.get("unavailable_tasks") or {}
    rows = [
        ("Name", b["name"]),
        ("Key", b["source_ref"]),
        ("ID", b["id"]),
        ("Source", b.get("source_url") or f"{b.get('source_type')}: {b['source_ref']}"),
        ("Sync", b.get("sync_status") or "ready"),
        ("Tasks", str(b.get("task_count", 0))),
        ("Categories", categories or "–"),
        ("Named Task Sets", sets or "–"),
        ("Harness", harness),
        ("LLM Judge", judge),
        ("Pass Threshold", f"{b.get('pass_threshold')}"),
        ("Required Secrets", ", ".join(b.get("required_secret_names") or []) or "–"),
        (
            "Unavailable",
            f"{len(unavailable.get('tasks') or [])} ({unavailable.get('reason') or 'no reason'})"
            if unavailable.get("tasks")
            else "–",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label.ljust(width)}  {value}")
    board = payload.get("leaderboard") or []
    if board:
        print("\nLeaderboard:")
        for entry in board:
            p1 = (entry.get("pass_at_1") or {}).get("value")
            shown = f"{p1 * 100:.1f}%" if isinstance(p1, int | float) else "–"
            agent = f"{entry.get('model')} ({entry.get('harness') or 'official scaffold'})"
            print(f"  #{entry.get('rank')}  {agent}  [{entry.get('task_set')}]  pass@1 {shown}")
    if args.tasks:
        print("\nTasks:")
        for task in b.get("tasks") or []:
            print(
                f"  {task['name']}  {task.get('category') or '–'}  {task.get('difficulty') or '–'}"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``osmosis-platform-emulator``."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "secret":
        return _secret_set(args)
    if args.benchmark_command == "list":
        return _benchmark_list(args)
    if args.benchmark_command == "info":
        return _benchmark_info(args)
    return _benchmark_sync(args)


if __name__ == "__main__":
    sys.exit(main())
