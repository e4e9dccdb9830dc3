"""``osmosis-import RUN [--to PATH] | --all [filters]``: flags, run, output.

This module parses the command's arguments, drives ``reconciler.engine.importer`` and
hands its ``CommandResult`` to the one printer.
The JSON document is built in one function (``import_json``) so it can move onto a shared
output layer.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from reconciler import numbers
from reconciler.cli.common import command_parser, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Diagnostic, Output
from reconciler.engine.context import Context, open_context
from reconciler.engine.importer import Importer, ImportFlags, ImportPlan, run_label
from reconciler.errors import ImportRefusedError, NotFoundError, UsageError
from reconciler.escaping import escape_text
from reconciler.exit_codes import Ending
from reconciler.model import LockState
from reconciler.platform import RunStatus, RunSummary
from reconciler.redact import redact
from reconciler.state.door import open_door
from reconciler.state.lockfile import new_state, read_lockfile

DESCRIPTION = """\
Bring existing Platform runs under management: write a config generated from the run's
details and record the run in the lockfile, after checking that the config, read back as
osmosis-plan reads it, describes exactly that run (else nothing is written).

The run's details do not say everything a config holds. Flags fill in the rest; AGENT is
the agent's number (1, 2, ...), and a flag without AGENT= applies to every agent:
  --model-type [AGENT=]provider|endpoint|hosted   always needed (the details do not say it)
  --secret [AGENT=]NAME        the model's api_key_secret, unless the run used only one
  --base-url [AGENT=]URL       an endpoint model's base_url
  --header [AGENT=]NAME=VALUE  an endpoint model's extra_headers (once per header),
  --no-extra-headers           or: the endpoint models sent none
  --lora-model [AGENT=]NAME    a hosted model's lora_model_name, when the reported
                               BASE:LORA name has more than one colon
  --judge-secret NAME          [execution].judge_api_key_secret, when the details omit it
  --required-secret NAME       a [secrets].required name (once per name)
An import that needs one of them says which.
"""

EPILOG = """\
The config goes to BENCHMARKS/<benchmark key>/<run name>.toml (e.g.
benchmarks/terminal-bench-2-1/bright-otter.toml) unless --to names another file under the
benchmarks directory. An existing file is never overwritten: --update rewrites it from the
run in place, keeping its comments and layout. A run already recorded is refused (skipped
with --all); so is an address recorded for another run, unless --force and that run ended.
With --all, a flag without AGENT= holds for every agent of every run it imports: filter
the runs (--benchmark, --status, --created-since) so that it is true of them.

exit codes:
  0  every run imported (or, with --all, imported or skipped as already recorded)
  1  nothing imported: bad arguments, a refused run, lock held, platform unreachable
  3  --all: some runs imported, some refused (the lockfile holds the imported ones)
"""


def parser() -> argparse.ArgumentParser:
    parser = command_parser("osmosis-import", DESCRIPTION, EPILOG)
    add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-import", parser, argv, command)


def command(args: argparse.Namespace, output: Output) -> Ending:
    if args.dir is None:
        args.dir = str(repo_root(args))
    result = run(args, output.err)
    _diagnose_refusals(result, output)
    return output.present(result)


def _diagnose_refusals(result: CommandResult, output: Output) -> None:
    """A refused import is an error of the command: in the document's diagnostics and on
    stderr (issue 23: ``--format json`` said errored with empty diagnostics and nothing on
    stderr). The text formats say it already, in the result's text."""
    if not output.machine:
        return
    runs = result.body.get("runs") if isinstance(result.body, Mapping) else None
    for item in runs if isinstance(runs, list) else ():
        if isinstance(item, Mapping) and item.get("outcome") == "refused":
            hint = item.get("hint")
            refusal = Diagnostic(
                "error",
                "ImportRefusedError",
                str(item.get("message")),
                hint if isinstance(hint, str) else None,
            )
            output.diagnose(refusal)
            shown = f"Error: {refusal.message}\n" + (f"  {refusal.hint}\n" if refusal.hint else "")
            output.err.write(escape_text(redact(shown), keep_newlines=True))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", metavar="RUN", help="the run's name or id")
    parser.add_argument(
        "--to",
        metavar="PATH",
        help="the config file to write, relative to the repository root (default: "
        "BENCHMARKS/<benchmark key>/<run name>.toml)",
    )
    parser.add_argument(
        "--all", action="store_true", help="import every run that matches the filters"
    )
    parser.add_argument("--benchmark", metavar="KEY|NAME|ID", help="--all: runs of this benchmark")
    parser.add_argument(
        "--status",
        action="append",
        default=[],
        metavar="STATUS[,STATUS]",
        help="--all: runs with this status (pending, queued, running, finished, failed, stopped)",
    )
    parser.add_argument(
        "--created-since",
        metavar="DATE",
        help="--all: runs created at or after DATE (YYYY-MM-DD or an ISO 8601 time, UTC "
        "unless it says otherwise)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="show the files it would write; change nothing"
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite an existing config file from the run, keeping its comments and layout",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="take over an address recorded for another run that has ended (it moves to "
        "the lockfile's history)",
    )
    parser.add_argument("--lock-timeout", type=numbers.seconds, default=0.0, metavar="SECONDS")
    parser.add_argument("--model-type", action="append", default=[], metavar="[AGENT=]TYPE")
    parser.add_argument("--secret", action="append", default=[], metavar="[AGENT=]NAME")
    parser.add_argument("--base-url", action="append", default=[], metavar="[AGENT=]URL")
    parser.add_argument("--header", action="append", default=[], metavar="[AGENT=]NAME=VALUE")
    parser.add_argument("--no-extra-headers", action="store_true")
    parser.add_argument("--lora-model", action="append", default=[], metavar="[AGENT=]NAME")
    parser.add_argument("--judge-secret", metavar="NAME")
    parser.add_argument("--required-secret", action="append", default=[], metavar="NAME")


@dataclass(frozen=True)
class Outcome:
    """What happened to one run."""

    run: RunSummary
    outcome: str
    """``imported``, ``would_import`` (dry run), ``skipped`` (already recorded), ``refused``."""
    message: str
    hint: str | None = None
    plan: ImportPlan | None = None


def run(args: argparse.Namespace, err: TextIO) -> CommandResult:
    """The import's result (``err`` gets the Platform banner and the lock's notes)."""
    _check_usage(args)
    flags = ImportFlags.parse(
        model_types=args.model_type,
        secrets=args.secret,
        base_urls=args.base_url,
        headers=args.header,
        no_extra_headers=args.no_extra_headers,
        lora_models=args.lora_model,
        judge_secret=args.judge_secret,
        required_secrets=args.required_secret,
    )
    statuses = _statuses(args.status)
    since = _since(args.created_since)
    ctx = open_context(
        repo_root=Path(args.dir).resolve(),
        platform_flag=args.platform,
        workspace_flag=args.workspace,
        overrides={"benchmarks": args.benchmarks, "state": args.state},
    )
    try:
        if ctx.announcement:
            err.write(ctx.announcement + "\n")
        if ctx.warning:
            err.write(f"warning: {ctx.warning}\n")
        importer = Importer(
            client=ctx.client,
            repo_root=ctx.repo_root,
            settings=ctx.settings,
            state_display=ctx.settings.state,
            invocation=_invocation(args),
            head=ctx.git.head() if ctx.git else None,
        )
        state = _read(ctx)
        if args.all:
            outcomes = _prepare_all(ctx, importer, state, flags, args, statuses, since)
        else:
            detail = importer.fetch(args.run)
            try:
                plan = importer.prepare(
                    detail, state, flags, to=args.to, update=args.update, force=args.force
                )
            except ImportRefusedError as exc:
                if args.format != "json":
                    raise
                outcome = Outcome(detail.summary, "refused", exc.message, exc.hint)
                body = import_json([outcome], args.dry_run, ctx.settings.state, state.serial)
                return CommandResult(Ending.FAILED, "import", body)
            outcomes = [Outcome(plan.run, "would_import", "", plan=plan)]
        serial = state.serial
        if not args.dry_run and any(o.plan for o in outcomes):
            outcomes, serial = _commit(ctx, importer, outcomes, args, err)
        if args.format == "json":
            result = CommandResult(
                Ending.DONE,
                "import",
                import_json(outcomes, args.dry_run, ctx.settings.state, serial),
            )
        else:
            text = render_text(outcomes, args.dry_run, ctx.settings.state, serial, args.all)
            result = CommandResult(
                Ending.DONE, "import", text=escape_text(text, keep_newlines=True)
            )
    finally:
        ctx.close()
    imported = sum(o.outcome in ("imported", "would_import") for o in outcomes)
    refused = sum(o.outcome == "refused" for o in outcomes)
    if refused:
        return replace(result, ending=Ending.PARTIAL if imported else Ending.FAILED)
    return result


def _check_usage(args: argparse.Namespace) -> None:
    if args.format == "markdown":
        raise UsageError("osmosis-import prints text or json", "pass --format text or json")
    if args.all == bool(args.run):
        raise UsageError(
            "osmosis-import needs a RUN (name or id) or --all, not both"
            if args.all
            else "osmosis-import needs a RUN (its name or id), or --all",
            "see `osmosis-import --help`",
        )
    if args.all and args.to:
        raise UsageError(
            "--to names one file; it cannot be used with --all",
            "import runs one at a time to choose their files",
        )
    if not args.all and (args.benchmark or args.status or args.created_since):
        raise UsageError(
            "--benchmark, --status and --created-since filter --all",
            "add --all, or name one RUN",
        )
    if args.lock_timeout < 0:
        raise UsageError("--lock-timeout must not be negative")


def _statuses(values: Sequence[str]) -> set[str]:
    wanted = {s.strip() for value in values for s in value.split(",") if s.strip()}
    known = {str(s) for s in RunStatus.reported()}
    unknown = sorted(wanted - known)
    if unknown:
        raise UsageError(
            f"--status {', '.join(unknown)}: not a run status",
            f"use one of {', '.join(RunStatus.reported())}",
        )
    return wanted


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise UsageError(
            f"--created-since {value}: not a date", "use YYYY-MM-DD or 2026-05-01T12:00:00Z"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _invocation(args: argparse.Namespace) -> str:
    if not args.all:
        return f"osmosis-import {args.run}"
    parts = ["osmosis-import --all"]
    if args.benchmark:
        parts.append(f"--benchmark {args.benchmark}")
    parts += [f"--status {s}" for s in args.status]
    if args.created_since:
        parts.append(f"--created-since {args.created_since}")
    return " ".join(parts)


def _read(ctx: Context) -> LockState:
    return read_lockfile(
        ctx.state_path,
        platform=ctx.platform_id,
        workspace=ctx.workspace,
        display_path=ctx.settings.state,
    )


def _prepare_all(
    ctx: Context,
    importer: Importer,
    state: LockState,
    flags: ImportFlags,
    args: argparse.Namespace,
    statuses: set[str],
    since: datetime | None,
) -> list[Outcome]:
    benchmark_id = None
    if args.benchmark:
        try:
            benchmark_id = ctx.client.get_benchmark(args.benchmark).id
        except NotFoundError:
            raise UsageError(
                f"--benchmark {args.benchmark}: no such benchmark in this workspace",
                "give its key, exact name or id (`osmosis benchmark list`)",
            ) from None
    listed = ctx.client.list_runs(benchmark_id=benchmark_id)
    runs = [
        r
        for r in listed
        if (not statuses or r.status in statuses)
        and (since is None or (r.created_at is not None and r.created_at >= since))
    ]
    runs.sort(key=lambda r: (r.created_at or datetime.min.replace(tzinfo=UTC), r.id))
    recorded = {e.run_id: address for address, e in state.runs.items() if e.run_id}
    outcomes: list[Outcome] = []
    taken: dict[str, str] = {}
    for summary in runs:
        if summary.id in recorded:
            outcomes.append(
                Outcome(summary, "skipped", f"already recorded at {recorded[summary.id]}")
            )
            continue
        try:
            detail = importer.fetch(summary.id)
            plan = importer.prepare(
                detail, state, flags, update=args.update, force=args.force, taken=taken
            )
        except ImportRefusedError as exc:
            outcomes.append(Outcome(summary, "refused", exc.message, exc.hint))
            continue
        taken[plan.address] = run_label(plan.run)
        outcomes.append(Outcome(plan.run, "would_import", "", plan=plan))
    return outcomes


def _commit(
    ctx: Context,
    importer: Importer,
    outcomes: list[Outcome],
    args: argparse.Namespace,
    err: TextIO,
) -> tuple[list[Outcome], int]:
    """Through the lockfile's door: re-read the lockfile under the apply lock, then write
    each config and its entry."""
    done: list[Outcome] = []
    with open_door(
        ctx.lock_scope(),
        timeout=args.lock_timeout,
        command=importer.invocation[:300],
        say=lambda line: err.write(line + "\n"),
    ) as door:
        state = door.read(platform=ctx.platform_id, workspace=ctx.workspace)
        store = door.store(state or new_state(ctx.platform_id, ctx.workspace), publish=False)
        for outcome in outcomes:
            plan = outcome.plan
            if plan is None:
                done.append(outcome)
                continue
            try:
                importer.recheck(plan, store.state)
                importer.commit(plan, store)
            except ImportRefusedError as exc:
                if not args.all:
                    raise
                done.append(Outcome(plan.run, "refused", exc.message, exc.hint))
                continue
            done.append(Outcome(plan.run, "imported", "", plan=plan))
        serial = store.state.serial
    return done, serial


# --------------------------------------------------------------------------- output


def _counts(outcomes: Sequence[Outcome]) -> dict[str, int]:
    counts = {"imported": 0, "would_import": 0, "skipped": 0, "refused": 0}
    for outcome in outcomes:
        counts[outcome.outcome] += 1
    return counts


def import_json(
    outcomes: Sequence[Outcome], dry_run: bool, lockfile: str, serial: int
) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for o in outcomes:
        item: dict[str, Any] = {
            "run_id": o.run.id,
            "run_name": o.run.name or None,
            "outcome": o.outcome,
        }
        if o.plan is not None:
            item.update(
                {
                    "address": o.plan.address,
                    "path": o.plan.path,
                    "spec_digest": o.plan.desired.spec_digest,
                    "file": "unchanged"
                    if not o.plan.writes_file
                    else ("updated" if o.plan.existing is not None else "new"),
                    "from_flags": list(o.plan.from_flags),
                    "inferred": list(o.plan.inferred),
                }
            )
            if dry_run:
                item["content"] = o.plan.text
        else:
            item["message"] = o.message
            item["hint"] = o.hint
        runs.append(item)
    return {
        "dry_run": dry_run,
        "lockfile": {"path": lockfile, "serial": serial},
        "runs": runs,
        "summary": _counts(outcomes),
    }


def render_text(
    outcomes: Sequence[Outcome], dry_run: bool, lockfile: str, serial: int, bulk: bool
) -> str:
    lines: list[str] = []
    for o in outcomes:
        label = run_label(o.run)
        plan = o.plan
        if plan is not None and o.outcome == "would_import":
            verb = (
                "would leave unchanged"
                if not plan.writes_file
                else ("would update" if plan.existing is not None else "would write")
            )
            lines.append(f"Would import run {label} as {plan.address}; {verb} {plan.path}:")
            if plan.existing is not None and plan.writes_file:
                diff = difflib.unified_diff(
                    plan.existing.splitlines(),
                    plan.text.splitlines(),
                    f"{plan.path} (now)",
                    f"{plan.path} (imported)",
                    lineterm="",
                )
                lines += [f"    {line}" for line in diff]
            else:
                lines += [f"    {line}".rstrip() for line in plan.text.splitlines()]
        elif plan is not None:
            verb = (
                "kept"
                if not plan.writes_file
                else ("updated" if plan.existing is not None else "wrote")
            )
            lines.append(f"Imported run {label} as {plan.address}")
            lines.append(f"  {verb} {plan.path}")
        elif o.outcome == "skipped":
            lines.append(f"Skipped run {label}: {o.message}")
        else:
            lines.append(f"Refused run {label}: {o.message}")
            if o.hint:
                lines.append(f"  {o.hint}")
        if plan is not None:
            if plan.from_flags:
                lines.append(f"  from the command line: {', '.join(plan.from_flags)}")
            if plan.inferred:
                lines.append(f"  inferred (the only possible value): {', '.join(plan.inferred)}")
    counts = _counts(outcomes)
    if bulk:
        if dry_run:
            lines.append(
                f"Import: {counts['would_import']} to import, {counts['skipped']} already "
                f"recorded, {counts['refused']} refused."
            )
        else:
            lines.append(
                f"Import: {counts['imported']} imported, {counts['skipped']} already recorded, "
                f"{counts['refused']} refused."
            )
    if dry_run:
        lines.append("Dry run: nothing was written.")
    elif counts["imported"]:
        lines.append(
            f"Recorded {counts['imported']} run{'s' if counts['imported'] != 1 else ''} in "
            f"{lockfile} (serial {serial}). Commit the config"
            f"{'s' if counts['imported'] != 1 else ''} and the lockfile."
        )
    return "\n".join(lines) + "\n"
