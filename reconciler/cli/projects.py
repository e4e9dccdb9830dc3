"""The root of many projects on the command line: ``osmosis-plan`` and ``osmosis-apply``
run here (``root_command``) when the root's settings file lists ``projects``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from reconciler.errors import UsageError
from reconciler.exit_codes import Ending
from reconciler.projects.discover import Root, load_root, root_globs

_ROOT_ONLY = ("all", "project", "emit_matrix", "failed")
_FLAG_NAMES = {
    "all": "--all",
    "project": "--project",
    "emit_matrix": "--emit-matrix",
    "failed": "--failed",
}
_ENDINGS = {
    0: Ending.DONE,
    1: Ending.FAILED,
    2: Ending.PENDING,
    3: Ending.PARTIAL,
    4: Ending.BLOCKED,
}


def add_root_flags(parser: argparse.ArgumentParser, *, command: str) -> None:
    """The flags of a root of many projects (docs/projects.md)."""
    group = parser.add_argument_group("a root of many projects (docs/projects.md)")
    group.add_argument("--all", action="store_true", help="every project (the default)")
    group.add_argument(
        "--project",
        action="append",
        default=[],
        metavar="ID",
        help="only this project (repeatable)",
    )
    if command == "plan":
        group.add_argument(
            "--parallelism",
            type=int,
            metavar="N",
            help="projects planned at once (default: 8)",
        )
        group.add_argument(
            "--emit-matrix",
            action="store_true",
            help="print the selected projects as a GitHub Actions matrix and exit",
        )
    else:
        group.add_argument(
            "--changed-since",
            metavar="GIT_REV",
            help="only the projects whose inputs changed since this git revision",
        )
        group.add_argument(
            "--failed",
            action="store_true",
            help="only the projects the applies at the root left undone (failed or skipped)",
        )


def root_of(root: Path) -> Root | None:
    """The root's projects, or None in a repository of one project (or inside one)."""
    return load_root(root) if root_globs(root) else None


def refuse_root_flags(args: argparse.Namespace, command: str) -> None:
    """Inside a project (or a repository of one), the root's flags are an error."""
    for name in _ROOT_ONLY:
        if getattr(args, name, None):
            raise UsageError(
                f"{_FLAG_NAMES[name]} selects projects, and this repository has none",
                "run it at a root whose settings file lists projects = [...] (docs/projects.md)",
            )
    if command == "apply" and getattr(args, "changed_since", None):
        raise UsageError(
            "osmosis-apply --changed-since selects projects, and this repository has none",
            "use osmosis-plan --changed-since REF to plan the changed configs",
        )


def root_command(root: Root, args: argparse.Namespace, output: Any, command: str) -> Ending:
    """Select the projects, run the command for each, print one result for them all."""
    from reconciler.cli.output import CommandResult
    from reconciler.gitinfo import GitRepo
    from reconciler.projects import render, run
    from reconciler.projects.select import select

    for name in ("out", "watch", "refresh_only", "validate_only", "planfile", "force_unlock"):
        if getattr(args, name, None):
            flag = "PLANFILE" if name == "planfile" else "--" + name.replace("_", "-")
            raise UsageError(
                f"{flag} works on one project, and {root.settings_file} here lists projects",
                "run it inside the project's directory (or with --dir DIR)",
            )
    if args.all and (args.project or args.changed_since or getattr(args, "failed", False)):
        raise UsageError("--all cannot be combined with --project, --changed-since or --failed")
    changed = None
    git = None
    if args.changed_since:
        git = GitRepo.discover(root.path)
        if git is None:
            raise UsageError("--changed-since needs a git repository")
        relative = (
            _relative(git.root, root.path, p) for p in git.changed_since(args.changed_since)
        )
        changed = {p for p in relative if p is not None}
    failed = None
    if getattr(args, "failed", False):
        failed = run.last_undone(root.path)
        if failed is None:
            raise UsageError(
                f"--failed: no apply at the root recorded in {run.LAST_APPLY}",
                "run osmosis-apply --all first",
            )
    root_keys = None
    if changed is not None and git is not None and root.settings_file in changed:
        root_keys = root_keys_changed(root, git, args.changed_since)
    selected = select(
        root, ids=tuple(args.project), changed=changed, failed=failed, root_keys=root_keys
    )
    if changed is not None and git is not None and not getattr(args, "emit_matrix", False):
        # A matrix job checks out the new tree, where a deleted project is gone: removals
        # are planned and applied at the root (docs/projects.md).
        selected += _removed(root, git, args.changed_since)
    if getattr(args, "emit_matrix", False):
        import json

        sys.stdout.write(json.dumps(render.matrix(selected), separators=(",", ":")) + "\n")
        return Ending.DONE
    if command == "apply" and not args.auto_approve:
        raise UsageError(
            "osmosis-apply at a root of many projects runs each project without a terminal",
            "review osmosis-plan first, then pass --auto-approve",
        )
    parallelism = args.parallelism or 8

    def ended(outcome: run.Outcome) -> None:
        output.info(f"{outcome.selected.project.id}: {outcome.status}")
        if command == "apply":  # as each ends: another apply at this root records too
            run.record_outcomes(root.path, [outcome])

    if command == "apply":
        run.record_outcomes(root.path, [])  # --failed knows an apply ran, even one of none
    outcomes = run.run_projects(
        root,
        selected,
        command=command,
        flags=_forwarded(args, command),
        parallelism=parallelism,
        on_done=ended,
    )
    status = render.status_of(outcomes)
    codes = [o.exit_code for o in outcomes if o.exit_code is not None]
    code = run.most_severe(codes)
    if command == "apply" and status == "partial" and code == 0:
        code = 3  # a dependent skipped: the run did not complete
    body = render.projects_body(outcomes, status=status)
    if args.format == "markdown":
        text = render.comment(outcomes, command=command)
    else:
        text = render.text_table(outcomes, command=command, status=status)
    return output.present(
        CommandResult(_ENDINGS.get(code, Ending.FAILED), "projects", body, text=text)
    )


def root_keys_changed(root: Root, git: Any, base: str) -> set[str] | None:
    """The root settings that changed since ``base`` (None: cannot tell, so all count)."""
    import tomllib

    from reconciler.config.project import settings_source
    from reconciler.projects.select import changed_keys

    source = settings_source(root.path)
    if source is None or source.prefix:  # pyproject.toml: compare as a whole
        return None
    path = (root.path / root.settings_file).resolve().relative_to(git.root.resolve())
    text = git.committed_file(path.as_posix(), base)
    try:
        before = tomllib.loads(text.decode("utf-8")) if text is not None else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    return changed_keys(before, source.table)


def _removed(root: Root, git: Any, base: str) -> list[Any]:
    """The projects deleted since ``base``, staged to forget or stop their runs."""
    from reconciler.projects.removed import removed_projects, stage
    from reconciler.projects.select import Selected

    found = []
    for removed in removed_projects(root, git, base):
        verb = "stopped" if removed.on_remove == "stop" else "forgotten"
        found.append(
            Selected(
                stage(root, removed),
                f"removed: {removed.project.dir} was deleted since {base}; its runs are "
                f"{verb} (on_project_remove = {removed.on_remove!r})",
            )
        )
    return found


def _relative(git_root: Path, root: Path, path: str) -> str | None:
    full = (git_root / path).resolve() if not (git_root / path).is_symlink() else git_root / path
    try:
        return full.relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _forwarded(args: argparse.Namespace, command: str) -> list[str]:
    """The flags every project's command gets from the root's."""
    flags: list[str] = []
    for name, flag in (
        ("platform", "--platform"),
        ("workspace", "--workspace"),
        ("refresh", "--refresh"),
        ("download_types", "--download-types"),
        ("only", "--only"),
    ):
        value = getattr(args, name, None)
        if value:
            flags += [flag, str(value)]
    for name in ("target", "replace", "retry_errored", "skip_smoke", "allow_duplicate"):
        for value in getattr(args, name, ()) or ():
            flags += [f"--{name.replace('_', '-')}", value]
    for name in (
        "no_color",
        "allow_mass_stop",
        "allow_over_budget",
        "allow_unestimated",
        "allow_foreign_state",
        "download_running",
        "detailed_exitcode",
        "auto_approve",
        "wait",
    ):
        if getattr(args, name, False):
            flags.append(f"--{name.replace('_', '-')}")
    if command == "apply":
        flags += ["--lock-timeout", str(args.lock_timeout)]
        if args.wait:
            flags += ["--wait-timeout", str(args.wait_timeout)]
    flags += ["--log-format", "json", "-q"]
    return flags
