"""End-to-end: ``osmosis-state list | show | forget | mv`` on real lockfiles in temp git
repositories (the runs imported from the local Platform over loopback HTTP): text and JSON
output, serial bumps, the apply lock, and no Platform request from any of them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.model import Intent, RecordedRun
from reconciler.state.lockfile import put_run, read_lockfile, write_lockfile
from reconciler.state.locking import hold_lock
from tests.support.clock import FakeClock
from tests.support.git import git
from tests.support.osmosis import Osmosis, Platform, RequestLog, read_lock, start_platform

from .test_cli_import import submit_example


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    server = start_platform(tmp_path / "platform", clock=FakeClock(), access_log=RequestLog())
    yield server
    server.close()


@pytest.fixture
def osm(tmp_path: Path, platform: Platform) -> Osmosis:
    """A repository with two imported runs: ``tb/smoke`` and ``hle/parity``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    osm = Osmosis(repo, platform)
    for address, to in (("terminal-bench/smoke", "tb/smoke"), ("hle/parity", "hle/parity")):
        _, name = submit_example(platform, address)
        result = osm.import_(name, "--model-type", "provider", "--to", f"benchmarks/{to}.toml")
        assert result.code == 0, result
    return osm


def lock_bytes(osm: Osmosis) -> bytes:
    return (osm.repo / "state" / "osmosis.lock").read_bytes()


# --------------------------------------------------------------------------- list, show


def test_list_in_text_and_json(osm: Osmosis) -> None:
    lock = read_lock(osm.repo)
    hle, smoke = lock["runs"]["hle/parity"], lock["runs"]["tb/smoke"]
    result = osm.state("list")
    assert result.code == 0, result
    day = hle["imported_at"].strftime("%Y-%m-%d")
    runs = {a: f"{e['run_name']} ({e['run_id']})" for a, e in (("hle", hle), ("tb", smoke))}
    width = max(len(r) for r in runs.values())
    assert result.out.splitlines() == [
        f"ADDRESS     {'RUN'.ljust(width)}  STATUS   SOURCE",
        f"hle/parity  {runs['hle'].ljust(width)}  pending  imported {day}",
        f"tb/smoke    {runs['tb'].ljust(width)}  pending  imported {day}",
        f"2 addresses recorded in state/osmosis.lock (serial 2, workspace e2e, platform "
        f"{osm.platform.url}); 0 history entries.",
    ]
    assert result.err == ""

    doc = osm.state("list", "tb/*", "--format", "json").json()
    assert doc["format_version"] == "1.0" and doc["type"] == "state_list"
    assert doc["lockfile"] == {
        "path": "state/osmosis.lock",
        "exists": True,
        "lineage": lock["lineage"],
        "serial": 2,
        "platform": osm.platform.url,
        "workspace": "e2e",
    }
    assert [r["address"] for r in doc["runs"]] == ["tb/smoke"]
    assert doc["runs"][0]["run_id"] == smoke["run_id"]
    assert doc["runs"][0]["intent"] is None and doc["history_count"] == 0


def test_show_in_text_and_json_holds_the_whole_entry_and_no_secret_value(osm: Osmosis) -> None:
    lock = read_lock(osm.repo)
    entry = lock["runs"]["tb/smoke"]
    text = osm.state("show", "tb/smoke")
    assert text.code == 0, text
    lines = text.out.splitlines()
    assert lines[0] == "tb/smoke"
    # Key and value, the keys padded to the longest one's width.
    fields = {line.split(maxsplit=1)[0]: line for line in lines[1:] if line.startswith("  ")}
    assert fields["run_id"].split() == ["run_id", entry["run_id"]]
    assert fields["imported_with"].split(maxsplit=1) == ["imported_with", entry["imported_with"]]
    assert '    agents[0].model.api_key_secret = "OPENAI_API_KEY"' in lines
    assert '    experiment_config.benchmark = "terminal-bench-2-1"' in lines

    doc = osm.state("show", "tb/smoke", "--format", "json").json()
    assert doc["type"] == "state_show" and doc["history"] == []
    run = doc["run"]
    assert run["address"] == "tb/smoke"
    assert run["spec"] == entry["spec"]
    assert run["run_id"] == entry["run_id"] and run["spec_digest"] == entry["spec_digest"]
    assert run["imported_at"] == entry["imported_at"].strftime("%Y-%m-%dT%H:%M:%SZ")


def test_list_and_show_read_while_an_apply_holds_the_lock(osm: Osmosis) -> None:
    with hold_lock(osm.repo / "state" / ".osmosis.lock.held", command="osmosis-apply --wait"):
        assert osm.state("list").code == 0
        assert osm.state("show", "hle/parity").code == 0


# --------------------------------------------------------------------------- forget


def test_forget_moves_the_entry_to_history_and_never_calls_the_platform(
    osm: Osmosis, platform: Platform
) -> None:
    entry = read_lock(osm.repo)["runs"]["tb/smoke"]
    assert platform.requests is not None
    platform.requests.reset()
    result = osm.state("forget", "tb/smoke")
    assert result.code == 0, result
    assert platform.requests.count() == 0, platform.requests.lines
    assert platform.statuses()[entry["run_id"]] == "pending", "forget never stops a run"
    assert result.out == (
        f"Forgot tb/smoke (run {entry['run_name']} ({entry['run_id']}), pending): its entry "
        "moved to the history of state/osmosis.lock (serial 2 -> 3).\n"
        "The run itself was not stopped; this repository no longer manages it.\n"
    )
    assert result.err == (
        "warning: benchmarks/tb/smoke.toml still exists: the next osmosis-plan treats it as a "
        "new config and plans a submit; delete or rename it if the run should stay unmanaged\n"
    )
    lock = read_lock(osm.repo)
    assert lock["serial"] == 3 and list(lock["runs"]) == ["hle/parity"]
    (history,) = lock["history"]
    assert (history["address"], history["run_id"], history["reason"]) == (
        "tb/smoke",
        entry["run_id"],
        "forgotten",
    )


ENVELOPE = ("format_version", "type", "command", "diagnostics", "errors", "errored", "exit_code")


def body(doc: dict) -> dict:
    """A document without the envelope every command's document has (reconciler.cli.output),
    after checking it against the published schema."""
    from .test_machine_output import check_schema

    check_schema(doc)
    return {k: v for k, v in doc.items() if k not in ENVELOPE}


def test_forget_in_json(osm: Osmosis, platform: Platform) -> None:
    (osm.repo / "benchmarks" / "hle" / "parity.toml").unlink()
    entry = read_lock(osm.repo)["runs"]["hle/parity"]
    doc = osm.state("forget", "hle/parity", "--format", "json").json()
    assert doc["type"] == "state_forget" and doc["command"] == "osmosis-state"
    assert body(doc) == {
        "lockfile": {"path": "state/osmosis.lock", "serial_before": 2, "serial": 3},
        "forgotten": {
            "address": "hle/parity",
            "run_id": entry["run_id"],
            "run_name": entry["run_name"],
            "status": "pending",
        },
        "run_stopped": False,
        "warnings": [],
    }
    # With the config gone and the entry forgotten, the plan leaves the run alone.
    plan = osm.plan("--format", "json").json()
    assert all(a["address"] != "hle/parity" for a in plan["actions"])


def test_forget_refuses_an_entry_whose_paid_call_is_in_flight(osm: Osmosis) -> None:
    path = osm.repo / "state" / "osmosis.lock"
    state = read_lockfile(path, platform=None, workspace=None)
    started = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    pending = RecordedRun(
        address="tb/new",
        spec_digest="sha256:" + "1" * 64,
        intent=Intent(op="submit", started_at=started, body_digest="sha256:" + "1" * 64),
    )
    write_lockfile(path, put_run(state, pending))
    before = lock_bytes(osm)
    result = osm.state("forget", "tb/new")
    assert result.code == 1, result
    assert result.err == (
        "Error: tb/new has a pending submit in state/osmosis.lock (started 2026-05-01T12:00:00Z): "
        "its outcome is not known yet\n"
        "  run `osmosis-plan` and `osmosis-apply` first, so the pending action is resolved "
        "(forgetting it could lose track of a run that was paid for)\n"
    )
    assert lock_bytes(osm) == before
    assert "submit pending" in osm.state("list").out


# --------------------------------------------------------------------------- mv


def test_mv_rekeys_the_entry_and_refuses_an_existing_address(
    osm: Osmosis, platform: Platform
) -> None:
    entry = read_lock(osm.repo)["runs"]["tb/smoke"]
    benchmarks = osm.repo / "benchmarks"
    (benchmarks / "tb" / "smoke.toml").rename(benchmarks / "tb" / "smoke-v2.toml")
    assert platform.requests is not None
    platform.requests.reset()
    result = osm.state("mv", "tb/smoke", "tb/smoke-v2")
    assert result.code == 0, result
    assert platform.requests.count() == 0
    assert result.out == (
        f"Moved tb/smoke -> tb/smoke-v2 (run {entry['run_name']} ({entry['run_id']})) in "
        "state/osmosis.lock (serial 2 -> 3).\n"
    )
    assert result.err == ""
    lock = read_lock(osm.repo)
    assert lock["serial"] == 3
    assert lock["runs"]["tb/smoke-v2"]["run_id"] == entry["run_id"]
    assert "tb/smoke" not in lock["runs"]
    assert [(h["address"], h["reason"]) for h in lock["history"]] == [("tb/smoke", "moved")]
    assert osm.plan("--detailed-exitcode").code == 0

    before = lock_bytes(osm)
    refused = osm.state("mv", "tb/smoke-v2", "hle/parity", "--format", "json")
    hle = read_lock(osm.repo)["runs"]["hle/parity"]
    # In json mode the error is one document on stdout too (reconciler.cli.output).
    assert refused.code == 1 and refused.json()["type"] == "error"
    assert refused.json()["errored"] is True
    assert refused.err == (
        f"Error: hle/parity is already recorded in state/osmosis.lock (run {hle['run_name']}); "
        "mv does not overwrite\n"
        "  forget it first (`osmosis-state forget hle/parity`) or choose another address\n"
    )
    assert lock_bytes(osm) == before


def test_mv_in_json_warns_when_the_configs_do_not_follow(osm: Osmosis) -> None:
    entry = read_lock(osm.repo)["runs"]["hle/parity"]
    doc = osm.state("mv", "hle/parity", "hle/renamed", "--format", "json").json()
    assert doc["type"] == "state_mv"
    assert body(doc) == {
        "lockfile": {"path": "state/osmosis.lock", "serial_before": 2, "serial": 3},
        "moved": {
            "from": "hle/parity",
            "to": "hle/renamed",
            "run_id": entry["run_id"],
            "run_name": entry["run_name"],
        },
        "warnings": [
            "benchmarks/hle/renamed.toml does not exist: the next osmosis-plan stops the run "
            "unless a config with that address is added",
            "benchmarks/hle/parity.toml still exists: the next osmosis-plan treats it as a new "
            "config and plans a submit",
        ],
    }


# --------------------------------------------------------------------------- lock, errors


def test_writes_wait_for_no_one_while_the_lock_is_held_and_name_the_holder(osm: Osmosis) -> None:
    before = lock_bytes(osm)
    lock_path = osm.repo / "state" / ".osmosis.lock.held"
    with hold_lock(lock_path, command="osmosis-apply --auto-approve --wait") as held:
        for args in (("forget", "tb/smoke"), ("mv", "tb/smoke", "tb/x")):
            result = osm.state(*args)
            assert result.code == 1, result
            assert result.err.startswith(
                f"Error: the apply lock {lock_path} is held by pid {held.pid} on {held.host} "
                f"running `osmosis-apply --auto-approve --wait` since {held.started_at} "
                f"(lock id {held.lock_id})\n"
            )
            assert f"osmosis-apply --force-unlock {held.lock_id}\n" in result.err
    assert lock_bytes(osm) == before
    assert osm.state("forget", "tb/smoke").code == 0  # released: it goes through


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "nope"), "Error: no run is recorded at nope in state/osmosis.lock\n"),
        (("forget", "nope"), "Error: no run is recorded at nope in state/osmosis.lock\n"),
        (("mv", "nope", "x"), "Error: no run is recorded at nope in state/osmosis.lock\n"),
        (("show",), "Error: osmosis-state show ADDR: expected 1 address, got 0\n"),
        (("mv", "tb/smoke"), "Error: osmosis-state mv OLD NEW: expected 2 addresses, got 1\n"),
        (("show", "../x"), "Error: ADDR '../x' is not an address\n"),
        (("mv", "tb/smoke", "tb/x.toml"), "Error: NEW 'tb/x.toml' is not an address\n"),
        (("rm", "tb/smoke"), "Error: osmosis-state: argument COMMAND: invalid choice: 'rm'"),
        (("list", "--format", "markdown"), "Error: osmosis-state prints text or json\n"),
        (
            ("list", "--workspace", "other"),
            "Error: state/osmosis.lock records runs of workspace 'e2e' (this run uses 'other');",
        ),
    ],
)
def test_usage_errors_exit_1_and_change_nothing(
    osm: Osmosis, args: tuple[str, ...], message: str
) -> None:
    before = lock_bytes(osm)
    result = osm.state(*args)
    assert (result.code, result.out) == (1, ""), result
    assert result.err.startswith(message), result
    assert lock_bytes(osm) == before


def test_without_a_lockfile(tmp_path: Path, platform: Platform) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    osm = Osmosis(repo, platform)
    assert osm.state("list").out == "No runs recorded: state/osmosis.lock does not exist.\n"
    doc = osm.state("list", "--format", "json").json()
    assert doc["lockfile"] == {"path": "state/osmosis.lock", "exists": False}
    assert doc["runs"] == []
    result = osm.state("forget", "a")
    assert result.err.startswith(
        "Error: no run is recorded at a: state/osmosis.lock does not exist\n"
    )
    with contextlib.suppress(FileNotFoundError):
        assert not any((repo / "state").iterdir()), "a refused forget leaves no lockfile"
