"""The commands: thin shells over the library.

``osmosis-plan`` and ``osmosis-apply`` live here; ``osmosis-import`` and ``osmosis-state``
add their arguments and output in ``cli_import`` / ``cli_state`` and share the common flags
and the one error handler below.

Only this module prints or exits. Exit codes are frozen (design.md §4): see ``EXIT_CODES``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .errors import (
    ConfigError,
    ConfigIssue,
    PolicyError,
    ReconcilerError,
    UsageError,
)
from .log import configure_logging, redact_text

EXIT_CODES = """\
exit codes:
  osmosis-plan   0  success (with --detailed-exitcode: nothing to do and no drift)
                 1  error: invalid config, platform unreachable, policy denied, bad usage
                 2  only with --detailed-exitcode: changes or drift pending
                 4  the plan has blocked items: apply would fail on them (see their fix)
  osmosis-apply  0  everything applied
                 1  nothing applied: error, stale plan, lock held, not approved
                 3  partial: some actions failed; the lockfile holds the ones that succeeded
                130 interrupted (SIGINT/SIGTERM); the lockfile holds what completed
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit 1 (design.md: never 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}", f"see `{self.prog} --help`")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default=".", help="repository root (default: .)")
    parser.add_argument("--benchmarks", help="benchmarks directory (default: benchmarks)")
    parser.add_argument("--state", help="lockfile (default: state/osmosis.lock)")
    parser.add_argument("--platform", help="Platform URL, or 'local' for the embedded Platform")
    parser.add_argument(
        "--workspace",
        help="Platform workspace name (default: OSMOSIS_WORKSPACE, "
        "else the git origin's GitHub owner/repo)",
    )
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--no-color", action="store_true", help="never colour the output")
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        help="default: console on a TTY, json otherwise",
    )
    parser.add_argument("-q", "--quiet", action="count", default=0)
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--allow-foreign-state",
        action="store_true",
        help="use a lockfile that names another repository or replaced the one committed at "
        "HEAD (after a real rename or a deliberate replacement)",
    )


def _plan_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="osmosis-plan",
        description="Show what osmosis-apply would do: diff benchmarks/ against the lockfile "
        "and the Platform's runs.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(parser)
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
        help="record observed statuses in the lockfile; plan nothing else",
    )
    parser.add_argument("--target", action="append", default=[], metavar="ADDR|GLOB")
    parser.add_argument("--replace", action="append", default=[], metavar="ADDR")
    parser.add_argument("--changed-since", metavar="GIT_REV")
    parser.add_argument("--allow-mass-stop", action="store_true")
    parser.add_argument("--allow-over-budget", action="store_true")
    parser.add_argument("--watch", action="store_true", help="re-plan when configs change")
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
        "--show-unmanaged",
        action="store_true",
        help="list the workspace's runs this repository does not manage (lists every run)",
    )
    return parser


def _apply_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="osmosis-apply",
        description="Carry out the plan exactly once per paid action, under a lock.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(parser)
    parser.add_argument("planfile", nargs="?", metavar="PLANFILE")
    parser.add_argument("--auto-approve", action="store_true")
    parser.add_argument("--parallelism", type=int)
    parser.add_argument("--lock-timeout", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--force-unlock", metavar="LOCK_ID")
    parser.add_argument("--wait", action="store_true", help="wait for active runs, then download")
    parser.add_argument("--wait-timeout", type=float, default=3600.0, metavar="SECONDS")
    parser.add_argument("--download-types", metavar="LIST")
    parser.add_argument(
        "--only",
        metavar="KINDS",
        help="perform only these kinds, hold the rest back: submit, replace, stop, forget, "
        "download, adopt, move, refresh (e.g. --only download,refresh never pays)",
    )
    parser.add_argument("--target", action="append", default=[], metavar="ADDR|GLOB")
    parser.add_argument("--replace", action="append", default=[], metavar="ADDR")
    parser.add_argument("--allow-mass-stop", action="store_true")
    parser.add_argument("--allow-over-budget", action="store_true")
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


def _module_parser(prog: str, module: Any) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description=module.DESCRIPTION,
        epilog=module.EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(parser)
    module.add_arguments(parser)
    return parser


# --------------------------------------------------------------------------- entry points


def plan_main(argv: Sequence[str] | None = None) -> int:
    return _run("osmosis-plan", _plan_parser, argv, _plan)


def apply_main(argv: Sequence[str] | None = None) -> int:
    return _run("osmosis-apply", _apply_parser, argv, _apply)


def import_main(argv: Sequence[str] | None = None) -> int:
    from . import cli_import

    return _run(
        "osmosis-import", lambda: _module_parser("osmosis-import", cli_import), argv, cli_import.run
    )


def state_main(argv: Sequence[str] | None = None) -> int:
    from . import cli_state

    return _run(
        "osmosis-state", lambda: _module_parser("osmosis-state", cli_state), argv, cli_state.run
    )


def _run(
    prog: str,
    make_parser: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str] | None,
    command: Callable[[argparse.Namespace, TextIO, TextIO], int],
) -> int:
    """The one error handler: known errors exit 1 (3 is apply's partial), ^C exits 130."""
    out, err = sys.stdout, sys.stderr
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        args = make_parser().parse_args(argv)
        configure_logging(fmt=args.log_format, verbosity=args.verbose - args.quiet, command=prog)
        return command(args, out, err)
    except ConfigError as exc:
        _print_issues(exc.issues, "text", err, github=_on_github())
        _print_error(exc, err)
        return 1
    except ReconcilerError as exc:
        _print_error(exc, err)
        return 1
    except KeyboardInterrupt:
        err.write(f"{prog}: interrupted; the lockfile holds every action that completed\n")
        return 130
    except Exception:
        path = _write_crash_log(prog)
        err.write(f"{prog}: internal error (a bug); details in {path}\n")
        return 1
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def _print_error(exc: ReconcilerError, err: TextIO) -> None:
    err.write(f"Error: {redact_text(exc.message)}\n")
    if exc.hint:
        err.write(f"  {redact_text(exc.hint)}\n")


def _write_crash_log(prog: str) -> str:
    text = redact_text(traceback.format_exc())
    path = Path(os.environ.get("OSMOSIS_CRASH_LOG", ".osmosis/crash.log"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{prog} {__version__}\n{text}", encoding="utf-8")
    except OSError:
        sys.stderr.write(text)
        return "stderr"
    return str(path)


def _on_github() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _color(args: argparse.Namespace, stream: TextIO) -> bool:
    return not args.no_color and "NO_COLOR" not in os.environ and stream.isatty()


# --------------------------------------------------------------------------- validate


def _print_issues(issues: Sequence[ConfigIssue], fmt: str, stream: TextIO, *, github: bool) -> None:
    if fmt == "json":
        payload = [
            {
                "file": i.file,
                "line": i.line,
                "column": i.column,
                "key": i.key,
                "message": i.message,
                "hint": i.hint,
                "severity": i.severity,
            }
            for i in issues
        ]
        stream.write(
            json.dumps(
                {"valid": not any(i.severity == "error" for i in issues), "issues": payload},
                indent=2,
            )
            + "\n"
        )
    else:
        for issue in issues:
            label = "warning" if issue.severity == "warning" else "error"
            stream.write(f"{label}: {issue.render()}\n")
    if github:
        for issue in issues:
            kind = "warning" if issue.severity == "warning" else "error"
            where = f"file={issue.file}"
            if issue.line is not None:
                where += f",line={issue.line}"
                if issue.column is not None:
                    where += f",col={issue.column}"
            text = f"{issue.key}: {issue.message}" if issue.key else issue.message
            if issue.hint:
                text += f" ({issue.hint})"
            stream.write(f"::{kind} {where}::{_gh_escape(text)}\n")


def _gh_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    from .project import parse_download_types

    values: dict[str, Any] = {
        "benchmarks": args.benchmarks,
        "state": args.state,
        "targets": tuple(args.target) or None,
        "replace": tuple(args.replace) or None,
        "allow_mass_stop": args.allow_mass_stop or None,
        "allow_over_budget": args.allow_over_budget or None,
    }
    if getattr(args, "refresh_only", False):
        values["refresh_only"] = True
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


def _validate_only(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .config import load_configs
    from .context import resolve_settings

    root = Path(args.dir).resolve()
    settings = resolve_settings(root, _overrides(args))
    result = load_configs(root, settings.benchmarks)
    _print_issues(
        result.issues,
        args.format if args.format == "json" else "text",
        out if args.format == "json" else err,
        github=_on_github(),
    )
    if not result.ok:
        errors = sum(1 for i in result.issues if i.severity == "error")
        files = len({i.file for i in result.issues if i.severity == "error"})
        err.write(f"{errors} error(s) in {files} of {result.files} config file(s).\n")
        return 1
    if args.format != "json":
        out.write(f"All {result.files} config file(s) are valid.\n")
    return 0


# --------------------------------------------------------------------------- plan


def _plan(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.validate_only:
        return _validate_only(args, out, err)
    from .session import Session

    with Session.open(args, _overrides(args), err) as session:
        if args.watch:
            from .watch import watch_plans

            return watch_plans(session, args, out)
        if args.refresh_only:
            session.refresh_only(out)
            plan = session.make_plan(changed_since=args.changed_since)
        else:
            plan = session.make_plan(changed_since=args.changed_since)
        out.write(session.render(plan, args.format, color=_color(args, out)))
        if args.out:
            session.save_plan(plan, Path(args.out))
            err.write(f"Saved the plan to {args.out}. Apply it with: osmosis-apply {args.out}\n")
        if plan.errors:
            raise PolicyError(
                "; ".join(plan.errors), "re-run with the flag named above if this is intended"
            )
        if plan.summary.blocked:
            return 4
        if args.detailed_exitcode and plan.has_changes:
            return 2
        return 0


# --------------------------------------------------------------------------- apply


def _apply(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .session import Session

    if args.force_unlock:
        root = Path(args.dir).resolve()
        from .context import resolve_settings
        from .gitlock import force_unlock_any

        settings = resolve_settings(root, _overrides(args))
        where = force_unlock_any(
            root, (root / settings.state).parent / ".osmosis.lock.held", args.force_unlock, settings
        )
        err.write(f"Released the apply lock {args.force_unlock} ({where}).\n")
        return 0
    from .restrict import REFRESH, parse_only, restrict_plan

    only = parse_only(args.only) if args.only is not None else None
    if only is not None and args.wait and "download" not in only:
        raise UsageError("--wait downloads the runs it waited for: add download to --only")
    with ExitStack() as stack:
        session = stack.enter_context(Session.open(args, _overrides(args), err))
        stack.enter_context(session.hold_lock(timeout=args.lock_timeout, command=_command_line()))
        if args.planfile:
            plan = session.load_saved_plan(Path(args.planfile))
            if only is not None:
                plan = restrict_plan(plan, only)
        else:
            plan = session.make_plan()
            if only is not None:
                plan = restrict_plan(plan, only)
            out.write(session.render(plan, args.format, color=_color(args, out)))
            if plan.errors:
                raise PolicyError(
                    "; ".join(plan.errors), "re-run with the flag named above if this is intended"
                )
            if plan.is_empty and not args.wait and not (only and REFRESH in only):
                return 0
            if not plan.is_empty and not args.auto_approve:
                if not sys.stdin.isatty():
                    raise UsageError(
                        "refusing to apply without approval: no terminal to ask on",
                        "pass --auto-approve, or save a plan with `osmosis-plan --out FILE` "
                        "and run `osmosis-apply FILE`",
                    )
                out.write(
                    "\nDo you want to perform these actions? Only 'yes' will be accepted.\n"
                    "  Enter a value: "
                )
                out.flush()
                if sys.stdin.readline().strip() != "yes":
                    err.write("Apply cancelled.\n")
                    return 1
        result = session.apply(plan, out=out, wait=args.wait, wait_timeout=args.wait_timeout)
        return session.exit_code(result)


def _command_line() -> str:
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(plan_main())
