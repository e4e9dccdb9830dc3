"""Frozen models of what the Platform returns (platform-api.md §3), built at the boundary.

Every model has a ``from_api`` constructor that takes the decoded JSON object and applies
the tolerant fallbacks the osmosis CLI applies (``name`` ← ``benchmark_run_name``,
``benchmark_name`` ← ``benchmark.name`` ← ``configuration``, progress overrides, ...).
Raw JSON never travels past ``reconciler.platform``: the client returns these models.

Shape violations that make a value unusable (a run without ``id``, a manifest file
without a path) raise ``ValueError``; the client turns that into ``InvalidResponseError``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import msgspec

from reconciler.model import (
    AgentResult,
    BenchmarkInfo,
    BenchmarkRef,
    Frozen,
    LeaderboardScore,
    ObservedRun,
    RunResults,
    RunStatus,
    attempts_per_task,
    creator_digest,
    digest,
    fingerprint_fields,
)
from reconciler.platform.coercion import (  # noqa: F401  (re-exported)
    as_bool,
    as_datetime,
    as_float,
    as_int,
    as_list,
    as_plain,
    as_str,
    nonempty,
    obj,
    require_id,
    shape_of,
    str_map,
)

KNOWN_DIFFICULTIES = frozenset({"easy", "medium", "hard"})


class PlatformModel(Frozen, frozen=True, kw_only=True):
    """Base of every Platform model: immutable, no fields beyond the declared ones."""


# --------------------------------------------------------------------------- coercion
# The Platform is tolerant in what it may omit; these helpers are tolerant in the same
# way: wrong types count as absent instead of crashing the whole listing.


# --------------------------------------------------------------------------- benchmarks


class TaskSet(PlatformModel, frozen=True, kw_only=True):
    """A named subset of a benchmark's tasks, e.g. HLE ``parity`` (249 tasks)."""

    name: str
    task_count: int = 0
    recommended: bool = False
    description: str | None = None

    @classmethod
    def from_api(cls, raw: Any) -> TaskSet | None:
        raw = obj(raw)
        name = nonempty(raw.get("name"))
        if name is None:
            return None
        return cls(
            name=name,
            task_count=as_int(raw.get("task_count")) or 0,
            recommended=as_bool(raw.get("recommended")),
            description=as_str(raw.get("description")),
        )


class Category(PlatformModel, frozen=True, kw_only=True):
    """A task category and how many tasks it holds."""

    name: str
    task_count: int = 0

    @classmethod
    def from_api(cls, raw: Any) -> Category | None:
        raw = obj(raw)
        name = nonempty(raw.get("name"))
        if name is None:
            return None
        return cls(name=name, task_count=as_int(raw.get("task_count")) or 0)


class BenchmarkTask(PlatformModel, frozen=True, kw_only=True):
    """One task of a benchmark. ``difficulty`` is easy/medium/hard or None (never inferred)."""

    name: str
    category: str | None = None
    difficulty: str | None = None

    @classmethod
    def from_api(cls, raw: Any) -> BenchmarkTask | None:
        raw = obj(raw)
        name = nonempty(raw.get("name"))
        if name is None:
            return None
        difficulty = raw.get("difficulty")
        return cls(
            name=name,
            category=as_str(raw.get("category")),
            difficulty=difficulty if difficulty in KNOWN_DIFFICULTIES else None,
        )


def _tasks(raw: Any) -> tuple[BenchmarkTask, ...]:
    return tuple(t for t in (BenchmarkTask.from_api(x) for x in as_list(raw)) if t is not None)


class Benchmark(PlatformModel, frozen=True, kw_only=True):
    """A catalog entry as E1 lists it (and the common part of E2)."""

    id: str
    name: str
    key: str
    """``source_ref``: what the osmosis CLI shows as the key (``hle``, ``terminal-bench-2-1``)."""
    description: str | None = None
    source_type: str | None = None
    source_url: str | None = None
    task_count: int = 0
    category_count: int = 0
    task_sets: tuple[TaskSet, ...] = ()
    sync_status: str = "ready"
    synced_task_count: int = 0
    sync_error: str | None = None
    platform_url: str | None = None
    run_count: int = 0
    running_count: int = 0
    last_run_at: datetime | None = None
    last_run_status: str | None = None
    last_run_name: str | None = None
    creator_name: str | None = None

    @staticmethod
    def _fields(raw: Mapping[str, Any]) -> dict[str, Any]:
        bench_id = require_id(raw, "benchmark")
        name = as_str(raw.get("name")) or ""
        return {
            "id": bench_id,
            "name": name,
            "key": as_str(raw.get("source_ref")) or "",
            "description": as_str(raw.get("description")),
            "source_type": as_str(raw.get("source_type")),
            "source_url": as_str(raw.get("source_url")),
            "task_count": as_int(raw.get("task_count")) or 0,
            "category_count": as_int(raw.get("category_count")) or 0,
            "task_sets": tuple(
                s for s in (TaskSet.from_api(x) for x in as_list(raw.get("task_sets"))) if s
            ),
            "sync_status": nonempty(raw.get("sync_status")) or "ready",
            "synced_task_count": as_int(raw.get("synced_task_count")) or 0,
            "sync_error": as_str(raw.get("sync_error")),
            "platform_url": as_str(raw.get("platform_url")),
        }

    def to_ref(self) -> BenchmarkRef:
        """What names the benchmark (for did-you-mean hints), as the core type."""
        return BenchmarkRef(id=self.id, name=self.name, key=self.key)

    @classmethod
    def from_api(cls, raw: Any) -> Benchmark:
        raw = obj(raw)
        return cls(
            **cls._fields(raw),
            run_count=as_int(raw.get("run_count")) or 0,
            running_count=as_int(raw.get("running_count")) or 0,
            last_run_at=as_datetime(raw.get("last_run_at")),
            last_run_status=as_str(raw.get("last_run_status")),
            last_run_name=as_str(raw.get("last_run_name")),
            creator_name=as_str(raw.get("creator_name")),
        )


class Metric(PlatformModel, frozen=True, kw_only=True):
    """A pass@k point with its confidence interval."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    k: int | None = None
    method: str | None = None

    @classmethod
    def from_api(cls, raw: Any) -> Metric | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(
            value=as_float(raw.get("value")),
            ci_low=as_float(raw.get("ci_low")),
            ci_high=as_float(raw.get("ci_high")),
            n=as_int(raw.get("n")),
            k=as_int(raw.get("k")),
            method=as_str(raw.get("method")),
        )


def _metrics(raw: Any) -> tuple[Metric, ...]:
    return tuple(m for m in (Metric.from_api(x) for x in as_list(raw)) if m is not None)


class LeaderboardEntry(PlatformModel, frozen=True, kw_only=True):
    """One row of a benchmark's leaderboard (E2 ``leaderboard``)."""

    rank: int | None = None
    tied: bool = False
    task_set: str | None = None
    harness: str | None = None
    model: str | None = None
    pass_at_1: Metric | None = None
    pass_at_k: tuple[Metric, ...] = ()
    cost_per_task: float | None = None
    mean_duration_seconds: float | None = None
    tokens_per_task: float | None = None
    run_id: str | None = None
    run_name: str | None = None

    @classmethod
    def from_api(cls, raw: Any) -> LeaderboardEntry | None:
        if not isinstance(raw, Mapping):
            return None
        run = obj(raw.get("run"))
        return cls(
            rank=as_int(raw.get("rank")),
            tied=as_bool(raw.get("tied")),
            task_set=as_str(raw.get("task_set")),
            harness=as_str(raw.get("harness")),
            model=as_str(raw.get("model")),
            pass_at_1=Metric.from_api(raw.get("pass_at_1")),
            pass_at_k=_metrics(raw.get("pass_at_k")),
            cost_per_task=as_float(raw.get("cost_per_task")),
            mean_duration_seconds=as_float(raw.get("mean_duration_seconds")),
            tokens_per_task=as_float(raw.get("tokens_per_task")),
            run_id=as_str(run.get("id")),
            run_name=as_str(run.get("name")),
        )

    def to_score(self) -> LeaderboardScore:
        """The core type the plan compares a finished run with."""
        p1 = self.pass_at_1
        return LeaderboardScore(
            model=self.model,
            harness=self.harness,
            task_set=self.task_set,
            rank=self.rank,
            pass_at_1=p1.value if p1 else None,
            ci_low=p1.ci_low if p1 else None,
            ci_high=p1.ci_high if p1 else None,
            n=p1.n if p1 else None,
        )


class BenchmarkDetail(Benchmark, frozen=True, kw_only=True):
    """A benchmark as E2 describes it: catalog entry plus tasks, requirements, leaderboard."""

    runner_family: str | None = None
    supports_harness: bool = True
    requires_harness: bool = False
    default_harness: str | None = None
    requires_judge_model: bool = False
    requires_judge_api_key: bool = False
    judge_model_default: str | None = None
    pass_threshold: float | None = None
    categories: tuple[Category, ...] = ()
    tasks: tuple[BenchmarkTask, ...] = ()
    unavailable_tasks: tuple[BenchmarkTask, ...] = ()
    unavailable_reason: str | None = None
    required_secret_names: tuple[str, ...] = ()
    """Implicit secret records the benchmark needs (HLE → ``HF_TOKEN``), per D2."""
    leaderboard: tuple[LeaderboardEntry, ...] = ()

    @classmethod
    def from_api(cls, raw: Any) -> BenchmarkDetail:
        """From the whole E2 body ``{"benchmark": {...}, "leaderboard": [...]}``."""
        body = obj(raw)
        bench = obj(body.get("benchmark"))
        if not bench:
            raise ValueError("benchmark detail without a 'benchmark' object")
        unavailable = obj(bench.get("unavailable_tasks"))
        names: list[str] = []
        for name in as_list(bench.get("required_secret_names")):
            if isinstance(name, str) and name.strip() and name.strip() not in names:
                names.append(name.strip())
        return cls(
            **cls._fields(bench),
            runner_family=as_str(bench.get("runner_family")),
            supports_harness=as_bool(bench.get("supports_harness"), True),
            requires_harness=as_bool(bench.get("requires_harness")),
            default_harness=nonempty(bench.get("default_harness")),
            requires_judge_model=as_bool(bench.get("requires_judge_model")),
            requires_judge_api_key=as_bool(bench.get("requires_judge_api_key")),
            judge_model_default=nonempty(bench.get("judge_model_default")),
            pass_threshold=as_float(bench.get("pass_threshold")),
            categories=tuple(
                c for c in (Category.from_api(x) for x in as_list(bench.get("categories"))) if c
            ),
            tasks=_tasks(bench.get("tasks")),
            unavailable_tasks=_tasks(unavailable.get("tasks")),
            unavailable_reason=as_str(unavailable.get("reason")),
            required_secret_names=tuple(names),
            leaderboard=tuple(
                e
                for e in (LeaderboardEntry.from_api(x) for x in as_list(body.get("leaderboard")))
                if e is not None
            ),
        )

    def to_info(self) -> BenchmarkInfo:
        """What preflight needs, as the shared core type."""
        categories: dict[str, int] = {c.name: c.task_count for c in self.categories}
        if not categories:
            # Older servers omit ``categories``; count them from the task list instead.
            for task in self.tasks:
                if task.category:
                    categories[task.category] = categories.get(task.category, 0) + 1
        return BenchmarkInfo(
            id=self.id,
            name=self.name,
            key=self.key,
            sync_status=self.sync_status,
            synced_task_count=self.synced_task_count,
            sync_error=self.sync_error,
            platform_url=self.platform_url,
            task_count=self.task_count,
            categories=categories,
            task_sets={s.name: s.task_count for s in self.task_sets},
            task_names=frozenset(t.name for t in self.tasks),
            supports_harness=self.supports_harness,
            requires_harness=self.requires_harness,
            default_harness=self.default_harness,
            requires_judge_model=self.requires_judge_model,
            requires_judge_api_key=self.requires_judge_api_key,
            judge_model_default=self.judge_model_default,
            required_secret_names=self.required_secret_names,
            source_type=self.source_type,
            source_url=self.source_url,
            pass_threshold=self.pass_threshold,
            tasks=tuple((t.name, t.category) for t in self.tasks),
            recommended_task_sets=tuple(s.name for s in self.task_sets if s.recommended),
            unavailable_tasks=tuple(t.name for t in self.unavailable_tasks),
            unavailable_reason=self.unavailable_reason,
            leaderboard=tuple(entry.to_score() for entry in self.leaderboard),
        )


# --------------------------------------------------------------------------- runs


def _interned(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


class RunSummary(PlatformModel, frozen=True, kw_only=True):
    """A run as E4 lists it (and ``benchmark_run`` of E5), fallbacks applied."""

    id: str
    name: str = ""
    status: str = ""
    """The Platform's status string, kept even when unknown (see ``RunStatus``)."""
    benchmark_id: str | None = None
    benchmark_name: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    creator_name: str | None = None
    creator_email: str | None = None
    platform_url: str | None = None
    agent_count: int | None = None
    best_pass_at_1: float | None = None
    """Fraction 0-1; non-finite or boolean values are dropped."""
    ingested_results: int | None = None
    expected_results: int | None = None

    @property
    def known_status(self) -> RunStatus | None:
        return RunStatus.parse(self.status)

    @classmethod
    def from_api(cls, raw: Any) -> RunSummary:
        raw = obj(raw)
        nested = obj(raw.get("benchmark"))
        name = as_str(raw.get("name"))
        if name is None:
            name = as_str(raw.get("benchmark_run_name")) or ""
        return cls(
            id=require_id(raw, "benchmark run"),
            name=name,
            status=as_str(raw.get("status")) or "",
            benchmark_id=nonempty(raw.get("benchmark_id")) or nonempty(nested.get("id")),
            benchmark_name=nonempty(raw.get("benchmark_name")) or nonempty(nested.get("name")),
            created_at=as_datetime(raw.get("created_at")),
            started_at=as_datetime(raw.get("started_at")),
            completed_at=as_datetime(raw.get("completed_at")),
            creator_name=as_str(raw.get("creator_name")),
            creator_email=as_str(raw.get("creator_email")),
            platform_url=nonempty(raw.get("platform_url")),
            agent_count=as_int(raw.get("agent_count")),
            best_pass_at_1=as_float(raw.get("best_pass_at_1")),
            ingested_results=as_int(raw.get("ingested_results")),
            expected_results=as_int(raw.get("expected_results")),
        )

    def to_observed(self, fingerprint: str | None = None) -> ObservedRun:
        """The shared core type the plan compares against."""
        # A slots dataclass: no second validation of values this model already checked.
        # The strings most runs share are interned: one object each, not one per run.
        return ObservedRun(
            id=self.id,
            name=self.name,
            status=sys.intern(self.status),
            benchmark_id=_interned(self.benchmark_id),
            benchmark_name=_interned(self.benchmark_name),
            created_at=self.created_at,
            completed_at=self.completed_at,
            platform_url=self.platform_url,
            agent_count=self.agent_count,
            best_pass_at_1=self.best_pass_at_1,
            fingerprint=fingerprint,
            creator=creator_digest(self.creator_email),
            creator_name=_interned(self.creator_name),
        )


class RunConfiguration(PlatformModel, frozen=True, kw_only=True):
    """E5 ``configuration``: what the run was asked to do, as the Platform stored it."""

    benchmark_id: str | None = None
    benchmark_name: str | None = None
    source_type: str | None = None
    source_ref: str | None = None
    resolved_version: str | None = None
    resolved_digest: str | None = None
    task_filters: dict[str, Any] = msgspec.field(default_factory=dict)
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    resolved_secret_scopes: dict[str, str] = msgspec.field(default_factory=dict)
    """Secret name → ``workspace`` / ``user`` / ``user_override`` (names only, never values)."""

    @classmethod
    def from_api(cls, raw: Any) -> RunConfiguration:
        raw = obj(raw)
        version = raw.get("resolved_version")
        return cls(
            benchmark_id=nonempty(raw.get("benchmark_id")),
            benchmark_name=nonempty(raw.get("benchmark_name")),
            source_type=as_str(raw.get("source_type")),
            source_ref=as_str(raw.get("source_ref")),
            resolved_version=str(version) if isinstance(version, str | int) else None,
            resolved_digest=as_str(raw.get("resolved_digest")),
            task_filters=as_plain(dict(obj(raw.get("task_filters")))),
            config=as_plain(dict(obj(raw.get("config")))),
            resolved_secret_scopes=str_map(raw.get("resolved_secret_scopes")),
        )


class AgentAggregates(PlatformModel, frozen=True, kw_only=True):
    """Per-agent aggregates of a run (E5 ``agents[].aggregates``)."""

    reported_cost_usd: float | None = None
    mean_duration_seconds: float | None = None
    tokens_per_task: float | None = None
    errored: int | None = None  # the agent's errored attempts, where reported per agent

    @classmethod
    def from_api(cls, raw: Any) -> AgentAggregates:
        raw = obj(raw)
        return cls(
            reported_cost_usd=as_float(raw.get("reported_cost_usd")),
            mean_duration_seconds=as_float(raw.get("mean_duration_seconds")),
            tokens_per_task=as_float(raw.get("tokens_per_task")),
            errored=as_int(raw.get("errored")),
        )


class RunAgent(PlatformModel, frozen=True, kw_only=True):
    """One agent of a run. ``harness`` None = the benchmark's official scaffold."""

    id: str | None = None
    agent_index: int = 0
    harness: str | None = None
    model_display_name: str | None = None
    model: str | None = None
    model_ref: str | None = None
    status: str | None = None
    environment_variables: dict[str, str] = msgspec.field(default_factory=dict)
    aggregates: AgentAggregates = AgentAggregates()

    @classmethod
    def from_api(cls, raw: Any, position: int) -> RunAgent | None:
        if not isinstance(raw, Mapping):
            return None
        index = as_int(raw.get("agent_index"))
        return cls(
            id=as_str(raw.get("id")),
            agent_index=position if index is None else index,
            harness=nonempty(raw.get("harness")),
            model_display_name=as_str(raw.get("model_display_name")),
            model=as_str(raw.get("model")),
            model_ref=as_str(raw.get("model_ref")),
            status=as_str(raw.get("status")),
            environment_variables=str_map(raw.get("environment_variables")),
            aggregates=AgentAggregates.from_api(raw.get("aggregates")),
        )


class AgentMetrics(PlatformModel, frozen=True, kw_only=True):
    """Scores of one agent (E5 ``agent_metrics[]``); joined to agents by agent id."""

    benchmark_run_agent_id: str | None = None
    rank: int | None = None
    n_tasks: int | None = None
    pass_at_1: Metric | None = None
    pass_at_k: tuple[Metric, ...] = ()

    @classmethod
    def from_api(cls, raw: Any) -> AgentMetrics | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(
            benchmark_run_agent_id=as_str(raw.get("benchmark_run_agent_id")),
            rank=as_int(raw.get("rank")),
            n_tasks=as_int(raw.get("n_tasks")),
            pass_at_1=Metric.from_api(raw.get("pass_at_1")),
            pass_at_k=_metrics(raw.get("pass_at_k")),
        )


class RunTotals(PlatformModel, frozen=True, kw_only=True):
    """Result totals of a run (E5 ``totals``)."""

    passed: int | None = None
    failed: int | None = None
    errored: int | None = None
    cancelled: int | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    total_cost_usd: float | None = None

    @classmethod
    def from_api(cls, raw: Any) -> RunTotals:
        raw = obj(raw)
        return cls(
            passed=as_int(raw.get("passed")),
            failed=as_int(raw.get("failed")),
            errored=as_int(raw.get("errored")),
            cancelled=as_int(raw.get("cancelled")),
            total_input_tokens=as_int(raw.get("total_input_tokens")),
            total_output_tokens=as_int(raw.get("total_output_tokens")),
            total_cost_usd=as_float(raw.get("total_cost_usd")),
        )


class RunDetail(PlatformModel, frozen=True, kw_only=True):
    """A run as E5 describes it; ``summary`` has every fallback already applied."""

    summary: RunSummary
    configuration: RunConfiguration = RunConfiguration()
    agents: tuple[RunAgent, ...] = ()
    """Sorted by ``agent_index``."""
    agent_metrics: tuple[AgentMetrics, ...] = ()
    totals: RunTotals = RunTotals()
    is_internal_user: bool = False

    @classmethod
    def from_api(cls, raw: Any) -> RunDetail:
        """From the whole E5 body."""
        body = obj(raw)
        run = dict(obj(body.get("benchmark_run")))
        if not run:
            raise ValueError("benchmark run detail without a 'benchmark_run' object")
        configuration = RunConfiguration.from_api(body.get("configuration"))
        agents = tuple(
            sorted(
                (
                    a
                    for a in (
                        RunAgent.from_api(x, i) for i, x in enumerate(as_list(body.get("agents")))
                    )
                    if a is not None
                ),
                key=lambda a: a.agent_index,
            )
        )
        metrics = tuple(
            m for m in (AgentMetrics.from_api(x) for x in as_list(body.get("agent_metrics"))) if m
        )
        summary = RunSummary.from_api(run)
        updates: dict[str, Any] = {}
        if summary.benchmark_name is None and configuration.benchmark_name:
            updates["benchmark_name"] = configuration.benchmark_name
        if summary.benchmark_id is None and configuration.benchmark_id:
            updates["benchmark_id"] = configuration.benchmark_id
        progress = obj(body.get("progress"))
        if as_int(progress.get("ingested")) is not None:
            updates["ingested_results"] = as_int(progress.get("ingested"))
        if as_int(progress.get("expected")) is not None:
            updates["expected_results"] = as_int(progress.get("expected"))
        if summary.agent_count is None and agents:
            updates["agent_count"] = len(agents)
        if summary.best_pass_at_1 is None:
            values = [
                m.pass_at_1.value
                for m in metrics
                if m.pass_at_1 is not None and m.pass_at_1.value is not None
            ]
            if values:
                updates["best_pass_at_1"] = max(values)
        if updates:
            summary = summary.model_copy(update=updates)
        return cls(
            summary=summary,
            configuration=configuration,
            agents=agents,
            agent_metrics=metrics,
            totals=RunTotals.from_api(body.get("totals")),
            is_internal_user=as_bool(body.get("is_internal_user")),
        )

    def fingerprint(self) -> str:
        """The adoption fingerprint (``reconciler.model.adoption_fingerprint``) of this run.

        Agents contribute ``(harness, model, environment_variables)`` in ``agent_index``
        order; the benchmark is the configuration's id, else the run's.
        """
        return digest(self.fingerprint_fields())

    def fingerprint_fields(self) -> dict[str, Any]:
        """What ``fingerprint`` digests, as data (to show a difference to people)."""
        return fingerprint_fields(
            self.configuration.benchmark_id or self.summary.benchmark_id,
            self.configuration.task_filters,
            self.configuration.config,
            [(a.harness, a.model or "", a.environment_variables) for a in self.agents],
        )

    def to_observed(self) -> ObservedRun:
        """The run as the core type, with its adoption fingerprint filled in."""
        return self.summary.to_observed(fingerprint=self.fingerprint())

    def to_results(self) -> RunResults:
        """The run's scores as the core type, per agent the way ``runs info`` shows them.

        Each agent is joined to the ``agent_metrics`` entry whose ``benchmark_run_agent_id``
        equals its ``id``; pass@k is the last (deepest) point; cost/task is
        ``reported_cost_usd`` / ``n_tasks``, only when ``n_tasks`` > 0 (platform-api.md §11.2).
        """
        by_agent = {
            m.benchmark_run_agent_id: m
            for m in self.agent_metrics
            if m.benchmark_run_agent_id is not None
        }
        config = self.configuration.config  # k, when the run says (model.attempts_per_task)
        k = (max(attempts_per_task(config), 0) or None) if "attempts_per_task" in config else None
        agents = []
        for agent in self.agents:
            errored = agent.aggregates.errored  # one agent: the run's totals are its own
            errored = self.totals.errored if errored is None and len(self.agents) == 1 else errored
            metrics = by_agent.get(agent.id) if agent.id is not None else None
            p1 = metrics.pass_at_1 if metrics else None
            deepest = metrics.pass_at_k[-1] if metrics and metrics.pass_at_k else None
            n_tasks = metrics.n_tasks if metrics else None
            cost = agent.aggregates.reported_cost_usd
            agents.append(
                AgentResult(
                    agent_index=agent.agent_index,
                    harness=agent.harness,
                    model=agent.model_display_name or agent.model or agent.model_ref,
                    model_id=agent.model,
                    rank=metrics.rank if metrics else None,
                    pass_at_1=p1.value if p1 else None,
                    ci_low=p1.ci_low if p1 else None,
                    ci_high=p1.ci_high if p1 else None,
                    n=p1.n if p1 else None,
                    k=deepest.k if deepest and deepest.value is not None else None,
                    pass_at_k=deepest.value if deepest else None,
                    cost_per_task=cost / n_tasks
                    if cost is not None and n_tasks is not None and n_tasks > 0
                    else None,
                    seconds_per_task=agent.aggregates.mean_duration_seconds,
                    tokens_per_task=agent.aggregates.tokens_per_task,
                    errored=errored,
                    attempts_per_task=k,
                )
            )
        totals = self.totals
        return RunResults(
            agents=tuple(agents),
            passed=totals.passed,
            failed=totals.failed,
            errored=totals.errored,
            total_cost_usd=totals.total_cost_usd,
        )


class SubmittedRun(PlatformModel, frozen=True, kw_only=True):
    """The E3 response: the only handle a submit gives back (there is no idempotency key)."""

    id: str
    name: str = ""
    status: str = "pending"
    workflow_id: str | None = None
    task_count: int | None = None
    created_at: datetime | None = None
    platform_url: str | None = None

    @classmethod
    def from_api(cls, raw: Any) -> SubmittedRun:
        """Validated strictly (E3: every field but ``platform_url`` is required): a reply of
        the wrong shape is not a run that can be recorded, so it raises ``ValueError`` and
        the caller treats the outcome as unknown (keep the intent, adopt the run later)."""
        if not isinstance(raw, Mapping):
            raise ValueError("the submit response is not an object")
        run_id, name, status = raw.get("id"), raw.get("name"), raw.get("status")
        problems = []
        if not isinstance(run_id, str) or not run_id.strip():
            problems.append(f"'id' must be a non-empty string, got {shape_of(run_id)}")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"'name' must be a non-empty string, got {shape_of(name)}")
        if not isinstance(status, str) or not status.strip():
            problems.append(f"'status' must be a non-empty string, got {shape_of(status)}")
        created_at = as_datetime(raw.get("created_at"))
        if created_at is None:
            problems.append(
                f"'created_at' must be a date-time, got {shape_of(raw.get('created_at'))}"
            )
        task_count = raw.get("task_count")
        if task_count is not None and as_int(task_count) is None:
            problems.append(f"'task_count' must be an integer, got {shape_of(task_count)}")
        if problems:
            raise ValueError("; ".join(problems))
        assert isinstance(run_id, str) and isinstance(name, str) and isinstance(status, str)
        return cls(
            id=run_id,
            name=name,
            status=status,
            workflow_id=as_str(raw.get("workflow_id")),
            task_count=as_int(task_count),
            created_at=created_at,
            platform_url=nonempty(raw.get("platform_url")),
        )


# --------------------------------------------------------------------------- logs


class LogEntry(PlatformModel, frozen=True, kw_only=True):
    """One log line of a run (E6)."""

    timestamp: str = ""
    level: str = ""
    step: str = ""
    message: str = ""
    details: dict[str, Any] | None = None

    @classmethod
    def from_api(cls, raw: Any) -> LogEntry | None:
        if not isinstance(raw, Mapping):
            return None
        details = raw.get("details")
        return cls(
            timestamp=as_str(raw.get("timestamp")) or "",
            level=as_str(raw.get("level")) or "",
            step=as_str(raw.get("step")) or "",
            message=as_str(raw.get("message")) or "",
            details=as_plain(dict(details)) if isinstance(details, Mapping) else None,
        )


class LogPage(PlatformModel, frozen=True, kw_only=True):
    """One page of logs, oldest first; ``next_cursor`` continues in the same direction."""

    entries: tuple[LogEntry, ...] = ()
    next_cursor: str | None = None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None

    @classmethod
    def from_api(cls, raw: Any) -> LogPage:
        body = obj(raw)
        cursor = body.get("next_cursor")
        return cls(
            entries=tuple(
                e for e in (LogEntry.from_api(x) for x in as_list(body.get("logs"))) if e
            ),
            next_cursor=cursor if isinstance(cursor, str) and cursor else None,
        )


# --------------------------------------------------------------------------- outputs


class ManifestFile(PlatformModel, frozen=True, kw_only=True):
    """One downloadable file: a run-relative ``path``, its exact ``size``, an opaque ``token``."""

    path: str
    size: int
    token: str | None = None


class Manifest(PlatformModel, frozen=True, kw_only=True):
    """The E8 manifest. Paths are NOT checked for safety here; the download engine does that."""

    files: tuple[ManifestFile, ...] = ()
    totals: dict[str, Any] = msgspec.field(default_factory=dict)

    @classmethod
    def from_api(cls, raw: Any) -> Manifest:
        body = obj(raw)
        files_raw = body.get("files")
        if not isinstance(files_raw, list):
            raise ValueError("manifest 'files' is not a list")
        files = []
        for i, item in enumerate(files_raw):
            if not isinstance(item, Mapping):
                raise ValueError(f"manifest file #{i} is not an object")
            path, size, token = item.get("path"), item.get("size"), item.get("token")
            if not isinstance(path, str) or not path:
                raise ValueError(f"manifest file #{i} has no path")
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ValueError(f"manifest file {path!r} has an invalid size")
            if token is not None and not isinstance(token, str):
                raise ValueError(f"manifest file {path!r} has an invalid token")
            files.append(ManifestFile(path=path, size=size, token=token))
        return cls(files=tuple(files), totals=as_plain(dict(obj(body.get("totals")))))


class DownloadUrl(PlatformModel, frozen=True, kw_only=True):
    """A presigned URL for one manifest file; fetch it with no Osmosis headers."""

    path: str
    token: str | None = None
    url: str
    expires_in: int | None = None
    """Seconds the URL stays valid, when the Platform said so."""


# --------------------------------------------------------------------------- secrets, workspaces


class SecretRecord(PlatformModel, frozen=True, kw_only=True):
    """A stored secret record. The Platform never returns values, and neither does this."""

    id: str
    name: str
    scope: str | None = None
    """``workspace`` or ``user`` (personal); None on old servers."""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    creator_name: str | None = None
    updater_name: str | None = None
    platform_url: str | None = None

    @classmethod
    def from_api(cls, raw: Any) -> SecretRecord:
        raw = obj(raw)
        return cls(
            id=require_id(raw, "secret"),
            name=as_str(raw.get("name")) or "",
            scope=nonempty(raw.get("scope")),
            created_at=as_datetime(raw.get("created_at")),
            updated_at=as_datetime(raw.get("updated_at")),
            creator_name=as_str(raw.get("creator_name")),
            updater_name=as_str(raw.get("updater_name")),
            platform_url=nonempty(raw.get("platform_url")),
        )


class Workspace(PlatformModel, frozen=True, kw_only=True):
    """A workspace the token can see (W1) and its connected GitHub repository, if any."""

    id: str
    name: str
    role: str | None = None
    connected_repo: str | None = None
    """``owner/repo`` as the Platform spells it (the ``X-Osmosis-Git`` value, lower-cased)."""

    @classmethod
    def from_api(cls, raw: Any) -> Workspace:
        raw = obj(raw)
        return cls(
            id=require_id(raw, "workspace"),
            name=as_str(raw.get("name")) or "",
            role=as_str(raw.get("role")),
            connected_repo=nonempty(obj(raw.get("connected_repo")).get("repo_full_name")),
        )
