"""Project settings: ``[tool.osmosis-reconciler]`` in the repository's ``pyproject.toml``.

Flags win over these; these win over the defaults in ``model.Settings``.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from .errors import UsageError
from .model import DOWNLOAD_TYPES

TABLE = "osmosis-reconciler"

_CHOICES = {
    "on_delete": ("stop", "forget"),
    "on_change": ("replace", "keep"),
    "unmanaged": ("ignore", "summary", "list"),
    "outputs": ("recorded", "disk"),
    "lock": ("local", "git"),
}
_TYPES: dict[str, type] = {
    "benchmarks": str,
    "state": str,
    "download_types": list,
    "on_delete": str,
    "on_change": str,
    "max_stops": int,
    "max_attempts": int,
    "parallelism": int,
    "unmanaged": str,
    "outputs": str,
    "lock": str,
    "lock_ttl": int,
}


def load_project_settings(repo_root: Path) -> dict[str, Any]:
    """Read and check ``[tool.osmosis-reconciler]``; an absent file or table is ``{}``."""
    path = repo_root / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"pyproject.toml: cannot read [tool.{TABLE}]: {exc}",
            "fix the TOML syntax of pyproject.toml",
        ) from exc
    table = data.get("tool", {}).get(TABLE, {})
    if not isinstance(table, dict):
        raise UsageError(f"pyproject.toml: [tool.{TABLE}] must be a table")
    settings: dict[str, Any] = {}
    for key, value in table.items():
        where = f"pyproject.toml: tool.{TABLE}.{key}"
        if key not in _TYPES:
            close = difflib.get_close_matches(key, list(_TYPES), n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(_TYPES)}"
            raise UsageError(f"{where}: unknown setting", hint)
        expected = _TYPES[key]
        if not isinstance(value, expected) or isinstance(value, bool):
            raise UsageError(f"{where}: must be {expected.__name__}, got {value!r}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise UsageError(f"{where}: must be one of {', '.join(_CHOICES[key])}, got {value!r}")
        if key in ("max_stops", "max_attempts", "parallelism") and value < (
            1 if key == "parallelism" else 0
        ):
            raise UsageError(
                f"{where}: must not be negative"
                if key != "parallelism"
                else f"{where}: must be at least 1"
            )
        if key == "lock_ttl" and value < 2:
            raise UsageError(f"{where}: must be at least 2 (seconds)")
        if key == "download_types":
            value = tuple(parse_download_types(value, where))
        settings[key] = value
    return settings


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
