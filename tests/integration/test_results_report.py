"""The HTML report leads with the decision (finding 8): in Debian's headless chromium at
1280 px, the gate's one-line summary and the verdicts table sit above the first scroll;
long tables and per-task grids fold; smoke runs are labelled and never a trend point; a
renamed address carries its runs. The screenshot is written where the test prints it."""

from __future__ import annotations

import random
from pathlib import Path

from reconciler.results import html as html_report
from reconciler.results.build import build_address_reports, build_gate
from reconciler.results.data import parse_results_csv
from tests.support.browser import PageVisit
from tests.support.results import Family, attempts_of, results_csv

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
VIEWPORT = {"width": 1280, "height": 800}


def _family(addresses: int) -> Family:
    """``addresses`` configs, each with an accepted baseline and a newer run on 30 tasks;
    the first regressed by nine tenths of its pass rate, the rest unchanged."""
    rng = random.Random(4)
    family = Family()
    for n in range(addresses):
        rates = [rng.random() for _ in range(30)]
        address = f"tb/config-{n:02d}"
        family.add(address, f"base{n}", results_csv(attempts_of(rates, 1, rng)))
        family.accept(address, f"base{n}")
        newer = [r * 0.1 for r in rates] if n == 0 else rates
        family.add(address, f"new{n}", results_csv(attempts_of(newer, 1, rng)))
    return family


def _report(family: Family, path: Path) -> str:
    state, load = family.state(), family.load()
    reports = build_address_reports(state, (), load)
    outcomes = {}
    for report in reports:
        for line in report.runs:
            found = load(line.report.run)
            if found is not None:
                outcomes[line.report.run.run_id] = found
    text = html_report.render_html(
        reports,
        outcomes,
        build_gate(state, load),
        about=html_report.About("github.com/acme/evals", "0123456789ab", "2026-05-02T10:00:00Z"),
    )
    path.write_text(text, encoding="utf-8")
    return text


def test_the_report_leads_with_the_decision_above_the_first_scroll(
    browser_page: PageVisit, tmp_path: Path
) -> None:
    page_file = tmp_path / "report.html"
    text = _report(_family(24), page_file)
    # The decision comes first in the file, too: before any address's detail.
    assert text.index('id="gate-summary"') < text.index('id="verdicts"') < text.index("<h2")
    page = browser_page.page
    page.set_viewport_size(VIEWPORT)
    browser_page.goto(page_file.as_uri())
    assert browser_page.requests == [page_file.as_uri()]
    summary = page.locator("#gate-summary")
    assert summary.inner_text().startswith("gate: 1 worse, ")
    assert "24 comparisons, Holm" in summary.inner_text()
    assert page.locator(".about").inner_text() == (
        "github.com/acme/evals · 0123456789ab · 2026-05-02T10:00:00Z"
    )
    table = page.locator("#verdicts")
    for element in (summary, table):
        box = element.bounding_box()
        assert box is not None and box["y"] + box["height"] <= VIEWPORT["height"], box
    # 24 verdicts: 20 shown, the other 4 folded (in the page, not visible until opened).
    assert table.locator("tr[data-verdict]").count() == 20
    folded = page.locator("#verdicts-more tr[data-verdict]")
    assert folded.count() == 4 and not folded.first.is_visible()
    failing = page.locator("tr.fails").inner_text().split("\t")
    assert failing[0].startswith("tb/config-00") and failing[1:3] == ["name-new0", "name-base0"]
    assert failing[-1] == "worse beyond the margin · fails the gate"
    # Every column fits the screen's width.
    box = table.bounding_box()
    assert box is not None and box["x"] + box["width"] <= VIEWPORT["width"], box
    # Each address's per-task grid (30 tasks) folds too.
    assert page.locator("details svg[data-chart=grid]").count() == 24
    shot = ARTIFACTS / "results-report-top.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))  # the first screen, as a reader opens it
    print(f"screenshot: {shot}")


def test_smoke_runs_are_labelled_and_never_a_trend_point(
    browser_page: PageVisit, tmp_path: Path
) -> None:
    rng = random.Random(2)
    rates = [rng.random() for _ in range(12)]
    family = Family()
    family.add("tb/a", "full1", results_csv(attempts_of(rates, 1, rng)))
    family.add("tb/a", "smoke1", results_csv(attempts_of(rates[:2], 1, rng)), stage="smoke")
    family.add("tb/a", "full2", results_csv(attempts_of(rates, 1, rng)))
    page_file = tmp_path / "report.html"
    text = _report(family, page_file)
    browser_page.goto(page_file.as_uri())
    page = browser_page.page
    assert page.locator("tr.smoke").inner_text().split("\t")[1] == "smoke, complete"
    # Two full runs, two trend points: the smoke run between them is not one.
    assert page.locator("svg[data-chart=trend] circle").count() == 2
    assert "name-smoke1" not in page.locator("svg[data-chart=trend]").inner_html()
    assert parse_results_csv(family.files["smoke1"]).paired and "smoke" in text
