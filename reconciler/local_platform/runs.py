"""E3-E7: submit, list, read, logs and stop of benchmark runs.

Every run records its creator (the user whose token submitted it). A submit resolves the
benchmark in the workspace's catalog (404 until it is added) and the secrets the submitting
user can use: workspace records and that user's personal ones.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from reconciler.local_platform import rules, simulation
from reconciler.local_platform.answers import ApiError, Response, json_response
from reconciler.local_platform.core import (
    LIST_LIMIT_MAX,
    TERMINAL,
    PlatformCore,
    Workspace,
    strip_secret_values,
)
from reconciler.local_platform.faults import Draw, hold_while
from reconciler.local_platform.users import User
from reconciler.model.status import RunStatus
from reconciler.plan import submit_rules

LOGS_LIMIT_MAX = 200


def resolved_scopes(
    names: list[str], provided: Mapping[str, Any], stored: Mapping[str, set[str]]
) -> dict[str, str]:
    """E5's ``resolved_secret_scopes`` as the page defines it: ``user`` (personal),
    ``workspace``, ``user_override`` (personal over a workspace record of the same name).
    A value supplied with the submit (``secrets.provided``) is the submitting user's own:
    ``user``, or ``user_override`` over a workspace record."""
    scopes: dict[str, str] = {}
    for name in names:
        have = stored.get(name, set())
        personal = name in provided or "user" in have
        if personal:
            scopes[name] = "user_override" if "workspace" in have else "user"
        else:
            scopes[name] = "workspace"
    return scopes


class RunRoutes(PlatformCore):
    """The benchmark-run routes but outputs (``outputs``)."""

    def _submit(self, ws: Workspace, user: User, body: Any, draw: Draw) -> Response:
        issues = rules.check_shape(body)
        if issues:
            raise ApiError(
                400,
                "Invalid benchmark run configuration",
                "VALIDATION",
                issues=[i.as_json() for i in issues],
            )
        ref = body["experiment_config"]["benchmark"]
        spec = self._resolve_in(ws, ref)
        if spec is None:
            raise ApiError(
                404, submit_rules.NOT_FOUND_MESSAGE.format(ref=ref), "BENCHMARK_NOT_FOUND"
            )
        if spec["sync_status"] != "ready":
            url = self._ws_url(ws, "benchmarks", "catalog", spec["id"])
            raise ApiError(
                submit_rules.NOT_READY_STATUS,
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
        stored = self._secret_scopes(ws, user)
        missing = [n for n in names if n not in provided and n not in stored]
        if missing:
            raise ApiError(
                404,
                submit_rules.missing_secrets_message(missing),
                platform_url=self._ws_url(ws, "secrets"),
            )
        scopes = resolved_scopes(names, provided, stored)
        stored_body = strip_secret_values(body)
        agents = len(body["agents"])
        expected = (
            len(tasks) * agents * submit_rules.attempts_per_task(body.get("execution_config"))
        )
        with self.store.write() as w:
            row = self._insert_run(
                w, ws, spec, stored_body, len(tasks), agents, expected, scopes, self.clock(), user
            )
        # The run is committed: from here on a lost response is the "outcome unknown" case.
        if self.faults.after_submit_delay_ms:
            time.sleep(self.faults.after_submit_delay_ms / 1000.0)
        hold_while(self.faults.hold_submits_while)
        if draw.drop_after_submit:
            self.injector.count("drop_after_submit")
            return Response(0, drop=True)
        instead = self.injector.after_commit()
        if instead == "rate_limit":
            self.injector.count("rate_limit_after_submit")
            return json_response(
                429,
                {"error": "Too many requests; slow down.", "code": "RATE_LIMITED"},
                {"Retry-After": str(self.faults.retry_after_s)},
            )
        if instead == "wrong_reply":
            self.injector.count("wrong_submit_reply")
            return json_response(200, {"id": 5, "name": None})
        return json_response(
            200,
            {
                "id": row["id"],
                "name": row["name"],
                "status": RunStatus.PENDING.value,
                "workflow_id": f"benchmark-run/{row['id']}",
                "task_count": len(tasks),
                "created_at": simulation.iso(row["created_at"]),
                "platform_url": self._ws_url(ws, "benchmarks", row["id"]),
            },
        )

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

    def _summary(
        self,
        ws: Workspace,
        row: sqlite3.Row,
        run: simulation.Run,
        t_ms: int,
        m: Mapping[str, Any],
        speed: float,
    ) -> dict[str, Any]:
        status = simulation.status_at(run, t_ms)
        s = run.schedule
        started = (
            run.created_at + s.start_off / speed if t_ms >= simulation.off_ms(s.start_off) else None
        )
        completed = None
        if run.stopped_at is not None:
            completed = run.stopped_at
        elif status in (RunStatus.FINISHED, RunStatus.FAILED):
            completed = run.created_at + s.end_off / speed
        return {
            "id": row["id"],
            "name": row["name"],
            "status": status,
            "benchmark_id": run.benchmark["id"],
            "benchmark_name": run.benchmark["name"],
            "benchmark": {"id": run.benchmark["id"], "name": run.benchmark["name"]},
            "created_at": simulation.iso(row["submitted_at"] or row["created_at"]),
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
        terminal = simulation.status_at(run, t_ms) in TERMINAL
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

    def _snapshot(
        self, ws: Workspace, row: sqlite3.Row
    ) -> tuple[simulation.Run, int, dict[str, Any]]:
        run = self._run(row, self._run_specs(ws))
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
        specs = self._run_specs(ws)
        now, speed = self.clock(), self.speed
        items = []
        for row in rows:
            if self.injector.omitted_from_list(row["id"]):
                self.injector.count("list_omit")
                continue
            run = self._run(row, specs)
            t_ms = simulation.sim_now_ms(run, now, speed)
            items.append(self._summary(ws, row, run, t_ms, self._list_metrics(run, t_ms), speed))
        return self._paged("benchmark_runs", items, total, offset, page_rows=len(rows))

    def _get_run(self, ws: Workspace, ref: str) -> Response:
        row = self._find_run(ws, ref)
        run, t_ms, m = self._snapshot(ws, row)
        summary = self._summary(ws, row, run, t_ms, m, self.speed)
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
            identity = simulation.model_string(model)
            agg = m["aggregates"][i]
            agent_status = summary["status"]
            if (
                agent_status == RunStatus.RUNNING
                and agg["passed"] + agg["failed"] + agg["errored"] >= len(run.tasks) * run.attempts
            ):
                agent_status = RunStatus.FINISHED.value
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
        return json_response(200, payload)

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
        run, t_ms, _ = self._snapshot(ws, row)
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
        return json_response(200, {"logs": page, "next_cursor": next_cursor})

    # ------------------------------------------------------------------ runs: stop

    def _stop(self, ws: Workspace, ref: str) -> Response:
        now = self.clock()
        with self.store.write() as w:
            row = self._find_run(ws, ref, w)
            status = self._row_status(row, now)
            if status in TERMINAL:
                raise ApiError(
                    rules.STOP_TERMINAL_STATUS,
                    rules.STOP_TERMINAL_MESSAGE.format(name=row["name"], status=status),
                    "CONFLICT",
                    status=status,
                )
            w.execute("UPDATE runs SET stopped_at = ? WHERE id = ?", (now, row["id"]))
        return json_response(
            200,
            {
                "id": row["id"],
                "name": row["name"],
                "status": RunStatus.STOPPED.value,
                "completed_at": simulation.iso(now),
            },
        )


def _model_ref(model: Mapping[str, Any]) -> str:
    kind = model.get("type")
    if kind == "endpoint":
        return f"endpoint:{model.get('base_url', '')}#{model.get('model', '')}"
    if kind == "hosted":
        return f"hosted:{simulation.model_string(model)}"
    return f"provider:{model.get('model', '')}"
