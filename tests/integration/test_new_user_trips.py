"""What a new user tripped on (issue 25), each fixed where it lives and checked end to end
against the local Platform over loopback HTTP."""

from __future__ import annotations

from pathlib import Path

from .helpers import Osmosis, Platform, init_repo, smoke_config, start_platform


def test_a_misspelt_secret_name_gets_a_did_you_mean(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config(secret="OPENAI_APIKEY")})
    result = Osmosis(repo, platform).plan()
    assert result.code == 4, result
    assert (
        'did you mean "OPENAI_API_KEY", which exists? Then fix the name in '
        "benchmarks/tb/a.toml instead of creating OPENAI_APIKEY"
    ) in result.out


def test_apply_counts_actions_and_runs_apart_and_says_to_commit_the_lockfile(
    tmp_path: Path,
) -> None:
    server = start_platform(tmp_path / "fast-platform", speed=40.0)
    try:
        repo = init_repo(
            tmp_path / "repo",
            configs={"tb/a": smoke_config(), "tb/b": smoke_config("openai/gpt-5")},
        )
        result = Osmosis(repo, server).apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert result.code in (0, 3), result
        assert "actions on 2 run(s): 2 submit, 2 download." in result.out
        assert (
            "Recorded in state/osmosis.lock: commit it (`git add state/osmosis.lock && git "
            "commit`) so other clones and CI see these runs."
        ) in result.out
    finally:
        server.close()


def test_a_terraform_style_var_flag_is_named_plainly(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    result = Osmosis(repo, platform).plan("-var", "x=1")
    assert result.code == 1
    assert (
        "unknown option -var; long options take two dashes, and the single-dash ones are -q and -v"
        in result.err
    )
    typo = Osmosis(repo, platform).plan("--tragets", "x")
    assert "unrecognized arguments: --tragets x (did you mean --target?)" in typo.err


def test_an_empty_argument_is_a_usage_error_not_a_crash(tmp_path: Path, platform: Platform) -> None:
    # `osmosis-plan "$EXTRA"` with EXTRA unset: found by `make fuzz` as an internal error.
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    result = Osmosis(repo, platform).plan("")
    assert result.code == 1
    assert "an empty argument was given" in result.err
    assert "internal error" not in result.err


def test_one_plan_reports_every_mistake_of_every_kind_at_once(
    tmp_path: Path, platform: Platform
) -> None:
    # Five independent mistakes of five kinds in four files: a schema error (unknown key), a
    # missing table, a misspelt benchmark whose task list is also wrong, a misspelt secret
    # and an out-of-range setting. A new user used to meet them over three or four plans.
    unknown_key = smoke_config().replace(
        'benchmark = "terminal-bench-2-1"\n', 'benchmark = "terminal-bench-2-1"\ncolour = 1\n'
    )
    no_model = (
        '[experiment]\nbenchmark = "terminal-bench-2-1"\n\n[[agents]]\nharness = "terminus-2"\n'
    )
    misspelt_benchmark = smoke_config(task="terminal-bench/no-such-task").replace(
        '"terminal-bench-2-1"', '"termnal-bench-2-1"'
    )
    bad_secret_and_range = smoke_config(secret="OPENAI_APIKEY").replace(
        "max_concurrent_attempts = 1", "max_concurrent_attempts = 500"
    )
    repo = init_repo(
        tmp_path / "repo",
        configs={
            "tb/a-schema": unknown_key,
            "tb/b-missing": no_model,
            "tb/c-benchmark": misspelt_benchmark,
            "tb/d-secret": bad_secret_and_range,
        },
    )
    lock = repo / "state" / "osmosis.lock"
    before = lock.read_bytes() if lock.exists() else None
    osmosis = Osmosis(repo, platform)
    result = osmosis.plan()
    assert result.code == 1, result
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: benchmarks/tb/a-schema.toml:4:1: experiment.colour: Unrecognized key 'colour' "
        "in [experiment] (allowed keys: benchmark)",
        "error: benchmarks/tb/b-missing.toml:4:1: agents[0].model: Field required (add an "
        '[agents.model] table to agent 1 with type = "provider", "endpoint" or "hosted")',
        "error: benchmarks/tb/c-benchmark.toml:3:1: experiment.benchmark: Benchmark "
        "'termnal-bench-2-1' was not found in this workspace. Benchmark names are "
        "case-sensitive; use its key, exact name or ID, and add Harbor registry benchmarks to "
        "the workspace from the Platform first. Did you mean terminal-bench-2-1 (Terminal-Bench "
        '2.1)? (set `experiment.benchmark = "terminal-bench-2-1"` in '
        "benchmarks/tb/c-benchmark.toml)",
        "error: benchmarks/tb/c-benchmark.toml:6:1: tasks.task_names: Unknown task "
        "'terminal-bench/no-such-task' in Terminal-Bench 2.1 (did you mean "
        "'terminal-bench/train-ssh-tunnel'?) (checked against Terminal-Bench 2.1, the benchmark "
        "it most likely names) (set `tasks.task_names = [\"terminal-bench/train-ssh-tunnel\"]` "
        "in benchmarks/tb/c-benchmark.toml)",
        "error: benchmarks/tb/d-secret.toml:14:1: agents[0].model.api_key_secret: Secret(s) "
        "not found: OPENAI_APIKEY (referenced by benchmarks/tb/d-secret.toml; did you mean "
        '"OPENAI_API_KEY", which exists? Then fix the name in benchmarks/tb/d-secret.toml '
        "instead of creating OPENAI_APIKEY) (`echo VALUE | osmosis-platform-emulator secret "
        "set OPENAI_APIKEY --scope workspace --workspace e2e --platform " + platform.url + "`)",
        "error: benchmarks/tb/d-secret.toml:18:1: execution.max_concurrent_attempts: "
        "max_concurrent_attempts must be an integer from 1 to 64 (set "
        "`execution.max_concurrent_attempts = 64` in benchmarks/tb/d-secret.toml)",
    ]
    assert "6 error(s) in 4 config file(s)" in result.err
    assert platform.submits() == 0
    assert (lock.read_bytes() if lock.exists() else None) == before
