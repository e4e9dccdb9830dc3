"""The authoring verbs of the front door: ``fmt``, ``show`` and ``expand``.

Each is wired like every command (``run_command``: the common flags, one error handler,
``--format json`` prints one document) and reads no Platform.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler.cli.main import _Parser, _root, add_common_flags, run_command
from reconciler.cli.output import CommandResult, Output, issue_to_dict
from reconciler.errors import ConfigError, UsageError

# --------------------------------------------------------------------------- fmt


def fmt_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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


def _fmt(args: argparse.Namespace, output: Output) -> int:
    import tomllib

    from reconciler.config.fmt import format_text, same_meaning
    from reconciler.config.generator import is_generator
    from reconciler.config.rules import MAX_CONFIG_BYTES
    from reconciler.engine.context import resolve_settings
    from reconciler.paths import read_regular, write_inside

    root = _root(args)
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
            1 if errors or (args.check and changed) else 0,
            "fmt",
            {"check": args.check, "files": len(files), "changed": changed, "unformattable": errors},
            text=f"{len(changed)} file(s) {verb}, "
            f"{len(files) - len(changed) - len(errors) - skipped} already formatted.\n",
        )
    )


def fmt_main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-reconciler fmt", fmt_parser, argv, _fmt)


# --------------------------------------------------------------------------- show


def show_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="osmosis-reconciler show",
        description="Print a plan saved by `osmosis-plan --out PLANFILE` exactly as the plan "
        "was printed (same --format, same bytes); no Platform call, no lockfile read.",
    )
    add_common_flags(parser)
    parser.add_argument("planfile", metavar="PLANFILE")
    return parser


def _show(args: argparse.Namespace, output: Output) -> int:
    from reconciler.paths import UnsafeInputError, read_named
    from reconciler.render import (
        parse_saved_plan,
        plan_to_dict,
        render_json,
        render_markdown,
        render_text,
    )

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
    return output.present(CommandResult(0, "plan", plan_to_dict(plan), text=text))


def show_main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-reconciler show", show_parser, argv, _show)


# --------------------------------------------------------------------------- expand


def expand_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="osmosis-reconciler expand",
        description="Print (or write) the configs a generator (*.matrix.toml) expands to: "
        "each one a plain Osmosis config that `osmosis benchmark submit` accepts. Text is "
        "TOML (one file after another); --format json is one document.",
    )
    add_common_flags(parser)
    parser.add_argument("file", metavar="FILE", help="a *.matrix.toml generator")
    parser.add_argument("--cell", metavar="ADDR", help="only this address (or address glob)")
    parser.add_argument(
        "--write",
        metavar="DIR",
        help="write each config to DIR/<address>.toml instead of printing it",
    )
    return parser


CANONICAL_TABLES = ("experiment", "tasks", "agents", "execution", "verifier", "secrets", "env")


def expanded_toml(config: dict[str, Any], header: Sequence[str]) -> str:
    """One expanded config as TOML: the comment header, then its tables in canonical order."""
    import tomlkit

    document = tomlkit.document()
    for line in header:
        document.add(tomlkit.comment(line))
    ordered = {k: config[k] for k in CANONICAL_TABLES if k in config}
    ordered.update({k: v for k, v in config.items() if k not in ordered})
    document.update(ordered)
    return tomlkit.dumps(document)


def _expand(args: argparse.Namespace, output: Output) -> int:
    from reconciler.config.discover import Found
    from reconciler.config.generator import is_generator
    from reconciler.config.load import expand_file
    from reconciler.engine.context import resolve_settings
    from reconciler.model import glob_match
    from reconciler.paths import check_inside, write_named

    root = Path(os.path.realpath(_root(args)))
    settings = resolve_settings(root, {})
    benchmarks = Path(os.path.normpath(root / (args.benchmarks or settings.benchmarks)))
    # Taken as written, never resolved: a link on the way is refused below, not followed
    # (a `benchmarks` link made a generator elsewhere look like one of the repository's).
    path = Path(os.path.abspath(args.file))
    if not is_generator(path.name):
        raise UsageError(
            f"{args.file}: not a generator (generators are named *.matrix.toml)",
            "a plain config is already what it submits",
        )
    try:
        address = path.relative_to(benchmarks).as_posix()[: -len(".toml")]
        relpath = path.relative_to(root).as_posix()
    except ValueError as exc:
        raise UsageError(
            f"{args.file}: not under the benchmarks directory {benchmarks}",
            "a generator's addresses come from its place under benchmarks/",
        ) from exc
    problem = check_inside(root, relpath, last_is_file=True)
    if problem is not None:
        raise UsageError(
            f"{args.file}: {problem.path} {problem.message}",
            "keep the generator itself in the benchmarks directory (no links on the way)",
        )
    cells, product, issues = expand_file(Found(address, relpath, str(path)))
    for issue in issues:
        output.issue(issue)
    if product is None:
        raise ConfigError(list(issues))
    chosen = [c for c in cells if args.cell is None or glob_match(c.address, (args.cell,))]
    if args.cell is not None and not chosen:
        raise UsageError(
            f"--cell {args.cell}: no cell of {relpath} has that address",
            "the addresses are: " + ", ".join(c.address for c in cells[:10]),
        )
    documents = []
    texts = []
    for cell in chosen:
        pairs = " ".join(f"{axis}={key}" for axis, key in cell.source.cell.items())
        header = [
            f"generated by osmosis-reconciler from {relpath}",
            f"cell: {pairs} ; address: {cell.address}",
        ]
        text = expanded_toml(cell.config, header)
        texts.append((cell.address, text))
        documents.append(
            {
                "address": cell.address,
                "cell": dict(cell.source.cell),
                "spec_digest": cell.spec_digest,
                "config": cell.config,
                "toml": text,
            }
        )
    written: list[str] = []
    if args.write:
        target = Path(args.write)
        for address, text in texts:
            out_path = target / f"{address}.toml"
            write_named(out_path, text.encode("utf-8"), what="--write")
            written.append(str(out_path))
    body = {
        "generator": relpath,
        "product": product.product_line(),
        "cells": documents,
        "written": written,
        "issues": [issue_to_dict(i) for i in issues],
    }
    shown = (
        f"Wrote {len(written)} config(s) under {args.write}.\n"
        if args.write
        else "\n".join(text for _a, text in texts)
    )
    return output.present(CommandResult(0, "expand", body, text=shown))


def expand_main(argv: Sequence[str] | None = None) -> int:
    return run_command("osmosis-reconciler expand", expand_parser, argv, _expand)
