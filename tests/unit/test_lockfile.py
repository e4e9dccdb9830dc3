"""The lockfile: golden bytes, round trips, hostile files, atomic writes, one writer."""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.errors import StateError
from reconciler.model import Downloads, HistoryEntry, HistoryReason, Intent, LockState, RecordedRun
from reconciler.paths import relative_path_problem
from reconciler.state.lockfile import (
    HISTORY_LIMIT_PER_ADDRESS,
    MAX_LOCKFILE_BYTES,
    add_history,
    cap_history,
    new_state,
    parse,
    put_run,
    read_lockfile,
    rekey_run,
    retire_run,
    serialize,
    toml_key,
    write_lockfile,
)
from reconciler.state.store import StateStore

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
T0 = datetime(2026, 3, 1, 12, 30, 45, tzinfo=UTC)
LINEAGE = "6f1c2a8e-4b7d-4e0a-9c1f-2d3e4f5a6b7c"
NAME = "state/osmosis.lock"

SPEC = {
    "benchmark": "terminal-bench-2.1",
    "tasks_config": {"categories": ["networking", "security"]},
    "execution_config": {"attempts_per_task": 3, "timeout_seconds": 1800},
    "env_config": {"LOG_LEVEL": "debug"},
    "agents": [
        {
            "harness": "cursor-cli",
            "harness_api_key_secret": "CURSOR_API_KEY",
            "model": {
                "type": "provider",
                "model": "openai/gpt-5",
                "api_key_secret": "OPENAI_API_KEY",
            },
            "env": {},
        },
        {
            "model": {
                "type": "endpoint",
                "base_url": "https://llm.example.com/v1",
                "model": "acme/one",
                "api_key_secret": "ACME_KEY",
                "extra_headers": {"X-Team": "evals"},
            },
            "env": {"TEMPERATURE": "0.2"},
        },
    ],
    "secrets": {"required": ["DATASET_TOKEN"]},
    "name": 'smoke "quoted"\ttab é',
}


def full_state() -> LockState:
    """A representative state: every field kind, nested tables, intents, history."""
    return LockState(
        lineage=LINEAGE,
        serial=41,
        platform="https://platform.osmosis.ai",
        workspace="acme",
        runs={
            "terminal-bench/smoke": RecordedRun(
                address="terminal-bench/smoke",
                spec_digest="sha256:" + "1" * 64,
                spec=SPEC,
                run_id="run_01",
                run_name="smoke-a1b2",
                status="finished",
                observed_at=T0 + timedelta(hours=2),
                submitted_at=T0,
                requested_by="a" * 40,
                applied_at_commit="b" * 40,
                benchmark_id="bm_tb21",
                task_count=12,
                attempts=72,
                platform_url="https://platform.osmosis.ai/acme/benchmarks/runs/run_01",
                downloads=Downloads(
                    types=("summary", "results"),
                    files=2,
                    bytes=48213,
                    sha256={"summary.json": "c" * 64, "results/results.jsonl": "d" * 64},
                    directory=".osmosis/benchmarks/smoke-a1b2",
                ),
            ),
            "hle/parity": RecordedRun(
                address="hle/parity",
                spec_digest="sha256:" + "2" * 64,
                spec={
                    "benchmark": "hle",
                    "tasks_config": {"task_set": "parity"},
                    "agents": [
                        {
                            "model": {"type": "provider", "model": "x/y", "api_key_secret": "K"},
                            "env": {},
                        }
                    ],
                },
                intent=Intent(
                    op="submit",
                    started_at=T0 + timedelta(minutes=5),
                    body_digest="sha256:" + "2" * 64,
                    benchmark_id="bm_hle",
                    spec={"benchmark": "hle"},
                ),
            ),
            "gdpval": RecordedRun(
                address="gdpval",
                spec_digest="sha256:" + "3" * 64,
                run_id="run_03",
                status="running",
                intent=Intent(
                    op="stop", started_at=T0, body_digest="sha256:" + "3" * 64, run_id="run_03"
                ),
            ),
        },
        history=(
            HistoryEntry(
                address="terminal-bench/smoke",
                run_id="run_00",
                run_name="smoke-0000",
                spec_digest="sha256:" + "0" * 64,
                status="stopped",
                submitted_at=T0,
                ended_at=T0 + timedelta(minutes=1),
                reason="replaced",
                requested_by="e" * 40,
            ),
            HistoryEntry(
                address="old/name",
                run_id=None,
                run_name=None,
                spec_digest="sha256:" + "9" * 64,
                status=None,
                reason="forgotten",
            ),
        ),
    )


# --------------------------------------------------------------------------- golden bytes


def test_full_state_matches_golden_file_byte_for_byte() -> None:
    expected = (GOLDEN / "lockfile_full.toml").read_bytes()
    assert serialize(full_state()).encode("utf-8") == expected


def test_empty_state_matches_golden_file() -> None:
    state = LockState(lineage=LINEAGE, platform="local", workspace="demo")
    assert serialize(state).encode() == (GOLDEN / "lockfile_empty.toml").read_bytes()


def test_golden_file_parses_back_to_the_same_state() -> None:
    text = (GOLDEN / "lockfile_full.toml").read_text()
    assert parse(text, NAME) == full_state()
    assert serialize(parse(text, NAME)) == text


def test_output_is_valid_toml_for_tomlkit_and_tomllib_alike() -> None:
    text = serialize(full_state())
    assert tomlkit.parse(text).unwrap() == tomllib.loads(text)


def test_addresses_sorted_and_fields_in_model_order() -> None:
    text = serialize(full_state())
    headers = [
        line
        for line in text.splitlines()
        if line.startswith("[runs.")
        and line.count(".") == 1
        or line in ('[runs."terminal-bench/smoke"]', '[runs."hle/parity"]')
    ]
    assert headers == ["[runs.gdpval]", '[runs."hle/parity"]', '[runs."terminal-bench/smoke"]']
    smoke = text.split('[runs."terminal-bench/smoke"]\n', 1)[1].split("\n\n", 1)[0]
    keys = [line.split(" = ")[0] for line in smoke.splitlines()]
    assert keys == [
        "spec_digest",
        "run_id",
        "run_name",
        "status",
        "observed_at",
        "submitted_at",
        "requested_by",
        "applied_at_commit",
        "benchmark_id",
        "task_count",
        "attempts",
        "platform_url",
    ]
    assert text.endswith("\n") and not text.endswith("\n\n") and "\r" not in text


def test_insertion_order_never_changes_the_bytes() -> None:
    state = full_state()
    reversed_runs = dict(reversed(list(state.runs.items())))
    spec_reversed = dict(reversed(list(SPEC.items())))
    smoke = state.runs["terminal-bench/smoke"].model_copy(update={"spec": spec_reversed})
    other = state.model_copy(update={"runs": {**reversed_runs, "terminal-bench/smoke": smoke}})
    assert serialize(other) == serialize(state)


def test_datetimes_are_utc_seconds_whatever_the_input_zone() -> None:
    plus_two = timezone(timedelta(hours=2))
    run = RecordedRun(
        address="a",
        spec_digest="d",
        observed_at=datetime(2026, 3, 1, 14, 30, 45, 999_999, tzinfo=plus_two),
        submitted_at=datetime(2026, 3, 1, 12, 30, 45),
    )  # naive: taken as UTC
    text = serialize(put_run(new_state("local", "w"), run))
    assert "observed_at = 2026-03-01T12:30:45Z\n" in text
    assert "submitted_at = 2026-03-01T12:30:45Z\n" in text
    assert parse(text, NAME).runs["a"].observed_at == T0


# --------------------------------------------------------------------------- secrets


def test_secret_values_are_never_written() -> None:
    secret_spec = {
        **SPEC,
        "secrets": {"required": ["DATASET_TOKEN"], "provided": {"DATASET_TOKEN": "hunter2-value"}},
    }
    state = full_state()
    smoke = state.runs["terminal-bench/smoke"].model_copy(update={"spec": secret_spec})
    intent = Intent(
        op="submit",
        started_at=T0,
        body_digest="x",
        spec={"secrets": {"provided": {"A": "hunter2-value"}}},
    )
    pending = state.runs["hle/parity"].model_copy(update={"intent": intent})
    state = state.model_copy(
        update={"runs": {**state.runs, "terminal-bench/smoke": smoke, "hle/parity": pending}}
    )
    text = serialize(state)
    assert "hunter2" not in text and "provided" not in text
    # Stripping only the values: the required names stay.
    assert parse(text, NAME).runs["terminal-bench/smoke"].spec["secrets"] == {
        "required": ["DATASET_TOKEN"]
    }
    parsed = parse(text, NAME).runs["hle/parity"].intent
    assert parsed is not None and "secrets" not in parsed.spec


def test_write_returns_the_sanitized_state(tmp_path: Path) -> None:
    run = RecordedRun(
        address="a",
        spec_digest="d",
        spec={"secrets": {"required": ["S"], "provided": {"S": "v@lue"}}},
    )
    written = write_lockfile(tmp_path / NAME, put_run(new_state("local", "w"), run))
    assert written.runs["a"].spec == {"secrets": {"required": ["S"]}}
    assert b"v@lue" not in (tmp_path / NAME).read_bytes()


# --------------------------------------------------------------------------- round trips

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_scalar = st.one_of(
    st.booleans(), st.integers(-(2**63), 2**63 - 1), _text, st.floats(allow_nan=False)
)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    spec=st.dictionaries(_text, _json, max_size=5),
    # Addresses are relative paths (issue 23: the reader refuses anything else).
    address=_text.filter(lambda a: relative_path_problem(a) is None),
    run_id=st.none() | _text,
    task_count=st.none() | st.integers(0, 10**6),
)
def test_serialize_parse_round_trip_is_byte_identical(spec, address, run_id, task_count) -> None:
    run = RecordedRun(
        address=address,
        spec_digest="sha256:x",
        spec=spec,
        run_id=run_id,
        task_count=task_count,
        observed_at=T0,
    )
    state = put_run(new_state("local", "ws"), run)
    text = serialize(state)
    parsed = parse(text, NAME)
    assert serialize(parsed) == text
    assert parsed.runs[address].spec == spec
    assert parsed.runs[address].run_id == run_id


def test_rewriting_an_unchanged_lockfile_keeps_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / NAME
    write_lockfile(path, full_state())
    before = path.read_bytes()
    state = read_lockfile(path, platform="https://platform.osmosis.ai", workspace="acme")
    assert serialize(state).encode() == before
    # A write bumps the serial and nothing else.
    write_lockfile(path, state.model_copy(update={"serial": state.serial - 1}))
    assert path.read_bytes() == before


# --------------------------------------------------------------------------- reading


def test_missing_lockfile_is_a_fresh_empty_state(tmp_path: Path) -> None:
    state = read_lockfile(tmp_path / NAME, platform="local", workspace="demo")
    assert state.runs == {} and state.history == () and state.serial == 0
    assert (state.platform, state.workspace) == ("local", "demo")
    assert state.lineage != new_state("local", "demo").lineage  # a fresh uuid every time


def write_text(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def read_error(path: Path, platform: str = "local", workspace: str = "demo") -> StateError:
    with pytest.raises(StateError) as info:
        read_lockfile(path, platform=platform, workspace=workspace, display_path=NAME)
    return info.value


HEADER = f'version = 1\nlineage = "{LINEAGE}"\nserial = 3\nplatform = "local"\nworkspace = "demo"\n'
RESTORE = (
    "restore the last good version from git (`git checkout HEAD -- state/osmosis.lock`),"
    " then run `osmosis-apply --refresh-only`"
)


def test_corrupt_toml_says_where(tmp_path: Path) -> None:
    error = read_error(write_text(tmp_path, HEADER + '\n[runs.a]\nspec_digest = "unterminated\n'))
    assert error.message == "state/osmosis.lock:8:28: not valid TOML: Illegal character '\\n'"
    assert error.hint == "the lockfile is corrupt; " + RESTORE


def test_truncated_lockfile_is_an_error_not_an_empty_state(tmp_path: Path) -> None:
    text = serialize(full_state()).replace("https://platform.osmosis.ai", "local", 1)
    text = text.replace('workspace = "acme"', 'workspace = "demo"')
    error = read_error(write_text(tmp_path, text[: len(text) // 2 - 7]))
    assert error.message.startswith("state/osmosis.lock:")
    assert "not valid TOML" in error.message


def test_merge_conflict_names_the_lines_and_the_fix(tmp_path: Path) -> None:
    conflicted = HEADER.replace(
        "serial = 3\n", ("<<<<<<< HEAD\nserial = 3\n=======\nserial = 4\n>>>>>>> feature\n")
    ) + (
        '\n[runs.a]\n<<<<<<< HEAD\nrun_id = "r1"\n||||||| base\n=======\nrun_id = "r2"\n'
        ">>>>>>> feature\n"
    )
    error = read_error(write_text(tmp_path, conflicted))
    assert error.message == (
        "state/osmosis.lock has unresolved git merge conflicts at lines 3-7 and 12-17"
    )
    assert error.hint == (
        "lockfiles cannot be merged by hand: take one side with "
        "`git checkout --theirs state/osmosis.lock` (or `--ours`), then run "
        "`osmosis-apply --refresh-only` to re-observe the Platform and record the result"
    )


def test_single_conflict_region(tmp_path: Path) -> None:
    error = read_error(write_text(tmp_path, HEADER + "<<<<<<< ours\n=======\n>>>>>>> theirs\n"))
    assert error.message == "state/osmosis.lock has unresolved git merge conflicts at lines 6-8"


def test_foreign_platform_is_refused(tmp_path: Path) -> None:
    path = write_text(tmp_path, HEADER)
    error = read_error(path, platform="https://platform.osmosis.ai")
    assert error.message == (
        "state/osmosis.lock records runs of platform 'local' (this run uses "
        "'https://platform.osmosis.ai'); state from another platform must never drive stops"
    )
    assert error.hint == (
        "pass --platform local to use this state, or point --state at the lockfile for the "
        "current platform and workspace"
    )


def test_foreign_workspace_is_refused(tmp_path: Path) -> None:
    error = read_error(write_text(tmp_path, HEADER), workspace="other-team")
    assert error.message == (
        "state/osmosis.lock records runs of workspace 'demo' (this run uses 'other-team'); "
        "state from another platform must never drive stops"
    )
    assert (error.hint or "").startswith("pass --workspace demo to use this state")


def test_same_platform_with_trailing_slash_is_accepted(tmp_path: Path) -> None:
    path = write_text(tmp_path, HEADER.replace('"local"', '"https://p.example.com/"'))
    state = read_lockfile(path, platform="https://p.example.com", workspace="demo")
    assert state.serial == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            HEADER.replace("version = 1", "version = 7"),
            "state/osmosis.lock:1: version: lockfile format 7 was written by a newer "
            "osmosis-reconciler (this one reads format 3)",
        ),
        (
            HEADER.replace("version = 1", 'version = "1"'),
            "state/osmosis.lock:1: version: must be a positive integer (found '1')",
        ),
        (
            HEADER.replace(f'lineage = "{LINEAGE}"\n', ""),
            "state/osmosis.lock: lineage: missing required key",
        ),
        (
            HEADER.replace("serial = 3", "serial = -1"),
            "state/osmosis.lock:3: serial: must be a non-negative integer (found -1)",
        ),
        (HEADER + "colour = 1\n", "state/osmosis.lock:6: colour: unknown key"),
        (
            HEADER + '\n[runs.a]\nspec_digest = "d"\ntask_count = "twelve"\n',
            "state/osmosis.lock:9: runs.a.task_count: should be an integer (found 'twelve')",
        ),
        (
            HEADER + '\n[runs."tb/smoke"]\nrun_id = "r"\n',
            'state/osmosis.lock:7: runs."tb/smoke".spec_digest: missing required key',
        ),
        (
            HEADER + '\n[runs.a]\nspec_digest = "d"\nstatuss = "finished"\n',
            "state/osmosis.lock:9: runs.a.statuss: unknown key",
        ),
        (
            HEADER + '\n[runs.a]\nspec_digest = "d"\nobserved_at = "yesterday"\n',
            "state/osmosis.lock:9: runs.a.observed_at: should be a date-time (found 'yesterday')",
        ),
        (
            HEADER + '\n[runs.a]\nspec_digest = "d"\n\n[runs.a.downloads]\ntypes = "summary"\n'
            'files = 1\nbytes = 2\ndirectory = "x"\n',
            "state/osmosis.lock:11: runs.a.downloads.types: should be an array (found 'summary')",
        ),
        (
            HEADER + '\n[runs.a]\nspec_digest = "d"\n\n[runs.a.intent]\nop = "submit"\n'
            'body_digest = "x"\n',
            "state/osmosis.lock:10: runs.a.intent.started_at: missing required key",
        ),
        (HEADER + "runs = 3\n", "state/osmosis.lock:6: runs: must be a table of addresses"),
        (
            HEADER + '\n[[history]]\naddress = "a"\nspec_digest = "d"\nreason = "replaced"\n'
            '\n[[history]]\naddress = "b"\nspec_digest = "d"\nreason = "whim"\n',
            "state/osmosis.lock:15: history[1].reason: unknown reason 'whim' (expected one of "
            "forgotten, lost, moved, replaced, rerun, retried, smoke, stopped)",
        ),
        (
            HEADER + '\n[[history]]\naddress = "a"\nreason = "replaced"\n',
            "state/osmosis.lock:7: history[0].spec_digest: missing required key",
        ),
    ],
    ids=[
        "newer-version",
        "version-type",
        "no-lineage",
        "negative-serial",
        "unknown-top",
        "wrong-type",
        "missing-digest",
        "unknown-run-key",
        "bad-datetime",
        "types-not-list",
        "intent-missing",
        "runs-not-table",
        "history-reason",
        "history-missing",
    ],
)
def test_hand_edited_shape_errors_name_the_key_path(
    tmp_path: Path, text: str, message: str
) -> None:
    error = read_error(write_text(tmp_path, text))
    assert error.message == message


def test_newer_version_hint_says_upgrade(tmp_path: Path) -> None:
    error = read_error(write_text(tmp_path, HEADER.replace("version = 1", "version = 4")))
    assert "lockfile format 4 was written by a newer osmosis-reconciler" in error.message
    assert error.hint == (
        "upgrade osmosis-reconciler (`pip install -U osmosis-reconciler`) and run again"
    )


def test_non_utf8_says_where(tmp_path: Path) -> None:
    error = read_error(write_text(tmp_path, HEADER.encode() + b'\n[runs.a]\nrun_name = "\xff"\n'))
    assert error.message == ("state/osmosis.lock:8:13: not UTF-8 (byte 0xff at offset 132)")
    assert error.hint == "the lockfile is corrupt; " + RESTORE


def test_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = write_text(tmp_path, HEADER)
    with open(path, "r+b") as handle:  # sparse: no need to really write 64 MiB
        handle.truncate(MAX_LOCKFILE_BYTES + 1)
    error = read_error(path)
    assert error.message == (
        "state/osmosis.lock: the lockfile is 67,108,865 bytes, over the 67,108,864-byte limit"
    )


def test_deeply_nested_toml_is_a_clear_error(tmp_path: Path) -> None:
    error = read_error(write_text(tmp_path, HEADER + "x = " + "[" * 100_000 + "\n"))
    assert error.message.startswith("state/osmosis.lock")
    assert "not valid TOML" in error.message


def test_directory_at_the_lockfile_path(tmp_path: Path) -> None:
    (tmp_path / NAME).mkdir(parents=True)
    assert read_error(tmp_path / NAME).message == (
        "state/osmosis.lock: the lockfile path is not a regular file"
    )


def test_bom_and_crlf_from_an_editor_are_tolerated(tmp_path: Path) -> None:
    path = write_text(tmp_path, "\ufeff" + HEADER.replace("\n", "\r\n"))
    assert read_lockfile(path, platform="local", workspace="demo").serial == 3


# --------------------------------------------------------------------------- writing


def test_write_creates_state_dir_and_bumps_serial(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "state" / "osmosis.lock"
    state = new_state("local", "demo")
    written = write_lockfile(path, state)
    assert written.serial == 1
    assert read_lockfile(path, platform="local", workspace="demo") == written
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in path.parent.iterdir()] == ["osmosis.lock"]  # no temp file left


def test_failed_rename_leaves_no_temp_file_and_raises_state_error(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.mkdir(parents=True)  # os.replace onto a non-empty directory fails after the write
    (path / "keep").write_text("x")
    with pytest.raises(StateError) as info:
        write_lockfile(path, full_state())
    assert info.value.message.startswith(f"{path}: cannot write the lockfile")
    assert sorted(p.name for p in path.parent.iterdir()) == ["osmosis.lock"]
    assert (path / "keep").read_text() == "x"


def test_nested_tables_cannot_break_the_file(tmp_path: Path) -> None:
    """Keys that look like TOML syntax stay keys."""
    spec = {"a.b": {"[c]": {"d = 1": "x"}}, "": [{"": ""}], "#": "\\x00\x7f"}
    run = RecordedRun(address='we"ird]/addr.x', spec_digest="d", spec=spec)
    path = tmp_path / NAME
    written = write_lockfile(path, put_run(new_state("local", "demo"), run))
    assert read_lockfile(path, platform="local", workspace="demo") == written


def test_state_store_loses_no_update_under_threads(tmp_path: Path) -> None:
    path = tmp_path / NAME
    store = StateStore(path, write_lockfile(path, new_state("local", "demo")))

    def worker(n: int) -> None:
        for i in range(50):

            def add(state: LockState, n=n, i=i) -> LockState:
                address = f"t{n}/r{i:02d}"
                return put_run(
                    state, RecordedRun(address=address, spec_digest="d", run_id=f"{n}-{i}")
                )

            store.update(add)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    on_disk = read_lockfile(path, platform="local", workspace="demo")
    assert len(on_disk.runs) == 400
    assert on_disk.serial == 401
    assert on_disk == store.state


def test_state_store_update_always_persists(tmp_path: Path) -> None:
    path = tmp_path / NAME
    unsaved = put_run(new_state("local", "demo"), RecordedRun(address="a", spec_digest="d"))
    store = StateStore(path, unsaved)
    assert not path.exists()  # constructing a store writes nothing
    assert store.update(lambda s: s).serial == 1
    assert read_lockfile(path, platform="local", workspace="demo") == store.state
    assert store.state.runs == unsaved.runs


def _add(address: str):
    def fn(state: LockState) -> LockState:
        return put_run(state, RecordedRun(address=address, spec_digest="d", run_id=address))

    return fn


def test_state_store_defers_non_durable_updates_until_flush(tmp_path: Path) -> None:
    path = tmp_path / NAME
    store = StateStore(path, write_lockfile(path, new_state("local", "demo")), lazy_interval=60)
    store.update(_add("a"), durable=False)
    store.update(_add("b"), durable=False)
    assert store.pending == 2
    on_disk = read_lockfile(path, platform="local", workspace="demo")
    assert on_disk.runs == {} and on_disk.serial == 1
    flushed = store.flush()
    assert sorted(flushed.runs) == ["a", "b"] and flushed.serial == 3
    assert read_lockfile(path, platform="local", workspace="demo") == flushed == store.state
    assert store.pending == 0
    assert store.flush() == flushed  # nothing pending: no write, same serial


def test_a_durable_update_carries_the_deferred_ones(tmp_path: Path) -> None:
    path = tmp_path / NAME
    store = StateStore(path, write_lockfile(path, new_state("local", "demo")), lazy_interval=60)
    store.update(_add("download"), durable=False)
    store.update(_add("intent"))
    on_disk = read_lockfile(path, platform="local", workspace="demo")
    assert sorted(on_disk.runs) == ["download", "intent"] and store.pending == 0


def test_a_deferred_update_is_written_once_the_interval_has_passed(tmp_path: Path) -> None:
    path = tmp_path / NAME
    store = StateStore(path, write_lockfile(path, new_state("local", "demo")), lazy_interval=0)
    store.update(_add("a"), durable=False)
    assert sorted(read_lockfile(path, platform="local", workspace="demo").runs) == ["a"]
    assert store.pending == 0


# --------------------------------------------------------------------------- history


def entry(address: str, run_id: str, reason: HistoryReason = "replaced") -> HistoryEntry:
    return HistoryEntry(
        address=address,
        run_id=run_id,
        run_name=None,
        spec_digest="d",
        status="finished",
        reason=reason,
    )


def test_retire_run_moves_it_to_history_newest_first() -> None:
    state = full_state()
    fresh = RecordedRun(address="terminal-bench/smoke", spec_digest="sha256:new")
    new = retire_run(state, "terminal-bench/smoke", "rerun", ended_at=T0, replacement=fresh)
    assert new.runs["terminal-bench/smoke"] == fresh
    top = new.history[0]
    assert (top.address, top.run_id, top.reason, top.ended_at, top.requested_by) == (
        "terminal-bench/smoke",
        "run_01",
        "rerun",
        T0,
        "a" * 40,
    )
    assert new.history[1:] == state.history


def test_forget_drops_the_address() -> None:
    new = retire_run(full_state(), "gdpval", "forgotten")
    assert "gdpval" not in new.runs
    assert new.history[0].run_id == "run_03" and new.history[0].reason == "forgotten"


def test_retire_without_a_run_id_leaves_no_history() -> None:
    new = retire_run(full_state(), "hle/parity", "forgotten")
    assert "hle/parity" not in new.runs
    assert new.history == full_state().history


def test_rekey_run_keeps_the_run_and_records_the_move() -> None:
    new = rekey_run(full_state(), "gdpval", "gdpval/full")
    assert "gdpval" not in new.runs
    assert new.runs["gdpval/full"].run_id == "run_03"
    assert new.runs["gdpval/full"].address == "gdpval/full"
    assert (new.history[0].address, new.history[0].reason) == ("gdpval", "moved")
    with pytest.raises(ValueError):
        rekey_run(new, "terminal-bench/smoke", "gdpval/full")


def test_history_is_capped_per_address() -> None:
    state = new_state("local", "demo")
    for i in range(HISTORY_LIMIT_PER_ADDRESS + 5):
        state = add_history(state, entry("a", f"a{i}"))
    state = add_history(state, entry("b", "b0"))
    a_entries = [h.run_id for h in state.history if h.address == "a"]
    assert len(a_entries) == HISTORY_LIMIT_PER_ADDRESS
    assert a_entries[0] == f"a{HISTORY_LIMIT_PER_ADDRESS + 4}"  # newest kept
    assert state.history[0].run_id == "b0"
    assert cap_history(state.history, limit=1) == (state.history[0], state.history[1])
    with pytest.raises(ValueError):
        add_history(state, entry("a", "x", reason="whim"))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the fast reader
# ``parse`` reads the subset of TOML that ``serialize`` writes with a fast reader and falls
# back to tomllib for anything else. These differential tests hold the fast reader to
# tomllib: whenever it accepts a text, tomllib must accept it and agree exactly.

from reconciler.state.lockfile import fast_load  # noqa: E402


def _same(a: object, b: object) -> bool:
    return repr(a) == repr(b)  # repr keeps NaN comparable and types visible (1 vs 1.0)


@settings(max_examples=150, deadline=None)
@given(spec=st.dictionaries(_text, _json, max_size=5), address=_text.filter(bool))
def test_fast_reader_reads_everything_serialize_writes(spec, address) -> None:
    run = RecordedRun(
        address=address,
        spec_digest="sha256:x",
        spec=spec,
        observed_at=T0,
        downloads=Downloads(
            types=("summary",), files=1, bytes=1, sha256={address: "ab"}, directory=address
        ),
    )
    text = serialize(add_history(put_run(full_state(), run), entry(address, "r")))
    fast = fast_load(text)
    assert fast is not None
    assert _same(fast, tomllib.loads(text))


_MUTATIONS = st.sampled_from(["delete", "insert", "duplicate-line", "swap-lines"])
_INSERTS = st.sampled_from(list('[]{}=,."#\\\n\r\t 0-e:Tx') + ["[[", "]]", "\\u", "nan", "'"])


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_fast_reader_never_disagrees_with_tomllib_on_mutated_files(data) -> None:
    text = (GOLDEN / "lockfile_full.toml").read_text()
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(_MUTATIONS)
        lines = text.split("\n")
        if kind == "delete" and text:
            at = data.draw(st.integers(0, len(text) - 1))
            text = text[:at] + text[at + 1 :]
        elif kind == "insert":
            at = data.draw(st.integers(0, len(text)))
            text = text[:at] + data.draw(_INSERTS) + text[at:]
        elif kind == "duplicate-line":
            at = data.draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[: at + 1] + [lines[at]] + lines[at + 1 :])
        else:
            a = data.draw(st.integers(0, len(lines) - 1))
            b = data.draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    _agrees_with_tomllib(text, fast_load(text))


def _agrees_with_tomllib(text: str, fast: Any, expect: Callable[[Any], Any] = lambda d: d) -> None:
    """Whatever the fast reader accepts is valid TOML that tomllib reads the same."""
    if fast is None:
        return
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        pytest.fail(f"fast reader accepted invalid TOML ({exc}):\n{text}")
    assert _same(fast, expect(expected))


@pytest.mark.parametrize(
    "text",
    [
        "a = 1\na = 2\n",  # duplicate key
        "[t]\nx = 1\n[t]\ny = 2\n",  # table defined twice
        "a = { b = 1 }\n[a.c]\n",  # extending an inline table
        "a = [1]\n[[a]]\n",  # appending to a static array
        'a = "tab\there"\n',  # raw tab: valid TOML, but not JSON
        'a = "\\u00e9"\n',  # escape: decoded identically either way
        "a = 'literal'\n",  # literal string
        "a = 1 # comment\n",  # trailing comment
        "a = 2026-02-30T00:00:00Z\n",  # impossible date
        "a.b = 1\n",  # dotted key
        "a = [\n  1, # c\n]\n",  # comment inside an array
        "a = 1_000\n",
        "a = 0x1f\n",
        "a = +1\n",
        "[ a ]\nb = 1\n",
        'a = "\\ud800"\n',  # surrogate escape: invalid TOML
        'a = { b = "x", b = "y" }\n',  # duplicate key in a flat inline table
        'a = { b = "x", c = true }\n',
        'a = { b = "x",c = true }\n',
        "a = { b = trueish }\n",
    ],
)
def test_fast_reader_defers_or_agrees_on_tricky_toml(text: str) -> None:
    fast = fast_load(text)
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        assert fast is None
        return
    assert fast is None or _same(fast, expected)


def _tagged(kind: str, key: object, table: dict) -> tuple:
    return ("built", kind, key, repr(table))


def _tag_entries(doc: dict) -> dict:
    """tomllib's document with each run and history table as ``_tagged`` gives it."""
    doc = dict(doc)
    if isinstance(doc.get("runs"), dict):
        doc["runs"] = {
            a: _tagged("runs", a, t) if isinstance(t, dict) else t for a, t in doc["runs"].items()
        }
    if isinstance(doc.get("history"), list):
        doc["history"] = [
            _tagged("history", i, t) if isinstance(t, dict) else t
            for i, t in enumerate(doc["history"])
        ]
    return doc


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_fast_reader_building_entries_never_disagrees_with_tomllib(data) -> None:
    """With ``finish`` (entries built as their tables end), whatever the reader accepts is
    tomllib's document with each entry's table passed to ``finish``."""
    text = (GOLDEN / "lockfile_full.toml").read_text()
    for _ in range(data.draw(st.integers(0, 3))):
        lines = text.split("\n")
        if data.draw(st.booleans()):
            a = data.draw(st.integers(0, len(lines) - 1))
            b = data.draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
        else:
            at = data.draw(st.integers(0, len(lines) - 1))
            lines.insert(
                at, data.draw(st.sampled_from(lines + ["[runs]", "[history]", "[[history]]"]))
            )
        text = "\n".join(lines)
    _agrees_with_tomllib(text, fast_load(text, _tagged), _tag_entries)


def test_an_entry_whose_tables_are_apart_is_read_by_tomllib() -> None:
    text = '[runs."a"]\nspec_digest = "x"\n[runs."b"]\nspec_digest = "y"\n[runs."a".spec]\nk = 1\n'
    assert fast_load(text, _tagged) is None
    assert fast_load(text) == tomllib.loads(text)


def test_entries_built_while_reading_parse_to_the_same_state() -> None:
    text = serialize(full_state())
    assert fast_load(text, _tagged) is not None
    assert serialize(parse(text, "osmosis.lock")) == text


def test_a_recorded_body_equal_to_the_configs_is_shared_type_for_type() -> None:
    state = full_state()
    address, run = next((a, r) for a, r in state.runs.items() if r.spec)
    text = serialize(state)
    same = tomllib.loads(text)["runs"][address]["spec"]
    shared = parse(text, "osmosis.lock", specs={address: same}).runs[address]
    assert shared.spec == run.spec
    assert all(shared.spec[k] is same[k] for k in same)  # nested values: the config's objects
    assert serialize(parse(text, "osmosis.lock", specs={address: same})) == text
    # 1 == 1.0 == True in Python, but they are written and digested differently.
    numbers = {**same, "n": 1}
    other = {**same, "n": 1.0}
    state2 = put_run(state, run.model_copy(update={"spec": numbers}))
    text2 = serialize(state2)
    kept = parse(text2, "osmosis.lock", specs={address: other}).runs[address]
    assert type(kept.spec["n"]) is int
    assert serialize(parse(text2, "osmosis.lock", specs={address: other})) == text2


def test_a_bad_entry_is_reported_as_without_building_while_reading() -> None:
    text = serialize(full_state())
    address = next(iter(full_state().runs))
    bad = text.replace(
        f"[runs.{toml_key(address)}]\n", f"[runs.{toml_key(address)}]\nbogus = 1\n", 1
    )
    bad = bad.replace("version = 3", "version = 9", 1)
    with pytest.raises(StateError, match="newer osmosis-reconciler"):
        parse(bad, "osmosis.lock")  # the version, checked first, is what is reported


# --------------------------------------------------------------------------- performance


def big_state(entries: int = 5000) -> LockState:
    runs = {}
    for i in range(entries):
        address = f"suite-{i % 50}/config-{i:05d}"
        runs[address] = (
            full_state()
            .runs["terminal-bench/smoke"]
            .model_copy(
                update={"address": address, "run_id": f"run_{i:05d}", "run_name": f"name-{i}"}
            )
        )
    history = tuple(entry(f"suite-0/config-{i:05d}", f"old_{i}") for i in range(1000))
    return full_state().model_copy(update={"runs": runs, "history": history})


@pytest.mark.perf
def test_perf_read_write_5000_entries(tmp_path: Path) -> None:
    """`pytest -m perf tests/unit/test_lockfile.py -s`: prints median timings, asserts only
    correctness (no timed assertion)."""
    import statistics
    import time

    path = tmp_path / NAME
    state = big_state()
    writes, reads = [], []
    for _ in range(5):
        start = time.perf_counter()
        written = write_lockfile(path, state)
        writes.append(time.perf_counter() - start)
        start = time.perf_counter()
        read = read_lockfile(path, platform="https://platform.osmosis.ai", workspace="acme")
        reads.append(time.perf_counter() - start)
        assert read == written
    size = path.stat().st_size
    print(
        f"\nlockfile 5,000 entries + 1,000 history, {size:,} bytes: "
        f"write median {statistics.median(writes):.3f}s, "
        f"read median {statistics.median(reads):.3f}s"
    )


def test_format_1_is_read_and_written_back_as_format_3(tmp_path: Path) -> None:
    # A format-1 lockfile (no baselines, history without benchmark/selection) reads as it is;
    # the next write migrates it (``migrate_v1``) and it reads back the same but for the
    # version.
    old = (
        HEADER
        + '\n[[history]]\naddress = "a"\nrun_id = "r1"\nrun_name = "n1"\n'
        + ('spec_digest = "sha256:' + "0" * 64 + '"\nstatus = "finished"\nreason = "replaced"\n')
    )
    path = write_text(tmp_path, old)
    state = read_lockfile(path, platform="local", workspace="demo")
    assert state.version == 1 and state.baselines == {}
    assert state.history[0].selection is None
    written = write_lockfile(path, state)
    text = path.read_text(encoding="utf-8")
    assert written.version == 3 and "\nversion = 3\n" in text
    again = read_lockfile(path, platform="local", workspace="demo")
    assert again.history == state.history and again.serial == state.serial + 1


def test_baselines_round_trip_through_both_readers() -> None:
    from reconciler.model import Baseline

    state = LockState(
        lineage=LINEAGE,
        platform="local",
        workspace="demo",
        baselines={
            "tb/smoke": Baseline(
                run_id="r1",
                run_name="calm-otter",
                accepted_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
                accepted_at_commit="a" * 40,
            )
        },
    )
    text = serialize(state)
    assert '[baselines."tb/smoke"]\nrun_id = "r1"\nrun_name = "calm-otter"\n' in text
    assert parse(text, NAME) == state
    assert tomllib.loads(text)["baselines"]["tb/smoke"]["run_id"] == "r1"


def test_format_1_is_read_and_migrated_to_format_3_on_write(tmp_path: Path) -> None:
    """Issue 22: format 1 knew the root commit only as ``repository = "root:SHA"``; it is
    read, and written back as today's format with ``root_commit`` recorded."""
    root = "a" * 40
    path = write_text(tmp_path, HEADER + f'repository = "root:{root}"\n')
    state = read_lockfile(path, platform="local", workspace="demo")
    assert state.version == 1 and state.root_commit == root
    written = write_lockfile(path, state)
    text = path.read_text()
    assert written.version == 3
    assert "\nversion = 3\n" in text and f'\nroot_commit = "{root}"\n' in text
    again = read_lockfile(path, platform="local", workspace="demo")
    assert again.root_commit == root and again.repository == f"root:{root}"


def test_a_root_commit_that_is_not_a_sha_names_the_key(tmp_path: Path) -> None:
    text = HEADER.replace("version = 1", "version = 2") + 'root_commit = "nope"\n'
    error = read_error(write_text(tmp_path, text))
    assert error.message == "state/osmosis.lock:6: root_commit: must be a commit sha (found 'nope')"


def test_entries_read_from_one_lockfile_share_repeated_values() -> None:
    """A big lockfile's entries share one object per repeated timestamp; a copy of one
    entry with a change never changes another."""
    history = tuple(
        HistoryEntry(
            address=f"a/{i % 3}",
            run_id=f"r{i}",
            run_name=None,
            spec_digest="sha256:x",
            status="finished",
            ended_at=T0,
            reason="replaced",
        )  # fmt: skip
        for i in range(6)
    )
    state = new_state("local", "demo").model_copy(update={"history": history})
    parsed = parse(serialize(state), NAME)
    first, second = parsed.history[0], parsed.history[1]
    assert first.ended_at is second.ended_at  # one object per repeated timestamp
    changed = first.model_copy(update={"outputs_pending": True})
    assert changed.outputs_pending is True
    assert first.outputs_pending is None and second.outputs_pending is None
    assert serialize(parsed) == serialize(state)


def test_retry_provenance_round_trips_through_both_readers() -> None:
    """A retry run (``--retry-errored``) and the run it retried: the provenance is plain
    keys of the entry, the intent and the history, so lockfiles without them still load."""
    spec = {"tasks_config": {"task_names": ["t1"]}, "execution_config": {"attempts_per_task": 2}}
    intent = Intent(
        op="submit",
        started_at=T0,
        body_digest="sha256:" + "c" * 64,
        spec=spec,
        retry_of="r1",
        retry_agents=(0, 2),
    )
    run = RecordedRun(
        address="tb/full",
        spec_digest="sha256:" + "c" * 64,
        spec=spec,
        run_id="r2",
        observed_at=T0,
        retry_of="r1",
        retry_agents=(0, 2),
        intent=intent,
    )
    retried = HistoryEntry(
        address="tb/full",
        run_id="r1",
        run_name="calm-otter",
        spec_digest="sha256:" + "c" * 64,
        status="finished",
        reason="retried",
    )
    state = LockState(
        lineage=LINEAGE,
        platform="local",
        workspace="demo",
        runs={"tb/full": run},
        history=(retried,),
    )
    text = serialize(state)
    assert '\nretry_of = "r1"\nretry_agents = [0, 2]\n' in text
    assert parse(text, NAME) == state
    loaded = tomllib.loads(text)
    assert loaded["runs"]["tb/full"]["retry_agents"] == [0, 2]
    assert loaded["history"][0]["reason"] == "retried"
    assert serialize(parse(text, NAME)) == text
