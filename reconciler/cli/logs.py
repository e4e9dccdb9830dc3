"""``osmosis-logs ADDR``: a recorded run's log lines from the Platform (E6), with paging,
``--follow`` while it runs, and ``--level``.

E6 pages with an opaque cursor (platform-api.md §8): without one, ``direction=older``
returns the most recent page, oldest first within it, and ``next_cursor`` pages further
back. ``--limit`` lines are shown (the newest); ``--cursor`` continues back from an earlier
page (the cursor is printed when there is more). ``--follow`` polls the newest page and
prints the lines not yet shown, until the run ends.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from reconciler import shutdown
from reconciler.cli.common import Parser, add_common_flags, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import Output
from reconciler.engine.context import open_context, resolve_settings
from reconciler.errors import ReconcilerError, UsageError
from reconciler.exit_codes import Ending
from reconciler.model import RunStatus
from reconciler.platform import PlatformClient
from reconciler.platform.logs import LEVELS, PAGE_MAX, last_error_lines, line_text
from reconciler.platform.logs import level_rank as _rank
from reconciler.platform.models import LogEntry
from reconciler.redact import redact
from reconciler.results.runs import parse_ref, resolve
from reconciler.state.lockfile import read_lockfile

DESCRIPTION = """\
Show a recorded run's log lines (the Platform's run log, E6).

  ADDR | ADDR@RUN      the address's newest run, or one of its recorded runs

The newest --limit lines are shown, oldest first; when there are older lines the command
says the --cursor that shows them. --follow keeps printing new lines until the run ends.
"""

EPILOG = """\
exit codes:
  0  done
  1  error: unknown address or run, Platform unreachable, bad arguments
"""


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="osmosis-logs",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_flags(parser)
    parser.add_argument("ref", metavar="ADDR", help="ADDR or ADDR@RUN")
    parser.add_argument(
        "--limit", type=int, default=50, metavar="N", help="lines to show (default 50)"
    )
    parser.add_argument("--cursor", metavar="C", help="continue back from an earlier page")
    parser.add_argument(
        "--level",
        choices=LEVELS,
        help="only lines at this level or above (debug < info < warning < error)",
    )
    parser.add_argument(
        "--follow", action="store_true", help="keep printing new lines until the run ends"
    )
    parser.add_argument(
        "--interval", type=float, default=2.0, metavar="SECONDS", help="--follow's poll interval"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command("osmosis-logs", parser, argv, _command)


def _key(entry: LogEntry) -> tuple[str, str, str, str]:
    return (entry.timestamp, entry.level, entry.step, entry.message)


def _entry_dict(entry: LogEntry) -> dict[str, object]:
    return {
        "timestamp": entry.timestamp,
        "level": entry.level,
        "step": entry.step,
        "message": redact(entry.message),
    }


def _command(args: argparse.Namespace, output: Output) -> Ending:
    if not 1 <= args.limit <= 10_000:
        raise UsageError("--limit must be between 1 and 10000")
    if args.follow and args.cursor:
        raise UsageError("--follow shows new lines; it cannot start from --cursor")
    if args.interval <= 0:
        raise UsageError("--interval must be positive")
    root = repo_root(args).resolve()
    settings = resolve_settings(root, {"benchmarks": args.benchmarks, "state": args.state})
    state = read_lockfile(
        root / settings.state, platform=None, workspace=None, display_path=settings.state
    )
    ref = parse_ref(args.ref)
    if ref.agent is not None:
        raise UsageError(f"{args.ref}: logs are per run", "leave out the #AGENT part")
    run = resolve(state, ref)
    workspace = args.workspace
    if workspace is None and not state.workspace.startswith("git:"):
        workspace = state.workspace or None
    ctx = open_context(
        repo_root=root,
        platform_flag=args.platform or state.platform or None,
        workspace_flag=workspace,
        overrides={},
    )
    if ctx.warning:
        output.warning(ctx.warning)
    minimum = _rank(args.level) if args.level else 0
    try:
        entries, cursor = _newest(ctx.client, run.run_id, args.limit, args.cursor)
        shown = [e for e in entries if _rank(e.level) >= minimum]
        printed: list[LogEntry] = list(shown)
        if not output.machine:
            output.show("".join(line_text(e) + "\n" for e in shown))
            if cursor:
                output.info(
                    f"older lines: osmosis-logs {args.ref} --cursor {cursor}"
                    + (f" --level {args.level}" if args.level else "")
                )
        status = run.status
        if args.follow:
            last = _key(entries[-1]) if entries else None
            while not shutdown.requested():
                status = ctx.client.get_run(run.run_id).summary.status
                for entry in _since(ctx.client, run.run_id, last):
                    last = _key(entry)
                    if _rank(entry.level) >= minimum:
                        printed.append(entry)
                        if not output.machine:
                            output.show(line_text(entry) + "\n")
                if RunStatus.of(status).is_terminal:
                    break
                shutdown.sleep(args.interval)
        if output.machine:
            output.result(
                "logs",
                {
                    "address": run.address,
                    "run_id": run.run_id,
                    "run_name": run.run_name,
                    "status": status,
                    "lines": [_entry_dict(e) for e in printed],
                    "next_cursor": cursor,
                },
            )
    finally:
        ctx.close()
    return Ending.DONE


def _newest(
    client: PlatformClient, run_id: str, limit: int, cursor: str | None
) -> tuple[list[LogEntry], str | None]:
    """The newest ``limit`` lines (oldest first) from ``cursor`` back, and the cursor of
    the lines before them (None: there are none)."""
    pages: list[Sequence[LogEntry]] = []
    count = 0
    next_cursor = cursor
    while count < limit:
        page = client.get_logs(
            run_id, limit=min(PAGE_MAX, limit - count), cursor=next_cursor, direction="older"
        )
        pages.append(page.entries)
        count += len(page.entries)
        next_cursor = page.next_cursor
        if next_cursor is None or not page.entries:
            break
    entries = [e for page in reversed(pages) for e in page]
    return entries, next_cursor


def _since(
    client: PlatformClient, run_id: str, last: tuple[str, str, str, str] | None
) -> list[LogEntry]:
    """The log lines after the one keyed ``last`` (all of them when None), oldest first:
    pages back from the newest until that line is found, so a burst longer than a page
    between two polls loses nothing."""
    pages: list[Sequence[LogEntry]] = []
    cursor: str | None = None
    for _ in range(1000):
        page = client.get_logs(run_id, limit=PAGE_MAX, cursor=cursor, direction="older")
        pages.insert(0, page.entries)
        if last is None or page.next_cursor is None or any(_key(e) == last for e in page.entries):
            break
        cursor = page.next_cursor
    entries = [e for page in pages for e in page]
    if last is None:
        return entries
    keys = [_key(e) for e in entries]
    if last not in keys:
        return entries
    return entries[len(keys) - 1 - keys[::-1].index(last) + 1 :]


def explain_failures(
    client: PlatformClient, runs: Sequence[tuple[str, str, str]], *, count: int = 3
) -> list[str]:
    """For each (address, run id, run name or id) of a run that ended failed or stopped:
    its last error lines and the command that shows the rest. A log that cannot be read is
    said, never raised: the explanation must not fail the command."""
    out: list[str] = []
    for address, run_id, run in runs:
        try:
            lines = last_error_lines(client, run_id, count=count)
        except ReconcilerError as exc:
            out.append(f"{address} {run}: its log could not be read ({exc})")
            continue
        out.append(
            f"{address} {run}: last error lines (`osmosis-logs {address}@{run} --level "
            "warning` shows the rest):"
        )
        out.extend(f"    {line}" for line in lines or ["(no warning or error lines)"])
    return out
