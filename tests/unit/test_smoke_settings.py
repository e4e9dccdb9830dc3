"""The ``smoke`` setting's reading and errors, the lockfile's format 2 fields (``stage``)
and the migration of a format 1 lockfile (docs/smoke.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.config.project import load_project_settings
from reconciler.errors import UsageError
from reconciler.model import LOCKFILE_VERSION, LockState, RecordedRun, SmokeRule, SmokeStage
from reconciler.state.lockfile import parse, serialize


def settings_of(tmp_path: Path, text: str) -> dict[str, object]:
    (tmp_path / "osmosis.toml").write_text(text, encoding="utf-8")
    return load_project_settings(tmp_path)


def test_smoke_rules_are_read(tmp_path: Path) -> None:
    values = settings_of(
        tmp_path,
        '[[smoke]]\naddresses = ["hle/**"]\nabove = 100\ntasks = 2\nmin_score = 0.25\n\n'
        "[[smoke]]\nabove = 1000\n",
    )
    assert values["smoke"] == (
        SmokeRule(addresses=("hle/**",), above=100, tasks=2, min_score=0.25),
        SmokeRule(addresses=("**",), above=1000, tasks=1, min_score=None),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[smoke]]\naddresses = []\nabove = 1\n", "smoke[0].addresses: must be a list"),
        ('[[smoke]]\naddresses = ["a"]\n', "smoke[0].above: missing"),
        ("[[smoke]]\nabove = -1\n", "smoke[0].above: must be an integer >= 0, got -1"),
        ("[[smoke]]\nabove = 5\ntasks = 0\n", "smoke[0].tasks: must be an integer >= 1, got 0"),
        ("[[smoke]]\nabove = 5\nmin_score = 2\n", "smoke[0].min_score: must be a fraction"),
        ("[[smoke]]\nabove = 5\nthreshold = 2\n", "smoke[0].threshold: unknown smoke setting"),
        ('smoke = "yes"\n', "smoke: must be a table or a list of tables"),
    ],
)
def test_bad_smoke_settings_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        settings_of(tmp_path, text)
    assert caught.value.message.startswith("osmosis.toml")
    assert message in caught.value.message


def test_format_1_is_read_and_written_as_today_s_format() -> None:
    v1 = (
        'version = 1\nlineage = "L"\nserial = 1\nplatform = "local"\nworkspace = "w"\n\n'
        '[runs."a/b"]\nspec_digest = "sha256:x"\nrun_id = "r1"\n'
    )
    state = parse(v1, "osmosis.lock")
    assert state.runs["a/b"].stage is None
    text = serialize(state)
    assert LOCKFILE_VERSION == 3
    assert text.splitlines()[1] == "version = 3"
    assert parse(text, "osmosis.lock").runs["a/b"] == state.runs["a/b"]


def test_stage_round_trips() -> None:
    state = LockState(
        lineage="L",
        platform="local",
        workspace="w",
        runs={
            "a": RecordedRun(
                address="a", spec_digest="sha256:x", run_id="r", stage=SmokeStage.SMOKE
            )
        },
    )
    text = serialize(state)
    assert 'stage = "smoke"' in text
    assert parse(text, "osmosis.lock").runs["a"].stage == "smoke"
