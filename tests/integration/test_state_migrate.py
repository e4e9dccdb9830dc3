"""A try-out moves to a served Platform in one step, and a missing secret says where it is
(issue 37, finding 3), over real loopback HTTP.

``osmosis-state migrate --platform URL``: a lockfile written against the embedded Platform
is moved to a served one; its runs (which do not exist there) go to the history and the next
plan submits afresh; refused while a run is active. Served on the embedded Platform's own
data directory, the same runs exist there and are kept.

A plan that misses a secret in its workspace names the other workspaces that hold a record
of that name (the ones the token can use), never a value.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from reconciler.local_platform import LocalPlatform
from tests.support.emulator import start_local_platform
from tests.support.osmosis import (
    COLLEAGUE_TOKEN,
    TEAM,
    Osmosis,
    Platform,
    init_repo,
    plan_items,
    smoke_config,
    start_platform,
)

EMBEDDED = ("--platform", "local")
FAST = {"OSMOSIS_LOCAL_PLATFORM_SPEED": "5000"}


def lock(repo: Path) -> dict:
    return tomllib.loads((repo / "state" / "osmosis.lock").read_text(encoding="utf-8"))


def tried_out(repo: Path, osm: Osmosis) -> dict:
    """The configs applied on the embedded Platform, their runs ended and downloaded."""
    done = osm.apply(*EMBEDDED, "--auto-approve", "--wait", env=FAST)
    assert done.code == 0, done
    recorded = lock(repo)
    assert recorded["platform"] == "local" and recorded["platform_instance"]
    return recorded


def test_a_tryout_moves_to_a_served_platform_and_plans_afresh_there(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    served = start_platform(tmp_path / "served")
    try:
        osm = Osmosis(repo, served)
        # The embedded Platform needs the secret too: it is a try-out of its own.
        LocalPlatform(repo / ".osmosis" / "local-platform").set_secret(
            served.workspace, "OPENAI_API_KEY", "sk-embedded"
        )
        before = tried_out(repo, osm)
        (run_id,) = [entry["run_id"] for entry in before["runs"].values()]
        text = (repo / "state" / "osmosis.lock").read_bytes()

        dry = osm.state("migrate", "--dry-run")
        assert dry.code == 0, dry
        assert dry.out.startswith(
            f"Would migrate state/osmosis.lock from local (workspace e2e) to {served.url} "
            "(workspace e2e); nothing written (--dry-run).\n"
        )
        assert "1 recorded run(s) would move to the lockfile's history" in dry.out
        assert (repo / "state" / "osmosis.lock").read_bytes() == text

        done = osm.state("migrate")
        assert done.code == 0, done
        assert done.out.splitlines()[0] == (
            f"Migrated state/osmosis.lock from local (workspace e2e) to {served.url} "
            f"(workspace e2e) (serial {before['serial']} -> {before['serial'] + 1})."
        )
        assert f"so the next osmosis-plan submits their configs afresh on {served.url}" in done.out
        assert f"Next: osmosis-plan --platform {served.url} --workspace e2e" in done.out
        after = lock(repo)
        assert (after["platform"], after["workspace"]) == (served.url, "e2e")
        assert "platform_instance" not in after and "observed_until" not in after
        assert after.get("runs", {}) == {}
        (history,) = after["history"]
        assert (history["run_id"], history["reason"]) == (run_id, "forgotten")
        assert "outputs_pending" not in history
        assert after["lineage"] == before["lineage"]

        plan = osm.plan("--format", "json")
        assert plan.code == 0, plan
        item = plan_items(plan)["tb/smoke"]
        assert (item["action"], item["reason"]) == ("submit", "new_config")
        applied = osm.apply("--auto-approve")
        assert applied.code == 0, applied
        assert served.submits() == 1
        assert lock(repo)["runs"]["tb/smoke"]["run_id"] != run_id

        again = osm.state("migrate")
        assert again.code == 1
        assert f"state/osmosis.lock already records {served.url}" in again.err
    finally:
        served.close()


def test_migrate_is_refused_while_a_run_is_active_and_changes_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    served = start_platform(tmp_path / "served")
    try:
        osm = Osmosis(repo, served)
        nothing = osm.state("migrate")
        assert nothing.code == 1
        assert "nothing to migrate: state/osmosis.lock does not exist" in nothing.err
        LocalPlatform(repo / ".osmosis" / "local-platform").set_secret(
            served.workspace, "OPENAI_API_KEY", "sk-embedded"
        )
        slow = {"OSMOSIS_LOCAL_PLATFORM_SPEED": "0.01"}  # the run stays pending
        assert osm.apply(*EMBEDDED, "--auto-approve", env=slow).code == 0
        text = (repo / "state" / "osmosis.lock").read_bytes()
        (name,) = [e["run_name"] for e in lock(repo)["runs"].values()]
        refused = osm.state("migrate")
        assert refused.code == 1, refused
        assert (
            "cannot migrate state/osmosis.lock: 1 recorded run(s) are not settled on local, "
            f"and would be orphaned there: tb/smoke ({name}): pending"
        ) in refused.err
        assert "`osmosis-apply --wait`" in refused.err
        assert (repo / "state" / "osmosis.lock").read_bytes() == text
        assert served.submits() == 0
        missing = osm.state("migrate", "--platform", "local")
        assert missing.code == 1 and "not onto the embedded one" in missing.err
    finally:
        served.close()


def test_served_on_the_tryouts_own_data_the_runs_are_kept(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    data = repo / ".osmosis" / "local-platform"
    LocalPlatform(data).set_secret("e2e", "OPENAI_API_KEY", "sk-embedded")
    handle = start_local_platform(data, users=TEAM)
    served = Platform(handle, handle.platform, "e2e")
    try:
        osm = Osmosis(repo, served)
        before = tried_out(repo, osm)
        done = osm.state("migrate")
        assert done.code == 0, done
        assert (
            f"{served.url} serves the same local Platform and workspace: the 1 recorded "
            "run(s) exist there and stay recorded."
        ) in done.out
        after = lock(repo)
        assert after["runs"] == before["runs"]
        assert after["platform"] == served.url
        plan = osm.plan("--detailed-exitcode")
        assert plan.code == 0, plan
        assert "No changes." in plan.out
    finally:
        served.close()


def test_a_missing_secret_names_the_workspaces_that_hold_one(tmp_path: Path) -> None:
    served = start_platform(tmp_path / "served")
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config(secret="TEAM_KEY")})
    try:
        served.platform.set_secret("default", "TEAM_KEY", "sk-value-in-default")
        served.platform.set_secret("mine", "TEAM_KEY", "sk-value-mine", "user", user="E2E Runner")
        # A colleague's personal record is theirs: this token cannot use it, nor see it.
        served.platform.set_secret(
            "theirs", "TEAM_KEY", "sk-value-theirs", "user", user="Colleague"
        )
        osm = Osmosis(repo, served)
        plan = osm.plan()
        assert plan.code == 4, plan
        line = next(x for x in plan.out.splitlines() if "Secret(s) not found: TEAM_KEY" in x)
        assert (
            "not in workspace 'e2e', but a secret of that name exists in workspace 'default' "
            "(workspace scope) and workspace 'mine' (personal scope, yours): store it in this "
            "workspace (the fix below), or plan against that one (--workspace default)"
        ) in line
        assert "theirs" not in plan.out
        assert "sk-value" not in plan.text

        # The colleague's own view names their record, and never the value.
        theirs = osm.plan(env={"OSMOSIS_TOKEN": COLLEAGUE_TOKEN})
        assert "workspace 'theirs' (personal scope, yours)" in theirs.out
        assert "workspace 'mine'" not in theirs.out
    finally:
        served.close()
