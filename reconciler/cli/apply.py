"""``osmosis-apply``: the command line of the apply (the operation is ``engine/apply.py``).

Flags in, an ``ApplyRequest`` to the engine with the two things only a command line can
do (show the plan, ask ``yes`` on the terminal), then the apply's report (printed as it
happens by ``output.ApplyReport``), the results it downloaded, and the last error lines of
the runs that ended unsuccessfully. ``--force-unlock`` and ``--refresh-only`` go through
the lockfile's door too (``state.door``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler import numbers
from reconciler.cli.common import (
    Parser,
    add_selection_flags,
    command_line,
    command_parser,
    invocation,
    overrides,
    repo_root,
)
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Output
from reconciler.errors import UsageError
from reconciler.exit_codes import PLAN_AND_APPLY_HELP, WAIT_TIMED_OUT, Ending

if TYPE_CHECKING:  # imported lazily at run time: start-up must not pay for them
    from reconciler.engine.apply import Applied
    from reconciler.engine.context import Context
    from reconciler.model import Plan

PROG = "osmosis-apply"


def parser() -> Parser:
    parser = command_parser(
        PROG,
        "Carry out the plan exactly once per paid action, under a lock.",
        PLAN_AND_APPLY_HELP,
    )
    parser.add_argument(
        "planfile",
        nargs="?",
        metavar="PLANFILE",
        help="a plan saved by osmosis-plan --out (refused when stale); default: plan now",
    )
    parser.add_argument(
        "--auto-approve",
        action="store_true",
        help="apply without asking for 'yes' (needed without a terminal, e.g. in CI)",
    )
    parser.add_argument(
        "--parallelism",
        type=int,
        metavar="N",
        help="actions run at once (default: the parallelism setting, 8)",
    )
    parser.add_argument(
        "--lock-timeout",
        type=numbers.seconds,
        default=0.0,
        metavar="SECONDS",
        help="wait this long for another apply's lock before giving up (default: 0)",
    )
    parser.add_argument(
        "--force-unlock",
        metavar="LOCK_ID",
        help="release the apply lock LOCK_ID left by an apply that is gone, then exit",
    )
    parser.add_argument(
        "--refresh-only",
        action="store_true",
        help="record what the Platform reports now (statuses) in the lockfile, under the "
        "lock; take no other action",
    )
    parser.add_argument("--wait", action="store_true", help="wait for active runs, then download")
    parser.add_argument(
        "--wait-timeout",
        type=numbers.seconds,
        default=3600.0,
        metavar="SECONDS",
        help=f"give up waiting after this long and exit {WAIT_TIMED_OUT} (default: 3600)",
    )
    parser.add_argument(
        "--download-types",
        metavar="LIST",
        help="outputs to download, comma-separated: summary, results, artifacts, logs, or "
        "all (default: the download_types setting, summary,results)",
    )
    parser.add_argument(
        "--only",
        metavar="KINDS",
        help="perform only these kinds, hold the rest back: submit, replace, stop, forget, "
        "download, adopt, move, retry, refresh (e.g. --only download,refresh never pays)",
    )
    add_selection_flags(parser)
    from reconciler.cli.projects import add_root_flags

    add_root_flags(parser, command="apply")
    parser.add_argument(
        "--refresh",
        choices=("incremental", "full"),
        help="how to read the run list (see osmosis-plan --help)",
    )
    parser.add_argument(
        "--download-running",
        action="store_true",
        help="also download a current snapshot of running runs (see osmosis-plan --help)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, parser, argv, command)


def command(args: argparse.Namespace, output: Output) -> Ending:
    """The apply, its report and its results for people and scripts."""
    if args.refresh_only and args.planfile:
        raise UsageError(
            "--refresh-only takes no PLANFILE", "run `osmosis-apply --refresh-only` alone"
        )
    root = repo_root(args)
    from reconciler.cli.projects import refuse_root_flags, root_command, root_of

    projects = root_of(root)
    if projects is not None:  # a root of many projects (docs/projects.md)
        return root_command(projects, args, output, "apply")
    refuse_root_flags(args, "apply")
    if args.force_unlock:
        return _force_unlock(args, root, output)
    from reconciler.cli.output import ApplyReport
    from reconciler.cli.plan import policy_errors, present_refresh
    from reconciler.engine import apply as operation
    from reconciler.engine.load import open_command
    from reconciler.plan.restrict import parse_only

    only = parse_only(args.only) if args.only is not None else None
    if only is not None and args.wait and "download" not in only:
        raise UsageError("--wait downloads the runs it waited for: add download to --only")
    with open_command(invocation(args, root), output) as ctx:
        if args.refresh_only:
            found = operation.record_refresh(
                ctx, output, command=command_line(), lock_timeout=args.lock_timeout
            )
            return present_refresh(found, args, output, record=True)
        report = ApplyReport(output)

        def on_plan(plan: Plan, saved: bool) -> None:
            from reconciler.cli.output import render_plan
            from reconciler.render import plan_to_dict

            if not saved:
                output.show(render_plan(plan, args.format, color=output.color, quiet=output.quiet))
            report.planned(plan, plan_to_dict(plan))

        request = operation.ApplyRequest(
            command=command_line(),
            planfile=Path(args.planfile) if args.planfile else None,
            only=only,
            lock_timeout=args.lock_timeout,
            wait=args.wait,
            wait_timeout=args.wait_timeout,
        )
        applied = operation.apply(
            ctx,
            output,
            request,
            progress=report,
            on_plan=on_plan,
            approve=None if args.auto_approve else lambda _plan: _ask_approval(output),
        )
        if applied.plan.errors:
            policy_errors(applied.plan.errors, output)
        if args.wait and not output.machine and not output.quiet:
            _show_downloaded_results(applied, ctx.repo_root, ctx.download_root, output)
        if applied.result is not None and applied.result.unsuccessful and not output.machine:
            _explain_unsuccessful(ctx, applied, output)
        return applied.ending


def _ask_approval(output: Output) -> None:
    """Terraform's question on the terminal; anything but ``yes`` refuses."""
    if not sys.stdin.isatty():
        raise UsageError(
            "refusing to apply without approval: no terminal to ask on",
            "pass --auto-approve, or save a plan with `osmosis-plan --out FILE` "
            "and run `osmosis-apply FILE`",
        )
    output.prompt(
        "\nDo you want to perform these actions? Only 'yes' will be accepted.\n  Enter a value: "
    )
    if sys.stdin.readline().strip() != "yes":
        raise UsageError("Apply cancelled: the answer was not 'yes'")


def _force_unlock(args: argparse.Namespace, root: Path, output: Output) -> Ending:
    """``--force-unlock ID``: release the lock an apply that is gone left (``state.door``)."""
    from reconciler.engine.context import resolve_settings
    from reconciler.state.door import force_unlock

    settings = resolve_settings(root, overrides(args))
    where = force_unlock(root, root / settings.state, args.force_unlock)
    output.info(f"Released the apply lock {args.force_unlock} ({where}).")
    body = {"lock_id": args.force_unlock, "released": True}
    return output.present(CommandResult(Ending.DONE, "unlock", body))


def _explain_unsuccessful(ctx: Context, applied: Applied, output: Output) -> None:
    """A run that ended failed or stopped: its last error lines, and how to see the rest."""
    from reconciler.cli.logs import explain_failures

    assert applied.result is not None
    runs = [
        (r.address, r.run_id, r.run_name or r.run_id)
        for r in applied.result.unsuccessful
        if r.run_id
    ]
    for line in explain_failures(ctx.client, runs):
        output.progress(line, essential=True)


def _show_downloaded_results(
    applied: Applied, root: Path, download_root: Path, output: Output
) -> None:
    """After ``--wait``: the results table (the plan's) of the runs this apply downloaded,
    from the state the apply left (a retried run with the retry runs it just downloaded
    counted, as the next plan shows it)."""
    from reconciler.model import Action
    from reconciler.outputs.kept import read_kept_outcomes
    from reconciler.plan.results import result_rows
    from reconciler.render import render_results_text
    from reconciler.results.retried import catalog_thresholds, retried_results

    outcomes = applied.result.outcomes if applied.result is not None else []
    downloaded = tuple(
        sorted({o.item.address for o in outcomes if o.ok and o.item.action is Action.DOWNLOAD})
    )
    if not downloaded:
        return
    benchmarks = applied.observation.benchmarks.values()
    retried = retried_results(
        applied.state,
        lambda run: read_kept_outcomes(root, run, download_root),
        catalog_thresholds(benchmarks),
    )
    rows = result_rows(applied.state, downloaded, benchmarks, retried)
    text = render_results_text(rows)
    if text:
        output.show("\n" + text)
