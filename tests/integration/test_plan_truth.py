"""The plan is a promise (issue 13), end to end against the local Platform over loopback:
references to one benchmark by key, name or id are the same request; a refusal by the
Platform is remembered and never POSTed again until something changes; a plan with blocked
items fails where apply would; ``--target``/``--replace`` that match nothing are usage
errors.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from reconciler.local_platform import Faults
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    Platform,
    RequestLog,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)


def test_key_name_and_id_of_one_benchmark_plan_as_no_changes(
    tmp_path: Path, platform: Platform
) -> None:
    config = smoke_config()
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": config}), platform)
    assert osm.apply("--auto-approve").code == 0
    commit(osm.repo, "Record the run")
    with contextlib.closing(platform.client()) as client:
        info = client.get_benchmark("terminal-bench-2-1")
    for reference in (info.name, info.id, "terminal-bench-2-1"):
        edited = config.replace('"terminal-bench-2-1"', f'"{reference}"')
        write_config(osm.repo, "tb/a", edited)
        commit(osm.repo, f"Name the benchmark as {reference}")
        plan = osm.plan("--detailed-exitcode")
        assert plan.code == 0, (reference, plan)
        assert "No changes." in plan.out
    assert platform.submits() == 1
    assert read_lock(osm.repo)["runs"]["tb/a"]["benchmark_id"] == info.id


def test_a_refused_submit_is_remembered_and_never_posted_again(tmp_path: Path) -> None:
    # A workspace limit the client cannot know in advance (the page's "within your
    # workspace limits"): the first apply learns it from the Platform's refusal.
    platform = start_platform(
        tmp_path / "platform",
        faults=Faults(workspace_concurrency_limit=1),
        access_log=RequestLog(),
    )
    try:
        wide = smoke_config().replace("max_concurrent_attempts = 1", "max_concurrent_attempts = 2")
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": wide}), platform)
        assert osm.plan().code == 0

        first = osm.apply("--auto-approve")
        assert first.code == 1, first
        assert "exceeds this workspace's limit of 1" in first.text
        rejection = read_lock(osm.repo)["rejections"]["tb/a"]
        assert rejection["status"] == 400 and "limit of 1" in " ".join(rejection["issues"])

        plan = osm.plan()
        # Issue 34: the refusal is recorded, so the block is standing: listed, not red.
        assert plan.code == 0, plan
        assert "! tb/a" in plan.out and "the Platform refused this exact config" in plan.out
        assert "exceeds this workspace's limit of 1" in plan.out
        assert "standing: this block is recorded in the lockfile" in plan.out

        assert platform.requests is not None
        platform.requests.reset()
        again = osm.apply("--auto-approve")
        assert again.code == 0, again
        assert "1 blocked (not attempted)" in again.out
        assert platform.requests.count("POST /api/cli/benchmark-runs") == 0
        assert platform.submits() == 0

        # A retry as it is, asked for by a commit trailer, is planned (once).
        commit(osm.repo, "Retry", "Osmosis-Rerun: tb/a", allow_empty=True)
        assert "+ tb/a" in osm.plan().out

        # Editing the config makes it a new request.
        write_config(osm.repo, "tb/a", smoke_config())
        commit(osm.repo, "Fit the workspace limit")
        fixed = osm.plan()
        assert fixed.code == 0 and "+ tb/a" in fixed.out, fixed
        assert osm.apply("--auto-approve").code == 0
        assert platform.submits() == 1
        assert "rejections" not in read_lock(osm.repo)
    finally:
        platform.close()


def test_misspelt_target_and_replace_are_usage_errors_before_any_request(
    tmp_path: Path, platform: Platform
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()}), platform)
    assert platform.requests is not None
    platform.requests.reset()
    for flag in ("--target", "--replace"):
        result = osm.plan(flag, "tb/smok")
        assert result.code == 1, result
        assert f"{flag} tb/smok matches no" in result.err
        assert f"did you mean `{flag} tb/smoke`?" in result.err
    assert platform.requests.lines == []
    assert osm.plan("--target", "tb/*").code == 0


def test_a_trailer_that_matches_nothing_is_a_warning(tmp_path: Path, platform: Platform) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()}), platform)
    commit(osm.repo, "Re-run", "Osmosis-Rerun: tb/smoek", allow_empty=True)
    plan = osm.plan()
    assert "Osmosis-Rerun: tb/smoek" in plan.out and "matches no config" in plan.out
    assert "did you mean tb/smoke?" in plan.out


TEMPLATE = """# osmosis-reconciler: ignore
# The workspace template (configs/benchmark/default.toml): copy it and fill it in.
[experiment]
benchmark = "<benchmark key>"

[[agents]]
[agents.model]
type = "provider"
model = "<provider/model>"
api_key_secret = "<SECRET_NAME>"
"""


def test_templates_and_drafts_stay_in_the_tree_unsubmitted(
    tmp_path: Path, platform: Platform
) -> None:
    pyproject = '[tool.osmosis-reconciler]\nignore = ["drafts/**"]\n'
    configs = {
        "tb/smoke": smoke_config(),
        "templates/default": TEMPLATE,
        "drafts/next-model": smoke_config("openai/gpt-6-preview"),
    }
    osm = Osmosis(init_repo(tmp_path / "repo", configs=configs, pyproject=pyproject), platform)
    valid = osm.plan("--validate-only")
    assert valid.code == 0, valid
    plan = osm.plan("--format", "json")
    doc = plan.json()
    assert [a["address"] for a in doc["actions"]] == ["tb/smoke"]
    assert doc["ignored"] == [
        {"path": "benchmarks/drafts/next-model.toml", "why": "setting"},
        {"path": "benchmarks/templates/default.toml", "why": "marker"},
    ]
    text = osm.plan().out
    assert "Ignored, never submitted: 2 config files:" in text
    assert "benchmarks/templates/default.toml (its # osmosis-reconciler: ignore line)" in text
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 1


def test_a_new_config_of_a_model_with_recorded_costs_shows_a_dollar_estimate(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    clock.advance(48 * 3600)
    assert osm.apply("--auto-approve").code == 0  # downloads, and records the run's scores
    commit(osm.repo, "Record the run")
    write_config(osm.repo, "tb/b", smoke_config(attempts=3))
    commit(osm.repo, "Three attempts")
    doc = osm.plan("--format", "json").json()
    (item,) = doc["actions"]
    cost = item["cost_usd"]
    assert cost is not None and 0 < cost["low"] <= cost["high"], item
    assert "1 recorded run of openai/gpt-5.2" in cost["basis"]
    text = osm.plan().out
    assert "est. $" in text and "(estimate: cost per attempt of 1 recorded run" in text
    pyproject = f"[tool.osmosis-reconciler]\nmax_cost_usd = {cost['high'] / 2}\n"
    (osm.repo / "pyproject.toml").write_text(pyproject)
    guarded = osm.plan()
    assert guarded.code == 1 and "more than max_cost_usd" in guarded.text


def test_the_lockfile_hashes_summary_and_results_and_counts_the_rest(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    pyproject = '[tool.osmosis-reconciler]\ndownload_types = ["all"]\n'
    osm = Osmosis(
        init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}, pyproject=pyproject),
        platform,
    )
    assert osm.apply("--auto-approve").code == 0
    clock.advance(48 * 3600)
    assert osm.apply("--auto-approve").code == 0
    downloads = read_lock(osm.repo)["runs"]["tb/a"]["downloads"]
    assert sorted(downloads["sha256"]) == ["results.csv", "summary.csv"]
    assert downloads["others"] >= 1 and len(downloads["others_sha256"]) == 64
    assert downloads["files"] == 2 + downloads["others"]
    assert osm.plan("--detailed-exitcode").code == 0
