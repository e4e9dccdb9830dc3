"""Fuzz target: results files (issue 36). Two runs' ``results.csv`` (any columns, any
cells: ``strategies.results_files``) go through every results surface: the parser, the
per-run scores, the address table, the paired or unpaired comparison, and the text,
markdown, JSON and HTML renders. A run the file cannot describe is a clear error
(``UsageError``: nothing to compare); anything else is an internal error."""

from __future__ import annotations

import json
import math

import msgspec
from hypothesis import given

from reconciler.errors import UsageError
from reconciler.model import AgentResult, RunResults
from reconciler.results import html as html_report
from reconciler.results.build import build_address_reports, build_compare
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.report import (
    address_to_dict,
    compare_to_dict,
    render_addresses_markdown,
    render_addresses_text,
    render_compare_markdown,
    render_compare_text,
)
from reconciler.results.runs import RecordedResult, parse_ref
from tests.support.plan_fixtures import desired, lock, recorded_run
from tests.support.strategies import results_files

from .conftest import exercise, fuzz_target

SUMMARY = RunResults(agents=(AgentResult(agent_index=0, pass_at_1=0.5, n=12),))
"""The Platform's summary, recorded: a run whose file says nothing is compared on it."""
STATE = lock(
    *(
        msgspec.structs.replace(
            recorded_run(desired(f"tb/{x}"), f"bmr_{x}", status="finished", run_name=x),
            results=SUMMARY,
        )
        for x in "ab"
    )
)


def _sane(outcomes: RunOutcomes) -> None:
    """What a parsed file may hold: counts that add up, finite non-negative sums, and
    either per-task data or the reason there is none."""
    assert not (outcomes.unreadable and outcomes.tasks)
    for tasks in outcomes.tasks.values():
        for outcome in tasks.values():
            assert 0 <= outcome.passes <= outcome.attempts
            assert outcome.errored >= 0 and outcome.tokens >= 0
            assert math.isfinite(outcome.cost) and outcome.cost >= 0


@fuzz_target
@given(results_files(), results_files())
def test_results_files(left: str, right: str) -> None:
    def call() -> object:
        parsed = {"bmr_a": parse_results_csv(left), "bmr_b": parse_results_csv(right)}
        for outcomes in parsed.values():
            _sane(outcomes)

        def load(run: RecordedResult) -> RunOutcomes | None:
            return parsed[run.run_id]

        reports = build_address_reports(STATE, [], load)
        render_addresses_text(reports, 80)
        render_addresses_markdown(reports)
        json.dumps([address_to_dict(r) for r in reports], allow_nan=False)
        compared = build_compare(STATE, parse_ref("tb/a"), parse_ref("tb/b"), load)
        render_compare_text(compared, 80)
        render_compare_markdown(compared)
        json.dumps([compare_to_dict(c) for c in compared])
        html_report.render_html(
            reports, {k: v for k, v in parsed.items() if v.paired}, comparisons=compared
        )
        return compared

    exercise("results files", call, (UsageError,))
