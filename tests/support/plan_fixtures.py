"""Plain-value builders for plan and render tests (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from reconciler.model import (
    BenchmarkInfo,
    BenchmarkRef,
    DesiredRun,
    Downloads,
    Intent,
    LocalOutputs,
    LockState,
    Observation,
    ObservedRun,
    RecordedRun,
    Settings,
    canonical_digest,
    digest,
    spec_fingerprint,
)
from tests.support.bodies import submit_body

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
WORKSPACE = "acme/evals"
PLATFORM = "local"

TB_TASKS = (
    "terminal-bench/git-multibranch",
    "terminal-bench/hello-world",
    *(f"terminal-bench/task-{i:02d}" for i in range(87)),
)
HLE = BenchmarkInfo(
    id="bench-hle",
    name="HLE",
    key="hle",
    task_count=2500,
    task_sets={"parity": 249},
    recommended_task_sets=("parity",),
    categories={"math": 1000, "physics": 1500},
    requires_judge_model=True,
    judge_model_default="openai/gpt-5",
    required_secret_names=("HF_TOKEN",),
    source_url="https://lastexam.ai",
    pass_threshold=1.0,
)
TB = BenchmarkInfo(
    id="bench-tb",
    name="Terminal-Bench 2.1",
    key="terminal-bench-2-1",
    task_count=89,
    categories={"terminal": 89},
    task_names=frozenset(TB_TASKS),
    tasks=tuple((name, "terminal") for name in TB_TASKS),
    requires_harness=True,
    default_harness="terminus-2",
    platform_url="https://platform.example/acme/benchmarks/tb",
)
TOOLATHLON = BenchmarkInfo(
    id="bench-tool",
    name="Toolathlon-Verified",
    key="toolathlon-verified",
    task_count=108,
    supports_harness=False,
)
SYNCING = BenchmarkInfo(
    id="bench-custom",
    name="acme/custom",
    key="acme/custom@1.0",
    sync_status="syncing",
    synced_task_count=12,
    task_count=40,
    platform_url="https://platform.example/acme/benchmarks/custom",
)
FAILED_SYNC = BenchmarkInfo(
    id="bench-broken",
    name="acme/broken",
    key="acme/broken@2",
    sync_status="failed",
    sync_error="Missing fixture",
    task_count=10,
    platform_url="https://platform.example/acme/benchmarks/broken",
)
BENCHMARKS: dict[str, BenchmarkInfo | None] = {
    "HLE": HLE,
    "terminal-bench-2-1": TB,
    "toolathlon-verified": TOOLATHLON,
    "acme/custom@1.0": SYNCING,
    "acme/broken@2": FAILED_SYNC,
    "no-such-bench": None,
}
ALL_SECRETS = frozenset({"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"})


def make_spec(
    benchmark: str = "HLE",
    *,
    harness: str | None = None,
    task_set: str | None = "parity",
    judge: str | None = "OPENAI_API_KEY",
    **kwargs: Any,
) -> dict[str, Any]:
    """A submit body (platform-api.md §9.6) as config would build it; the planner's tests
    default to an HLE parity run with a judge and no harness."""
    return submit_body(benchmark, harness=harness, task_set=task_set, judge=judge, **kwargs)


def desired(address: str, benchmark: str = "HLE", **kwargs: Any) -> DesiredRun:
    """A DesiredRun whose derived fields agree with its spec."""
    requested_by = kwargs.pop("requested_by", None)
    requested_subject = kwargs.pop("requested_subject", None)
    arrived_at = kwargs.pop("arrived_at", None)
    extra_secrets = kwargs.pop("extra_secrets", ())
    spec = make_spec(benchmark, **kwargs)
    if extra_secrets:
        spec["secrets"] = {"required": list(extra_secrets)}
    execution = spec.get("execution_config", {})
    tasks = spec.get("tasks_config", {})
    names = ["OPENAI_API_KEY"]
    if execution.get("judge_api_key_secret"):
        names.append(execution["judge_api_key_secret"])
    names += list(extra_secrets)
    return DesiredRun(
        address=address,
        path=f"benchmarks/{address}.toml",
        spec=spec,
        spec_digest=digest(spec),
        benchmark=benchmark,
        task_set=tasks.get("task_set"),
        task_names=tuple(tasks["task_names"]) if "task_names" in tasks else None,
        categories=tuple(tasks["categories"]) if "categories" in tasks else None,
        agent_count=len(spec["agents"]),
        attempts_per_task=execution.get("attempts_per_task", 1),
        harnesses=tuple(a.get("harness") for a in spec["agents"]),
        secret_names=tuple(dict.fromkeys(names)),
        judge_secret=execution.get("judge_api_key_secret"),
        requested_by=requested_by,
        requested_subject=requested_subject,
        arrived_at=arrived_at,
    )


def downloads(
    *files: str, types: tuple[str, ...] = ("summary", "results"), complete: bool = True
) -> Downloads:
    return Downloads(
        types=types,
        files=len(files),
        bytes=100 * len(files),
        sha256={f: "ab" * 32 for f in files},
        directory=".osmosis/benchmarks/run",
        complete=complete,
    )


def recorded_run(
    want: DesiredRun | None,
    run_id: str | None,
    *,
    address: str | None = None,
    spec: dict[str, Any] | None = None,
    status: str | None = "running",
    downloads: Downloads | None = None,
    intent: Intent | None = None,
    run_name: str | None = None,
    creator: str | None = None,
) -> RecordedRun:
    """The lockfile entry of ``want`` (or of ``spec`` at ``address``)."""
    body = spec if spec is not None else (want.spec if want else {})
    return RecordedRun(
        address=address or (want.address if want else "gone"),
        spec_digest=digest(body),
        spec=body,
        run_id=run_id,
        run_name=run_name or (f"name-{run_id}" if run_id else None),
        status=status,
        observed_at=NOW - timedelta(hours=1),
        submitted_at=NOW - timedelta(hours=2),
        benchmark_id=None,
        downloads=downloads,
        intent=intent,
        creator=creator,
    )


def lock(*entries: RecordedRun, history: tuple = ()) -> LockState:
    return LockState(
        lineage="11111111-2222-3333-4444-555555555555",
        serial=7,
        platform=PLATFORM,
        workspace=WORKSPACE,
        runs={e.address: e for e in entries},
        history=history,
    )


def observed_run(
    run_id: str,
    status: str = "running",
    *,
    benchmark_id: str = "bench-hle",
    fingerprint: str | None = None,
    created_at: datetime | None = None,
    name: str | None = None,
    creator: str | None = None,
) -> ObservedRun:
    return ObservedRun(
        id=run_id,
        name=name or f"name-{run_id}",
        status=status,
        benchmark_id=benchmark_id,
        benchmark_name="HLE",
        created_at=created_at or NOW - timedelta(hours=2),
        fingerprint=fingerprint,
        creator=creator,
    )


def canonical_of(want: DesiredRun) -> str:
    """The digest the plan uses for ``want``: its benchmark by resolved id."""
    info = BENCHMARKS[want.benchmark]
    return canonical_digest(want.spec, info.id if info else None)


def fingerprint_of(want: DesiredRun) -> str:
    info = BENCHMARKS[want.benchmark]
    assert info is not None
    return spec_fingerprint(want.spec, info.id)


def observation(
    *runs: ObservedRun,
    secrets: frozenset[str] | None = ALL_SECRETS,
    outputs: dict[str, LocalOutputs] | None = None,
    benchmarks: dict[str, BenchmarkInfo | None] | None = None,
    head: str | None = "0123456789abcdef0123456789abcdef01234567",
    platform: str = PLATFORM,
    workspace: str = WORKSPACE,
    catalog: tuple[BenchmarkRef, ...] | None = None,
    missing: tuple[str, ...] | frozenset[str] = (),
    vouched: tuple[str, ...] = (),
) -> Observation:
    return Observation(
        vouched=frozenset(vouched),
        platform=platform,
        workspace=workspace,
        catalog=catalog,
        observed_at=NOW,
        runs={r.id: r for r in runs},
        missing=frozenset(missing),
        benchmarks=BENCHMARKS if benchmarks is None else benchmarks,
        secrets=secrets,
        outputs=outputs or {},
        head=head,
    )


def settings(**kwargs: Any) -> Settings:
    return Settings(**kwargs)


# --------------------------------------------------------------------------- osmosis-ci

SHA = "c0ffee" + "0" * 34
"""The commit the runs of ``entry`` were requested by."""


def entry(address: str, run_id: str, status: str = "running", **update: Any) -> RecordedRun:
    """A recorded run as osmosis-ci meets it: requested by ``SHA``, observed at ``NOW``."""
    base = recorded_run(desired(address), run_id, status=status, run_name=f"name-{run_id}")
    return base.model_copy(update={"requested_by": SHA, "observed_at": NOW, **update})


def done(files: dict[str, str] | None = None) -> Downloads:
    """A run's downloads: ``files`` (name -> sha256), by default one summary."""
    files = files or {"summary.csv": "ab" * 32}
    return Downloads(
        types=("summary", "results"),
        files=len(files),
        bytes=10,
        sha256=files,
        directory=".osmosis/benchmarks/run",
    )
