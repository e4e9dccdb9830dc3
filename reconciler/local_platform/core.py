"""The state every route family of the local Platform shares: the data dir, its clock and
seed, the callers (users), workspaces and their catalogs, and the stored runs.

``LocalPlatform`` (``app``) is this core plus one mixin per route family (``benchmarks``,
``secret_routes``, ``runs``, ``history``, ``outputs``, ``pages``); a family calls only the
core and itself, so each can be read on its own.

**One clock.** A run's status is a function of its stored times and the speed stored in the
data dir (``meta.speed``), so every process that opens the directory (a served Platform, the
embedded one, the ``osmosis-platform-emulator`` commands) reports the same status for the
same run. Asking for another speed (``speed=``, ``serve --speed``,
``OSMOSIS_LOCAL_PLATFORM_SPEED``) re-bases the stored times (``Store.set_speed``) so no
status jumps; without it, the stored speed is used.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from reconciler.local_platform import rules, simulation
from reconciler.local_platform.answers import ApiError, Response, json_response
from reconciler.local_platform.catalog import with_sync
from reconciler.local_platform.faults import FaultInjector, Faults
from reconciler.local_platform.store import Store
from reconciler.local_platform.users import LOCAL_USER, User
from reconciler.model.status import RunStatus

LIST_LIMIT_MAX = 50
GIT_IDENTITY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
CATALOG_ALL = "all"
"""A workspace whose catalog is the whole catalog (auto-created on first use)."""
CATALOG_ADDED = "added"
"""A workspace whose catalog is what was added to it (``--strict-workspaces``)."""
TERMINAL = tuple(status for status in RunStatus if status.is_terminal)
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


DEFAULT_WORKSPACE = "local"
"""The workspace of the embedded Platform (what ``osmosis-plan`` uses without a token or an
``origin``), and so every emulator command's and ``serve``'s default: a secret set or a
history seeded without ``--workspace`` is where the plan looks."""


@dataclass(frozen=True)
class Workspace:
    """A workspace: ``catalog`` is ``all`` (every catalog benchmark is in it) or ``added``
    (only what ``benchmark add`` put in it)."""

    id: str
    name: str
    repo: str | None
    role: str
    catalog: str = CATALOG_ALL


def _workspace(row: sqlite3.Row) -> Workspace:
    return Workspace(row["id"], row["name"], row["repo"], row["role"], row["catalog"])


def simulation_hash(*parts: object) -> int:
    return int(simulation.h01(*parts) * 2**52)


def new_run_id(seed: int, counter: int) -> str:
    """The id of the ``counter``-th run a Platform with ``seed`` creates."""
    return "bmr_" + hashlib.sha256(f"run:{seed}:{counter}".encode()).hexdigest()[:20]


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


def strip_secret_values(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body as stored: ``secrets.provided`` keeps only the names, never the values."""
    stored = dict(body)
    secrets = stored.get("secrets")
    if isinstance(secrets, dict):
        stored["secrets"] = {
            "required": list(secrets.get("required") or []),
            "provided": sorted((secrets.get("provided") or {}).keys()),
        }
    return stored


class PlatformCore:
    """The shared state of ``LocalPlatform`` (see the module docstring).

    ``speed`` (None: the data dir's stored speed, 1 for a new one) scales simulated time;
    ``seed`` (None: the data dir's own, random at creation) drives names and outcomes;
    ``users`` maps bearer tokens to users (every other token is refused); without it,
    ``token`` (when set) is the only accepted token and every caller is ``LOCAL_USER``.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        speed: float | None = None,
        seed: int | None = None,
        token: str | None = None,
        users: Mapping[str, User] | None = None,
        faults: Faults = Faults(),  # noqa: B008 - frozen dataclass, safe as a default
        auto_workspaces: bool = True,
        workspaces: Sequence[str] = (DEFAULT_WORKSPACE,),
        public_url: str = "http://localhost",
        clock: Callable[[], float] = time.time,
    ) -> None:
        if speed is not None and not speed > 0:
            raise ValueError("speed must be positive")
        if users and token is not None:
            raise ValueError("give either users (one token each) or one token, not both")
        self.data_dir = Path(data_dir)
        self._token = token
        self._users: dict[str, User] = dict(users or {})
        self.faults = faults
        self.injector = FaultInjector(faults)
        self.auto_workspaces = auto_workspaces
        self.public_url = public_url.rstrip("/")
        self.clock = clock
        self.store = Store(self.data_dir)
        self.instance = self.store.meta("instance")
        """This data dir's id (``LockState.platform_instance``), made when it was created."""
        self.seed = int(seed) if seed is not None else int(self.store.meta("seed") or 0)
        stored = self.store.speed()
        wanted = speed if speed is not None else (None if stored else self.store.legacy_speed())
        if stored is None or (wanted is not None and wanted != stored):
            self.store.set_speed(float(wanted or 1.0), self.clock())
        self._presign_key = bytes.fromhex(self.store.meta("presign_key") or "")
        self._bench_lock = threading.Lock()
        self._bench_cache: dict[str, tuple[int, dict[str, Any]]] = {}
        self._final_metrics: dict[tuple[Any, ...], Mapping[str, Any]] = {}
        if self._users:
            with self.store.write() as w:
                for user in self._users.values():
                    self._remember_user(w, user)
        for name in workspaces:
            self._ensure_workspace(name)

    # ------------------------------------------------------------------ clock

    @property
    def speed(self) -> float:
        """The data dir's simulated-time factor (read each time: another process may set it)."""
        return self.store.speed() or 1.0

    def set_speed(self, speed: float) -> None:
        """Change the stored speed, re-basing run times so no status jumps."""
        if not speed > 0:
            raise ValueError("speed must be positive")
        self.store.set_speed(float(speed), self.clock())

    # ------------------------------------------------------------------ callers

    @staticmethod
    def _remember_user(w: sqlite3.Connection, user: User) -> None:
        w.execute(
            """INSERT INTO users (id, name, email) VALUES (?, ?, ?)
               ON CONFLICT (id) DO UPDATE SET name = excluded.name, email = excluded.email""",
            (user.id, user.name, user.email),
        )

    @property
    def users(self) -> list[User]:
        """The users tokens stand for (``[LOCAL_USER]`` when none were given)."""
        return list(self._users.values()) or [LOCAL_USER]

    def _authenticate(self, headers: Mapping[str, str]) -> User:
        value = headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "Missing or invalid bearer token.", "TOKEN_INVALID")
        if self._users:
            for known, user in self._users.items():
                if hmac.compare_digest(token.encode("utf-8"), known.encode("utf-8")):
                    return user
            raise ApiError(401, "Invalid token.", "TOKEN_INVALID")
        if self._token is not None and not hmac.compare_digest(
            token.encode("utf-8"), self._token.encode("utf-8")
        ):
            raise ApiError(401, "Invalid token.", "TOKEN_INVALID")
        return LOCAL_USER

    # ------------------------------------------------------------------ workspaces

    def _ensure_workspace(self, name: str, repo: str | None = None) -> Workspace:
        # A workspace made under --strict-workspaces starts with an empty catalog, as on
        # the Platform; one that appears on first use has the whole catalog added.
        catalog = CATALOG_ALL if self.auto_workspaces else CATALOG_ADDED
        with self.store.write() as w:
            w.execute(
                """INSERT OR IGNORE INTO workspaces (id, name, repo, role, created_at, catalog)
                   VALUES (?, ?, ?, 'owner', ?, ?)""",
                (
                    "ws_" + hashlib.sha256(name.encode()).hexdigest()[:16],
                    name,
                    repo,
                    self.clock(),
                    catalog,
                ),
            )
            row = w.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
        return _workspace(row)

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
            return _workspace(row)
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
        return _workspace(row)

    def _workspace_by_name(self, name: str) -> Workspace:
        return (
            self._ensure_workspace(name)
            if self.auto_workspaces
            else self._scope({"x-osmosis-workspace": name})
        )

    def _workspace_by_id(self, wid: str) -> Workspace | None:
        row = self.store.read().execute("SELECT * FROM workspaces WHERE id = ?", (wid,))
        found = row.fetchone()
        return None if found is None else _workspace(found)

    def _existing_workspace(self, name: str) -> Workspace | None:
        row = self.store.read().execute("SELECT * FROM workspaces WHERE name = ?", (name,))
        found = row.fetchone()
        return None if found is None else _workspace(found)

    # ------------------------------------------------------------------ helpers

    def _ws_url(self, ws: Workspace, *parts: str) -> str:
        return "/".join([self.public_url, quote(ws.name, safe=""), *parts])

    @staticmethod
    def _method(method: str, allowed: str) -> None:
        if method != allowed:
            raise ApiError(405, f"Method {method} not allowed", "METHOD_NOT_ALLOWED")

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
        return json_response(
            200,
            {
                key: items,
                "total_count": total,
                "has_more": has_more,
                "next_offset": offset + rows if has_more else None,
                **extra,
            },
        )

    # ------------------------------------------------------------------ catalog

    def _benchmarks(self) -> list[dict[str, Any]]:
        """The whole catalog, as the registry has it (every workspace's starting point)."""
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
        """A catalog benchmark by id, key (``source_ref``) or exact, case-sensitive name."""
        return _resolve(self._benchmarks(), ref)

    def _catalog(self, ws: Workspace) -> list[dict[str, Any]]:
        """The benchmarks added to ``ws``, each with its workspace entry's sync state."""
        entries = {
            r["benchmark_id"]: r
            for r in self.store.read().execute(
                "SELECT * FROM workspace_benchmarks WHERE workspace_id = ?", (ws.id,)
            )
        }
        out = []
        for spec in self._benchmarks():
            entry = entries.get(spec["id"])
            if entry is None and ws.catalog != CATALOG_ALL:
                continue
            if entry is not None and entry["sync_status"] is not None:
                spec = with_sync(
                    spec, entry["sync_status"], entry["synced_task_count"], entry["sync_error"]
                )
            out.append(spec)
        return out

    def _resolve_in(self, ws: Workspace, ref: str) -> dict[str, Any] | None:
        """A benchmark of ``ws``'s catalog by id, key or exact name (None: not added)."""
        return _resolve(self._catalog(ws), ref)

    def _run_specs(self, ws: Workspace) -> dict[str, dict[str, Any]]:
        """Benchmark id -> spec as ``ws``'s runs see it (its entries first, then the catalog
        for benchmarks the workspace no longer has)."""
        specs = {s["id"]: s for s in self._benchmarks()}
        specs.update({s["id"]: s for s in self._catalog(ws)})
        return specs

    # ------------------------------------------------------------------ secrets

    def _secret_scopes(self, ws: Workspace, user: User) -> dict[str, set[str]]:
        """Name -> scopes of the records ``user`` can use in ``ws`` (workspace records and
        the user's own personal ones)."""
        rows = (
            self.store.read()
            .execute(
                "SELECT name, scope FROM secrets WHERE workspace_id = ? "
                "AND (scope = 'workspace' OR user_id = ?)",
                (ws.id, user.id),
            )
            .fetchall()
        )
        out: dict[str, set[str]] = {}
        for r in rows:
            out.setdefault(r["name"], set()).add(r["scope"])
        return out

    # ------------------------------------------------------------------ runs

    def _row_status(self, row: sqlite3.Row, now: float, speed: float | None = None) -> RunStatus:
        """Status from the stored schedule alone (no catalog, no results): same integer
        millisecond rule as ``simulation.status_at``."""
        if row["stopped_at"] is not None:
            return RunStatus.STOPPED
        factor = self.speed if speed is None else speed
        t_ms = math.floor(max(0.0, (now - row["created_at"]) * factor) * 1000)
        if t_ms >= simulation.off_ms(row["end_off"]):
            return RunStatus.of(row["final_status"])
        if t_ms >= simulation.off_ms(row["start_off"]):
            return RunStatus.RUNNING
        if t_ms >= simulation.off_ms(row["queue_off"]):
            return RunStatus.QUEUED
        return RunStatus.PENDING

    def _find_run(self, ws: Workspace, ref: str, db: sqlite3.Connection | None = None) -> Any:
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

    def _run(
        self, row: sqlite3.Row, specs: Mapping[str, dict[str, Any]] | None = None
    ) -> simulation.Run:
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
            row["queue_off"],
            row["start_off"],
            row["full_dur"],
            row["end_off"],
            RunStatus.of(row["final_status"]),
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
            seq=row["seq"] if "seq" in row.keys() else None,
        )

    def _insert_run(
        self,
        w: sqlite3.Connection,
        ws: Workspace,
        spec: Mapping[str, Any],
        body: Mapping[str, Any],
        task_count: int,
        agents: int,
        expected: int,
        scopes: Mapping[str, str],
        created_at: float,
        creator: User,
        schedule: simulation.Schedule | None = None,
        stopped_at: float | None = None,
        existing_names: set[str] | None = None,
    ) -> dict[str, Any]:
        counter = (
            int(w.execute("SELECT value FROM meta WHERE key = 'run_counter'").fetchone()[0]) + 1
        )
        w.execute("UPDATE meta SET value = ? WHERE key = 'run_counter'", (str(counter),))
        run_id = new_run_id(self.seed, counter)
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
            "final_status": sched.final_status.value,
            "stopped_at": stopped_at,
            "seed": self.seed,
            "creator_name": creator.name,
            "creator_email": creator.email,
            "creator_id": creator.id,
        }
        cols = ", ".join(record)
        w.execute(
            f"INSERT INTO runs ({cols}) VALUES ({', '.join('?' * len(record))})",
            tuple(record.values()),
        )
        if existing_names is not None:
            existing_names.add(name)
        return record


def _resolve(specs: Sequence[dict[str, Any]], ref: str) -> dict[str, Any] | None:
    for field_name in ("id", "source_ref", "name"):
        for spec in specs:
            if spec[field_name] == ref:
                return spec
    return None
