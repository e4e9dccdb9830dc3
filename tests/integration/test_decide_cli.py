"""Decisions over loopback (issue 39): a two-agent config with ``[decide]`` plans its sizes
(and is refused as inconclusive by design when it cannot reach its power); a decision
recorded in the lockfile over a real, downloaded run of the local Platform is shown by
``osmosis-results decide`` and replays to "match" — and names the first difference when a
recorded look is not what the results give.

The decision table here is rewritten from the downloaded results (``record_look``, through
the lockfile's own serializer) so a look can be tampered with; the applies that pay the
batches and write it are test_decide_batches.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.results import main as results_main
from reconciler.engine.context import DOWNLOAD_ROOT
from reconciler.model import DecisionRecord, DecisionSpec
from reconciler.outputs.kept import ResultsStore
from reconciler.results.runs import address_runs
from reconciler.results.sequential import task_order
from reconciler.results.sequential.record import paired_diffs, record_look
from reconciler.state.lockfile import parse, serialize
from tests.support.osmosis import Osmosis, Result, init_repo, start_platform

ADDRESS = "tb/ab"
VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)


def agent(model: str, secret: str) -> str:
    return (
        '[[agents]]\nharness = "terminus-2"\n\n[agents.model]\ntype = "provider"\n'
        f'model = "{model}"\napi_key_secret = "{secret}"\n\n'
    )


def config(decide: str) -> str:
    return (
        '[experiment]\nbenchmark = "terminal-bench-2-1"\n\n'
        '[tasks]\ncategories = ["software-engineering"]\n\n'
        + agent("openai/gpt-5.2", "OPENAI_API_KEY")
        + agent("anthropic/claude-sonnet-4.5", "ANTHROPIC_API_KEY")
        + "[execution]\nattempts_per_task = 3\nmax_concurrent_attempts = 4\n\n"
        + "[decide]\n"
        + decide
    )


class Results(Osmosis):
    def results(self, *args: str) -> Result:
        return self._call(results_main, list(args), None)


def test_a_decision_the_selection_cannot_power_is_refused_before_paying(tmp_path: Path) -> None:
    server = start_platform(tmp_path / "platform", speed=2000.0)
    try:
        repo = init_repo(tmp_path / "repo", configs={ADDRESS: config("margin_pp = 2\nseed = 1\n")})
        osm = Results(repo, server)
        plan = osm.plan()
        assert plan.code == 1, plan
        assert f"{ADDRESS}: inconclusive by design: the selection has " in plan.text
        assert "decide: fixed design " in plan.out
    finally:
        server.close()


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory):
    """A wide margin the selection can power: planned, paid once, downloaded; then the
    decision's first batch and look recorded in the lockfile from the downloaded results."""
    tmp = tmp_path_factory.mktemp("decide")
    server = start_platform(tmp / "platform", speed=2000.0)
    repo = init_repo(
        tmp / "repo", configs={ADDRESS: config("margin_pp = 60\nseed = 5\nlooks = 1\n")}
    )
    osm = Results(repo, server)
    plan = osm.plan()
    assert plan.code == 0, plan
    assert "decide: worst case " in plan.out
    applied = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
    assert applied.code == 0, applied
    lock_path = repo / "state" / "osmosis.lock"
    state = parse(lock_path.read_text(encoding="utf-8"), "osmosis.lock")
    (run,) = address_runs(state, ADDRESS)
    outcomes = ResultsStore(repo, download_root=repo / DOWNLOAD_ROOT).outcomes(run, fetch=False)
    assert outcomes is not None and outcomes.paired
    diffs = paired_diffs([outcomes])
    assert len(diffs) >= 2
    order = task_order({name: None for name in diffs}, 5)
    record = DecisionRecord(
        spec=DecisionSpec(margin_pp=60.0, seed=5, looks=1, where="benchmarks/tb/ab.toml"),
        max_tasks=len(order),
        fixed_tasks=len(order),
        order=order,
        batch_ends=(len(order),),
        batch_runs=(run.run_id,),
        dollars_spent=2.0 * len(order),
    )
    record = record_look(record, diffs, last=True)
    state = state.model_copy(update={"decisions": {ADDRESS: record}})
    lock_path.write_text(serialize(state), encoding="utf-8")
    yield osm, record
    server.close()


def test_the_decision_is_shown_in_text_and_schema_valid_json(decided) -> None:
    osm, record = decided
    shown = osm.results("decide", ADDRESS, "--no-fetch", "--format", "json")
    assert shown.code == 0, shown
    body = json.loads(shown.out)
    errors = [e.message for e in VALIDATOR.iter_errors(body)]
    assert not errors, errors
    assert body["type"] == "results_decide"
    assert body["verdict"] == record.verdict != "continue"
    assert body["tasks_used"] == body["max_tasks"] == len(record.order)
    assert body["alpha_spent"] == pytest.approx(0.05)
    assert [look["statistic"] for look in body["looks"]] == [record.looks[0].statistic]
    text = osm.results("decide", ADDRESS, "--no-fetch")
    assert text.code == 0, text
    assert text.out.startswith(f"{ADDRESS}: {record.verdict}\n")
    assert "look 1: " in text.out


def test_the_replay_matches_and_names_a_difference(decided) -> None:
    osm, record = decided
    replay = osm.results("decide", ADDRESS, "--replay", "--no-fetch")
    assert replay.code == 0, replay
    assert replay.out.rstrip().endswith("\nmatch")
    lock_path = osm.repo / "state" / "osmosis.lock"
    original = lock_path.read_text(encoding="utf-8")
    state = parse(original, "osmosis.lock")
    look = record.looks[0]
    bent = record.model_copy(update={"looks": (look.model_copy(update={"total": look.total + 1}),)})
    lock_path.write_text(serialize(state.model_copy(update={"decisions": {ADDRESS: bent}})))
    try:
        replay = osm.results("decide", ADDRESS, "--replay", "--no-fetch", "--format", "json")
        assert replay.code == 1, replay
        assert json.loads(replay.out)["replay"] == (
            f"look 1: total recorded {look.total + 1!r}, recomputed {look.total!r}"
        )
    finally:
        lock_path.write_text(original, encoding="utf-8")


def test_an_address_without_a_decision_is_a_usage_error(decided) -> None:
    osm, _ = decided
    missing = osm.results("decide", "tb/other", "--no-fetch")
    assert missing.code == 1
    assert "tb/other: no decision recorded in the lockfile (decisions: tb/ab)" in missing.text
