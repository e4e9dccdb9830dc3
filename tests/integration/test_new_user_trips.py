"""What a new user tripped on (issue 25), each fixed where it lives and checked end to end
against the local Platform over loopback HTTP."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from jsonschema import Draft202012Validator

from tests.support.git import commit
from tests.support.osmosis import (
    BIN_DIR,
    Osmosis,
    Platform,
    cli_env,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
)

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "reconciler/schema/output.schema.json").read_text()
)


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


def test_the_apply_names_where_each_download_went(tmp_path: Path) -> None:
    # Issue 37 finding 6: the apply did not say where the downloads went (the text closes
    # with a directory per address; the JSON outcome of each download carries it).
    server = start_platform(tmp_path / "fast-platform", speed=40.0)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
        osmosis = Osmosis(repo, server)
        text = osmosis.apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert text.code in (0, 3), text
        run_a = read_lock(repo)["runs"]["tb/a"]
        where_a = f".osmosis/benchmarks/{run_a['run_name']}"
        closing = text.out[text.out.index("Apply complete:") :].splitlines()
        assert closing[1:3] == ["Downloaded to:", f"  tb/a  {where_a}/"], closing
        assert (repo / where_a / "summary.csv").is_file()

        (repo / "benchmarks" / "tb" / "b.toml").write_text(smoke_config("openai/gpt-5"))
        commit(repo, "Add tb/b")
        document = osmosis.apply(
            "--auto-approve", "--wait", "--wait-timeout", "120", "--format", "json"
        ).json()
        errors = [e.message for e in Draft202012Validator(SCHEMA).iter_errors(document)]
        assert not errors, errors[:3]
        downloads = {
            o["address"]: o["directory"] for o in document["outcomes"] if o["action"] == "download"
        }
        run_b = read_lock(repo)["runs"]["tb/b"]
        assert downloads == {"tb/b": f".osmosis/benchmarks/{run_b['run_name']}"}
        assert (repo / downloads["tb/b"]).is_dir()
        submit = next(o for o in document["outcomes"] if o["action"] == "submit")
        assert "directory" not in submit
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
        'it most likely names) (set `tasks.task_names = ["terminal-bench/train-ssh-tunnel"]` '
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
    assert "fix the configs listed above, then run `osmosis-plan` again" in result.err
    assert platform.submits() == 0
    assert (lock.read_bytes() if lock.exists() else None) == before


def test_a_file_with_a_key_error_gets_its_catalog_checks_in_the_same_plan(
    tmp_path: Path, platform: Platform
) -> None:
    # Issue 37 finding 7: a file with an unknown key was not checked against the catalog,
    # so its misspelt benchmark and category appeared one plan later.
    config = (
        smoke_config()
        .replace('"terminal-bench-2-1"\n', '"termnal-bench-2-1"\ncolour = 1\n')
        .replace('task_names = ["terminal-bench/git-multibranch"]', 'categories = ["securty"]')
    )
    repo = init_repo(tmp_path / "repo", configs={"tb/a": config})
    result = Osmosis(repo, platform).plan()
    assert result.code == 1, result
    errors = [line for line in result.err.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: benchmarks/tb/a.toml:3:1: experiment.benchmark: Benchmark "
        "'termnal-bench-2-1' was not found in this workspace. Benchmark names are "
        "case-sensitive; use its key, exact name or ID, and add Harbor registry benchmarks to "
        "the workspace from the Platform first. Did you mean terminal-bench-2-1 (Terminal-Bench "
        '2.1)? (set `experiment.benchmark = "terminal-bench-2-1"` in benchmarks/tb/a.toml)',
        "error: benchmarks/tb/a.toml:4:1: experiment.colour: Unrecognized key 'colour' in "
        "[experiment] (allowed keys: benchmark)",
        "error: benchmarks/tb/a.toml:7:1: tasks.categories: Unknown category 'securty' in "
        "Terminal-Bench 2.1 (did you mean 'security'?) (checked against Terminal-Bench 2.1, "
        'the benchmark it most likely names) (set `tasks.categories = ["security"]` in '
        "benchmarks/tb/a.toml)",
    ]
    assert platform.submits() == 0


def _emulator(cwd: Path, home: Path, *args: str, xdg: Path | None = None, stdin: str = "") -> str:
    env = cli_env({"HOME": str(home), "XDG_DATA_HOME": str(xdg) if xdg else ""})
    result = subprocess.run(
        [str(BIN_DIR / "osmosis-platform-emulator"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        check=True,
    )
    return result.stderr


def test_the_emulator_keeps_its_data_in_the_repository_or_the_users_data_directory(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    scratch = tmp_path / "scratch"
    scratch.mkdir(parents=True)
    home.mkdir()
    # Outside any repository: the user's data directory, said on stderr; nothing in cwd.
    err = _emulator(scratch, home, "benchmark", "list")
    user_data = home / ".local" / "share" / "osmosis-reconciler" / "local-platform"
    assert f"local Platform data: {user_data} (not inside a repository)" in err
    assert any(user_data.iterdir())
    assert not (scratch / ".osmosis").exists()
    # $XDG_DATA_HOME wins over ~/.local/share.
    xdg = tmp_path / "xdg"
    err = _emulator(scratch, home, "secret", "list", xdg=xdg)
    assert f"local Platform data: {xdg / 'osmosis-reconciler' / 'local-platform'}" in err
    assert not (scratch / ".osmosis").exists()
    # Inside a repository, from a subdirectory: the repository's .osmosis/, silently, so a
    # secret set there is the one a plan run from the root sees.
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config(secret="MY_KEY")})
    sub = repo / "benchmarks" / "tb"
    err = _emulator(sub, home, "secret", "set", "MY_KEY", "--workspace", "local", stdin="v\n")
    assert "local Platform data" not in err
    assert (repo / ".osmosis" / "local-platform").is_dir()
    assert not (sub / ".osmosis").exists()
    # --data-dir is where the user says.
    chosen = tmp_path / "chosen"
    _emulator(scratch, home, "benchmark", "list", "--data-dir", str(chosen))
    assert chosen.is_dir() and any(chosen.iterdir())
    assert not (scratch / ".osmosis").exists()


def test_a_first_plan_makes_up_no_cost_and_the_budget_guard_names_it(
    tmp_path: Path, platform: Platform
) -> None:
    # No recorded run of any model yet: the plan has nothing to estimate dollars from.
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config(attempts=2)})
    osmosis = Osmosis(repo, platform)
    result = osmosis.plan()
    assert result.code == 0, result
    assert "cost: 1 task -> 2 attempts, dollars unknown (no recorded run of its model)" in (
        result.out
    )
    assert "; 2 attempts, dollars unknown." in result.out
    assert "$" not in result.out and "est." not in result.out
    document = osmosis.plan("--format", "json").json()
    (item,) = document["actions"]
    assert item["cost_usd"] is None
    assert document["summary"]["cost_usd_high"] is None
    assert document["summary"]["unestimated"] == 1
    # A budget cannot pass a cost nobody knows (issue 22 item 8).
    budgeted = init_repo(
        tmp_path / "budgeted",
        configs={"tb/a": smoke_config()},
        pyproject="[tool.osmosis-reconciler]\nmax_cost_usd = 5.0\n",
    )
    refused = Osmosis(budgeted, platform).plan()
    assert refused.code == 1, refused
    assert (
        "max_cost_usd = $5.00 is set, but 1 submit has no cost estimate (no recorded run of "
        "its model): tb/a; re-run with --allow-unestimated if that is intended"
    ) in refused.text
    assert Osmosis(budgeted, platform).plan("--allow-unestimated").code == 0
    assert platform.submits() == 0
