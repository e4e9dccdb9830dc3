"""The machine interface (issue 16): every command x every mode with ``--format json``
(and ``jsonl`` where it streams), stdout validated against the published schema.

A table: one ``Row`` per command line, one column per mode. Each mode builds a real world
(a git repo in ``tmp_path``, the local Platform over loopback, a real lock holder) and the
command runs in this process through its console-script entry point. For every cell:
stdout is exactly one JSON document (``json``) or JSON Lines ending in that document
(``jsonl``), every line validates against ``reconciler/schema/output.schema.json``, and the
document says the exit code, its type and the kind of error. Adding a command is one row.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from reconciler.cli.apply import main as apply_main
from reconciler.cli.importing import main as import_main
from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.plan import main as plan_main
from reconciler.cli.state import main as state_main
from reconciler.state.locking import hold_lock
from tests.support.clock import FakeClock
from tests.support.osmosis import (
    Osmosis,
    Platform,
    Result,
    init_repo,
    smoke_config,
    start_platform,
    write_config,
)

SCHEMA = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=FormatChecker())

MODES = (
    "success",
    "blocked",
    "partial",
    "invalid",
    "unreachable",
    "lock_held",
    "wait_timeout",
    "usage",
)
KINDS = {
    "blocked": "Blocked",
    "partial": "ActionFailed",
    "invalid": "ConfigIssue",
    "unreachable": "TransportError",
    "lock_held": "LockHeldError",
    "wait_timeout": "WaitTimeout",
    "usage": "UsageError",
}
"""The diagnostic kind a failing cell must report."""


@dataclass(frozen=True)
class Row:
    """One command line and what it must answer in each mode: ``(exit code, type)``."""

    name: str
    main: Callable[[list[str] | None], int]
    args: tuple[str, ...]
    expect: dict[str, tuple[int, str]]
    formats: tuple[str, ...] = ("json",)
    planfile: bool = False
    """Applies the saved plan in the ``partial`` mode."""
    waits: bool = False
    """Adds ``--wait --wait-timeout 0`` in the ``wait_timeout`` mode."""


def _expect(kind: str, **codes: tuple[int, str]) -> dict[str, tuple[int, str]]:
    table = {mode: (0, kind) for mode in MODES}
    table.update(
        invalid=(1, "error"), unreachable=(1, "error"), usage=(1, "error"), lock_held=(0, kind)
    )
    table.update(codes)
    return table


ROWS = (
    Row(
        "osmosis-plan",
        plan_main,
        (),
        # A blocked item fails the plan where apply would fail (exit 4).
        _expect("plan", blocked=(4, "plan"), partial=(4, "plan")),
    ),
    Row(
        "osmosis-plan --validate-only",
        plan_main,
        ("--validate-only",),
        _expect("validation", invalid=(1, "validation"), unreachable=(0, "validation")),
    ),
    Row("osmosis-plan --refresh-only", plan_main, ("--refresh-only",), _expect("refresh")),
    Row(
        "osmosis-apply",
        apply_main,
        ("--auto-approve",),
        # Issue 34: a blocked item (a config that cannot run, or a saved submit whose secret
        # went since) is reported, never a failure of the apply by itself: the plan's exit 4
        # is the red check. Exit 3 (an attempted action failed) is test_cli_apply's.
        _expect(
            "apply",
            blocked=(0, "apply"),
            partial=(0, "apply"),
            lock_held=(1, "error"),
            wait_timeout=(4, "apply"),
        ),
        formats=("json", "jsonl"),
        planfile=True,
        waits=True,
    ),
    Row(
        "osmosis-import --all --dry-run",
        import_main,
        ("--all", "--dry-run"),
        # Reads the Platform only; no lock for a dry run, no config is read.
        _expect("import", invalid=(0, "import"), lock_held=(0, "import")),
    ),
    Row(
        "osmosis-state list",
        state_main,
        ("list",),
        # The lockfile only: no Platform, no configs, no lock.
        _expect("state_list", invalid=(0, "state_list"), unreachable=(0, "state_list")),
    ),
    Row(
        "osmosis-apply --refresh-only",
        apply_main,
        ("--refresh-only",),
        _expect("refresh", lock_held=(1, "error")),
        formats=("json", "jsonl"),
    ),
)


# --------------------------------------------------------------------------- worlds

_WORKSPACES = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """One loopback Platform whose runs never end on their own (a manual clock)."""
    platform = start_platform(tmp_path_factory.mktemp("machine") / "platform", clock=FakeClock())
    yield platform
    platform.close()


@dataclass
class World:
    osm: Osmosis
    extra: list[str] = field(default_factory=list)
    holder: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


def make_world(mode: str, row: Row, tmp_path: Path, server: Platform, name: str) -> World:
    platform = server.in_workspace(name)
    configs = {
        "tb/a": smoke_config(),
        "tb/b": smoke_config("anthropic/claude-sonnet-4", secret="ANTHROPIC_API_KEY"),
    }
    repo = init_repo(tmp_path / "repo", configs=configs)
    world = World(Osmosis(repo, platform))
    if mode == "blocked":
        write_config(repo, "tb/locked", smoke_config(secret="NEVER_STORED_KEY"))
    elif mode == "partial":
        # Planned with every secret present; one is deleted before the apply.
        planfile = tmp_path / "saved.plan.json"
        assert world.osm.plan("--out", str(planfile)).code == 0
        platform.delete_secret("ANTHROPIC_API_KEY")
        if row.planfile:
            world.extra.append(str(planfile))
    elif mode == "invalid":
        write_config(repo, "tb/broken", "[experiment]\nbenchmark = 3\n")
    elif mode == "unreachable":
        gone = start_platform(tmp_path / "gone")
        gone.close()
        world.osm = Osmosis(repo, gone)
    elif mode == "lock_held":
        lock = repo / "state" / ".osmosis.lock.held"
        lock.parent.mkdir(parents=True, exist_ok=True)
        world.holder.enter_context(hold_lock(lock, command="another osmosis-apply"))
    elif mode == "wait_timeout" and row.waits:
        world.extra += ["--wait", "--wait-timeout", "0"]
    elif mode == "usage":
        world.extra.append("--no-such-flag")
    return world


# --------------------------------------------------------------------------- checks


def parse_stdout(result: Result, fmt: str) -> list[dict[str, Any]]:
    """Every JSON value on stdout; fails if anything else is there."""
    if fmt == "json":
        return [json.loads(result.out)]  # the whole of stdout is one document
    lines = result.out.splitlines()
    assert lines and all(lines), f"empty lines in JSON Lines output:\n{result.out}"
    return [json.loads(line) for line in lines]


def check_schema(value: dict[str, Any]) -> None:
    errors = sorted(VALIDATOR.iter_errors(value), key=lambda e: e.path)
    assert not errors, (
        "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
        + f"\n{json.dumps(value, indent=2)[:3000]}"
    )


CELLS = [
    pytest.param(row, mode, fmt, id=f"{row.name}|{mode}|{fmt}")
    for row in ROWS
    for mode in MODES
    for fmt in row.formats
]


@pytest.mark.parametrize(("row", "mode", "fmt"), CELLS)
def test_every_command_in_every_mode_prints_valid_json(
    row: Row, mode: str, fmt: str, tmp_path: Path, server: Platform
) -> None:
    name = f"machine-{next(_WORKSPACES)}"
    world = make_world(mode, row, tmp_path, server, name)
    with world.holder:
        result = world.osm._call(row.main, ["--format", fmt, *row.args, *world.extra], None)
    code, kind = row.expect[mode]
    assert result.code == code, result

    values = parse_stdout(result, fmt)
    for value in values:
        check_schema(value)
    *events, document = values
    assert "command" in document and all("command" not in e for e in events)
    assert document["command"] == row.name.split()[0]
    assert document["type"] == kind, document
    assert document["exit_code"] == code
    assert document["errored"] is (code not in (0, 2))
    kinds = {d["kind"] for d in document["diagnostics"]}
    if code not in (0, 2):
        assert document["errors"], document
        # A saved plan is applied as recomputed (design.md §7.10): the submit whose secret
        # went is blocked now, never sent, like the plan that sees the same.
        expected = "Blocked" if mode == "partial" else KINDS[mode]
        assert expected in kinds, (mode, kinds)
    if mode == "lock_held" and code:
        (held,) = [d for d in document["diagnostics"] if d["kind"] == "LockHeldError"]
        assert held["details"]["holder"]["command"] == "another osmosis-apply"
    if fmt == "jsonl" and kind == "apply" and mode != "usage":
        types = [e["type"] for e in events]
        assert "planned_change" in types and "change_summary" in types, types
        outcomes = [e["outcome"] for e in events if "outcome" in e]
        assert [o["address"] for o in outcomes] == [o["address"] for o in document["outcomes"]]
        if mode == "wait_timeout":
            assert types[-1] == "diagnostic" or "wait_end" in types
    # People still get the same facts in words, on stderr.
    for diagnostic in document["diagnostics"]:
        if diagnostic["kind"] == "WaitTimeout":
            assert "The wait ran out after 0 s" in result.err, result
        elif diagnostic["severity"] == "error":
            assert diagnostic["message"] in result.err, (diagnostic, result.err)


def test_the_table_covers_every_mode_of_every_row() -> None:
    for row in ROWS:
        assert set(row.expect) == set(MODES), row.name


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)
