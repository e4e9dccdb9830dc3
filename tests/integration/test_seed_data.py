"""Seed data reaches the user: the catalog's source and pass threshold in the plan, the
leaderboard and unavailable tasks in the results table, and the run's logs as a download
type, end to end against the local Platform over loopback HTTP."""

from __future__ import annotations

from pathlib import Path

from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    init_repo,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

SUPPORT_TICKETS = """\
[experiment]
benchmark = "acme/support-tickets@2.0"

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5"
api_key_secret = "OPENAI_API_KEY"
"""


def test_logs_download_and_the_results_compare_with_the_leaderboard(tmp_path: Path) -> None:
    clock = FakeClock()
    platform = start_platform(tmp_path / "platform", clock=clock)
    try:
        osm = Osmosis(
            init_repo(
                tmp_path / "repo",
                configs={
                    "tb/smoke": smoke_config("openai/gpt-5"),
                    "acme/billing": SUPPORT_TICKETS,
                },
            ),
            platform,
        )
        items = plan_items(osm.plan("--format", "json"))
        assert items["tb/smoke"]["source_url"] == "https://www.tbench.ai"
        assert items["acme/billing"]["pass_threshold"] == 0.8
        text = osm.plan().out
        assert (
            "benchmark: source https://registry.harborframework.com/datasets/acme/support-tickets"
            " · pass threshold 0.8"
        ) in text
        assert osm.apply("--auto-approve").code == 0

        clock.advance(30 * 86400)  # every run has ended
        result = osm.apply("--auto-approve", "--download-types", "summary,results,logs")
        assert result.code == 0, result
        lock = read_lock(osm.repo)
        for address, entry in lock["runs"].items():
            assert entry["status"] in ("finished", "failed"), address
            assert "logs" in entry["downloads"]["types"], address
            logs = osm.repo / entry["downloads"]["directory"] / "logs.txt"
            assert logs.is_file() and logs.stat().st_size > 0, address

        results = osm.plan("--format", "markdown").out.split("**Results**", 1)[1]
        # The whole benchmark (no task selection) is compared with its published score...
        assert "vs leaderboard 71.0% (#1, full)" in results  # gpt-5 · codex, acme
        # ... tb/smoke, a 1-task run, is not: a published score says nothing about it.
        smoke = [line for line in results.splitlines() if line.startswith("| `tb/smoke` |")]
        assert smoke and not any("leaderboard" in line for line in smoke), smoke
        assert (
            "acme/billing: 2 tasks of the benchmark unavailable (Fixture files missing "
            "from the 2.0 release), not run or scored"
        ) in results
    finally:
        platform.close()


def test_each_run_records_the_pass_threshold_it_runs_with_and_history_keeps_it(
    tmp_path: Path,
) -> None:
    # Issue 35, finding 6: a history entry keeps no config, so the threshold a run was
    # scored at (the config's, else the catalog's) is recorded with the run when it is
    # submitted, and carried into history when a new run replaces it.
    clock = FakeClock()
    platform = start_platform(tmp_path / "platform", clock=clock)
    own = SUPPORT_TICKETS + "\n[execution]\npass_threshold = 0.6\n"
    try:
        repo = init_repo(tmp_path / "repo", configs={"acme/billing": SUPPORT_TICKETS,
                                                     "acme/lenient": own})  # fmt: skip
        osm = Osmosis(repo, platform)
        assert osm.apply("--auto-approve").code == 0
        runs = read_lock(repo)["runs"]
        assert runs["acme/billing"]["pass_threshold"] == 0.8  # the catalog's
        assert runs["acme/lenient"]["pass_threshold"] == 0.6  # the config's
        first = runs["acme/lenient"]["run_id"]

        clock.advance(30 * 86400)  # the runs ended
        write_config(repo, "acme/lenient", own.replace("0.6", "0.65"))
        commit(repo, "Raise the threshold")
        result = osm.apply("--auto-approve")
        assert result.code == 0, result
        lock = read_lock(repo)
        assert lock["runs"]["acme/lenient"]["pass_threshold"] == 0.65
        (former,) = [h for h in lock["history"] if h["run_id"] == first]
        assert former["pass_threshold"] == 0.6 and "spec" not in former
    finally:
        platform.close()
