"""Every ``platform_url`` the local Platform hands out opens a page on loopback (issue 21):
a real headless chromium (Debian's, tests/support/browser.py) finds the run's name, status
and pass@1, the benchmark's sync state and leaderboard, and presses a failed sync's retry
button; a failed run's page names its error (read as HTML, no browser needed)."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
import pytest

from reconciler.local_platform.core import DEFAULT_WORKSPACE
from tests.support.browser import PageVisit

from .conftest import FakeClock, LocalServer

TB = "terminal-bench-2-1"


@pytest.fixture
def finished_run(make_local_server: Any) -> tuple[LocalServer, dict[str, Any]]:
    srv = make_local_server(clock=FakeClock(), speed=1.0, workspaces=("team",))
    srv.platform.set_secret("team", "OPENAI_API_KEY", "sk-page-test-value")
    body = {
        "experiment_config": {"benchmark": TB},
        "tasks_config": {"categories": ["games"]},
        "agents": [
            {
                "harness": "codex",
                "model": {"type": "provider", "model": "openai/gpt-5", "api_key_secret": "OPENAI_API_KEY"},
                "env": {},
            },
            {
                "harness": "terminus-2",
                "model": {"type": "provider", "model": "openai/gpt-5-mini", "api_key_secret": "OPENAI_API_KEY"},
                "env": {},
            },
        ],
    }  # fmt: skip
    headers = srv.auth("team")
    run = httpx.post(f"{srv.url}/api/cli/benchmark-runs", json=body, headers=headers).json()
    srv.clock.advance(3 * 3600)
    detail = httpx.get(f"{srv.url}/api/cli/benchmark-runs/{run['id']}", headers=headers).json()
    assert detail["benchmark_run"]["status"] in ("finished", "failed")
    return srv, detail


def test_run_page_shows_name_status_progress_agents_and_pass_at_1(
    browser_page: PageVisit, finished_run: tuple[LocalServer, dict[str, Any]]
) -> None:
    srv, detail = finished_run
    run = detail["benchmark_run"]
    assert run["platform_url"].startswith(srv.url)
    browser_page.goto(run["platform_url"])
    page = browser_page.page
    assert page.text_content("#run-name") == run["name"]
    assert page.text_content("#status") == run["status"]
    progress = page.text_content("#progress") or ""
    assert f"{detail['progress']['ingested']:,} of {detail['progress']['expected']:,}" in progress
    rows = page.locator("#agents tbody tr")
    assert rows.count() == 2
    best = max(m["pass_at_1"]["value"] for m in detail["agent_metrics"])
    assert page.text_content("#pass-at-1") == f"{best * 100:.1f}%"
    first = next(
        m
        for m in detail["agent_metrics"]
        if m["benchmark_run_agent_id"] == detail["agents"][0]["id"]
    )
    p1 = first["pass_at_1"]
    shown = rows.nth(0).locator("td").nth(4).text_content()
    assert shown == (
        f"{p1['value'] * 100:.1f}% (95% CI {p1['ci_low'] * 100:.1f}%–{p1['ci_high'] * 100:.1f}%)"
    )
    assert browser_page.page_errors == [] and browser_page.console_errors == []
    assert all(url.startswith(srv.url) for url in browser_page.requests)
    assert "sk-page-test-value" not in page.content()
    # The benchmark link on the run page opens the benchmark's page.
    page.click("#benchmark a")
    page.wait_for_selector("#leaderboard")
    assert page.text_content("#benchmark-name") == "Terminal-Bench 2.1"


def test_benchmark_and_leaderboard_pages(browser_page: PageVisit, make_local_server: Any) -> None:
    srv = make_local_server()
    info = httpx.get(f"{srv.url}/api/cli/benchmarks/hle", headers=srv.auth()).json()
    browser_page.goto(info["benchmark"]["platform_url"])
    page = browser_page.page
    assert page.text_content("#benchmark-name") == "HLE"
    assert (page.text_content("#sync-status") or "").startswith("ready")
    board = page.locator("#leaderboard tbody tr")
    assert board.count() == len(info["leaderboard"])
    top = info["leaderboard"][0]
    cells = board.nth(0).locator("td")
    assert cells.nth(1).text_content() == top["model"]
    assert (cells.nth(4).text_content() or "").startswith(f"{top['pass_at_1']['value'] * 100:.1f}%")
    page.click("text=Leaderboard page")
    page.wait_for_selector("#leaderboard")
    assert "leaderboard" in page.title().lower()
    assert page.locator("#leaderboard tbody tr").count() == len(info["leaderboard"])


def test_a_failed_sync_has_a_retry_button_that_retries_it(
    browser_page: PageVisit, make_local_server: Any
) -> None:
    srv = make_local_server()
    ref = "acme%2Fbroken-eval%400.3"
    info = httpx.get(f"{srv.url}/api/cli/benchmarks/{ref}", headers=srv.auth()).json()["benchmark"]
    browser_page.goto(info["platform_url"])
    page = browser_page.page
    assert (page.text_content("#sync-status") or "").startswith("failed")
    assert "tag not found" in (page.text_content("#sync-status") or "")
    page.click("#retry-sync")
    page.wait_for_load_state("load")
    assert (page.text_content("#sync-status") or "").startswith("ready")
    assert page.text_content("#task-count") == "12"
    after = httpx.get(f"{srv.url}/api/cli/benchmarks/{ref}", headers=srv.auth()).json()["benchmark"]
    assert after["sync_status"] == "ready"
    # A form from elsewhere (no token of this data dir) cannot press it.
    forged = httpx.post(f"{info['platform_url']}/retry-sync", data={"token": "x"})
    assert forged.status_code in (403, 409)


def test_unknown_pages_answer_404_pages(make_local_server: Any) -> None:
    srv = make_local_server()
    assert httpx.get(f"{srv.url}/nowhere/benchmarks").status_code == 404
    # The workspace a server starts with (``local`` since issue 37) has pages; a run it
    # does not hold is a 404 page, not the workspace's.
    ws = DEFAULT_WORKSPACE
    assert httpx.get(f"{srv.url}/{ws}/secrets").status_code == 200
    missing = httpx.get(f"{srv.url}/{ws}/benchmarks/bmr_nope")
    assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
    assert "bmr_nope" in missing.text


def test_a_failed_runs_page_shows_its_error_and_says_it_was_simulated(
    make_local_server: Any,
) -> None:
    """Issue 37, finding 8: a failed run's page showed no error at all."""
    srv = make_local_server(clock=FakeClock(), speed=1.0, workspaces=("team",))
    srv.platform.set_secret("team", "OPENAI_API_KEY", "sk-page-test-value")
    model = {
        "type": "provider",
        "model": "openai/always-errors",
        "api_key_secret": "OPENAI_API_KEY",
    }
    body = {
        "experiment_config": {"benchmark": TB},
        "tasks_config": {"categories": ["games"]},
        "agents": [{"harness": "codex", "model": model, "env": {}}],
    }
    headers = srv.auth("team")
    run = httpx.post(f"{srv.url}/api/cli/benchmark-runs", json=body, headers=headers).json()
    srv.clock.advance(3 * 3600)
    detail = httpx.get(f"{srv.url}/api/cli/benchmark-runs/{run['id']}", headers=headers).json()
    assert detail["benchmark_run"]["status"] == "failed"
    logs = httpx.get(f"{srv.url}/api/cli/benchmark-runs/{run['id']}/logs", headers=headers).json()
    (last_error,) = [e["message"] for e in logs["logs"] if e["level"] == "error"]
    page = httpx.get(detail["benchmark_run"]["platform_url"])
    assert page.status_code == 200
    (shown,) = re.findall(r'<dd id="error"><span class="failed">(.*?)</span></dd>', page.text)
    assert html.unescape(shown) == last_error
    assert "the model endpoint answered 502 Bad Gateway" in shown and "simulated:" in shown
