"""A run's ``results.csv`` is untrusted input (issue 36, findings 4 and 5).

On main (35dc349) ``input_tokens = 1e400`` in one row was an internal error (OverflowError)
for the results table, compare, the HTML report and the regression gate over that run, and
a file whose outcome and reward columns held ``???`` and ``n/a`` was read as all failed, so
compare announced "better: +69 pts". Here the real ``osmosis-results`` command runs over a
lockfile and kept files written as the tool keeps them; the Hypothesis test puts any cell
anywhere in the file and drives every results surface over it (``make fuzz`` runs the
same at 10,000 examples: ``tests/fuzz/test_fuzz_results.py``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from reconciler.cli.results import main as results_main
from reconciler.errors import UsageError
from reconciler.outputs.downloads import run_dir_name
from reconciler.results import html as html_report
from reconciler.results.build import build_address_reports, build_compare
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.report import (
    render_addresses_markdown,
    render_addresses_text,
    render_compare_markdown,
    render_compare_text,
)
from reconciler.results.runs import RecordedResult, parse_ref
from reconciler.state.lockfile import serialize
from tests.support.plan_fixtures import desired, lock, recorded_run
from tests.support.strategies import results_files

HEADER = ["task", "agent_index", "model", "harness", "attempt", "outcome", "reward",
          "input_tokens", "output_tokens", "cost_usd"]  # fmt: skip
TASKS = [f"task-{n:02d}" for n in range(16)]


def results_csv(outcomes: list[str], rewards: list[str], **overrides: str) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for n, (task, outcome, reward) in enumerate(zip(TASKS, outcomes, rewards, strict=True)):
        row = {
            "task": task, "agent_index": "0", "model": "openai/gpt-5", "harness": "codex",
            "attempt": "1", "outcome": outcome, "reward": reward, "input_tokens": "1200",
            "output_tokens": "300", "cost_usd": "0.02",
        }  # fmt: skip
        if n == 0:
            row.update(overrides)
        writer.writerow([row[h] for h in HEADER])
    return out.getvalue()


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    """A repository whose lockfile records one finished run per address of ``files``,
    each with its ``results.csv`` kept where ``osmosis-results`` keeps it."""
    repo = tmp_path / "repo"
    entries = []
    for index, (address, text) in enumerate(sorted(files.items())):
        run_id, name = f"bmr_{index:04d}", f"run-{index}"
        entries.append(recorded_run(desired(address), run_id, status="finished", run_name=name))
        kept = repo / "results" / address / run_dir_name(name, run_id)
        kept.mkdir(parents=True)
        (kept / "results.csv").write_text(text, encoding="utf-8")
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(serialize(lock(*entries)), encoding="utf-8")
    (repo / "benchmarks").mkdir()
    return repo


def osmosis_results(repo: Path, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = results_main(["--dir", str(repo), "--no-fetch", "--no-color", *args])
    return code, out.getvalue() + err.getvalue()


PASSING = results_csv(["passed"] * 12 + ["failed"] * 4, ["1.0"] * 12 + ["0.0"] * 4)


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--format", "json"),
        ("--html", "report.html"),
        ("--fail-on-regression",),
        ("compare", "tb/a", "tb/b"),
        ("compare", "tb/a", "tb/b", "--format", "markdown"),
    ],
    ids=["table", "json", "html", "gate", "compare", "compare-markdown"],
)
def test_an_overflowing_token_count_is_no_internal_error(tmp_path: Path, args: tuple) -> None:
    huge = results_csv(
        ["passed"] * 10 + ["failed"] * 6,
        ["1.0"] * 10 + ["0.0"] * 6,
        input_tokens="1e400",
        cost_usd="-3",
    )
    repo = repo_with(tmp_path, {"tb/a": PASSING, "tb/b": huge})
    code, text = osmosis_results(
        repo, *[a.replace("report.html", str(tmp_path / "r.html")) for a in args]
    )
    assert "internal error" not in text and "Traceback" not in text, text
    assert code in (0, 2), text
    if args == ("--format", "json"):
        body = json.loads(text[: text.rindex("}") + 1])
        assert body["type"] == "results" and len(body["addresses"]) == 2, body


def test_unreadable_outcomes_are_never_compared_as_failures(tmp_path: Path) -> None:
    garbled = results_csv(["???"] * 8 + ["n/a"] * 8, ["n/a"] * 16)
    repo = repo_with(tmp_path, {"tb/a": PASSING, "tb/b": garbled})
    code, text = osmosis_results(repo, "compare", "tb/b", "tb/a")
    assert "internal error" not in text, text
    assert "better" not in text.lower() and "+69" not in text, text
    assert "unreadable: 16 rows" in text, text
    assert code == 1  # no per-task data and no Platform summary: nothing to compare

    code, table = osmosis_results(repo)
    assert code == 0, table
    assert "unreadable: 16 rows" in table, table
    assert "0.0%" not in table.split("tb/b", 1)[1], table  # not scored as all failed


def test_a_reward_outside_its_range_is_not_a_score(tmp_path: Path) -> None:
    negative = results_csv(["", *[""] * 15], ["-5", *["1.0"] * 15])
    outcomes = parse_results_csv(negative)
    assert outcomes.unreadable == 1 and not outcomes.paired and not outcomes.tasks
    assert outcomes.missing == ("readable outcomes (unreadable: 1 row)",)
    assert parse_results_csv(negative.replace("-5", "0.5")).tasks[0]["task-00"].passes == 0
    ten = parse_results_csv(negative.replace("-5", "10"), max_reward=10.0)
    assert ten.unreadable == 0 and ten.tasks[0]["task-00"].passes == 1


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(left=results_files(), right=results_files())
def test_no_cell_of_any_results_file_is_an_internal_error(left: str, right: str) -> None:
    state = lock(
        recorded_run(desired("tb/a"), "bmr_a", status="finished", run_name="a"),
        recorded_run(desired("tb/b"), "bmr_b", status="finished", run_name="b"),
    )
    parsed = {"bmr_a": parse_results_csv(left), "bmr_b": parse_results_csv(right)}
    for outcomes in parsed.values():
        for tasks in outcomes.tasks.values():
            for outcome in tasks.values():
                assert 0 <= outcome.passes <= outcome.attempts and outcome.cost >= 0
                assert outcome.tokens >= 0
        assert not (outcomes.unreadable and outcomes.tasks)

    def load(run: RecordedResult) -> RunOutcomes | None:
        return parsed[run.run_id]

    reports = build_address_reports(state, [], load)
    render_addresses_text(reports, 100)
    render_addresses_markdown(reports)
    try:
        compared = build_compare(state, parse_ref("tb/a"), parse_ref("tb/b"), load)
    except UsageError:
        compared = []
    render_compare_text(compared, 100)
    render_compare_markdown(compared)
    html_report.render_html(
        reports, {k: v for k, v in parsed.items() if v.paired}, comparisons=compared
    )
