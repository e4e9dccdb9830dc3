"""Re-run only what errored (docs/retrying.md), end to end: over loopback HTTP to the local
Platform, in a real git repository, through the CLI entry points."""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from reconciler.ci.announce import announce_state
from reconciler.ci.github import GitHubAPI
from reconciler.ci.report import repo_loader
from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.results import main as results_main
from reconciler.model import LockState
from reconciler.results.data import parse_results_csv
from reconciler.results.numbers import HEADLINE as HEADLINE_COLUMN
from reconciler.state.lockfile import read_lockfile
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.github_fake import FakeGitHub
from tests.support.osmosis import Osmosis, Platform, Result, init_repo, plan_items, read_lock

from .test_results_surfaces import _headlines, _html_row, _md_row, _text_row


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


def test_every_surface_shows_the_merged_result_once(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    """After a retry, the plan (text, markdown, JSON), the apply that downloaded it, the
    pull-request comment and ``osmosis-results`` (text, markdown, JSON, HTML) show the
    address's one merged number (the retried run with the retry's attempts in place of
    errored ones), each labelled with the retry run it counts."""
    osm = ended_and_downloaded(tmp_path, platform, clock)
    assert osm.apply("--auto-approve", "--retry-errored", "tb/full").code == 0
    clock.advance(ENDED)
    applied = osm.apply("--auto-approve", "--wait", "--wait-timeout", "60")
    assert applied.code == 0, applied
    state = read_lockfile(osm.repo / "state" / "osmosis.lock", platform=None, workspace=None)
    entry = state.runs["tb/full"]
    retry_name = entry.run_name or ""
    assert entry.retry_of and retry_name
    base = next(h for h in state.history if h.run_id == entry.retry_of)
    name = base.run_name or ""
    platform_summary = base.results.agents[0] if base.results else None
    assert platform_summary is not None

    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    applied_row = _text_row(applied.out.rsplit("Results of", 1)[1], name)
    _headlines(applied_row[HEADLINE_COLUMN], "apply", seen, name)
    plan_text = osm.plan("--no-color", "--results").out.split("Results of", 1)[1]
    plan_row = _text_row(plan_text, name)
    _headlines(plan_row[HEADLINE_COLUMN], "plan text", seen, name)
    md = osm.plan("--format", "markdown").out.split("**Results**", 1)[1]
    _headlines(md, "plan markdown", seen, name)
    plan_json = osm.plan("--format", "json").json()
    assert [e.message for e in VALIDATOR.iter_errors(plan_json)] == []
    (row,) = plan_json["results"]
    assert (row["run_id"], row["stage"]) == (base.run_id, "retried")
    numbers = row["numbers"]
    seen[name]["pass@1"].add(f"{numbers['pass_at_1'] * 100:.1f} (plan json)")
    seen[name]["low"].add(f"{numbers['ci']['low'] * 100:.1f} (plan json)")
    seen[name]["high"].add(f"{numbers['ci']['high'] * 100:.1f} (plan json)")
    seen[name]["errored"].add(f"{numbers['errored_attempts']} (plan json)")
    text = osm.results("--width", "240", "--no-fetch").out
    _headlines(_text_row(text, name)[HEADLINE_COLUMN], "results text", seen, name)
    doc = osm.results("--format", "json", "--no-fetch").json()
    (listed,) = [r for r in doc["addresses"][0]["runs"] if r["run_name"] == name]
    assert listed["retry_runs"] == [retry_name]
    shown = listed["agents"][0]
    seen[name]["pass@1"].add(f"{shown['pass_at_1'] * 100:.1f} (results json)")
    seen[name]["low"].add(f"{shown['ci']['low'] * 100:.1f} (results json)")
    seen[name]["high"].add(f"{shown['ci']['high'] * 100:.1f} (results json)")
    seen[name]["errored"].add(f"{shown['errored_attempts']} (results json)")
    report = tmp_path / "report.html"
    assert osm.results("--html", str(report), "--no-fetch").code == 0
    html = report.read_text(encoding="utf-8")
    _headlines(html.split('id="address-tb/full"', 1)[1], "results html", seen, name)
    # osmosis-results kept both runs' files under results/ (the collect job commits them):
    # the pull-request comment reads them there.
    comment = _announced(osm, state)
    _headlines(comment, "PR comment", seen, name)

    for number, values in seen[name].items():
        assert len({v.split(" (")[0] for v in values}) == 1, (number, sorted(values))
    assert len(seen[name]["pass@1"]) == 8  # every surface was read
    # The one number is the merged one, not the Platform's summary of the retried run.
    assert shown["errored_attempts"] != platform_summary.errored
    assert numbers["errored_attempts"] == shown["errored_attempts"]

    tables = {
        "apply": applied_row,
        "plan text": plan_row,
        "plan markdown": _md_row(md, name),
        "PR comment": _md_row(comment, name),
        "results markdown": _md_row(osm.results("--format", "markdown", "--no-fetch").out, name),
        "results html": _html_row(html, name),
        "results text": _text_row(text, name),
    }
    for column in ("cost/task", "cost/attempt", "tokens/task", "tokens/attempt"):
        cells = {where: cells[column] for where, cells in tables.items() if column in cells}
        assert "plan markdown" in cells and "results html" in cells, cells
        assert len(set(cells.values())) == 1, (column, cells)
    # Each surface says the number includes the retry run.
    assert (row["retry_runs"], row["retries_not_counted"]) == ([retry_name], [])
    label = f"with retry run {retry_name}"
    for where, cells in tables.items():
        if where.startswith("results"):
            continue  # osmosis-results says it in the run's note
        assert label in " ".join(cells.values()), (where, cells)
    note = f"from retry run {retry_name}, in place of errored ones"
    assert note in " ".join(text.split())
    assert f"<small>note: {name}: " in html and note in html


def _announced(osm: Retrying, state: LockState) -> str:
    """The pull-request comment ``osmosis-ci announce`` posts for the retry run."""
    entry = state.runs["tb/full"]
    github = FakeGitHub(repo="o/r").start()
    try:
        assert entry.requested_by is not None
        github.add_pull(7, entry.requested_by)
        with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
            _state, report = announce_state(
                api, state, now=datetime.now(UTC), load=repo_loader(osm.repo, state)
            )
        assert report.failed == [] and len(report.posted) == 1, report
        (body,) = github.bodies(7)
    finally:
        github.close()
    return body
