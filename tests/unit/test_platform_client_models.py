"""Platform JSON → frozen models: the tolerant fallbacks of platform-api.md §3."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from reconciler.model import BenchmarkInfo, ObservedRun, adoption_fingerprint, spec_fingerprint
from reconciler.platform.models import (
    Benchmark,
    BenchmarkDetail,
    LogPage,
    Manifest,
    RunDetail,
    RunStatus,
    RunSummary,
    SecretRecord,
    SubmittedRun,
    Workspace,
)

TB_DETAIL: dict[str, Any] = {
    "benchmark": {
        "id": "bench-tb",
        "name": "Terminal-Bench 2.1",
        "source_type": "osmosis_managed",
        "source_ref": "terminal-bench-2-1",
        "source_url": "https://github.com/laude-institute/terminal-bench",
        "task_count": 3,
        "category_count": 2,
        "task_sets": [{"name": "smoke", "task_count": 1}, {"task_count": 9}],
        "sync_status": "ready",
        "runner_family": "harbor",
        "supports_harness": True,
        "requires_harness": True,
        "default_harness": "terminus-2",
        "requires_judge_model": False,
        "judge_model_default": None,
        "pass_threshold": 1,
        "categories": [{"name": "terminal", "task_count": 2}, {"name": "git", "task_count": 1}],
        "tasks": [
            {"name": "terminal-bench/git-multibranch", "category": "git", "difficulty": "hard"},
            {"name": "t2", "category": "terminal", "difficulty": "HARD"},
            {"name": "t3", "category": "terminal"},
            {"category": "nameless"},
        ],
        "unavailable_tasks": {
            "reason": "Missing fixture",
            "tasks": [{"name": "t9", "difficulty": "easy"}],
        },
        "required_secret_names": ["HF_TOKEN", "HF_TOKEN", " ", 3],
        "unknown_future_field": {"x": 1},
    },
    "leaderboard": [
        {
            "rank": 1,
            "tied": True,
            "task_set": "full",
            "harness": "terminus-2",
            "model": "openai/gpt-5",
            "pass_at_1": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 89, "method": "wilson"},
            "pass_at_k": [{"k": 2, "value": 0.6}, {"k": 4, "value": float("nan")}],
            "run": {"id": "r1", "name": "bright-otter"},
        },
        "junk",
    ],
}


def test_benchmark_detail_parses_and_normalises() -> None:
    detail = BenchmarkDetail.from_api(TB_DETAIL)
    assert detail.key == "terminal-bench-2-1"
    assert [t.difficulty for t in detail.tasks] == ["hard", None, None]
    assert [t.name for t in detail.unavailable_tasks] == ["t9"]
    assert detail.unavailable_reason == "Missing fixture"
    assert detail.required_secret_names == ("HF_TOKEN",)
    assert detail.pass_threshold == 1.0
    assert [s.name for s in detail.task_sets] == ["smoke"]
    entry = detail.leaderboard[0]
    assert len(detail.leaderboard) == 1
    assert entry.tied and entry.pass_at_1 and entry.pass_at_1.method == "wilson"
    assert entry.pass_at_k[1].value is None  # NaN dropped
    assert entry.run_name == "bright-otter"


def test_benchmark_detail_to_info() -> None:
    info = BenchmarkDetail.from_api(TB_DETAIL).to_info()
    assert isinstance(info, BenchmarkInfo)
    assert info.id == "bench-tb" and info.key == "terminal-bench-2-1"
    assert info.categories == {"terminal": 2, "git": 1}
    assert info.task_sets == {"smoke": 1}
    assert info.task_names == frozenset({"terminal-bench/git-multibranch", "t2", "t3"})
    assert info.requires_harness and info.default_harness == "terminus-2"
    assert info.required_secret_names == ("HF_TOKEN",)


def test_to_info_counts_categories_from_tasks_when_absent() -> None:
    raw = {
        "benchmark": {
            "id": "b",
            "tasks": [{"name": "a", "category": "x"}, {"name": "b", "category": "x"}],
        }
    }
    assert BenchmarkDetail.from_api(raw).to_info().categories == {"x": 2}


def test_benchmark_detail_defaults_for_sparse_body() -> None:
    detail = BenchmarkDetail.from_api(
        {"benchmark": {"id": "b1", "name": "X", "sync_status": "syncing"}}
    )
    assert detail.sync_status == "syncing"
    assert detail.supports_harness is True and detail.requires_harness is False
    assert detail.required_secret_names == () and detail.tasks == ()


def test_benchmark_detail_without_benchmark_object_is_rejected() -> None:
    with pytest.raises(ValueError):
        BenchmarkDetail.from_api({"leaderboard": []})


def test_benchmark_entry_fields() -> None:
    entry = Benchmark.from_api(
        {
            "id": "b",
            "name": "acme/custom",
            "source_ref": "acme/custom@3",
            "task_count": "many",
            "sync_status": "failed",
            "sync_error": "Registry unreachable",
            "last_run_at": "2026-07-25T10:00:00Z",
            "run_count": 4,
        }
    )
    assert entry.task_count == 0  # wrong type counts as absent
    assert entry.sync_error == "Registry unreachable"
    assert entry.last_run_at == datetime(2026, 7, 25, 10, tzinfo=UTC)
    assert entry.run_count == 4


def test_run_summary_fallbacks() -> None:
    run = RunSummary.from_api(
        {
            "id": "run-1",
            "benchmark_run_name": "warm-gull",
            "status": "exploding",
            "benchmark": {"id": "bench-1", "name": "HLE"},
            "best_pass_at_1": True,
            "agent_count": 2,
            "created_at": "2026-07-25T00:00:00",
        }
    )
    assert run.name == "warm-gull"
    assert run.status == "exploding" and run.known_status is None
    assert run.benchmark_id == "bench-1" and run.benchmark_name == "HLE"
    assert run.best_pass_at_1 is None
    assert run.created_at == datetime(2026, 7, 25, tzinfo=UTC)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "0.5", None])
def test_best_pass_at_1_non_finite_or_wrong_type_is_ignored(value: Any) -> None:
    assert RunSummary.from_api({"id": "r", "best_pass_at_1": value}).best_pass_at_1 is None


def test_run_summary_requires_id() -> None:
    with pytest.raises(ValueError):
        RunSummary.from_api({"name": "x"})


def test_run_status_enum() -> None:
    assert RunSummary.from_api({"id": "r", "status": "queued"}).known_status is RunStatus.QUEUED


def test_run_summary_to_observed() -> None:
    run = RunSummary.from_api(
        {
            "id": "r",
            "name": "n",
            "status": "finished",
            "benchmark_id": "b",
            "completed_at": "2026-07-25T01:00:00Z",
            "platform_url": "https://p/r",
            "best_pass_at_1": 0.25,
        }
    )
    observed = run.to_observed()
    assert isinstance(observed, ObservedRun)
    assert observed.id == "r" and observed.status == "finished" and observed.benchmark_id == "b"
    assert observed.completed_at == datetime(2026, 7, 25, 1, tzinfo=UTC)
    assert observed.best_pass_at_1 == 0.25 and observed.fingerprint is None


DETAIL: dict[str, Any] = {
    "benchmark_run": {
        "id": "run-1",
        "name": "bright-otter",
        "status": "running",
        "ingested_results": 1,
    },
    "configuration": {
        "benchmark_id": "bench-hle",
        "benchmark_name": "HLE",
        "source_ref": "hle",
        "resolved_version": 1,
        "task_filters": {"task_set": "parity"},
        "config": {"attempts_per_task": 2, "judge_api_key_secret": "OPENAI_API_KEY"},
        "resolved_secret_scopes": {"OPENAI_API_KEY": "workspace"},
    },
    "agents": [
        {
            "id": "agent-2",
            "agent_index": 1,
            "harness": None,
            "model": "anthropic/claude",
            "environment_variables": {"B": "2"},
        },
        {
            "id": "agent-1",
            "agent_index": 0,
            "harness": "codex",
            "model_display_name": "GPT-5",
            "model": "openai/gpt-5",
            "status": "running",
            "environment_variables": {"LOG_LEVEL": "info", "N": 3},
            "aggregates": {
                "reported_cost_usd": 498.0,
                "mean_duration_seconds": 54,
                "tokens_per_task": 1100000,
            },
        },
    ],
    "progress": {"ingested": 50, "expected": 100},
    "totals": {"passed": 20, "failed": 25, "errored": 5, "cancelled": 0, "total_cost_usd": 1.25},
    "agent_metrics": [
        {
            "benchmark_run_agent_id": "agent-1",
            "rank": 1,
            "n_tasks": 249,
            "pass_at_1": {"value": 0.75},
        },
        {"benchmark_run_agent_id": "agent-2", "rank": 2, "pass_at_1": {"value": 0.5}},
    ],
    "is_internal_user": True,
}


def test_run_detail_fallbacks_and_overrides() -> None:
    detail = RunDetail.from_api(DETAIL)
    summary = detail.summary
    assert summary.benchmark_name == "HLE" and summary.benchmark_id == "bench-hle"
    assert summary.ingested_results == 50 and summary.expected_results == 100
    assert summary.agent_count == 2
    assert summary.best_pass_at_1 == 0.75
    assert [a.id for a in detail.agents] == ["agent-1", "agent-2"]
    assert detail.agents[0].environment_variables == {"LOG_LEVEL": "info", "N": "3"}
    assert detail.agents[0].aggregates.tokens_per_task == 1100000.0
    assert detail.configuration.resolved_version == "1"
    assert detail.configuration.resolved_secret_scopes == {"OPENAI_API_KEY": "workspace"}
    assert detail.totals.passed == 20 and detail.is_internal_user


def test_run_detail_keeps_values_the_run_itself_reports() -> None:
    raw = {
        **DETAIL,
        "benchmark_run": {
            **DETAIL["benchmark_run"],
            "benchmark_name": "Own",
            "agent_count": 5,
            "best_pass_at_1": 0.1,
        },
    }
    summary = RunDetail.from_api(raw).summary
    assert (summary.benchmark_name, summary.agent_count, summary.best_pass_at_1) == ("Own", 5, 0.1)


def test_run_detail_fingerprint_matches_the_submitted_spec() -> None:
    spec = {
        "experiment_config": {"benchmark": "hle"},
        "tasks_config": {"task_set": "parity"},
        "execution_config": {"attempts_per_task": 2, "judge_api_key_secret": "OPENAI_API_KEY"},
        "env_config": {"LOG_LEVEL": "info"},
        "agents": [
            {
                "harness": "codex",
                "model": {"type": "provider", "model": "openai/gpt-5"},
                "env": {"N": "3"},
            },
            {
                "model": {"type": "provider", "model": "anthropic/claude"},
                "env": {"B": "2", "LOG_LEVEL": "x"},
            },
        ],
    }
    detail = RunDetail.from_api(
        {
            **DETAIL,
            "agents": [
                {**DETAIL["agents"][0], "environment_variables": {"B": "2", "LOG_LEVEL": "x"}},
                DETAIL["agents"][1],
            ],
        }
    )
    assert detail.fingerprint() == spec_fingerprint(spec, "bench-hle")
    assert detail.to_observed().fingerprint == detail.fingerprint()
    other = RunDetail.from_api(
        {**DETAIL, "configuration": {**DETAIL["configuration"], "config": {}}}
    )
    assert other.fingerprint() != detail.fingerprint()


def test_fingerprint_orders_agents_by_index() -> None:
    detail = RunDetail.from_api(DETAIL)
    expected = adoption_fingerprint(
        "bench-hle",
        {"task_set": "parity"},
        DETAIL["configuration"]["config"],
        [
            ("codex", "openai/gpt-5", {"LOG_LEVEL": "info", "N": "3"}),
            (None, "anthropic/claude", {"B": "2"}),
        ],
    )
    assert detail.fingerprint() == expected


def test_run_detail_requires_benchmark_run() -> None:
    with pytest.raises(ValueError):
        RunDetail.from_api({"configuration": {}})


def test_submitted_run() -> None:
    run = SubmittedRun.from_api(
        {
            "id": "r",
            "name": "n",
            "status": "queued",
            "created_at": "2026-07-25T00:00:00Z",
            "platform_url": None,
        }
    )
    assert (run.id, run.status, run.platform_url) == ("r", "queued", None)
    with pytest.raises(ValueError):
        SubmittedRun.from_api({"name": "n"})


def test_log_page() -> None:
    page = LogPage.from_api({"logs": [{"message": "m", "details": "oops"}, 5], "next_cursor": ""})
    assert len(page.entries) == 1 and page.entries[0].details is None
    assert page.next_cursor is None and not page.has_more


def test_manifest_totals_passthrough() -> None:
    manifest = Manifest.from_api({"files": [], "totals": {"files": 0, "bytes": 0, "x": math.inf}})
    assert manifest.totals == {"files": 0, "bytes": 0, "x": None}


def test_secret_and_workspace() -> None:
    secret = SecretRecord.from_api({"id": "s", "name": "A", "scope": "user", "value": "leak"})
    assert "leak" not in repr(secret) and not hasattr(secret, "value")
    workspace = Workspace.from_api(
        {"id": "w", "name": "n", "connected_repo": {"repo_full_name": "a/b"}}
    )
    assert workspace.connected_repo == "a/b"


def test_models_are_frozen() -> None:
    run = RunSummary.from_api({"id": "r"})
    with pytest.raises(AttributeError):
        run.status = "finished"  # type: ignore[misc]
