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


def _fmt(args: argparse.Namespace, output: Output) -> int:
    import tomllib

    from reconciler.config.fmt import format_text, same_meaning
    from reconciler.config.generator import is_generator
    from reconciler.engine.context import resolve_settings

    root = _root(args)
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
            1 if errors or (args.check and changed) else 0,
            "fmt",
            {"check": args.check, "files": len(files), "changed": changed, "unformattable": errors},
            text=f"{len(changed)} file(s) {verb}, "
            f"{len(files) - len(changed) - len(errors)} already formatted.\n",
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
    from reconciler.engine.saved_plan import parse_saved_plan
    from reconciler.render import plan_to_dict, render_json, render_markdown, render_text

    path = Path(args.planfile)
    try:
        plan = parse_saved_plan(path.read_text(encoding="utf-8"))
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

    root = _root(args)
    settings = resolve_settings(root, {})
    benchmarks = (root / (args.benchmarks or settings.benchmarks)).resolve()
    path = Path(args.file)
    path = (path if path.is_absolute() else Path.cwd() / path).resolve()
    if not is_generator(path.name):
        raise UsageError(
            f"{args.file}: not a generator (generators are named *.matrix.toml)",
            "a plain config is already what it submits",
        )
    try:
        address = path.relative_to(benchmarks).as_posix()[: -len(".toml")]
        relpath = path.relative_to(root.resolve()).as_posix()
    except ValueError as exc:
        raise UsageError(
            f"{args.file}: not under the benchmarks directory {benchmarks}",
            "a generator's addresses come from its place under benchmarks/",
        ) from exc
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
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(text, encoding="utf-8")
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
