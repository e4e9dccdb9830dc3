"""The applier's submit against a Platform reached through an httpx transport (the seam):
the task count the Platform reports is compared with the plan's, said and recorded."""

from __future__ import annotations

from pathlib import Path

import httpx

from reconciler.engine.executor import Applier
from reconciler.model import Action, Plan, PlanItem, Reason, Settings
from reconciler.platform import PlatformClient
from reconciler.state.lockfile import new_state, read_lockfile
from reconciler.state.store import StateStore


def applier_answering(task_count: int, tmp_path: Path) -> tuple[Applier, StateStore]:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "POST" and request.url.path == "/api/cli/benchmark-runs"
        return httpx.Response(
            200,
            json={
                "id": "run-1",
                "name": "calm-yak",
                "status": "pending",
                "workflow_id": "benchmark-run/run-1",
                "task_count": task_count,
                "created_at": "2026-12-01T00:00:00Z",
            },
        )

    client = PlatformClient(
        "https://platform.osmosis.ai",
        token="t",
        workspace="w",
        transport=httpx.MockTransport(handler),
    )
    store = StateStore(tmp_path / "osmosis.lock", new_state("local", "w"))
    applier = Applier(
        client=client,
        store=store,
        http=httpx.Client(transport=httpx.MockTransport(handler)),
        repo_root=tmp_path,
        download_root=tmp_path / ".osmosis" / "benchmarks",
        settings=Settings(),
    )
    return applier, store


ITEM = PlanItem(
    action=Action.SUBMIT,
    address="tb/a",
    reason=Reason.NEW_CONFIG,
    after_digest="sha256:" + "a" * 64,
    spec={"experiment_config": {"benchmark": "tb"}, "agents": []},
    benchmark_id="bm1",
    task_count=3,
    attempts=6,  # 3 tasks x 1 agent x 2 attempts
)


def test_a_task_count_other_than_planned_is_said_and_recorded(tmp_path: Path) -> None:
    applier, _store = applier_answering(5, tmp_path)
    result = applier.apply(Plan(items=(ITEM,)), parallelism=1)
    (outcome,) = result.outcomes
    assert outcome.ok
    assert "the Platform selected 5 task(s), the plan counted 3" in outcome.message
    assert "10 attempts instead of 6" in outcome.message
    entry = read_lockfile(tmp_path / "osmosis.lock", platform="local", workspace="w").runs["tb/a"]
    assert (entry.task_count, entry.attempts, entry.planned_attempts) == (5, 10, 6)


def test_the_planned_task_count_is_recorded_once(tmp_path: Path) -> None:
    applier, _store = applier_answering(3, tmp_path)
    (outcome,) = applier.apply(Plan(items=(ITEM,)), parallelism=1).outcomes
    assert outcome.message == "submitted"
    text = (tmp_path / "osmosis.lock").read_text()
    assert "attempts = 6" in text and "planned_attempts" not in text
