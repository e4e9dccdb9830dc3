"""Comparable by construction, and tables that fit: the rules of the results table and of
``osmosis-results``, on plain values."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reconciler.errors import UsageError
from reconciler.model import (
    AgentResult,
    BenchmarkInfo,
    HistoryEntry,
    LeaderboardScore,
    LockState,
    Plan,
    RecordedRun,
    RunResults,
    selection_digest,
)
from reconciler.plan.results import result_rows
from reconciler.render import render_text
from reconciler.render.tables import text_results
from reconciler.results.build import build_address_reports
from reconciler.results.data import parse_results_csv
from reconciler.results.report import AddressReport, render_addresses_text
from reconciler.results.runs import parse_ref, resolve
from reconciler.results.table import Column, fit_table

TB = BenchmarkInfo(
    id="bench-tb",
    name="Terminal-Bench 2.1",
    key="terminal-bench-2-1",
    task_count=89,
    leaderboard=(
        LeaderboardScore(model="openai/gpt-5", harness="terminus-2", task_set="full", rank=2,
                         pass_at_1=0.438),
    ),
)  # fmt: skip
SPEC_FULL = {"experiment_config": {"benchmark": "terminal-bench-2-1"}}
SPEC_ONE = {**SPEC_FULL, "tasks_config": {"task_names": ["terminal-bench/git-multibranch"]}}


def agent(p1: float, model: str = "openai/gpt-5") -> AgentResult:
    return AgentResult(agent_index=0, model=model, model_id=model, harness="terminus-2",
                       pass_at_1=p1, ci_low=p1 - 0.1, ci_high=p1 + 0.1, n=89)  # fmt: skip


def entry(
    address: str, run_id: str, p1: float, spec: dict, status: str = "finished"
) -> RecordedRun:
    return RecordedRun(
        address=address,
        spec_digest="sha256:" + "1" * 64,
        spec=spec,
        run_id=run_id,
        run_name=f"name-{run_id}",
        status=status,
        benchmark_id=TB.id,
        task_count=1 if spec is SPEC_ONE else 89,
        results=RunResults(agents=(agent(p1),)),
    )


def history(address: str, run_id: str, p1: float, status: str, spec: dict) -> HistoryEntry:
    return HistoryEntry(
        address=address,
        run_id=run_id,
        run_name=f"name-{run_id}",
        spec_digest="sha256:" + "2" * 64,
        status=status,
        reason="rerun",
        benchmark_id=TB.id,
        task_count=89,
        selection=selection_digest(spec),
        results=RunResults(agents=(agent(p1),)),
    )


def state(*runs: RecordedRun, past: tuple[HistoryEntry, ...] = ()) -> LockState:
    return LockState(
        lineage="l", platform="local", workspace="w", runs={r.address: r for r in runs},
        history=past,
    )  # fmt: skip


def test_a_one_task_run_shows_no_leaderboard_comparison() -> None:
    rows = result_rows(state(entry("tb/one", "r1", 0.667, SPEC_ONE)), benchmarks=[TB])
    (row,) = rows
    assert row.leaderboard is None
    assert "leaderboard" not in render_text(Plan(results=rows))
    # The full benchmark is compared with its published score.
    (full,) = result_rows(state(entry("tb/full", "r2", 0.5, SPEC_FULL)), benchmarks=[TB])
    assert full.leaderboard is not None and full.leaderboard.pass_at_1 == 0.438


def test_a_category_run_shows_no_leaderboard_comparison() -> None:
    spec = {**SPEC_FULL, "tasks_config": {"categories": ["security"]}}
    (row,) = result_rows(state(entry("tb/sec", "r1", 0.5, spec)), benchmarks=[TB])
    assert row.leaderboard is None


def test_a_failed_run_is_partial_and_never_the_next_runs_previous() -> None:
    past = (
        history("tb/full", "failed-run", 0.583, "failed", SPEC_FULL),
        history("tb/full", "good-run", 0.55, "finished", SPEC_FULL),
    )
    (row,) = result_rows(state(entry("tb/full", "new", 0.615, SPEC_FULL), past=past))
    assert row.previous_run_id == "good-run"
    assert row.previous is not None and row.previous.pass_at_1 == 0.55
    # Only the failed run before it: no previous, and the row says why.
    (alone,) = result_rows(state(entry("tb/full", "new", 0.615, SPEC_FULL), past=past[:1]))
    assert alone.previous is None
    assert alone.previous_note == "name-failed-run is partial (failed)"
    # The failed run itself is labelled partial where it is shown.
    failed = entry("tb/f", "f1", 0.583, SPEC_FULL, status="failed")
    text = "\n".join(text_results(result_rows(state(failed)), width=200))
    assert "name-f1 (partial: failed)" in text
    reports = build_address_reports(state(failed), [], lambda _run: None)
    assert reports[0].runs[0].report.run.partial


def test_a_changed_task_selection_is_not_compared_and_says_so() -> None:
    past = (history("tb/full", "old", 0.5, "finished", SPEC_ONE),)
    (row,) = result_rows(state(entry("tb/full", "new", 0.6, SPEC_FULL), past=past))
    assert row.previous is None and row.previous_note == "task selection changed"


def test_a_partial_run_cannot_be_accepted_and_refs_are_checked() -> None:
    s = state(entry("tb/f", "f1", 0.5, SPEC_FULL, status="failed"))
    assert resolve(s, parse_ref("tb/f@name-f1")).partial
    assert parse_ref("a/b@r#2").agent == 1
    for bad in ("a/b@", "a/b@r#0", "a/b@r#x", "@r"):
        with pytest.raises(UsageError):
            parse_ref(bad)
    with pytest.raises(UsageError, match="has no recorded run 'nope'"):
        resolve(s, parse_ref("tb/f@nope"))


LONG = "anthropic/claude-sonnet-4-5-20250929 · claude-code (with a long display name)"


@pytest.mark.parametrize("width", [50, 80, 100, 160])
def test_tables_fit_by_dropping_and_wrapping_and_never_cut(width: int) -> None:
    columns = [
        Column("address", wrap=True), Column("agent", wrap=True), Column("pass@1", right=True),
        Column("cost", right=True, drop=2), Column("vs previous", wrap=True, drop=1),
    ]  # fmt: skip
    rows = [
        ["terminal-bench/very/deep/address", LONG, "61.0%", "$1,234.56", "+4.2 pts (prev 56.8%)"],
        ["hle/parity", "gpt-5 · codex", "7.5%", "$0.0034", "–"],
    ]
    lines, dropped = fit_table(columns, rows, width)
    assert all(len(line) <= width for line in lines), lines
    text = "\n".join(lines)
    # Every name piece and number is whole somewhere in the output.
    for cells in rows:
        for header, cell in zip([c.header for c in columns], cells, strict=True):
            if header in dropped:
                continue
            # Split at spaces, long words after their "/": every segment stays whole.
            for word in cell.split(" "):
                for piece in word.replace("/", "/ ").split(" "):
                    assert piece in text, (piece, text)
    if width >= 160:
        assert dropped == []


def test_results_report_text_fits_100_columns() -> None:
    past = tuple(
        history("terminal-bench/categories/security", f"r{i}", 0.5, "finished", SPEC_FULL)
        for i in range(3)
    )
    s = state(entry("terminal-bench/categories/security", "new", 0.6, SPEC_FULL), past=past)
    reports: list[AddressReport] = build_address_reports(s, [], lambda _run: None)
    text = render_addresses_text(reports, 100)
    assert all(len(line) <= 100 for line in text.splitlines()), text
    assert "+10.0 pts vs name-r0" in text


def test_results_csv_is_read_by_header_name() -> None:
    text = (
        "outcome,cost_usd,task,agent_index,attempt,extra\n"
        "passed,0.5,t1,0,1,x\nfailed,0.5,t1,0,2,x\nerrored,0,t2,0,1,x\npassed,1,t2,0,2,x\n"
        "passed,2,t1,1,1,x\n"
    )
    runs = parse_results_csv(text)
    assert runs.paired and runs.has_cost and not runs.has_tokens
    t1, t2 = runs.tasks[0]["t1"], runs.tasks[0]["t2"]
    assert (t1.passes, t1.attempts, t1.cost) == (1, 2, 1.0)
    # An errored attempt is an attempt that did not pass (the Platform's pass@1), counted apart.
    assert (t2.passes, t2.attempts, t2.errored, t2.scored) == (1, 2, 1, 1)
    assert t2.rate == 0.5 and t2.scored_rate == 1.0
    assert runs.tasks[1]["t1"].rate == 1.0
    missing = parse_results_csv("agent_index,attempt\n0,1\n")
    assert missing.missing == ("task", "outcome") and not missing.paired
    rewards = parse_results_csv("task,reward\nt1,1.0\nt1,0.0\n")
    assert rewards.tasks[0]["t1"].passes == 1 and rewards.tasks[0]["t1"].attempts == 2
    assert datetime.now(UTC)  # (no clock in the parse: same text, same result)
    assert parse_results_csv(text) == parse_results_csv(text)


def test_a_submit_with_history_shows_its_power_before_paying() -> None:
    from reconciler.plan import compute_plan
    from tests.support.plan_fixtures import (
        desired,
        observation,
        observed_run,
        recorded_run,
        settings,
    )

    want = desired("hle/a", models=("openai/gpt-5.2",))
    old = desired("hle/a")
    ran = recorded_run(old, "run-1", status="finished").model_copy(
        update={"results": RunResults(agents=(agent(0.5),))}
    )
    plan = compute_plan([want], state(ran).model_copy(update={"platform": "local",
                        "workspace": "acme/evals"}), observation(observed_run("run-1", "finished")),
                        settings())  # fmt: skip
    (item,) = [i for i in plan.items if i.address == "hle/a" and i.action.value == "submit"]
    (line,) = [d for d in item.details if d.startswith("power:")]
    assert line.startswith(f"power: against name-run-1, {item.task_count} tasks × 1 attempt ")
    assert "detect |Δ| ≥ " in line and "exact McNemar" in line
    assert "name-run-1's summary (no per-task file)" in line
    assert "power: against" in render_text(plan)
