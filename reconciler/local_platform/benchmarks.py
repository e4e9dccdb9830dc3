"""E1/E2 (the catalog as a workspace sees it) and the workspace catalog itself.

A benchmark is in a workspace once it is added (``add_to_workspace``; ``benchmark add KEY
--workspace W``). A workspace that appeared on first use (the default, and the embedded
Platform's) has the whole catalog added; one made under ``--strict-workspaces`` starts
empty, as on the Platform. Sync state belongs to the workspace's entry: a workspace's
``benchmark sync``/retry moves its entry only, and an entry without its own sync state
follows the catalog's (``set_benchmark_sync`` without a workspace, the registry).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.local_platform import simulation
from reconciler.local_platform.answers import ApiError, Response, json_response
from reconciler.local_platform.catalog import benchmark_id as make_benchmark_id
from reconciler.local_platform.catalog import public_view, with_sync
from reconciler.local_platform.core import LIST_LIMIT_MAX, PlatformCore, Workspace

SYNC_STATUSES = ("ready", "pending", "syncing", "failed")
NOT_ADDED_MESSAGE = (
    "Benchmark '{ref}' was not found in this workspace. Use its key, exact (case-sensitive) "
    "name or ID, and add Harbor registry benchmarks from the Platform first."
)
ENTRY_ONLY_KEYS = (
    "runner_family", "supports_harness", "requires_harness", "default_harness",
    "requires_judge_model", "requires_judge_api_key", "judge_model_default",
    "pass_threshold", "required_secret_names",
)  # fmt: skip
"""E2 keys an E1 entry leaves out."""


class BenchmarkRoutes(PlatformCore):
    """The catalog routes (E1, E2) and the calls that change the catalog."""

    def benchmark_url(self, ws: Workspace, spec: Mapping[str, Any]) -> str:
        return self._ws_url(ws, "benchmarks", "catalog", str(spec["id"]))

    def _benchmark_entry(self, ws: Workspace, spec: dict[str, Any]) -> dict[str, Any]:
        view = public_view(spec)
        view.pop("tasks"), view.pop("categories"), view.pop("unavailable_tasks")
        for key in ENTRY_ONLY_KEYS:
            view.pop(key)
        view["platform_url"] = self.benchmark_url(ws, spec)
        return view

    def _list_benchmarks(self, ws: Workspace, params: Mapping[str, str]) -> Response:
        limit, offset = self._page(params, LIST_LIMIT_MAX)
        specs = self._catalog(ws)
        page = specs[offset : offset + limit]
        db = self.store.read()
        now, speed = self.clock(), self.speed
        stats = {
            r["benchmark_id"]: r
            for r in db.execute(
                """SELECT benchmark_id, COUNT(*) AS n,
                          SUM(CASE WHEN stopped_at IS NULL AND (? - created_at) * ? < end_off
                                   THEN 1 ELSE 0 END) AS active
                   FROM runs WHERE workspace_id = ? GROUP BY benchmark_id""",
                (now, speed, ws.id),
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
                    "last_run_at": simulation.iso(last["submitted_at"] or last["created_at"])
                    if last
                    else None,
                    "last_run_status": self._row_status(last, now, speed) if last else None,
                    "last_run_name": last["name"] if last else None,
                    "creator_name": "Osmosis",
                }
            )
            items.append(entry)
        return self._paged("benchmarks", items, len(specs), offset)

    def _get_benchmark(self, ws: Workspace, ref: str) -> Response:
        spec = self._resolve_in(ws, ref)
        if spec is None:
            raise ApiError(404, NOT_ADDED_MESSAGE.format(ref=ref), "NOT_FOUND")
        view = public_view(spec)
        view["platform_url"] = self.benchmark_url(ws, spec)
        return json_response(200, {"benchmark": view, "leaderboard": spec.get("_leaderboard", [])})

    def add_benchmark(self, spec: Mapping[str, Any]) -> str:
        """Add or replace a catalog benchmark (E2 shape; ``id`` derived from ``source_ref``
        when absent). Returns its id. Workspaces with the whole catalog have it at once;
        a ``--strict-workspaces`` workspace needs ``add_to_workspace``."""
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

    def revise_task(self, ref: str, task: str) -> None:
        """Change the definition of catalog benchmark ``ref``'s ``task`` (as when a
        benchmark's maintainers edit a task): runs created from now on run the new revision,
        so their results.csv shows a new ``task_checksum`` for it; runs created before keep
        theirs. ``KeyError`` when the catalog lacks the benchmark or the task."""
        spec = self.resolve_benchmark(ref)
        if spec is None or all(t.get("name") != task for t in spec.get("tasks", [])):
            raise KeyError(f"{ref}: {task}")
        with self.store.write() as w:
            last = w.execute("SELECT COALESCE(MAX(seq), 0) FROM runs").fetchone()[0]
            revisions = {k: list(v) for k, v in spec.get(simulation.TASK_REVISIONS, {}).items()}
            history = revisions.setdefault(task, [])
            history.append([int(last), len(history) + 1])
            self.store.upsert_benchmark(
                w, {**spec, simulation.TASK_REVISIONS: revisions}, seeded=False
            )

    def add_to_workspace(self, workspace: str, ref: str) -> dict[str, Any]:
        """Add catalog benchmark ``ref`` to ``workspace`` (as on the Platform's catalog
        page); returns the spec. ``KeyError`` for a benchmark the catalog lacks; a
        workspace that does not exist is refused under ``--strict-workspaces``."""
        spec = self.resolve_benchmark(ref)
        if spec is None:
            raise KeyError(ref)
        ws = self._workspace_by_name(workspace)
        with self.store.write() as w:
            w.execute(
                """INSERT OR IGNORE INTO workspace_benchmarks (workspace_id, benchmark_id, added_at)
                   VALUES (?, ?, ?)""",
                (ws.id, spec["id"], self.clock()),
            )
        return spec

    def set_benchmark_sync(
        self,
        ref: str,
        sync_status: str,
        *,
        synced_task_count: int | None = None,
        sync_error: str | None = None,
        workspace: str | None = None,
    ) -> None:
        """Move a benchmark's sync along: in ``workspace``'s entry only, or (``None``) in
        the catalog, which every entry without its own sync state follows (the registry).
        ``KeyError`` when the benchmark is not in that catalog."""
        if sync_status not in SYNC_STATUSES:
            raise ValueError(f"sync status must be one of {', '.join(SYNC_STATUSES)}")
        if workspace is None:
            spec = self.resolve_benchmark(ref)
            if spec is None:
                raise KeyError(ref)
            moved = with_sync(spec, sync_status, synced_task_count, sync_error)
            with self.store.write() as w:
                self.store.upsert_benchmark(w, moved, seeded=False)
            return
        ws = self._workspace_by_name(workspace)
        spec = self._resolve_in(ws, ref)
        if spec is None:
            raise KeyError(ref)
        with self.store.write() as w:
            w.execute(
                """INSERT INTO workspace_benchmarks (workspace_id, benchmark_id, added_at,
                       sync_status, synced_task_count, sync_error) VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (workspace_id, benchmark_id) DO UPDATE SET
                       sync_status = excluded.sync_status,
                       synced_task_count = excluded.synced_task_count,
                       sync_error = excluded.sync_error""",
                (ws.id, spec["id"], self.clock(), sync_status, synced_task_count, sync_error),
            )
