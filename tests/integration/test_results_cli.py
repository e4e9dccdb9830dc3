"""``osmosis-results`` end to end over loopback: real runs of the local Platform, their
outputs kept under results/, paired comparisons with verdicts, baselines in the lockfile,
the regression gate, the HTML report in a real headless browser, and ``osmosis-logs``."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from reconciler.cli.logs import main as logs_main
from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.results import main as results_main
from tests.support.browser import PageVisit
from tests.support.clock import FakeClock
from tests.support.osmosis import Osmosis, Result, init_repo, read_lock, start_platform

ADDRESS = "tb/security"
VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def category_config(model: str = "openai/gpt-5.2", *, attempts: int = 3, note: str = "") -> str:
    return (
        f"# {note or 'security category'}\n"
        "[experiment]\n"
        'benchmark = "terminal-bench-2-1"\n\n'
        "[tasks]\n"
        'categories = ["software-engineering"]\n\n'
        "[[agents]]\n"
        'harness = "terminus-2"\n\n'
        "[agents.model]\n"
        'type = "provider"\n'
        f'model = "{model}"\n'
        'api_key_secret = "OPENAI_API_KEY"\n\n'
        "[execution]\n"
        f"attempts_per_task = {attempts}\n"
        "max_concurrent_attempts = 4\n"
    )


class Results(Osmosis):
    def results(self, *args: str) -> Result:
        return self._call(results_main, list(args), None)

    def logs(self, *args: str) -> Result:
        return self._call(logs_main, list(args), None)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    """One repository with two finished runs of the same config (an A/A pair) and a third
    run of a different model, all downloaded."""
    tmp = tmp_path_factory.mktemp("results")
    server = start_platform(tmp / "platform", speed=2000.0)
    repo = init_repo(tmp / "repo", configs={ADDRESS: category_config()})
    osm = Results(repo, server)
    first = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
    assert first.code == 0, first
    second = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120", "--replace", ADDRESS)
    assert second.code == 0, second
    assert "download" in second.out.split("Waiting for", 1)[1], second
    yield osm
    server.close()


def _runs(osm: Osmosis) -> list[str]:
    lock = read_lock(osm.repo)
    current = lock["runs"][ADDRESS]["run_name"]
    older = [h["run_name"] for h in lock["history"] if h["address"] == ADDRESS]
    return [current, *older]


def test_results_lists_every_run_and_compares_an_aa_pair(world: Results) -> None:
    newest, older = _runs(world)[:2]
    shown = world.results("--width", "100")
    assert shown.code == 0, shown
    assert f"{ADDRESS}: 2 recorded runs, newest first" in shown.out
    assert all(len(line) <= 100 for line in shown.out.splitlines()), shown.out
    assert newest in shown.out and older in shown.out
    # Both runs' files are kept per run, so a fresh checkout can compare them.
    for name in (newest, older):
        assert (world.repo / "results" / ADDRESS / name / "results.csv").is_file()

    aa = world.results("compare", f"{ADDRESS}@{older}", f"{ADDRESS}@{newest}")
    assert aa.code == 0, aa
    assert "Verdict: " in aa.out
    assert "Verdict: worse" not in aa.out and "Verdict: better" not in aa.out
    print(aa.out)


def _plant_regression(path: Path) -> None:
    """Turn most passed attempts of a kept results.csv into failures (read by header): the
    outcome and the reward, since a reward at or above the run's pass threshold passes."""
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    for n, row in enumerate(rows):
        if row["outcome"] == "passed" and n % 4:
            row["outcome"] = "failed"
            if row.get("reward"):
                row["reward"] = "0.0"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def test_baseline_gate_passes_an_aa_pair_and_fails_a_planted_regression(world: Results) -> None:
    newest, older = _runs(world)[:2]
    accepted = world.results("accept", f"{ADDRESS}@{older}", "--format", "json")
    assert accepted.code == 0, accepted
    VALIDATOR.validate(accepted.json())
    lock_text = (world.repo / "state" / "osmosis.lock").read_text(encoding="utf-8")
    assert "version = 3" in lock_text
    assert f'[baselines."{ADDRESS}"]' in lock_text
    assert read_lock(world.repo)["baselines"][ADDRESS]["run_name"] == older

    aa = world.results("--fail-on-regression", "--format", "json")
    assert aa.code == 0, aa
    doc = aa.json()
    VALIDATOR.validate(doc)
    (check,) = doc["regression_checks"]
    assert check["verdict"] != "worse" and doc["regressed"] is False
    assert doc["gate"]["summary"].startswith("gate: 0 worse, ")
    # Strict: an A/A pair on 30 tasks cannot show non-inferiority within ±3 points.
    strict = world.results("--fail-on-regression", "--fail-on-inconclusive-drop")
    assert strict.code == 2, strict
    assert "1 comparison, no adjustment; strict (--fail-on-inconclusive-drop); FAILED" in strict.out
    runs = doc["addresses"][0]["runs"]
    assert [r["baseline"] for r in runs] == [False, True]
    assert all(r["complete"] and r["source"] == "results.csv" for r in runs)

    kept = world.repo / "results" / ADDRESS / newest / "results.csv"
    original = kept.read_text(encoding="utf-8")
    try:
        _plant_regression(kept)
        worse = world.results("--fail-on-regression")
        assert worse.code == 2, worse
        assert "Verdict: worse beyond the margin" in worse.out
        assert "gate: 1 worse, 0 inconclusive, 0 no change; 1 comparison" in worse.out
        compared = world.results("compare", ADDRESS + "@" + older, ADDRESS, "--format", "json")
        VALIDATOR.validate(compared.json())
        (c,) = compared.json()["comparisons"]
        assert c["verdict"] == "worse" and c["delta"] < 0 and c["down"]
        assert compared.code == 0  # without --fail-on-regression a verdict is not a failure
    finally:
        kept.write_text(original, encoding="utf-8")


def test_files_gone_are_fetched_again_and_no_fetch_falls_back_unpaired(world: Results) -> None:
    newest, older = _runs(world)[:2]
    assert world.results().code == 0  # keeps both runs' files under results/
    kept = world.repo / "results" / ADDRESS / older
    saved = {p.name: p.read_bytes() for p in kept.iterdir()}
    local = world.repo / ".osmosis" / "benchmarks" / older
    moved = local.with_name(older + ".away")
    local.rename(moved)
    try:
        for p in kept.iterdir():
            p.unlink()
        unpaired = world.results("compare", f"{ADDRESS}@{older}", ADDRESS, "--no-fetch")
        assert unpaired.code == 0, unpaired
        said = " ".join(unpaired.out.split())  # notes wrap at the terminal's width
        assert "unpaired comparison of the Platform summaries" in said
        assert f"{older}: results.csv not available" in said
        fetched = world.results("compare", f"{ADDRESS}@{older}", ADDRESS)
        assert fetched.code == 0, fetched
        assert "(paired)" in fetched.out
        assert f"fetched from the Platform into results/: {older}" in fetched.err
        assert (kept / "results.csv").read_bytes() == saved["results.csv"]
    finally:
        if moved.exists():
            moved.rename(local)


def test_html_report_renders_offline_in_headless_chromium(
    world: Results, browser_page: PageVisit
) -> None:
    report = world.repo / "results" / "index.html"
    made = world.results("--html", str(report))
    assert made.code == 0, made
    text = report.read_text(encoding="utf-8")
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "<script" not in text
    url = report.as_uri()
    browser_page.goto(url)
    assert browser_page.requests == [url]
    assert browser_page.console_errors == [] and browser_page.page_errors == []
    charts = browser_page.page.locator("svg[data-chart]")
    # One address: its trend, its agents and its per-task grid, plus the cost chart.
    kinds = sorted(charts.nth(i).get_attribute("data-chart") for i in range(charts.count()))
    assert kinds == ["agents", "cost", "grid", "trend"]
    assert browser_page.page.locator("svg[data-chart=trend] circle").count() == 2
    assert browser_page.page.locator("svg[data-chart=grid] rect[data-cell]").count() == 60
    browser_page.screenshot(ARTIFACTS / "results-report.png")


def test_logs_pages_filters_and_documents(world: Results) -> None:
    shown = world.logs(ADDRESS, "--limit", "5")
    assert shown.code == 0, shown
    lines = shown.out.splitlines()
    assert len(lines) == 5 and "[complete] Finished:" in lines[-1]
    assert "older lines: osmosis-logs" in shown.err and "--cursor" in shown.err
    cursor = shown.err.split("--cursor ")[1].split()[0]
    older = world.logs(ADDRESS, "--limit", "5", "--cursor", cursor)
    assert older.code == 0 and older.out.splitlines() != lines
    warnings = world.logs(ADDRESS, "--limit", "200", "--level", "warning", "--format", "json")
    VALIDATOR.validate(warnings.json())
    assert all(line["level"] in ("warning", "error") for line in warnings.json()["lines"])
    bad = world.logs("tb/nope")
    assert bad.code == 1 and "tb/nope: no recorded run" in bad.err


def test_a_stopped_run_says_why_and_is_partial(tmp_path: Path) -> None:
    server = start_platform(tmp_path / "platform", speed=0.05)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/stopped": category_config()})
        osm = Results(repo, server)
        assert osm.apply("--auto-approve").code == 0
        run_id = read_lock(repo)["runs"]["tb/stopped"]["run_id"]
        with contextlib.closing(server.client()) as client:
            client.stop_run(run_id)
        waited = osm.apply("--auto-approve", "--wait", "--wait-timeout", "60")
        assert "tb/stopped" in waited.out
        assert "last error lines (`osmosis-logs tb/stopped@" in waited.out, waited
        assert "Stopped by user; pending attempts were cancelled" in waited.out
        shown = osm.results("tb/stopped", "--format", "json")
        (run,) = shown.json()["addresses"][0]["runs"]
        assert run["complete"] is False and run["status"] == "stopped"
        text = osm.results("tb/stopped", "--width", "100")  # not the terminal's (COLUMNS)
        row = text.out.splitlines()[3:5]  # the status wraps onto the next line at 100 columns
        assert "partial" in row[0] and "(stopped)" in row[1], text.out
        assert "Stopped by user" in text.out
        refused = osm.results("accept", f"tb/stopped@{run_id}")
        assert refused.code == 1 and "a partial run is never a baseline" in refused.err
    finally:
        server.close()


def test_markdown_for_a_pr_comment_has_the_table_and_a_mermaid_trend(world: Results) -> None:
    md = world.results("--format", "markdown")
    assert md.code == 0, md
    assert f"### `{ADDRESS}`" in md.out
    assert "| run | status | commit | agent | pass@1 [95% CI] · errored | tasks×k |" in md.out
    block = md.out.split("```mermaid\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    assert lines[0] == "xychart-beta"
    assert lines[-1].startswith("  line [") and lines[-1].count(",") == 1  # two runs
    # The verdict of a comparison, for a comment.
    compared = world.results("compare", f"{ADDRESS}@~1", ADDRESS, "--format", "markdown")
    assert compared.code == 0 and "| verdict |" in compared.out


def test_logs_follow_prints_new_lines_until_the_run_ends(tmp_path: Path) -> None:
    # The Platform's clock is this test's: the run progresses only while --follow watches.
    clock = FakeClock()
    server = start_platform(tmp_path / "platform", clock=clock)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/follow": category_config(attempts=1)})
        osm = Results(repo, server)
        assert osm.apply("--auto-approve").code == 0
        proc = osm.popen("osmosis-logs", "tb/follow", "--follow", "--interval", "0.1")
        try:
            for _ in range(2000):
                if proc.poll() is not None:
                    break
                clock.advance(30)
                time.sleep(0.05)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
        lines = out.splitlines()
        assert lines[0].split("] ", 1)[1].startswith("Benchmark run ")
        assert lines[-1].split("] ", 1)[1].startswith(("Finished:", "Run failed:")), lines[-3:]
        # Every line once, although the newest page was read many times.
        assert len(lines) == len(set(lines))
        results = [line for line in lines if "[result]" in line]
        assert len(results) == 30  # one attempt per task, none missed
    finally:
        server.close()
