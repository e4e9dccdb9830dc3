"""The commands: thin shells over the library.

``osmosis-plan`` and ``osmosis-apply`` live here; ``osmosis-import`` and ``osmosis-state``
add their arguments and results in ``cli.importing`` / ``cli.state`` and share the common
flags, the one printer and the one error handler below.

Only this module exits, and everything it prints goes through one ``output.Output`` (text,
one JSON document, or JSON Lines). Exit codes are frozen (design.md §4): see ``EXIT_CODES``.

A new command (``osmosis-state``, ``osmosis-import``, ...) is wired the same way: a parser
with ``add_common_flags``, an entry point ``run_command(prog, make_parser, argv, command)``
where ``command(args, output)`` hands its ``CommandResult`` (exit code, document type and
body, text for people) to ``output.present``, the one printer, and returns the exit code
(``osmosis-apply`` reports as it goes through its ``ApplyReport`` on the same ``Output``);
errors are raised from the error tree and the one handler here turns them into stderr text
and an ``error`` document. Then add the document type to
``reconciler/schema/output.schema.json`` and one row to
``tests/integration/test_machine_output.py``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from reconciler import __version__, numbers, shutdown
from reconciler.cli.output import (
    FORMATS,
    CommandResult,
    Diagnostic,
    Output,
    color_enabled,
    issue_to_dict,
    requested_format,
)
from reconciler.errors import PolicyError, ReconcilerError, UsageError, closest, file_error
from reconciler.escaping import escape_text
from reconciler.log import configure_logging
from reconciler.redact import redact, register_environment_secrets

if TYPE_CHECKING:  # imported lazily at run time: start-up must not pay for them
    from reconciler.engine.apply_result import ApplyResult
    from reconciler.engine.context import Invocation
    from reconciler.engine.session import Session
    from reconciler.engine.snapshots import Snapshots

EXIT_WAIT_TIMEOUT = 4
"""osmosis-apply --wait ran out while runs were still active (design.md §4: a new outcome)."""
EXIT_BLOCKED = 4
"""osmosis-plan: the plan has blocked items; apply would fail on them (a new outcome)."""

EXIT_CODES = """\
exit codes:
  osmosis-plan   0  success (with --detailed-exitcode: nothing to do and no drift)
                 1  error: invalid config, platform unreachable, policy denied, bad usage
                 2  only with --detailed-exitcode: changes or drift pending (with
                    --refresh-only: changes to record or drift)
                 4  the plan has blocked items: apply would fail on them (each says its
                    fix); checked before --detailed-exitcode's 2
  osmosis-apply  0  everything applied (with --wait: every run ended and was downloaded)
                 1  nothing applied: error, stale plan, lock held, not approved, bad usage
                 3  partial: some actions failed; the lockfile holds the ones that succeeded
                 4  only with --wait: everything applied, but the wait ran out while runs
                    were still active; the lockfile records what was done (apply --wait
                    again to download them once they end)
  both         130  interrupted (SIGINT/SIGTERM); the lockfile holds what completed
"""

FORMAT_HELP = (
    "output format: text (default), markdown, json (exactly one JSON document on stdout, "
    "errors included) or jsonl (JSON Lines: events as they happen, then that document); "
    "with json/jsonl, text for people and logs go to stderr"
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit 1 (design.md: never 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {_plain_usage(self, message)}", f"see `{self.prog} --help`")


_EXPLICIT = re.compile(r"^argument (-\w)/[^:]*: ignored explicit argument '(.*)'$")
_UNRECOGNIZED = re.compile(r"^unrecognized arguments: (.*)$")


def _plain_usage(parser: argparse.ArgumentParser, message: str) -> str:
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


def _selection(parser: argparse.ArgumentParser) -> None:
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
        "--skip-smoke",
        action="append",
        default=[],
        metavar="ADDR|GLOB",
        help="submit the full run at once, without the smoke stage (repeatable; docs/smoke.md)",
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


def _plan_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="osmosis-plan",
        description="Show what osmosis-apply would do: diff benchmarks/ against the lockfile "
        "and the Platform's runs. Never writes the lockfile.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_flags(parser)
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
    _selection(parser)
    parser.add_argument(
        "--changed-since",
        metavar="GIT_REV",
        help="only plan the configs changed since this git revision (a PR's base)",
    )
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
    add_common_flags(parser)
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
        help=f"give up waiting after this long and exit {EXIT_WAIT_TIMEOUT} (default: 3600)",
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
        "download, adopt, move, refresh (e.g. --only download,refresh never pays)",
    )
    _selection(parser)
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
    add_common_flags(parser)
    module.add_arguments(parser)
    return parser


# --------------------------------------------------------------------------- entry points


def plan_main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-plan", _plan_parser, argv, _plan)


def apply_main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-apply", _apply_parser, argv, _apply)


def import_main(argv: Sequence[str] | None = None) -> int:
    from reconciler.cli import importing as cli_import

    return run_command(
        "osmosis-import",
        lambda: _module_parser("osmosis-import", cli_import),
        argv,
        _printed(cli_import.run),
    )


def state_main(argv: Sequence[str] | None = None) -> int:
    from reconciler.cli import state as cli_state

    return run_command(
        "osmosis-state",
        lambda: _module_parser("osmosis-state", cli_state),
        argv,
        _printed(cli_state.run),
    )


def _printed(
    run: Callable[[argparse.Namespace, TextIO], CommandResult],
) -> Callable[[argparse.Namespace, Output], int]:
    """A command that returns a ``CommandResult``, wired to the one printer."""

    def command(args: argparse.Namespace, output: Output) -> int:
        if getattr(args, "dir", None) is None:
            args.dir = str(_root(args))
        result = run(args, output.err)
        _diagnose_refusals(result, output)
        return output.present(result)

    return command


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


def run_command(
    prog: str,
    make_parser: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str] | None,
    command: Callable[[argparse.Namespace, Output], int],
) -> int:
    """The one error handler of every command.

    Known errors exit 1 (apply's partial is 3, its wait timeout 4), ^C and SIGTERM 130, a
    bug 1 with a crash log. Whatever happens, the ``Output`` prints its document last.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    register_environment_secrets()
    output = Output(prog, requested_format(argv), out=sys.stdout, err=sys.stderr)
    previous = signal.getsignal(signal.SIGTERM)
    previous_int = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)
        signal.signal(signal.SIGINT, _raise_interrupt)
    shutdown.clear()
    code = 1
    repo_dir: str | None = None
    try:
        args = make_parser().parse_args(argv)
        repo_dir = getattr(args, "dir", None)
        color = color_enabled(args.no_color, sys.stdout)
        output.configure(fmt=args.format, quiet=args.quiet > 0, color=color)
        configure_logging(
            fmt=args.log_format,
            verbosity=args.verbose - args.quiet,
            command=prog,
            color=color_enabled(args.no_color, sys.stderr),
        )
        code = command(args, output)
    except SystemExit as exc:  # --help, --version: argparse printed them
        return exc.code if isinstance(exc.code, int) else 0
    except ReconcilerError as exc:
        output.error(exc)
        code = 1
    except KeyboardInterrupt:
        output.failure("Interrupted", "interrupted; the lockfile holds every action that completed")
        code = 130
    except Exception as exc:
        known = file_error(exc)
        if known is not None:
            output.error(known)
        else:
            path = _write_crash_log(prog, output, repo_dir)
            output.failure("InternalError", f"internal error (a bug); details in {path}")
        code = 1
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_int)
    return output.finish(code)


def _raise_interrupt(_signum: int, _frame: Any) -> None:
    # Worker threads cannot receive the signal: the flag ends their network waits.
    shutdown.begin()
    raise KeyboardInterrupt


def _write_crash_log(prog: str, output: Output, repo_dir: str | None = None) -> str:
    """The traceback in the repository's (``--dir``'s) ``.osmosis/crash.log``; where it went."""
    from reconciler.paths import check_inside

    text = redact(traceback.format_exc())
    root = _crash_root(repo_dir)
    override = os.environ.get("OSMOSIS_CRASH_LOG")
    path = Path(override) if override else root / ".osmosis" / "crash.log"
    if not override and check_inside(root, ".osmosis/crash.log", last_is_file=True):
        output.err.write(text)  # .osmosis is a symlink (or worse): never write through it
        return "stderr"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{prog} {__version__}\n{text}", encoding="utf-8")
    except OSError:
        output.err.write(text)
        return "stderr"
    return str(path)


def _crash_root(repo_dir: str | None = None) -> Path:
    # Beside the repository's other local files (--dir's when given), never in the directory
    # the command was started from (a crash in benchmarks/ must not create benchmarks/.osmosis/).
    from reconciler.config.project import find_root

    try:
        return find_root(Path.cwd(), repo_dir).resolve()
    except (ReconcilerError, OSError):
        return Path(repo_dir or Path.cwd()).resolve()


def _root(args: argparse.Namespace) -> Path:
    from reconciler.config.project import find_root

    return find_root(Path.cwd(), args.dir)


# --------------------------------------------------------------------------- validate


def _invocation(args: argparse.Namespace, root: Path) -> Invocation:
    """What the flags ask of the engine, as a value (the engine never sees ``args``)."""
    from reconciler.engine.context import Invocation

    return Invocation(
        repo_root=root,
        platform=args.platform,
        workspace=args.workspace,
        overrides=_overrides(args),
    )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    from reconciler.config.project import parse_download_types

    values: dict[str, Any] = {
        "benchmarks": args.benchmarks,
        "state": args.state,
        "targets": tuple(args.target) or None,
        "replace": tuple(args.replace) or None,
        "skip_smoke": tuple(getattr(args, "skip_smoke", ())) or None,
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


def _validate_only(args: argparse.Namespace, root: Path, output: Output) -> int:
    from reconciler.config import load_configs
    from reconciler.engine.context import resolve_settings

    settings = resolve_settings(root, _overrides(args))
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
        return output.present(CommandResult(1, "validation", body))
    return output.present(
        CommandResult(0, "validation", body, text=f"All {result.files} config file(s) are valid.\n")
    )


# --------------------------------------------------------------------------- plan


def _plan(args: argparse.Namespace, output: Output) -> int:
    if args.refresh_only and (args.out or args.watch):
        flag = "--out" if args.out else "--watch"
        raise UsageError(
            f"--refresh-only cannot be combined with {flag}",
            "a refresh-only plan is recorded with `osmosis-apply --refresh-only`",
        )
    root = _root(args)
    if args.validate_only:
        return _validate_only(args, root, output)
    from reconciler.engine.session import Session

    with Session.open(_invocation(args, root), output) as session:
        if args.watch:
            from reconciler.cli.watch import watch_plans

            return watch_plans(session, args, output)
        if args.refresh_only:
            return _refresh(session, args, output, record=False)
        plan, _snapshots = session.make_plan(changed_since=args.changed_since)
        from reconciler.render import plan_to_dict

        if plan.errors:
            code = 1
        elif plan.summary.blocked:
            code = EXIT_BLOCKED
        else:
            code = 2 if args.detailed_exitcode and plan.has_changes else 0
        text = session.render(plan, args.format, color=output.color)
        output.present(CommandResult(code, "plan", plan_to_dict(plan), text=text))
        if args.out:
            session.save_plan(plan, Path(args.out))
            output.info(f"Saved the plan to {args.out}. Apply it with: osmosis-apply {args.out}")
        if plan.errors:
            _policy_errors(plan.errors, output)
        elif plan.summary.blocked:
            _blocked(plan, output)
        return code


def _blocked(plan: Any, output: Output) -> None:
    """Blocked items fail the plan (exit 4): the plan shows each with its fix; scripts get
    a diagnostic per item (and, in the JSON modes, people read them on stderr)."""
    from reconciler.cli.output import Diagnostic
    from reconciler.model import Action

    for item in plan.items:
        if item.action is not Action.BLOCKED:
            continue
        message = (
            f"{item.address} (blocked): {item.details[0] if item.details else item.reason.value}"
        )
        fix = next((d for d in item.details if d.startswith("fix:")), None)
        if output.machine:
            output.err.write(f"Error: {message}\n" + (f"  {fix}\n" if fix else ""))
        output.diagnose(Diagnostic("error", "Blocked", message, fix))


def _policy_errors(errors: Sequence[str], output: Output) -> None:
    """A guard's refusal: the plan shows it, so it is printed again only for scripts."""
    for error in errors:
        output.error(
            PolicyError(error, "re-run with the flag named above if this is intended"), shown=True
        )


def _refresh(session: Session, args: argparse.Namespace, output: Output, *, record: bool) -> int:
    from reconciler.render import refresh_to_dict, render_refresh_markdown, render_refresh_text

    plan, changes = session.refresh(record=record)
    pending = len(plan.items)
    body = refresh_to_dict(plan, changes, recorded=record and bool(changes), pending=pending)
    if args.format == "markdown":
        text = render_refresh_markdown(plan, changes, recorded=record, pending=pending)
    else:
        text = render_refresh_text(
            plan,
            changes,
            recorded=record,
            pending=pending,
            state_path=session.ctx.settings.state,
            color=output.color,
        )
    code = 2 if getattr(args, "detailed_exitcode", False) and (changes or plan.drift) else 0
    return output.present(CommandResult(code, "refresh", body, text=text))


# --------------------------------------------------------------------------- apply


def _apply(args: argparse.Namespace, output: Output) -> int:
    from reconciler.cli.output import ApplyReport
    from reconciler.engine.session import Session
    from reconciler.render import plan_to_dict

    if args.refresh_only and args.planfile:
        raise UsageError(
            "--refresh-only takes no PLANFILE", "run `osmosis-apply --refresh-only` alone"
        )
    root = _root(args)
    if args.force_unlock:
        from reconciler.engine.context import resolve_settings
        from reconciler.state.gitlock import force_unlock_any

        settings = resolve_settings(root, _overrides(args))
        from reconciler.state.locking import machine_lock_dir

        clone_lock = (root / settings.state).parent / ".osmosis.lock.held"
        machine_locks = sorted(machine_lock_dir().glob("*.held"))
        where = force_unlock_any(root, [clone_lock, *machine_locks], args.force_unlock)
        output.info(f"Released the apply lock {args.force_unlock} ({where}).")
        body = {"lock_id": args.force_unlock, "released": True}
        return output.present(CommandResult(0, "unlock", body))
    from reconciler.plan.restrict import REFRESH, parse_only, restrict_plan

    only = parse_only(args.only) if args.only is not None else None
    if only is not None and args.wait and "download" not in only:
        raise UsageError("--wait downloads the runs it waited for: add download to --only")
    with ExitStack() as stack:
        session = stack.enter_context(Session.open(_invocation(args, root), output))
        stack.enter_context(session.hold_lock(timeout=args.lock_timeout, command=_command_line()))
        if args.refresh_only:
            return _refresh(session, args, output, record=True)
        report = ApplyReport(output)
        if args.planfile:
            # Re-observed (design.md §7.2): statuses that changed since the plan was made are
            # recorded before acting (a run that ended meanwhile downloads as ended), and
            # only the saved items the plan recomputed now still holds are carried out.
            saved, snapshots = session.load_saved_plan(Path(args.planfile))
            from reconciler.plan.recheck import still_planned

            plan = still_planned(saved, session.plan(snapshots))
            if only is not None:
                plan = restrict_plan(plan, only)
        else:
            plan, snapshots = session.make_plan()
            if only is not None:
                plan = restrict_plan(plan, only)
            output.show(session.render(plan, args.format, color=output.color))
        report.planned(plan, plan_to_dict(plan))
        if plan.errors:
            _policy_errors(plan.errors, output)
            return 1
        if plan.is_empty and not args.wait and not (only and REFRESH in only):
            return 0
        # A saved plan was reviewed when it was made: applying it is the approval.
        if not args.planfile and not plan.is_empty and not args.auto_approve:
            if not sys.stdin.isatty():
                raise UsageError(
                    "refusing to apply without approval: no terminal to ask on",
                    "pass --auto-approve, or save a plan with `osmosis-plan --out FILE` "
                    "and run `osmosis-apply FILE`",
                )
            output.prompt(
                "\nDo you want to perform these actions? Only 'yes' will be accepted.\n"
                "  Enter a value: "
            )
            if sys.stdin.readline().strip() != "yes":
                raise UsageError("Apply cancelled: the answer was not 'yes'")
        result = session.apply(
            plan, snapshots, report=report, wait=args.wait, wait_timeout=args.wait_timeout
        )
        if args.wait and not output.machine:
            _show_downloaded_results(session, snapshots, result, output)
        if result.unsuccessful and not output.machine:
            _explain_unsuccessful(session, result, output)
        return session.exit_code(result)


def _explain_unsuccessful(session: Session, result: ApplyResult, output: Output) -> None:
    """A run that ended failed or stopped: its last error lines, and how to see the rest."""
    from reconciler.cli.logs import explain_failures

    runs = [(r.address, r.run_id, r.run_name or r.run_id) for r in result.unsuccessful if r.run_id]
    for line in explain_failures(session.ctx.client, runs):
        output.progress(line, essential=True)


def _show_downloaded_results(
    session: Session, snapshots: Snapshots, result: ApplyResult, output: Output
) -> None:
    """After ``--wait``: the results table (the plan's) of the runs this apply downloaded,
    from the lockfile as the apply left it."""
    from reconciler.model import Action
    from reconciler.plan.results import result_rows
    from reconciler.render import render_results_text
    from reconciler.state.lockfile import read_lockfile

    downloaded = tuple(
        sorted(
            {o.item.address for o in result.outcomes if o.ok and o.item.action is Action.DOWNLOAD}
        )
    )
    if not downloaded:
        return
    state = read_lockfile(session.ctx.state_path, platform=None, workspace=None)
    rows = result_rows(state, downloaded, snapshots.observation.benchmarks.values())
    text = render_results_text(rows)
    if text:
        output.show("\n" + text)


def _command_line() -> str:
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(plan_main())
