"""Root discovery and settings files (issue 16): the commands find the repository root from
any subdirectory, as git does, and read one settings file."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.cli.plan import main as plan_main
from tests.support.clock import FakeClock
from tests.support.osmosis import (
    Platform,
    Result,
    _environ,
    cli_env,
    init_repo,
    smoke_config,
    start_platform,
)


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    server = start_platform(tmp_path / "platform", clock=FakeClock())
    yield server
    server.close()


def plan_in(cwd: Path, platform: Platform, *args: str) -> Result:
    """``osmosis-plan`` started in ``cwd`` (no --dir), as a user types it there."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["--platform", platform.url, "--workspace", platform.workspace, "--no-color", *args]
    with (
        _environ(cli_env()),
        contextlib.chdir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = plan_main(argv)
    return Result(code, out.getvalue(), err.getvalue())


def tree(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


def test_a_subdirectory_plans_like_the_root_and_creates_nothing_there(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(
        tmp_path / "repo",
        configs={"tb/deep/a": smoke_config(), "tb/b": smoke_config("openai/gpt-5")},
    )
    benchmarks = repo / "benchmarks"
    before = tree(benchmarks)
    from_root = plan_in(repo, platform, "--format", "json")
    assert from_root.code == 0, from_root
    expected = from_root.json()
    for cwd in (benchmarks, benchmarks / "tb" / "deep"):
        result = plan_in(cwd, platform, "--format", "json")
        assert result.code == 0, result
        got = result.json()
        assert got["actions"] == expected["actions"], cwd
        assert got["config_digests"] == expected["config_digests"]
        text = plan_in(cwd, platform)
        assert "Plan: 2 to submit" in text.out, text
    assert tree(benchmarks) == before, "nothing may be created inside benchmarks/"


def test_the_embedded_platform_keeps_its_data_at_the_root(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    out, err = io.StringIO(), io.StringIO()
    env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
    with (
        _environ(env),
        contextlib.chdir(repo / "benchmarks" / "tb"),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = plan_main(["--no-color", "--validate-only"])
        assert code == 0, err.getvalue()
        code = plan_main(["--no-color"])
    # A new embedded Platform stores no secrets yet: the submit is blocked (exit 4).
    assert code == 4, err.getvalue()
    assert "OPENAI_API_KEY" in out.getvalue()
    assert (repo / ".osmosis" / "local-platform").is_dir()
    assert not (repo / "benchmarks" / ".osmosis").exists()
    assert not (repo / "benchmarks" / "tb" / ".osmosis").exists()


def test_the_nearest_settings_file_marks_a_project_inside_a_larger_repository(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(tmp_path / "mono", configs={})
    project = repo / "evals"
    (project / "runs" / "tb").mkdir(parents=True)
    (project / "runs" / "tb" / "a.toml").write_text(smoke_config(), encoding="utf-8")
    (project / "osmosis.toml").write_text(
        '# settings of the evals project\nbenchmarks = "runs"\nmax_attempts = 10\n',
        encoding="utf-8",
    )
    result = plan_in(project / "runs" / "tb", platform, "--format", "json")
    assert result.code == 0, result
    assert [a["address"] for a in result.json()["actions"]] == ["tb/a"]
    assert not (repo / "state").exists() and not (project / "state").exists()
    # --dir wins over discovery (relative to where the command runs).
    flagged = plan_in(repo, platform, "--dir", "evals", "--format", "json")
    assert flagged.code == 0, flagged
    assert flagged.json()["config_digests"] == result.json()["config_digests"]


def test_no_root_is_a_clear_error(tmp_path: Path, platform: Platform) -> None:
    lonely = tmp_path / "not-a-repo" / "benchmarks"
    lonely.mkdir(parents=True)
    result = plan_in(lonely, platform)
    assert result.code == 1, result
    assert "no repository root found from" in result.err
    assert "pass --dir PATH" in result.err and "osmosis.toml" in result.err
    assert list(lonely.iterdir()) == []
    as_json = plan_in(lonely, platform, "--format", "json")
    assert as_json.json()["diagnostics"][0]["kind"] == "UsageError"


def test_two_settings_files_are_refused_naming_both(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(
        tmp_path / "repo",
        configs={"tb/a": smoke_config()},
        pyproject="[tool.osmosis-reconciler]\nmax_stops = 2\n",
    )
    (repo / ".osmosis.toml").write_text("max_stops = 3\n", encoding="utf-8")
    result = plan_in(repo / "benchmarks", platform)
    assert result.code == 1, result
    assert "settings in two places: .osmosis.toml and pyproject.toml" in result.err
    os.remove(repo / ".osmosis.toml")
    assert plan_in(repo / "benchmarks", platform).code == 0
