"""Preflight of the configs that parsed, when others did not: every error in one report.

A plan with one broken file cannot be computed, but the files that did parse can still be
checked against the catalog and the secret records. Without this a new user's directory
reports its errors in rounds: the schema errors first, then, once those are fixed, the
unknown benchmark, the missing secret, the misspelt task. Here the same read-only requests
a plan makes (E2 per benchmark, the secret list, E1 only when a name did not resolve) turn
every preflight problem into a ``ConfigIssue`` with file, key, line and fix, and the CLI
reports them with the schema errors. No paid call is made and the lockfile is not read.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import astuple, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from reconciler import toml_locate as locate
from reconciler.config.cells import cells_label
from reconciler.config.load import Salvaged
from reconciler.errors import ConfigIssue, PlatformError
from reconciler.model import DesiredRun, Observation, Reason, origin_of
from reconciler.plan.preflight import Problem, preflight
from reconciler.platform import PlatformClient

from .observe import (
    find_secrets_elsewhere,
    list_catalog,
    read_benchmarks,
    read_meant,
    read_secrets,
)

REASON_KEYS: Mapping[Reason, str] = {
    Reason.BENCHMARK_NOT_FOUND: "experiment.benchmark",
    Reason.BENCHMARK_NOT_READY: "experiment.benchmark",
    Reason.JUDGE_REQUIRED: "execution.judge_model",
    Reason.TASKS_NOT_FOUND: "tasks",
    Reason.TASKS_EMPTY: "tasks",
    Reason.VERIFIER_REJECTED: "verifier",
}
"""The key a problem is about, when its fix does not name one."""

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def catalog_issues(
    client: PlatformClient,
    runs: Sequence[DesiredRun],
    repo_root: Path,
    *,
    platform: str,
    workspace: str,
    now: datetime,
    salvaged: Mapping[str, Salvaged] | None = None,
) -> list[ConfigIssue]:
    """Every reason the Platform would refuse one of ``runs``, as config issues; for a run
    of ``salvaged`` (by address), none about a key its config's own errors are about.

    Raises ``PlatformError`` when the catalog or the secrets cannot be read.
    """
    benchmarks = read_benchmarks(client, runs)
    secrets, personal = read_secrets(client, runs, benchmarks)
    catalog = list_catalog(client) if any(b is None for b in benchmarks.values()) else None
    read_meant(client, benchmarks, catalog)
    observed = Observation(
        platform=platform,
        workspace=workspace,
        observed_at=now,
        benchmarks=benchmarks,
        secrets=secrets,
        personal_secrets=personal,
        secrets_elsewhere=find_secrets_elsewhere(client, runs, benchmarks, secrets),
        catalog=catalog,
    )
    issues: list[ConfigIssue] = []
    # A problem several cells of a generator inherit from one element is one issue.
    cells: dict[tuple[Any, ...], list[str]] = {}
    for run in runs:
        found = preflight(run, benchmarks.get(run.benchmark), observed)
        partial = (salvaged or {}).get(run.address)
        for issue in _issues(run, found.problems, repo_root) if found.problems else ():
            if partial is not None and partial.concerns(issue):
                continue
            if run.source is None:
                issues.append(issue)
            else:
                cells.setdefault(astuple(issue), []).append(run.address)
    for fields, addresses in cells.items():
        issue = ConfigIssue(*fields)
        issues.append(replace(issue, message=f"{cells_label(addresses)}: {issue.message}"))
    return issues


def try_catalog_issues(
    client: PlatformClient,
    runs: Sequence[DesiredRun],
    repo_root: Path,
    *,
    platform: str,
    workspace: str,
    now: datetime,
    where: str,
    salvaged: Mapping[str, Salvaged] | None = None,
) -> list[ConfigIssue]:
    """``catalog_issues``; when the Platform cannot be read, one warning saying what was
    not checked (the schema errors are reported either way)."""
    try:
        return catalog_issues(
            client,
            runs,
            repo_root,
            platform=platform,
            workspace=workspace,
            now=now,
            salvaged=salvaged,
        )
    except PlatformError as exc:
        return [
            ConfigIssue(
                where,
                None,
                None,
                "",
                f"the benchmarks and secrets of the valid configs were not checked: {exc}",
                "fix the errors listed, then run `osmosis-plan` again for the Platform's checks",
                severity="warning",
            )
        ]


def _issues(run: DesiredRun, problems: Sequence[Problem], repo_root: Path) -> list[ConfigIssue]:
    source = run.source
    doc: Mapping[str, Any] = {}
    positions: locate.Positions | None = None
    if source is None:
        try:
            text = (repo_root / run.path).read_text(encoding="utf-8")
            doc = tomllib.loads(text)
            positions = locate.scan(text)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            positions = None
    issues = []
    for problem in problems:
        key = _key_of(problem, run, doc)
        hint = "; ".join([fix.text for fix in problem.fixes] + [problem.advice or ""]).strip("; ")
        if source is not None:
            # An expanded run has no file of its own: point at the element of its generator
            # that set the key (the cell's first element when none did).
            origin = origin_of(run.origins, _path(key)) if key else None
            file, column = source.file, None
            line = origin.line if origin is not None else source.line
            element = f" (from {origin.element}, line {line})" if origin is not None else ""
            message = f"{problem.message}{element}"
        else:
            file, message = run.path, problem.message
            line, column = positions.find(_path(key), "key") if positions else (None, None)
        issues.append(ConfigIssue(file, line, column, key, message, hint or None))
    return issues


def _key_of(problem: Problem, run: DesiredRun, doc: Mapping[str, Any]) -> str:
    for fix in problem.fixes:
        if fix.key:
            return fix.key
    if problem.reason is Reason.SECRET_MISSING:
        for name in run.secret_names:
            if name in problem.message:
                found = _where_value(doc, name, ())
                if found is not None:
                    return _dotted(found)
        return ""
    return REASON_KEYS.get(problem.reason, "")


def _where_value(node: Any, value: str, path: locate.Path) -> locate.Path | None:
    """The first key path (document order) whose string value, or list item, is ``value``."""
    if node == value:
        return path
    if isinstance(node, Mapping):
        for key, child in node.items():
            found = _where_value(child, value, (*path, key))
            if found is not None:
                return found
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found = _where_value(child, value, (*path, index))
            if found is not None:
                # A name in a list of names is the list's key; a table in a list keeps its index.
                return path if isinstance(child, str) else found
    return None


def _dotted(path: locate.Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _path(key: str) -> locate.Path:
    """``agents[0].harness`` -> ``("agents", 0, "harness")``."""
    return tuple(
        int(index) if index else name for name, index in _PART.findall(key) if name or index
    )
