"""What every command's parser shares: the argparse that exits 1, the common flags, and the
``Invocation`` built from them.

A command module (``cli/plan.py``, ``cli/apply.py``, ...) builds its parser with
``command_parser`` (or ``Parser`` and ``add_common_flags``), adds its own flags, and hands
``main``'s work to ``cli.error_handler.run_command``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler import __version__
from reconciler.cli.output import FORMATS
from reconciler.errors import UsageError, closest

if TYPE_CHECKING:  # imported lazily at run time: start-up must not pay for them
    from reconciler.engine.context import Invocation

FORMAT_HELP = (
    "output format: text (default), markdown, json (exactly one JSON document on stdout, "
    "errors included) or jsonl (JSON Lines: events as they happen, then that document); "
    "with json/jsonl, text for people and logs go to stderr"
)


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit 1 (design.md: never 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {plain_usage(self, message)}", f"see `{self.prog} --help`")


_EXPLICIT = re.compile(r"^argument (-\w)/[^:]*: ignored explicit argument '(.*)'$")
_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (.*)$")


def plain_usage(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's riddles in plain words: ``-var x=1`` is not "-v with an explicit argument
    'ar'" but an unknown option; an unknown ``--flag`` gets a did-you-mean."""
    options = [o for o in parser._option_string_actions if o.startswith("--")]
    explicit = _EXPLICIT.match(message)
    if explicit:
        word = explicit.group(1) + explicit.group(2)
        close = closest("-" + word, options, 0.75)
        guess = f" (did you mean {close}?)" if close else ""
        return (
            f"unknown option {word}{guess}; long options take two dashes, and the "
            f"single-dash ones are -q and -v"
        )
    unrecognized = _UNRECOGNIZED.match(message)
    words = unrecognized.group(1).split() if unrecognized else []
    if not words and unrecognized:
        return "an empty argument was given (a variable that expanded to nothing?); remove it"
    if words:
        first = words[0]
        if first.startswith("-"):
            close = closest(first.split("=")[0], options)
            if close:
                return f"{message} (did you mean {close}?)"
    return message


def command_parser(prog: str, description: str, epilog: str) -> Parser:
    """A command's parser with the common flags; the command adds its own."""
    parser = Parser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_flags(parser)
    return parser


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every command takes (design.md §4): root, files, Platform, output, logs."""
    parser.add_argument(
        "--dir",
        metavar="PATH",
        help="repository root (default: found from the current directory: the nearest "
        "directory with osmosis.toml, .osmosis.toml or a pyproject.toml with "
        "[tool.osmosis-reconciler], else the git work tree's top level)",
    )
    parser.add_argument(
        "--benchmarks", metavar="DIR", help="configs directory, relative to the root "
        "(default: benchmarks)"
    )  # fmt: skip
    parser.add_argument(
        "--state", metavar="FILE", help="lockfile, relative to the root "
        "(default: state/osmosis.lock)"
    )  # fmt: skip
    parser.add_argument(
        "--platform",
        metavar="URL|local",
        help="Platform URL, or 'local' for the embedded Platform (default: "
        "OSMOSIS_PLATFORM_URL, else the Osmosis Platform when OSMOSIS_TOKEN is set, else local)",
    )
    parser.add_argument(
        "--workspace",
        metavar="NAME",
        help="Platform workspace name (default: OSMOSIS_WORKSPACE, "
        "else the git origin's GitHub owner/repo)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help=FORMAT_HELP)
    parser.add_argument(
        "--no-color",
        action="store_true",
        help="never colour the output (also NO_COLOR=1 or TERM=dumb; FORCE_COLOR=1 colours "
        "output that is not a terminal)",
    )
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        help="log lines on stderr: console or json (default: console on a TTY, json otherwise)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=0,
        help="only results, warnings and errors: no Platform banner, notes, progress or "
        "info logs (the plan and the apply outcomes are still printed)",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logs: -v info, -vv debug"
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}", help="print the version"
    )


def add_selection_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``osmosis-plan`` and ``osmosis-apply`` share: what to plan, and the guards
    a person can lift."""
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="ADDR|GLOB",
        help="only plan these addresses (repeatable; * stays within a path segment, "
        "dir/** matches below dir)",
    )
    parser.add_argument(
        "--replace",
        action="append",
        default=[],
        metavar="ADDR",
        help="re-run this address even though its config is unchanged (repeatable)",
    )
    parser.add_argument(
        "--retry-errored",
        action="append",
        default=[],
        metavar="ADDR|GLOB",
        help="pay for a follow-up run of only the attempts that errored in this address's "
        "ended, downloaded run (repeatable; docs/retrying.md)",
    )
    parser.add_argument(
        "--skip-smoke",
        action="append",
        default=[],
        metavar="ADDR|GLOB",
        help="submit the full run at once, without the smoke stage (repeatable; docs/smoke.md)",
    )
    parser.add_argument(
        "--allow-duplicate",
        action="append",
        default=[],
        metavar="ADDR|GLOB",
        help="pay for a run although an identical active run exists that this repository "
        "has no evidence for (repeatable; docs/paying-once.md)",
    )
    parser.add_argument(
        "--allow-mass-stop",
        action="store_true",
        help="allow a plan that stops more runs than max_stops",
    )
    parser.add_argument(
        "--allow-over-budget",
        action="store_true",
        help="allow a plan that starts more new attempts than max_attempts",
    )
    parser.add_argument(
        "--allow-unestimated",
        action="store_true",
        help="allow a plan with max_cost_usd set to submit configs that have no cost "
        "estimate (no recorded run of their model)",
    )
    parser.add_argument(
        "--allow-foreign-state",
        action="store_true",
        help="use a lockfile that names another repository or replaced the one committed at "
        "HEAD (after a real rename or a deliberate replacement)",
    )


def repo_root(args: argparse.Namespace) -> Path:
    """The repository root: ``--dir``, or found from the current directory."""
    from reconciler.config.project import find_root

    return find_root(Path.cwd(), args.dir)


def invocation(args: argparse.Namespace, root: Path) -> Invocation:
    """What the flags ask of the engine, as a value (the engine never sees ``args``)."""
    from reconciler.engine.context import Invocation

    return Invocation(
        repo_root=root,
        platform=args.platform,
        workspace=args.workspace,
        overrides=overrides(args),
    )


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags set (None where a flag was not given: the settings file's
    value stays)."""
    from reconciler.config.project import parse_download_types

    values: dict[str, Any] = {
        "benchmarks": args.benchmarks,
        "state": args.state,
        "targets": tuple(args.target) or None,
        "replace": tuple(args.replace) or None,
        "skip_smoke": tuple(getattr(args, "skip_smoke", ())) or None,
        "retry_errored": tuple(getattr(args, "retry_errored", ())) or None,
        "allow_duplicate": tuple(getattr(args, "allow_duplicate", ())) or None,
        "allow_mass_stop": args.allow_mass_stop or None,
        "allow_over_budget": args.allow_over_budget or None,
        "allow_unestimated": getattr(args, "allow_unestimated", False) or None,
    }
    if getattr(args, "refresh", None):
        values["refresh"] = args.refresh
    if getattr(args, "download_running", False):
        values["download_running"] = True
    if getattr(args, "show_unmanaged", False):
        values["unmanaged"] = "list"
    if getattr(args, "allow_foreign_state", False):
        values["allow_foreign_state"] = True
    if getattr(args, "parallelism", None) is not None:
        if args.parallelism < 1:
            raise UsageError("--parallelism must be at least 1")
        values["parallelism"] = args.parallelism
    if getattr(args, "download_types", None):
        values["download_types"] = tuple(parse_download_types(args.download_types))
    return values


def command_line() -> str:
    """This process's command line, as a lock holder records it."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300]
