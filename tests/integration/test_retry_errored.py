"""Re-run only what errored (docs/retrying.md), end to end: over loopback HTTP to the local
Platform, in a real git repository, through the CLI entry points."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.results import main as results_main
from reconciler.results.data import parse_results_csv
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import Osmosis, Platform, Result, init_repo, plan_items, read_lock


class Retrying(Osmosis):
    def results(self, *args: str) -> Result:
        return self._call(results_main, list(args), None)


VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)
ENDED = 4000.0
"""Seconds after which every run of these tests has ended on the local Platform."""

CONFIG = """\
[experiment]
benchmark = "terminal-bench-2-1"

[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[execution]
attempts_per_task = 2
max_concurrent_attempts = 4
"""


SMALL = CONFIG.replace(
    "[[agents]]", '[tasks]\ntask_names = ["terminal-bench/git-multibranch"]\n\n[[agents]]'
).replace("attempts_per_task = 2", "attempts_per_task = 1")


def errored_of(path: Path) -> dict[str, int]:
    """Task -> errored attempts of the first agent in a downloaded results.csv."""
    outcomes = parse_results_csv(path.read_text(encoding="utf-8"))
    return {t: o.errored for t, o in outcomes.tasks.get(0, {}).items() if o.errored}


def ended_and_downloaded(tmp_path: Path, platform: Platform, clock: FakeClock) -> Retrying:
    repo = init_repo(tmp_path / "repo", configs={"tb/full": CONFIG})
    osm = Retrying(repo, platform)
    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    clock.advance(ENDED)
    downloaded = osm.apply("--auto-approve")
    assert downloaded.code == 0, downloaded
    return osm


def run_config(platform: Platform, run_id: str) -> dict[str, Any]:
    with contextlib.closing(platform.client()) as client:
        detail = client.get_run(run_id)
    configuration = detail.configuration
    return {
        "tasks": configuration.task_filters,
        "attempts": configuration.config.get("attempts_per_task"),
        "agents": len(detail.agents),
    }


def test_retry_errored_pays_once_for_the_errored_attempts(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = ended_and_downloaded(tmp_path, platform, clock)
    repo = osm.repo
    lock = read_lock(repo)
    first = lock["runs"]["tb/full"]
    base_id = first["run_id"]
    errored = errored_of(repo / first["downloads"]["directory"] / "results.csv")
    assert errored, "the seeded local Platform errors some attempts of an 89 x 2 run"
    submits = platform.submits()

    plan = osm.plan("--retry-errored", "tb/full", "--format", "json")
    assert plan.code == 0, plan
    assert [e.message for e in VALIDATOR.iter_errors(plan.json())] == []
    item = plan_items(plan)["tb/full"]
    assert item["action"] == "retry"
    assert item["reason"] == "retry_errored"
    count = max(errored.values())
    tasks = sorted(t for t, n in errored.items() if n == count)
    assert item["spec"]["tasks_config"] == {"task_names": tasks}
    assert item["spec"]["execution_config"]["attempts_per_task"] == count
    assert item["attempts"] == len(tasks) * count
    assert item["retry"]["retry_of"] == base_id
    assert item["retry"]["errored"] == sum(errored.values())
    text = osm.plan("--retry-errored", "tb/full").out
    assert "↻ tb/full" in text
    assert f"re-runs {sum(errored.values())} errored attempt" in text

    applied = osm.apply("--auto-approve", "--retry-errored", "tb/full")
    assert applied.code == 0, applied
    assert platform.submits() == submits + 1
    lock = read_lock(repo)
    entry = lock["runs"]["tb/full"]
    retry_id = entry["run_id"]
    assert retry_id != base_id
    assert entry["retry_of"] == base_id
    assert entry["retry_agents"] == [0]
    assert entry["spec_digest"] == first["spec_digest"]
    history = [h for h in lock["history"] if h["address"] == "tb/full"]
    assert [(h["run_id"], h["reason"]) for h in history] == [(base_id, "retried")]
    assert run_config(platform, retry_id) == {
        "tasks": {"task_names": tasks},
        "attempts": count,
        "agents": 1,
    }

    # The config is unchanged: nothing more is paid for, the retry run is downloaded once
    # it ended, and asking again before that is blocked.
    blocked = plan_items(osm.plan("--retry-errored", "tb/full", "--format", "json"))
    assert blocked["tb/full"]["action"] == "blocked"
    assert blocked["tb/full"]["reason"] == "retry_not_ready"
    assert "tb/full" not in plan_items(osm.plan("--format", "json"))
    clock.advance(ENDED)
    downloaded = osm.apply("--auto-approve")
    assert downloaded.code == 0, downloaded
    assert platform.submits() == submits + 1
    again = osm.plan("--detailed-exitcode")
    assert again.code == 0, again
    # The plan's results table shows the retried run (the Platform's summary), labelled.
    rows = osm.plan("--format", "json").json()["results"]
    assert [(r["run_id"], r["stage"]) for r in rows] == [(base_id, "retried")]

    # The result of the address is the retried run with the retry's attempts in place of
    # as many errored ones; results say which attempts came from the retry.
    lock = read_lock(repo)
    retry_dir = repo / lock["runs"]["tb/full"]["downloads"]["directory"]
    again_errored = errored_of(retry_dir / "results.csv")
    shown = osm.results("tb/full", "--no-fetch", "--format", "json")
    assert shown.code == 0, shown
    assert [e.message for e in VALIDATOR.iter_errors(shown.json())] == []
    (address,) = shown.json()["addresses"]
    runs = address["runs"]
    assert [r["run_id"] for r in runs] == [base_id]
    (run,) = runs
    assert run["current"] is True
    assert run["retried_attempts"] == len(tasks) * count
    assert run["retry_runs"] == [lock["runs"]["tb/full"]["run_name"]]
    merged = sum(errored.values()) - len(tasks) * count + sum(again_errored.values())
    assert run["agents"][0]["errored_attempts"] == merged
    assert run["agents"][0]["attempts"] == 89 * 2
    text = osm.results("tb/full", "--no-fetch").out
    assert f"{len(tasks) * count} attempt" in text
    assert "from retry run" in text


def test_trailer_asks_for_the_retry_once(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = ended_and_downloaded(tmp_path, platform, clock)
    repo = osm.repo
    base_id = read_lock(repo)["runs"]["tb/full"]["run_id"]
    submits = platform.submits()
    sha = commit(
        repo, "Retry tb/full's errored attempts", "Osmosis-Retry-Errored: tb/full", allow_empty=True
    )
    planned = osm.plan("--format", "json")
    assert plan_items(planned)["tb/full"]["action"] == "retry", planned
    assert any("Osmosis-Retry-Errored" in w for w in planned.json()["warnings"]), planned

    applied = osm.apply("--auto-approve")
    assert applied.code == 0, applied
    assert platform.submits() == submits + 1
    lock = read_lock(repo)
    assert lock["runs"]["tb/full"]["retry_of"] == base_id
    assert sha in lock["reruns"]["tb/full"]
    commit(repo, "Record the retry")  # the lockfile, as CI commits it
    # The request is spent: the next plans pay for nothing, before and after the retry ended.
    assert "tb/full" not in plan_items(osm.plan("--format", "json"))
    clock.advance(ENDED)
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == submits + 1
    assert "tb/full" not in plan_items(osm.plan("--format", "json"))


def test_nothing_errored_and_not_downloaded(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/one": SMALL})
    osm = Retrying(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    submits = platform.submits()
    # Running: nothing to read yet, so the retry is blocked, and nothing is paid.
    running = osm.plan("--retry-errored", "tb/one", "--format", "json")
    item = plan_items(running)["tb/one"]
    assert (item["action"], item["reason"]) == ("blocked", "retry_not_ready")
    assert "only an ended run can be retried" in item["details"][0]
    applied = osm.apply("--auto-approve", "--retry-errored", "tb/one")
    assert platform.submits() == submits
    clock.advance(ENDED)
    # Ended, not downloaded: blocked until the download; the same apply downloads it.
    ended = osm.plan("--retry-errored", "tb/one", "--format", "json")
    items = [a for a in ended.json()["actions"] if a["address"] == "tb/one"]
    assert {a["action"] for a in items} == {"download", "blocked"}
    assert osm.apply("--auto-approve", "--retry-errored", "tb/one").code == 0
    assert platform.submits() == submits
    # Downloaded, one attempt, passed or failed but not errored: nothing to retry.
    lock = read_lock(repo)
    assert not errored_of(repo / lock["runs"]["tb/one"]["downloads"]["directory"] / "results.csv")
    done = osm.plan("--retry-errored", "tb/one", "--format", "json")
    assert "tb/one" not in plan_items(done)
    assert any("nothing to retry" in w for w in done.json()["warnings"]), done
    assert applied.code in (0, 3)


def test_a_saved_plan_carries_its_retry(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = ended_and_downloaded(tmp_path, platform, clock)
    base_id = read_lock(osm.repo)["runs"]["tb/full"]["run_id"]
    submits = platform.submits()
    saved = tmp_path / "retry.plan.json"
    planned = osm.plan("--retry-errored", "tb/full", "--out", str(saved))
    assert planned.code == 0, planned
    applied = osm.apply(str(saved))  # the flag was the plan's; the saved plan holds it
    assert applied.code == 0, applied
    assert platform.submits() == submits + 1
    assert read_lock(osm.repo)["runs"]["tb/full"]["retry_of"] == base_id
