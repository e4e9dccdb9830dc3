"""Field-level diff of two submit bodies, for people reviewing a plan."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

PREVIOUS_CONFIG_UNKNOWN = "previous config unknown: the lockfile does not hold the submitted body"


def spec_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, ...]:
    """Field-level diff lines of two submit bodies, sorted by path.

    ``agents[0].model.model: "a" -> "b"`` for a changed value, ``+ path: value`` for an added
    key or list item, ``- path`` for a removed one.
    """
    if not before:
        return (PREVIOUS_CONFIG_UNKNOWN,)
    # Imported here, not at the top: deepdiff (with its cache library and asyncio) is 27 ms
    # of start-up that a plan without changed configs never uses (make perf, start-up).
    from deepdiff import DeepDiff

    # threshold_to_diff_deeper=0: always report the innermost keys, never "whole table changed".
    diff = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0)
    lines: list[tuple[tuple[tuple[int, int, str], ...], str]] = []
    for report_type, levels in diff.items():
        for level in levels:
            parts = level.path(output_format="list")
            path = _format_path(parts)
            if report_type in ("values_changed", "type_changes"):
                line = f"{path}: {_format_value(level.t1)} -> {_format_value(level.t2)}"
            elif report_type in ("dictionary_item_added", "iterable_item_added"):
                line = f"+ {path}: {_format_value(level.t2)}"
            elif report_type in ("dictionary_item_removed", "iterable_item_removed"):
                line = f"- {path}"
            else:  # JSON bodies hold no sets or attributes; keep anything else visible anyway
                line = f"{path}: changed"
            lines.append((_path_key(parts), line))
    return tuple(line for _, line in sorted(lines))


def _path_key(parts: Iterable[Any]) -> tuple[tuple[int, int, str], ...]:
    # List indexes sort numerically (agents[2] before agents[10]), and before keys.
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in parts)


def _format_path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(root)"


def _format_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
