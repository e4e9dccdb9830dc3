"""Existing, shared workspaces (issue 14) and the lockfile/list holes of issue 17, end to end
over loopback HTTP against the local Platform, with real git repositories.

* Runs this repository did not request are unmanaged: one summary line, not drift, not a
  reason for ``--detailed-exitcode`` to say 2.
* A run is adopted only when it can only be this repository's; another repository's older
  identical run is not, and a duplicate made by hand after the config was committed is
  drift that names both runs.
* A converged plan reads the newest page of the run list and the recorded runs that can
  still change: its cost does not grow with the workspace's history.
* A recorded run is missing only when a direct read says so; a wrong-shaped submit reply or
  a 429 after the run was committed never leads to a second paid run; a lockfile of another
  repository or lineage is refused.
"""

from __future__ import annotations

import contextlib
import shutil
import tomllib
from pathlib import Path

from reconciler.config.spec import build_spec
from reconciler.local_platform import Faults
from reconciler.local_platform.history import HISTORY_TEAM
from reconciler.model import RunStatus
from tests.support.clock import FakeClock
from tests.support.git import commit, git
from tests.support.osmosis import (
    COLLEAGUE_TOKEN,
    Osmosis,
    Platform,
    RequestLog,
    init_repo,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

HOUR = 3600.0


def body_of(config: str) -> dict:
    """The submit body a config asks for (what a person submitting it by hand sends)."""
    return build_spec(tomllib.loads(config))


def submit_by_hand(platform: Platform, config: str) -> tuple[str, str]:
    """A colleague submits ``config`` by hand (their own token, not this repository's)."""
    with contextlib.closing(platform.client(COLLEAGUE_TOKEN)) as client:
        run = client.submit_run(body_of(config))
    return run.id, run.name


def others(platform: Platform, clock: FakeClock, n: int, *, hours_ago: float = 0) -> None:
    """``n`` ended runs made elsewhere by the workspace's other people (another model), in
    the hour before ``hours_ago`` on the Platform's clock: the local Platform's history."""
    saved = clock.now
    clock.now -= hours_ago * HOUR
    try:
        platform.platform.seed_runs(
            platform.workspace,
            n,
            body=body_of(smoke_config("vendor/elsewhere")),
            created_from=clock.now - HOUR,
            status_mix={RunStatus.FINISHED: 0.9, RunStatus.FAILED: 0.1},
            creators=HISTORY_TEAM,
        )
    finally:
        clock.now = saved


def commit_at(repo: Path, message: str, when: str) -> None:
    """Commit everything with a fixed committer date (when the config reached the branch)."""
    git(repo, "add", "-A")
    git(
        repo,
        "commit",
        "-q",
        "-m",
        message,
        env={"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when},
    )


def finish_all(osm: Osmosis, clock: FakeClock) -> None:
    """Let every run end and download its outputs; commit the lockfile."""
    clock.advance(48 * HOUR)
    done = osm.apply("--auto-approve")
    assert done.code == 0, done
    commit(osm.repo, "Record the runs")


# --------------------------------------------------------------------------- unmanaged


def test_runs_made_elsewhere_are_one_line_not_drift(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    others(platform, clock, 7, hours_ago=5)
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    finish_all(osm, clock)

    plan = osm.plan("--detailed-exitcode")
    assert plan.code == 0, plan
    assert "No changes." in plan.out
    assert "7 other runs in workspace e2e are not managed by this repository" in plan.out
    assert "~" not in plan.out and "Drift" not in plan.out
    assert len(plan.out.splitlines()) <= 10, plan.out

    listed = osm.plan("--show-unmanaged", "--format", "json")
    doc = listed.json()
    assert doc["unmanaged_count"] == 7
    assert len(doc["unmanaged"]) == 7 and doc["drift"] == []
    assert {u["benchmark_name"] for u in doc["unmanaged"]} == {"Terminal-Bench 2.1"}
    # Issue 37: each names its creator (the seeded team), in the JSON and the text.
    team = {user.name for user in HISTORY_TEAM}
    assert {u["creator_name"] for u in doc["unmanaged"]} <= team
    rows = [line for line in osm.plan("--show-unmanaged").out.splitlines() if " · created " in line]
    assert len(rows) == 7 and all(any(row.endswith(f" by {n}") for n in team) for row in rows)


def test_unmanaged_setting_ignore_hides_the_line(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    others(platform, clock, 2, hours_ago=5)
    pyproject = '[tool.osmosis-reconciler]\nunmanaged = "ignore"\n'
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}, pyproject=pyproject)
    plan = Osmosis(repo, platform).plan()
    assert "not managed" not in plan.out


def test_converged_plan_cost_does_not_grow_with_history(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    requests = platform.requests
    assert requests is not None
    counts = []
    for round_, extra in enumerate((60, 300)):
        others(platform, clock, extra, hours_ago=10)
        repo = init_repo(tmp_path / f"repo{round_}", configs={"tb/a": smoke_config(f"m/{round_}")})
        osm = Osmosis(repo, platform)
        assert osm.apply("--auto-approve").code == 0
        finish_all(osm, clock)
        requests.reset()
        plan = osm.plan("--detailed-exitcode")
        assert plan.code == 0, plan
        counts.append(len(requests.lines))
    # One page of the list, one catalog read, one secrets list: the same at 61 and 361 runs.
    assert counts[0] == counts[1] <= 4, counts

    full = osm.plan("--refresh", "full", "--detailed-exitcode")
    assert full.code == 0, full
    assert requests.count("GET /api/cli/benchmark-runs") > 3


# --------------------------------------------------------------------------- adoption


def test_another_repositorys_older_identical_run_is_not_adopted(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    config = smoke_config()
    theirs, name = submit_by_hand(platform, config)
    repo = tmp_path / "repo"
    init_repo(repo, configs={})
    write_config(repo, "tb/a", config)
    # This repository's config reaches its branch well after the other team's run.
    commit_at(repo, "Add the smoke run", "2099-01-01T00:00:00Z")
    osm = Osmosis(repo, platform)

    plan = osm.plan()
    # Not adopted (no evidence), and, while it runs, not paid for twice either (issue 34):
    # the submit waits for a person's decision.
    assert "! tb/a" in plan.out, plan
    assert f"run {name} ({theirs}) is " in plan.out and "nothing this repository" in plan.out
    assert f"osmosis-state adopt tb/a {theirs}" in plan.out
    osm.apply("--auto-approve")
    assert platform.submits() == 1

    applied = osm.apply("--auto-approve", "--allow-duplicate", "tb/a")
    assert applied.code == 0, applied
    assert platform.submits() == 2
    assert read_lock(repo)["runs"]["tb/a"]["run_id"] != theirs


def test_a_duplicate_made_by_hand_after_the_commit_is_drift_naming_both(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    config = smoke_config()
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": config}), platform)
    assert osm.apply("--auto-approve").code == 0
    ours = read_lock(osm.repo)["runs"]["tb/a"]
    theirs, name = submit_by_hand(platform, config)

    plan = osm.plan("--detailed-exitcode")
    assert plan.code == 2, plan
    assert "possible duplicate payment" in plan.out
    assert f"{name} ({theirs})" in plan.out
    assert f"{ours['run_name']} ({ours['run_id']})" in plan.out
    # Issue 37: it names who made it, so a person knows whom to ask.
    assert f"run {name} ({theirs}) was made by Colleague outside this repository" in plan.out
    assert platform.submits() == 2


def test_a_lost_lockfile_adopts_the_run_instead_of_paying_again(
    tmp_path: Path, platform: Platform
) -> None:
    # Issue 22: the evidence is the remote state record (git lock), never timing.
    seed = init_repo(
        tmp_path / "seed",
        configs={"tb/a": smoke_config()},
        pyproject='[tool.osmosis-reconciler]\nlock = "git"\n',
    )
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "remote.git"))
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), str(tmp_path / "repo"))
    osm = Osmosis(tmp_path / "repo", platform)
    assert osm.apply("--auto-approve").code == 0
    run_id = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
    # The apply's lockfile never reached the remote (a CI job killed before its push).
    shutil.rmtree(osm.repo / "state")

    plan = osm.plan("--format", "json")
    (item,) = plan.json()["actions"]
    assert (item["action"], item["run_id"]) == ("adopt", run_id)
    # The apply is refused until the lockfile is restored from the record, then adopts.
    behind = osm.apply("--auto-approve")
    assert behind.code == 1 and "behind the one the last apply wrote" in behind.err
    assert platform.submits() == 1


def test_a_lost_lockfile_without_evidence_names_the_active_run_and_pays_nothing(
    tmp_path: Path, platform: Platform
) -> None:
    """No remote, no state record: nothing this repository wrote names the run, so it is
    named with the import command, not adopted (issue 22: timing is no evidence)."""
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    run_id = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
    shutil.rmtree(osm.repo / "state")
    plan = osm.plan("--format", "json")
    (item,) = plan.json()["actions"]
    # The run is still active: blocked until a person adopts it or allows a duplicate.
    assert item["action"] == "blocked" and item["reason"] == "twin_active"
    assert any(f"osmosis-state adopt tb/a {run_id}" in d for d in item["details"]), item
    osm.apply("--auto-approve")
    assert platform.submits() == 1


# --------------------------------------------------------------------------- issue 17


def test_a_recorded_run_the_list_omits_is_read_directly_never_resubmitted(
    tmp_path: Path, clock: FakeClock
) -> None:
    platform = start_platform(
        tmp_path / "p", clock=clock, faults=Faults(list_omit_rate=1.0), access_log=RequestLog()
    )
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
        assert osm.apply("--auto-approve").code == 0
        run_id = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
        for flags in ((), ("--refresh", "full")):
            plan = osm.plan("--detailed-exitcode", *flags)
            assert plan.code == 0, plan
            assert "no longer exists" not in plan.out
        assert platform.requests is not None
        assert platform.requests.count(f"GET /api/cli/benchmark-runs/{run_id}") >= 2
        assert osm.apply("--auto-approve").code == 0
        assert platform.submits() == 1
    finally:
        platform.close()


def test_a_submit_reply_of_the_wrong_shape_keeps_the_intent_and_adopts(
    tmp_path: Path, clock: FakeClock
) -> None:
    platform = start_platform(
        tmp_path / "p", clock=clock, faults=Faults(wrong_submit_reply_rate=1.0)
    )
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
        first = osm.apply("--auto-approve")
        assert first.code == 1, first
        assert "unusable" in first.text and "intent is kept" in first.text
        entry = read_lock(osm.repo)["runs"]["tb/a"]
        assert "intent" in entry and "run_id" not in entry
        second = osm.apply("--auto-approve")
        assert second.code == 0, second
        assert platform.submits() == 1
        assert read_lock(osm.repo)["runs"]["tb/a"]["run_id"] != "5"
    finally:
        platform.close()


def test_a_hand_edited_run_id_names_the_real_run_and_pays_nothing(
    tmp_path: Path, platform: Platform
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    lockfile = osm.repo / "state" / "osmosis.lock"
    real = read_lock(osm.repo)["runs"]["tb/a"]["run_id"]
    lockfile.write_text(lockfile.read_text().replace(real, "bmr_edited_by_hand"))

    plan = osm.plan("--format", "json")
    doc = plan.json()
    # Issue 22: a run id this repository never wrote is no evidence: the real run is named,
    # not adopted; issue 34: nor is a second one paid for while it may still run.
    (action,) = doc["actions"]
    assert action["action"] == "blocked" and action["reason"] == "run_missing_undecided"
    assert any(f"osmosis-state adopt tb/a {real}" in d for d in action["details"]), action
    assert [d["kind"] for d in doc["drift"]] == ["run_missing"]
    osm.apply("--auto-approve")
    assert platform.submits() == 1


def test_a_429_after_the_run_was_committed_records_that_run(
    tmp_path: Path, clock: FakeClock
) -> None:
    faults = Faults(rate_limit_after_submit_rate=1.0, retry_after_s=0)
    platform = start_platform(tmp_path / "p", clock=clock, faults=faults)
    try:
        configs = {f"tb/r{i}": smoke_config(attempts=i + 1) for i in range(3)}
        osm = Osmosis(init_repo(tmp_path / "repo", configs=configs), platform)
        applied = osm.apply("--auto-approve")
        assert applied.code == 0, applied
        assert platform.submits() == 3
        lock = read_lock(osm.repo)["runs"]
        assert len({entry["run_id"] for entry in lock.values()}) == 3
        assert all("intent" not in entry for entry in lock.values())
    finally:
        platform.close()


def test_a_lockfile_copied_from_another_repository_is_refused(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    # Origins on GitHub (unreachable from here), so the apply lock stays on this machine.
    local_lock = '[tool.osmosis-reconciler]\nlock = "local"\n'
    theirs = Osmosis(
        init_repo(tmp_path / "theirs", configs={"tb/x": smoke_config()}, pyproject=local_lock),
        platform,
    )
    git(theirs.repo, "remote", "add", "origin", "https://github.com/acme/theirs.git")
    assert theirs.apply("--auto-approve").code == 0
    ours = Osmosis(
        init_repo(
            tmp_path / "ours", configs={"tb/mine": smoke_config("m/mine")}, pyproject=local_lock
        ),
        platform,
    )
    git(ours.repo, "remote", "add", "origin", "https://github.com/acme/ours.git")
    (ours.repo / "state").mkdir()
    shutil.copy(theirs.repo / "state" / "osmosis.lock", ours.repo / "state" / "osmosis.lock")

    for result in (ours.plan(), ours.apply("--auto-approve")):
        assert result.code == 1, result
        assert "belongs to repository github.com/acme/theirs" in result.err
        assert "github.com/acme/ours" in result.err and "--allow-foreign-state" in result.err
    assert set(platform.statuses().values()) <= {"pending", "queued", "running"}

    accepted = ours.plan("--allow-foreign-state", "--format", "json")
    assert accepted.code == 0, accepted
    assert {a["address"]: a["action"] for a in accepted.json()["actions"]} == {
        "tb/mine": "submit",
        "tb/x": "stop",
    }


def test_a_replaced_or_rolled_back_lockfile_is_refused(tmp_path: Path, platform: Platform) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    commit(osm.repo, "Record the run")
    lockfile = osm.repo / "state" / "osmosis.lock"
    committed = lockfile.read_text()

    lockfile.write_text(committed.replace("serial = 2", "serial = 1"))
    rolled_back = osm.plan()
    assert rolled_back.code == 1 and "older than the version committed at HEAD" in rolled_back.err

    lockfile.unlink()
    deleted = osm.apply("--auto-approve")
    assert deleted.code == 1, deleted
    assert "is missing, but the lockfile committed at HEAD" in deleted.err
    assert platform.submits() == 1

    lockfile.write_text(committed)
    assert osm.plan("--detailed-exitcode").code == 0


def test_swapped_run_ids_are_blocked_not_stopped(tmp_path: Path, platform: Platform) -> None:
    configs = {"tb/a": smoke_config("m/a"), "tb/b": smoke_config("m/b")}
    osm = Osmosis(init_repo(tmp_path / "repo", configs=configs), platform)
    assert osm.apply("--auto-approve").code == 0
    lock = read_lock(osm.repo)["runs"]
    a, b = lock["tb/a"]["run_id"], lock["tb/b"]["run_id"]
    lockfile = osm.repo / "state" / "osmosis.lock"
    text = lockfile.read_text()
    lockfile.write_text(text.replace(a, "SWAP").replace(b, a).replace("SWAP", b))
    (osm.repo / "benchmarks" / "tb" / "a.toml").unlink()

    plan = osm.plan("--format", "json")
    actions = {x["address"]: (x["action"], x["reason"]) for x in plan.json()["actions"]}
    assert actions["tb/a"] == ("blocked", "record_mismatch")
    assert actions["tb/b"] == ("blocked", "record_mismatch")
    # Blocked items are reported, not attempted, and never fail an apply by themselves
    # (issue 34, "red means something new"); the plan above is what fails (exit 4).
    assert plan.code == 4, plan
    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    assert "0 succeeded, 0 failed, 2 blocked (not attempted)" in applied.out, applied
    assert set(platform.statuses().values()) <= {"pending", "queued", "running"}
    assert platform.submits() == 2
    after = read_lock(osm.repo)["runs"]
    assert (after["tb/a"]["run_id"], after["tb/b"]["run_id"]) == (b, a), "a record was rewritten"


def test_a_colleagues_identical_run_is_never_adopted_for_a_submit_lost_before_its_post(
    tmp_path: Path, platform: Platform
) -> None:
    # Found by the lifecycle suite: apply is killed between its intent and its POST, then a
    # colleague (another user) submits the same config by hand. The run matches the intent's
    # body, but the Platform says who made it: not this repository's, so never adopted.
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    crashed = osm.run(
        "osmosis-apply", "--auto-approve", env={"OSMOSIS_CRASH_AT": "submit.before_post:1"}
    )
    assert crashed.code == -9, crashed
    assert platform.submits() == 0
    theirs, _name = submit_by_hand(platform, smoke_config())

    planned = osm.plan("--format", "json")
    assert planned.code == 0, planned
    item = plan_items(planned)["tb/a"]
    assert item["action"] == "unknown", item
    assert item.get("run_id") != theirs
    assert osm.apply("--auto-approve").code == 0
    assert theirs not in (repo / "state" / "osmosis.lock").read_text()
    assert platform.submits() == 1  # the colleague's run only: nothing paid for ours yet
    assert platform.statuses()[theirs] in ("pending", "queued", "running", "finished")
