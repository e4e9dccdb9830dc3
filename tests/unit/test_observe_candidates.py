"""Which runs' details the observation fetches for adoption (never one per recorded run)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from reconciler.engine.observe import _fingerprint_candidates
from reconciler.model import BenchmarkInfo, DesiredRun, Intent, LockState, ObservedRun, RecordedRun
from reconciler.platform import PlatformClient

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def detail(run_id: str) -> dict:
    return {
        "benchmark_run": {"id": run_id, "name": run_id, "status": "running"},
        "configuration": {"benchmark_id": "bm1", "task_filters": {}, "config": {}},
        "agents": [
            {
                "id": "a",
                "agent_index": 0,
                "harness": "codex",
                "model": "m",
                "environment_variables": {},
            }
        ],
    }


def fetched_for(
    runs: list[ObservedRun], state: LockState, desired: list[DesiredRun], benchmarks: dict
) -> tuple[list[str], dict[str, ObservedRun]]:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        run_id = request.url.path.rsplit("/", 1)[-1]
        asked.append(run_id)
        return httpx.Response(200, json=detail(run_id))

    client = PlatformClient(
        "https://platform.osmosis.ai",
        token="t",
        workspace="w",
        transport=httpx.MockTransport(handler),
    )
    with client:
        out = _fingerprint_candidates(client, {r.id: r for r in runs}, desired, state, benchmarks)
    return sorted(asked), out


def test_intent_window_fetches_its_benchmark_and_unattributed_runs_only() -> None:
    intent = Intent(op="submit", started_at=T0, body_digest="sha256:x", benchmark_id="bm1")
    state = LockState(
        lineage="l",
        platform="local",
        workspace="w",
        runs={
            "a": RecordedRun(address="a", spec_digest="sha256:x", intent=intent),
            "b": RecordedRun(address="b", spec_digest="sha256:y", run_id="recorded"),
        },
    )
    late, early = T0 + timedelta(minutes=1), T0 - timedelta(hours=2)
    runs = [
        ObservedRun(id="same-bench-late", benchmark_id="bm1", created_at=late),
        ObservedRun(id="no-bench-late", benchmark_id=None, created_at=late),
        ObservedRun(id="other-bench-late", benchmark_id="bm2", created_at=late),
        ObservedRun(id="same-bench-early", benchmark_id="bm1", created_at=early),
        ObservedRun(id="recorded", benchmark_id="bm1", created_at=late),
    ]
    asked, out = fetched_for(runs, state, [], {})
    assert asked == ["no-bench-late", "same-bench-late"]
    assert out["same-bench-late"].fingerprint is not None
    assert out["other-bench-late"].fingerprint is None


def test_new_config_fetches_runs_of_its_benchmark_and_agent_count() -> None:
    state = LockState(lineage="l", platform="local", workspace="w")
    wanted = DesiredRun(
        address="new",
        path="benchmarks/new.toml",
        spec={},
        spec_digest="sha256:n",
        benchmark="tb",
        agent_count=2,
    )
    info = BenchmarkInfo(id="bm1", name="TB", key="tb")
    runs = [
        ObservedRun(id="two-agents", benchmark_id="bm1", agent_count=2, created_at=T0),
        ObservedRun(id="one-agent", benchmark_id="bm1", agent_count=1, created_at=T0),
        ObservedRun(id="unknown-count", benchmark_id="bm1", created_at=T0),
        ObservedRun(id="other-bench", benchmark_id="bm2", agent_count=2, created_at=T0),
    ]
    asked, _ = fetched_for(runs, state, [wanted], {"tb": info})
    assert asked == ["two-agents", "unknown-count"]


def test_nothing_to_adopt_fetches_nothing() -> None:
    state = LockState(
        lineage="l",
        platform="local",
        workspace="w",
        runs={"a": RecordedRun(address="a", spec_digest="sha256:a", run_id="r1")},
    )
    wanted = DesiredRun(
        address="a",
        path="benchmarks/a.toml",
        spec={},
        spec_digest="sha256:a",
        benchmark="tb",
        agent_count=1,
    )
    runs = [ObservedRun(id=f"other-{i}", benchmark_id="bm1", agent_count=1) for i in range(50)]
    asked, _ = fetched_for(
        runs, state, [wanted], {"tb": BenchmarkInfo(id="bm1", name="TB", key="tb")}
    )
    assert asked == []
