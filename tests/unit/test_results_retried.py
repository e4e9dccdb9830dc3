"""A run's result with its retry runs' attempts in place of its errored ones
(``results.data.merge_retry``, ``results.retried``, ``results.runs.address_runs``)."""

from __future__ import annotations

from datetime import UTC, datetime

from reconciler.model import AgentResult, HistoryEntry, LockState, RecordedRun, RunResults
from reconciler.plan.results import result_rows
from reconciler.render import render_results_text
from reconciler.results.build import build_address_reports
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.html import render_html
from reconciler.results.numbers import summary_numbers
from reconciler.results.retried import merged_outcomes, retried_results
from reconciler.results.runs import RecordedResult, address_runs
from reconciler.results.summary import score_run

HEADER = "agent_index,task,attempt,outcome,reward,cost_usd\n"
BASE = HEADER + (
    "0,t1,1,passed,1,0.1\n"
    "0,t1,2,errored,0,0.1\n"
    "0,t2,1,errored,0,0.1\n"
    "0,t2,2,errored,0,0.1\n"
    "1,t1,1,failed,0,0.2\n"
    "1,t1,2,errored,0,0.2\n"
    "0,t3,1,failed,0,0.1\n"
    "0,t3,2,passed,1,0.1\n"
    "1,t2,1,passed,1,0.2\n"
    "1,t2,2,passed,1,0.2\n"
    "1,t3,1,passed,1,0.2\n"
    "1,t3,2,passed,1,0.2\n"
)
# The retry of t2 (agent 0, twice): one passed, one errored again.
RETRY_T2 = HEADER + "0,t2,1,passed,1,0.1\n0,t2,2,errored,0,0.1\n"
# The retry of t1 for both agents (once each; the retry's agent 1 is the base's agent 1).
RETRY_T1 = HEADER + "0,t1,1,passed,1,0.1\n1,t1,1,passed,1,0.2\n"

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def run(run_id: str, current: bool = False, **more: object) -> RecordedResult:
    return RecordedResult(
        address="tb/a", run_id=run_id, run_name=f"name-{run_id}", status="finished",
        current=current, **more,  # type: ignore[arg-type]
    )  # fmt: skip


def test_retried_attempts_replace_errored_ones_and_are_counted() -> None:
    files = {"base": BASE, "r1": RETRY_T2, "r2": RETRY_T1}
    base = run(
        "base",
        current=True,
        retries=(run("r1", retry_of="base", retry_agents=(0,)), run("r2", retry_of="base", retry_agents=(0, 1))),
    )  # fmt: skip

    def read(r: RecordedResult) -> RunOutcomes | None:
        return parse_results_csv(files[r.run_id])

    merged, left_out = merged_outcomes(base, read)
    assert merged is not None and left_out == ()
    a0, a1 = merged.tasks[0], merged.tasks[1]
    # Attempts stay what the config asked for; errored ones are replaced.
    assert (a0["t1"].attempts, a0["t1"].errored, a0["t1"].passes) == (2, 0, 2)
    assert (a0["t2"].attempts, a0["t2"].errored, a0["t2"].passes) == (2, 1, 1)
    assert (a1["t1"].attempts, a1["t1"].errored, a1["t1"].passes) == (2, 0, 1)
    assert merged.retried == {0: {"t2": 2, "t1": 1}, 1: {"t1": 1}}
    assert merged.retried_attempts == 4
    assert merged.retry_runs == ("name-r1", "name-r2")
    # Both runs were billed: costs add up.
    assert round(a0["t2"].cost, 6) == 0.4
    report = score_run(base, merged)
    assert report.retried == 4
    assert report.note == "4 attempts from retry runs name-r1, name-r2, in place of errored ones"
    assert [a.numbers.errored for a in report.agents] == [1, 0]


def test_a_retry_not_downloaded_is_left_out_and_said() -> None:
    base = run("base", retries=(run("r1", retry_of="base", retry_agents=(0,)),))

    def read(r: RecordedResult) -> RunOutcomes | None:
        return parse_results_csv(BASE) if r.run_id == "base" else None

    merged, left_out = merged_outcomes(base, read)
    assert left_out == ("name-r1",)
    assert merged is not None and merged.retried == {}
    assert merged.tasks[0]["t2"].errored == 2
    note = score_run(base, merged).note
    assert note is not None and "retry run name-r1 not counted" in note


def test_address_runs_list_a_retry_under_the_run_it_retried() -> None:
    spec = {"tasks_config": {"task_names": ["t2"]}}
    entry = RecordedRun(
        address="tb/a", spec_digest="sha256:x", spec=spec, run_id="r1", run_name="retry-run",
        status="finished", retry_of="base", retry_agents=(0,),
    )  # fmt: skip
    history = (
        HistoryEntry(
            address="tb/a", run_id="base", run_name="base-run", spec_digest="sha256:x",
            status="finished", reason="retried", ended_at=T0,
        ),
        HistoryEntry(
            address="tb/a", run_id="older", run_name="older-run", spec_digest="sha256:x",
            status="finished", reason="rerun", ended_at=T0,
        ),
    )  # fmt: skip
    state = LockState(
        lineage="l", platform="local", workspace="w", runs={"tb/a": entry}, history=history
    )
    runs = address_runs(state, "tb/a")
    assert [(r.run_id, r.current) for r in runs] == [("base", True), ("older", False)]
    assert [r.run_id for r in runs[0].retries] == ["r1"]
    assert runs[0].retries[0].retry_agents == (0,)


def retried_state(retry_name: str) -> LockState:
    """``tb/a``'s run ``base`` (BASE, with the Platform's summary of it) retried by ``r1``
    (RETRY_T2), which is the recorded run."""
    summary = RunResults(
        agents=(
            AgentResult(agent_index=0, model="m0", pass_at_1=0.3333, n=3, errored=3, attempts_per_task=2),
            AgentResult(agent_index=1, model="m1", pass_at_1=0.6667, n=3, errored=1, attempts_per_task=2),
        )
    )  # fmt: skip
    entry = RecordedRun(
        address="tb/a", spec_digest="sha256:x", run_id="r1", run_name=retry_name,
        status="finished", retry_of="base", retry_agents=(0,),
        spec={"execution_config": {"attempts_per_task": 2}},
        results=RunResults(agents=(AgentResult(agent_index=0, model="m0", pass_at_1=0.5, n=1),)),
    )  # fmt: skip
    base = HistoryEntry(
        address="tb/a", run_id="base", run_name="base-run", spec_digest="sha256:x",
        status="finished", reason="retried", ended_at=T0, results=summary, attempts_per_task=2,
    )  # fmt: skip
    return LockState(
        lineage="l", platform="local", workspace="w", runs={"tb/a": entry}, history=(base,)
    )


def read_files(r: RecordedResult) -> RunOutcomes | None:
    return parse_results_csv({"base": BASE, "r1": RETRY_T2}[r.run_id])


def test_the_plan_table_shows_the_merged_result_labelled() -> None:
    state = retried_state("calm-yak")
    merged = retried_results(state, read_files)
    rows = result_rows(state, retried=merged)
    assert [(r.run_id, r.retry_runs, r.retries_not_counted) for r in rows] == [
        ("base", ("calm-yak",), ()),
        ("base", ("calm-yak",), ()),
    ]
    (line,) = build_address_reports(state, (), lambda r: merged_outcomes(r, read_files)[0])
    counted = [a.numbers for a in line.runs[0].report.agents]
    # The row's numbers are osmosis-results' (t2 of agent 0: one errored attempt of two
    # replaced by a pass), not the Platform's summary of the retried run.
    for row, numbers in zip(rows, counted, strict=True):
        shown = summary_numbers(row.agent)
        assert (shown.pass_at_1, shown.errored, shown.ci) == (
            numbers.pass_at_1, numbers.errored, numbers.ci,
        )  # fmt: skip
        assert shown.cost_per_task == numbers.cost_per_task
    assert (rows[0].agent.errored, rows[0].agent.pass_at_1) == (2, 0.5)  # summary: 3, 0.3333
    text = render_results_text(rows, width=200)
    assert "base-run (with retry run calm-yak)" in text
    # Without the retry's file the row is the run's own summary, and says the retry is not
    # counted; so does a table built without reading files (announce's default).
    alone = retried_results(state, lambda r: read_files(r) if r.run_id == "base" else None)
    assert result_rows(state, retried=alone)[0].retries_not_counted == ("calm-yak",)
    (bare, _) = result_rows(state)
    assert bare.agent.errored == 3 and bare.retries_not_counted == ("calm-yak",)
    assert "base-run (retry run calm-yak not counted yet)" in render_results_text((bare,), 200)


def test_the_html_report_says_which_attempts_came_from_a_retry_escaped() -> None:
    state = retried_state("<script>x</script>")

    def load(r: RecordedResult) -> RunOutcomes | None:
        return merged_outcomes(r, read_files)[0]

    reports = build_address_reports(state, (), load)
    page = render_html(reports, {})
    assert (
        "<small>note: base-run: 2 attempts from retry run &lt;script&gt;x&lt;/script&gt;, "
        "in place of errored ones</small>"
    ) in page
    assert "<script>" not in page
