"""One number per run, on every surface (issue 35, finding 1): two real runs of the local
Platform (an A/A pair, 30 tasks × 3 attempts, some of them errored), then the plan's
results table (text, markdown, JSON), the apply that waited for them, the pull-request
comment ``osmosis-ci announce`` posts, ``osmosis-results`` text, JSON and HTML, and the
Platform's own run page. Each number (pass@1, its interval, the errored attempts, cost and
tokens per task and per attempt) is read from each surface and found with one value."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.ci.announce import comparison_markdown, results_comment
from reconciler.ci.report import repo_loader
from reconciler.cli.results import main as results_main
from reconciler.plan import result_rows
from reconciler.results.numbers import HEADLINE as HEADLINE_COLUMN
from reconciler.state.lockfile import read_lockfile
from tests.support.osmosis import Osmosis, Result, init_repo, start_platform

from .test_results_cli import ADDRESS, category_config

HEADLINE = re.compile(
    r"(?P<p>\d+\.\d)% \[(?P<low>\d+\.\d)–(?P<high>\d+\.\d)\] · (?P<errored>\d+) errored"
)
# The notes under a fitted text table (``render.tables.text_results``): not rows.
TABLE_NOTES = ("note", "left out to fit", "... ")
PAGE_P1 = re.compile(r"(?P<p>\d+\.\d)% \(95% CI (?P<low>\d+\.\d)%–(?P<high>\d+\.\d)%\)")


class Surfaces(Osmosis):
    def results(self, *args: str) -> Result:
        return self._call(results_main, list(args), None)


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("surfaces")
    server = start_platform(tmp / "platform", speed=2000.0)
    repo = init_repo(tmp / "repo", configs={ADDRESS: category_config()})
    osm = Surfaces(repo, server)
    first = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
    assert first.code == 0, first
    second = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120", "--replace", ADDRESS)
    assert second.code == 0, second
    yield osm, second
    server.close()


def _headlines(text: str, where: str, seen: dict[str, dict[str, set[str]]], run: str) -> None:
    found = HEADLINE.findall(" ".join(text.split()))
    assert found, f"{where}: no headline in\n{text}"
    for p, low, high, errored in found[:1]:
        for name, value in (("pass@1", p), ("low", low), ("high", high), ("errored", errored)):
            seen[run][name].add(f"{value} ({where})")


def _text_row(text: str, run: str) -> dict[str, str]:
    """The cells (by header) of the first row of a fitted text table (``results.table``)
    that names ``run``, its wrapped lines joined back."""
    lines = text.splitlines()
    for at, rule in enumerate(lines):
        if at == 0 or not rule.strip() or set(rule.strip()) - {"-", " "}:
            continue
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
        spans = [
            (a, (spans[i + 1][0] if i + 1 < len(spans) else 10_000))
            for i, (a, _) in enumerate(spans)
        ]
        header = [lines[at - 1][a:b].strip() for a, b in spans]
        rows: list[list[str]] = []
        for line in lines[at + 1 :]:
            if (
                not line.strip()
                or not line.startswith("  ")
                or line.lstrip().startswith(TABLE_NOTES)
            ):
                break
            cells = [line[a:b].strip() for a, b in spans]
            # A row's first line has its headline (a percentage or "–"); the others continue it.
            headline = cells[header.index(HEADLINE_COLUMN)]
            if re.match(r"\d+\.\d%|–$", headline) or not rows:
                rows.append(cells)
            else:
                rows[-1] = [
                    f"{old} {new}".strip() for old, new in zip(rows[-1], cells, strict=True)
                ]
        for cells in rows:
            if any(run in cell for cell in cells[:3]):
                return dict(zip(header, cells, strict=True))
    raise AssertionError(f"no text table row names {run}:\n{text}")


def _md_row(text: str, run: str) -> dict[str, str]:
    """The cells (by header) of the first markdown table row that names ``run``."""
    header: list[str] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not header:
            header = cells
        elif run in line and len(cells) == len(header):
            return dict(zip(header, cells, strict=True))
    raise AssertionError(f"no table row names {run}:\n{text}")


def _html_row(text: str, run: str) -> dict[str, str]:
    """The cells (by header) of the first HTML table row that names ``run``."""
    for table in re.findall(r"<table[^>]*>(.*?)</table>", text, re.S):
        header = re.findall(r"<th>(.*?)</th>", table)
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            if cells and run in cells[0] and len(cells) == len(header):
                return dict(zip(header, cells, strict=True))
    raise AssertionError(f"no table row names {run}")


def test_every_surface_shows_one_value_per_number(surfaces: Any, tmp_path: Path) -> None:
    osm, applied = surfaces
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    state = read_lockfile(osm.repo / "state" / "osmosis.lock", platform=None, workspace=None)
    entry = state.runs[ADDRESS]
    newest = entry.run_name or ""
    agent = entry.results.agents[0] if entry.results else None
    assert agent is not None and agent.errored is not None and agent.attempts_per_task == 3

    # apply --wait's results table of the runs it downloaded: what osmosis-apply printed,
    # the last table of its output (a preview before it may show recorded runs).
    assert "Results of" in applied.out, applied
    applied_row = _text_row(applied.out.rsplit("Results of", 1)[1], newest)
    _headlines(applied_row[HEADLINE_COLUMN], "apply", seen, newest)
    # The plan's results table, text and markdown; its JSON carries the same numbers.
    # A plan with nothing to do shows the results table only when asked (--results).
    plan_text = osm.plan("--no-color", "--results").out.split("Results of", 1)[1]
    _headlines(_text_row(plan_text, newest)[HEADLINE_COLUMN], "plan text", seen, newest)
    md = osm.plan("--format", "markdown").out
    _headlines(md.split("**Results**", 1)[1], "plan markdown", seen, newest)
    plan_json = osm.plan("--format", "json").json()
    (row,) = [r for r in plan_json["results"] if r["run_name"] == newest]
    numbers = row["numbers"]
    seen[newest]["pass@1"].add(f"{numbers['pass_at_1'] * 100:.1f} (plan json)")
    seen[newest]["errored"].add(f"{numbers['errored_attempts']} (plan json)")
    # The pull-request comment osmosis-ci announce posts for it.
    load = repo_loader(osm.repo, state)
    comment = results_comment(
        entry, [r for r in result_rows(state) if r.run_id == entry.run_id],
        comparison=comparison_markdown(state, ADDRESS, load),
    )  # fmt: skip
    _headlines(comment, "PR comment", seen, newest)
    # osmosis-results: text, JSON, HTML.
    text = osm.results("--width", "100").out
    _headlines(_text_row(text, newest)[HEADLINE_COLUMN], "results text", seen, newest)
    doc = osm.results("--format", "json").json()
    (listed,) = [r for r in doc["addresses"][0]["runs"] if r["run_name"] == newest]
    shown = listed["agents"][0]
    seen[newest]["pass@1"].add(f"{shown['pass_at_1'] * 100:.1f} (results json)")
    seen[newest]["low"].add(f"{shown['ci']['low'] * 100:.1f} (results json)")
    seen[newest]["high"].add(f"{shown['ci']['high'] * 100:.1f} (results json)")
    seen[newest]["errored"].add(f"{shown['errored_attempts']} (results json)")
    report = tmp_path / "report.html"
    assert osm.results("--html", str(report)).code == 0
    html = report.read_text(encoding="utf-8")
    _headlines(html.split(newest, 1)[1], "results html", seen, newest)
    # The Platform's own run page.
    page = httpx.get(entry.platform_url or "").text
    match = PAGE_P1.search(page)
    assert match is not None, page
    seen[newest]["pass@1"].add(f"{match['p']} (run page)")
    seen[newest]["low"].add(f"{match['low']} (run page)")
    seen[newest]["high"].add(f"{match['high']} (run page)")
    counts = re.search(r"<td>(\d+) / (\d+) / (\d+)</td>", page)
    assert counts is not None
    seen[newest]["errored"].add(f"{counts[3]} (run page)")

    for name, values in seen[newest].items():
        assert len({v.split(" (")[0] for v in values}) == 1, (name, sorted(values))
    assert len(seen[newest]["pass@1"]) >= 9  # every surface was read

    # Cost and tokens, per task and per attempt: one value wherever shown.
    tables = {
        "apply": applied_row,
        "plan text": _text_row(plan_text, newest),
        "plan markdown": _md_row(md.split("**Results**", 1)[1], newest),
        "PR comment": _md_row(comment, newest),
        "results markdown": _md_row(osm.results("--format", "markdown").out, newest),
        "results html": _html_row(html, newest),
        "results text": _text_row(osm.results("--width", "240").out, newest),
    }
    for column, key in (("cost/task", "cost_per_task"), ("cost/attempt", "cost_per_attempt"),
                        ("tokens/task", "tokens_per_task"),
                        ("tokens/attempt", "tokens_per_attempt")):  # fmt: skip
        # A fitted text table may leave a column out; where shown, it has the one value.
        shown_cells = {where: cells[column] for where, cells in tables.items() if column in cells}
        assert "PR comment" in shown_cells and "results html" in shown_cells, shown_cells
        assert len(set(shown_cells.values())) == 1, (column, shown_cells)
        assert shown[key] == pytest.approx(numbers[key], rel=1e-3), (key, shown, numbers)
    assert numbers["cost_per_attempt"] == pytest.approx(numbers["cost_per_task"] / 3, rel=1e-5)
    assert shown["cost_per_attempt"] * shown["attempts"] == pytest.approx(  # total cost
        shown["cost_per_task"] * shown["tasks"], rel=1e-5
    )
