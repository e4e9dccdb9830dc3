"""[tool.osmosis-reconciler] settings: defaults, overrides, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.context import resolve_settings
from reconciler.errors import UsageError
from reconciler.project import load_project_settings, parse_download_types


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
