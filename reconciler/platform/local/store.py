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

from reconciler.platform.local.catalog import seed_catalog

DB_NAME = "platform.sqlite3"
CATALOG_VERSION = "5"
"""Bump when ``catalog.seed_catalog`` changes so existing data dirs pick the change up."""
BUSY_TIMEOUT_MS = 30_000
INIT_LOCK_NAME = "platform.init.lock"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    repo TEXT UNIQUE,
    role TEXT NOT NULL,
    created_at REAL NOT NULL
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
    creator_email TEXT
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
        with self.write() as w:
            w.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('presign_key', ?)",
                (_secrets.token_hex(32),),
            )
            w.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('run_counter', '0')")
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

    def meta(self, key: str) -> str | None:
        row = self.read().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])
