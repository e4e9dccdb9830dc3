"""The project: where its root is, and its settings.

Root (``find_root``): ``--dir`` when given. Otherwise, from the current directory upwards,
the nearest directory holding a settings file, looking no higher than the git work tree's
top level; else the git top level itself. Outside any git work tree and without a settings
file there is no root, and the commands say so instead of guessing (a guess from
``benchmarks/`` would create ``benchmarks/.osmosis/`` and plan nothing).

Settings, one source per repository, the first that exists (like ruff's ``ruff.toml`` /
``pyproject.toml``; sources are never merged):

1. ``osmosis.toml``   the keys at the top level;
2. ``.osmosis.toml``  the same, for a repository that keeps tool files hidden;
3. ``pyproject.toml`` the same keys in ``[tool.osmosis-reconciler]``.

Two of them holding settings at once is an error (which one would win is a surprise).
Flags win over the settings; the settings win over the defaults in ``model.Settings``.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import msgspec

from reconciler.errors import UsageError, closest
from reconciler.escaping import escape_text, shown_value
from reconciler.model import (
    DOWNLOAD_TYPES,
    POLICY_EFFECTS,
    SETTING_CHOICES,
    PolicyRule,
    SmokeRule,
)
from reconciler.paths import read_regular

TABLE = "osmosis-reconciler"
SETTINGS_FILES = ("osmosis.toml", ".osmosis.toml")
MAX_INT_SETTING = 10**12
"""Largest integer any setting accepts (a bigger one is a typo, or a hostile file)."""
SETTINGS_MAX_BYTES = 1024 * 1024
"""A settings file (or pyproject.toml) larger than this is refused, not read."""
"""Settings files of their own, in order of precedence; ``pyproject.toml`` comes after."""

_CHOICES = SETTING_CHOICES
_TYPES: dict[str, type[Any]] = {
    "benchmarks": str,
    "state": str,
    "download_types": list,
    "on_delete": str,
    "on_change": str,
    "max_stops": int,
    "max_attempts": int,
    "parallelism": int,
    "unmanaged": str,
    "ignore": list,
    "max_cost_usd": float,
    "outputs": str,
    "lock": str,
    "lock_ttl": int,
    "smoke": list,
    "regression_margin_pp": float,
    "policy": list,
    "unknown_outcome_listings": int,
    "unknown_outcome_quiet_minutes": float,
    # Many projects in one repository (reconciler/projects): a project's settings file
    # carries its ``id`` (and ``after``, ``on_remove``); the root's lists the ``projects``.
    "id": str,
    "workspace": str,
    "after": list,
    "on_remove": str,
    "projects": list,
    "on_project_remove": str,
}
PROJECT_KEYS = ("id", "after", "on_remove")
"""Settings of one project that it never inherits from the root."""
ROOT_KEYS = ("projects", "on_project_remove")
"""Settings of the root of many projects, never inherited by a project."""
NOT_INHERITED = (*PROJECT_KEYS, *ROOT_KEYS, "benchmarks", "state")
"""A project's paths are its own: relative to its directory, never the root's."""
_RULE_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "match": (list, str),
    "effect": (str,),
    "benchmark": (str,),
    "models": (list,),
    "harnesses": (list,),
    "task_set": (str,),
    "max_attempts": (int,),
    "max_cost_usd": (float, int),
}
_RULE_CHECKS = ("models", "harnesses", "task_set", "max_attempts", "max_cost_usd")


class SettingsSource(msgspec.Struct, frozen=True):
    """Where a repository's settings come from: a file and the table inside it."""

    path: Path
    table: dict[str, Any]
    prefix: str
    """How a key is named in messages: ``tool.osmosis-reconciler.`` in pyproject.toml."""

    @property
    def name(self) -> str:
        return self.path.name


# --------------------------------------------------------------------------- root


def find_root(start: Path, dir_flag: str | None = None) -> Path:
    """The repository root for a command run in ``start`` (see the module docstring)."""
    if dir_flag is not None:
        root = (start / dir_flag).resolve()
        if not root.is_dir():
            raise UsageError(f"--dir {dir_flag}: no such directory", "pass the repository root")
        return root
    here = start.resolve()
    for directory in (here, *here.parents):
        if _has_settings(directory):
            return directory
        if (directory / ".git").exists():
            # The work tree's top level (a `.git` directory, or the file of a worktree or
            # submodule): a settings file above it belongs to another project.
            return directory
    raise UsageError(
        f"no repository root found from {here}: no {', '.join(SETTINGS_FILES)} or "
        f"pyproject.toml with [tool.{TABLE}] here or above, and not inside a git work tree",
        "run the command inside the repository that holds benchmarks/ and state/, pass "
        "--dir PATH, or create an osmosis.toml at the repository root",
    )


def has_settings(directory: Path) -> bool:
    """Whether ``directory`` holds a settings file (``find_root`` stops there)."""
    return _has_settings(directory)


def _has_settings(directory: Path) -> bool:
    if any((directory / name).is_file() for name in SETTINGS_FILES):
        return True
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        return False
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    # A cheap look before parsing: most pyproject.toml files are not ours.
    return f"[tool.{TABLE}]" in text or f'[tool."{TABLE}"]' in text


# --------------------------------------------------------------------------- settings


def settings_source(repo_root: Path) -> SettingsSource | None:
    """The one settings file of ``repo_root`` with its table, or None when there is none."""
    sources: list[SettingsSource] = []
    for name in SETTINGS_FILES:
        path = repo_root / name
        # Not ``is_file()``: a FIFO, a device or a symlink named osmosis.toml is refused
        # with a clear error (``_read_toml``), never silently ignored or followed.
        if os.path.lexists(path):
            sources.append(SettingsSource(path, _read_toml(path, repo_root), ""))
    pyproject = repo_root / "pyproject.toml"
    if os.path.lexists(pyproject):
        data = _read_toml(pyproject, repo_root)
        tool = data.get("tool", {})
        if isinstance(tool, dict) and TABLE in tool:
            table = tool[TABLE]
            if not isinstance(table, dict):
                raise UsageError(f"pyproject.toml: [tool.{TABLE}] must be a table")
            sources.append(SettingsSource(pyproject, table, f"tool.{TABLE}."))
    if len(sources) > 1:
        names = " and ".join(s.name for s in sources)
        raise UsageError(
            f"settings in two places: {names}",
            f"keep the settings in one of them ({sources[0].name} would be read first) and "
            "delete them from the other",
        )
    return sources[0] if sources else None


def _read_toml(path: Path, repo_root: Path | None = None) -> dict[str, Any]:
    try:
        data = read_regular(
            path, what="settings file", max_bytes=SETTINGS_MAX_BYTES, repo_root=repo_root
        )
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        what = f"[tool.{TABLE}]" if path.name == "pyproject.toml" else "the settings"
        raise UsageError(
            f"{path.name}: cannot read {what}: {exc}", f"fix the TOML syntax of {path.name}"
        ) from exc
    except ValueError as exc:
        # An integer literal of more than 4,300 digits (Python's int conversion limit).
        raise UsageError(
            f"{path.name}: cannot read the settings: {exc}",
            f"fix the value in {path.name}: no setting needs a number that long",
        ) from None
    except RecursionError:
        raise UsageError(f"{path.name}: cannot read the settings: nested too deeply") from None
    except OSError as exc:
        raise UsageError(f"{path.name}: cannot read: {exc.strerror or exc}") from exc


def load_project_settings(repo_root: Path) -> dict[str, Any]:
    """Read and check the repository's settings; no settings file is ``{}``."""
    source = settings_source(repo_root)
    if source is None:
        return {}
    text = read_regular(
        source.path, what="settings file", max_bytes=SETTINGS_MAX_BYTES, repo_root=repo_root
    ).decode("utf-8", "replace")
    settings: dict[str, Any] = {}
    for key, value in source.table.items():
        where = f"{source.name}{_line_of(text, key, source)}: {source.prefix}{key}"
        if key == "smoke":
            settings[key] = parse_smoke(value, where)
            continue
        if key not in _TYPES:
            close = closest(key, _TYPES)
            hint = f"did you mean '{close}'?" if close else f"known keys: {', '.join(_TYPES)}"
            raise UsageError(f"{where}: unknown setting", hint)
        expected = _TYPES[key]
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT_SETTING:
            raise UsageError(
                f"{where}: {_shown(value)} is out of range (at most {MAX_INT_SETTING:,})",
                f"set {key} to a sensible number",
            )
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # max_cost_usd = 100 means 100.0
        if not isinstance(value, expected) or isinstance(value, bool):
            raise UsageError(f"{where}: must be {expected.__name__}, got {_shown(value)}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise UsageError(
                f"{where}: must be one of {', '.join(_CHOICES[key])}, got {_shown(value)}"
            )
        if key == "max_cost_usd" and not (math.isfinite(value) and value >= 0):
            raise UsageError(
                f"{where}: must be a finite number of dollars, 0 or more, got {shown_value(value)}",
                f"set {key} = 500.0 (for example), or remove it to have no cost guard",
            )
        if key in ("benchmarks", "state") and any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise UsageError(
                f"{where}: contains a NUL or control character ({escape_text(value)})",
                f"set {key} to a plain relative path, e.g. "
                + ('"benchmarks"' if key == "benchmarks" else '"state/osmosis.lock"'),
            )
        if key == "regression_margin_pp" and not (math.isfinite(value) and 0 < value < 100):
            raise UsageError(f"{where}: must be between 0 and 100 (percentage points)")
        if key in ("max_stops", "max_attempts", "parallelism") and value < (
            1 if key == "parallelism" else 0
        ):
            raise UsageError(
                f"{where}: must not be negative"
                if key != "parallelism"
                else f"{where}: must be at least 1"
            )
        if key == "unknown_outcome_listings" and value < 1:
            raise UsageError(f"{where}: must be at least 1 (run listings)")
        if key == "unknown_outcome_quiet_minutes" and value < 0:
            raise UsageError(f"{where}: must not be negative (minutes)")
        if key == "lock_ttl" and value < 2:
            raise UsageError(f"{where}: must be at least 2 (seconds)")
        if key == "download_types":
            value = tuple(parse_download_types(value, where))
        if key == "policy":
            value = parse_policy(value, text, source)
        if key in ("after", "projects") and not all(
            isinstance(v, str) and v.strip() for v in value
        ):
            example = '["teams/*", "shared/evals"]' if key == "projects" else '["base-models"]'
            raise UsageError(f"{where}: must be a list of non-empty strings, e.g. {example}")
        if key == "id":
            value = value.strip()
            if not _ID.fullmatch(value):
                raise UsageError(
                    f"{where}: {_shown(value)} is not a project id",
                    "use letters, digits, '.', '_' and '-' (e.g. id = \"coding-agents\"); "
                    "the id names the project's lock and runs, so pick one that lasts",
                )
        if key in ("after", "projects"):
            value = tuple(v.strip() for v in value)
        if key == "ignore":
            if not all(isinstance(v, str) and v.strip() for v in value):
                raise UsageError(f'{where}: must be a list of address globs, e.g. ["templates/**"]')
            value = tuple(v.strip().removesuffix(".toml") for v in value)
        settings[key] = value
    if "id" in settings and "projects" in settings:
        raise UsageError(
            f"{source.name}: has both id and projects",
            "the root lists the projects (projects = [...]); each project's own settings "
            'file names it (id = "..."): a project cannot hold projects',
        )
    if "id" in settings:
        parent = _root_of_projects(repo_root)
        if parent is not None:
            inherited = {k: v for k, v in parent.items() if k not in NOT_INHERITED}
            settings = {**inherited, **settings}
    return settings


def dir_glob_matches(relative: str, glob: str) -> bool:
    """Whether a directory (relative to the root, ``/``-separated) matches one glob of
    ``projects``: one ``*`` matches one path component, ``**`` any number of them."""
    return _match_parts(relative.strip("/").split("/"), glob.strip().strip("/").split("/"))


def _match_parts(parts: list[str], pattern: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_match_parts(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return (
        bool(parts) and fnmatchcase(parts[0], pattern[0]) and _match_parts(parts[1:], pattern[1:])
    )


_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _root_of_projects(project_dir: Path) -> dict[str, Any] | None:
    """The settings of the root that lists ``project_dir`` as one of its ``projects``
    (the nearest directory above it, inside the git work tree, whose settings file has
    ``projects`` and a glob matching it), or None."""
    here = project_dir.resolve()
    for directory in here.parents:
        if _has_settings(directory):
            values = load_project_settings(directory)
            globs = values.get("projects", ())
            relative = here.relative_to(directory).as_posix()
            if any(dir_glob_matches(relative, g) for g in globs):
                return values
            return None
        if (directory / ".git").exists():
            return None
    return None


_SMOKE_KEYS = ("addresses", "above", "tasks", "min_score", "task_names")


def parse_smoke(value: object, where: str) -> tuple[SmokeRule, ...]:
    """The ``smoke`` setting: one table or a list of tables (``[[smoke]]``), each with
    ``addresses`` (globs, default every address), ``above`` (planned attempts, required),
    ``tasks`` (default 1), ``min_score`` (a fraction, optional) and ``task_names`` (the
    smoke run's tasks by name, optional)."""
    tables = [value] if isinstance(value, dict) else value
    example = '[[smoke]] with addresses = ["**"], above = 100'
    if not isinstance(tables, list) or not tables:
        raise UsageError(f"{where}: must be a table or a list of tables", f"e.g. {example}")
    rules = []
    for index, table in enumerate(tables):
        at = where if isinstance(value, dict) else f"{where}[{index}]"
        if not isinstance(table, dict):
            raise UsageError(f"{at}: must be a table, got {shown_value(table)}", f"e.g. {example}")
        for key in table:
            if key not in _SMOKE_KEYS:
                raise UsageError(
                    f"{at}.{key}: unknown smoke setting", f"known keys: {', '.join(_SMOKE_KEYS)}"
                )
        addresses = table.get("addresses", ["**"])
        if isinstance(addresses, str):
            addresses = [addresses]
        if (
            not isinstance(addresses, list)
            or not addresses
            or not all(isinstance(a, str) and a.strip() for a in addresses)
        ):
            raise UsageError(
                f"{at}.addresses: must be a list of address globs, got {shown_value(addresses)}",
                'e.g. addresses = ["hle/**"]',
            )
        if "above" not in table:
            raise UsageError(
                f"{at}.above: missing: the planned attempts above which the smoke stage applies",
                "e.g. above = 100",
            )
        above, tasks = table["above"], table.get("tasks", 1)
        for name, number, least in (("above", above, 0), ("tasks", tasks, 1)):
            if isinstance(number, bool) or not isinstance(number, int) or number < least:
                raise UsageError(
                    f"{at}.{name}: must be an integer >= {least}, got {shown_value(number)}"
                )
        score = table.get("min_score")
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1
        ):
            raise UsageError(
                f"{at}.min_score: must be a fraction between 0 and 1, got {shown_value(score)}",
                "e.g. min_score = 0.2 (best pass@1 of the smoke run)",
            )
        names = table.get("task_names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise UsageError(
                f"{at}.task_names: must be a list of task names, got {shown_value(names)}",
                'e.g. task_names = ["hle/q-0001"] (the smoke run\'s tasks)',
            )
        rules.append(
            SmokeRule(
                addresses=tuple(a.strip().removesuffix(".toml") for a in addresses),
                above=above,
                tasks=tasks,
                min_score=None if score is None else float(score),
                task_names=tuple(dict.fromkeys(n.strip() for n in names)),
            )
        )
    return tuple(rules)


def _rule_lines(text: str, source: SettingsSource) -> list[int]:
    """The line of every ``[[policy]]`` header (``[[tool.osmosis-reconciler.policy]]``)."""
    wanted = f"tool.{TABLE}.policy" if source.prefix else "policy"
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if (
            stripped.startswith("[[")
            and stripped.split("]]")[0][2:].replace('"', "").strip() == wanted
        ):
            lines.append(number)
    return lines


def parse_policy(value: list[Any], text: str, source: SettingsSource) -> tuple[PolicyRule, ...]:
    """``[[policy]]`` tables -> rules, every key checked (a typo must not switch a rule off)."""
    lines = _rule_lines(text, source)
    rules: list[PolicyRule] = []
    for index, table in enumerate(value):
        line = f":{lines[index]}" if index < len(lines) else ""
        where = f"{source.name}{line}: {source.prefix}policy[{index}]"
        if not isinstance(table, dict):
            raise UsageError(f"{where}: must be a table ([[{source.prefix}policy]])")
        for key, item in table.items():
            if key not in _RULE_TYPES:
                close = closest(key, _RULE_TYPES)
                hint = (
                    f"did you mean '{close}'?" if close else f"known keys: {', '.join(_RULE_TYPES)}"
                )
                raise UsageError(f"{where}.{key}: unknown key", hint)
            if not isinstance(item, _RULE_TYPES[key]) or isinstance(item, bool):
                kinds = " or ".join(t.__name__ for t in _RULE_TYPES[key])
                raise UsageError(f"{where}.{key}: must be {kinds}, got {shown_value(item)}")
            if key in ("match", "models", "harnesses"):
                items: list[Any] = (
                    [item] if isinstance(item, str) else item if isinstance(item, list) else []
                )
                if not items or not all(isinstance(v, str) and v.strip() for v in items):
                    raise UsageError(f"{where}.{key}: must be a non-empty list of strings")
        if "name" not in table:
            raise UsageError(
                f"{where}: a rule needs a name", 'add name = "..." (shown in messages)'
            )
        effect = table.get("effect", "deny")
        if effect not in POLICY_EFFECTS:
            raise UsageError(
                f"{where}.effect: must be one of {', '.join(POLICY_EFFECTS)}, got {shown_value(effect)}"
            )
        if not any(key in table for key in _RULE_CHECKS):
            raise UsageError(
                f"{where}: the rule checks nothing",
                "give it at least one of: " + ", ".join(_RULE_CHECKS),
            )
        if "task_set" in table and "benchmark" not in table:
            raise UsageError(
                f'{where}.task_set: a required task set needs benchmark = "..."',
                "task sets belong to one benchmark (e.g. HLE's parity set)",
            )
        match = table.get("match", ["**"])
        rules.append(
            PolicyRule(
                name=table["name"],
                match=tuple([match] if isinstance(match, str) else match),
                effect=effect,
                benchmark=table.get("benchmark"),
                models=tuple(table["models"]) if "models" in table else None,
                harnesses=tuple(table["harnesses"]) if "harnesses" in table else None,
                task_set=table.get("task_set"),
                max_attempts=table.get("max_attempts"),
                max_cost_usd=float(table["max_cost_usd"]) if "max_cost_usd" in table else None,
                where=f"{source.name}{line}",
            )
        )
    return tuple(rules)


def _shown(value: Any) -> str:
    """A value as an error quotes it: escaped, and cut at 60 characters."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length():,} bits"  # repr() refuses > 4,300 digits
    text = escape_text(repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


def _line_of(text: str, key: str, source: SettingsSource) -> str:
    """``:LINE`` of ``key = ...`` in its table, when a plain scan finds it (else empty)."""
    in_table = source.prefix == ""
    key_re = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            header = stripped.strip("[]").replace('"', "").strip()
            in_table = (header == f"tool.{TABLE}") if source.prefix else False
            continue
        if in_table and key_re.match(line):
            return f":{number}"
    return ""


def parse_download_types(
    value: str | list[str] | tuple[str, ...], where: str = "--download-types"
) -> list[str]:
    """``summary,results`` or a list → de-duplicated types; ``all`` alone means every type."""
    items = value.split(",") if isinstance(value, str) else list(value)
    types: list[str] = []
    for raw in items:
        item = str(raw).strip().lower()
        if item and item not in types:
            types.append(item)
    if not types:
        raise UsageError(
            f"{where}: must list at least one output type",
            f"choose from: {', '.join(DOWNLOAD_TYPES)}, all",
        )
    if "all" in types:
        if len(types) > 1:
            raise UsageError(f"{where}: 'all' cannot be combined with other output types")
        return list(DOWNLOAD_TYPES)
    unknown = [t for t in types if t not in DOWNLOAD_TYPES]
    if unknown:
        raise UsageError(
            f"{where}: unknown output type(s): {', '.join(unknown)}",
            f"choose from: {', '.join(DOWNLOAD_TYPES)}, all",
        )
    return types
