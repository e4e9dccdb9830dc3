"""SQLite persistence of the local Platform.

One database file, ``<data_dir>/platform.sqlite3``, in WAL mode with a generous busy
timeout so several processes (a loopback server, a few CLI processes each with an
in-process platform) can share one data dir. Every write is one short ``BEGIN IMMEDIATE``
transaction; a submit is exactly one. Connections are per thread because the server answers
each request on its own thread.
"""

from __future__ import annotations

import fcntl
import json
import secrets as _secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reconciler.local_platform.catalog import seed_catalog

DB_NAME = "platform.sqlite3"
CATALOG_VERSION = "6"
"""Bump when ``catalog.seed_catalog`` changes so existing data dirs pick the change up."""
BUSY_TIMEOUT_MS = 30_000
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("workspaces", "catalog", "TEXT NOT NULL DEFAULT 'all'"),
    ("secrets", "creator_name", "TEXT"),
    ("secrets", "updater_name", "TEXT"),
    ("runs", "creator_id", "TEXT"),
    ("runs", "submitted_at", "REAL"),
)
"""Columns later versions added: a data dir made before them gets them on first open."""
LEGACY_SPEED_FILE = "speed"
"""Where the embedded Platform remembered its speed before the data dir's ``meta`` did."""
INIT_LOCK_NAME = "platform.init.lock"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    repo TEXT UNIQUE,
    role TEXT NOT NULL,
    created_at REAL NOT NULL,
    catalog TEXT NOT NULL DEFAULT 'all'
);
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS workspace_benchmarks (
    workspace_id TEXT NOT NULL,
    benchmark_id TEXT NOT NULL,
    added_at REAL NOT NULL,
    sync_status TEXT,
    synced_task_count INTEGER,
    sync_error TEXT,
    PRIMARY KEY (workspace_id, benchmark_id)
);
CREATE TABLE IF NOT EXISTS benchmarks (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    rev INTEGER NOT NULL DEFAULT 1,
    seeded INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS secrets (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value_digest TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    creator_name TEXT,
    updater_name TEXT,
    UNIQUE (workspace_id, scope, user_id, name)
);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL,
    benchmark_id TEXT NOT NULL,
    body TEXT NOT NULL,
    task_count INTEGER NOT NULL,
    agent_count INTEGER NOT NULL,
    expected INTEGER NOT NULL,
    secret_scopes TEXT NOT NULL,
    created_at REAL NOT NULL,
    queue_off REAL NOT NULL,
    start_off REAL NOT NULL,
    full_dur REAL NOT NULL,
    end_off REAL NOT NULL,
    final_status TEXT NOT NULL,
    stopped_at REAL,
    seed INTEGER NOT NULL,
    creator_name TEXT,
    creator_email TEXT,
    creator_id TEXT,
    submitted_at REAL
);
CREATE INDEX IF NOT EXISTS runs_by_workspace ON runs (workspace_id, created_at DESC, seq DESC);
CREATE INDEX IF NOT EXISTS runs_by_benchmark ON runs (workspace_id, benchmark_id, created_at);
"""


def _set_wal(conn: sqlite3.Connection) -> None:
    """Put the database in WAL mode, retrying the SQLITE_BUSY the busy handler does not cover."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class Store:
    """Thread-local SQLite connections to one data dir, plus schema and catalog seeding."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DB_NAME
        self._local = threading.local()
        self._init()

    def connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # isolation_level=None: we issue BEGIN IMMEDIATE ourselves so a writer takes the
            # write lock up front (no deadlock-prone lock upgrade between processes).
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _set_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed on success, rolled back on any exception."""
        conn = self.connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def read(self) -> sqlite3.Connection:
        return self.connect()

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _init(self) -> None:
        # Several processes may open a new data dir at once. Switching a fresh database to
        # WAL needs an exclusive lock that SQLite does not wait for (the busy handler is not
        # consulted), so first-time set-up is serialised on a sidecar file lock.
        with open(self.data_dir / INIT_LOCK_NAME, "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            conn = self.connect()
            conn.executescript(SCHEMA)
            for table, column, decl in ADDED_COLUMNS:
                have = {r["name"] for r in conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
        with self.write() as w:
            w.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('presign_key', ?)",
                (_secrets.token_hex(32),),
            )
            w.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('run_counter', '0')")
            # Which data dir this is: a lockfile written against it records it, so a clone
            # elsewhere (another data dir) can tell that none of its runs exist there.
            w.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('instance', ?)",
                ("lp_" + _secrets.token_hex(8),),
            )
            # The data dir's own seed: ids and names differ from every other data dir's.
            w.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('seed', ?)",
                (str(_secrets.randbelow(2**31)),),
            )
            row = w.execute("SELECT value FROM meta WHERE key = 'catalog_version'").fetchone()
            if row is None or row["value"] != CATALOG_VERSION:
                for spec in seed_catalog():
                    self.upsert_benchmark(w, spec, seeded=True)
                w.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('catalog_version', ?)",
                    (CATALOG_VERSION,),
                )

    @staticmethod
    def upsert_benchmark(conn: sqlite3.Connection, spec: dict[str, Any], *, seeded: bool) -> None:
        conn.execute(
            """INSERT INTO benchmarks (id, key, name, spec, rev, seeded) VALUES (?, ?, ?, ?, 1, ?)
               ON CONFLICT (id) DO UPDATE SET key = excluded.key, name = excluded.name,
                   spec = excluded.spec, rev = benchmarks.rev + 1""",
            (spec["id"], spec["source_ref"], spec["name"], json.dumps(spec), int(seeded)),
        )

    def speed(self) -> float | None:
        """The simulated-time factor stored in the data dir (None before the first open)."""
        value = self.meta("speed")
        return None if value is None else float(value)

    def set_speed(self, speed: float, now: float) -> None:
        """Store ``speed``, re-basing every run's times at wall time ``now`` so that no
        run's simulated age (``(now - created_at) x speed``) and hence no status jumps.

        ``submitted_at`` keeps the wall-clock time a run was created, for display.
        """
        with self.write() as w:
            row = w.execute("SELECT value FROM meta WHERE key = 'speed'").fetchone()
            old = None if row is None else float(row["value"])
            if old is not None and old != speed:
                ratio = old / speed
                w.execute(
                    """UPDATE runs SET submitted_at = COALESCE(submitted_at, created_at),
                           created_at = :now - (:now - created_at) * :ratio,
                           stopped_at = CASE WHEN stopped_at IS NULL THEN NULL
                                        ELSE :now - (:now - stopped_at) * :ratio END""",
                    {"now": now, "ratio": ratio},
                )
            w.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('speed', ?)", (repr(speed),)
            )

    def legacy_speed(self) -> float | None:
        """The speed an older embedded Platform remembered in ``<data dir>/speed``."""
        try:
            value = float((self.data_dir / LEGACY_SPEED_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if value > 0 else None

    def meta(self, key: str) -> str | None:
        row = self.read().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])
