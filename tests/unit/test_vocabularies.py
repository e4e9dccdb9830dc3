"""Closed vocabularies are types (issue 33): the smoke stage an enum, history reasons and the
settings' words ``Literal`` types, each checked where it enters (the lockfile, the settings
file, the history edits)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from reconciler.config.project import load_project_settings
from reconciler.errors import StateError, UsageError
from reconciler.model import (
    SETTING_CHOICES,
    HistoryReason,
    LockKind,
    LockState,
    RecordedRun,
    SmokeStage,
)
from reconciler.state.history import HISTORY_REASONS, retire_run
from reconciler.state.lockfile import parse, serialize

HEADER = '# x\nversion = 2\nlineage = "l"\nplatform = "local"\nworkspace = "w"\n'
RUN = '\n[runs.a]\nspec_digest = "d"\nrun_id = "r"\n'


def test_a_recorded_stage_is_read_as_the_enum_and_written_as_its_word() -> None:
    state = parse(HEADER + RUN + 'stage = "smoke"\n', "state/osmosis.lock")
    assert state.runs["a"].stage is SmokeStage.SMOKE
    assert 'stage = "smoke"' in serialize(state)


def test_an_unknown_stage_is_refused_naming_the_words() -> None:
    with pytest.raises(StateError) as caught:
        parse(HEADER + RUN + 'stage = "warm"\n', "state/osmosis.lock")
    assert caught.value.message == (
        "state/osmosis.lock:10: runs.a.stage: unknown stage 'warm' "
        "(expected one of full, skipped, smoke)"
    )


def test_an_unknown_intent_op_is_refused() -> None:
    intent = (
        '\n[runs.a.intent]\nop = "delete"\nbody_digest = "x"\nstarted_at = 2026-01-01T00:00:00Z\n'
    )
    with pytest.raises(StateError) as caught:
        parse(HEADER + RUN + intent, "state/osmosis.lock")
    assert caught.value.message == (
        "state/osmosis.lock:12: runs.a.intent.op: unknown op 'delete' (expected one of stop, submit)"
    )


def test_history_reasons_are_the_type() -> None:
    assert frozenset(get_args(HistoryReason)) == HISTORY_REASONS
    state = LockState(
        lineage="l",
        platform="local",
        workspace="w",
        runs={"a": RecordedRun(address="a", spec_digest="d", run_id="r")},
    )
    assert retire_run(state, "a", "rerun").history[0].reason == "rerun"
    with pytest.raises(ValueError, match="unknown history reason 'whim'"):
        retire_run(state, "a", "whim")


def test_a_setting_accepts_exactly_its_type_words(tmp_path: Path) -> None:
    assert SETTING_CHOICES["lock"] == get_args(LockKind) == ("local", "git")
    (tmp_path / "osmosis.toml").write_text('lock = "git"\n', encoding="utf-8")
    assert load_project_settings(tmp_path) == {"lock": "git"}
    (tmp_path / "osmosis.toml").write_text('lock = "nfs"\n', encoding="utf-8")
    with pytest.raises(UsageError, match="must be one of local, git, got 'nfs'"):
        load_project_settings(tmp_path)
