"""``osmosis-state list | show ADDR | forget ADDR | mv OLD NEW | resolve ADDR | adopt ADDR RUN |
migrate --platform URL``: flags, run, output.

The state edits themselves are ``engine/state_commands.py``; this module parses the
command's arguments and returns a ``CommandResult`` to the one printer. Each subcommand
builds its document body in one function (``*_json``) and its text in another (``*_text``).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from reconciler import numbers
from reconciler.cli.common import command_parser, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Output
from reconciler.engine.context import Context, resolve_settings
from reconciler.engine.migrate import Migration, migrate_lockfile
from reconciler.engine.state_commands import (
    check_address,
    config_path,
    entries,
    forget_entry,
    history_of,
    move_entry,
    read_state,
    require_entry,
    resolve_entry,
    utcnow,
    write_state,
)
from reconciler.errors import UsageError
from reconciler.escaping import escape_text, unescape_text
from reconciler.exit_codes import Ending
from reconciler.model import (
    HistoryEntry,
    LockState,
    RecordedRun,
    RunStatus,
    Settings,
)
from reconciler.platform import normalize_platform_url
from reconciler.state.lockfile import check_state_path

COMMANDS = ("list", "show", "forget", "mv", "resolve", "adopt", "migrate")

DESCRIPTION = """\
Inspect and edit the recorded state (the lockfile); only resolve --submitted and adopt read
the Platform (the run they record, checked against the body).

  list [ADDR|GLOB]...   the recorded addresses with their runs
  show ADDR             one entry in full, with its history
  forget ADDR           stop managing ADDR: its entry moves to the lockfile's history
                        (reason "forgotten"); the run is never stopped
  mv OLD NEW            re-key an entry (after renaming its config); refused when NEW exists
  resolve ADDR --submitted RUN | --not-submitted
                        settle a submit whose outcome is unknown (the plan shows ?): RUN is
                        the run it created (checked: the same body, created after the
                        submit), or it created none (the next apply submits)
  adopt ADDR RUN        record RUN, an active twin the plan names, as ADDR's run: checked
                        against the config at ADDR (its full run or its smoke run)
  migrate --platform URL [--workspace NAME] [--dry-run]
                        move a try-out's lockfile (embedded or served local Platform) to
                        another Platform: its runs do not exist there, so they move to the
                        history and the next plan there submits afresh (kept when URL serves
                        the same local Platform); refused while a run is active or pending

forget, mv, resolve, adopt and migrate take the apply lock and add 1 to the lockfile's serial;
list and show only read. --platform/--workspace, when given, must match the lockfile's own
(migrate: they name the Platform and workspace to move to).
"""

EPILOG = """\
exit codes:
  0  done
  1  error: bad arguments, no such address, lock held, unreadable lockfile
"""


def parser() -> argparse.ArgumentParser:
    parser = command_parser("osmosis-state", DESCRIPTION, EPILOG)
    add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-state", parser, argv, command)


def command(args: argparse.Namespace, output: Output) -> Ending:
    if args.dir is None:
        args.dir = str(repo_root(args))
    return output.present(run(args, output.err))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help=", ".join(COMMANDS))
    parser.add_argument("addresses", nargs="*", metavar="ADDR", help="address(es) for COMMAND")
    parser.add_argument(
        "--lock-timeout",
        type=numbers.seconds,
        default=0.0,
        metavar="SECONDS",
        help="forget/mv/resolve/adopt: wait this long for the apply lock (default 0: do not wait)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="migrate: say what would change, write nothing",
    )
    outcome = parser.add_mutually_exclusive_group()
    outcome.add_argument(
        "--submitted",
        metavar="RUN",
        help="resolve: the submit created this run (its id); it is recorded as the address's",
    )
    outcome.add_argument(
        "--not-submitted",
        action="store_true",
        help="resolve: the submit created no run; the next apply submits the config",
    )


ADDRESS_COUNTS = {
    "list": None,
    "show": 1,
    "forget": 1,
    "mv": 2,
    "resolve": 1,
    "adopt": 2,
    "migrate": 0,
}
"""How many addresses each subcommand takes (None: any number)."""
USAGES = {
    "show": "show ADDR",
    "forget": "forget ADDR",
    "mv": "mv OLD NEW",
    "resolve": "resolve ADDR --submitted RUN | --not-submitted",
    "adopt": "adopt ADDR RUN",
    "migrate": "migrate --platform URL",
}


def _check_arguments(args: argparse.Namespace) -> None:
    """A ``UsageError`` for a format, flag or address count the subcommand does not take."""
    if args.format == "markdown":
        raise UsageError("osmosis-state prints text or json", "pass --format text or --format json")
    if args.dry_run and args.command != "migrate":
        raise UsageError("--dry-run is an option of osmosis-state migrate only")
    wanted = ADDRESS_COUNTS[args.command]
    if wanted is not None and len(args.addresses) != wanted:
        raise UsageError(
            f"osmosis-state {USAGES[args.command]}: expected {wanted} "
            f"address{'es' if wanted != 1 else ''}, got {len(args.addresses)}",
            "see `osmosis-state --help`",
        )


def run(args: argparse.Namespace, err: TextIO) -> CommandResult:
    """The subcommand's result (``err`` gets the lock's waiting notes)."""
    _check_arguments(args)
    repo_root = Path(args.dir).resolve()
    if not repo_root.is_dir():
        raise UsageError(f"--dir {args.dir}: no such directory", "pass the repository root")
    settings = resolve_settings(repo_root, {"benchmarks": args.benchmarks, "state": args.state})
    # Before the lock is taken: a linked state/ would get the lock file and temp files.
    check_state_path(repo_root, settings.state)
    path, display = repo_root / settings.state, settings.state
    json_out = args.format == "json"
    if args.command == "migrate":
        return _migrate(args, repo_root, settings, err, json_out)
    scope = {"platform": _platform_flag(args.platform), "workspace": _workspace_flag(args)}

    if args.command == "list":
        state = read_state(path, display, **scope)
        patterns = [unescape_text(p) or p if "\\" in p else p for p in args.addresses]
        chosen = entries(state, patterns) if state else []
        if json_out:
            return CommandResult(Ending.DONE, "state_list", list_json(state, display, chosen))
        return CommandResult(
            Ending.DONE,
            "state_list",
            text=escape_text(list_text(state, display, chosen, patterns), keep_newlines=True),
        )

    if args.command == "show":
        state = read_state(path, display, **scope)
        address = recorded_address(args.addresses[0], "ADDR", state)
        entry = require_entry(state, address, display)
        assert state is not None
        history = history_of(state, address)
        if json_out:
            return CommandResult(
                Ending.DONE, "state_show", show_json(state, display, entry, history)
            )
        return CommandResult(
            Ending.DONE,
            "state_show",
            text=escape_text(show_text(entry, history), keep_newlines=True),
        )

    command_line = escape_text(f"osmosis-state {args.command} {' '.join(args.addresses)}")
    known = read_state(path, display, **scope)
    if args.command == "forget":
        address = recorded_address(args.addresses[0], "ADDR", known)
        now = utcnow()
        before, written, entry = write_state(
            repo_root,
            settings,
            timeout=args.lock_timeout,
            command=command_line,
            err=err,
            edit=lambda s: forget_entry(s, address, display, now),
            **scope,
        )
        config = config_path(repo_root, settings, address)
        warnings = []
        if config.exists():
            warnings.append(
                f"{_rel(config, repo_root)} still exists: the next osmosis-plan treats it as a "
                "new config and plans a submit; delete or rename it if the run should stay "
                "unmanaged"
            )
        if json_out:
            return CommandResult(
                Ending.DONE, "state_forget", forget_json(display, before, written, entry, warnings)
            )
        return CommandResult(
            Ending.DONE,
            "state_forget",
            text=escape_text(forget_text(display, before, written, entry), keep_newlines=True),
            warnings=tuple(escape_text(w) for w in warnings),
        )

    if args.command == "adopt":
        return _adopt(args, repo_root, command_line, err, json_out)
    if args.command == "resolve":
        return _resolve(args, repo_root, settings, command_line, err, scope, json_out, known)

    old = recorded_address(args.addresses[0], "OLD", known)
    new = check_address(args.addresses[1], "NEW")
    now = utcnow()
    before, written, entry = write_state(
        repo_root,
        settings,
        timeout=args.lock_timeout,
        command=command_line,
        err=err,
        edit=lambda s: move_entry(s, old, new, display, now),
        **scope,
    )
    warnings = []
    if not config_path(repo_root, settings, new).exists():
        action = (
            "stops"
            if settings.on_delete == "stop" and RunStatus.of(entry.status).is_active
            else "forgets"
        )
        warnings.append(
            f"{_rel(config_path(repo_root, settings, new), repo_root)} does not exist: the next "
            f"osmosis-plan {action} the run unless a config with that address is added"
        )
    if config_path(repo_root, settings, old).exists():
        warnings.append(
            f"{_rel(config_path(repo_root, settings, old), repo_root)} still exists: the next "
            "osmosis-plan treats it as a new config and plans a submit"
        )
    if json_out:
        return CommandResult(
            Ending.DONE, "state_mv", mv_json(display, before, written, old, new, entry, warnings)
        )
    return CommandResult(
        Ending.DONE,
        "state_mv",
        text=escape_text(mv_text(display, before, written, old, new, entry), keep_newlines=True),
        warnings=tuple(escape_text(w) for w in warnings),
    )


def _resolve(
    args: argparse.Namespace,
    repo_root: Path,
    settings: Settings,
    command_line: str,
    err: TextIO,
    scope: dict[str, str | None],
    json_out: bool,
    known: LockState | None,
) -> CommandResult:
    address = recorded_address(args.addresses[0], "ADDR", known)
    if (args.submitted is None) == (not args.not_submitted):
        raise UsageError(
            "osmosis-state resolve needs --submitted RUN or --not-submitted",
            "say what the submit did: the run it created, or that it created none",
        )
    submitted = args.submitted.strip() if args.submitted is not None else None
    if submitted is not None and not submitted:
        raise UsageError("--submitted needs a run id", "e.g. --submitted bmr_0123")
    display = settings.state
    if submitted is not None:
        # The run is read and checked against the lost submit's body first (issue 34: any
        # id was believed, and a later replace stopped another user's run).
        from reconciler.engine.evidence import resolve_submitted

        with _platform(args, repo_root, err) as ctx:
            before, written, detail = resolve_submitted(
                ctx, address, submitted, timeout=args.lock_timeout, command=command_line, err=err
            )
        submitted = detail.summary.id
    else:
        before, written, _entry = write_state(
            repo_root,
            settings,
            timeout=args.lock_timeout,
            command=command_line,
            err=err,
            edit=lambda s: resolve_entry(s, address, display, submitted=None),
            **scope,
        )
    if json_out:
        body = {
            "lockfile": _written_json(display, before, written),
            "resolved": {
                "address": address,
                "submitted": submitted is not None,
                "run_id": submitted,
            },
            "warnings": [],
        }
        return CommandResult(Ending.DONE, "state_resolve", body)
    outcome = f"submitted run {submitted}" if submitted else "not submitted"
    then = (
        "the next plan reads its status"
        if submitted
        else "the next osmosis-apply submits the config"
    )
    text = (
        f"Resolved {escape_text(address)}: {outcome}; {then} ({display}: serial {before.serial} -> "
        f"{written.serial}).\n"
    )
    return CommandResult(Ending.DONE, "state_resolve", text=text)


def _migrate(
    args: argparse.Namespace, repo_root: Path, settings: Settings, err: TextIO, json_out: bool
) -> CommandResult:
    """``osmosis-state migrate --platform URL``: the try-out's lockfile moved to another
    Platform (``engine.migrate``)."""
    if args.platform is None:
        raise UsageError(
            "osmosis-state migrate needs --platform URL: the Platform to move the lockfile to",
            "e.g. osmosis-state migrate --platform http://127.0.0.1:8765 (a served local "
            "Platform) or --platform https://platform.osmosis.ai",
        )
    command_line = escape_text(f"osmosis-state migrate --platform {args.platform}")
    migration = migrate_lockfile(
        repo_root,
        settings,
        target=args.platform,
        workspace_flag=args.workspace,
        env=os.environ,
        now=utcnow(),
        dry_run=args.dry_run,
        timeout=args.lock_timeout,
        command=command_line,
        say=lambda line: err.write(line + "\n"),
    )
    if json_out:
        return CommandResult(Ending.DONE, "state_migrate", migrate_json(settings.state, migration))
    return CommandResult(
        Ending.DONE,
        "state_migrate",
        text=escape_text(migrate_text(settings.state, migration), keep_newlines=True),
        warnings=tuple(escape_text(w) for w in migration.warnings),
    )


def recorded_address(text: str, what: str, state: LockState | None) -> str:
    """The address ``text`` names: exactly a recorded one, or one as the text output
    prints it (escaped: ``tb/\\x1b[2Jsmoke``), else a valid new address (``check_address``).

    The plan refuses a config whose address holds a control character (issue 36), but a
    lockfile may record one from before: it must still be possible to show, forget, move or
    resolve it, so such an address is taken as it is recorded, or as printed."""
    recorded: set[str] = set()
    if state is not None:
        recorded = set(state.runs) | {h.address for h in state.history}
    if text in recorded:
        return text
    if "\\" in text:
        unescaped = unescape_text(text)
        if unescaped is not None and unescaped in recorded:
            return unescaped
    return check_address(text, what)


@contextmanager
def _platform(args: argparse.Namespace, root: Path, err: TextIO) -> Iterator[Context]:
    """The Platform and workspace of the flags, for the subcommands that read a run."""
    from reconciler.engine.context import open_context

    ctx = open_context(
        repo_root=root,
        platform_flag=args.platform,
        workspace_flag=args.workspace,
        overrides={"benchmarks": args.benchmarks, "state": args.state},
    )
    try:
        if ctx.announcement:
            err.write(ctx.announcement + "\n")
        if ctx.warning:
            err.write(f"warning: {ctx.warning}\n")
        yield ctx
    finally:
        ctx.close()


def _adopt(
    args: argparse.Namespace, root: Path, command_line: str, err: TextIO, json_out: bool
) -> CommandResult:
    """``osmosis-state adopt ADDR RUN``: a person's decision that an active twin the plan
    names is this address's run, checked against the config (``engine.evidence``)."""
    from reconciler.engine.evidence import adopt_run

    address = check_address(args.addresses[0], "ADDR")
    ref = args.addresses[1].strip()
    if not ref:
        raise UsageError("adopt needs a run id or name", "e.g. osmosis-state adopt tb/a bmr_0123")
    with _platform(args, root, err) as ctx:
        display = ctx.settings.state
        before, written, adoption = adopt_run(
            ctx, address, ref, timeout=args.lock_timeout, command=command_line, err=err
        )
    entry = adoption.entry
    replaced = adoption.replaces.run_id if adoption.replaces is not None else None
    if json_out:
        body = {
            "lockfile": _written_json(display, before, written),
            "adopted": {
                "address": address,
                "run_id": entry.run_id,
                "run_name": entry.run_name,
                "stage": entry.stage,
                "replaced": replaced,
            },
            "warnings": [],
        }
        return CommandResult(Ending.DONE, "state_adopt", body)
    label = f"{entry.run_name} ({entry.run_id})" if entry.run_name else str(entry.run_id)
    stage = " as its smoke run" if entry.stage == "smoke" else ""
    moved = f"; run {replaced} moves to the history" if replaced else ""
    text = (
        f"Adopted {label} as {address}'s run{stage}: it does exactly what the config asks"
        f"{moved} ({display}: serial {before.serial} -> {written.serial}). The next plan "
        "reads its status; nothing was paid.\n"
    )
    return CommandResult(Ending.DONE, "state_adopt", text=escape_text(text, keep_newlines=True))


def _platform_flag(raw: str | None) -> str | None:
    if raw is None:
        return None
    value = raw.strip()
    if not value:
        raise UsageError("--platform requires a URL or `local`.")
    return "local" if value.lower() == "local" else normalize_platform_url(value)


def _workspace_flag(args: argparse.Namespace) -> str | None:
    if args.workspace is None:
        return None
    if not args.workspace.strip():
        raise UsageError("--workspace requires a non-empty name")
    return args.workspace.strip()


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- json


def _written_json(display: str, before: LockState, written: LockState) -> dict[str, Any]:
    return {"path": display, "serial_before": before.serial, "serial": written.serial}


def _header_json(state: LockState | None, display: str) -> dict[str, Any]:
    if state is None:
        return {"path": display, "exists": False}
    return {
        "path": display,
        "exists": True,
        "lineage": state.lineage,
        "serial": state.serial,
        "platform": state.platform,
        "workspace": state.workspace,
    }


def _record_json(record: RecordedRun | HistoryEntry) -> dict[str, Any]:
    """A run's record or one of its history entries, every field it holds, as JSON."""
    return record.model_dump(mode="json", exclude_none=True)


def list_json(state: LockState | None, display: str, chosen: list[RecordedRun]) -> dict[str, Any]:
    return {
        "lockfile": _header_json(state, display),
        "runs": [
            {
                "address": e.address,
                "run_id": e.run_id,
                "run_name": e.run_name,
                "status": e.status,
                "spec_digest": e.spec_digest,
                "submitted_at": _iso(e.submitted_at),
                "imported_at": _iso(e.imported_at),
                "intent": e.intent.op if e.intent else None,
            }
            for e in chosen
        ],
        "history_count": len(state.history) if state else 0,
    }


def show_json(
    state: LockState, display: str, entry: RecordedRun, history: list[HistoryEntry]
) -> dict[str, Any]:
    return {
        "lockfile": _header_json(state, display),
        "run": _record_json(entry),
        "history": [_record_json(h) for h in history],
    }


def forget_json(
    display: str,
    before: LockState,
    written: LockState,
    entry: RecordedRun,
    warnings: list[str],
) -> dict[str, Any]:
    return {
        "lockfile": _written_json(display, before, written),
        "forgotten": {
            "address": entry.address,
            "run_id": entry.run_id,
            "run_name": entry.run_name,
            "status": entry.status,
        },
        "run_stopped": False,
        "warnings": warnings,
    }


def mv_json(
    display: str,
    before: LockState,
    written: LockState,
    old: str,
    new: str,
    entry: RecordedRun,
    warnings: list[str],
) -> dict[str, Any]:
    return {
        "lockfile": _written_json(display, before, written),
        "moved": {"from": old, "to": new, "run_id": entry.run_id, "run_name": entry.run_name},
        "warnings": warnings,
    }


def migrate_json(display: str, migration: Migration) -> dict[str, Any]:
    before, after = migration.before, migration.after
    return {
        "lockfile": {
            "path": display,
            "serial_before": before.serial,
            "serial": after.serial if not migration.dry_run else before.serial,
        },
        "dry_run": migration.dry_run,
        "migrated": {
            "from": {"platform": before.platform, "workspace": before.workspace},
            "to": {"platform": after.platform, "workspace": after.workspace},
            "runs_kept": migration.kept,
            "forgotten": [
                {
                    "address": e.address,
                    "run_id": e.run_id,
                    "run_name": e.run_name,
                    "status": e.status,
                }
                for e in migration.forgotten
            ],
            "baselines_dropped": list(migration.baselines_dropped),
        },
        "warnings": list(migration.warnings),
    }


def _iso(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


# --------------------------------------------------------------------------- text


def _run_text(entry: RecordedRun | HistoryEntry) -> str:
    if entry.run_name and entry.run_id:
        return escape_text(f"{entry.run_name} ({entry.run_id})")
    return escape_text(entry.run_id or entry.run_name or "-")


def _status_text(entry: RecordedRun) -> str:
    if entry.intent is not None:
        return f"{entry.intent.op} pending"
    return entry.status or "-"


def list_text(
    state: LockState | None, display: str, chosen: list[RecordedRun], patterns: list[str]
) -> str:
    if state is None:
        return f"No runs recorded: {display} does not exist.\n"
    rows = [("ADDRESS", "RUN", "STATUS", "SOURCE")]
    for e in chosen:
        source = f"imported {e.imported_at:%Y-%m-%d}" if e.imported_at else ""
        rows.append((escape_text(e.address), _run_text(e), _status_text(e), source))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)), row[3]]
        ).rstrip()
        for row in rows
    ]
    if not chosen:
        lines = [
            f"No recorded address matches {' '.join(patterns)}."
            if patterns
            else "No runs recorded."
        ]
    matched = f"{len(chosen)} of {len(state.runs)}" if patterns else f"{len(state.runs)}"
    lines.append(
        f"{matched} address{'es' if len(state.runs) != 1 else ''} recorded in {display} "
        f"(serial {state.serial}, workspace {state.workspace}, platform {state.platform}); "
        f"{len(state.history)} history entr{'ies' if len(state.history) != 1 else 'y'}."
    )
    return "\n".join(lines) + "\n"


def _value_text(value: Any) -> str:
    if isinstance(value, datetime):
        return _iso(value) or ""
    if isinstance(value, str):
        return escape_text(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _flatten(value: Any, prefix: str) -> list[str]:
    if isinstance(value, Mapping) and value:
        lines: list[str] = []
        for key in sorted(value):
            lines += _flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
        return lines
    if isinstance(value, list) and value and any(isinstance(v, Mapping) for v in value):
        lines = []
        for index, item in enumerate(value):
            lines += _flatten(item, f"{prefix}[{index}]")
        return lines
    return [f"{prefix} = {json.dumps(value, ensure_ascii=False, sort_keys=True)}"]


def show_text(entry: RecordedRun, history: list[HistoryEntry]) -> str:
    lines = [escape_text(entry.address)]
    data = entry.model_dump(exclude_none=True)
    scalars = [
        (k, v)
        for k, v in data.items()
        if k not in ("address", "spec", "downloads", "intent", "results")
    ]
    width = max((len(k) for k, _ in scalars), default=0)
    for key, value in scalars:
        lines.append(f"  {key.ljust(width)}  {_value_text(value)}")
    if entry.intent is not None:
        intent = entry.intent
        lines.append(
            f"  intent: {intent.op} started {_iso(intent.started_at)}"
            + (f" (run {intent.run_id})" if intent.run_id else "")
            + " - its outcome is not known yet; the next plan resolves it"
        )
    if entry.downloads is not None:
        d = entry.downloads
        lines.append(
            f"  downloads: {', '.join(d.types)}: {d.files} file{'s' if d.files != 1 else ''}, "
            f"{d.bytes:,} bytes in {d.directory}{'' if d.complete else ' (incomplete)'}"
        )
    if entry.results is not None:
        for agent in entry.results.agents:
            score = f"{agent.pass_at_1:.1%}" if agent.pass_at_1 is not None else "-"
            lines.append(
                f"  result: agent {agent.agent_index + 1} {agent.harness or 'default'} · "
                f"{agent.model or '-'} · pass@1 {score}"
            )
    if entry.spec:
        lines.append("  spec (the submit body recorded; secret names only):")
        lines += [f"    {line}" for line in _flatten(entry.spec, "")]
    if history:
        lines.append(f"  history ({len(history)}, newest first):")
        for h in history:
            when = _iso(h.ended_at) or _iso(h.submitted_at) or "-"
            lines.append(f"    {when}  {h.reason:<9}  {_run_text(h)}  {h.status or '-'}")
    return "\n".join(lines) + "\n"


def forget_text(display: str, before: LockState, written: LockState, entry: RecordedRun) -> str:
    status = f", {entry.status}" if entry.status else ""
    return (
        f"Forgot {escape_text(entry.address)} (run {_run_text(entry)}{status}): its entry "
        "moved to the "
        f"history of {display} (serial {before.serial} -> {written.serial}).\n"
        "The run itself was not stopped; this repository no longer manages it.\n"
    )


def migrate_text(display: str, migration: Migration) -> str:
    before, after = migration.before, migration.after
    source = f"{before.platform} (workspace {before.workspace})"
    target = f"{after.platform} (workspace {after.workspace})"
    if migration.dry_run:
        lines = [f"Would migrate {display} from {source} to {target}; nothing written (--dry-run)."]
    else:
        lines = [
            f"Migrated {display} from {source} to {target} "
            f"(serial {before.serial} -> {after.serial})."
        ]
    will = "would move" if migration.dry_run else "moved"
    if migration.kept:
        lines.append(
            f"{after.platform} serves the same local Platform and workspace: the "
            f"{len(before.runs)} recorded run(s) exist there and stay recorded."
        )
    elif migration.forgotten:
        lines.append(
            f"{len(migration.forgotten)} recorded run(s) {will} to the lockfile's history "
            f'(reason "forgotten"): they exist only on {before.platform}, so the next '
            f"osmosis-plan submits their configs afresh on {after.platform}; their scores stay "
            "in the history and their downloads on disk:"
        )
        rows = [(e.address, _run_text(e), e.status or "-") for e in migration.forgotten]
        widths = [max(len(row[i]) for row in rows) for i in range(2)]
        lines += [f"  {a.ljust(widths[0])}  {r.ljust(widths[1])}  {s}".rstrip() for a, r, s in rows]
    else:
        lines.append("No run was recorded: the next osmosis-plan submits every config there.")
    if migration.baselines_dropped:
        lines.append(
            "Accepted baselines (try-out scores) "
            f"{'would be' if migration.dry_run else 'were'} dropped for: "
            + ", ".join(migration.baselines_dropped)
            + "; accept one on the new Platform with `osmosis-results accept ADDR@RUN`."
        )
    workspace = after.workspace
    scope = "" if workspace.startswith("git:") else f" --workspace {workspace}"
    lines.append(f"Next: osmosis-plan --platform {after.platform}{scope}")
    return "\n".join(lines) + "\n"


def mv_text(
    display: str,
    before: LockState,
    written: LockState,
    old: str,
    new: str,
    entry: RecordedRun,
) -> str:
    return (
        f"Moved {escape_text(old)} -> {escape_text(new)} (run {_run_text(entry)}) in {display} "
        f"(serial {before.serial} -> {written.serial}).\n"
    )
