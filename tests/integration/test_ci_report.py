"""The collect job's HTML report (issue 24): ``osmosis-ci commit-lockfile --results-dir
results`` (what the collect and apply workflows run after ``osmosis-apply``) writes
``results/report.html`` from the runs' files already in the repository and commits it with
the lockfile, so the report is browsable in the repository. Real runs of the loopback
Platform, a real bare remote, the real ``osmosis-ci`` executable, headless Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.browser import PageVisit
from tests.support.git import git
from tests.support.osmosis import Osmosis, init_repo, start_platform

from .test_results_cli import ADDRESS, category_config

BIN = Path(sys.executable).parent
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def _collect_commit(repo: Path) -> subprocess.CompletedProcess[str]:
    (repo / ".osmosis" / "message.txt").write_text("osmosis-collect: results [skip ci]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [
            str(BIN / "osmosis-ci"),
            "--dir",
            str(repo),
            "commit-lockfile",
            "--message-file",
            str(repo / ".osmosis" / "message.txt"),
            "--branch",
            "main",
            "--results-dir",
            "results",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _repo_with_two_runs(tmp_path: Path) -> tuple[Path, Path]:
    server = start_platform(tmp_path / "platform", speed=2000.0)
    try:
        repo = init_repo(tmp_path / "repo", configs={ADDRESS: category_config()})
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
        git(repo, "remote", "add", "origin", str(remote))
        git(repo, "push", "-q", "origin", "main")
        osm = Osmosis(repo, server)
        assert osm.apply("--auto-approve", "--wait", "--wait-timeout", "120").code == 0
        again = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120", "--replace", ADDRESS)
        assert again.code == 0, again
    finally:
        server.close()
    return repo, remote


def test_collect_commits_a_browsable_html_report_under_results(
    tmp_path: Path, browser_page: PageVisit
) -> None:
    repo, remote = _repo_with_two_runs(tmp_path)
    done = _collect_commit(repo)
    assert done.returncode == 0, done.stderr
    assert "file(s) updated under results/" in done.stderr, done.stderr
    committed = git(remote, "show", "main:results/report.html")
    report = repo / "results" / "report.html"
    assert committed == report.read_text(encoding="utf-8").rstrip("\n")
    assert ADDRESS in committed and "<script" not in committed
    # The report is the same page as osmosis-results --html: both runs' trend, the agents,
    # the per-task grid of the newest run read from the files in the repository, the cost.
    url = report.as_uri()
    browser_page.goto(url)
    assert browser_page.requests == [url]
    assert browser_page.console_errors == [] and browser_page.page_errors == []
    charts = browser_page.page.locator("svg[data-chart]")
    kinds = sorted(charts.nth(i).get_attribute("data-chart") or "" for i in range(charts.count()))
    assert kinds == ["agents", "cost", "grid", "trend"]
    assert browser_page.page.locator("svg[data-chart=trend] circle").count() == 2
    browser_page.screenshot(ARTIFACTS / "collect-report.png")

    # Nothing changed since: the report is not rewritten and nothing new is committed.
    before = git(remote, "rev-parse", "main")
    again = _collect_commit(repo)
    assert again.returncode == 0, again.stderr
    assert git(remote, "rev-parse", "main") == before


def test_a_symlinked_report_is_refused_and_nothing_is_pushed(tmp_path: Path) -> None:
    repo, remote = _repo_with_two_runs(tmp_path)
    victim = tmp_path / "victim.html"
    victim.write_text("precious\n")
    (repo / "results").mkdir(exist_ok=True)
    os.symlink(victim, repo / "results" / "report.html")
    before = git(remote, "rev-parse", "main")
    done = _collect_commit(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "results/report.html is a symlink" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert victim.read_text() == "precious\n"
    assert git(remote, "rev-parse", "main") == before
