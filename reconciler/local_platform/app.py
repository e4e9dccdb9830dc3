"""The local Platform application: every route of platform-api.md §2 behind one ``handle``.

``LocalPlatform.handle(method, target, headers, body) -> Response`` is the only code path:
the in-process httpx transport and the loopback HTTP server both call it. The routes live
in one module per family, each a mixin over the shared ``PlatformCore`` (``core``):
``benchmarks`` (E1, E2, the workspace catalog), ``secret_routes`` (S1-S3), ``runs``
(E3-E7), ``outputs`` (E8, E9, presigned downloads), ``history`` (``seed_runs``) and
``pages`` (the HTML page behind every ``platform_url``). Choices made where the spec says
"not determinable" are listed in the package docstring and in docs/local-platform.md.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, unquote

from reconciler.local_platform import simulation
from reconciler.local_platform.answers import ApiError, Response, json_response, parse_json
from reconciler.local_platform.benchmarks import SYNC_STATUSES, BenchmarkRoutes
from reconciler.local_platform.core import GIT_IDENTITY_RE, Workspace
from reconciler.local_platform.faults import Draw
from reconciler.local_platform.history import History
from reconciler.local_platform.outputs import PRESIGNED_PREFIX, OutputRoutes
from reconciler.local_platform.pages import PageRoutes
from reconciler.local_platform.runs import RunRoutes
from reconciler.local_platform.secret_routes import SecretRoutes
from reconciler.local_platform.users import LOCAL_USER, User

__all__ = ["SYNC_STATUSES", "LOCAL_USER", "LocalPlatform", "Response"]

API_PREFIX = "/api/cli/"
ADMIN_PREFIX = "/_emulator/"
LOCAL_PLATFORM_HEADER = "X-Osmosis-Local-Platform"
"""How a served local Platform identifies itself: on every page answer, its instance (its
data directory's id), no token needed. ``reconciler.platform.identity`` spells it again (the
client never imports the emulator); tests/integration/test_state_migrate.py meets both."""
"""The emulator's own routes (not the Platform API): what ``osmosis-platform-emulator``
does to a data dir, for a server already running on it. Authenticated like the API."""
FEATURE_GATE_MESSAGE = "Benchmarks is not available for your account"
FEATURE_GATE_STATUS = 403
TOKEN_LIFETIME_S = 90 * 86400

RouteFn = Callable[[Workspace, User, list[str], Mapping[str, str], bytes, Draw], Response]


class LocalPlatform(RunRoutes, History, OutputRoutes, SecretRoutes, PageRoutes, BenchmarkRoutes):
    """The Osmosis Platform's benchmark API, emulated over SQLite in ``data_dir``.

    Several instances (in one or several processes) may share one ``data_dir``. See
    ``PlatformCore`` for the arguments: ``speed`` and ``seed`` (stored in the data dir
    unless given), ``token`` or ``users`` (who may call), ``auto_workspaces`` (unknown
    workspaces appear on first use, with the whole catalog), ``public_url`` (the base of
    ``platform_url`` links and presigned URLs; ``start_server`` points it at the bound
    address), ``faults`` and ``clock``.
    """

    def __repr__(self) -> str:  # never show a token
        return (
            f"LocalPlatform(data_dir={str(self.data_dir)!r}, speed={self.speed}, seed={self.seed})"
        )

    @property
    def fault_counts(self) -> dict[str, int]:
        """How many faults of each kind were injected (``error``, ``rate_limit``, ``drop``,
        ``drop_after_submit``, ``latency_spike``, ``feature_gate``, ``silent``, ``trickle``,
        ``logs``, ``stalled_download``; ``presigned_get`` counts GETs while downloads may stall)."""
        return dict(self.injector.counts)

    # ------------------------------------------------------------------ entry point

    def handle(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes = b""
    ) -> Response:
        """Answer one HTTP request. ``target`` is the raw path with its query string."""
        method = method.upper()
        lowered = {k.lower(): v for k, v in headers.items()}
        path, _, query = target.partition("?")
        if path.startswith(PRESIGNED_PREFIX):
            # Presigned downloads model object storage: never faulted, never authenticated.
            try:
                answer = self._presigned(method, path)
            except ApiError as exc:
                return json_response(exc.status, exc.body, exc.headers)
            if method == "GET" and self.injector.stall_download():
                return replace(answer, stall_after=len(answer.body) // 2)
            return answer
        if not path.startswith((API_PREFIX, ADMIN_PREFIX)):
            # The pages behind platform_url links: for people, so never faulted, and not
            # drawn from the fault sequence the API's requests share. They say which local
            # Platform this is, without a token: a client that must not send a token in
            # plaintext beyond loopback asks here first (``platform.identity``).
            answer = self._page_answer(method, path, query, lowered, body)
            identity = {LOCAL_PLATFORM_HEADER: self.instance or "local"}
            return replace(answer, headers={**answer.headers, **identity})
        draw = self.injector.draw()
        if path.endswith("/logs") and (self.faults.silent_logs or self.faults.failing_logs):
            self.injector.count("logs")
            if self.faults.silent_logs:
                return Response(0, silent=True)
            return json_response(
                500, {"error": "Injected log store error", "code": "INTERNAL_ERROR"}
            )
        if self.faults.silent:
            self.injector.count("silent")
            return Response(0, silent=True)
        if self.faults.trickle_ms > 0:
            self.injector.count("trickle")
            answer = self._answer(method, path, query, lowered, body, draw)
            return replace(answer, trickle_s=self.faults.trickle_ms / 1000.0)
        return self._answer(method, path, query, lowered, body, draw)

    def _answer(
        self,
        method: str,
        path: str,
        query: str,
        lowered: Mapping[str, str],
        body: bytes,
        draw: Draw,
    ) -> Response:
        """The API answer after the drawn faults (latency, drop, 5xx, 429) and the route."""
        if draw.delay_s > 0:
            time.sleep(draw.delay_s)
        if draw.drop:
            self.injector.count("drop")
            return Response(0, drop=True)
        if draw.error_status is not None:
            self.injector.count("error")
            return json_response(
                draw.error_status,
                {
                    "error": f"Injected server error (HTTP {draw.error_status})",
                    "code": "INTERNAL_ERROR",
                },
            )
        if draw.rate_limited:
            self.injector.count("rate_limit")
            return json_response(
                429,
                {"error": "Too many requests; slow down.", "code": "RATE_LIMITED"},
                {"Retry-After": str(self.faults.retry_after_s)},
            )
        try:
            if path.startswith(ADMIN_PREFIX):
                return self._admin(method, path, lowered, body)
            return self._route(method, path, query, lowered, body, draw)
        except ApiError as exc:
            return json_response(exc.status, exc.body, exc.headers)

    def _admin(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        """``POST /_emulator/benchmarks/{ref}/sync`` ``{status, synced?, error?, workspace?}``
        and ``POST /_emulator/benchmarks/{ref}/add`` (to the scoped workspace)."""
        self._authenticate(headers)
        seg = [unquote(s) for s in path[len(ADMIN_PREFIX) :].strip("/").split("/")]
        if len(seg) != 3 or seg[0] != "benchmarks" or seg[2] not in ("sync", "add"):
            raise ApiError(404, f"No route for {method} {path}", "NOT_FOUND")
        self._method(method, "POST")
        if seg[2] == "add":
            ws = self._scope(headers)
            try:
                spec = self.add_to_workspace(ws.name, seg[1])
            except KeyError:
                raise ApiError(
                    404, f"The catalog has no benchmark '{seg[1]}'.", "NOT_FOUND"
                ) from None
            return json_response(200, {"benchmark": spec["source_ref"], "workspace": ws.name})
        data = parse_json(body)
        status = data.get("status") if isinstance(data, dict) else None
        if status not in SYNC_STATUSES:
            raise ApiError(400, f"status must be one of {', '.join(SYNC_STATUSES)}", "VALIDATION")
        workspace = data.get("workspace")
        try:
            self.set_benchmark_sync(
                seg[1],
                status,
                synced_task_count=data.get("synced"),
                sync_error=data.get("error"),
                workspace=workspace if isinstance(workspace, str) else None,
            )
        except KeyError:
            raise ApiError(404, f"Benchmark '{seg[1]}' was not found.", "NOT_FOUND") from None
        return json_response(200, {"benchmark": seg[1], "sync_status": status})

    # ------------------------------------------------------------------ routing

    def _route(
        self,
        method: str,
        path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        draw: Draw,
    ) -> Response:
        if not path.startswith(API_PREFIX):
            raise ApiError(404, f"No route for {method} {path}", "NOT_FOUND")
        raw = path[len(API_PREFIX) :]
        if raw.endswith("/"):
            raw = raw[:-1]
        # Split before decoding so an encoded '/' (%2F) stays inside its segment.
        seg = [unquote(s) for s in raw.split("/")]
        params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
        user = self._authenticate(headers)
        head = seg[0]
        if seg == ["verify"]:
            self._method(method, "GET")
            return self._verify(user, headers)
        if seg == ["workspaces"]:
            self._method(method, "GET")
            return self._workspaces()
        if head == "environment-secrets" and len(seg) == 1:
            ws = self._scope(headers)
            if method == "GET":
                return self._list_secrets(ws, user, params)
            if method == "POST":
                return self._upsert_secret(ws, user, parse_json(body))
            if method == "DELETE":
                return self._delete_secret(ws, user, parse_json(body))
            raise ApiError(405, f"Method {method} not allowed", "METHOD_NOT_ALLOWED")
        if head == "benchmarks" and len(seg) <= 2:
            self._method(method, "GET")
            self._gate()
            ws = self._scope(headers)
            return (
                self._list_benchmarks(ws, params)
                if len(seg) == 1
                else self._get_benchmark(ws, seg[1])
            )
        if head == "benchmark-runs":
            route = self._run_route(method, seg)
            self._gate()
            ws = self._scope(headers)
            return route(ws, user, seg, params, body, draw)
        raise ApiError(404, f"No route for {method} {path}", "NOT_FOUND")

    def _run_route(self, method: str, seg: list[str]) -> RouteFn:
        n = len(seg)
        table: dict[tuple[int, str, str], RouteFn] = {
            (1, "", "GET"): lambda ws, u, s, p, b, d: self._list_runs(ws, p),
            (1, "", "POST"): lambda ws, u, s, p, b, d: self._submit(ws, u, parse_json(b), d),
            (2, "", "GET"): lambda ws, u, s, p, b, d: self._get_run(ws, s[1]),
            (3, "logs", "GET"): lambda ws, u, s, p, b, d: self._logs(ws, s[1], p),
            (3, "stop", "POST"): lambda ws, u, s, p, b, d: self._stop(ws, s[1]),
            (4, "outputs/manifest", "GET"): lambda ws, u, s, p, b, d: self._manifest(ws, s[1], p),
            (4, "outputs/download-urls", "POST"): lambda ws, u, s, p, b, d: self._download_urls(
                ws, s[1], parse_json(b)
            ),
        }
        tail = "/".join(seg[2:]) if n > 2 else ""
        route = table.get((n, tail, method))
        if route is not None:
            return route
        if any(k[0] == n and k[1] == tail for k in table):
            raise ApiError(405, f"Method {method} not allowed", "METHOD_NOT_ALLOWED")
        raise ApiError(404, f"No route for {method} /api/cli/{'/'.join(seg)}", "NOT_FOUND")

    def _gate(self) -> None:
        if self.faults.benchmarks_disabled:
            self.injector.count("feature_gate")
            raise ApiError(FEATURE_GATE_STATUS, FEATURE_GATE_MESSAGE)

    # ------------------------------------------------------------------ account

    def _verify(self, user: User, headers: Mapping[str, str]) -> Response:
        token = headers.get("authorization", "").partition(" ")[2].strip()
        token_id = "tok_" + hmac.new(self._presign_key, token.encode(), "sha256").hexdigest()[:16]
        payload: dict[str, Any] = {
            "user": user.as_json(),
            "expires_at": simulation.iso(self.clock() + TOKEN_LIFETIME_S),
            "token_id": token_id,
        }
        git = headers.get("x-osmosis-git")
        if git and GIT_IDENTITY_RE.match(git):
            row = (
                self.store.read()
                .execute("SELECT * FROM workspaces WHERE repo = ?", (git.lower(),))
                .fetchone()
            )
            if row is not None:
                payload["workspace"] = {"id": row["id"], "name": row["name"], "role": row["role"]}
        return json_response(200, payload)

    def _workspaces(self) -> Response:
        rows = self.store.read().execute("SELECT * FROM workspaces ORDER BY name").fetchall()
        items = [
            {
                "id": r["id"],
                "name": r["name"],
                "role": r["role"],
                "has_billing_setup": True,
                "connected_repo": None
                if r["repo"] is None
                else {
                    "id": "repo_" + hashlib.sha256(r["repo"].encode()).hexdigest()[:12],
                    "repo_full_name": r["repo"],
                },
            }
            for r in rows
        ]
        return json_response(200, {"workspaces": items})
