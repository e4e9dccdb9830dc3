"""Deterministic run simulation: lifecycle, per-task outcomes, metrics, outputs and logs.

A run's whole future is fixed at submit time by a schedule in *simulated seconds*
(``queue_off``, ``start_off``, ``end_off``, ``full_dur``, ``final_status``); the simulated
time of a run is ``(clock() - created_at) * speed``, frozen at ``stopped_at`` once stopped.
Everything else (which results are ingested, their outcomes, the files and the log) is a pure
function of the run and a simulated instant, so a manifest and the downloads that follow it
agree byte for byte, and two processes on one data dir agree too.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from reconciler.local_platform.catalog import wilson
from reconciler.model.status import RunStatus

PENDING_S = (2.0, 6.0)
"""Simulated seconds a run stays ``pending`` (min, max): data, not logic."""
QUEUED_S = (3.0, 12.0)
RUN_BASE_S = 20.0
RUN_PER_RESULT_S = 0.5
RUN_MAX_S = 3600.0
FAILED_SHARE = 0.10
"""About one run in ten ends ``failed`` (deterministic per run)."""
ERRORED_SHARE = 0.03
DIFFICULTY_SHIFT = {"easy": 0.2, "medium": 0.0, "hard": -0.22, None: 0.0}


def h01(*parts: object) -> float:
    """A stable uniform number in [0, 1) from the parts."""
    raw = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big") / 2.0**64


def iso(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC with a ``Z`` (millisecond precision)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{int(round(ts * 1000)) % 1000:03d}Z"
    )


@dataclass(frozen=True)
class Schedule:
    """A run's fixed future, in simulated seconds after ``created_at``."""

    queue_off: float
    start_off: float
    full_dur: float
    end_off: float
    final_status: RunStatus


ERRORING_ENDPOINT = "always-errors"
"""A run whose agents' model (name, endpoint URL or any other model field) contains this
marker meets a model endpoint that answers errors: every attempt errors and the run ends
``failed``, which no submit-time check can see (docs/local-platform.md, docs/smoke.md)."""


def endpoint_errors(body: Mapping[str, Any]) -> bool:
    """Whether the submit body's agents name the erroring-endpoint marker."""
    return ERRORING_ENDPOINT in json.dumps(body.get("agents") or [])


def make_schedule(run_id: str, seed: int, expected: int, *, errors: bool = False) -> Schedule:
    """The schedule of a new run: deterministic from its id, the seed and its size; a run
    whose endpoint answers errors (``errors``) fails early."""
    queue_off = PENDING_S[0] + (PENDING_S[1] - PENDING_S[0]) * h01(seed, run_id, "pending")
    start_off = queue_off + QUEUED_S[0] + (QUEUED_S[1] - QUEUED_S[0]) * h01(seed, run_id, "queue")
    full = min(RUN_MAX_S, RUN_BASE_S + RUN_PER_RESULT_S * expected)
    full *= 0.8 + 0.4 * h01(seed, run_id, "dur")
    if errors:
        return Schedule(queue_off, start_off, full, start_off + full * 0.2, RunStatus.FAILED)
    if h01(seed, run_id, "fail") < FAILED_SHARE:
        frac = 0.2 + 0.6 * h01(seed, run_id, "fail-at")
        return Schedule(queue_off, start_off, full, start_off + full * frac, RunStatus.FAILED)
    return Schedule(queue_off, start_off, full, start_off + full, RunStatus.FINISHED)


SIMULATED_FAILURE = "simulated: the local Platform fails 1 run in 10 on purpose"
SIMULATED_ENDPOINT = f"simulated: the model names {ERRORING_ENDPOINT}"


def failure_message(run: Run) -> str:
    """Why a failed run failed, as its log's last line and its page say; a failure the
    local Platform made up says so."""
    if endpoint_errors(run.body):
        return (
            "Run failed: every attempt errored: the model endpoint answered 502 Bad Gateway "
            f"({SIMULATED_ENDPOINT})"
        )
    return f"Run failed: sandbox provisioning kept failing after 3 retries ({SIMULATED_FAILURE})"


@dataclass(frozen=True)
class Run:
    """A stored run as the simulation needs it."""

    id: str
    name: str
    workspace: str
    benchmark: Mapping[str, Any]
    """The benchmark spec (catalog shape, private keys included)."""
    body: Mapping[str, Any]
    """The submit body as stored (no secret values)."""
    tasks: tuple[str, ...]
    created_at: float
    schedule: Schedule
    stopped_at: float | None
    seed: int
    seq: int | None = None
    """Its place in the order runs were created (the store's ``seq``); None for a run not
    read back yet (the newest): picks the task revisions it ran (``task_checksum``)."""

    @property
    def attempts(self) -> int:
        value = (self.body.get("execution_config") or {}).get("attempts_per_task", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1

    @property
    def agents(self) -> list[Mapping[str, Any]]:
        return list(self.body.get("agents") or [])

    @property
    def expected(self) -> int:
        return len(self.tasks) * len(self.agents) * self.attempts


def off_ms(offset: float) -> int:
    """A schedule offset in whole simulated milliseconds (rounded up, so it is reachable)."""
    return math.ceil(round(offset * 1000, 6))


def sim_now_ms(run: Run, now: float, speed: float) -> int:
    """The run's simulated time at wall-clock ``now`` in whole milliseconds, clamped to its
    end. Every reader works in these integer snapshots, so a manifest and the downloads that
    follow it round alike."""
    wall = now if run.stopped_at is None else min(now, run.stopped_at)
    raw = math.floor(max(0.0, (wall - run.created_at) * speed) * 1000)
    return min(raw, off_ms(run.schedule.end_off))


def status_at(run: Run, t_ms: int) -> RunStatus:
    """Run status at simulated snapshot ``t_ms`` (from ``sim_now_ms``)."""
    if run.stopped_at is not None:
        return RunStatus.STOPPED
    s = run.schedule
    if t_ms >= off_ms(s.end_off):
        return s.final_status
    if t_ms >= off_ms(s.start_off):
        return RunStatus.RUNNING
    if t_ms >= off_ms(s.queue_off):
        return RunStatus.QUEUED
    return RunStatus.PENDING


def ingested_count(run: Run, t_ms: int) -> int:
    s = run.schedule
    if t_ms < off_ms(s.start_off) or s.full_dur <= 0:
        return 0
    if (
        t_ms >= off_ms(s.end_off)
        and s.final_status is RunStatus.FINISHED
        and run.stopped_at is None
    ):
        return run.expected
    done = (t_ms / 1000.0 - s.start_off) / s.full_dur * run.expected
    return max(0, min(run.expected, int(math.floor(done))))


def ingest_time_off(run: Run, index: int) -> float:
    """Simulated offset at which the ``index``-th result (0-based) is ingested."""
    s = run.schedule
    return s.start_off + (index + 1) / run.expected * s.full_dur


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Result:
    """One attempt of one agent on one task."""

    id: str
    agent_index: int
    task: str
    category: str | None
    difficulty: str | None
    attempt: int
    outcome: str  # passed | failed | errored
    reward: float
    duration_s: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


def agent_skill(run: Run, agent: Mapping[str, Any]) -> float:
    """The agent's skill on this run's tasks: a task's pass probability is the skill plus
    the task's shift (difficulty, a hashed per-task term), clamped to [0.02, 0.97].

    The benchmark's leaderboard is the truth the skill is held to, so a run's pass@1
    lands where the leaderboard next to it says it should: a (model, harness) the
    leaderboard lists gets the skill whose expected pass@1 is the listed value (the
    model's mean over its harnesses when only the model is listed, its family's when a
    newer version of a listed model is run: ``leaderboard_target``); another model keeps
    its hashed skill while that lands within the span of the leaderboard's intervals,
    else a hashed point inside that span. A benchmark without a leaderboard keeps the
    hashed skill."""
    model = model_string(agent.get("model") or {})
    harness = agent.get("harness")
    base = 0.35 + 0.45 * h01("skill", model, harness)
    base += float(run.benchmark.get("_skill_bias", 0.0))
    board = run.benchmark.get("_leaderboard") or ()
    if not board:
        return base
    shifts = task_shifts(run.benchmark, run.tasks)
    if not shifts:
        return base
    target = leaderboard_target(board, model, harness)
    if target is None:
        low = min(row["pass_at_1"]["ci_low"] for row in board)
        high = max(row["pass_at_1"]["ci_high"] for row in board)
        if low <= expected_pass_at_1(base, shifts) <= high:
            return base
        target = low + (high - low) * (0.15 + 0.7 * h01("target", model, harness))
    return _skill_for(target, shifts)


def leaderboard_target(board: Any, model: str, harness: object) -> float | None:
    """The leaderboard's pass@1 for (model, harness); else the model's mean over its
    harnesses; else the same for the model's family (a listed model whose name, at a
    ``.`` or ``-``, begins ours: ``openai/gpt-5`` for ``openai/gpt-5.2``); else None."""
    listed = {str(row.get("model")) for row in board}
    family = [
        name
        for name in listed
        if name == model or (model.startswith(name) and model[len(name)] in ".-")
    ]
    if not family:
        return None
    closest = max(family, key=len)
    rows = [row for row in board if row.get("model") == closest]
    exact = [row for row in rows if row.get("harness") == harness] or rows
    return sum(row["pass_at_1"]["value"] for row in exact) / len(exact)


def task_shifts(benchmark: Mapping[str, Any], tasks: tuple[str, ...]) -> tuple[float, ...]:
    """Each task's shift of the pass probability: its difficulty and a hashed term."""
    difficulty = {t["name"]: t.get("difficulty") for t in benchmark.get("tasks", [])}
    return tuple(DIFFICULTY_SHIFT.get(difficulty.get(t), 0.0) + _task_shift(t) for t in tasks)


P_RANGE = (0.02, 0.97)
"""A task's pass probability stays in this range (no sure thing, no hopeless task)."""


def expected_pass_at_1(skill: float, shifts: tuple[float, ...]) -> float:
    """pass@1 a run of this skill scores on average over tasks with these shifts (errored
    attempts count as not passed, as in the outputs)."""
    low, high = P_RANGE
    mean = sum(min(high, max(low, skill + s)) for s in shifts) / len(shifts)
    return (1 - ERRORED_SHARE) * mean


@lru_cache(maxsize=4096)
def _skill_for(target: float, shifts: tuple[float, ...]) -> float:
    """The skill whose expected pass@1 is ``target`` (bisection: the expectation only
    grows with the skill)."""
    low, high = -1.5, 1.5
    for _ in range(40):
        mid = (low + high) / 2
        if expected_pass_at_1(mid, shifts) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def model_string(model: Mapping[str, Any]) -> str:
    if model.get("type") == "hosted":
        lora = model.get("lora_model_name", model.get("checkpoint_name", ""))
        return f"{model.get('base_model', '')}:{lora}"
    return str(model.get("model", ""))


class _LRU:
    """A small thread-safe LRU keyed by run identity."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Any:
        with self.lock:
            value = self.data.get(key)
            if value is not None:
                self.data.move_to_end(key)
            return value

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        with self.lock:
            self.data[key] = value
            while len(self.data) > self.size:
                self.data.popitem(last=False)


_TABLES = _LRU(256)
_RESULTS = _LRU(64)


def _run_key(run: Run) -> tuple[Any, ...]:
    # Two data dirs with the same seed can hold runs with the same id: key on content too.
    agents = json.dumps(run.agents, sort_keys=True)
    return (run.id, run.seed, run.created_at, run.tasks, run.attempts, agents, run.benchmark["id"])


@lru_cache(maxsize=16384)
def _task_shift(task: str) -> float:
    return 0.3 * (h01("task", task) - 0.5)


OUTCOMES = ("passed", "failed", "errored")


def outcome_table(run: Run) -> tuple[tuple[int, int, int, int], ...]:
    """``(agent_index, task_index, attempt, outcome code)`` of every result, in ingestion
    order. Lean on purpose (two seeded generators, no objects): listing thousands of runs
    computes this for each."""
    key = _run_key(run)
    cached = _TABLES.get(key)
    if cached is not None:
        return cached
    base = int(h01(run.seed, run.id, "results") * 2**53)
    draw = random.Random(base).random
    order = random.Random(base + 1).random
    shifts = task_shifts(run.benchmark, run.tasks)
    rows: list[tuple[float, tuple[int, int, int, int]]] = []
    attempts = range(1, run.attempts + 1)
    erroring = endpoint_errors(run.body)
    for a, agent in enumerate(run.agents):
        skill = agent_skill(run, agent)
        for ti, shift in enumerate(shifts):
            p = min(P_RANGE[1], max(P_RANGE[0], skill + shift))
            for attempt in attempts:
                if erroring:
                    code = 2
                elif draw() < ERRORED_SHARE:
                    code = 2
                    draw()
                else:
                    code = 0 if draw() < p else 1
                rows.append((order(), (a, ti, attempt, code)))
    rows.sort(key=lambda pair: pair[0])
    table = tuple(r for _, r in rows)
    _TABLES.put(key, table)
    return table


def results_in_order(run: Run) -> tuple[Result, ...]:
    """Every result the run will ever ingest, in ingestion order (cached per run)."""
    key = _run_key(run)
    cached = _RESULTS.get(key)
    if cached is not None:
        return cached
    info = {t["name"]: t for t in run.benchmark.get("tasks", [])}
    prices = [
        1.0 + 9.0 * h01("price", model_string(agent.get("model") or {})) for agent in run.agents
    ]
    short = run.id.removeprefix("bmr_")[:10]
    out = []
    for a, ti, attempt, code in outcome_table(run):
        task = run.tasks[ti]
        rid = f"res_{short}_{a}_{ti:04d}_{attempt:02d}"
        stats = random.Random(f"{run.id}:{rid}")
        tokens_in = int(2_000 + 60_000 * stats.random())
        tokens_out = int(300 + 8_000 * stats.random())
        out.append(
            Result(
                id=rid,
                agent_index=a,
                task=task,
                category=info.get(task, {}).get("category"),
                difficulty=info.get(task, {}).get("difficulty"),
                attempt=attempt,
                outcome=OUTCOMES[code],
                reward=1.0 if code == 0 else 0.0,
                duration_s=int(15 + 400 * stats.random()),
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost_usd=round((tokens_in + tokens_out * 4) * prices[a] / 1_000_000, 6),
            )
        )
    built = tuple(out)
    _RESULTS.put(key, built)
    return built


def pass_at_1_by_agent(run: Run, t_ms: int) -> dict[int, tuple[int, float]]:
    """Agent index -> (tasks with a result, pass@1) over the results ingested by ``t_ms``.
    The one place pass@1 is computed, so lists and details always agree."""
    per: dict[int, dict[int, list[int]]] = {}
    for a, ti, _attempt, code in outcome_table(run)[: ingested_count(run, t_ms)]:
        counts = per.setdefault(a, {}).setdefault(ti, [0, 0])
        counts[0] += 1
        counts[1] += code == 0
    return {
        a: (len(tasks), sum(c / n for n, c in tasks.values()) / len(tasks))
        for a, tasks in per.items()
    }


def best_pass_at_1(run: Run, t_ms: int) -> float | None:
    values = [round(p, 4) for _, p in pass_at_1_by_agent(run, t_ms).values()]
    return max(values) if values else None


def ingested(run: Run, t_ms: int) -> tuple[Result, ...]:
    return results_in_order(run)[: ingested_count(run, t_ms)]


# --------------------------------------------------------------------------- metrics


def agent_id(run: Run, index: int) -> str:
    return f"agt_{run.id.removeprefix('bmr_')[:10]}_{index}"


def metrics(run: Run, t_ms: int) -> dict[str, Any]:
    """E5's ``agents`` aggregates, ``totals``, ``agent_metrics`` and best pass@1."""
    results = ingested(run, t_ms)
    p1_by_agent = pass_at_1_by_agent(run, t_ms)
    per_agent: dict[int, list[Result]] = {i: [] for i in range(len(run.agents))}
    for r in results:
        per_agent[r.agent_index].append(r)
    aggregates: dict[int, dict[str, Any]] = {}
    agent_metrics: list[dict[str, Any]] = []
    for index, rows in per_agent.items():
        by_task: dict[str, list[Result]] = {}
        for r in rows:
            by_task.setdefault(r.task, []).append(r)
        n_tasks = len(by_task)
        tokens = sum(r.input_tokens + r.output_tokens for r in rows)
        aggregates[index] = {
            "reported_cost_usd": round(sum(r.cost_usd for r in rows), 4),
            "mean_duration_seconds": round(sum(r.duration_s for r in rows) / len(rows), 1)
            if rows
            else None,
            "tokens_per_task": int(tokens / n_tasks) if n_tasks else None,
            "passed": sum(r.outcome == "passed" for r in rows),
            "failed": sum(r.outcome == "failed" for r in rows),
            "errored": sum(r.outcome == "errored" for r in rows),
        }
        if not n_tasks:
            continue
        p1 = p1_by_agent[index][1]
        low, high = wilson(p1, n_tasks)
        pass_at_k = []
        for k in range(2, run.attempts + 1):
            eligible = [v for v in by_task.values() if len(v) >= k]
            if not eligible:
                break
            value = sum(_pass_at(len(v), _c(v), k) for v in eligible) / len(eligible)
            k_low, k_high = wilson(value, len(eligible))
            pass_at_k.append(
                {
                    "k": k,
                    "value": round(value, 4),
                    "ci_low": round(k_low, 4),
                    "ci_high": round(k_high, 4),
                    "n": len(eligible),
                }
            )
        agent_metrics.append(
            {
                "benchmark_run_agent_id": agent_id(run, index),
                "rank": None,
                "n_tasks": n_tasks,
                "pass_at_1": {
                    "value": round(p1, 4),
                    "ci_low": round(low, 4),
                    "ci_high": round(high, 4),
                    "n": n_tasks,
                    "method": "wilson",
                },
                "pass_at_k": pass_at_k,
            }
        )
    values = sorted((m["pass_at_1"]["value"] for m in agent_metrics), reverse=True)
    for m in agent_metrics:
        m["rank"] = values.index(m["pass_at_1"]["value"]) + 1  # competition ranking
    status = status_at(run, t_ms)
    cancelled = run.expected - len(results) if status.is_unsuccessful else 0
    totals = {
        "passed": sum(r.outcome == "passed" for r in results),
        "failed": sum(r.outcome == "failed" for r in results),
        "errored": sum(r.outcome == "errored" for r in results),
        "cancelled": cancelled,
        "total_input_tokens": sum(r.input_tokens for r in results),
        "total_output_tokens": sum(r.output_tokens for r in results),
        "total_cost_usd": round(sum(r.cost_usd for r in results), 4),
    }
    best = max(values) if values else None
    return {
        "aggregates": aggregates,
        "agent_metrics": agent_metrics,
        "totals": totals,
        "ingested": len(results),
        "best_pass_at_1": best,
    }


def _c(rows: list[Result]) -> int:
    return sum(r.outcome == "passed" for r in rows)


def _pass_at(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with ``c`` passes out of ``n`` attempts."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


# --------------------------------------------------------------------------- logs


def log_events(run: Run, t_ms: int, speed: float) -> list[dict[str, Any]]:
    """The run's log up to simulated ``t_ms``, oldest first."""
    s = run.schedule

    def at(off: float) -> str | None:
        return iso(run.created_at + off / speed)

    events: list[dict[str, Any]] = [
        {
            "timestamp": at(0.0),
            "level": "info",
            "step": "submit",
            "message": f"Benchmark run {run.name} submitted: {len(run.tasks)} tasks x "
            f"{len(run.agents)} agents x {run.attempts} attempts on {run.benchmark['name']}",
        }
    ]
    if t_ms >= off_ms(s.queue_off):
        events.append(
            {"timestamp": at(s.queue_off), "level": "info", "step": "queue", "message": "Queued"}
        )
    if t_ms >= off_ms(s.start_off):
        concurrency = (run.body.get("execution_config") or {}).get("max_concurrent_attempts", 4)
        events.append(
            {
                "timestamp": at(s.start_off),
                "level": "info",
                "step": "start",
                "message": f"Started: provisioning sandboxes (max_concurrent_attempts={concurrency})",
            }
        )
    for i, r in enumerate(ingested(run, t_ms)):
        harness = run.agents[r.agent_index].get("harness") or "default"
        events.append(
            {
                "timestamp": at(ingest_time_off(run, i)),
                "level": "warning" if r.outcome == "errored" else "info",
                "step": "result",
                "message": f"[agent {r.agent_index + 1} {harness}] {r.task} attempt "
                f"{r.attempt}: {r.outcome} (reward {r.reward:.1f}, {r.duration_s}s)",
                "details": {"result_id": r.id, "outcome": r.outcome, "task": r.task},
            }
        )
    if run.stopped_at is not None:
        events.append(
            {
                "timestamp": iso(run.stopped_at),
                "level": "warning",
                "step": "stop",
                "message": "Stopped by user; pending attempts were cancelled",
            }
        )
    elif t_ms >= off_ms(s.end_off):
        if s.final_status is RunStatus.FAILED:
            events.append(
                {
                    "timestamp": at(s.end_off),
                    "level": "error",
                    "step": "complete",
                    "message": failure_message(run),
                }
            )
        else:
            done = ingested(run, t_ms)
            passed = sum(r.outcome == "passed" for r in done)
            events.append(
                {
                    "timestamp": at(s.end_off),
                    "level": "info",
                    "step": "complete",
                    "message": f"Finished: {passed} of {len(done)} results passed",
                }
            )
    return events


# --------------------------------------------------------------------------- outputs

TYPES = ("summary", "results", "artifacts", "logs")


def _csv(rows: list[list[Any]]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


def summary_csv(run: Run, t_ms: int) -> bytes:
    m = metrics(run, t_ms)
    by_agent = {x["benchmark_run_agent_id"]: x for x in m["agent_metrics"]}
    rows: list[list[Any]] = [
        [
            "agent_index", "agent_id", "harness", "model", "n_tasks", "passed", "failed",
            "errored", "pass_at_1", "ci_low", "ci_high", "rank", "cost_usd",
            "mean_duration_seconds", "tokens_per_task",
        ]
    ]  # fmt: skip
    for i, agent in enumerate(run.agents):
        agg = m["aggregates"][i]
        am = by_agent.get(agent_id(run, i))
        p1 = am["pass_at_1"] if am else {}
        rows.append(
            [
                i,
                agent_id(run, i),
                agent.get("harness") or "",
                model_string(agent.get("model") or {}),
                am["n_tasks"] if am else 0,
                agg["passed"],
                agg["failed"],
                agg["errored"],
                p1.get("value", ""),
                p1.get("ci_low", ""),
                p1.get("ci_high", ""),
                am["rank"] if am else "",
                agg["reported_cost_usd"],
                agg["mean_duration_seconds"] if agg["mean_duration_seconds"] is not None else "",
                agg["tokens_per_task"] if agg["tokens_per_task"] is not None else "",
            ]
        )
    return _csv(rows)


TASK_REVISIONS = "_task_revisions"
"""The catalog spec's private key: task name -> ``[[after_seq, revision], ...]``, each
revision the task's definition for runs created after the run ``after_seq``
(``LocalPlatform.revise_task``); a task without one is at revision 0."""


def task_revision(run: Run, task: str) -> int:
    """The revision of ``task``'s definition the run ran: the last one revised before the
    run was created (a run keeps its revision when the task is revised later)."""
    revision = 0
    for after_seq, number in run.benchmark.get(TASK_REVISIONS, {}).get(task, ()):
        if run.seq is None or run.seq > after_seq:
            revision = number
    return revision


def task_checksum(run: Run, task: str) -> str:
    """The checksum of the task's definition as the run ran it (results.csv's
    ``task_checksum``): the benchmark, the task's name and the revision of its content."""
    definition = f"{run.benchmark['id']}\x1f{task}\x1f{task_revision(run, task)}"
    return hashlib.sha256(definition.encode("utf-8")).hexdigest()[:16]


def results_csv(run: Run, t_ms: int) -> bytes:
    rows: list[list[Any]] = [
        [
            "result_id", "agent_index", "harness", "model", "task", "category", "difficulty",
            "attempt", "outcome", "reward", "duration_seconds", "input_tokens",
            "output_tokens", "cost_usd", "task_checksum",
        ]
    ]  # fmt: skip
    checksums: dict[str, str] = {}
    for r in ingested(run, t_ms):
        agent = run.agents[r.agent_index]
        checksum = checksums.get(r.task)
        if checksum is None:
            checksum = checksums[r.task] = task_checksum(run, r.task)
        rows.append(
            [
                r.id, r.agent_index, agent.get("harness") or "",
                model_string(agent.get("model") or {}), r.task, r.category or "",
                r.difficulty or "", r.attempt, r.outcome, r.reward, r.duration_s,
                r.input_tokens, r.output_tokens, r.cost_usd, checksum,
            ]
        )  # fmt: skip
    return _csv(rows)


def logs_txt(run: Run, t_ms: int, speed: float) -> bytes:
    lines = [
        f"{e['timestamp']} {e['level'].upper():7} [{e['step']}] {e['message']}\n"
        for e in log_events(run, t_ms, speed)
    ]
    return "".join(lines).encode("utf-8")


def agent_log(run: Run, r: Result) -> bytes:
    harness = run.agents[r.agent_index].get("harness") or "official scaffold"
    rng = random.Random(f"{run.id}:{r.id}:log")
    lines = [f"# {r.task} attempt {r.attempt} ({harness})\n"]
    for step in range(1, 4 + int(12 * rng.random())):
        lines.append(
            f"step {step:02d}: tool_call exec (exit {rng.choice((0, 0, 1, 2))}) "
            f"{int(200 + 4000 * rng.random())} tokens\n"
        )
    lines.append(f"outcome: {r.outcome} reward={r.reward:.1f}\n")
    return "".join(lines).encode("utf-8")


def trajectory_json(run: Run, r: Result) -> bytes:
    rng = random.Random(f"{run.id}:{r.id}:trajectory")
    steps = [
        {
            "step": i,
            "role": "assistant" if i % 2 else "tool",
            "tokens": int(100 + 900 * rng.random()),
        }
        for i in range(1, 2 + int(6 * rng.random()))
    ]
    doc = {"result_id": r.id, "task": r.task, "attempt": r.attempt, "steps": steps}
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def has_trajectory(r: Result) -> bool:
    return h01(r.id, "trajectory") < 0.5


def output_files(run: Run, t_ms: int, types: tuple[str, ...], speed: float) -> list[dict[str, Any]]:
    """Manifest entries ``{path, size, token}`` for the selected types at snapshot ``t_ms``."""
    snap = f"snap-{t_ms}"
    files: list[dict[str, Any]] = []
    if "summary" in types:
        files.append({"path": "summary.csv", "size": len(summary_csv(run, t_ms)), "token": snap})
    if "results" in types:
        files.append({"path": "results.csv", "size": len(results_csv(run, t_ms)), "token": snap})
    if "artifacts" in types:
        for r in ingested(run, t_ms):
            files.append(
                {
                    "path": f"artifacts/{r.id}/logs/agent.log",
                    "size": len(agent_log(run, r)),
                    "token": r.id,
                }
            )
            if has_trajectory(r):
                files.append(
                    {
                        "path": f"artifacts/{r.id}/trajectory.json",
                        "size": len(trajectory_json(run, r)),
                        "token": r.id,
                    }
                )
    if "logs" in types:
        files.append({"path": "logs.txt", "size": len(logs_txt(run, t_ms, speed)), "token": snap})
    return files


def file_content(run: Run, path: str, t_ms: int, speed: float) -> bytes | None:
    """The bytes of one output file at snapshot ``t_ms``; None when it does not exist."""
    if path == "summary.csv":
        return summary_csv(run, t_ms)
    if path == "results.csv":
        return results_csv(run, t_ms)
    if path == "logs.txt":
        return logs_txt(run, t_ms, speed)
    parts = path.split("/")
    if len(parts) >= 3 and parts[0] == "artifacts":
        for r in ingested(run, t_ms):
            if r.id == parts[1]:
                tail = "/".join(parts[2:])
                if tail == "logs/agent.log":
                    return agent_log(run, r)
                if tail == "trajectory.json" and has_trajectory(r):
                    return trajectory_json(run, r)
                return None
    return None


def path_exists(run: Run, path: str, t_ms: int) -> bool:
    """Whether ``path`` is an output of the run at snapshot ``t_ms`` (cheaper than listing)."""
    if path in ("summary.csv", "results.csv", "logs.txt"):
        return True
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "artifacts":
        return False
    tail = "/".join(parts[2:])
    for r in ingested(run, t_ms):
        if r.id == parts[1]:
            return tail == "logs/agent.log" or (tail == "trajectory.json" and has_trajectory(r))
    return False
