"""``osmosis-reconciler init``: set a repository up to use the tool, in one command.

Writes what ``reconciler.scaffold`` holds (``.gitignore`` lines, a commented
``osmosis.toml``, the four workflows pinned to the running release or commit, one example
config), never overwriting a file that differs unless ``--force``, and prints the next three
commands. Reads no Platform and no lockfile.
"""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Sequence
from pathlib import Path

from reconciler.cli.common import Parser, add_common_flags
from reconciler.cli.error_handler import run_command
from reconciler.cli.output import CommandResult, Output
from reconciler.errors import UsageError
from reconciler.exit_codes import Ending

PROG = "osmosis-reconciler init"


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Set this repository up: .gitignore (keeps .osmosis/ out of git), a "
        "commented osmosis.toml, the plan/apply/collect/drift workflows pinned to this "
        "installation's release or commit, and one example config. Files that exist with "
        "other content are kept (--force overwrites them); running it again changes nothing.",
        epilog="exit codes: 0 done (also when files were kept); 1 on an error",
    )
    add_common_flags(parser)
    parser.add_argument(
        "--force", action="store_true", help="overwrite files that differ from what init writes"
    )
    parser.add_argument(
        "--ref",
        metavar="TAG_OR_COMMIT",
        help="pin the workflows' action to this tag or full commit sha (default: the release "
        "or commit this installation came from)",
    )
    return parser


def _root(args: argparse.Namespace) -> Path:
    if args.dir:
        return Path(args.dir).resolve()
    done = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False
    )
    top = done.stdout.strip()
    return Path(top) if done.returncode == 0 and top else Path.cwd()


def _is_git_repo(root: Path) -> bool:
    done = subprocess.run(
        ["git", "rev-parse", "--is-inside-work-tree"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0 and done.stdout.strip() == "true"


def _pin(args: argparse.Namespace) -> tuple[str, str]:
    from reconciler import __version__
    from reconciler.scaffold.pin import FULL_SHA, RELEASE, running_pin

    if args.ref:
        ref = args.ref.strip()
        if not (FULL_SHA.fullmatch(ref) or ref.startswith("v") and RELEASE.fullmatch(ref[1:])):
            raise UsageError(
                f"--ref {ref!r}: GitHub pins an action to a release tag (v1.2.3) or a full "
                "40-digit commit sha",
                "give the tag or `git rev-parse REF` of the commit",
            )
        return ref, "--ref"
    package_dir = Path(__file__).resolve().parents[1]
    pin = running_pin(__version__, package_dir)
    if pin is None:
        raise UsageError(
            f"cannot tell which release or commit this installation ({__version__}) is, so "
            "the workflows cannot be pinned to it",
            "pass --ref TAG_OR_COMMIT (a release tag, or the full sha of the commit you "
            "installed), or install from the git URL pinned to a commit (docs/authoring.md)",
        )
    return pin.ref, pin.source


def next_commands(root: Path, is_repo: bool) -> list[str]:
    """The three commands that follow init (the first commits what init wrote)."""
    commit = 'git add -A && git commit -m "Adopt osmosis-reconciler"'
    first = commit if is_repo else f"git init -b main && {commit}"
    return [
        first,
        "echo local-only | osmosis-platform-emulator secret set OPENAI_API_KEY --scope workspace",
        "osmosis-plan",
    ]


def command(args: argparse.Namespace, output: Output) -> Ending:
    from reconciler.scaffold import Outcome, scaffold_files, write_scaffold

    root = _root(args)
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory", "create it, or pass --dir")
    ref, source = _pin(args)
    is_repo = _is_git_repo(root)
    written = write_scaffold(
        root, scaffold_files(ref, args.benchmarks or "benchmarks"), force=args.force
    )
    lines = []
    for item in written:
        note = f" ({item.note})" if item.note else ""
        lines.append(f"{item.outcome.value:<11} {item.path}{note}")
    commands = next_commands(root, is_repo)
    lines += [
        "",
        f"The workflows pin osmosis-ai/osmosis-reconciler@{ref} ({source}).",
        "",
        "Next:",
        *(f"  {line}" for line in commands),
        "",
        "Then, for CI: add the repository secret OSMOSIS_TOKEN (docs/ci.md).",
    ]
    kept = [item.path for item in written if item.outcome is Outcome.KEPT]
    document = {
        "root": str(root),
        "ref": ref,
        "ref_source": source,
        "files": [
            {"path": item.path, "outcome": item.outcome.value, "note": item.note}
            for item in written
        ],
        "kept": kept,
        "next": commands,
    }
    return output.present(
        CommandResult(Ending.DONE, "init", document, text="\n".join(lines) + "\n")
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(PROG, parser, argv, command)
