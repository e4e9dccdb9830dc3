"""The one error handler of every command (``run_command``).

A command module's ``main(argv)`` is ``run_command(prog, parser, argv, command)``:
``command(args, output)`` does the work and returns how it ended (an ``Ending``); this
module parses the command line, sets up the printer and the logs, catches what the
command raises, and turns the ending into the exit code (``reconciler.exit_codes``).
Known errors (the tree in ``reconciler/errors.py``) end as failed with their message and
hint, ^C and SIGTERM as interrupted, a bug as failed with the traceback in a crash log.
Whatever happens, the ``Output`` prints its document last.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reconciler import __version__, shutdown
from reconciler.cli.output import Output, color_enabled, requested_format
from reconciler.errors import ReconcilerError, file_error
from reconciler.exit_codes import Ending, exit_code
from reconciler.log import configure_logging
from reconciler.redact import redact, register_environment_secrets

Command = Callable[[argparse.Namespace, Output], Ending]
"""A command's work: the parsed flags and the printer in, how it ended out."""


def run_command(
    prog: str,
    make_parser: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str] | None,
    command: Command,
) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run ``command``, return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    register_environment_secrets()
    output = Output(prog, requested_format(argv), out=sys.stdout, err=sys.stderr)
    previous = signal.getsignal(signal.SIGTERM)
    previous_int = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)
        signal.signal(signal.SIGINT, _raise_interrupt)
    shutdown.clear()
    ending = Ending.FAILED
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
        ending = command(args, output)
    except SystemExit as exc:  # --help, --version: argparse printed them
        return exc.code if isinstance(exc.code, int) else 0
    except ReconcilerError as exc:
        output.error(exc)
    except KeyboardInterrupt:
        output.failure("Interrupted", "interrupted; the lockfile holds every action that completed")
        ending = Ending.INTERRUPTED
    except Exception as exc:
        known = file_error(exc)
        if known is not None:
            output.error(known)
        else:
            path = _write_crash_log(prog, output, repo_dir)
            output.failure("InternalError", f"internal error (a bug); details in {path}")
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_int)
    return output.finish(exit_code(ending))


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
