"""End-to-end: run generators (``*.matrix.toml``) planned and applied against the local
Platform over loopback HTTP, in real git repositories (issue 25, "Done when", generators).
"""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from reconciler.engine.saved_plan import plan_from_dict
from reconciler.render import plan_to_dict
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    Platform,
    actions,
    init_repo,
    plan_items,
    read_lock,
)

DAY = 86400.0
GENERATOR = "benchmarks/compare/frontier.matrix.toml"

BENCHMARKS = {
    "tb-smoke": (
        'experiment.benchmark = "terminal-bench-2-1"\n'
        'tasks.task_names = ["terminal-bench/git-multibranch"]\n'
    ),
    "hle-parity": (
        'experiment.benchmark = "hle"\n'
        'tasks.task_set = "parity"\n'
        'execution.judge_api_key_secret = "OPENAI_API_KEY"\n'
    ),
    "gdpval": (
        'experiment.benchmark = "gdpval"\nexecution.judge_api_key_secret = "OPENAI_API_KEY"\n'
    ),
}
MODELS = {
    "gpt-5-2": 'agent.model = { type = "provider", model = "openai/gpt-5.2", api_key_secret = "OPENAI_API_KEY" }\n',
    "gpt-5": 'agent.model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }\n',
    "gpt-5-mini": 'agent.model = { type = "provider", model = "openai/gpt-5-mini", api_key_secret = "OPENAI_API_KEY" }\n',
    "sonnet-4": 'agent.model = { type = "provider", model = "anthropic/claude-sonnet-4", api_key_secret = "ANTHROPIC_API_KEY" }\n',
}


HAND_WRITTEN = (
    "[experiment]\n"
    'benchmark = "terminal-bench-2-1"\n\n'
    "[tasks]\n"
    'task_names = ["terminal-bench/git-multibranch"]\n\n'
    "[[agents]]\n"
    'harness = "codex"\n\n'
    "[agents.model]\n"
    'type = "provider"\n'
    'model = "openai/gpt-5.2"\n'
    'api_key_secret = "OPENAI_API_KEY"\n\n'
    "[execution]\n"
    "attempts_per_task = 1\n"
    "max_concurrent_attempts = 2\n"
)


def generator(
    benchmarks: list[str] | None = None,
    models: list[str] | None = None,
    *,
    exclude: str = '[[exclude]]\nbenchmark = "hle-parity"\nmodel = "gpt-5-mini"\n',
    rename: dict[str, str] | None = None,
    tail: str = "",
    axes_first: str = "benchmark",
) -> str:
    """The text of a 3 benchmarks × 4 models generator (element order as given)."""
    rename = rename or {}
    benchmark_axis = "".join(
        f'[[axis.benchmark]]\nkey = "{key}"\n{BENCHMARKS[key]}\n'
        for key in (benchmarks or list(BENCHMARKS))
    )
    model_axis = "".join(
        f'[[axis.model]]\nkey = "{rename.get(key, key)}"\n{MODELS[key]}\n'
        for key in (models or list(MODELS))
    )
    axes = benchmark_axis + model_axis if axes_first == "benchmark" else model_axis + benchmark_axis
    return (
        "# Run generator: one run per benchmark × model.\n"
        "[generate]\n"
        "version = 1\n"
        'address = "{benchmark}/{model}"\n'
        "max_runs = 40\n\n"
        "[base.agent]\n"
        'harness = "codex"\n\n'
        "[base.execution]\n"
        "attempts_per_task = 1\n"
        "max_concurrent_attempts = 2\n\n"
        f"{axes}{exclude}\n{tail}"
    )


def write_generator(repo: Path, text: str) -> None:
    target = repo / GENERATOR
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def generator_repo(tmp_path: Path, platform: Platform, text: str | None = None) -> Osmosis:
    repo = init_repo(tmp_path / "repo")
    write_generator(repo, text or generator())
    commit(repo, "Add the frontier comparison")
    return Osmosis(repo, platform)


def applied(osm: Osmosis) -> None:
    result = osm.apply("--auto-approve")
    assert result.code == 0, result


def test_three_benchmarks_by_four_models_with_one_exclude_plans_eleven_submits(
    tmp_path: Path, platform: Platform
) -> None:
    osm = generator_repo(tmp_path, platform)

    plan = osm.plan("--format", "json")
    assert plan.code == 0, plan
    expected = {
        f"compare/frontier/{b}/{m}"
        for b in BENCHMARKS
        for m in MODELS
        if (b, m) != ("hle-parity", "gpt-5-mini")
    }
    assert actions(plan) == {address: "submit" for address in expected}
    item = plan_items(plan)["compare/frontier/hle-parity/sonnet-4"]
    assert item["source"]["file"] == GENERATOR
    assert item["source"]["cell"] == {"benchmark": "hle-parity", "model": "sonnet-4"}
    (product,) = plan.json()["generators"]
    assert product["runs"] == 11 and product["excluded"] == 1
    assert product["axes"] == {"benchmark": list(BENCHMARKS), "model": list(MODELS)}

    schema = json.loads(
        (Path(__file__).parents[2] / "reconciler/schema/output.schema.json").read_text()
    )
    errors = list(Draft202012Validator(schema).iter_errors(plan.json()))
    assert not errors, [e.message for e in errors[:3]]
    document = {k: v for k, v in plan.json().items() if k not in ("type", "command")}
    saved = {k: v for k, v in document.items() if k not in ("diagnostics", "exit_code")}
    assert plan_to_dict(plan_from_dict(saved))["generators"] == saved["generators"]

    text = osm.plan()
    assert f"{GENERATOR}  benchmark(3) × model(4) − 1 excluded = 11 runs" in text.out
    assert "+ compare/frontier/tb-smoke/gpt-5-2" in text.out
    assert "Plan: 11 to submit" in text.out
    markdown = osm.plan("--format", "markdown").out
    assert "| benchmark | gpt-5-2 | gpt-5 | gpt-5-mini | sonnet-4 |" in markdown
    assert "| hle-parity | + " in markdown and "| excluded |" in markdown
    assert platform.submits() == 0


def test_reordering_elements_and_axes_plans_no_changes(tmp_path: Path, platform: Platform) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    assert platform.submits() == 11

    shuffled = generator(
        ["gdpval", "tb-smoke", "hle-parity"],
        ["sonnet-4", "gpt-5-mini", "gpt-5-2", "gpt-5"],
        axes_first="model",
    )
    write_generator(osm.repo, shuffled)
    again = osm.plan("--detailed-exitcode")
    assert again.code == 0, again
    assert "No changes." in again.out


def test_removing_a_model_shows_exactly_its_cells_as_stop_then_forget(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    write_generator(osm.repo, generator(models=["gpt-5-2", "gpt-5-mini", "sonnet-4"]))

    plan = osm.plan("--format", "json")
    assert plan.code == 0, plan
    gone = {f"compare/frontier/{b}/gpt-5" for b in BENCHMARKS}
    assert actions(plan) == {address: "stop" for address in gone}
    for address in gone:
        source = plan_items(plan)[address]["source"]
        assert source["note"] == 'element removed: model "gpt-5"'
        assert source["cell"]["model"] == "gpt-5"
    text = osm.plan().out
    assert f'# element removed: model "gpt-5" in {GENERATOR}' in text

    clock.advance(DAY)
    finished = osm.plan("--format", "json")
    removed = {a: i for a, i in plan_items(finished).items() if a in gone}
    assert {i["action"] for i in removed.values()} == {"forget"}


def test_removed_block_with_finish_leaves_runs_to_finish(
    tmp_path: Path, platform: Platform
) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    retired = '[[removed]]\naxis = "model"\nkey = "gpt-5"\non_remove = "finish"\n'
    write_generator(osm.repo, generator(models=["gpt-5-2", "gpt-5-mini", "sonnet-4"], tail=retired))

    plan = osm.plan("--format", "json")
    assert plan.code == 0, plan
    assert actions(plan) == {}
    assert any('on_remove = "finish"' in w for w in plan.json()["warnings"])


def test_removing_most_of_a_generator_needs_removed_blocks_or_the_flag(
    tmp_path: Path, platform: Platform
) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    write_generator(osm.repo, generator(models=["gpt-5-2"], exclude=""))

    guarded = osm.plan()
    assert guarded.code == 1, guarded
    assert f"{GENERATOR}: this plan would remove 8 cells of 11 recorded" in guarded.text
    assert "[[removed]]" in guarded.text
    retired = "".join(
        f'[[removed]]\naxis = "model"\nkey = "{key}"\n'
        for key in ("gpt-5", "gpt-5-mini", "sonnet-4")
    )
    write_generator(osm.repo, generator(models=["gpt-5-2"], exclude="", tail=retired))
    acknowledged = osm.plan("--format", "json", "--allow-mass-stop")
    assert acknowledged.code == 0, acknowledged
    assert set(actions(acknowledged).values()) == {"stop"}
    assert len(actions(acknowledged)) == 8


def test_a_moved_block_renames_every_cell_with_no_platform_call(
    tmp_path: Path, platform: Platform
) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    runs = read_lock(osm.repo)["runs"]
    moved = '[[moved]]\naxis = "model"\nfrom = "sonnet-4"\nto = "claude-sonnet-4"\n'
    write_generator(osm.repo, generator(rename={"sonnet-4": "claude-sonnet-4"}, tail=moved))

    plan = osm.plan("--format", "json")
    assert plan.code == 0, plan
    expected = {f"compare/frontier/{b}/claude-sonnet-4" for b in BENCHMARKS}
    assert actions(plan) == {address: "move" for address in expected}
    for address in expected:
        old = address.replace("claude-sonnet-4", "sonnet-4")
        assert plan_items(plan)[address]["from_address"] == old
        assert plan_items(plan)[address]["run_id"] == runs[old]["run_id"]

    assert platform.requests is not None
    platform.requests.reset()
    before = platform.submits()
    applied(osm)
    assert platform.submits() == before
    assert platform.requests.count("POST") == 0, platform.requests.lines
    assert osm.plan("--detailed-exitcode").code == 0


def test_a_broken_generator_stops_the_plan_before_any_removal(
    tmp_path: Path, platform: Platform
) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    lock_before = (osm.repo / "state" / "osmosis.lock").read_bytes()
    broken = generator(models=["gpt-5-2"], exclude="").replace("max_runs = 40", "max_run = 40")
    write_generator(osm.repo, broken)
    assert platform.requests is not None
    platform.requests.reset()

    result = osm.plan()
    assert result.code == 1, result
    assert f"{GENERATOR}:5" in result.text
    assert 'generate.max_run: unknown key (did you mean "max_runs"?)' in result.text
    assert "stop" not in result.out and "forget" not in result.out
    assert platform.requests.count("POST") == 0
    as_json = osm.plan("--format", "json")
    assert as_json.code == 1
    assert "actions" not in as_json.json() or as_json.json()["actions"] == []
    assert (osm.repo / "state" / "osmosis.lock").read_bytes() == lock_before


def test_converting_a_hand_written_file_into_a_generator_cell_plans_no_changes(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"compare/frontier/tb-smoke/gpt-5-2": HAND_WRITTEN})
    osm = Osmosis(repo, platform)
    applied(osm)
    run_id = read_lock(repo)["runs"]["compare/frontier/tb-smoke/gpt-5-2"]["run_id"]

    (repo / "benchmarks" / "compare" / "frontier" / "tb-smoke" / "gpt-5-2.toml").unlink()
    write_generator(repo, generator(["tb-smoke"], ["gpt-5-2"], exclude=""))
    result = osm.plan("--detailed-exitcode")
    assert result.code == 0, result
    assert "No changes." in result.out
    assert read_lock(repo)["runs"]["compare/frontier/tb-smoke/gpt-5-2"]["run_id"] == run_id


def test_a_cell_and_a_hand_written_file_at_one_address_is_an_error_naming_both(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(tmp_path / "repo")
    write_generator(repo, generator(["tb-smoke"], ["gpt-5-2"], exclude=""))
    target = repo / "benchmarks" / "compare" / "frontier" / "tb-smoke" / "gpt-5-2.toml"
    target.parent.mkdir(parents=True)
    target.write_text(HAND_WRITTEN, encoding="utf-8")
    result = Osmosis(repo, platform).plan("--validate-only")
    assert result.code == 1, result
    assert (
        "compare/frontier/tb-smoke/gpt-5-2 is produced by "
        f"{GENERATOR} (cell tb-smoke × gpt-5-2) and also by "
        "benchmarks/compare/frontier/tb-smoke/gpt-5-2.toml"
    ) in result.text


def test_changed_since_targets_every_cell_of_a_changed_generator(
    tmp_path: Path, platform: Platform
) -> None:
    osm = generator_repo(tmp_path, platform)
    applied(osm)
    base = commit(osm.repo, "Record", allow_empty=True)
    write_generator(osm.repo, generator(models=["gpt-5-2", "gpt-5-mini", "sonnet-4"]))
    commit(osm.repo, "Drop gpt-5")

    plan = osm.plan("--format", "json", "--changed-since", base)
    assert plan.code == 0, plan
    assert actions(plan) == {f"compare/frontier/{b}/gpt-5": "stop" for b in BENCHMARKS}
    markdown = osm.plan("--format", "markdown", "--changed-since", base).out
    # The grid shows the removed element as its own column, its cells as stops.
    assert "| gpt-5 (removed) |" in markdown
    assert "| tb-smoke | = | = | = | - stop |" in markdown


def test_a_misspelt_benchmark_in_an_element_is_one_catalog_error_for_its_cells(
    tmp_path: Path, platform: Platform
) -> None:
    # Issue 37 finding 7: with a broken file beside it, each cell of the generator got its
    # own catalog error, cited at the cell's first element.
    text = generator(["tb-smoke"], ["gpt-5-2", "gpt-5"], exclude="").replace(
        '"terminal-bench-2-1"', '"termnal-bench-2-1"'
    )
    repo = init_repo(tmp_path / "repo", configs={"tb/broken": HAND_WRITTEN + "colour = 1\n"})
    write_generator(repo, text)
    commit(repo, "Add the frontier comparison")
    result = Osmosis(repo, platform).plan()
    assert result.code == 1, result
    line = text.splitlines().index('experiment.benchmark = "termnal-bench-2-1"') + 1
    errors = [e for e in result.err.splitlines() if e.startswith(f"error: {GENERATOR}")]
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        f"error: {GENERATOR}:{line}: experiment.benchmark: 2 cells (compare/frontier/tb-smoke/"
        "gpt-5, compare/frontier/tb-smoke/gpt-5-2): Benchmark 'termnal-bench-2-1' was not found"
    ), errors
    assert f'(from axis.benchmark "tb-smoke", line {line})' in errors[0]
