"""End-to-end: ``osmosis-plan`` on real temp git repos against the local Platform served
over loopback HTTP (issue 4, "Done when").

The Platform's clock is a ``FakeClock``: submitted runs stay active until a test moves
time on, so "active" and "terminal" cases are chosen, not raced.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.clock import FakeClock
from tests.support.git import git
from tests.support.osmosis import (
    WORKSPACE,
    Osmosis,
    Platform,
    RequestLog,
    actions,
    example_addresses,
    init_repo,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

DAY = 86400.0


def two_configs(tmp_path: Path, platform: Platform, **kwargs) -> Osmosis:
    repo = init_repo(
        tmp_path / "repo",
        configs={
            "tb/a": smoke_config("openai/gpt-5.2"),
            "tb/b": smoke_config("openai/gpt-5", attempts=2),
        },
        **kwargs,
    )
    return Osmosis(repo, platform)


def applied(osm: Osmosis) -> None:
    result = osm.apply("--auto-approve")
    assert result.code == 0, result


# --------------------------------------------------------------------------- fresh repo


def test_fresh_repo_with_the_examples_plans_every_submit_then_an_unchanged_replan_is_clean(
    tmp_path: Path, platform: Platform
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", examples=True), platform)
    names = example_addresses()

    first = osm.plan("--detailed-exitcode")
    assert first.code == 2, first
    assert f"Plan: {len(names)} to submit, 0 to replace, 0 to stop" in first.out
    for address in names:
        assert f"+ {address}" in first.out
    as_json = osm.plan("--format", "json")
    assert as_json.code == 0, as_json
    assert actions(as_json) == {a: "submit" for a in names}
    assert {a["reason"] for a in as_json.json()["actions"]} == {"new_config"}
    assert platform.submits() == 0, "planning must never submit"

    applied(osm)
    assert platform.submits() == len(names)
    lock = read_lock(osm.repo)
    assert sorted(lock["runs"]) == names
    assert lock["platform"] == platform.url and lock["workspace"] == WORKSPACE

    again = osm.plan("--detailed-exitcode")
    assert again.code == 0, again
    assert "No changes." in again.out
    assert platform.submits() == len(names)


# --------------------------------------------------------------------------- edits


def test_editing_a_config_replaces_an_active_run_and_resubmits_a_finished_one(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    write_config(osm.repo, "tb/a", smoke_config("openai/gpt-5.4"))

    active = osm.plan("--format", "json")
    item = plan_items(active)["tb/a"]
    assert item["action"] == "replace" and item["reason"] == "spec_changed"
    assert 'agents[0].model.model: "openai/gpt-5.2" -> "openai/gpt-5.4"' in item["changes"]
    assert item["before"] != item["after"]
    assert "tb/b" not in plan_items(active)
    text = osm.plan()
    assert "-/+ tb/a" in text.out
    assert 'agents[0].model.model: "openai/gpt-5.2" -> "openai/gpt-5.4"' in text.out

    clock.advance(DAY)  # every run is terminal now
    doc = osm.plan("--format", "json").json()
    of_a = {a["action"]: a for a in doc["actions"] if a["address"] == "tb/a"}
    # The ended run's outputs are fetched in the same apply that submits the new config.
    assert sorted(of_a) == ["download", "submit"]
    assert (
        'agents[0].model.model: "openai/gpt-5.2" -> "openai/gpt-5.4"' in of_a["submit"]["changes"]
    )
    assert of_a["download"]["run_id"] == of_a["submit"]["run_id"]
    assert plan_items(osm.plan("--format", "json"))["tb/b"]["action"] == "download"


def test_a_comment_or_key_order_edit_plans_nothing(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    text = smoke_config("openai/gpt-5.2", comment="reworded comment")
    reordered = text.replace(
        'type = "provider"\nmodel = "openai/gpt-5.2"\n',
        'model = "openai/gpt-5.2"\ntype = "provider"\n',
    )
    assert reordered != text
    write_config(osm.repo, "tb/a", reordered)
    assert osm.plan("--detailed-exitcode").code == 0


def test_deleting_a_config_stops_an_active_run_and_forgets_a_finished_one(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    (osm.repo / "benchmarks" / "tb" / "a.toml").unlink()

    active = plan_items(osm.plan("--format", "json"))
    assert active["tb/a"]["action"] == "stop" and active["tb/a"]["reason"] == "config_deleted"
    assert active["tb/a"]["run_id"] == read_lock(osm.repo)["runs"]["tb/a"]["run_id"]

    clock.advance(DAY)
    finished = plan_items(osm.plan("--format", "json"))
    assert finished["tb/a"]["action"] == "forget"


def test_renaming_a_config_moves_the_entry_without_a_platform_call(
    tmp_path: Path, platform: Platform
) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    run_id = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
    before = platform.submits()
    (osm.repo / "benchmarks" / "tb" / "a.toml").rename(osm.repo / "benchmarks" / "tb" / "a2.toml")

    plan = osm.plan("--format", "json")
    assert actions(plan) == {"tb/a2": "move"}
    item = plan_items(plan)["tb/a2"]
    assert item["reason"] == "renamed" and item["run_id"] == run_id

    assert platform.requests is not None
    platform.requests.reset()
    result = osm.apply("--auto-approve")
    assert result.code == 0, result
    assert platform.submits() == before
    assert platform.requests.count("POST") == 0, platform.requests.lines
    runs = read_lock(osm.repo)["runs"]
    assert "tb/a" not in runs and runs["tb/a2"]["run_id"] == run_id
    assert osm.plan("--detailed-exitcode").code == 0


def test_a_deleted_secret_blocks_the_submit_with_the_command_that_fixes_it(
    tmp_path: Path, platform: Platform
) -> None:
    osm = Osmosis(
        init_repo(
            tmp_path / "repo",
            configs={
                "tb/a": smoke_config(secret="ANTHROPIC_API_KEY", model="anthropic/claude-sonnet-4"),
                "tb/b": smoke_config(),
            },
        ),
        platform,
    )
    platform.delete_secret("ANTHROPIC_API_KEY")

    plan = osm.plan("--format", "json")
    items = plan_items(plan)
    assert items["tb/a"]["action"] == "blocked" and items["tb/a"]["reason"] == "secret_missing"
    (fix,) = items["tb/a"]["fixes"]
    hint = (
        "echo VALUE | osmosis-platform-emulator secret set ANTHROPIC_API_KEY --scope workspace "
        f"--workspace {platform.workspace} --platform {platform.url}"
    )
    assert fix == {"command": hint}
    assert any(f"`{hint}`" in d for d in items["tb/a"]["details"])
    assert items["tb/b"]["action"] == "submit"
    text = osm.plan()
    assert "! tb/a" in text.out and hint in text.out

    # Apply submits what it can and reports the blocked config, with its fix (issue 34: a
    # blocked item is not a failure of the apply; the plan's exit 4 is the red check).
    result = osm.apply("--auto-approve")
    assert result.code == 0, result
    assert "1 blocked (not attempted)" in result.out
    assert hint in result.out
    assert platform.submits() == 1
    assert sorted(read_lock(osm.repo)["runs"]) == ["tb/b"]

    # The hint, typed as shown, is the fix: the next plan submits tb/a.
    done = subprocess.run(
        ["bash", "-c", hint], cwd=osm.repo, env=osm.env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert plan_items(osm.plan("--format", "json"))["tb/a"]["action"] == "submit"


# --------------------------------------------------------------------------- formats, files


def test_json_and_markdown_formats(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    doc = osm.plan("--format", "json").json()
    assert doc["format_version"] == "1.0"
    assert doc["summary"]["submit"] == 2 and doc["summary"]["attempts"] == 3
    assert doc["errored"] is False
    assert all(a["after"].startswith("sha256:") for a in doc["actions"])
    assert doc["head"] == git(osm.repo, "rev-parse", "HEAD")
    assert doc["platform"] == platform.url and doc["workspace"] == WORKSPACE

    md = osm.plan("--format", "markdown").out
    first_line = md.splitlines()[0]
    assert first_line.startswith("<!--") and first_line.endswith("-->")
    assert "tb/a" in md and "tb/b" in md and "<details>" in md
    assert len(md) < 65_000


def test_a_saved_plan_is_applied_exactly(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    planfile = tmp_path / "a.plan.json"
    saved = osm.plan("--target", "tb/a", "--out", str(planfile))
    assert saved.code == 0, saved
    assert f"osmosis-apply {planfile}" in saved.err
    assert json.loads(planfile.read_text())["plan"]["format_version"] == "1.0"

    result = osm.apply(str(planfile))
    assert result.code == 0, result
    assert platform.submits() == 1
    assert sorted(read_lock(osm.repo)["runs"]) == ["tb/a"]
    # The other config is still pending for the next plan.
    assert actions(osm.plan("--format", "json")) == {"tb/b": "submit"}


def test_target_limits_the_plan_and_reports_the_rest(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    plan = osm.plan("--target", "tb/b", "--format", "json")
    assert actions(plan) == {"tb/b": "submit"}
    text = osm.plan("--target", "tb/*")
    assert "tb/a" in text.out and "tb/b" in text.out
    only_b = osm.plan("--target", "tb/b")
    assert "1 other pending action is outside --target" in only_b.out, only_b
    assert "+ tb/a" not in only_b.out
    assert plan.json()["other_pending"] == 1


def test_replace_reruns_an_unchanged_config(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    assert osm.plan("--detailed-exitcode").code == 0
    plan = osm.plan("--replace", "tb/a", "--format", "json")
    item = plan_items(plan)["tb/a"]
    assert item["reason"] == "replace_requested"
    assert item["action"] == "replace"  # the run is still active: stop, then submit
    old_run = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
    result = osm.apply("--auto-approve", "--replace", "tb/a")
    assert result.code == 0, result
    assert platform.submits() == 3
    lock = read_lock(osm.repo)
    assert lock["runs"]["tb/a"]["run_id"] != old_run
    assert any(h["address"] == "tb/a" and h["run_id"] == old_run for h in lock["history"])
    assert platform.statuses()[old_run] == "stopped"
    assert osm.plan("--detailed-exitcode").code == 0


# --------------------------------------------------------------------------- guards


def test_mass_stop_guard_from_pyproject(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform, pyproject="[tool.osmosis-reconciler]\nmax_stops = 1\n")
    applied(osm)
    for name in ("a", "b"):
        (osm.repo / "benchmarks" / "tb" / f"{name}.toml").unlink()

    guarded = osm.plan()
    assert guarded.code == 1, guarded
    assert "max_stops = 1" in guarded.text and "--allow-mass-stop" in guarded.text
    refused = osm.apply("--auto-approve")
    assert refused.code == 1, refused
    assert all(read_lock(osm.repo)["runs"][a]["status"] != "stopped" for a in ("tb/a", "tb/b"))

    allowed = osm.plan("--allow-mass-stop", "--detailed-exitcode")
    assert allowed.code == 2, allowed
    assert "2 to stop" in allowed.out


def test_plan_refresh_only_writes_nothing_and_apply_refresh_only_records(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    lockfile = osm.repo / "state" / "osmosis.lock"
    before = lockfile.read_bytes()
    serial = read_lock(osm.repo)["serial"]
    assert {e["status"] for e in read_lock(osm.repo)["runs"].values()} == {"pending"}
    clock.advance(DAY)
    observed = platform.statuses()

    shown = osm.plan("--refresh-only", "--format", "json", "--detailed-exitcode")
    assert shown.code == 2, shown
    doc = shown.json()
    assert doc["type"] == "refresh" and doc["recorded"] is False
    assert sorted(c["address"] for c in doc["changes"]) == ["tb/a", "tb/b"]
    assert {(c["field"], c["before"]) for c in doc["changes"]} == {("status", "pending")}
    assert {c["after"] for c in doc["changes"]} == set(observed.values())
    assert doc["pending_actions"] == 2  # the downloads, which a refresh does not take
    assert lockfile.read_bytes() == before, "osmosis-plan --refresh-only must write nothing"
    text = osm.plan("--refresh-only")
    assert "Refresh would record 2 changes in state/osmosis.lock:" in text.out
    assert "nothing was written" in text.out and "osmosis-apply --refresh-only" in text.out
    assert lockfile.read_bytes() == before

    recorded = osm.apply("--refresh-only", "--format", "json")
    assert recorded.code == 0, recorded
    assert recorded.json()["recorded"] is True
    lock = read_lock(osm.repo)
    assert lock["serial"] == serial + 1
    for entry in lock["runs"].values():
        assert entry["status"] == observed[entry["run_id"]]
    # Recorded now: nothing left to refresh, and the downloads are still pending.
    again = osm.plan("--refresh-only", "--format", "json")
    assert again.json()["changes"] == [] and again.json()["pending_actions"] == 2
    assert set(actions(osm.plan("--format", "json")).values()) == {"download"}


def test_drift_stays_visible_until_a_refresh_is_recorded(
    tmp_path: Path, platform: Platform
) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    run_id = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
    with platform.client() as client:
        client.stop_run(run_id)  # outside the tool
    for _ in range(2):
        shown = osm.plan("--refresh-only", "--format", "json")
        assert [d["kind"] for d in shown.json()["drift"]] == ["stopped_outside"], shown
        assert [c["after"] for c in shown.json()["changes"]] == ["stopped"]
    assert osm.apply("--refresh-only").code == 0
    after = osm.plan("--format", "json").json()
    assert after["drift"] == []
    assert read_lock(osm.repo)["runs"]["tb/a"]["status"] == "stopped"


def test_validate_only_needs_no_platform(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    platform.close()  # nothing listens any more: a Platform call would fail
    ok = osm.plan("--validate-only")
    assert ok.code == 0, ok
    assert "2 config file(s) are valid" in ok.out

    write_config(osm.repo, "tb/broken", "[experiment]\nbenchmark = 3\n")
    bad = osm.plan("--validate-only")
    assert bad.code == 1, bad
    assert "tb/broken.toml" in bad.err
    assert "1 error(s)" in bad.err or "error(s) in 1 of 3" in bad.err


def test_a_lockfile_from_another_platform_is_refused(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    applied(osm)
    other = start_platform(tmp_path / "other-platform")
    try:
        elsewhere = Osmosis(osm.repo, other)
        plan = elsewhere.plan()
        assert plan.code == 1, plan
        assert platform.url in plan.err and other.url in plan.err
        apply = elsewhere.apply("--auto-approve")
        assert apply.code == 1
        assert other.submits() == 0
    finally:
        other.close()
    # Same platform, another workspace: refused too, and nothing is stopped or submitted.
    (osm.repo / "benchmarks" / "tb" / "a.toml").unlink()
    other_ws = Osmosis(osm.repo, platform.in_workspace("someone-else"))
    refused = other_ws.apply("--auto-approve")
    assert refused.code == 1, refused
    assert WORKSPACE in refused.err and "someone-else" in refused.err
    assert set(platform.statuses().values()) == {"pending"}
    assert platform.submits() == 2


def test_usage_errors_exit_1(tmp_path: Path, platform: Platform) -> None:
    osm = two_configs(tmp_path, platform)
    result = osm.plan("--format", "yaml")
    assert result.code == 1
    assert "--help" in result.err


# --------------------------------------------------------------------------- figures


@pytest.mark.perf
def test_figures_plan_over_1000_configs_with_1000_recorded_terminal_runs(tmp_path: Path) -> None:
    """Prints request count and median wall time; asserts only correctness, never time.

    Run: ``.venv/bin/python -m pytest -m perf -s -p no:cacheprovider
    tests/integration/test_cli_plan.py``.
    """
    import statistics
    import subprocess
    import time

    n = int(os.environ.get("E2E_PLAN_CONFIGS", "1000"))
    log = RequestLog()
    server = start_platform(tmp_path / "platform", speed=100_000.0, access_log=log)
    try:
        configs = {
            f"shard-{i // 100:02d}/run-{i:04d}": smoke_config(comment=f"run {i}").replace(
                "max_concurrent_attempts = 1\n",
                f"max_concurrent_attempts = 1\ntimeout_multiplier = {1 + i / 1000:.3f}\n",
            )
            for i in range(n)
        }
        osm = Osmosis(init_repo(tmp_path / "repo", configs=configs), server)
        started = time.monotonic()
        result = osm.apply("--auto-approve", "--wait", "--wait-timeout", "300")
        assert result.code in (0, 3), result.err + result.out[-3000:]
        setup = time.monotonic() - started
        lock = read_lock(osm.repo)
        assert len(lock["runs"]) == n
        assert all(e["status"] in ("finished", "failed") for e in lock["runs"].values())

        walls, inproc, requests = [], [], []
        for _ in range(5):
            log.reset()
            started = time.monotonic()
            done = subprocess.run(
                osm.command("osmosis-plan", "--detailed-exitcode"),
                env=osm.env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            walls.append(time.monotonic() - started)
            requests.append(log.count())
            assert done.returncode in (0, 2), done.stderr
        by_route: dict[str, int] = {}
        for line in log.lines:
            method, path = line.split()[:2]
            key = f"{method} {re.sub(r'/(bmr|bm)_[0-9a-z]+', '/ID', path)}"
            by_route[key] = by_route.get(key, 0) + 1
        for _ in range(5):
            started = time.monotonic()
            assert osm.plan("--detailed-exitcode").code in (0, 2)
            inproc.append(time.monotonic() - started)
        print(
            f"\n[figures] plan over {n} configs / {n} recorded terminal runs "
            f"(loopback local Platform): requests per plan {requests}, by route {by_route}; "
            f"median wall time {statistics.median(walls):.2f}s as a process "
            f"(runs: {', '.join(f'{w:.2f}' for w in walls)}), "
            f"{statistics.median(inproc):.2f}s in-process; "
            f"setup apply+wait+download {setup:.1f}s"
        )
        assert max(requests) < n / 10, "a plan must not make one request per recorded run"
    finally:
        server.close()


def test_an_invalid_config_makes_no_paid_or_run_call_and_writes_nothing(tmp_path: Path) -> None:
    from tests.support.osmosis import RequestLog

    log = RequestLog()
    server = start_platform(tmp_path / "logged-platform", access_log=log)
    try:
        osm = two_configs(tmp_path, server)
        lockfile = osm.repo / "state" / "osmosis.lock"
        before = lockfile.read_bytes() if lockfile.exists() else None
        write_config(osm.repo, "tb/broken", "[experiment]\nbenchmark = 3\n")
        log.reset()
        for result in (osm.plan(), osm.apply("--auto-approve")):
            assert result.code == 1, result
            assert "benchmarks/tb/broken.toml:2" in result.err
        # The valid configs are still checked against the catalog and the secret records
        # (issue 25: errors in one report, not in rounds): reads of those, nothing else.
        assert log.lines, "the valid configs' preflight reads the catalog"
        for line in log.lines:
            method, path = line.split()[:2]
            assert method == "GET", line
            assert path.startswith(("/api/cli/benchmarks", "/api/cli/environment-secrets")), line
        assert (lockfile.read_bytes() if lockfile.exists() else None) == before
        assert server.submits() == 0
    finally:
        server.close()


# --------------------------------------------------------------------------- people (issue 16)


def test_each_error_is_printed_once_and_quiet_keeps_only_results(
    tmp_path: Path, platform: Platform
) -> None:
    osm = two_configs(tmp_path, platform, pyproject="[tool.osmosis-reconciler]\nmax_attempts = 1\n")
    over = osm.plan()
    assert over.code == 1, over
    assert (over.out + over.err).count("more than max_attempts = 1") == 1, over
    as_json = osm.plan("--format", "json")
    assert as_json.code == 1
    (error,) = as_json.json()["errors"]
    assert "more than max_attempts = 1" in error
    assert as_json.err.count("more than max_attempts = 1") == 1  # for people, on stderr

    planfile = tmp_path / "q.plan.json"
    quiet = osm.plan("-q", "--allow-over-budget", "--out", str(planfile))
    assert quiet.code == 0, quiet
    assert "Plan: 2 to submit" in quiet.out  # the result stays
    assert quiet.err == "", quiet  # no banner, no "Saved the plan", no info logs
    loud = osm.plan("--allow-over-budget", "--out", str(planfile))
    assert loud.err.startswith("Platform: ") and "Saved the plan to" in loud.err


def test_force_color_and_no_color_decide_the_colours(tmp_path: Path, platform: Platform) -> None:
    from tests.support.osmosis import _environ, cli_env

    osm = two_configs(tmp_path, platform)
    args = ["--dir", str(osm.repo), "--platform", platform.url, "--workspace", platform.workspace]

    def plan(env: dict[str, str]) -> str:
        import contextlib
        import io

        from reconciler.cli.plan import main as plan_main

        out, err = io.StringIO(), io.StringIO()
        with (
            _environ(cli_env(env)),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            assert plan_main(args) == 0, err.getvalue()
        return out.getvalue()

    assert "\x1b[" not in plan({})  # not a terminal
    assert "\x1b[32m+\x1b[0m tb/a" in plan({"FORCE_COLOR": "1"})
    assert "\x1b[" not in plan({"FORCE_COLOR": "1", "NO_COLOR": "1"})
