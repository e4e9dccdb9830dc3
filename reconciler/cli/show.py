"""``osmosis-reconciler show PLANFILE``: a saved plan, printed as the plan was printed.

Same ``--format``, same bytes; no Platform call, no lockfile read (``engine.saved_plan``
reads the file).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from reconciler.cli.common import Parser, add_common_flags
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Output
from reconciler.errors import UsageError
from reconciler.exit_codes import Ending


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="osmosis-reconciler show",
        description="Print a plan saved by `osmosis-plan --out PLANFILE` exactly as the plan "
        "was printed (same --format, same bytes); no Platform call, no lockfile read.",
    )
    add_common_flags(parser)
    parser.add_argument("planfile", metavar="PLANFILE")
    return parser


def command(args: argparse.Namespace, output: Output) -> Ending:
    from reconciler.engine.saved_plan import parse_saved_plan
    from reconciler.paths import UnsafeInputError, read_named
    from reconciler.render import plan_to_dict, render_json, render_markdown, render_text

    path = Path(args.planfile)
    try:
        # A regular file of bounded size, not reached through a link (reconciler.paths):
        # `show /dev/zero` read until memory ran out.
        plan = parse_saved_plan(read_named(path, what="saved plan").decode("utf-8"))
    except UnsafeInputError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise UsageError(
            f"{path}: cannot read the saved plan: {exc}",
            "create one with `osmosis-plan --out PLANFILE`",
        ) from exc
    if args.format == "markdown":
        text = render_markdown(plan)
    elif args.format == "text":
        text = render_text(plan, color=output.color)
    else:
        text = render_json(plan)
    return output.present(CommandResult(Ending.DONE, "plan", plan_to_dict(plan), text=text))


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-reconciler show", parser, argv, command)
