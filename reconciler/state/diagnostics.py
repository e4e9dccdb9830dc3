"""Where a lockfile went wrong, for errors that name the file, the line and what to do:
merge-conflict regions and key paths as text (the line of a key path is
``reconciler.toml_locate.KeyLines``, the config loader's locator too)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from reconciler.state.toml_emit import toml_key

CONFLICT_START = re.compile(r"<{7}(?: |$)")


CONFLICT_MIDDLE = re.compile(r"(?:={7}|\|{7}(?: .*)?)$")


CONFLICT_END = re.compile(r">{7}(?: |$)")


TOML_POSITION = re.compile(r"^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def conflict_regions(lines: list[str]) -> list[tuple[int, int]]:
    """1-based (first, last) line ranges of git merge-conflict blocks."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if CONFLICT_START.match(line):
            if start is None:
                start = number
        elif CONFLICT_END.match(line):
            regions.append((start if start is not None else number, number))
            start = None
        elif CONFLICT_MIDDLE.match(line) and start is None:
            regions.append((number, number))  # a stray separator left after a bad resolve
    if start is not None:
        regions.append((start, len(lines)))
    return regions


def describe_regions(regions: list[tuple[int, int]]) -> str:
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in regions]
    if len(parts) == 1:
        return f"line{'s' if '-' in parts[0] else ''} {parts[0]}"
    return "lines " + ", ".join(parts[:-1]) + " and " + parts[-1]


def path_str(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + toml_key(part)
    return text
