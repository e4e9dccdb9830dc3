"""``osmosis-reconciler fmt``: configs and generators in the canonical layout.

Table and key order, spacing and quoting change; comments stay, and a file's meaning (its
submit body and digest) never does (``config.fmt``). ``--check`` changes nothing and fails
naming every file that is not formatted (CI, the pre-commit hook). No Platform is read.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.cli.common import Parser, add_common_flags, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Output
from reconciler.errors import UsageError
from reconciler.exit_codes import Ending


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="osmosis-reconciler fmt",
        description="Rewrite configs and generators in the canonical layout (table and key "
        "order, spacing, quoting); comments stay, and a file's meaning (its submit body and "
        "digest) never changes. Default: every *.toml under the benchmarks directory.",
        epilog="exit codes: 0 formatted (with --check: nothing to change); 1 with --check: "
        "some file would change (each is named); 1 on an error",
    )
    add_common_flags(parser)
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories")
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 naming every file that is not formatted (CI, pre-commit)",
    )
    return parser


class _Skipped(Exception):
    """A file ``fmt`` leaves as it is, and why (``error`` when that is a problem)."""

    def __init__(self, shown: str, message: str, *, error: bool) -> None:
        super().__init__(message)
        self.shown = shown
        self.message = message
        self.error = error


def _toml_files(root: Path, paths: Sequence[str], benchmarks: str) -> list[Path | _Skipped]:
    """The files ``fmt`` looks at: each named file, every ``*.toml`` below each named
    directory (default: the benchmarks directory), walked without following a link.

    A symlink is never read through nor written over (issue 36: a committed link to a
    TOML file outside made ``fmt`` copy that file into the repository): one whose target
    stays in the benchmarks directory is skipped (its target is formatted itself), any
    other is an error, as ``osmosis-plan`` refuses it."""
    from reconciler.paths import check_inside

    # Taken as written: a benchmarks directory that is itself a link has no inside.
    bench: str | None = os.path.normpath(root / benchmarks)
    if check_inside(root, benchmarks) is not None:
        bench = None
    chosen = [Path(os.path.abspath(p)) for p in paths] or [root / benchmarks]
    files: list[Path | _Skipped] = []
    for path in chosen:
        shown = os.path.relpath(path, Path.cwd())
        rel = os.path.relpath(path, root)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            message = "is outside the repository; fmt rewrites the repository's files only"
            files.append(_Skipped(shown, message, error=True))
            continue
        problem = check_inside(root, os.path.dirname(rel))
        if problem is not None:  # a link on the way: never walked through
            files.append(_Skipped(shown, f"{problem.path} {problem.message}", error=True))
        elif path.is_symlink():
            files.append(_link(path, bench))
        elif path.is_dir():
            for top, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    found = Path(top) / name
                    if name.startswith(".") or not name.endswith(".toml"):
                        continue
                    files.append(_link(found, bench) if found.is_symlink() else found)
                for name in dirs:
                    if (Path(top) / name).is_symlink():
                        files.append(_link(Path(top) / name, bench))
        elif path.exists():
            files.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory", "name a config or a directory")
    return files


def _link(path: Path, bench: str | None) -> _Skipped:
    from reconciler.paths import describe_link

    shown = os.path.relpath(path, Path.cwd())
    kind, message = describe_link(path)
    real = os.path.realpath(path)
    inside = (
        kind == "ok" and bench is not None and (real == bench or real.startswith(bench + os.sep))
    )
    if inside:
        return _Skipped(shown, f"{message}: skipped, its target is formatted itself", error=False)
    return _Skipped(
        shown,
        f"{message}: not formatted; fmt never reads or writes through a link "
        "(replace it with the file itself)",
        error=True,
    )


def command(args: argparse.Namespace, output: Output) -> Ending:
    import tomllib

    from reconciler.config.fmt import format_text, same_meaning
    from reconciler.config.generator import is_generator
    from reconciler.config.rules import MAX_CONFIG_BYTES
    from reconciler.engine.context import resolve_settings
    from reconciler.paths import read_regular, write_inside

    root = repo_root(args)
    real_root = Path(os.path.realpath(root))
    settings = resolve_settings(root, {})
    files = _toml_files(real_root, args.paths, args.benchmarks or settings.benchmarks)
    changed: list[str] = []
    errors: list[dict[str, Any]] = []
    skipped = 0
    for path in files:
        if isinstance(path, _Skipped):
            if path.error:
                errors.append({"file": path.shown, "message": path.message})
                output.err.write(f"error: {path.shown}: {path.message}\n")
            else:
                skipped += 1
                output.progress(f"{path.shown}: {path.message}")
            continue
        shown = os.path.relpath(path, Path.cwd())
        rel = os.path.relpath(path, real_root)
        try:
            if rel == os.pardir or rel.startswith(os.pardir + os.sep):
                raise UsageError(
                    "is outside the repository; fmt rewrites the repository's files only"
                )
            before = read_regular(
                path, what="config", max_bytes=MAX_CONFIG_BYTES, repo_root=real_root
            ).decode("utf-8")
            after = format_text(before, generator=is_generator(path.name))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, Exception) as exc:
            message = str(exc)
            errors.append({"file": shown, "message": message})
            output.err.write(f"error: {shown}: not formatted: {message}\n")
            continue
        if after == before:
            continue
        if not same_meaning(before, after):
            errors.append({"file": shown, "message": "formatting would change its meaning"})
            output.err.write(
                f"error: {shown}: formatting would change what the file means; left as it "
                "is (please report this)\n"
            )
            continue
        changed.append(shown)
        if args.check:
            output.err.write(f"would reformat {shown}\n")
            continue
        write_inside(real_root, Path(rel).as_posix(), after.encode("utf-8"))
        output.progress(f"reformatted {shown}")
    verb = "would reformat" if args.check else "reformatted"
    return output.present(
        CommandResult(
            Ending.FAILED if errors or (args.check and changed) else Ending.DONE,
            "fmt",
            {"check": args.check, "files": len(files), "changed": changed, "unformattable": errors},
            text=f"{len(changed)} file(s) {verb}, "
            f"{len(files) - len(changed) - len(errors) - skipped} already formatted.\n",
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-reconciler fmt", parser, argv, command)
