"""``osmosis-apply --only KINDS`` over loopback: the collect loop's ``--only download,refresh``
fetches ended runs and records statuses, and never submits, replaces or stops, whatever
the plan holds (issue 15). The restriction itself is a pure function, tested with values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.errors import UsageError
from reconciler.model import Action, Blocked, Plan, PlanItem, PlanSummary, Reason
from reconciler.plan.restrict import parse_only, restrict_plan
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    Platform,
    init_repo,
    read_lock,
    smoke_config,
    write_config,
)


def test_only_download_refresh_downloads_and_records_but_never_pays(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    commit(repo, "Record tb/a")
    assert platform.submits() == 1
    # A new config (a submit) is pending while tb/a ends (a download).
    write_config(repo, "tb/b", smoke_config("openai/gpt-5"))
    commit(repo, "Add tb/b")
    clock.advance(3600)

    result = osm.apply("--auto-approve", "--only", "download,refresh")
    assert result.code == 0, result
    assert platform.submits() == 1, "--only download,refresh must never submit"
    assert "held back 1 action(s) (submit tb/b)" in result.text
    assert "Apply complete: 1 succeeded, 0 failed." in result.out
    entry = read_lock(repo)["runs"]["tb/a"]
    assert entry["status"] in ("finished", "failed")
    assert entry["downloads"]["complete"] is True
    assert "tb/b" not in read_lock(repo)["runs"]
    # The submit stays pending for the next (paid) apply.
    assert "+ tb/b" in osm.plan().out


def test_only_refresh_records_statuses_with_nothing_else_to_do(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    before = read_lock(repo)["runs"]["tb/a"]["status"]
    clock.advance(30)  # later than pending, not yet ended: no download, only a status
    now = platform.statuses()[read_lock(repo)["runs"]["tb/a"]["run_id"]]
    assert now != before and now not in ("finished", "failed", "stopped")
    result = osm.apply("--auto-approve", "--only", "refresh")
    assert result.code == 0, result
    assert read_lock(repo)["runs"]["tb/a"]["status"] == now


def test_only_rejects_unknown_kinds_and_a_wait_without_download(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    bad = osm.apply("--auto-approve", "--only", "download,pay")
    assert bad.code == 1
    assert "--only: unknown kind(s): pay" in bad.err
    assert (
        "choose from: submit, replace, stop, forget, download, adopt, move, retry, refresh"
        in bad.err
    )
    wait = osm.apply("--auto-approve", "--wait", "--only", "refresh")
    assert wait.code == 1 and "add download to --only" in wait.err
    assert platform.submits() == 0


def _item(action: Action, address: str, **kw: object) -> PlanItem:
    return PlanItem(action=action, address=address, reason=Reason.NEW_CONFIG, **kw)  # type: ignore[arg-type]


def test_restrict_plan_keeps_only_the_allowed_kinds_and_drops_guards_it_cannot_trip() -> None:
    plan = Plan(
        items=(
            _item(Action.SUBMIT, "a", attempts=9000),
            _item(Action.DOWNLOAD, "b"),
            _item(Action.BLOCKED, "c", blocked=Blocked(intended_action=Action.SUBMIT)),
            _item(Action.STOP, "d"),
        ),
        summary=PlanSummary(submit=1, download=1, blocked=1, stop=1, attempts=9000),
        errors=("the plan would start 9,000 new attempts, more than max_attempts = 5,000",),
    )
    only = restrict_plan(plan, parse_only("download,refresh"))
    assert [i.address for i in only.items] == ["b"]
    assert only.summary == PlanSummary(download=1)
    assert only.errors == ()
    assert only.warnings[-1].startswith("--only download,refresh: held back 3 action(s)")
    with_submit = restrict_plan(plan, {"submit", "download"})
    assert [i.address for i in with_submit.items] == ["a", "b", "c"]
    assert with_submit.errors == plan.errors
    assert restrict_plan(plan, {"submit", "download", "stop"}) is plan
    with pytest.raises(UsageError, match="must list at least one kind"):
        parse_only(" , ")
