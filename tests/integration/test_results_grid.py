"""A run generator's runs as its grid (issue 24): ``osmosis-results`` shows each
``*.matrix.toml`` as benchmarks × models with pass@1 and its interval per cell, or why a
cell has no score (pending, not downloaded, excluded), in text that fits the width, in JSON
(validated against the published schema) and in the HTML report (headless Chromium). Real
generators, real runs of the loopback Platform."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from jsonschema import Draft202012Validator, FormatChecker

from reconciler.ci.announce import announce_state
from reconciler.ci.github import GitHubAPI
from reconciler.ci.report import write_report
from reconciler.cli.output import SCHEMA_FILE
from reconciler.config.load import load_configs
from reconciler.state.lockfile import read_lockfile
from tests.support.browser import PageVisit
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.github_fake import FakeGitHub
from tests.support.osmosis import Platform, read_lock

from .test_generators import DAY, generator, generator_repo, write_generator
from .test_results_cli import Results

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)
SCORE = re.compile(r"\d+\.\d% \[\d+\.\d–\d+\.\d\] · \d+ errored\*?")
PREFIX = "compare/frontier"


def test_a_generators_runs_are_shown_as_its_grid(
    tmp_path: Path, platform: Platform, clock: FakeClock, browser_page: PageVisit
) -> None:
    two = ["tb-smoke", "gdpval"]
    osm = generator_repo(tmp_path, platform, generator(two, ["gpt-5-2", "gpt-5"], exclude=""))
    osm = Results(osm.repo, platform)
    assert osm.apply("--auto-approve").code == 0
    clock.advance(DAY)
    assert osm.apply("--auto-approve").code == 0  # the four runs ended: downloaded
    # A third model, excluded on gdpval: its tb-smoke cell is submitted and still pending.
    write_generator(
        osm.repo,
        generator(
            two,
            ["gpt-5-2", "gpt-5", "gpt-5-mini"],
            exclude='[[exclude]]\nbenchmark = "gdpval"\nmodel = "gpt-5-mini"\n',
        ),
    )
    commit(osm.repo, "Add gpt-5-mini")
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 5

    shown = osm.results("--width", "100", "--no-fetch")
    assert shown.code == 0, shown
    text = shown.out
    assert all(len(line) <= 100 for line in text.splitlines()), text
    title = "benchmarks/compare/frontier.matrix.toml: benchmark (rows) × model (columns)"
    assert title in text
    grid = text[text.index(title) :].splitlines()
    header = next(line for line in grid if line.lstrip().startswith("benchmark "))
    assert header.split() == ["benchmark", "gpt-5-2", "gpt-5", "gpt-5-mini"]
    tb = next(line for line in grid if line.lstrip().startswith("tb-smoke "))
    gd = next(line for line in grid if line.lstrip().startswith("gdpval "))
    # An ended run's cell is its score with the interval, or (no scores) its status.
    ended = {
        address.removeprefix(f"{PREFIX}/"): entry
        for address, entry in read_lock(osm.repo)["runs"].items()
        if not address.endswith("gpt-5-mini")
    }
    for line, benchmark in ((tb, "tb-smoke"), (gd, "gdpval")):
        row_cells = re.split(r"\s{2,}", line.strip())[1:]
        assert len(row_cells) == 3, line
        for model, cell in zip(["gpt-5-2", "gpt-5"], row_cells, strict=False):
            entry = ended[f"{benchmark}/{model}"]
            if entry.get("results", {}).get("agents", [{}])[0].get("pass_at_1") is None:
                assert cell == entry["status"], (line, entry)
            else:
                assert SCORE.fullmatch(cell), line
    assert tb.rstrip().endswith("pending") and gd.rstrip().endswith("excluded")
    assert len(SCORE.findall(text[text.index(title) :])) >= 2

    # The PR comment: the plan's finished-run results carry the grid ...
    markdown = osm.plan("--format", "markdown").out
    heading = "**benchmarks/compare/frontier.matrix.toml**: pass@1"
    assert heading in markdown, markdown
    grid_md = markdown[markdown.index(heading) :]
    assert "| benchmark | gpt-5-2 | gpt-5 | gpt-5-mini |" in grid_md
    assert re.search(r"\| gdpval \| [^|]+ \| [^|]+ \| excluded \|", grid_md), grid_md
    assert re.search(r"\| tb-smoke \| [^|]+ \| [^|]+ \| no ended run \|", grid_md), grid_md
    # ... and so does the announcement of a cell's ended run (the collect job's comment).
    state = read_lockfile(osm.repo / "state" / "osmosis.lock", platform=None, workspace=None)
    loaded = load_configs(osm.repo)
    cells = {r.address: dict(r.source.cell) for r in loaded.runs if r.source is not None}
    announced = f"{PREFIX}/gdpval/gpt-5"
    github = FakeGitHub(repo="o/r").start()
    try:
        sha = state.runs[announced].requested_by
        assert sha is not None
        github.add_pull(7, sha)
        due = state.model_copy(
            update={
                "runs": {
                    a: e if a == announced else e.model_copy(update={"announced_at": e.observed_at})
                    for a, e in state.runs.items()
                }
            }
        )
        with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
            _updated, report = announce_state(
                api, due, now=datetime.now(UTC), generators=loaded.generators, cells=cells
            )
        assert report.failed == [] and len(report.posted) == 1, report
        (body,) = github.bodies(7)
    finally:
        github.close()
    assert f"| `{announced}` |" in body
    assert "**benchmarks/compare/frontier.matrix.toml: benchmark (rows) × model (columns)" in body
    assert "| benchmark | gpt-5-2 | gpt-5 | gpt-5-mini |" in body
    assert re.search(r"\| tb-smoke \| [^|]+ \| [^|]+ \| pending \|", body), body

    # ... and the collect job's committed report has it too.
    written = write_report(
        osm.repo.resolve(), state, "results", generators=loaded.generators, cells=cells
    )
    assert written == "results/report.html"
    committed = (osm.repo / written).read_text(encoding="utf-8")
    assert committed.count("<td class=n data-cell") == 6
    assert 'data-state="excluded"' in committed and 'data-state="pending"' in committed

    # Narrow: the columns go to further blocks, each with the row labels; nothing is cut.
    narrow = osm.results("--width", "50", "--no-fetch").out
    block = narrow[narrow.index("benchmarks/compare/frontier.matrix.toml:") :]
    assert all(len(line) <= 50 for line in block.splitlines()), block
    headers = [line.split() for line in block.splitlines() if line.startswith("  benchmark ")]
    assert len(headers) >= 2 and sum(len(h) - 1 for h in headers) == 3, block
    # One column per block at this width: the same cells, column by column.
    assert sorted(SCORE.findall(block)) == sorted(SCORE.findall("\n".join(grid))), block
    assert "pending" in block and "excluded" in block

    # The new run ends; recorded by a refresh, not downloaded yet: the cell says so.
    clock.advance(DAY)
    assert osm.apply("--auto-approve", "--only", "refresh").code == 0
    status = read_lock(osm.repo)["runs"][f"{PREFIX}/tb-smoke/gpt-5-mini"]["status"]
    machine = osm.results("--format", "json", "--no-fetch")
    assert machine.code == 0, machine
    document = machine.json()
    errors = list(VALIDATOR.iter_errors(document))
    assert not errors, [e.message for e in errors[:3]]
    (product,) = document["generators"]
    assert product["rows"] == two and product["columns"] == ["gpt-5-2", "gpt-5", "gpt-5-mini"]
    by_cell = {(c["row"], c["column"]): c for c in product["cells"]}
    assert by_cell[("tb-smoke", "gpt-5-mini")]["state"] == "not downloaded", status
    assert by_cell[("gdpval", "gpt-5-mini")] == {
        "row": "gdpval",
        "column": "gpt-5-mini",
        "address": None,
        "state": "excluded",
        "run": None,
        "pass_at_1": None,
        "errored_attempts": None,
        "ci": None,
        "agents": 0,
    }
    scored = [c for c in product["cells"] if c["state"] in ("scored", "partial")]
    assert len(scored) >= 2
    for cell in scored:
        assert cell["ci"]["low"] <= cell["pass_at_1"] <= cell["ci"]["high"]
        assert isinstance(cell["errored_attempts"], int) and cell["errored_attempts"] >= 0
        entry = read_lock(osm.repo)["runs"][cell["address"]]
        assert cell["run"] == entry["run_name"]

    # The HTML report has the grid as a heat-map table, offline, without errors.
    html = tmp_path / "report.html"
    assert osm.results("--html", str(html), "--no-fetch").code == 0
    url = html.as_uri()
    browser_page.goto(url)
    assert browser_page.requests == [url]
    assert browser_page.console_errors == [] and browser_page.page_errors == []
    table = browser_page.page.locator("table[data-grid]")
    assert table.count() == 1
    assert table.locator("td[data-cell]").count() == 6
    assert table.locator('td[data-state="excluded"]').count() == 1
    assert table.locator('td[data-state="not downloaded"]').count() == 1
    browser_page.screenshot(ARTIFACTS / "results-generator-grid.png")
