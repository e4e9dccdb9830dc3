"""The smoke stage end to end (docs/smoke.md): over loopback HTTP to the local Platform, in
real git repositories, through the CLI entry points."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.clock import FakeClock as ManualClock
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    Platform,
    init_repo,
    plan_items,
    read_lock,
    write_config,
)

SETTINGS = """\
[tool.osmosis-reconciler]

[[tool.osmosis-reconciler.smoke]]
addresses = ["tb/**"]
above = 10
"""

FINISHED = 4000.0
"""Seconds after which every run of these tests has ended on the local Platform."""


def full_config(model: str = "openai/gpt-5.2", endpoint: str | None = None) -> str:
    """Every task of Terminal-Bench 2.1, one agent, two attempts per task."""
    if endpoint is None:
        model_table = f'type = "provider"\nmodel = "{model}"\napi_key_secret = "OPENAI_API_KEY"\n'
    else:
        model_table = (
            'type = "endpoint"\n'
            f'model = "{model}"\n'
            f'base_url = "{endpoint}"\n'
            'api_key_secret = "MY_ENDPOINT_KEY"\n'
        )
    return (
        "[experiment]\n"
        'benchmark = "terminal-bench-2-1"\n\n'
        "[[agents]]\n"
        'harness = "terminus-2"\n\n'
        "[agents.model]\n" + model_table + "\n"
        "[execution]\n"
        "attempts_per_task = 2\n"
        "max_concurrent_attempts = 4\n"
    )


def repo_with(tmp_path: Path, text: str) -> Path:
    return init_repo(tmp_path / "repo", configs={"tb/full": text}, pyproject=SETTINGS)


def test_smoke_then_full_run(tmp_path: Path, platform: Platform, clock: ManualClock) -> None:
    repo = repo_with(tmp_path, full_config())
    osm = Osmosis(repo, platform)

    first = osm.plan()
    assert first.code == 0, first
    assert "+ tb/full (smoke first: 1 attempt, then " in first.out
    # The PR comment (markdown) shows the same line.
    assert "+ tb/full (smoke first: 1 attempt, then " in osm.plan("--format", "markdown").out
    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert item["action"] == "submit"
    assert item["attempts"] == 1
    assert item["smoke"]["stage"] == "smoke"
    full_attempts = item["smoke"]["full_attempts"]
    assert full_attempts > 10
    task = item["smoke"]["tasks"][0]
    assert item["spec"]["tasks_config"] == {"task_names": [task]}
    assert item["spec"]["execution_config"]["attempts_per_task"] == 1

    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    lock = read_lock(repo)
    entry = lock["runs"]["tb/full"]
    assert entry["stage"] == "smoke"
    assert entry["attempts"] == 1
    assert lock["version"] == 3
    smoke_run = entry["run_id"]

    # While the smoke run runs, nothing is submitted.
    assert "tb/full" not in plan_items(osm.plan("--format", "json"))

    clock.advance(FINISHED)
    after = osm.plan("--format", "json")
    full = plan_items(after)["tb/full"]
    assert full["action"] == "submit", after
    assert full["reason"] == "smoke_passed"
    assert full["attempts"] == full_attempts
    assert full["smoke"] == {
        "stage": "full",
        "smoke_attempts": 0,
        "full_attempts": full_attempts,
        "tasks": [],
        "smoke_run_id": smoke_run,
    }
    assert "(full run: the smoke run ended well)" in osm.plan().out

    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    lock = read_lock(repo)
    entry = lock["runs"]["tb/full"]
    assert "stage" not in entry
    assert entry["attempts"] == full_attempts
    assert entry["run_id"] != smoke_run
    history = [h for h in lock["history"] if h["address"] == "tb/full"]
    assert [(h["run_id"], h["reason"], h["stage"]) for h in history] == [
        (smoke_run, "smoke", "smoke")
    ]


def test_failing_endpoint_blocks_the_full_run(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    text = full_config("my-org/model", endpoint="https://always-errors.example.invalid/v1")
    repo = repo_with(tmp_path, text)
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    smoke_run = read_lock(repo)["runs"]["tb/full"]["run_id"]
    clock.advance(FINISHED)

    plan = osm.plan("--format", "json")
    item = plan_items(plan)["tb/full"]
    assert item["action"] == "blocked"
    assert item["reason"] == "smoke_failed"
    assert item["attempts"] == 0
    assert any("the smoke run ended failed" in d for d in item["details"])
    # The attempts not paid, and no drift: the failed smoke run is the item's business.
    assert any("the full run (178 attempts) is not submitted" in d for d in item["details"])
    assert plan.json()["drift"] == []
    assert any("--skip-smoke tb/full" in d for d in item["details"])
    text_plan = osm.plan().out
    assert "(full run blocked: the smoke run did not end well)" in text_plan

    # Applying does not submit the full run: the smoke run is the only run there is.
    applied = osm.apply("--auto-approve")
    assert applied.code != 0 or "blocked" in applied.text
    assert platform.submits() == 1
    assert "not submitted" in applied.text or "blocked" in applied.text
    lock = read_lock(repo)
    assert lock["runs"]["tb/full"]["run_id"] == smoke_run
    assert lock["runs"]["tb/full"]["stage"] == "smoke"

    # Editing the config starts a new smoke run.
    write_config(repo, "tb/full", full_config("my-org/model", "https://fixed.example.invalid/v1"))
    commit(repo, "Fix the endpoint")
    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert item["action"] == "submit"
    assert item["smoke"]["stage"] == "smoke"
    assert item["attempts"] == 1


def test_skip_smoke_flag_and_trailer(tmp_path: Path, platform: Platform) -> None:
    repo = repo_with(tmp_path, full_config())
    osm = Osmosis(repo, platform)
    item = plan_items(osm.plan("--format", "json", "--skip-smoke", "tb/*"))["tb/full"]
    assert item["smoke"]["stage"] == "skipped"
    assert item["attempts"] == item["smoke"]["full_attempts"] > 10
    assert "+ tb/full (smoke stage skipped on request)" in osm.plan("--skip-smoke", "tb/full").out

    commit(repo, "Run it in full\n\nOsmosis-Skip-Smoke: tb/full", allow_empty=True)
    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert item["smoke"]["stage"] == "skipped"
    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    entry = read_lock(repo)["runs"]["tb/full"]
    assert "stage" not in entry
    assert entry["attempts"] == item["attempts"]


def test_apply_wait_carries_both_stages(tmp_path: Path) -> None:
    from tests.support.osmosis import start_platform

    # A Platform on the real clock, sped up, so `--wait` sees both runs end.
    platform = start_platform(tmp_path / "fast-platform", speed=400.0)
    try:
        repo = repo_with(tmp_path, full_config())
        osm = Osmosis(repo, platform)
        applied = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert applied.code == 0, applied
        lock = read_lock(repo)
        entry = lock["runs"]["tb/full"]
        assert "stage" not in entry
        assert entry["status"] in ("finished", "failed")
        assert entry["attempts"] > 10
        history = [h for h in lock["history"] if h["address"] == "tb/full"]
        assert [(h["reason"], h["stage"]) for h in history] == [("smoke", "smoke")]
    finally:
        platform.close()


def test_a_crash_after_the_smoke_post_adopts_the_smoke_run(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    repo = repo_with(tmp_path, full_config())
    osm = Osmosis(repo, platform)
    crashed = osm.run(
        "osmosis-apply", "--auto-approve", env={"OSMOSIS_CRASH_AT": "submit.after_post"}
    )
    assert crashed.code == -9, crashed
    entry = read_lock(repo)["runs"]["tb/full"]
    assert entry["intent"]["stage"] == "smoke"
    assert "run_id" not in entry

    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert item["action"] == "adopt"
    assert item["smoke"]["stage"] == "smoke"
    assert osm.apply("--auto-approve").code == 0
    entry = read_lock(repo)["runs"]["tb/full"]
    assert entry["stage"] == "smoke"
    assert "intent" not in entry
    # One run on the Platform: the smoke run, paid once.
    assert platform.submits() == 1
    with platform.client() as client:
        assert [r.id for r in client.list_runs()] == [entry["run_id"]]

    clock.advance(FINISHED)
    full = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert (full["action"], full["smoke"]["stage"]) == ("submit", "full")


RECOVERY = """\
unknown_outcome_listings = 1
unknown_outcome_quiet_minutes = 0
"""


def _smoke_ended_well(tmp_path: Path, platform: Platform, clock: ManualClock, extra: str = ""):
    """A repository whose smoke run of tb/full ended well: (repo, osm, smoke run id)."""
    settings = SETTINGS.replace(
        "[tool.osmosis-reconciler]\n", "[tool.osmosis-reconciler]\n" + extra
    )
    repo = init_repo(tmp_path / "repo", configs={"tb/full": full_config()}, pyproject=settings)
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    smoke_run = read_lock(repo)["runs"]["tb/full"]["run_id"]
    clock.advance(FINISHED)
    return repo, osm, smoke_run


def test_a_crash_before_the_full_runs_post_goes_on_with_the_full_run(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    # A run list that settles an unknown outcome at once: the lost full submit is sent
    # again by the next apply, as the full run (the smoke run ended well and is recorded).
    repo, osm, smoke_run = _smoke_ended_well(tmp_path, platform, clock, RECOVERY)
    crashed = osm.run(
        "osmosis-apply", "--auto-approve", env={"OSMOSIS_CRASH_AT": "submit.before_post:1"}
    )
    assert crashed.code == -9, crashed
    assert platform.submits() == 1  # the full run was never created
    entry = read_lock(repo)["runs"]["tb/full"]
    assert "stage" not in entry["intent"]
    # The next plan's run list is read after the submit (whole seconds, on the real clock).
    time.sleep(1.1)

    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert item["action"] == "submit", item
    assert item["reason"] == "resubmit_after_lost"
    assert item["smoke"]["stage"] == "full"
    assert item["smoke"]["smoke_run_id"] == smoke_run
    assert item["attempts"] == item["smoke"]["full_attempts"] > 10
    assert "(full run: the smoke run ended well)" in osm.plan().out

    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    assert platform.submits() == 2  # the smoke run and the full run, each paid once
    lock = read_lock(repo)
    entry = lock["runs"]["tb/full"]
    assert "stage" not in entry and "intent" not in entry
    assert entry["attempts"] == item["attempts"]
    history = [(h["run_id"], h["stage"]) for h in lock["history"] if h["address"] == "tb/full"]
    assert (smoke_run, "smoke") in history
    assert all(run_id == smoke_run for run_id, stage in history if stage == "smoke")


def test_a_lost_full_submit_is_an_unknown_outcome_never_a_new_smoke_run(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    # The shipped quiet period: the full run's outcome stays unknown (`?`) for a while.
    repo, osm, smoke_run = _smoke_ended_well(tmp_path, platform, clock)
    crashed = osm.run(
        "osmosis-apply", "--auto-approve", env={"OSMOSIS_CRASH_AT": "submit.before_post:1"}
    )
    assert crashed.code == -9, crashed
    plan = osm.plan("--format", "json")
    item = plan_items(plan)["tb/full"]
    assert item["action"] == "unknown", item
    assert item["smoke"]["stage"] == "full"
    assert item["smoke"]["smoke_run_id"] == smoke_run
    assert "? tb/full (full run: the smoke run ended well)" in osm.plan().out
    applied = osm.apply("--auto-approve")
    assert platform.submits() == 1, applied
    assert read_lock(repo)["runs"]["tb/full"]["intent"] is not None

    # A person who knows the POST never went out says so: the next apply sends the full
    # run, never a second smoke run.
    resolved = osm.run("osmosis-state", "resolve", "tb/full", "--not-submitted")
    assert resolved.code == 0, resolved
    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert (item["action"], item["smoke"]["stage"]) == ("submit", "full"), item
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 2
    entry = read_lock(repo)["runs"]["tb/full"]
    assert "stage" not in entry and "intent" not in entry
    assert entry["attempts"] > 10


def _failed_smoke(tmp_path: Path, platform: Platform, clock: ManualClock) -> tuple[Path, Osmosis]:
    text = full_config("my-org/model", endpoint="https://always-errors.example.invalid/v1")
    repo = repo_with(tmp_path, text)
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    clock.advance(FINISHED)
    return repo, osm


def test_the_blocked_full_run_quotes_the_smoke_runs_last_error_lines(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    repo, osm = _failed_smoke(tmp_path, platform, clock)
    run = read_lock(repo)["runs"]["tb/full"]
    label = run.get("run_name") or run["run_id"]
    why = "Run failed: every attempt errored: the model endpoint answered 502 Bad Gateway"

    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    details = item["details"]
    assert f"see why: `osmosis-logs tb/full@{label} --level warning`" in details[1]
    assert details[2] == "the smoke run's last error lines:"
    quoted = [d for d in details if d.startswith("    ")]
    assert 1 <= len(quoted) <= 3
    assert why in quoted[-1] and "ERROR" in quoted[-1]
    assert details[-1].startswith("fix: correct the config")

    text = osm.plan()
    assert "* the smoke run's last error lines:" in text.out
    assert why in text.out
    comment = osm.plan("--format", "markdown").out
    assert "the smoke run's last error lines:" in comment
    assert "the model endpoint answered 502 Bad Gateway" in comment
    # The apply reports the blocked item on one line, the quoted lines after their colon.
    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied  # issue 34: reported, not a failure
    line = next(x for x in applied.out.splitlines() if "lines: " in x and "tb/full" in x)
    assert "last error lines: " in line and ":;" not in line and why in line, line
    # The command the blocked reason names shows the same line.
    logs = osm.run("osmosis-logs", f"tb/full@{label}", "--level", "warning")
    assert logs.code == 0, logs
    assert why in logs.out


def test_a_log_that_cannot_be_read_never_fails_the_plan(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    from reconciler.local_platform import Faults

    repo, osm = _failed_smoke(tmp_path, platform, clock)
    normal = osm.plan()
    assert "the smoke run's last error lines:" in normal.out

    # The log store answers errors: the plan says so, and is otherwise the same plan.
    platform.platform.faults = Faults(failing_logs=True)
    failing = osm.plan("--format", "json")
    assert failing.code == normal.code, failing
    item = plan_items(failing)["tb/full"]
    assert (item["action"], item["reason"]) == ("blocked", "smoke_failed")
    (said,) = [d for d in item["details"] if "log lines could not be fetched" in d]
    assert "Injected log store error" in said or "500" in said, said
    assert not any(d.startswith("    ") for d in item["details"])

    # The log never answers: the plan's deadline for it runs out, and the plan goes on.
    platform.platform.faults = Faults(silent_logs=True)
    started = time.monotonic()
    silent = osm.run("osmosis-plan", env={"OSMOSIS_SMOKE_LOG_DEADLINE": "1"})
    took = time.monotonic() - started
    assert silent.code == normal.code, silent
    assert "* the smoke run's log lines could not be fetched: not within the 1 s" in silent.out
    assert "(full run blocked: the smoke run did not end well)" in silent.out
    print(f"plan with a silent log store and a 1 s deadline: {took:.1f} s")
    platform.platform.faults = Faults()


def test_a_smoke_run_is_never_a_baseline_nor_the_gates_newest_run(
    tmp_path: Path, platform: Platform, clock: ManualClock
) -> None:
    repo, osm, smoke_run = _smoke_ended_well(tmp_path, platform, clock)
    smoke = read_lock(repo)["runs"]["tb/full"]
    smoke_label = smoke.get("run_name") or smoke_run

    refused = osm.run("osmosis-results", "accept", f"tb/full@{smoke_label}")
    assert refused.code == 1, refused
    assert f"tb/full@{smoke_label} is a smoke run" in refused.err
    assert "a smoke run is never a baseline" in refused.err
    assert "has none yet" in refused.err  # no full run to accept instead yet
    assert "baselines" not in read_lock(repo)

    # The full run, ended and downloaded: the run to accept, and the one the error names.
    assert osm.apply("--auto-approve").code == 0
    clock.advance(FINISHED)
    assert osm.apply("--auto-approve").code == 0
    full = read_lock(repo)["runs"]["tb/full"]
    full_label = full.get("run_name") or full["run_id"]
    refused = osm.run("osmosis-results", "accept", f"tb/full@{smoke_label}")
    assert refused.code == 1, refused
    assert f"`osmosis-results accept tb/full@{full_label}`" in refused.err
    accepted = osm.run("osmosis-results", "accept", f"tb/full@{full_label}")
    assert accepted.code == 0, accepted

    # A changed config starts a new smoke run: the address's newest run, but the gate checks
    # the newest full run (the baseline itself here), never the smoke run.
    write_config(repo, "tb/full", full_config("openai/gpt-5.2-mini"))
    commit(repo, "Try the smaller model")
    assert osm.apply("--auto-approve").code == 0
    new_smoke = read_lock(repo)["runs"]["tb/full"]
    assert new_smoke["stage"] == "smoke"
    clock.advance(FINISHED)
    gate = osm.run("osmosis-results", "--fail-on-regression", "--format", "json")
    assert gate.code == 0, gate
    doc = gate.json()
    assert doc["regression_checks"] == []
    assert doc["regressed"] is False
    # "vs previous": no run is compared with a smoke run, nor a smoke run with a run.
    runs = {r["run_id"]: r for r in doc["addresses"][0]["runs"]}
    smoke_ids = {smoke_run, new_smoke["run_id"]}
    for run_id, run in runs.items():
        if run_id in smoke_ids:
            assert run["previous_comparable"] is None, run
        else:
            assert run["previous_comparable"] not in {smoke_label, *smoke_ids}, run


def test_a_lost_submit_of_a_full_run_that_skipped_its_smoke_stage_is_sent_again_in_full(
    tmp_path: Path, platform: Platform
) -> None:
    settings = SETTINGS.replace(
        "[tool.osmosis-reconciler]\n", "[tool.osmosis-reconciler]\n" + RECOVERY
    )
    repo = init_repo(tmp_path / "repo", configs={"tb/full": full_config()}, pyproject=settings)
    osm = Osmosis(repo, platform)
    crashed = osm.run(
        "osmosis-apply",
        "--auto-approve",
        "--skip-smoke",
        "tb/full",
        env={"OSMOSIS_CRASH_AT": "submit.before_post:1"},
    )
    assert crashed.code == -9, crashed
    assert platform.submits() == 0
    time.sleep(1.1)  # the next plan's run list is read after the submit (whole seconds)
    # No --skip-smoke now: what was sent (the full run) is what is sent again.
    item = plan_items(osm.plan("--format", "json"))["tb/full"]
    assert (item["action"], item["reason"]) == ("submit", "resubmit_after_lost"), item
    assert item["smoke"]["stage"] == "full" and item["smoke"]["smoke_run_id"] is None
    assert item["attempts"] == item["smoke"]["full_attempts"] > 10
    assert "+ tb/full (full run: its lost submit sent again)" in osm.plan().out
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 1
    assert "stage" not in read_lock(repo)["runs"]["tb/full"]
