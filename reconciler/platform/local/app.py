"""The local Platform application: every route of platform-api.md §2 behind one ``handle``.

``LocalPlatform.handle(method, target, headers, body) -> Response`` is the only code path:
the in-process httpx transport and the loopback HTTP server both call it. Choices made
where the spec says "not determinable" are listed in the package docstring and in
docs/local-platform.md.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from reconciler.plan import submit_rules
from reconciler.platform.local import rules, simulation
from reconciler.platform.local.catalog import benchmark_id as make_benchmark_id
from reconciler.platform.local.catalog import public_view
from reconciler.platform.local.faults import Draw, FaultInjector, Faults
from reconciler.platform.local.store import Store

API_PREFIX = "/api/cli/"
PRESIGNED_PREFIX = "/_presigned/"
SYNC_STATUSES = ("ready", "pending", "syncing", "failed")
ADMIN_PREFIX = "/_emulator/"
"""The emulator's own routes (not the Platform API): what ``osmosis-platform-emulator``
does to a data dir, for a server already running on it. Authenticated like the API."""
LIST_LIMIT_MAX = 50
LOGS_LIMIT_MAX = 200
FEATURE_GATE_MESSAGE = "Benchmarks is not available for your account"
FEATURE_GATE_STATUS = 403
NOT_DOWNLOADABLE_MESSAGE = "Outputs are not yet available for pending or queued benchmark runs."
GIT_IDENTITY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
LOCAL_USER = {"id": "usr_local", "email": "local-user@osmosis.local", "name": "Local User"}
TOKEN_LIFETIME_S = 90 * 86400
DEFAULT_STATUS_MIX: Mapping[str, float] = {
    "finished": 0.75,
    "failed": 0.1,
    "stopped": 0.05,
    "running": 0.05,
    "queued": 0.03,
    "pending": 0.02,
}
ADJECTIVES = (
    "amber", "bold", "brave", "bright", "brisk", "calm", "clever", "cosmic", "crisp", "dapper",
    "eager", "fancy", "fierce", "gentle", "glad", "golden", "grand", "happy", "hardy", "jolly",
    "keen", "kind", "lively", "lucky", "merry", "mighty", "misty", "noble", "plucky", "polar",
    "proud", "quick", "quiet", "rapid", "rosy", "rustic", "sharp", "shiny", "silent", "sleek",
    "snowy", "solar", "steady", "sunny", "swift", "tidy", "vivid", "warm",
)  # fmt: skip
ANIMALS = (
    "badger", "beaver", "bison", "bobcat", "crane", "dingo", "dolphin", "eagle", "egret",
    "falcon", "ferret", "finch", "gecko", "gull", "hare", "heron", "ibis", "jackal", "koala",
    "lemur", "lynx", "marmot", "marten", "mink", "moose", "newt", "ocelot", "orca", "osprey",
    "otter", "panda", "puffin", "quail", "raven", "robin", "salmon", "seal", "shrew", "skunk",
    "sparrow", "stoat", "swan", "tapir", "toucan", "trout", "walrus", "wombat", "yak",
)  # fmt: skip


@dataclass(frozen=True)
class Response:
    """What the platform answers. ``drop`` = close the connection without any response.

    The misbehaving-server faults (``Faults``): ``silent`` = never answer, keep the
    connection open; ``trickle_s`` = write the answer one byte per that many seconds;
    ``stall_after`` = send the headers and that many body bytes, then nothing more.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    drop: bool = False
    silent: bool = False
    trickle_s: float = 0.0
    stall_after: int | None = None

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class ApiError(Exception):
    """An error answer: the §6.1 body shape ``{"error", "code"?, ...}``."""

    def __init__(
        self,
        status: int,
        error: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        /,
        **extra: Any,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.body: dict[str, Any] = {"error": error}
        if code:
            self.body["code"] = code
        self.body.update(extra)
        self.headers = headers or {}


def _json_response(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Response:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    out = {"Content-Type": "application/json"}
    out.update(headers or {})
    return Response(status, out, body)


@dataclass(frozen=True)
class Workspace:
    id: str
    name: str
    repo: str | None
    role: str


def run_name(seed: int, counter: int) -> str:
    """Generated run name: adjective-animal, deterministic from seed and counter.

    A seeded stride walks all 2,304 pairs before any repeats; later cycles get ``-2``,
    ``-3``... (collisions with names already stored are suffixed at insert time).
    """
    size = len(ADJECTIVES) * len(ANIMALS)
    stride = 1 + 2 * (simulation_hash(seed, "stride") % (size // 2))
    while stride % 3 == 0:  # size = 2^8 * 3^2: a stride coprime with it visits every pair
        stride += 2
    offset = simulation_hash(seed, "offset") % size
    index = (offset + counter * stride) % size
    name = f"{ADJECTIVES[index // len(ANIMALS)]}-{ANIMALS[index % len(ANIMALS)]}"
    cycle = counter // size
    return name if cycle == 0 else f"{name}-{cycle + 1}"


def simulation_hash(*parts: object) -> int:
    return int(simulation.h01(*parts) * 2**52)


class LocalPlatform:
    """The Osmosis Platform's benchmark API, emulated over SQLite in ``data_dir``.

    Several instances (in one or several processes) may share one ``data_dir``. ``speed``
    scales simulated time; ``seed`` drives names and outcomes; ``token`` (when set) is the
    only accepted bearer token; ``auto_workspaces`` creates unknown workspaces and Git
    identities on first sight; ``public_url`` is the base of ``platform_url`` links and of
    presigned download URLs (``start_server`` points it at the bound address).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        speed: float = 1.0,
        seed: int = 0,
        token: str | None = None,
        faults: Faults = Faults(),  # noqa: B008 - frozen dataclass, safe as a default
        auto_workspaces: bool = True,
        workspaces: Sequence[str] = ("default",),
        public_url: str = "http://localhost",
        clock: Callable[[], float] = time.time,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.data_dir = Path(data_dir)
        self.speed = float(speed)
        self.seed = int(seed)
        self._token = token
        self.faults = faults
        self.injector = FaultInjector(faults)
        self.auto_workspaces = auto_workspaces
        self.public_url = public_url.rstrip("/")
        self.clock = clock
        self.store = Store(self.data_dir)
        self._presign_key = bytes.fromhex(self.store.meta("presign_key") or "")
        self._bench_lock = threading.Lock()
        self._bench_cache: dict[str, tuple[int, dict[str, Any]]] = {}
        self._final_metrics: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        for name in workspaces:
            self._ensure_workspace(name)

    def __repr__(self) -> str:  # never show the token
        return (
            f"LocalPlatform(data_dir={str(self.data_dir)!r}, speed={self.speed}, seed={self.seed})"
        )

    @property
    def fault_counts(self) -> dict[str, int]:
        """How many faults of each kind were injected (``error``, ``rate_limit``, ``drop``,
        ``drop_after_submit``, ``latency_spike``, ``feature_gate``, ``silent``, ``trickle``,
        ``stalled_download``; ``presigned_get`` counts GETs while downloads may stall)."""
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
                return _json_response(exc.status, exc.body, exc.headers)
            if method == "GET" and self.injector.stall_download():
                return replace(answer, stall_after=len(answer.body) // 2)
            return answer
        draw = self.injector.draw()
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
            return _json_response(
                draw.error_status,
                {
                    "error": f"Injected server error (HTTP {draw.error_status})",
                    "code": "INTERNAL_ERROR",
                },
            )
        if draw.rate_limited:
            self.injector.count("rate_limit")
            return _json_response(
                429,
                {"error": "Too many requests; slow down.", "code": "RATE_LIMITED"},
                {"Retry-After": str(self.faults.retry_after_s)},
            )
        try:
            if path.startswith(ADMIN_PREFIX):
                return self._admin(method, path, lowered, body)
            return self._route(method, path, query, lowered, body, draw)
        except ApiError as exc:
            return _json_response(exc.status, exc.body, exc.headers)

    def _admin(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        """``POST /_emulator/benchmarks/{ref}/sync`` ``{status, synced?, error?}``."""
        self._authenticate(headers)
        seg = [unquote(s) for s in path[len(ADMIN_PREFIX) :].strip("/").split("/")]
        if len(seg) != 3 or seg[0] != "benchmarks" or seg[2] != "sync":
            raise ApiError(404, f"No route for {method} {path}", "NOT_FOUND")
        self._method(method, "POST")
        data = _parse_json(body)
        status = data.get("status") if isinstance(data, dict) else None
        if status not in SYNC_STATUSES:
            raise ApiError(400, f"status must be one of {', '.join(SYNC_STATUSES)}", "VALIDATION")
        try:
            self.set_benchmark_sync(
                seg[1], status, synced_task_count=data.get("synced"), sync_error=data.get("error")
            )
        except KeyError:
            raise ApiError(404, f"Benchmark '{seg[1]}' was not found.", "NOT_FOUND") from None
        return _json_response(200, {"benchmark": seg[1], "sync_status": status})

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
        self._authenticate(headers)
        head = seg[0]
        if seg == ["verify"]:
            self._method(method, "GET")
            return self._verify(headers)
        if seg == ["workspaces"]:
            self._method(method, "GET")
            return self._workspaces()
        if head == "environment-secrets" and len(seg) == 1:
            ws = self._scope(headers)
            if method == "GET":
                return self._list_secrets(ws, params)
            if method == "POST":
                return self._upsert_secret(ws, _parse_json(body))
            if method == "DELETE":
                return self._delete_secret(ws, _parse_json(body))
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
            return route(ws, seg, params, body, draw)
        raise ApiError(404, f"No route for {method} {path}", "NOT_FOUND")

    def _run_route(self, method: str, seg: list[str]) -> Callable[..., Response]:
        n = len(seg)
        table: dict[tuple[int, str, str], Callable[..., Response]] = {
            (1, "", "GET"): lambda ws, s, p, b, d: self._list_runs(ws, p),
            (1, "", "POST"): lambda ws, s, p, b, d: self._submit(ws, _parse_json(b), d),
            (2, "", "GET"): lambda ws, s, p, b, d: self._get_run(ws, s[1]),
            (3, "logs", "GET"): lambda ws, s, p, b, d: self._logs(ws, s[1], p),
            (3, "stop", "POST"): lambda ws, s, p, b, d: self._stop(ws, s[1]),
            (4, "outputs/manifest", "GET"): lambda ws, s, p, b, d: self._manifest(ws, s[1], p),
            (4, "outputs/download-urls", "POST"): lambda ws, s, p, b, d: self._download_urls(
                ws, s[1], _parse_json(b)
            ),
        }
        tail = "/".join(seg[2:]) if n > 2 else ""
        route = table.get((n, tail, method))
        if route is not None:
            return route
        if any(k[0] == n and k[1] == tail for k in table):
            raise ApiError(405, f"Method {method} not allowed", "METHOD_NOT_ALLOWED")
        raise ApiError(404, f"No route for {method} /api/cli/{'/'.join(seg)}", "NOT_FOUND")

    @staticmethod
    def _method(method: str, allowed: str) -> None:
        if method != allowed:
            raise ApiError(405, f"Method {method} not allowed", "METHOD_NOT_ALLOWED")

    def _authenticate(self, headers: Mapping[str, str]) -> str:
        value = headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "Missing or invalid bearer token.", "TOKEN_INVALID")
        if self._token is not None and not hmac.compare_digest(
            token.encode("utf-8"), self._token.encode("utf-8")
        ):
            raise ApiError(401, "Invalid token.", "TOKEN_INVALID")
        return token

    def _gate(self) -> None:
        if self.faults.benchmarks_disabled:
            self.injector.count("feature_gate")
            raise ApiError(FEATURE_GATE_STATUS, FEATURE_GATE_MESSAGE)

    # ------------------------------------------------------------------ workspaces

    def _ensure_workspace(self, name: str, repo: str | None = None) -> Workspace:
        with self.store.write() as w:
            w.execute(
                "INSERT OR IGNORE INTO workspaces (id, name, repo, role, created_at) VALUES (?, ?, ?, 'owner', ?)",
                ("ws_" + hashlib.sha256(name.encode()).hexdigest()[:16], name, repo, self.clock()),
            )
            row = w.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
        return Workspace(row["id"], row["name"], row["repo"], row["role"])

    def connect_repo(self, workspace: str, repo: str) -> None:
        """Connect ``owner/repo`` to a workspace so ``X-Osmosis-Git: owner/repo`` selects it."""
        self._ensure_workspace(workspace)
        with self.store.write() as w:
            w.execute("UPDATE workspaces SET repo = ? WHERE name = ?", (repo.lower(), workspace))

    def _scope(self, headers: Mapping[str, str]) -> Workspace:
        name = headers.get("x-osmosis-workspace")
        git = headers.get("x-osmosis-git")
        if name is not None and git is not None:
            raise ApiError(
                400,
                "Specify either a Git workspace or `--workspace`, not both.",
                "WORKSPACE_SCOPE_HEADER_CONFLICT",
            )
        if name is None and git is None:
            raise ApiError(
                400,
                "Workspace-scoped requests require an X-Osmosis-Git or X-Osmosis-Workspace header.",
                "GIT_SCOPE_HEADER_REQUIRED",
            )
        db = self.store.read()
        if name is not None:
            row = db.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
            if row is None and self.auto_workspaces and name.strip():
                return self._ensure_workspace(name)
            if row is None:
                raise ApiError(
                    403,
                    "Platform could not resolve the selected workspace, or your account does "
                    "not have access to it.",
                    "WORKSPACE_SCOPE_HEADER_ACCESS_DENIED",
                )
            return Workspace(row["id"], row["name"], row["repo"], row["role"])
        assert git is not None
        if not GIT_IDENTITY_RE.match(git):
            raise ApiError(
                400, "Invalid X-Osmosis-Git repository identity.", "GIT_SCOPE_HEADER_INVALID"
            )
        identity = git.lower()
        row = db.execute("SELECT * FROM workspaces WHERE repo = ?", (identity,)).fetchone()
        if row is None and self.auto_workspaces:
            return self._ensure_workspace(identity, repo=identity)
        if row is None:
            raise ApiError(
                404,
                f"No Platform workspace is connected to the repository {identity}.",
                "GIT_REPOSITORY_NOT_CONNECTED",
            )
        return Workspace(row["id"], row["name"], row["repo"], row["role"])

    def _workspace_by_name(self, name: str) -> Workspace:
        return (
            self._ensure_workspace(name)
            if self.auto_workspaces
            else self._scope({"x-osmosis-workspace": name})
        )

    def _verify(self, headers: Mapping[str, str]) -> Response:
        token = self._authenticate(headers)
        token_id = "tok_" + hmac.new(self._presign_key, token.encode(), "sha256").hexdigest()[:16]
        payload: dict[str, Any] = {
            "user": dict(LOCAL_USER),
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
        return _json_response(200, payload)

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
        return _json_response(200, {"workspaces": items})

    # ------------------------------------------------------------------ helpers

    def _ws_url(self, ws: Workspace, *parts: str) -> str:
        return "/".join([self.public_url, quote(ws.name, safe=""), *parts])

    @staticmethod
    def _page(params: Mapping[str, str], maximum: int) -> tuple[int, int]:
        try:
            limit = int(params.get("limit", "50"))
            offset = int(params.get("offset", "0"))
        except ValueError:
            raise ApiError(
                400, "limit and offset must be integers", "VALIDATION", field="limit"
            ) from None
        if not 1 <= limit <= maximum:
            raise ApiError(
                400, f"limit must be between 1 and {maximum}", "VALIDATION", field="limit"
            )
        if offset < 0:
            raise ApiError(400, "offset must not be negative", "VALIDATION", field="offset")
        return limit, offset

    @staticmethod
    def _paged(
        key: str,
        items: list[Any],
        total: int,
        offset: int,
        *,
        page_rows: int | None = None,
        **extra: Any,
    ) -> Response:
        # ``page_rows``: rows the page covered when some were left out (a fault).
        rows = len(items) if page_rows is None else page_rows
        has_more = offset + rows < total and bool(rows)
        return _json_response(
            200,
            {
                key: items,
                "total_count": total,
                "has_more": has_more,
                "next_offset": offset + rows if has_more else None,
                **extra,
            },
        )

    # ------------------------------------------------------------------ benchmarks

    def _benchmarks(self) -> list[dict[str, Any]]:
        db = self.store.read()
        revs = db.execute("SELECT id, rev FROM benchmarks ORDER BY rowid").fetchall()
        out = []
        with self._bench_lock:
            for row in revs:
                cached = self._bench_cache.get(row["id"])
                if cached is None or cached[0] != row["rev"]:
                    spec_row = db.execute(
                        "SELECT spec, rev FROM benchmarks WHERE id = ?", (row["id"],)
                    ).fetchone()
                    cached = (spec_row["rev"], json.loads(spec_row["spec"]))
                    self._bench_cache[row["id"]] = cached
                out.append(cached[1])
        return out

    def _benchmark_by_id(self, bid: str) -> dict[str, Any] | None:
        for spec in self._benchmarks():
            if spec["id"] == bid:
                return spec
        return None

    def resolve_benchmark(self, ref: str) -> dict[str, Any] | None:
        """A benchmark by id, key (``source_ref``) or exact, case-sensitive name."""
        specs = self._benchmarks()
        for field_name in ("id", "source_ref", "name"):
            for spec in specs:
                if spec[field_name] == ref:
                    return spec
        return None

    def _benchmark_entry(self, ws: Workspace, spec: dict[str, Any]) -> dict[str, Any]:
        view = public_view(spec)
        view.pop("tasks"), view.pop("categories"), view.pop("unavailable_tasks")
        for key in (
            "runner_family", "supports_harness", "requires_harness", "default_harness",
            "requires_judge_model", "requires_judge_api_key", "judge_model_default",
            "pass_threshold", "required_secret_names",
        ):  # fmt: skip
            view.pop(key)
        view["platform_url"] = self._ws_url(ws, "benchmarks", "catalog", spec["id"])
        return view

    def _list_benchmarks(self, ws: Workspace, params: Mapping[str, str]) -> Response:
        limit, offset = self._page(params, LIST_LIMIT_MAX)
        specs = self._benchmarks()
        page = specs[offset : offset + limit]
        db = self.store.read()
        now = self.clock()
        stats = {
            r["benchmark_id"]: r
            for r in db.execute(
                """SELECT benchmark_id, COUNT(*) AS n,
                          SUM(CASE WHEN stopped_at IS NULL AND (? - created_at) * ? < end_off
                                   THEN 1 ELSE 0 END) AS active
                   FROM runs WHERE workspace_id = ? GROUP BY benchmark_id""",
                (now, self.speed, ws.id),
            )
        }
        items = []
        for spec in page:
            entry = self._benchmark_entry(ws, spec)
            stat = stats.get(spec["id"])
            last = None
            if stat is not None:
                last = db.execute(
                    """SELECT * FROM runs WHERE workspace_id = ? AND benchmark_id = ?
                       ORDER BY created_at DESC, seq DESC LIMIT 1""",
                    (ws.id, spec["id"]),
                ).fetchone()
            entry.update(
                {
                    "run_count": stat["n"] if stat else 0,
                    "running_count": stat["active"] if stat else 0,
                    "last_run_at": simulation.iso(last["created_at"]) if last else None,
                    "last_run_status": self._row_status(last, now) if last else None,
                    "last_run_name": last["name"] if last else None,
                    "creator_name": "Osmosis",
                }
            )
            items.append(entry)
        return self._paged("benchmarks", items, len(specs), offset)

    def _get_benchmark(self, ws: Workspace, ref: str) -> Response:
        spec = self.resolve_benchmark(ref)
        if spec is None:
            raise ApiError(
                404,
                f"Benchmark '{ref}' was not found in this workspace. Use its key, exact "
                "(case-sensitive) name or ID, and add Harbor registry benchmarks from the "
                "Platform first.",
                "NOT_FOUND",
            )
        view = public_view(spec)
        view["platform_url"] = self._ws_url(ws, "benchmarks", "catalog", spec["id"])
        return _json_response(200, {"benchmark": view, "leaderboard": spec.get("_leaderboard", [])})

    def add_benchmark(self, spec: Mapping[str, Any]) -> str:
        """Add or replace a catalog benchmark (E2 shape; ``id`` derived from ``source_ref``
        when absent). Returns its id."""
        data = dict(spec)
        data.setdefault("id", make_benchmark_id(data["source_ref"]))
        tasks = data.setdefault("tasks", [])
        data.setdefault("task_count", len(tasks))
        counts: dict[str, int] = {}
        for task in tasks:
            task.setdefault("difficulty", None)
            if task.get("category"):
                counts[task["category"]] = counts.get(task["category"], 0) + 1
        data.setdefault("categories", [{"name": k, "task_count": v} for k, v in counts.items()])
        defaults: dict[str, Any] = {
            "description": None, "source_type": "harbor_registry", "source_url": None,
            "category_count": len(data["categories"]), "task_sets": [], "sync_status": "ready",
            "synced_task_count": data["task_count"], "sync_error": None, "platform_url": None,
            "runner_family": "harbor", "supports_harness": True, "requires_harness": False,
            "default_harness": None, "requires_judge_model": False,
            "requires_judge_api_key": False, "judge_model_default": None, "pass_threshold": 1.0,
            "required_secret_names": [], "unavailable_tasks": None, "_task_set_members": {},
            "_pending_tasks": [],
            "_leaderboard": [], "_skill_bias": 0.0,
        }  # fmt: skip
        for key, value in defaults.items():
            data.setdefault(key, value)
        with self.store.write() as w:
            self.store.upsert_benchmark(w, data, seeded=False)
        return str(data["id"])

    def set_benchmark_sync(
        self,
        ref: str,
        sync_status: str,
        *,
        synced_task_count: int | None = None,
        sync_error: str | None = None,
    ) -> None:
        """Move a benchmark's sync along (e.g. finish the Harbor sync so submits work)."""
        spec = self.resolve_benchmark(ref)
        if spec is None:
            raise KeyError(ref)
        spec = dict(spec)
        spec["sync_status"] = sync_status
        spec["sync_error"] = sync_error
        if synced_task_count is not None:
            spec["synced_task_count"] = synced_task_count
        if sync_status == "ready":
            # The sync has listed everything: the tasks still pending join the list.
            spec["tasks"] = [*spec["tasks"], *spec.pop("_pending_tasks", [])]
            counts: dict[str, int] = {}
            for task in spec["tasks"]:
                if task.get("category"):
                    counts[task["category"]] = counts.get(task["category"], 0) + 1
            spec["categories"] = [{"name": k, "task_count": v} for k, v in counts.items()]
            spec["category_count"] = len(counts)
            spec["task_count"] = len(spec["tasks"]) or spec["task_count"]
            spec["synced_task_count"] = spec["task_count"]
        with self.store.write() as w:
            self.store.upsert_benchmark(w, spec, seeded=False)

    # ------------------------------------------------------------------ secrets

    def _secret_item(self, row: Any) -> dict[str, Any]:
        return {
            "id": row["id"],
            "name": row["name"],
            "scope": row["scope"],
            "created_at": simulation.iso(row["created_at"]),
            "updated_at": simulation.iso(row["updated_at"]),
            "creator_name": LOCAL_USER["name"],
            "updater_name": LOCAL_USER["name"],
        }

    def _list_secrets(self, ws: Workspace, params: Mapping[str, str]) -> Response:
        limit, offset = self._page(params, LIST_LIMIT_MAX)
        scope = params.get("scope", "all") or "all"
        if scope not in ("all", "workspace", "user"):
            raise ApiError(
                400, "scope must be one of all, workspace, user", "VALIDATION", field="scope"
            )
        where = "workspace_id = ? AND (scope = 'workspace' OR user_id = ?)"
        args: list[Any] = [ws.id, LOCAL_USER["id"]]
        if scope != "all":
            where += " AND scope = ?"
            args.append(scope)
        db = self.store.read()
        total = db.execute(f"SELECT COUNT(*) FROM secrets WHERE {where}", args).fetchone()[0]
        rows = db.execute(
            f"SELECT * FROM secrets WHERE {where} ORDER BY name, scope LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        return self._paged(
            "environment_secrets",
            [self._secret_item(r) for r in rows],
            total,
            offset,
            platform_url=self._ws_url(ws, "secrets"),
        )

    def _upsert_secret(self, ws: Workspace, body: Any) -> Response:
        if not isinstance(body, dict):
            raise ApiError(400, "Request body must be a JSON object", "VALIDATION")
        name, value, scope = body.get("name"), body.get("value"), body.get("scope", "user")
        if (
            not isinstance(name, str)
            or not (1 <= len(name) <= rules.SECRET_NAME_MAX)
            or not rules.SECRET_NAME_RE.match(name)
        ):
            raise ApiError(
                400,
                "Invalid secret name: use 1-255 uppercase letters, digits and underscores, "
                "starting with a letter.",
                "VALIDATION",
                field="name",
            )
        # Messages never include the value.
        if not isinstance(value, str) or not value or len(value) > rules.SECRET_VALUE_MAX:
            raise ApiError(
                400,
                "Secret value must be a non-empty string (at most 64 KiB).",
                "VALIDATION",
                field="value",
            )
        if scope not in ("workspace", "user"):
            raise ApiError(400, "scope must be 'workspace' or 'user'", "VALIDATION", field="scope")
        row = self._store_secret(ws, name, value, scope)
        return _json_response(
            200, {**self._secret_item(row), "platform_url": self._ws_url(ws, "secrets")}
        )

    def _store_secret(self, ws: Workspace, name: str, value: str, scope: str) -> Any:
        user = LOCAL_USER["id"] if scope == "user" else ""
        # Only a keyed digest is stored: nothing in the emulator needs the value back.
        digest = hmac.new(self._presign_key, value.encode("utf-8"), "sha256").hexdigest()
        now = self.clock()
        sid = "sec_" + hashlib.sha256(f"{ws.id}:{scope}:{user}:{name}".encode()).hexdigest()[:16]
        with self.store.write() as w:
            w.execute(
                """INSERT INTO secrets (id, workspace_id, scope, user_id, name, value_digest, created_at, updated_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (workspace_id, scope, user_id, name)
                   DO UPDATE SET value_digest = excluded.value_digest, updated_at = excluded.updated_at""",
                (sid, ws.id, scope, user, name, digest, now, now),
            )
            return w.execute("SELECT * FROM secrets WHERE id = ?", (sid,)).fetchone()

    def _delete_secret(self, ws: Workspace, body: Any) -> Response:
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            raise ApiError(400, 'Request body must be {"name": ..., "scope": ...}', "VALIDATION")
        name, scope = body["name"], body.get("scope", "user")
        if scope not in ("workspace", "user"):
            raise ApiError(400, "scope must be 'workspace' or 'user'", "VALIDATION", field="scope")
        user = LOCAL_USER["id"] if scope == "user" else ""
        with self.store.write() as w:
            cur = w.execute(
                "DELETE FROM secrets WHERE workspace_id = ? AND scope = ? AND user_id = ? AND name = ?",
                (ws.id, scope, user, name),
            )
        if cur.rowcount == 0:
            raise ApiError(404, f'Secret "{name}" not found in {scope} scope.', "NOT_FOUND")
        return _json_response(200, {"name": name, "scope": scope, "deleted": True})

    def set_secret(self, workspace: str, name: str, value: str, scope: str = "workspace") -> None:
        """Test convenience: store a secret directly, workspace scope unless told (the
        ``secret set`` command and the S2 route default to personal, as on the Platform)."""
        if scope not in ("workspace", "user") or not rules.SECRET_NAME_RE.match(name):
            raise ValueError("invalid secret name or scope")
        self._store_secret(self._workspace_by_name(workspace), name, value, scope)

    def _secret_scopes(self, ws: Workspace) -> dict[str, set[str]]:
        rows = (
            self.store.read()
            .execute(
                "SELECT name, scope FROM secrets WHERE workspace_id = ? AND (scope = 'workspace' OR user_id = ?)",
                (ws.id, LOCAL_USER["id"]),
            )
            .fetchall()
        )
        out: dict[str, set[str]] = {}
        for r in rows:
            out.setdefault(r["name"], set()).add(r["scope"])
        return out

    # ------------------------------------------------------------------ runs: submit

    def _submit(self, ws: Workspace, body: Any, draw: Draw) -> Response:
        issues = rules.check_shape(body)
        if issues:
            raise ApiError(
                400,
                "Invalid benchmark run configuration",
                "VALIDATION",
                issues=[i.as_json() for i in issues],
            )
        ref = body["experiment_config"]["benchmark"]
        spec = self.resolve_benchmark(ref)
        if spec is None:
            raise ApiError(
                404, submit_rules.NOT_FOUND_MESSAGE.format(ref=ref), "BENCHMARK_NOT_FOUND"
            )
        if spec["sync_status"] != "ready":
            url = self._ws_url(ws, "benchmarks", "catalog", spec["id"])
            raise ApiError(
                rules.NOT_READY_STATUS,
                submit_rules.not_ready_message(
                    spec["name"],
                    spec["sync_status"],
                    spec.get("synced_task_count", 0),
                    spec.get("task_count", 0),
                    spec.get("sync_error"),
                    url,
                ),
                "BENCHMARK_NOT_READY",
                sync_status=spec["sync_status"],
                platform_url=url,
            )
        issues = rules.check_rules(body, spec)
        limit = self.faults.workspace_concurrency_limit
        concurrency = (body.get("execution_config") or {}).get("max_concurrent_attempts")
        if limit is not None and isinstance(concurrency, int) and concurrency > limit:
            issues.append(
                rules.Issue(
                    "execution_config.max_concurrent_attempts",
                    f"{concurrency} exceeds this workspace's limit of {limit} concurrent attempts",
                )
            )
        tasks = rules.select_tasks(body, spec)
        if issues:
            raise ApiError(
                400,
                "Invalid benchmark run configuration",
                "VALIDATION",
                issues=[i.as_json() for i in issues],
            )
        provided = dict((body.get("secrets") or {}).get("provided") or {})
        names = submit_rules.needed_secrets(body, spec.get("required_secret_names", []))
        stored = self._secret_scopes(ws)
        missing = [n for n in names if n not in provided and n not in stored]
        if missing:
            raise ApiError(
                404,
                submit_rules.missing_secrets_message(missing),
                platform_url=self._ws_url(ws, "secrets"),
            )
        scopes: dict[str, str] = {}
        for n in names:
            have = stored.get(n, set())
            if n in provided:
                scopes[n] = "run"
            elif "user" in have:
                scopes[n] = "user_override" if "workspace" in have else "user"
            else:
                scopes[n] = "workspace"
        stored_body = _strip_secret_values(body)
        agents = len(body["agents"])
        expected = (
            len(tasks) * agents * submit_rules.attempts_per_task(body.get("execution_config"))
        )
        with self.store.write() as w:
            row = self._insert_run(
                w, ws, spec, stored_body, len(tasks), agents, expected, scopes, self.clock()
            )
        # The run is committed: from here on a lost response is the "outcome unknown" case.
        if self.faults.after_submit_delay_ms:
            time.sleep(self.faults.after_submit_delay_ms / 1000.0)
        if draw.drop_after_submit:
            self.injector.count("drop_after_submit")
            return Response(0, drop=True)
        instead = self.injector.after_commit()
        if instead == "rate_limit":
            self.injector.count("rate_limit_after_submit")
            return _json_response(
                429,
                {"error": "Too many requests; slow down.", "code": "RATE_LIMITED"},
                {"Retry-After": str(self.faults.retry_after_s)},
            )
        if instead == "wrong_reply":
            self.injector.count("wrong_submit_reply")
            return _json_response(200, {"id": 5, "name": None})
        return _json_response(
            200,
            {
                "id": row["id"],
                "name": row["name"],
                "status": "pending",
                "workflow_id": f"benchmark-run/{row['id']}",
                "task_count": len(tasks),
                "created_at": simulation.iso(row["created_at"]),
                "platform_url": self._ws_url(ws, "benchmarks", row["id"]),
            },
        )

    def _insert_run(
        self,
        w: Any,
        ws: Workspace,
        spec: Mapping[str, Any],
        body: Mapping[str, Any],
        task_count: int,
        agents: int,
        expected: int,
        scopes: Mapping[str, str],
        created_at: float,
        schedule: simulation.Schedule | None = None,
        stopped_at: float | None = None,
        existing_names: set[str] | None = None,
    ) -> dict[str, Any]:
        counter = (
            int(w.execute("SELECT value FROM meta WHERE key = 'run_counter'").fetchone()[0]) + 1
        )
        w.execute("UPDATE meta SET value = ? WHERE key = 'run_counter'", (str(counter),))
        run_id = "bmr_" + hashlib.sha256(f"run:{self.seed}:{counter}".encode()).hexdigest()[:20]
        base = name = run_name(self.seed, counter)
        suffix = 1
        while (
            name in existing_names
            if existing_names is not None
            else w.execute("SELECT 1 FROM runs WHERE name = ?", (name,)).fetchone() is not None
        ):
            suffix += 1
            name = f"{base}-x{suffix}"
        sched = schedule or simulation.make_schedule(
            run_id, self.seed, expected, errors=simulation.endpoint_errors(body)
        )
        record = {
            "id": run_id,
            "name": name,
            "workspace_id": ws.id,
            "benchmark_id": spec["id"],
            "body": json.dumps(body, separators=(",", ":")),
            "task_count": task_count,
            "agent_count": agents,
            "expected": expected,
            "secret_scopes": json.dumps(scopes),
            "created_at": created_at,
            "queue_off": sched.queue_off,
            "start_off": sched.start_off,
            "full_dur": sched.full_dur,
            "end_off": sched.end_off,
            "final_status": sched.final_status,
            "stopped_at": stopped_at,
            "seed": self.seed,
            "creator_name": LOCAL_USER["name"],
            "creator_email": LOCAL_USER["email"],
        }
        cols = ", ".join(record)
        w.execute(
            f"INSERT INTO runs ({cols}) VALUES ({', '.join('?' * len(record))})",
            tuple(record.values()),
        )
        if existing_names is not None:
            existing_names.add(name)
        return record

    def submit_count(self, workspace: str | None = None) -> int:
        """How many runs were ever created (in one workspace, or in all)."""
        db = self.store.read()
        if workspace is None:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
        return int(
            db.execute(
                "SELECT COUNT(*) FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.name = ?",
                (workspace,),
            ).fetchone()[0]
        )

    def seed_runs(
        self,
        workspace: str,
        n: int,
        *,
        benchmark_key: str = "terminal-bench-2-1",
        status_mix: Mapping[str, float] | None = None,
        created_from: datetime | float | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Bulk-insert ``n`` runs (one transaction) for performance tests; returns their ids.

        Each run gets a status drawn from ``status_mix`` (weights, deterministic from the
        seed) and a ``created_at`` between ``created_from`` (default: 30 days ago) and now
        that makes it have that status now. ``body`` defaults to one provider agent on the
        benchmark's recommended task set or all its tasks.
        """
        ws = self._workspace_by_name(workspace)
        spec = self.resolve_benchmark(benchmark_key)
        if spec is None:
            raise KeyError(benchmark_key)
        if body is None:
            recommended = [s["name"] for s in spec.get("task_sets", []) if s.get("recommended")]
            body = {
                "experiment_config": {"benchmark": spec["source_ref"]},
                "agents": [
                    {
                        **(
                            {"harness": spec["default_harness"]}
                            if spec.get("default_harness")
                            else {}
                        ),
                        "model": {
                            "type": "provider",
                            "model": "openai/gpt-5",
                            "api_key_secret": "OPENAI_API_KEY",
                        },
                        "env": {},
                    }
                ],
                **({"tasks_config": {"task_set": recommended[0]}} if recommended else {}),
            }
        tasks = rules.select_tasks(body, spec)
        agents = len(body["agents"])
        attempts = (body.get("execution_config") or {}).get("attempts_per_task", 1)
        expected = len(tasks) * agents * (attempts if isinstance(attempts, int) else 1)
        mix = dict(status_mix or DEFAULT_STATUS_MIX)
        total_weight = sum(mix.values())
        now = self.clock()
        if created_from is None:
            start = now - 30 * 86400
        elif isinstance(created_from, datetime):
            start = created_from.timestamp()
        else:
            start = float(created_from)
        stored = json.loads(json.dumps(_strip_secret_values(body)))
        ids: list[str] = []
        with self.store.write() as w:
            names = {r[0] for r in w.execute("SELECT name FROM runs")}
            for i in range(n):
                roll = simulation.h01(self.seed, "mix", i, n) * total_weight
                status = next(iter(mix))
                for candidate, weight in mix.items():
                    if roll < weight:
                        status = candidate
                        break
                    roll -= weight
                created = start + (now - start) * (i / max(n, 1))
                sched = simulation.make_schedule(f"seed:{self.seed}:{i}:{n}", self.seed, expected)
                if status in ("finished", "failed") and sched.final_status != status:
                    frac = 1.0 if status == "finished" else 0.5
                    sched = simulation.Schedule(
                        sched.queue_off, sched.start_off, sched.full_dur,
                        sched.start_off + sched.full_dur * frac, status,
                    )  # fmt: skip
                stopped_at = None
                if status == "pending":
                    created = now - sched.queue_off * 0.5 / self.speed
                elif status == "queued":
                    created = now - (sched.queue_off + sched.start_off) * 0.5 / self.speed
                elif status == "running":
                    created = now - (sched.start_off + sched.full_dur * 0.4) / self.speed
                    if (
                        sched.final_status == "failed"
                        and sched.end_off <= sched.start_off + sched.full_dur * 0.4
                    ):
                        created = now - (sched.start_off + sched.end_off) * 0.5 / self.speed
                elif status == "stopped":
                    created = min(created, now - sched.end_off / self.speed - 1)
                    stopped_at = (
                        created
                        + (sched.start_off + (sched.end_off - sched.start_off) * 0.5) / self.speed
                    )
                else:
                    created = min(created, now - sched.end_off / self.speed - 1)
                record = self._insert_run(
                    w, ws, spec, stored, len(tasks), agents, expected, {}, created,
                    schedule=sched, stopped_at=stopped_at, existing_names=names,
                )  # fmt: skip
                ids.append(record["id"])
        return ids

    # ------------------------------------------------------------------ runs: read

    def _row_status(self, row: Any, now: float) -> str:
        """Status from the stored schedule alone (no catalog, no results): same integer
        millisecond rule as ``simulation.status_at``."""
        if row["stopped_at"] is not None:
            return "stopped"
        t_ms = math.floor(max(0.0, (now - row["created_at"]) * self.speed) * 1000)
        if t_ms >= simulation.off_ms(row["end_off"]):
            return str(row["final_status"])
        if t_ms >= simulation.off_ms(row["start_off"]):
            return "running"
        if t_ms >= simulation.off_ms(row["queue_off"]):
            return "queued"
        return "pending"

    def _find_run(self, ws: Workspace, ref: str, db: Any = None) -> Any:
        """A run of ``ws`` by id, else by name (on ``db`` when inside a write)."""
        db = db if db is not None else self.store.read()
        row = db.execute(
            "SELECT * FROM runs WHERE workspace_id = ? AND id = ?", (ws.id, ref)
        ).fetchone()
        if row is None:
            row = db.execute(
                "SELECT * FROM runs WHERE workspace_id = ? AND name = ?", (ws.id, ref)
            ).fetchone()
        if row is None:
            raise ApiError(404, f"Benchmark run '{ref}' not found.", "NOT_FOUND")
        return row

    def _run(self, row: Any, specs: Mapping[str, dict[str, Any]] | None = None) -> simulation.Run:
        found = (
            specs.get(row["benchmark_id"])
            if specs is not None
            else self._benchmark_by_id(row["benchmark_id"])
        )
        spec = found or {
            "id": row["benchmark_id"], "name": row["benchmark_id"], "tasks": [], "categories": [],
        }  # fmt: skip
        body = json.loads(row["body"])
        tasks = tuple(rules.select_tasks(body, spec)) if spec.get("tasks") else ()
        if len(tasks) != row["task_count"]:
            # The catalog entry changed since submit: keep the run's size as submitted.
            tasks = tuple(
                (list(tasks) + [f"task-{i}" for i in range(row["task_count"])])[: row["task_count"]]
            )
        sched = simulation.Schedule(
            row["queue_off"], row["start_off"], row["full_dur"], row["end_off"], row["final_status"]
        )
        return simulation.Run(
            id=row["id"],
            name=row["name"],
            workspace=row["workspace_id"],
            benchmark=spec,
            body=body,
            tasks=tasks,
            created_at=row["created_at"],
            schedule=sched,
            stopped_at=row["stopped_at"],
            seed=row["seed"],
        )

    def _summary(
        self, ws: Workspace, row: Any, run: simulation.Run, t_ms: int, m: Mapping[str, Any]
    ) -> dict[str, Any]:
        status = simulation.status_at(run, t_ms)
        s = run.schedule
        started = (
            run.created_at + s.start_off / self.speed
            if t_ms >= simulation.off_ms(s.start_off)
            else None
        )
        completed = None
        if run.stopped_at is not None:
            completed = run.stopped_at
        elif status in ("finished", "failed"):
            completed = run.created_at + s.end_off / self.speed
        return {
            "id": row["id"],
            "name": row["name"],
            "status": status,
            "benchmark_id": run.benchmark["id"],
            "benchmark_name": run.benchmark["name"],
            "benchmark": {"id": run.benchmark["id"], "name": run.benchmark["name"]},
            "created_at": simulation.iso(row["created_at"]),
            "started_at": simulation.iso(started),
            "completed_at": simulation.iso(completed),
            "creator_name": row["creator_name"],
            "creator_email": row["creator_email"],
            "platform_url": self._ws_url(ws, "benchmarks", row["id"]),
            "agent_count": row["agent_count"],
            "best_pass_at_1": m["best_pass_at_1"],
            "ingested_results": m["ingested"],
            "expected_results": row["expected"],
        }

    def _list_metrics(self, run: simulation.Run, t_ms: int) -> Mapping[str, Any]:
        """The two numbers a list row needs; cached once the run is terminal (it never
        changes again), so re-listing thousands of finished runs is cheap."""
        terminal = simulation.status_at(run, t_ms) in ("finished", "failed", "stopped")
        key = (run.id, run.stopped_at, t_ms)
        if terminal:
            with self._bench_lock:
                hit = self._final_metrics.get(key)
            if hit is not None:
                return hit
        light = {
            "best_pass_at_1": simulation.best_pass_at_1(run, t_ms),
            "ingested": simulation.ingested_count(run, t_ms),
        }
        if terminal:
            with self._bench_lock:
                if len(self._final_metrics) > 500_000:
                    self._final_metrics.clear()
                self._final_metrics[key] = light
        return light

    def _snapshot(self, row: Any) -> tuple[simulation.Run, int, dict[str, Any]]:
        run = self._run(row)
        t_ms = simulation.sim_now_ms(run, self.clock(), self.speed)
        return run, t_ms, simulation.metrics(run, t_ms)

    def _list_runs(self, ws: Workspace, params: Mapping[str, str]) -> Response:
        limit, offset = self._page(params, LIST_LIMIT_MAX)
        where, args = "workspace_id = ?", [ws.id]
        if params.get("benchmark"):
            spec = self.resolve_benchmark(params["benchmark"])
            where += " AND benchmark_id = ?"
            args.append(spec["id"] if spec else params["benchmark"])
        db = self.store.read()
        total = db.execute(f"SELECT COUNT(*) FROM runs WHERE {where}", args).fetchone()[0]
        rows = db.execute(
            f"SELECT * FROM runs WHERE {where} ORDER BY created_at DESC, seq DESC LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        specs = {s["id"]: s for s in self._benchmarks()}
        now = self.clock()
        items = []
        for row in rows:
            if self.injector.omitted_from_list(row["id"]):
                self.injector.count("list_omit")
                continue
            run = self._run(row, specs)
            t_ms = simulation.sim_now_ms(run, now, self.speed)
            items.append(self._summary(ws, row, run, t_ms, self._list_metrics(run, t_ms)))
        return self._paged("benchmark_runs", items, total, offset, page_rows=len(rows))

    def _get_run(self, ws: Workspace, ref: str) -> Response:
        row = self._find_run(ws, ref)
        run, t_ms, m = self._snapshot(row)
        summary = self._summary(ws, row, run, t_ms, m)
        spec = run.benchmark
        body = run.body
        env_config = body.get("env_config") or {}
        version = (
            spec.get("source_ref", "").rpartition("@")[2]
            if "@" in spec.get("source_ref", "")
            else "1"
        )
        agents = []
        for i, agent in enumerate(run.agents):
            model = agent.get("model") or {}
            identity = simulation._model_string(model)
            agg = m["aggregates"][i]
            agent_status = summary["status"]
            if (
                agent_status == "running"
                and agg["passed"] + agg["failed"] + agg["errored"] >= len(run.tasks) * run.attempts
            ):
                agent_status = "finished"
            agents.append(
                {
                    "id": simulation.agent_id(run, i),
                    "agent_index": i,
                    "harness": agent.get("harness"),
                    "model_display_name": identity.rsplit("/", 1)[-1],
                    "model": identity,
                    "model_ref": _model_ref(model),
                    "status": agent_status,
                    "environment_variables": {**env_config, **(agent.get("env") or {})},
                    "aggregates": {
                        "reported_cost_usd": agg["reported_cost_usd"],
                        "mean_duration_seconds": agg["mean_duration_seconds"],
                        "tokens_per_task": agg["tokens_per_task"],
                    },
                }
            )
        payload = {
            "benchmark_run": summary,
            "configuration": {
                "benchmark_id": spec["id"],
                "benchmark_name": spec["name"],
                "source_type": spec.get("source_type"),
                "source_ref": spec.get("source_ref"),
                "resolved_version": version,
                "resolved_digest": "sha256:"
                + hashlib.sha256(
                    json.dumps([t["name"] for t in spec.get("tasks", [])]).encode()
                ).hexdigest(),
                "task_filters": body.get("tasks_config") or {},
                "config": body.get("execution_config") or {},
                "resolved_secret_scopes": json.loads(row["secret_scopes"]),
            },
            "agents": agents,
            "progress": {"ingested": m["ingested"], "expected": row["expected"]},
            "totals": m["totals"],
            "agent_metrics": m["agent_metrics"],
            "is_internal_user": False,
        }
        return _json_response(200, payload)

    # ------------------------------------------------------------------ runs: logs

    def _cursor(self, run_id: str, index: int, direction: str) -> str:
        raw = json.dumps([run_id, index, direction], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def _logs(self, ws: Workspace, ref: str, params: Mapping[str, str]) -> Response:
        row = self._find_run(ws, ref)
        try:
            limit = int(params.get("limit", "50"))
        except ValueError:
            raise ApiError(400, "limit must be an integer", "VALIDATION", field="limit") from None
        if not 1 <= limit <= LOGS_LIMIT_MAX:
            raise ApiError(
                400, f"limit must be between 1 and {LOGS_LIMIT_MAX}", "VALIDATION", field="limit"
            )
        direction = params.get("direction", "older") or "older"
        if direction not in ("older", "newer"):
            raise ApiError(
                400, "direction must be 'older' or 'newer'", "VALIDATION", field="direction"
            )
        run, t_ms, _ = self._snapshot(row)
        events = simulation.log_events(run, t_ms, self.speed)
        position: int | None = None
        if params.get("cursor"):
            try:
                text = params["cursor"]
                cid, position, cdir = json.loads(
                    base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
                )
                if cid != row["id"] or cdir != direction or not isinstance(position, int):
                    raise ValueError
            except (ValueError, TypeError):
                raise ApiError(400, "Invalid log cursor.", "VALIDATION", field="cursor") from None
        if direction == "older":
            end = len(events) if position is None else min(position, len(events))
            start = max(0, end - limit)
            page = events[start:end]
            next_cursor = self._cursor(row["id"], start, direction) if start > 0 else None
        else:
            start = 0 if position is None else max(0, position)
            end = min(len(events), start + limit)
            page = events[start:end]
            next_cursor = self._cursor(row["id"], end, direction) if end < len(events) else None
        return _json_response(200, {"logs": page, "next_cursor": next_cursor})

    # ------------------------------------------------------------------ runs: stop

    def _stop(self, ws: Workspace, ref: str) -> Response:
        now = self.clock()
        with self.store.write() as w:
            row = self._find_run(ws, ref, w)
            status = self._row_status(row, now)
            if status in ("finished", "failed", "stopped"):
                raise ApiError(
                    rules.STOP_TERMINAL_STATUS,
                    rules.STOP_TERMINAL_MESSAGE.format(name=row["name"], status=status),
                    "CONFLICT",
                    status=status,
                )
            w.execute("UPDATE runs SET stopped_at = ? WHERE id = ?", (now, row["id"]))
        return _json_response(
            200,
            {
                "id": row["id"],
                "name": row["name"],
                "status": "stopped",
                "completed_at": simulation.iso(now),
            },
        )

    # ------------------------------------------------------------------ runs: outputs

    def _downloadable(self, ws: Workspace, ref: str) -> tuple[Any, simulation.Run, int]:
        row = self._find_run(ws, ref)
        run = self._run(row)
        t_ms = simulation.sim_now_ms(run, self.clock(), self.speed)
        if simulation.status_at(run, t_ms) in ("pending", "queued"):
            raise ApiError(409, NOT_DOWNLOADABLE_MESSAGE, "CONFLICT")
        return row, run, t_ms

    def _manifest(self, ws: Workspace, ref: str, params: Mapping[str, str]) -> Response:
        raw = params.get("types", "")
        wanted = [t.strip().lower() for t in raw.split(",") if t.strip()] or ["summary", "results"]
        if "all" in wanted:
            wanted = list(simulation.TYPES)
        unknown = [t for t in wanted if t not in simulation.TYPES]
        if unknown:
            raise ApiError(
                400,
                f"Unknown output type(s): {', '.join(unknown)}. Choose from: {', '.join(simulation.TYPES)}.",
                "VALIDATION",
                field="types",
            )
        _, run, t_ms = self._downloadable(ws, ref)
        files = simulation.output_files(run, t_ms, tuple(wanted), self.speed)
        return _json_response(
            200,
            {
                "files": files,
                "totals": {"files": len(files), "bytes": sum(f["size"] for f in files)},
            },
        )

    def _download_urls(self, ws: Workspace, ref: str, body: Any) -> Response:
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list) or not 1 <= len(items) <= 500:
            raise ApiError(
                400,
                "items must be a list of 1 to 500 {path, token} objects",
                "VALIDATION",
                field="items",
            )
        row, run, now_ms = self._downloadable(ws, ref)
        expires = int(self.clock()) + int(self.faults.presign_ttl_s)
        out = []
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                raise ApiError(400, "each item needs a string path", "VALIDATION", field="items")
            path, token = item["path"], item.get("token")
            t_ms = now_ms
            if isinstance(token, str) and token.startswith("snap-"):
                try:
                    t_ms = min(now_ms, int(token[5:]))
                except ValueError:
                    raise ApiError(400, f"Unknown output token for {path}", "VALIDATION") from None
            if not simulation.path_exists(run, path, t_ms):
                raise ApiError(404, f"Output file not found: {path}", "NOT_FOUND")
            entry = {"path": path, "url": self._presign(row["id"], path, t_ms, expires)}
            if token is not None:
                entry["token"] = token
            out.append(entry)
        return _json_response(200, {"items": out, "expires_in": int(self.faults.presign_ttl_s)})

    def _presign(self, run_id: str, path: str, t_ms: int, expires: int) -> str:
        payload = (
            base64.urlsafe_b64encode(
                json.dumps([run_id, path, t_ms, expires], separators=(",", ":")).encode()
            )
            .decode()
            .rstrip("=")
        )
        sig = hmac.new(self._presign_key, payload.encode(), "sha256").hexdigest()[:32]
        return (
            f"{self.public_url}{PRESIGNED_PREFIX}{payload}.{sig}/{quote(path.rsplit('/', 1)[-1])}"
        )

    def _presigned(self, method: str, path: str) -> Response:
        if method not in ("GET", "HEAD"):
            raise ApiError(405, "Method not allowed", "METHOD_NOT_ALLOWED")
        token = path[len(PRESIGNED_PREFIX) :].split("/", 1)[0]
        payload, _, sig = token.partition(".")
        expected = hmac.new(self._presign_key, payload.encode(), "sha256").hexdigest()[:32]
        if not sig or not hmac.compare_digest(sig, expected):
            raise ApiError(
                403, "SignatureDoesNotMatch: the request signature is invalid.", "SIGNATURE_INVALID"
            )
        run_id, file_path, t_ms, expires = json.loads(
            base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        )
        if self.clock() > expires:
            raise ApiError(403, "AccessDenied: Request has expired.", "URL_EXPIRED")
        row = self.store.read().execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise ApiError(404, "NoSuchKey: the object does not exist.", "NOT_FOUND")
        content = simulation.file_content(self._run(row), file_path, t_ms, self.speed)
        if content is None:
            raise ApiError(404, "NoSuchKey: the object does not exist.", "NOT_FOUND")
        kind = {"csv": "text/csv", "json": "application/json"}.get(
            file_path.rsplit(".", 1)[-1], "text/plain"
        )
        headers = {"Content-Type": kind, "Content-Length": str(len(content))}
        return Response(200, headers, b"" if method == "HEAD" else content)


def _parse_json(body: bytes) -> Any:
    if not body:
        return {}
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ApiError(400, "Request body is not valid JSON.", "VALIDATION") from None


def _strip_secret_values(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body as stored: ``secrets.provided`` keeps only the names, never the values."""
    stored = dict(body)
    secrets = stored.get("secrets")
    if isinstance(secrets, dict):
        stored["secrets"] = {
            "required": list(secrets.get("required") or []),
            "provided": sorted((secrets.get("provided") or {}).keys()),
        }
    return stored


def _model_ref(model: Mapping[str, Any]) -> str:
    kind = model.get("type")
    if kind == "endpoint":
        return f"endpoint:{model.get('base_url', '')}#{model.get('model', '')}"
    if kind == "hosted":
        return f"hosted:{simulation._model_string(model)}"
    return f"provider:{model.get('model', '')}"
