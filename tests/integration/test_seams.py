"""The seams between features (issue 22, part B), end to end over loopback HTTP against the
local Platform, with real git repositories.

* An ended run whose config changes (or goes) before its outputs were fetched is downloaded
  in the same apply that moves its entry to history; a history entry keeps a download that
  was held back until one is done (item 3).
* A submit whose outcome is unknown (a dropped, wrong-shaped or 429 answer after the run
  was committed) while the run list leaves the run out is never paid twice: the plan shows
  ``?`` with the time left and the command, and a person can settle it (item 5).
* A saved plan is applied only as far as it is still the plan: an item edited into it is
  refused (item 6).
* Cost: with ``max_cost_usd`` set, a submit without an estimate fails the plan naming it,
  unless ``--allow-unestimated`` (item 8).
* A secret found only at personal scope is a warning with the fix (item 9).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from reconciler.local_platform.faults import FaultInjector
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    TEAM,
    TOKEN,
    Osmosis,
    Platform,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

DAY = 24 * 3600.0


def run_dirs(repo: Path) -> set[str]:
    root = repo / ".osmosis" / "benchmarks"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def history(repo: Path) -> list[dict]:
    return list(read_lock(repo).get("history", []))


# --------------------------------------------------------------------------- item 3


def test_an_ended_run_is_downloaded_when_its_config_changes_before_the_download(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0  # no --wait: nothing downloaded yet
    first = read_lock(osm.repo)["runs"]["tb/a"]
    clock.advance(DAY)  # the run ends
    write_config(osm.repo, "tb/a", smoke_config("openai/gpt-5.4"))
    commit(osm.repo, "Try gpt-5.4")

    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    assert platform.submits() == 2
    (old,) = [h for h in history(osm.repo) if h["run_id"] == first["run_id"]]
    assert "outputs_pending" not in old, old
    assert first["run_name"] in run_dirs(osm.repo), run_dirs(osm.repo)
    files = {p.name for d in (osm.repo / ".osmosis" / "benchmarks").iterdir() for p in d.iterdir()}
    assert {"summary.csv", "results.csv"} <= files


def test_a_history_entry_keeps_a_held_back_download_until_it_is_done(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    first, name = (read_lock(osm.repo)["runs"]["tb/a"][k] for k in ("run_id", "run_name"))
    clock.advance(DAY)
    write_config(osm.repo, "tb/a", smoke_config("openai/gpt-5.4"))
    commit(osm.repo, "Try gpt-5.4")

    # A merge apply that may only submit: the download of the ended run is held back.
    assert osm.apply("--auto-approve", "--only", "submit").code == 0
    (old,) = [h for h in history(osm.repo) if h["run_id"] == first]
    assert old["outputs_pending"] is True
    plan = osm.plan("--format", "json").json()
    assert [(a["action"], a["run_id"]) for a in plan["actions"]] == [("download", first)]

    # The hourly collect job fetches it, and then nothing is owed.
    assert osm.apply("--auto-approve", "--only", "download,refresh").code == 0
    (old,) = [h for h in history(osm.repo) if h["run_id"] == first]
    assert "outputs_pending" not in old
    assert name in run_dirs(osm.repo)
    assert osm.plan("--detailed-exitcode").code == 0


# --------------------------------------------------------------------------- item 5

UNKNOWN_ANSWERS = {
    "dropped": Faults(drop_after_submit_rate=1.0, list_omit_rate=1.0),
    "wrong-shaped": Faults(wrong_submit_reply_rate=1.0, list_omit_rate=1.0),
    "429": Faults(rate_limit_after_submit_rate=1.0, retry_after_s=0, list_omit_rate=1.0),
}


@pytest.mark.parametrize("answer", sorted(UNKNOWN_ANSWERS))
def test_an_unknown_outcome_whose_run_is_not_listed_is_never_paid_twice(
    tmp_path: Path, clock: FakeClock, answer: str
) -> None:
    platform = start_platform(tmp_path / "p", clock=clock, faults=UNKNOWN_ANSWERS[answer])
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
        for _ in range(3):
            osm.apply("--auto-approve")
        assert platform.submits() == 1

        plan = osm.plan()
        assert plan.code == 0, plan
        assert "? tb/a" in plan.out
        assert "unknown outcome" in plan.out and "in 30 minutes" in plan.out.replace("29", "30")
        assert "osmosis-state resolve tb/a --submitted RUN" in plan.out
        assert "--not-submitted" in plan.out
        # The applies after the first recorded their listing as quiet-period evidence (two
        # in the same second count once).
        intent = read_lock(osm.repo)["runs"]["tb/a"]["intent"]
        assert 1 <= len(intent["listings"]) <= 2

        # A person who knows the run settles it; nothing more is paid.
        assert platform.statuses() == {}  # the list leaves the run out
        run_id = platform_run(platform)
        resolved = osm.state("resolve", "tb/a", "--submitted", run_id)
        assert resolved.code == 0, resolved
        assert osm.apply("--auto-approve").code == 0
        assert read_lock(osm.repo)["runs"]["tb/a"]["run_id"] == run_id
        assert platform.submits() == 1
    finally:
        platform.close()


def platform_run(platform: Platform) -> str:
    """The one run of the workspace, from the Platform's own rows (its list omits it)."""
    ((run_id,),) = platform.platform.store.read().execute("SELECT id FROM runs").fetchall()
    return str(run_id)


def test_resolve_not_submitted_lets_the_next_apply_submit(tmp_path: Path, clock: FakeClock) -> None:
    faults = Faults(drop_after_submit_rate=1.0, list_omit_rate=1.0)
    platform = start_platform(tmp_path / "p", clock=clock, faults=faults)
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
        assert osm.apply("--auto-approve").code == 1
        assert "? tb/a" in osm.plan().out
        calm = Faults(list_omit_rate=1.0)
        platform.platform.faults = calm
        platform.platform.injector = FaultInjector(calm)
        wrong = osm.state("resolve", "tb/a")
        assert wrong.code == 1 and "--submitted RUN or --not-submitted" in wrong.err
        assert osm.state("resolve", "tb/a", "--not-submitted").code == 0
        assert "intent" not in read_lock(osm.repo).get("runs", {}).get("tb/a", {})
        # A person's decision is final: the next apply submits (here the dropped answer had
        # in fact created a run the list never showed, so the person paid twice).
        assert osm.apply("--auto-approve").code == 0
        assert platform.submits() == 2
        again = osm.state("resolve", "tb/a", "--not-submitted")
        assert again.code == 1 and "no submit with an unknown outcome" in again.err
    finally:
        platform.close()


def _rename(repo: Path, old: str, new: str) -> None:
    source = repo / "benchmarks" / f"{old}.toml"
    target = repo / "benchmarks" / f"{new}.toml"
    target.parent.mkdir(parents=True, exist_ok=True)
    source.rename(target)
    commit(repo, f"Rename {old} to {new}")


def _calm(platform: Platform, faults: Faults) -> None:
    platform.platform.faults = faults
    platform.platform.injector = FaultInjector(faults)


def test_a_config_renamed_while_its_submit_is_unknown_takes_the_run_and_is_not_paid_again(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The submit's answer was lost, then the config was renamed before the next apply: the
    run the submit made is adopted at the new address (found by the lifecycle suite: it was
    adopted at the vanished address and the new one was paid for again)."""
    platform = start_platform(
        tmp_path / "p", clock=clock, faults=Faults(drop_after_submit_rate=1.0)
    )
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/b": smoke_config()}), platform)
        assert osm.apply("--auto-approve").code == 1
        _calm(platform, Faults())
        _rename(osm.repo, "tb/b", "tb/a")

        plan = osm.plan()
        assert "<= tb/a" in plan.out and "tb/b -> tb/a" in plan.out, plan
        assert "+ tb/a" not in plan.out and "deleted" not in plan.out, plan
        applied = osm.apply("--auto-approve")
        assert applied.code == 0, applied
        assert platform.submits() == 1
        runs = read_lock(osm.repo)["runs"]
        assert set(runs) == {"tb/a"} and "intent" not in runs["tb/a"]
        assert runs["tb/a"]["run_id"] in platform.statuses()
        assert osm.plan("--detailed-exitcode").code == 0
    finally:
        platform.close()


def test_a_config_renamed_while_its_run_is_not_listed_waits_for_the_outcome(
    tmp_path: Path, clock: FakeClock
) -> None:
    """The same with a run list that leaves the new run out: the new address is not submitted
    while the outcome is unknown; once the run is listed it is adopted there, paid once."""
    faults = Faults(drop_after_submit_rate=1.0, list_omit_rate=1.0)
    platform = start_platform(tmp_path / "p", clock=clock, faults=faults)
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/b": smoke_config()}), platform)
        assert osm.apply("--auto-approve").code == 1
        _calm(platform, Faults(list_omit_rate=1.0))
        _rename(osm.repo, "tb/b", "tb/a")

        for _ in range(2):
            plan = osm.plan()
            assert "? tb/b" in plan.out and "its config is now tb/a (renamed)" in plan.out, plan
            assert "+ tb/a" not in plan.out, plan
            assert osm.apply("--auto-approve").code == 0
        assert platform.submits() == 1

        _calm(platform, Faults())  # the list shows the run at last
        assert osm.apply("--auto-approve").code == 0
        assert platform.submits() == 1
        runs = read_lock(osm.repo)["runs"]
        assert set(runs) == {"tb/a"} and runs["tb/a"]["run_id"] == platform_run(platform)
    finally:
        platform.close()


# --------------------------------------------------------------------------- item 6


def test_an_edited_saved_plan_cannot_stop_an_unmanaged_run(
    tmp_path: Path, platform: Platform
) -> None:
    colleague = Osmosis(
        init_repo(tmp_path / "theirs", configs={"tb/theirs": smoke_config("x/theirs")}), platform
    )
    assert colleague.apply("--auto-approve").code == 0
    theirs = read_lock(colleague.repo)["runs"]["tb/theirs"]

    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    planfile = tmp_path / "all.plan.json"
    assert osm.plan("--out", str(planfile)).code == 0
    saved = json.loads(planfile.read_text())
    (submit,) = saved["plan"]["actions"]
    stop = {
        **submit,
        "action": "stop",
        "symbol": "-",
        "reason": "config_deleted",
        "address": "tb/theirs",
        "run_id": theirs["run_id"],
        "run_name": theirs["run_name"],
        "spec": None,
        "cost_usd": None,
        "context": None,
        "source_url": None,
        "pass_threshold": None,
        "task_count": None,
        "attempts": 0,
    }
    saved["plan"]["actions"].append(stop)
    planfile.write_text(json.dumps(saved))

    applied = osm.apply(str(planfile))
    assert applied.code == 3, applied
    assert "refused: the saved plan's stop of run" in applied.out
    assert theirs["run_name"] in applied.out
    assert platform.statuses()[theirs["run_id"]] in ("pending", "queued", "running")
    assert platform.submits() == 2  # theirs, and the saved plan's own submit


def test_a_submit_doubled_in_a_saved_plan_is_paid_once(tmp_path: Path, platform: Platform) -> None:
    """Found by the lifecycle suite: every copy of a saved item matched the recomputed
    item, so a submit copied in the file was carried out (and paid for) twice."""
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    planfile = tmp_path / "doubled.plan.json"
    assert osm.plan("--out", str(planfile)).code == 0
    saved = json.loads(planfile.read_text())
    (submit,) = saved["plan"]["actions"]
    saved["plan"]["actions"].append(dict(submit))
    planfile.write_text(json.dumps(saved))

    applied = osm.apply(str(planfile))
    assert applied.code == 3, applied
    assert "ok: submitted" in applied.out
    assert "refused: the saved plan's submit at tb/a appears in it more than once" in applied.out
    assert platform.submits() == 1
    assert read_lock(osm.repo)["runs"]["tb/a"]["run_id"] in platform.statuses()


# --------------------------------------------------------------------------- item 8


def test_a_budget_with_an_unestimated_submit_fails_the_plan_naming_it(
    tmp_path: Path, platform: Platform
) -> None:
    pyproject = "[tool.osmosis-reconciler]\nmax_cost_usd = 50.0\n"
    osm = Osmosis(
        init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}, pyproject=pyproject),
        platform,
    )
    plan = osm.plan()
    assert plan.code == 1, plan
    assert "max_cost_usd = $50.00 is set, but 1 submit has no cost estimate" in plan.text
    assert "tb/a" in plan.text and "--allow-unestimated" in plan.text
    assert osm.apply("--auto-approve").code == 1
    assert platform.submits() == 0
    allowed = osm.apply("--auto-approve", "--allow-unestimated")
    assert allowed.code == 0, allowed
    assert platform.submits() == 1


def test_a_replace_is_estimated_from_the_address_history(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
    assert osm.apply("--auto-approve").code == 0
    clock.advance(2 * DAY)
    assert osm.apply("--auto-approve").code == 0  # downloads and records the scores
    commit(osm.repo, "Record the run")
    # Re-run with more attempts: the only recorded run of the model is now in the history
    # once the submit replaces it, and the estimate must still come from it.
    write_config(osm.repo, "tb/a", smoke_config(attempts=3))
    commit(osm.repo, "Three attempts")
    (item,) = [a for a in osm.plan("--format", "json").json()["actions"] if a["action"] == "submit"]
    assert item["cost_usd"] is not None, item
    assert item["cost_usd"]["basis"].startswith("cost per attempt of 1 recorded run of")
    assert osm.apply("--auto-approve").code == 0
    commit(osm.repo, "Record the re-run")
    write_config(osm.repo, "tb/a", smoke_config(attempts=2))
    commit(osm.repo, "Two attempts")
    clock.advance(2 * DAY)
    (again,) = [
        a for a in osm.plan("--format", "json").json()["actions"] if a["action"] == "submit"
    ]
    assert again["cost_usd"] is not None and "recorded run" in again["cost_usd"]["basis"]


# --------------------------------------------------------------------------- item 9


def test_a_secret_only_at_personal_scope_is_a_warning_with_the_fix(
    tmp_path: Path, clock: FakeClock
) -> None:
    platform = start_platform(tmp_path / "p", clock=clock, secrets=False)
    try:
        # The personal record of the token's own user (the repository's CI identity here).
        platform.platform.set_secret(
            platform.workspace, "OPENAI_API_KEY", "sk-mine", "user", user=TEAM[TOKEN]
        )
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
        plan = osm.plan("--format", "json")
        assert plan.code == 0, plan
        (item,) = plan.json()["actions"]
        assert item["action"] == "submit"
        (warning,) = [w for w in item["warnings"] if "personal scope" in w]
        assert "OPENAI_API_KEY" in warning and "CI" in warning
        assert "secret set OPENAI_API_KEY --scope workspace" in warning
        assert "sk-mine" not in plan.out + plan.err
        platform.platform.set_secret(platform.workspace, "OPENAI_API_KEY", "sk-team")
        shared = osm.plan("--format", "json").json()["actions"][0]
        assert not [w for w in shared["warnings"] if "personal scope" in w]
    finally:
        platform.close()
