"""End-to-end GitOps behaviour on real temporary git repositories (issue 6, "Done when"):
provenance, shallow clones, ``Osmosis-Rerun`` / ``Osmosis-Skip`` trailers,
``--changed-since``, ``--watch`` and JSON logging, against the local Platform over loopback.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from tests.support.clock import FakeClock
from tests.support.emulator import stop_process
from tests.support.git import commit, git
from tests.support.osmosis import (
    SHA_RE,
    LineReader,
    Osmosis,
    Platform,
    actions,
    init_repo,
    json_lines,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    server = start_platform(tmp_path / "platform", clock=FakeClock())
    yield server
    server.close()


def history_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Three commits: add tb/a, add tb/b, then an unrelated change."""
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}, message="Add run a")
    shas = {"a": git(repo, "rev-parse", "HEAD")}
    write_config(repo, "tb/b", smoke_config("openai/gpt-5"))
    shas["b"] = commit(repo, "Add run b")
    (repo / "NOTES.md").write_text("unrelated\n", encoding="utf-8")
    shas["head"] = commit(repo, "Write notes")
    return repo, shas


# --------------------------------------------------------------------------- provenance


def test_provenance_is_shown_in_the_plan_and_recorded_on_apply(
    tmp_path: Path, platform: Platform
) -> None:
    repo, shas = history_repo(tmp_path)
    osm = Osmosis(repo, platform)

    text = osm.plan().out
    assert f'requested by {shas["a"][:7]} "Add run a"' in text
    assert f'requested by {shas["b"][:7]} "Add run b"' in text
    items = plan_items(osm.plan("--format", "json"))
    assert items["tb/a"]["requested_by"] == shas["a"]
    assert items["tb/b"]["requested_subject"] == "Add run b"

    assert osm.apply("--auto-approve").code == 0
    runs = read_lock(repo)["runs"]
    assert runs["tb/a"]["requested_by"] == shas["a"]
    assert runs["tb/b"]["requested_by"] == shas["b"]
    for entry in runs.values():
        assert entry["applied_at_commit"] == shas["head"]
        assert SHA_RE.match(entry["requested_by"])

    # Editing a config: the commit that changed it becomes its requester.
    write_config(repo, "tb/a", smoke_config("openai/gpt-5.4"))
    edit = commit(repo, "Move run a to gpt-5.4")
    replan = osm.plan("--format", "json")
    assert plan_items(replan)["tb/a"]["requested_by"] == edit
    assert osm.apply("--auto-approve").code == 0
    runs = read_lock(repo)["runs"]
    assert runs["tb/a"]["requested_by"] == edit and runs["tb/a"]["applied_at_commit"] == edit
    assert runs["tb/b"]["requested_by"] == shas["b"]


def test_a_shallow_clone_plans_and_says_the_history_is_missing(
    tmp_path: Path, platform: Platform
) -> None:
    repo, _shas = history_repo(tmp_path)
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)],
        check=True,
        capture_output=True,
    )
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    osm = Osmosis(clone, platform)

    result = osm.plan("--detailed-exitcode")
    assert result.code == 2, result
    assert "shallow clone" in result.out and "history" in result.out
    assert "tb/a" in result.out and "git fetch --unshallow" in result.out
    assert "requested by" not in result.out  # no made-up provenance
    doc = osm.plan("--format", "json").json()
    assert any("shallow clone" in w for w in doc["warnings"])

    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    runs = read_lock(clone)["runs"]
    assert all(e.get("requested_by") is None for e in runs.values())
    assert {e["applied_at_commit"] for e in runs.values()} == {git(clone, "rev-parse", "HEAD")}

    # A full clone of the same history has the provenance.
    full = tmp_path / "full"
    subprocess.run(
        ["git", "clone", "-q", f"file://{repo}", str(full)], check=True, capture_output=True
    )
    text = Osmosis(full, platform.in_workspace("full")).plan().out
    assert "shallow clone" not in text and '"Add run a"' in text


# --------------------------------------------------------------------------- trailers


def test_osmosis_rerun_trailer_reruns_an_unchanged_config_once(
    tmp_path: Path, platform: Platform
) -> None:
    repo, _shas = history_repo(tmp_path)
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    assert osm.plan("--detailed-exitcode").code == 0
    old_run = read_lock(repo)["runs"]["tb/a"]["run_id"]

    request = commit(repo, "Re-run a", "Osmosis-Rerun: tb/a", allow_empty=True)
    plan = osm.plan("--format", "json")
    assert set(actions(plan)) == {"tb/a"}
    item = plan_items(plan)["tb/a"]
    assert item["reason"] == "replace_requested" and item["action"] == "replace"
    assert item["requested_by"] == request
    assert f'requested by {request[:7]} "Re-run a"' in osm.plan().out

    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 3
    lock = read_lock(repo)
    assert lock["runs"]["tb/a"]["run_id"] != old_run
    assert lock["runs"]["tb/a"]["requested_by"] == request
    assert any(h["run_id"] == old_run for h in lock["history"])
    # Spent: the same trailer does not pay twice, committed lockfile or not.
    assert osm.plan("--detailed-exitcode").code == 0
    commit(repo, "Record the lockfile")
    assert osm.plan("--detailed-exitcode").code == 0
    assert platform.submits() == 3


def test_osmosis_skip_trailer_holds_a_config_back(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    write_config(repo, "tb/b", smoke_config("openai/gpt-5"))
    write_config(repo, "other/c", smoke_config("openai/gpt-5", attempts=2))
    commit(repo, "Add b and c", "Osmosis-Skip: tb/*")

    plan = osm.plan("--format", "json")
    assert actions(plan) == {"other/c": "submit"}
    assert any("tb/a" in w and "Osmosis-Skip" in w for w in plan.json()["warnings"])
    assert osm.apply("--auto-approve").code == 0
    assert sorted(read_lock(repo)["runs"]) == ["other/c"]


def test_osmosis_skip_holds_back_a_replace_but_not_the_ended_runs_download(
    tmp_path: Path,
) -> None:
    """A skip holds back what would change the config's runs, not the outputs of the run it
    already has: held back, the download would wait for a commit of the lockfile that an
    apply doing nothing else never makes (found by make lifecycle)."""
    clock = FakeClock()
    platform = start_platform(tmp_path / "platform", clock=clock)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
        osm = Osmosis(repo, platform)
        assert osm.apply("--auto-approve").code == 0
        commit(repo, "Record the lockfile")
        clock.advance(86400)  # the run ends; its outputs are not fetched yet
        write_config(repo, "tb/a", smoke_config(attempts=2))
        commit(repo, "Change a, not now", "Osmosis-Skip: tb/a")

        plan = osm.plan("--format", "json")
        assert actions(plan) == {"tb/a": "download"}
        warnings = plan.json()["warnings"]
        assert any("tb/a: submit held back by a skip" in w for w in warnings), warnings
        for _ in range(2):  # and again: the skip still holds the replace back
            assert osm.apply("--auto-approve").code == 0
            assert platform.submits() == 1
        entry = read_lock(repo)["runs"]["tb/a"]
        assert entry["status"] == "finished" and entry["downloads"]
    finally:
        platform.close()


def test_osmosis_skip_does_not_hold_back_the_run_a_lost_submit_answer_paid_for(
    tmp_path: Path,
) -> None:
    """The run of a submit whose answer was lost is recorded (adopted) under a skip: it was
    paid for before the skip, and held back it would stay unrecorded, its outputs never
    fetched, until a lockfile commit that no apply makes (found by make lifecycle: the
    re-run request that submit carried out looked lost)."""
    clock = FakeClock()
    platform = start_platform(
        tmp_path / "platform", clock=clock, faults=Faults(wrong_submit_reply_rate=1.0)
    )
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
        osm = Osmosis(repo, platform)
        first = osm.apply("--auto-approve")
        assert first.code == 1 and "intent is kept" in first.text, first
        assert "run_id" not in read_lock(repo)["runs"]["tb/a"]
        commit(repo, "Record the lockfile")
        write_config(repo, "tb/a", smoke_config(attempts=2))
        commit(repo, "Change a, not now", "Osmosis-Skip: tb/a")

        plan = osm.plan("--format", "json")
        assert actions(plan) == {"tb/a": "adopt"}
        warnings = plan.json()["warnings"]
        assert not any("adopt held back" in w for w in warnings), warnings
        assert osm.apply("--auto-approve").code == 0
        entry = read_lock(repo)["runs"]["tb/a"]
        assert entry["run_id"] and "intent" not in entry
        # The edit stays held back: the adopted run is not replaced while the skip holds.
        again = osm.plan("--format", "json")
        assert "tb/a" not in actions(again) or actions(again)["tb/a"] == "download"
        assert any("held back by a skip" in w for w in again.json()["warnings"])
        clock.advance(86400)
        assert osm.apply("--auto-approve").code == 0
        assert platform.submits() == 1
        assert read_lock(repo)["runs"]["tb/a"]["downloads"]
    finally:
        platform.close()


def test_changed_since_limits_the_plan_and_reports_the_rest_in_one_line(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(
        tmp_path / "repo", configs={"tb/a": smoke_config(), "tb/b": smoke_config("openai/gpt-5")}
    )
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    write_config(repo, "tb/c", smoke_config("openai/gpt-5", attempts=3))
    commit(repo, "Add c")
    osm = Osmosis(repo, platform)

    plan = osm.plan("--changed-since", base, "--format", "json")
    assert actions(plan) == {"tb/c": "submit"}
    assert plan.json()["other_pending"] == 2
    text = osm.plan("--changed-since", "main").out
    notes = [line for line in text.splitlines() if "2 other pending actions" in line]
    assert len(notes) == 1, text
    assert "+ tb/a" not in text and "+ tb/c" in text

    nothing = osm.plan("--changed-since", "HEAD", "--format", "json")
    assert actions(nothing) == {} and nothing.json()["other_pending"] == 3

    unknown = osm.plan("--changed-since", "no-such-rev")
    assert unknown.code == 1 and "no-such-rev" in unknown.err


# --------------------------------------------------------------------------- watch, logs


def test_watch_replans_when_a_config_changes(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    proc = osm.popen("osmosis-plan", "--watch")
    try:
        assert proc.stdout is not None
        out = LineReader(proc.stdout)
        first = out.wait_for("Watching benchmarks/", timeout=30)
        assert "+ tb/a" in first and "tb/b" not in first
        requests = platform.submits()
        write_config(repo, "tb/b", smoke_config("openai/gpt-5"))
        both = out.wait_for("Watching benchmarks/", timeout=30, count=2)
        second = both[len(first) :]
        assert "+ tb/a" in second and "+ tb/b" in second
        assert "Plan: 2 to submit" in second
        (repo / "benchmarks" / "tb" / "a.toml").unlink()
        third = out.wait_for("Watching benchmarks/", timeout=30, count=3)[len(both) :]
        assert "+ tb/b" in third and "tb/a" not in third
        assert platform.submits() == requests == 0
        assert proc.poll() is None, "watch must keep running"
    finally:
        stop_process(proc)


def test_json_logs_carry_the_command_address_and_run_id(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(
        tmp_path / "repo", configs={"tb/a": smoke_config(), "tb/b": smoke_config("openai/gpt-5")}
    )
    osm = Osmosis(repo, platform)
    result = osm.apply("--auto-approve", "--log-format", "json", "-v")
    assert result.code == 0, result
    lines = json_lines(result.err)
    assert lines, result.err
    non_json = [
        line
        for line in result.err.splitlines()
        if line.strip() and not line.startswith("{") and not line.startswith("Platform:")
    ]
    assert not non_json, non_json
    assert all(line["command"] == "osmosis-apply" for line in lines)
    runs = read_lock(repo)["runs"]
    by_address = {
        line["address"]: line for line in lines if line.get("address") and line.get("run_id")
    }
    assert set(by_address) == {"tb/a", "tb/b"}
    for address, line in by_address.items():
        assert line["run_id"] == runs[address]["run_id"]

    write_config(repo, "tb/c", smoke_config("openai/gpt-5", attempts=2))
    plan = osm.plan("--log-format", "json", "-vv")
    plan_lines = json_lines(plan.err)
    assert plan_lines and all(line["command"] == "osmosis-plan" for line in plan_lines)
    assert {line.get("address") for line in plan_lines} >= {"tb/c"}
    quiet = osm.plan("--log-format", "json")  # warnings and errors only by default
    assert json_lines(quiet.err) == []
