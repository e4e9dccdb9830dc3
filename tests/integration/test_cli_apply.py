"""End-to-end: ``osmosis-apply`` on real temp git repos against the local Platform over
loopback HTTP (issue 5, "Done when"): idempotence, stale saved plans, approval, the apply
lock held by another process, ``--wait`` with downloads, partial failure, SIGTERM.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from tests.support.clock import FakeClock
from tests.support.emulator import stop_process
from tests.support.git import commit
from tests.support.osmosis import (
    LineReader,
    Osmosis,
    Platform,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)


def repo_with(tmp_path: Path, platform: Platform, n: int = 2) -> Osmosis:
    configs = {f"tb/r{i}": smoke_config(attempts=i + 1) for i in range(n)}
    return Osmosis(init_repo(tmp_path / "repo", configs=configs), platform)


# --------------------------------------------------------------------------- idempotence


def test_apply_then_replan_is_empty_and_a_second_apply_changes_nothing(
    tmp_path: Path, platform: Platform
) -> None:
    osm = repo_with(tmp_path, platform, 3)
    first = osm.apply("--auto-approve")
    assert first.code == 0, first
    assert "Apply complete: 3 succeeded, 0 failed." in first.out
    assert platform.submits() == 3
    lock = read_lock(osm.repo)

    replan = osm.plan("--detailed-exitcode")
    assert replan.code == 0, replan
    assert "No changes." in replan.out

    assert platform.requests is not None
    platform.requests.reset()
    second = osm.apply("--auto-approve")
    assert second.code == 0, second
    assert platform.submits() == 3
    assert platform.requests.count("POST") == 0, platform.requests.lines
    assert read_lock(osm.repo) == lock, "a no-op apply must not rewrite the lockfile"
    assert not (osm.repo / "state" / ".osmosis.lock.held").exists()


# --------------------------------------------------------------------------- saved plans


def test_stale_saved_plans_are_refused(tmp_path: Path, platform: Platform) -> None:
    osm = repo_with(tmp_path, platform, 2)
    plans = tmp_path / "plans"
    plans.mkdir()

    def save(name: str, *args: str) -> Path:
        path = plans / f"{name}.plan.json"
        assert osm.plan("--out", str(path), *args).code == 0
        return path

    def refused(path: Path, why: str) -> None:
        before = platform.submits()
        result = osm.apply(str(path))
        assert result.code == 1, result
        assert "stale" in result.err and why in result.err, result
        assert "osmosis-plan" in result.err
        assert platform.submits() == before

    # The lockfile serial changes under a saved plan.
    serial_plan = save("serial", "--target", "tb/r0")
    assert osm.apply(str(save("other", "--target", "tb/r1"))).code == 0
    refused(serial_plan, "the lockfile changed")

    # A config changes under a saved plan.
    config_plan = save("config")
    write_config(osm.repo, "tb/r0", smoke_config("openai/gpt-5.4"))
    refused(config_plan, "configs changed: tb/r0")

    # HEAD moves under a saved plan (same files, same lockfile).
    commit(osm.repo, "Change r0")
    head_plan = save("head")
    commit(osm.repo, "Unrelated", allow_empty=True)
    refused(head_plan, "HEAD moved")

    fresh = save("fresh")
    result = osm.apply(str(fresh))
    assert result.code == 0, result
    assert platform.submits() == 2
    assert (
        read_lock(osm.repo)["runs"]["tb/r0"]["spec"]["agents"][0]["model"]["model"]
        == "openai/gpt-5.4"
    )


def test_apply_without_approval_and_without_a_terminal_refuses(
    tmp_path: Path, platform: Platform
) -> None:
    osm = repo_with(tmp_path, platform, 1)
    result = osm.run("osmosis-apply")  # a real process, stdin is /dev/null
    assert result.code == 1, result
    assert "--auto-approve" in result.err
    assert platform.submits() == 0
    assert not (osm.repo / "state" / "osmosis.lock").exists()


# --------------------------------------------------------------------------- lock, signals


def start_waiting_apply(osm: Osmosis) -> tuple[subprocess.Popen[str], LineReader]:
    """A real ``osmosis-apply --wait`` that submits, then waits (the clock never moves)."""
    proc = osm.popen("osmosis-apply", "--auto-approve", "--wait", "--wait-timeout", "300")
    assert proc.stdout is not None and proc.stderr is not None
    reader = LineReader(proc.stdout)
    reader.wait_for("Waiting for", timeout=30)
    return proc, reader


def test_a_lock_held_by_another_apply_is_reported_with_its_holder(
    tmp_path: Path, platform: Platform
) -> None:
    osm = repo_with(tmp_path, platform, 1)
    proc, _reader = start_waiting_apply(osm)
    try:
        busy = osm.apply("--auto-approve")
        assert busy.code == 1, busy
        assert f"pid {proc.pid}" in busy.err
        assert "running `osmosis-apply --dir" in busy.err
        assert "--auto-approve --wait --wait-timeout 300`" in busy.err
        assert "osmosis-apply --force-unlock" in busy.err
        lock_id = busy.err.split("--force-unlock ")[1].split()[0]
        # The holder is alive: forcing the lock open is refused, not done.
        forced = osm.apply("--force-unlock", lock_id)
        assert forced.code == 1, forced
        assert "still running" in forced.err
        assert platform.submits() == 1
    finally:
        stop_process(proc)
    after = osm.apply("--auto-approve")
    assert after.code == 0, after


def test_sigterm_during_wait_exits_130_releases_the_lock_and_keeps_the_lockfile(
    tmp_path: Path, platform: Platform
) -> None:
    osm = repo_with(tmp_path, platform, 2)
    proc, reader = start_waiting_apply(osm)
    try:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    finally:
        stop_process(proc)
    assert code == 130, reader.finish()
    lock = read_lock(osm.repo)  # parseable TOML
    assert sorted(lock["runs"]) == ["tb/r0", "tb/r1"]
    assert all(e.get("run_id") and "intent" not in e for e in lock["runs"].values())
    assert not (osm.repo / "state" / ".osmosis.lock.held").exists()
    again = osm.apply("--auto-approve", "--lock-timeout", "0")
    assert again.code == 0, again
    assert platform.submits() == 2


def test_a_lock_left_by_a_killed_apply_does_not_block(tmp_path: Path, platform: Platform) -> None:
    osm = repo_with(tmp_path, platform, 1)
    proc, _reader = start_waiting_apply(osm)
    proc.kill()  # SIGKILL: no clean-up at all
    proc.wait(timeout=10)
    stop_process(proc)
    assert (osm.repo / "state" / ".osmosis.lock.held").exists()  # left behind
    result = osm.apply("--auto-approve")
    assert result.code == 0, result
    assert platform.submits() == 1
    assert osm.plan("--detailed-exitcode").code == 0


# --------------------------------------------------------------------------- wait, downloads


def test_wait_then_download_records_every_file_hash(tmp_path: Path) -> None:
    server = start_platform(tmp_path / "fast-platform", speed=40.0)
    try:
        osm = repo_with(tmp_path, server, 2)
        result = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert result.code in (0, 3), result
        assert "Waiting for 2 run(s) to finish" in result.out
        lock = read_lock(osm.repo)
        for address, entry in lock["runs"].items():
            assert entry["status"] in ("finished", "failed"), address
            downloads = entry["downloads"]
            directory = osm.repo / downloads["directory"]
            assert directory.parent == osm.repo / ".osmosis" / "benchmarks"
            assert directory.name.startswith(entry["run_name"])
            assert downloads["sha256"], address
            for rel, digest in downloads["sha256"].items():
                data = (directory / rel).read_bytes()
                assert hashlib.sha256(data).hexdigest() == digest.removeprefix("sha256:")
            assert downloads["files"] == len(downloads["sha256"])
        assert not list((osm.repo / ".osmosis" / "benchmarks").rglob("*.partial"))
        replan = osm.plan("--detailed-exitcode")
        assert replan.code == 0, replan
    finally:
        server.close()


def test_wait_replace_downloads_the_rerun_once_it_ends_and_pays_once(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    # The re-plan after the wait must not carry --replace over: the re-run has ended, so what
    # is left is its download (a stopped run's too), not another paid re-run.
    osm = repo_with(tmp_path, platform, 1)
    assert osm.apply("--auto-approve").code == 0
    clock.advance(86400)
    assert osm.apply("--auto-approve").code == 0
    old = read_lock(osm.repo)["runs"]["tb/r0"]
    assert old["downloads"]["complete"] is True
    proc = osm.popen(
        "osmosis-apply", "--auto-approve", "--wait", "--wait-timeout", "300", "--replace", "tb/r0"
    )
    assert proc.stdout is not None
    reader = LineReader(proc.stdout)
    try:
        reader.wait_for("Waiting for", timeout=30)
        entry = read_lock(osm.repo)["runs"]["tb/r0"]
        assert entry["run_id"] != old["run_id"]
        with platform.client() as client:  # the re-run ends (stopped) while apply waits
            client.stop_run(entry["run_id"])
        assert proc.wait(timeout=60) == 0, reader.finish()
    finally:
        stop_process(proc)
    out = reader.finish()
    assert platform.submits() == 2, out
    assert f"↓ tb/r0: download {entry['run_name']} (run stopped): ok:" in out, out
    after = read_lock(osm.repo)["runs"]["tb/r0"]
    assert after["run_id"] == entry["run_id"] and after["status"] == "stopped"
    assert after["downloads"]["complete"] is True, after
    # Nothing is left to do, and another apply pays nothing.
    assert osm.plan("--detailed-exitcode").code == 0
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 2


# --------------------------------------------------------------------------- partial failure


def test_a_failed_action_gives_exit_3_and_the_others_are_recorded(tmp_path: Path) -> None:
    # A workspace limit no client can know: the Platform refuses the submit it is asked for.
    platform = start_platform(tmp_path / "p", faults=Faults(workspace_concurrency_limit=1))
    try:
        doomed = smoke_config("anthropic/claude-sonnet-4", secret="ANTHROPIC_API_KEY").replace(
            "max_concurrent_attempts = 1", "max_concurrent_attempts = 2"
        )
        osm = Osmosis(
            init_repo(tmp_path / "repo", configs={"tb/ok": smoke_config(), "tb/doomed": doomed}),
            platform,
        )
        result = osm.apply("--auto-approve")
        assert result.code == 3, result
        assert "Apply complete: 1 succeeded, 1 failed." in result.out
        assert "tb/doomed" in result.out.split("Apply complete")[1]
        runs = read_lock(osm.repo)["runs"]
        assert sorted(runs) == ["tb/ok"] and runs["tb/ok"]["run_id"]
        assert platform.submits() == 1
        # The refusal is remembered: the config is blocked until it changes.
        replan = osm.plan("--format", "json")
        assert [(a["address"], a["action"]) for a in replan.json()["actions"]] == [
            ("tb/doomed", "blocked")
        ]
    finally:
        platform.close()


def test_a_submit_blocked_between_plan_and_apply_is_reported_not_failed(
    tmp_path: Path, platform: Platform
) -> None:
    """Issue 34: a blocked item never sets the apply's exit code by itself; the plan that
    first shows it fails the check instead (exit 4)."""
    osm = Osmosis(
        init_repo(
            tmp_path / "repo",
            configs={
                "tb/ok": smoke_config(),
                "tb/doomed": smoke_config("anthropic/claude-sonnet-4", secret="ANTHROPIC_API_KEY"),
            },
        ),
        platform,
    )
    planfile = tmp_path / "all.plan.json"
    assert osm.plan("--out", str(planfile)).code == 0
    platform.delete_secret("ANTHROPIC_API_KEY")  # between plan and apply

    result = osm.apply(str(planfile))
    assert result.code == 0, result
    assert "Apply complete: 1 succeeded, 0 failed, 1 blocked (not attempted)." in result.out
    assert "ANTHROPIC_API_KEY" in result.out.split("Apply complete")[1]
    assert sorted(read_lock(osm.repo)["runs"]) == ["tb/ok"]
    assert platform.submits() == 1
    assert osm.plan().code == 4


# --------------------------------------------------------------------------- figures


@pytest.mark.perf
def test_figures_200_submits_with_50ms_latency_parallelism_1_vs_8(tmp_path: Path) -> None:
    """Prints medians; asserts only that every submit happened exactly once.

    Run: ``.venv/bin/python -m pytest -m perf -s -p no:cacheprovider
    tests/integration/test_cli_apply.py``.
    """
    import statistics

    n = int(os.environ.get("E2E_APPLY_SUBMITS", "200"))
    rounds = int(os.environ.get("E2E_APPLY_ROUNDS", "3"))
    server = start_platform(tmp_path / "platform", clock=FakeClock(), faults=Faults(latency_ms=50))
    times: dict[int, list[float]] = {1: [], 8: []}
    try:
        for r in range(rounds):
            for parallelism in (1, 8):
                configs = {
                    f"p{parallelism}/r{r}/c{i:03d}": smoke_config(attempts=1 + i % 16).replace(
                        "max_concurrent_attempts = 1",
                        f"max_concurrent_attempts = {1 + (i // 16) % 64}",
                    )
                    for i in range(n)
                }
                repo = init_repo(tmp_path / f"repo-{parallelism}-{r}", configs=configs)
                osm = Osmosis(repo, server.in_workspace(f"perf-{parallelism}-{r}"))
                before = osm.platform.submits()
                started = time.monotonic()
                result = osm.apply("--auto-approve", "--parallelism", str(parallelism))
                times[parallelism].append(time.monotonic() - started)
                assert result.code == 0, result.err
                assert osm.platform.submits() - before == n
                assert len(read_lock(repo)["runs"]) == n
        print(
            f"\n[figures] apply of {n} submits, 50 ms injected latency, loopback local "
            f"Platform: parallelism 1 median {statistics.median(times[1]):.2f}s "
            f"({', '.join(f'{t:.2f}' for t in times[1])}), parallelism 8 median "
            f"{statistics.median(times[8]):.2f}s ({', '.join(f'{t:.2f}' for t in times[8])})"
        )
    finally:
        server.close()


# --------------------------------------------------------------------------- outcomes (issue 16)


def test_a_wait_that_runs_out_names_the_active_runs_keeps_the_lockfile_and_exits_4(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = repo_with(tmp_path, platform, 2)
    result = osm.apply("--auto-approve", "--wait", "--wait-timeout", "0")
    assert result.code == 4, result
    out = result.out
    assert "The wait ran out after 0 s; 2 run(s) still active:" in out
    runs = read_lock(osm.repo)["runs"]
    for address, entry in runs.items():
        assert f"  {address} {entry['run_name']}: pending" in out
        assert entry["run_id"] and "intent" not in entry
    assert (
        "Apply complete: 2 succeeded, 0 failed. The wait ran out with 2 run(s) still active." in out
    )
    help_text = osm.apply("--help").out
    assert "4  only with --wait: everything applied, but the wait ran out" in help_text
    # Nothing was lost: once the runs end, the next apply --wait only downloads.
    clock.advance(86400)
    again = osm.apply("--auto-approve", "--wait", "--wait-timeout", "30")
    assert again.code in (0, 3), again
    assert platform.submits() == 2


def test_apply_lines_say_blocked_once_and_show_runs_that_did_not_finish(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = Osmosis(
        init_repo(
            tmp_path / "repo",
            configs={
                "tb/a": smoke_config(),
                "tb/b": smoke_config(attempts=2),
                "tb/locked": smoke_config(secret="NEVER_STORED_KEY"),
            },
        ),
        platform,
    )
    first = osm.apply("--auto-approve")
    assert first.code == 0, first  # issue 34: a blocked item is no failure by itself
    (blocked,) = [line for line in first.out.splitlines() if line.startswith("! tb/locked")]
    assert blocked.startswith(
        "! tb/locked: blocked: not attempted: Secret(s) not found: NEVER_STORED_KEY"
    ), blocked
    assert "FAILED" not in blocked and blocked.count("blocked") == 1, blocked
    assert (
        "  ! tb/locked (blocked, not attempted): Secret(s) not found: NEVER_STORED_KEY" in first.out
    )

    # tb/a is stopped outside the tool; once both runs have ended, the download lines and
    # the closing lines show which run did not finish, with the command that re-runs it.
    stopped = read_lock(osm.repo)["runs"]["tb/a"]
    with platform.client() as client:
        client.stop_run(stopped["run_id"])
    clock.advance(86400)
    (tmp_path / "repo" / "benchmarks" / "tb" / "locked.toml").unlink()
    commit(osm.repo, "Drop the blocked config")
    statuses = platform.statuses()
    second = osm.apply("--auto-approve", "--wait", "--wait-timeout", "30")
    assert second.code == 0, second
    assert f"↓ tb/a: download {stopped['run_name']} (run stopped): ok:" in second.out
    assert (
        f"  tb/a {stopped['run_name']}: stopped; re-run it with `osmosis-apply --replace tb/a`"
        in (second.out)
    )
    b = read_lock(osm.repo)["runs"]["tb/b"]
    if statuses[b["run_id"]] == "finished":
        assert "1 run(s) ended without finishing:" in second.out
        assert f"↓ tb/b: download {b['run_name']}: ok:" in second.out


def test_a_saved_plan_is_applied_with_fresh_statuses(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    # The run ended after it was recorded: the saved plan downloads it, and the apply of that
    # plan re-observes, so the download is recorded as complete and with the run's scores.
    osm = repo_with(tmp_path, platform, 1)
    assert osm.apply("--auto-approve").code == 0
    assert read_lock(osm.repo)["runs"]["tb/r0"]["status"] != "finished"
    clock.advance(48 * 3600)
    planfile = tmp_path / "download.plan.json"
    assert osm.plan("--out", str(planfile)).code == 0
    applied = osm.apply(str(planfile))
    assert applied.code == 0, applied
    entry = read_lock(osm.repo)["runs"]["tb/r0"]
    assert entry["status"] in ("finished", "failed")
    assert entry["downloads"]["complete"] is True
    assert "results" in entry
