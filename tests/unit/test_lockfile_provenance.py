"""Import provenance in the lockfile (``imported_at``, ``imported_with``): golden bytes,
round trip through both readers, field order."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path

from reconciler.model import LockState, RecordedRun
from reconciler.state.lockfile import fast_load, parse, serialize, write_lockfile
from tests.support.bodies import hle_body

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
NAME = "state/osmosis.lock"


def imported_state() -> LockState:
    return LockState(
        lineage="0b7a3c1e-2f4d-4a6b-8c9d-1e2f3a4b5c6d",
        serial=3,
        platform="https://platform.osmosis.ai",
        workspace="acme",
        runs={
            "hle/calm-yak": RecordedRun(
                address="hle/calm-yak",
                spec_digest="sha256:" + "4" * 64,
                spec=hle_body("openai/gpt-5.2"),
                run_id="bmr_01",
                run_name="calm-yak",
                status="finished",
                observed_at=T0,
                submitted_at=datetime(2026, 4, 30, 18, 5, 0, tzinfo=UTC),
                applied_at_commit="c" * 40,
                benchmark_id="bm_hle",
                task_count=249,
                attempts=249,
                platform_url="https://platform.osmosis.ai/acme/benchmarks/bmr_01",
                imported_at=T0,
                imported_with='osmosis-import calm-yak --model-type provider --header X-A="b c"',
            ),
            "terminal-bench/smoke": RecordedRun(
                address="terminal-bench/smoke",
                spec_digest="sha256:" + "5" * 64,
                run_id="bmr_02",
                status="running",
            ),
        },
    )


def test_imported_entry_matches_golden_file_byte_for_byte() -> None:
    expected = (GOLDEN / "lockfile_imported.toml").read_bytes()
    assert serialize(imported_state()).encode("utf-8") == expected


def test_provenance_parses_back_through_both_readers() -> None:
    text = (GOLDEN / "lockfile_imported.toml").read_text()
    assert parse(text, NAME) == imported_state()
    fast = fast_load(text)
    assert fast is not None, "the fast reader must read what serialize writes"
    assert fast == tomllib.loads(text)


def test_provenance_comes_after_platform_url_and_only_when_imported() -> None:
    text = serialize(imported_state())
    table = text.split('[runs."hle/calm-yak"]\n', 1)[1].split("\n\n", 1)[0]
    keys = [line.split(" = ")[0] for line in table.splitlines()]
    assert keys[-3:] == ["platform_url", "imported_at", "imported_with"]
    other = text.split('[runs."terminal-bench/smoke"]\n', 1)[1]
    assert "imported" not in other


def test_write_keeps_provenance_and_bumps_serial(tmp_path: Path) -> None:
    path = tmp_path / "state" / "osmosis.lock"
    written = write_lockfile(path, imported_state())
    assert written.serial == 4
    again = parse(path.read_text(), NAME)
    assert again.runs["hle/calm-yak"].imported_at == T0
    assert (
        again.runs["hle/calm-yak"].imported_with
        == imported_state().runs["hle/calm-yak"].imported_with
    )
