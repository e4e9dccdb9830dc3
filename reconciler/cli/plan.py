"""``osmosis-plan``: the command line of the plan (the operation is ``engine/plan.py``).

Flags in, an ``Invocation`` to the engine, the plan (or the validation, the refresh, the
watch) out through the one printer, and how it ended to the error handler, which exits.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.cli.common import (
    Parser,
    add_selection_flags,
    command_parser,
    invocation,
    overrides,
    repo_root,
)
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Diagnostic, Output, issue_to_dict, render_plan
from reconciler.errors import PolicyError, UsageError
from reconciler.exit_codes import PLAN_AND_APPLY_HELP, Ending

if TYPE_CHECKING:  # imported lazily at run time: start-up must not pay for them
    from reconciler.engine.plan import Refresh
    from reconciler.model import Plan

PROG = "osmosis-plan"


def parser() -> Parser:
    parser = command_parser(
        PROG,
        "Show what osmosis-apply would do: diff benchmarks/ against the lockfile "
        "and the Platform's runs. Never writes the lockfile.",
        PLAN_AND_APPLY_HELP,
    )
    parser.add_argument("--out", metavar="PLANFILE", help="save the plan for osmosis-apply")
    parser.add_argument(
        "--detailed-exitcode", action="store_true", help="exit 2 when changes or drift are pending"
    )
    parser.add_argument(
        "--validate-only", action="store_true", help="only validate the configs; no Platform call"
    )
    parser.add_argument(
        "--refresh-only",
        action="store_true",
        help="show what a refresh would record in the lockfile (observed statuses) and the "
        "drift; writes nothing (osmosis-apply --refresh-only records it)",
    )
    add_selection_flags(parser)
    parser.add_argument(
        "--changed-since",
        metavar="GIT_REV",
        help="only plan the configs changed since this git revision (a PR's base)",
    )
    parser.add_argument("--watch", action="store_true", help="re-plan when configs change")
    from reconciler.cli.projects import add_root_flags

    add_root_flags(parser, command="plan")
    parser.add_argument(
        "--refresh",
        choices=("incremental", "full"),
        help="incremental (default): read only runs newer than the lockfile's watermark and "
        "the recorded runs that can still change; full: list every run of the workspace "
        "(scheduled drift checks)",
    )
    parser.add_argument(
        "--download-running",
        action="store_true",
        help="also download a current snapshot of running runs (refreshed every time, "
        "like `osmosis benchmark runs download --overwrite`)",
    )
    parser.add_argument(
        "--results",
        action="store_true",
        help="show the results table of ended runs even when nothing is planned (a plan "
        'with nothing to do says only "No changes.")',
    )
    parser.add_argument(
        "--show-unmanaged",
        action="store_true",
        help="list the workspace's runs this repository does not manage (lists every run)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, parser, argv, command)


def command(args: argparse.Namespace, output: Output) -> Ending:
    """The plan (or the validation, the refresh, the watch) for people and scripts."""
    if args.refresh_only and (args.out or args.watch):
        flag = "--out" if args.out else "--watch"
        raise UsageError(
            f"--refresh-only cannot be combined with {flag}",
            "a refresh-only plan is recorded with `osmosis-apply --refresh-only`",
        )
    root = repo_root(args)
    from reconciler.cli.projects import refuse_root_flags, root_command, root_of

    projects = root_of(root)
    if projects is not None:  # a root of many projects (docs/projects.md)
        return root_command(projects, args, output, "plan")
    refuse_root_flags(args, "plan")
    if args.validate_only:
        return _validate_only(args, root, output)
    from reconciler.engine import plan as operation
    from reconciler.engine.load import open_command

    with open_command(invocation(args, root), output) as ctx:
        if args.watch:
            from reconciler.cli.watch import watch_plans

            return watch_plans(ctx, args.format, output)
        if args.refresh_only:
            return present_refresh(operation.refresh(ctx, output), args, output, record=False)
        plan, _snapshots = operation.make_plan(ctx, output, changed_since=args.changed_since)
        from reconciler.render import plan_to_dict

        ending = operation.ending(plan, detailed=args.detailed_exitcode)
        text = render_plan(
            plan,
            args.format,
            color=output.color,
            results=True if args.results else None,
            quiet=output.quiet,
        )
        output.present(CommandResult(ending, "plan", plan_to_dict(plan), text=text))
        if args.out:
            from reconciler.engine.saved_plan import save_plan

            save_plan(plan, Path(args.out))
            output.info(f"Saved the plan to {args.out}. Apply it with: osmosis-apply {args.out}")
        if plan.errors:
            policy_errors(plan.errors, output)
        elif plan.summary.blocked:
            _blocked(plan, output)
        return ending


def _validate_only(args: argparse.Namespace, root: Path, output: Output) -> Ending:
    from reconciler.config import load_configs
    from reconciler.engine.context import resolve_settings

    settings = resolve_settings(root, overrides(args))
    result = load_configs(root, settings.benchmarks, ignore=settings.ignore, policy=settings.policy)
    body = {
        "valid": result.ok,
        "files": result.files,
        "issues": [issue_to_dict(i) for i in result.issues],
    }
    for issue in result.issues:
        output.issue(issue)
    if not result.ok:
        errors = sum(1 for i in result.issues if i.severity == "error")
        files = len({i.file for i in result.issues if i.severity == "error"})
        summary = f"{errors} error(s) in {files} of {result.files} config file(s)"
        output.err.write(summary + ".\n")
        output.diagnose(
            Diagnostic(
                "error",
                "ConfigError",
                summary,
                "fix the configs listed above, then run `osmosis-plan --validate-only` again",
            )
        )
        return output.present(CommandResult(Ending.FAILED, "validation", body))
    return output.present(
        CommandResult(
            Ending.DONE, "validation", body, text=f"All {result.files} config file(s) are valid.\n"
        )
    )


def _blocked(plan: Plan, output: Output) -> None:
    """New blocked items fail the plan (exit 4): the plan shows each with its fix; scripts
    get a diagnostic per item (and, in the JSON modes, people read them on stderr). A
    standing block (recorded by an earlier apply) is a warning: listed, not red."""
    from reconciler.model import Action

    for item in plan.items:
        if item.action is not Action.BLOCKED:
            continue
        standing = " (standing)" if item.standing else ""
        message = (
            f"{item.address} (blocked{standing}): "
            f"{item.details[0] if item.details else item.reason.value}"
        )
        fix = next((d for d in item.details if d.startswith("fix:")), None)
        severity = "warning" if item.standing else "error"
        if output.machine:
            label = "Warning" if item.standing else "Error"
            output.err.write(f"{label}: {message}\n" + (f"  {fix}\n" if fix else ""))
        output.diagnose(Diagnostic(severity, "Blocked", message, fix))


def policy_errors(errors: Sequence[str], output: Output) -> None:
    """A guard's refusal: the plan shows it, so it is printed again only for scripts."""
    for error in errors:
        output.error(
            PolicyError(error, "re-run with the flag named above if this is intended"), shown=True
        )


def present_refresh(
    refresh: Refresh, args: argparse.Namespace, output: Output, *, record: bool
) -> Ending:
    """A refresh's result: ``osmosis-plan --refresh-only`` shows what ``osmosis-apply
    --refresh-only`` (``record``) records."""
    from reconciler.render import refresh_to_dict, render_refresh_markdown, render_refresh_text

    plan, changes = refresh.plan, refresh.changes
    pending = len(plan.items)
    body = refresh_to_dict(plan, changes, recorded=refresh.recorded, pending=pending)
    if args.format == "markdown":
        text = render_refresh_markdown(plan, changes, recorded=record, pending=pending)
    else:
        text = render_refresh_text(
            plan,
            changes,
            recorded=record,
            pending=pending,
            state_path=refresh.snapshots.settings.state,
            color=output.color,
        )
    detailed = getattr(args, "detailed_exitcode", False)
    ending = refresh.ending(detailed=detailed)
    return output.present(CommandResult(ending, "refresh", body, text=text))
