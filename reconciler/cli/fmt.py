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


def _toml_files(root: Path, paths: Sequence[str], benchmarks: str) -> list[Path]:
    chosen = [Path(p) if Path(p).is_absolute() else Path.cwd() / p for p in paths] or [
        root / benchmarks
    ]
    files: list[Path] = []
    for path in chosen:
        if path.is_dir():
            files.extend(
                p
                for p in sorted(path.rglob("*.toml"))
                if not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        elif path.exists():
            files.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory", "name a config or a directory")
    return files


def command(args: argparse.Namespace, output: Output) -> Ending:
    import tomllib

    from reconciler.config.fmt import format_text, same_meaning
    from reconciler.config.generator import is_generator
    from reconciler.engine.context import resolve_settings

    root = repo_root(args)
    settings = resolve_settings(root, {})
    files = _toml_files(root, args.paths, args.benchmarks or settings.benchmarks)
    changed: list[str] = []
    errors: list[dict[str, Any]] = []
    for path in files:
        shown = os.path.relpath(path, Path.cwd())
        try:
            before = path.read_text(encoding="utf-8")
            after = format_text(before, generator=is_generator(path.name))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, Exception) as exc:
            errors.append({"file": shown, "message": str(exc)})
            output.err.write(f"error: {shown}: not formatted: {exc}\n")
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
        tmp = path.with_name(f".{path.name}.fmt.tmp")
        tmp.write_text(after, encoding="utf-8")
        os.replace(tmp, path)
        output.progress(f"reformatted {shown}")
    verb = "would reformat" if args.check else "reformatted"
    return output.present(
        CommandResult(
            Ending.FAILED if errors or (args.check and changed) else Ending.DONE,
            "fmt",
            {"check": args.check, "files": len(files), "changed": changed, "unformattable": errors},
            text=f"{len(changed)} file(s) {verb}, "
            f"{len(files) - len(changed) - len(errors)} already formatted.\n",
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-reconciler fmt", parser, argv, command)
