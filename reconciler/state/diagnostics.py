"""Where a lockfile went wrong: merge-conflict regions and the line of a key path, for errors that name the file, the line and what to do."""

from __future__ import annotations

import re
from collections.abc import Iterable

from reconciler.state.toml_emit import (
    _toml_key,
    _toml_str,
)

_CONFLICT_START = re.compile(r"<{7}(?: |$)")


_CONFLICT_MIDDLE = re.compile(r"(?:={7}|\|{7}(?: .*)?)$")


_CONFLICT_END = re.compile(r">{7}(?: |$)")


_TOML_POSITION = re.compile(r"^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def _conflict_regions(lines: list[str]) -> list[tuple[int, int]]:
    """1-based (first, last) line ranges of git merge-conflict blocks."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if _CONFLICT_START.match(line):
            if start is None:
                start = number
        elif _CONFLICT_END.match(line):
            regions.append((start if start is not None else number, number))
            start = None
        elif _CONFLICT_MIDDLE.match(line) and start is None:
            regions.append((number, number))  # a stray separator left after a bad resolve
    if start is not None:
        regions.append((start, len(lines)))
    return regions


def _describe_regions(regions: list[tuple[int, int]]) -> str:
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in regions]
    if len(parts) == 1:
        return f"line{'s' if '-' in parts[0] else ''} {parts[0]}"
    return "lines " + ", ".join(parts[:-1]) + " and " + parts[-1]


def _path_str(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + _toml_key(part)
    return text


class _Locator:
    """Best-effort line numbers for key paths, so shape errors can say where."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: list[str] = []
        self.headers: dict[str, list[int]] = {}

    def _index(self) -> None:
        # Only built when an error needs a line number: a valid file never pays for it.
        if self.lines or not self.text:
            return
        self.lines = self.text.splitlines()
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if stripped.startswith("["):
                # Normalised header text (spaces removed) -> 1-based line numbers.
                self.headers.setdefault(stripped.replace(" ", ""), []).append(number)

    def line_of(self, path: list[str | int]) -> int | None:
        self._index()
        if len(path) >= 2 and path[0] == "history" and isinstance(path[1], int):
            numbers = self.headers.get("[[history]]", [])
            if path[1] >= len(numbers):
                return None
            return self._key_line(numbers[path[1]], path[2] if len(path) > 2 else None)
        # The deepest table header that exists, then the first remaining key inside it.
        for cut in range(len(path), 0, -1):
            found = self.headers.get(("[" + _path_str(path[:cut]) + "]").replace(" ", ""))
            if found:
                rest = path[cut:]
                return self._key_line(found[0], rest[0] if rest else None)
        if path and isinstance(path[0], str):
            return self._key_line(0, path[0]) or None
        return None

    def _key_line(self, header_line: int, key: str | int | None) -> int:
        """The line of ``key`` in the table starting at ``header_line`` (0: top level)."""
        if not isinstance(key, str):
            return header_line
        pattern = re.compile(
            r"\s*(?:" + re.escape(key) + "|" + re.escape(_toml_str(key)) + r")\s*[=.]"
        )
        for index in range(header_line, len(self.lines)):
            line = self.lines[index]
            if line.lstrip().startswith("["):
                break
            if pattern.match(line):
                return index + 1
        return header_line
