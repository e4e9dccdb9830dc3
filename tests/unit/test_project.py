"""[tool.osmosis-reconciler] settings: defaults, overrides, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.config.project import find_root, load_project_settings, parse_download_types
from reconciler.engine.context import resolve_settings
from reconciler.errors import UsageError


def write_pyproject(root: Path, body: str) -> None:
    (root / "pyproject.toml").write_text(body, encoding="utf-8")


def test_missing_pyproject_gives_defaults(tmp_path: Path) -> None:
    settings = resolve_settings(tmp_path, {})
    assert settings.benchmarks == "benchmarks"
    assert settings.state == "state/osmosis.lock"
    assert settings.download_types == ("summary", "results")
    assert (settings.on_delete, settings.on_change) == ("stop", "replace")
    assert (settings.max_stops, settings.max_attempts, settings.parallelism) == (5, 5000, 8)


def test_table_values_are_read_and_flags_win(tmp_path: Path) -> None:
    write_pyproject(
        tmp_path,
        """
[tool.osmosis-reconciler]
benchmarks = "configs/bench"
download_types = ["summary", "artifacts", "summary"]
on_delete = "forget"
max_stops = 2
parallelism = 3
""",
    )
    settings = resolve_settings(tmp_path, {"parallelism": 5, "state": None})
    assert settings.benchmarks == "configs/bench"
    assert settings.download_types == ("summary", "artifacts")
    assert settings.on_delete == "forget"
    assert settings.max_stops == 2
    assert settings.parallelism == 5
    assert settings.state == "state/osmosis.lock"


@pytest.mark.parametrize(
    ("body", "fragment", "hint"),
    [
        (
            "max_stop = 3",
            "tool.osmosis-reconciler.max_stop: unknown setting",
            "did you mean 'max_stops'?",
        ),
        ('on_delete = "destroy"', "must be one of stop, forget", None),
        ('max_attempts = "many"', "max_attempts: must be int", None),
        ("parallelism = 0", "parallelism: must be at least 1", None),
        ("max_stops = true", "max_stops: must be int", None),
        ('outputs = "s3"', "outputs: must be one of recorded, disk", None),
        ('lock = "consul"', "lock: must be one of local, git", None),
        ("lock_ttl = 1", "lock_ttl: must be at least 2", None),
        (
            'download_types = ["summary", "everything"]',
            "unknown output type(s): everything",
            "choose from",
        ),
    ],
)
def test_bad_settings_name_the_key(
    tmp_path: Path, body: str, fragment: str, hint: str | None
) -> None:
    write_pyproject(tmp_path, f"[tool.osmosis-reconciler]\n{body}\n")
    with pytest.raises(UsageError) as info:
        load_project_settings(tmp_path)
    assert fragment in info.value.message
    if hint:
        assert hint in (info.value.hint or "")


def test_outputs_and_lock_settings(tmp_path: Path) -> None:
    defaults = resolve_settings(tmp_path, {})
    assert (defaults.outputs, defaults.lock, defaults.lock_ttl) == ("recorded", None, 120)
    write_pyproject(
        tmp_path, '[tool.osmosis-reconciler]\noutputs = "disk"\nlock = "local"\nlock_ttl = 30\n'
    )
    settings = resolve_settings(tmp_path, {})
    assert (settings.outputs, settings.lock, settings.lock_ttl) == ("disk", "local", 30)


def test_broken_pyproject_is_a_usage_error(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "[tool.osmosis-reconciler\n")
    with pytest.raises(UsageError, match="pyproject.toml: cannot read"):
        load_project_settings(tmp_path)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("summary,results", ["summary", "results"]),
        (" Summary , LOGS ,summary", ["summary", "logs"]),
        ("all", ["summary", "results", "artifacts", "logs"]),
    ],
)
def test_download_types(raw: str, expected: list[str]) -> None:
    assert parse_download_types(raw) == expected


@pytest.mark.parametrize("raw", ["", "all,summary", "pdf"])
def test_download_types_refused(raw: str) -> None:
    with pytest.raises(UsageError):
        parse_download_types(raw)


# --------------------------------------------------------------------------- settings files


@pytest.mark.parametrize("name", ["osmosis.toml", ".osmosis.toml"])
def test_a_settings_file_of_its_own_has_the_same_keys_at_the_top_level(
    tmp_path: Path, name: str
) -> None:
    (tmp_path / name).write_text(
        '# not a Python project\nbenchmarks = "evals"\n\nparallelism = 2\n', encoding="utf-8"
    )
    settings = resolve_settings(tmp_path, {"parallelism": 4})
    assert settings.benchmarks == "evals"
    assert settings.parallelism == 4  # flags win


def test_a_bad_key_in_osmosis_toml_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "osmosis.toml").write_text('benchmarks = "b"\n\nmax_stop = 3\n')
    with pytest.raises(UsageError) as info:
        load_project_settings(tmp_path)
    assert info.value.message == "osmosis.toml:3: max_stop: unknown setting"
    assert info.value.hint == "did you mean 'max_stops'?"


def test_pyproject_keys_are_located_inside_their_table(tmp_path: Path) -> None:
    write_pyproject(
        tmp_path, "[project]\nparallelism = 1\n\n[tool.osmosis-reconciler]\nparallelism = 0\n"
    )
    with pytest.raises(UsageError) as info:
        load_project_settings(tmp_path)
    assert info.value.message == (
        "pyproject.toml:5: tool.osmosis-reconciler.parallelism: must be at least 1"
    )


def test_settings_in_two_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "osmosis.toml").write_text("max_stops = 1\n")
    (tmp_path / ".osmosis.toml").write_text("max_stops = 2\n")
    with pytest.raises(UsageError, match="settings in two places: osmosis.toml and .osmosis.toml"):
        load_project_settings(tmp_path)


def test_a_pyproject_without_the_table_does_not_count_as_a_second_file(tmp_path: Path) -> None:
    write_pyproject(tmp_path, '[project]\nname = "x"\n')
    (tmp_path / "osmosis.toml").write_text("max_stops = 1\n")
    assert load_project_settings(tmp_path) == {"max_stops": 1}


# --------------------------------------------------------------------------- root


def test_the_root_is_the_nearest_settings_file_below_the_git_top_level(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    nested = tmp_path / "evals" / "benchmarks" / "tb"
    nested.mkdir(parents=True)
    assert find_root(nested) == tmp_path
    (tmp_path / "evals" / ".osmosis.toml").write_text("")
    assert find_root(nested) == tmp_path / "evals"
    assert find_root(nested, "..") == (nested / "..").resolve()


def test_a_settings_file_above_the_git_top_level_belongs_to_another_project(
    tmp_path: Path,
) -> None:
    (tmp_path / "osmosis.toml").write_text("")
    work = tmp_path / "checkout"
    (work / "benchmarks").mkdir(parents=True)
    (work / ".git").write_text("gitdir: /elsewhere\n")  # a worktree or submodule
    assert find_root(work / "benchmarks") == work


def test_no_root_and_a_missing_dir_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no repository root found from"):
        find_root(tmp_path)
    with pytest.raises(UsageError, match="--dir nowhere: no such directory"):
        find_root(tmp_path, "nowhere")
