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
