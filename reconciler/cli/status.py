"""``osmosis-reconciler status``: one table, one row per address.

The recorded run and its status, whether its outputs are downloaded, the accepted baseline
and the newest run's verdict against it, what a plan would do now and why an address is
blocked (``engine.status``). Reads the Platform as ``osmosis-plan`` does; writes nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from reconciler.cli.common import Parser, add_common_flags, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Output
from reconciler.exit_codes import Ending

PROG = "osmosis-reconciler status"


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Where every address stands, one row each: the recorded run and its "
        "status, downloaded or not, the accepted baseline and the newest run's verdict "
        "against it, what a plan would do now, and why an address is blocked. Reads the "
        "Platform as osmosis-plan does; writes nothing.",
        epilog="exit codes: 0 shown; 1 on an error (an invalid config, an unreachable Platform)",
    )
    add_common_flags(parser)
    return parser


def command(args: argparse.Namespace, output: Output) -> Ending:
    from reconciler.engine.context import Invocation
    from reconciler.engine.load import open_command
    from reconciler.engine.status import status
    from reconciler.render.status import (
        render_status_markdown,
        render_status_text,
        status_to_dict,
    )

    root = repo_root(args)
    overrides = {"benchmarks": args.benchmarks, "state": args.state}
    with open_command(Invocation(root, args.platform, args.workspace, overrides), output) as ctx:
        report = status(ctx, output)
    if args.format == "markdown":
        text = render_status_markdown(report.rows)
    else:
        header = (
            f"Osmosis status · workspace {report.workspace} · platform {report.platform} · "
            f"lockfile serial {report.serial if report.serial is not None else 0}\n\n"
        )
        text = header + render_status_text(report.rows)
    body = status_to_dict(report.rows, platform=report.platform, workspace=report.workspace)
    return output.present(CommandResult(Ending.DONE, "status", body, text=text))


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, parser, argv, command)
