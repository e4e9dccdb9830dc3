"""Run results: E5 scores to ``RunResults``, the lockfile, the plan's results table and its
renders (golden files ``plan_results.*`` and ``lockfile_results.toml``).

Regenerate the golden files with ``UPDATE_GOLDEN=1 pytest tests/unit/test_results.py`` and
review the diff by eye.
"""

from __future__ import annotations

import json
import os
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from reconciler.engine.saved_plan import plan_from_dict
from reconciler.errors import StateError
from reconciler.model import (
    AgentResult,
    HistoryEntry,
    LeaderboardScore,
    LockState,
    Plan,
    RecordedRun,
    ResultRow,
    RunResults,
)
from reconciler.plan import compute_plan, result_rows
from reconciler.platform.models import RunDetail
from reconciler.render import (
    NO_CHANGES,
    TEXT_RESULT_ROWS,
    plan_to_dict,
    render_json,
    render_markdown,
    render_text,
)
from reconciler.render.tables import text_results
from reconciler.state.lockfile import fast_load, parse, put_run, retire_run, serialize
from tests.support.plan_fixtures import (
    BENCHMARKS,
    HLE,
    desired,
    lock,
    observation,
    observed_run,
    recorded_run,
    settings,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
NAME = "state/osmosis.lock"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_bytes(text.encode("utf-8"))
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_bytes().decode("utf-8")


# --------------------------------------------------------------------------- E5 -> RunResults


def e5_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "benchmark_run": {"id": "run-1", "name": "hle-smoke", "status": "finished"},
        "agents": [
            # Listed out of order on purpose: results follow agent_index.
            {
                "id": "agent-2",
                "agent_index": 1,
                "harness": None,
                "model": "anthropic/claude-sonnet-4",
                "model_ref": "ref-2",
                "aggregates": {"reported_cost_usd": 12.5, "mean_duration_seconds": 30},
            },
            {
                "id": "agent-1",
                "agent_index": 0,
                "harness": "codex",
                "model_display_name": "GPT-5",
                "model": "openai/gpt-5",
                "aggregates": {
                    "reported_cost_usd": 498.0,
                    "mean_duration_seconds": 54,
                    "tokens_per_task": 1100000,
                },
            },
            {"id": "agent-3", "agent_index": 2, "model_ref": "only-a-ref"},
        ],
        "totals": {"passed": 20, "failed": 25, "errored": 5, "total_cost_usd": 1.25},
        "agent_metrics": [
            {
                "benchmark_run_agent_id": "agent-2",
                "rank": 2,
                "n_tasks": 0,
                "pass_at_1": {"value": 0.5, "n": 10},
            },
            {
                "benchmark_run_agent_id": "agent-1",
                "rank": 1,
                "n_tasks": 249,
                "pass_at_1": {"value": 0.75, "ci_low": 0.719, "ci_high": 0.781, "n": 249},
                "pass_at_k": [
                    {"k": 2, "value": 0.812, "ci_low": 0.77, "ci_high": 0.85, "n": 249},
                    {"k": 3, "value": 0.84, "n": 249},
                ],
            },
            {"benchmark_run_agent_id": "someone-else", "rank": 9, "pass_at_1": {"value": 1.0}},
        ],
    }
    body.update(overrides)
    return body


def test_to_results_joins_agents_and_metrics_by_agent_id() -> None:
    results = RunDetail.from_api(e5_body()).to_results()
    assert [a.agent_index for a in results.agents] == [0, 1, 2]
    first, second, third = results.agents
    assert first == AgentResult(
        agent_index=0,
        harness="codex",
        model="GPT-5",
        model_id="openai/gpt-5",
        rank=1,
        pass_at_1=0.75,
        ci_low=0.719,
        ci_high=0.781,
        n=249,
        k=3,
        pass_at_k=0.84,
        cost_per_task=498.0 / 249,
        seconds_per_task=54.0,
        tokens_per_task=1100000.0,
    )
    # n_tasks 0: no cost per task; no interval, no pass@k; the official scaffold.
    assert second.harness is None and second.model == "anthropic/claude-sonnet-4"
    assert (second.rank, second.pass_at_1, second.ci_low, second.n) == (2, 0.5, None, 10)
    assert second.cost_per_task is None and second.pass_at_k is None and second.k is None
    assert second.seconds_per_task == 30.0
    # No metrics entry at all: only what the agent itself says.
    assert third == AgentResult(agent_index=2, model="only-a-ref")
    assert second.model_id == "anthropic/claude-sonnet-4"
    assert (results.passed, results.failed, results.errored) == (20, 25, 5)
    assert results.total_cost_usd == 1.25


def test_to_results_of_a_run_without_scores_is_empty() -> None:
    results = RunDetail.from_api({"benchmark_run": {"id": "r"}}).to_results()
    assert results == RunResults()


def test_an_agent_without_an_id_is_never_joined_to_a_metric_without_one() -> None:
    body = e5_body(
        agents=[{"agent_index": 0, "model": "m"}],
        agent_metrics=[{"rank": 1, "pass_at_1": {"value": 0.9}}],
    )
    (agent,) = RunDetail.from_api(body).to_results().agents
    assert agent.pass_at_1 is None and agent.rank is None


# --------------------------------------------------------------------------- plan


def agent(index: int = 0, p1: float | None = 0.61, **kwargs: Any) -> AgentResult:
    fields: dict[str, Any] = {
        "agent_index": index,
        "model": "GPT-5",
        "harness": "codex",
        "rank": 1,
        "pass_at_1": p1,
        "ci_low": None if p1 is None else round(p1 - 0.05, 4),
        "ci_high": None if p1 is None else round(p1 + 0.05, 4),
        "n": 249,
        "k": 2,
        "pass_at_k": None if p1 is None else round(p1 + 0.1, 4),
        "cost_per_task": 2.0,
        "seconds_per_task": 54.0,
        "tokens_per_task": 1100000.0,
    }
    fields.update(kwargs)
    return AgentResult(**fields)


def results(*agents: AgentResult) -> RunResults:
    return RunResults(agents=agents, passed=3, failed=1, errored=0, total_cost_usd=4.5)


def ended(
    address: str, run_id: str, res: RunResults | None, status: str = "finished"
) -> RecordedRun:
    return recorded_run(desired(address), run_id, status=status).model_copy(update={"results": res})


def gone(
    address: str, run_id: str, res: RunResults | None, reason: Any = "replaced"
) -> HistoryEntry:
    return HistoryEntry(
        address=address,
        run_id=run_id,
        run_name=f"name-{run_id}",
        spec_digest="sha256:" + "0" * 64,
        status="finished",
        reason=reason,
        results=res,
    )


def test_plan_lists_ended_runs_with_results_and_the_previous_run_of_the_address() -> None:
    now = results(agent(0, 0.653), agent(1, 0.4, model="Claude", harness=None))
    before = results(agent(0, 0.611))
    state = lock(
        ended("hle/a", "run-new", now),
        ended("hle/b", "run-b", None),  # ended but nothing fetched: no row
        ended("hle/c", "run-c", results(agent(0, 0.2)), status="running"),  # not ended
        history=(
            gone("hle/a", "run-newer-no-scores", None),  # newest, but has no results
            gone("hle/a", "run-old", before),
            gone("hle/a", "run-oldest", results(agent(0, 0.1))),
        ),
    )
    wanted = [desired("hle/a"), desired("hle/b"), desired("hle/c")]
    seen = observation(
        observed_run("run-new", "finished"),
        observed_run("run-b", "finished"),
        observed_run("run-c", "running"),
    )
    plan = compute_plan(wanted, state, seen, settings())
    assert [(r.address, r.run_id, r.agent.agent_index) for r in plan.results] == [
        ("hle/a", "run-new", 0),
        ("hle/a", "run-new", 1),
    ]
    first, second = plan.results
    # k comes from the config when the recorded scores predate it.
    assert first.agent == now.agents[0].model_copy(update={"attempts_per_task": 1})
    # The earlier runs had other agents: not comparable, and the row says why.
    assert first.previous is None and first.previous_run_id is None
    assert first.previous_note == second.previous_note == "agents changed"
    # With the same agents the newest earlier run that has scores is the previous one.
    same = state.model_copy(
        update={
            "history": (
                gone("hle/a", "run-newer-no-scores", None),
                gone(
                    "hle/a",
                    "run-old",
                    results(agent(0, 0.611), agent(1, None, model="Claude", harness=None)),
                ),
                gone("hle/a", "run-oldest", results(agent(0, 0.1))),
            )
        }
    )
    first, second = compute_plan(wanted, same, seen, settings()).results
    assert first.previous == before.agents[0].model_copy(update={"attempts_per_task": 1})
    assert (first.previous_run_id, first.previous_run_name) == ("run-old", "name-run-old")
    # The previous run's agent 1 had no pass@1: its row says so.
    assert second.previous is not None and second.previous.pass_at_1 is None
    # Results are informational: the same state without them plans the same actions.
    bare = state.model_copy(
        update={
            "runs": {a: e.model_copy(update={"results": None}) for a, e in state.runs.items()},
            "history": tuple(h.model_copy(update={"results": None}) for h in state.history),
        }
    )
    assert compute_plan(wanted, bare, seen, settings()) == plan.model_copy(update={"results": ()})


def test_results_follow_targets_and_skip_a_history_entry_of_the_same_run() -> None:
    state = lock(
        ended("hle/a", "run-a", results(agent(0, 0.5))),
        ended("tb/x", "run-x", results(agent(0, 0.7))),
        history=(gone("hle/a", "run-a", results(agent(0, 0.9)), reason="moved"),),
    )
    rows = result_rows(state)
    assert [r.address for r in rows] == ["hle/a", "tb/x"]
    assert rows[0].previous is None  # the only history entry is this very run
    assert [r.address for r in result_rows(state, ("tb/*",))] == ["tb/x"]


# --------------------------------------------------------------------------- lockfile


def state_with_results() -> LockState:
    base = lock(
        ended("hle/a", "run-new", results(agent(0, 0.653), agent(1, None, cost_per_task=0.0034))),
        ended("hle/empty", "run-e", RunResults()),
        history=(gone("hle/a", "run-old", results(agent(0, 0.611))), gone("hle/z", "run-z", None)),
    )
    return base


def test_lockfile_with_results_matches_golden_and_round_trips() -> None:
    state = state_with_results()
    text = serialize(state)
    check_golden("lockfile_results.toml", text)
    assert parse(text, NAME) == state
    assert serialize(parse(text, NAME)) == text
    # The fast reader reads exactly what tomllib reads, and tomlkit agrees.
    assert fast_load(text) == tomllib.loads(text)
    assert tomlkit.parse(text).unwrap() == tomllib.loads(text)


def test_results_written_as_tables_with_one_line_per_agent() -> None:
    text = serialize(state_with_results())
    assert '[runs."hle/a".results]' in text
    assert "[history.results]" in text
    block = text.split('[runs."hle/a".results]\n', 1)[1].split("\n\n", 1)[0]
    lines = block.splitlines()
    assert lines[:4] == ["passed = 3", "failed = 1", "errored = 0", "total_cost_usd = 4.5"]
    assert lines[4] == "agents = ["
    assert sum(1 for line in lines if line.startswith("  { agent_index = ")) == 2
    assert "pass_at_1" not in lines[6]  # agent 1 has no pass@1: the key is left out


def test_a_hand_edited_results_table_is_read_by_tomllib_too() -> None:
    text = serialize(state_with_results()).replace(
        "total_cost_usd = 4.5", "total_cost_usd = 4.5 # x", 1
    )
    assert fast_load(text) is None  # a comment after a value: not the emitter's subset
    assert parse(text, NAME) == state_with_results()


def test_a_malformed_results_table_is_a_state_error_naming_the_key() -> None:
    text = serialize(state_with_results()).replace("passed = 3", 'passed = "three"', 1)
    with pytest.raises(StateError) as info:
        parse(text, NAME)
    assert 'runs."hle/a".results.passed' in info.value.message
    text = serialize(state_with_results()).replace(
        "agent_index = 0", "agent_index = 0, colour = 1", 1
    )
    with pytest.raises(StateError) as info:
        parse(text, NAME)
    assert "unknown key" in info.value.message


def test_a_wrong_value_in_an_agent_line_names_its_index() -> None:
    text = serialize(state_with_results()).replace("agent_index = 0", 'agent_index = "0"', 1)
    with pytest.raises(StateError) as info:
        parse(text, NAME)
    assert 'runs."hle/a".results.agents[0].agent_index: should be an integer' in (
        info.value.message
    )


def test_retiring_a_run_keeps_its_results_in_history() -> None:
    res = results(agent(0, 0.5))
    state = put_run(lock(), ended("hle/a", "run-1", res))
    retired = retire_run(state, "hle/a", "replaced", ended_at=datetime(2026, 9, 2, tzinfo=UTC))
    assert "hle/a" not in retired.runs
    assert retired.history[0].results == res
    assert parse(serialize(retired), NAME).history[0].results == res


# --------------------------------------------------------------------------- renders


def results_plan() -> Plan:
    """Two addresses with results, one compared with its previous run, plus one submit."""
    state = lock(
        ended(
            "hle/parity",
            "run-2",
            results(
                agent(0, 0.653, cost_per_task=2.0, model_id="openai/gpt-5"),
                agent(1, 0.4, model="Claude | Sonnet", harness=None, k=None, pass_at_k=None),
            ),
        ).model_copy(update={"benchmark_id": HLE.id}),
        ended("tb/smoke", "run-t", results(agent(0, 0.5, cost_per_task=0.0034, ci_low=None))),
        ended("tb/same", "run-s", results(agent(0, 0.5))),
        history=(
            gone(
                "hle/parity",
                "run-1",
                results(agent(0, 0.611), agent(1, None, model="Claude | Sonnet", harness=None)),
            ),
            gone("tb/same", "run-s0", results(agent(0, 0.5))),
        ),
    )
    return compute_plan(
        [desired("hle/parity"), desired("tb/smoke"), desired("tb/same"), desired("hle/new")],
        state,
        observation(
            observed_run("run-2", "finished"),
            observed_run("run-t", "finished"),
            observed_run("run-s", "finished"),
            benchmarks={**BENCHMARKS, "HLE": HLE_PUBLISHED},
        ),
        settings(),
    )


HLE_PUBLISHED = HLE.model_copy(
    update={
        "leaderboard": (
            LeaderboardScore(model="openai/gpt-5", harness="codex", task_set="full", pass_at_1=0.2),
            LeaderboardScore(
                model="openai/gpt-5", harness="codex", task_set="parity", rank=1, pass_at_1=0.7
            ),
            LeaderboardScore(model="openai/gpt-5", harness=None, task_set="parity", pass_at_1=0.1),
        ),
        "unavailable_tasks": ("hle/q-17", "hle/q-18"),
        "unavailable_reason": "image attachment missing upstream",
    }
)


def test_results_compare_with_the_leaderboard_entry_of_the_same_model_and_harness() -> None:
    plan = results_plan()
    row = next(r for r in plan.results if r.address == "hle/parity" and r.agent.agent_index == 0)
    assert row.leaderboard is not None
    assert (row.leaderboard.task_set, row.leaderboard.pass_at_1) == ("parity", 0.7)
    other = next(r for r in plan.results if r.address == "hle/parity" and r.agent.agent_index == 1)
    assert other.leaderboard is None  # no published score for that model
    assert row.unavailable_tasks == 2
    text = render_text(plan)
    assert "-4.7 pts vs leaderboard 70.0% (#1, parity)" in "\n".join(
        text_results(plan.results, width=240)
    )
    assert (
        "note: hle/parity: 2 tasks of the benchmark unavailable (image attachment missing "
        "upstream), not run or scored"
    ) in "\n".join(text_results(plan.results, width=240))
    assert "note: hle/parity: 2 tasks of the benchmark unavailable" in text
    assert "| -4.7 pts vs leaderboard 70.0% (#1, parity) |" in render_markdown(plan)


def test_golden_results_renders() -> None:
    plan = results_plan()
    check_golden("plan_results.txt", render_text(plan))
    check_golden("plan_results.md", render_markdown(plan))
    check_golden("plan_results.json", render_json(plan))


def test_markdown_results_table_compares_with_the_previous_run() -> None:
    md = render_markdown(results_plan())
    assert (
        "| address | run | agent | pass@1 [95% CI] · errored | pass@k | cost/task | cost/attempt "
        "| tokens/task | tokens/attempt | vs previous | vs leaderboard |" in md
    )
    row = next(line for line in md.splitlines() if line.startswith("| `hle/parity` | name-run-2"))
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells == [
        "`hle/parity`",
        "name-run-2 (run-2)",
        "GPT-5 · codex",
        "65.3% [60.3–70.3] · ? errored",  # this lockfile predates per-agent errored counts
        "pass@2 75.3%",
        "$2.00",
        "$2.00",
        "1,100k",
        "1,100k",
        "+4.2 pts (prev 61.1%)",
        "-4.7 pts vs leaderboard 70.0% (#1, parity)",
    ]
    assert "Claude \\| Sonnet · default" in md  # a pipe in a cell is escaped
    assert "| prev – |" in md  # the previous run's agent 1 had no pass@1
    assert "$0.0034" in md  # fractions of a cent are not shown as $0.00
    assert "±0.0 pts (prev 50.0%)" in md
    # Summary first, then results, then the folded details.
    assert md.index("| submit |") < md.index("**Results**") < md.index("<details>")


def test_text_results_are_compact_and_capped() -> None:
    text = render_text(results_plan())
    assert "Results of 3 ended runs" in text
    # At 100 columns: optional columns left out (and said), names wrapped, nothing cut.
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("  address ")))
    table = lines[start : lines.index("", start)]
    assert all(len(line) <= 100 for line in table), table
    assert "65.3% [60.3–70.3]" in table[2] and "+4.2 pts" in table[2]
    assert any("left out to fit 100 columns: " in line for line in lines)
    wide = "\n".join(text_results(results_plan().results, width=240))
    assert (
        "  hle/parity  name-run-2  GPT-5 · codex              65.3% [60.3–70.3] · ? errored  "
        "pass@2 75.3%      $2.00         $2.00       1,100k          1,100k  +4.2 pts (prev "
        "61.1%)  -4.7 pts vs leaderboard 70.0% (#1, parity)"
    ) in wide
    # A table whose columns fit their content: every row's pass@1 starts under its header.
    header, rows = table[0], [line for line in table[2:] if line.startswith(("  hle/", "  tb/"))]
    column = header.index("pass@1")
    assert all(row[column - 2 : column] == "  " and row[column] != " " for row in rows), rows
    many = Plan(
        results=tuple(
            ResultRow(address=f"a/{i:03d}", run_id=f"r{i}", status="finished", agent=agent())
            for i in range(TEXT_RESULT_ROWS + 5)
        )
    )
    out = render_text(many, results=True)
    assert out.count("a/0") == TEXT_RESULT_ROWS
    assert "... 5 more (see --format markdown or json)" in out
    assert out.startswith(NO_CHANGES + "\n")  # the answer first, the table when asked


def test_results_show_when_nothing_else_changes() -> None:
    plan = results_plan().model_copy(
        update={"items": (), "summary": results_plan().summary.model_copy(update={"submit": 0})}
    )
    md = render_markdown(plan)
    assert NO_CHANGES in md and "**Results** of 3 ended runs" in md
    assert "+4.2 pts (prev 61.1%)" in md


def test_json_results_round_trip_through_a_saved_plan() -> None:
    plan = results_plan()
    data = json.loads(render_json(plan))
    first = data["results"][0]
    assert first["address"] == "hle/parity" and first["agent"]["pass_at_1"] == 0.653
    assert first["previous"]["pass_at_1"] == 0.611
    assert first["previous_run_id"] == "run-1"
    assert first["delta_pass_at_1"] == pytest.approx(0.042)
    assert data["results"][1]["delta_pass_at_1"] is None
    assert plan_from_dict(plan_to_dict(plan)) == plan
    # A plan saved before results existed still loads.
    old = plan_to_dict(plan)
    del old["results"]
    assert plan_from_dict(old).results == ()


@pytest.mark.parametrize("with_actions", [True, False])
def test_markdown_cap_truncates_results_with_a_note(with_actions: bool) -> None:
    rows = tuple(
        ResultRow(
            address=f"bench/config-{i:05d}",
            run_id=f"run-{i:05d}",
            run_name=f"name-{i:05d}",
            status="finished",
            agent=agent(0, 0.5),
            previous=agent(0, 0.4),
            previous_run_id="old",
        )
        for i in range(2000)
    )
    base = results_plan() if with_actions else Plan(workspace="w")
    plan = base.model_copy(update={"results": rows})
    md = render_markdown(plan, max_chars=20000)
    assert len(md) < 20000
    shown = sum(1 for line in md.splitlines() if line.startswith("| `bench/config-"))
    assert 0 < shown < 2000
    assert f"{2000 - shown:,} result rows did not fit" in md
    assert md.rstrip().endswith("full plan._")
    if with_actions:
        # Actions keep their room: the submit is still shown.
        assert "+ hle/new" in md
    assert render_markdown(plan, max_chars=65000).count("| `bench/config-") > shown


def test_results_do_not_leak_into_plans_without_them() -> None:
    state = lock(recorded_run(desired("hle/a"), "run-a", status="finished"))
    plan = compute_plan(
        [desired("hle/a")], state, observation(observed_run("run-a", "finished")), settings()
    )
    assert plan.results == ()
    assert "Results" not in render_text(plan) and "Results" not in render_markdown(plan)
    assert json.loads(render_json(plan))["results"] == []
