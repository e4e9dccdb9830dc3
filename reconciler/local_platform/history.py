"""History: bulk-made runs, so anyone can make a busy shared workspace in seconds.

``seed_runs`` inserts runs in one transaction with schedules chosen so that each has the
drawn status now (ended ones have outputs, as every ended run does); ``runs seed`` on the
command line wraps it (``--count``, ``--days``, ``--creator``, ``--like``, ``--status-mix``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from reconciler.local_platform import rules, simulation
from reconciler.local_platform.core import PlatformCore, strip_secret_values
from reconciler.local_platform.users import LOCAL_USER, User, make_user
from reconciler.model.status import RunStatus

DEFAULT_STATUS_MIX: Mapping[RunStatus, float] = {
    RunStatus.FINISHED: 0.75,
    RunStatus.FAILED: 0.1,
    RunStatus.STOPPED: 0.05,
    RunStatus.RUNNING: 0.05,
    RunStatus.QUEUED: 0.03,
    RunStatus.PENDING: 0.02,
}
RUN_STATUSES = RunStatus.reported()
HISTORY_TEAM: tuple[User, ...] = (
    make_user("Ada Park", "ada@acme.example"),
    make_user("Bruno Diaz", "bruno@acme.example"),
    make_user("Chen Wei", "chen@acme.example"),
    make_user("CI Service Account", "ci-bot@acme.example"),
)
"""Who made the history ``runs seed`` makes when no ``--creator`` is given."""


def parse_status_mix(text: str) -> dict[RunStatus, float]:
    """``finished=0.8,failed=0.2`` -> weights; ``ValueError`` names the bad part."""
    mix: dict[RunStatus, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        status, sep, weight = part.partition("=")
        status = status.strip()
        known = RunStatus.parse(status)
        if known is None:
            raise ValueError(
                f"--status-mix: unknown status {status!r} (use {', '.join(RUN_STATUSES)})"
            )
        try:
            value = float(weight) if sep else 1.0
        except ValueError:
            raise ValueError(f"--status-mix: {part!r} needs a number after '='") from None
        if value < 0:
            raise ValueError(f"--status-mix: {status} has a negative weight")
        mix[known] = value
    if not mix or sum(mix.values()) <= 0:
        raise ValueError("--status-mix needs at least one status with a positive weight")
    return mix


class History(PlatformCore):
    """``seed_runs``: the Python API of ``runs seed``."""

    def seed_runs(
        self,
        workspace: str,
        n: int,
        *,
        benchmark_key: str = "terminal-bench-2-1",
        status_mix: Mapping[RunStatus, float] | None = None,
        created_from: datetime | float | None = None,
        body: Mapping[str, Any] | None = None,
        creators: Sequence[User] = (LOCAL_USER,),
    ) -> list[str]:
        """Bulk-insert ``n`` runs (one transaction) for performance tests; returns their ids.

        Each run gets a status drawn from ``status_mix`` (weights, deterministic from the
        seed) and a ``created_at`` between ``created_from`` (default: 30 days ago) and now
        that makes it have that status now. ``body`` defaults to one provider agent on the
        benchmark's recommended task set or all its tasks. ``creators`` take turns (drawn
        from the seed) as the runs' creators. The benchmark is added to the workspace (a
        history on it means it was).
        """
        if not creators:
            raise ValueError("seed_runs needs at least one creator")
        ws = self._workspace_by_name(workspace)
        spec = self._resolve_in(ws, benchmark_key) or self.resolve_benchmark(benchmark_key)
        if spec is None:
            raise KeyError(benchmark_key)
        speed = self.speed
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
        # Callers outside the command line may name the statuses as plain strings.
        mix = {RunStatus(str(s)): w for s, w in (status_mix or DEFAULT_STATUS_MIX).items()}
        total_weight = sum(mix.values())
        now = self.clock()
        if created_from is None:
            start = now - 30 * 86400
        elif isinstance(created_from, datetime):
            start = created_from.timestamp()
        else:
            start = float(created_from)
        stored = json.loads(json.dumps(strip_secret_values(body)))
        ids: list[str] = []
        with self.store.write() as w:
            names = {r[0] for r in w.execute("SELECT name FROM runs")}
            w.execute(
                """INSERT OR IGNORE INTO workspace_benchmarks (workspace_id, benchmark_id, added_at)
                   VALUES (?, ?, ?)""",
                (ws.id, spec["id"], start),
            )
            for user in creators:
                self._remember_user(w, user)
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
                if (
                    status in (RunStatus.FINISHED, RunStatus.FAILED)
                    and sched.final_status != status
                ):
                    frac = 1.0 if status is RunStatus.FINISHED else 0.5
                    sched = simulation.Schedule(
                        sched.queue_off, sched.start_off, sched.full_dur,
                        sched.start_off + sched.full_dur * frac, status,
                    )  # fmt: skip
                stopped_at = None
                if status is RunStatus.PENDING:
                    created = now - sched.queue_off * 0.5 / speed
                elif status is RunStatus.QUEUED:
                    created = now - (sched.queue_off + sched.start_off) * 0.5 / speed
                elif status is RunStatus.RUNNING:
                    # Halfway through its running time (to its end, failed or not), so it
                    # stays running as long as it can after the seeding.
                    created = now - (sched.start_off + sched.end_off) * 0.5 / speed
                elif status is RunStatus.STOPPED:
                    created = min(created, now - sched.end_off / speed - 1)
                    stopped_at = (
                        created
                        + (sched.start_off + (sched.end_off - sched.start_off) * 0.5) / speed
                    )
                else:
                    created = min(created, now - sched.end_off / speed - 1)
                record = self._insert_run(
                    w, ws, spec, stored, len(tasks), agents, expected, {}, created,
                    creators[int(simulation.h01(self.seed, "creator", i, n) * len(creators))],
                    schedule=sched, stopped_at=stopped_at, existing_names=names,
                )  # fmt: skip
                ids.append(record["id"])
        return ids
