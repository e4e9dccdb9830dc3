"""The lockfile's fast reader: the canonical layout the emitter writes, read without tomllib (anything else falls back to tomllib)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Protocol, cast


class NotCanonical(Exception):
    """The text is outside the subset ``fast_load`` reads; use ``tomllib`` instead."""


class AlwaysMatches(Protocol):
    """A compiled pattern that matches the empty string, so ``match`` never returns None."""

    def match(self, string: str, pos: int = ..., /) -> re.Match[str]: ...


def utc(parts: Iterable[str]) -> datetime:
    """The UTC datetime of year, month, day, hour, minute, second (as matched digits)."""
    year, month, day, hour, minute, second = map(int, parts)
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


F_WS = cast(AlwaysMatches, re.compile(r"[ \t]*"))


F_ARRAY_WS = cast(AlwaysMatches, re.compile(r"(?:[ \t]|\r?\n)*"))


F_BARE = re.compile(r"[A-Za-z0-9_-]+")


# Basic strings whose escapes mean the same in TOML and JSON (no raw tab or DEL, no
# surrogate \u escapes, high or low), so ``json.loads`` decodes them exactly as TOML does.
F_STR_BODY = r'(?:[^"\\\x00-\x1f\x7f]|\\[btnfr"\\]|\\u(?![dD][89a-fA-F])[0-9A-Fa-f]{4})*'


F_STR = re.compile('"' + F_STR_BODY + '"')


F_DATETIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z")


F_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


F_EOL = re.compile(r"[ \t]*(?:\r?\n|\Z)")


F_COMMENT = re.compile(r"#[^\x00-\x08\x0a-\x1f\x7f]*(?:\r?\n|\Z)")


F_SIMPLE_LINE = re.compile(
    r'(?:([A-Za-z0-9_-]+)|"([^"\\\x00-\x1f\x7f]*)") = (?:'
    r'"([^"\\\x00-\x1f\x7f]*)"|(-?(?:0|[1-9][0-9]*))|(true|false)|'
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z|"
    r'(\[(?:"[^"\\\x00-\x1f\x7f]*"(?:, "[^"\\\x00-\x1f\x7f]*")*)?\])'  # JSON-identical
    r")\r?\n"
)


F_HEADER_LINE = re.compile(
    r'\[((?:[A-Za-z0-9_-]+|"'
    + F_STR_BODY
    + r'")(?:\.(?:[A-Za-z0-9_-]+|"'
    + F_STR_BODY
    + r'"))*)\]\r?\n'
)


F_HEADER_KEY = re.compile(r'([A-Za-z0-9_-]+)|("' + F_STR_BODY + '")')


# A one-level inline table of plain strings and booleans (``{ X-Team = "evals" }``).
F_FLAT_PAIR = re.compile(
    r'(?:([A-Za-z0-9_-]+)|("[^"\\\x00-\x1f\x7f]*")) = ("[^"\\\x00-\x1f\x7f]*"|true|false)'
)


F_FLAT_TABLE = re.compile(r"\{ " + F_FLAT_PAIR.pattern + r"(?:, " + F_FLAT_PAIR.pattern + r")* \}")


F_WORDS = {"true": True, "false": False, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def f_key(text: str, pos: int) -> tuple[str, int]:
    match = F_BARE.match(text, pos)
    if match:
        return match.group(), match.end()
    match = F_STR.match(text, pos)
    if match:
        raw = match.group()
        return (raw[1:-1] if "\\" not in raw else json.loads(raw)), match.end()
    raise NotCanonical


def f_value(text: str, pos: int, frozen: set[int]) -> tuple[Any, int]:
    char = text[pos : pos + 1]
    if char == '"':
        match = F_STR.match(text, pos)
        if not match:
            raise NotCanonical
        raw = match.group()
        return (raw[1:-1] if "\\" not in raw else json.loads(raw)), match.end()
    if char == "{":
        flat = F_FLAT_TABLE.match(text, pos)
        if flat:
            table = {}
            for bare, quoted, value in F_FLAT_PAIR.findall(flat.group()):
                key = bare or quoted[1:-1]
                if key in table:
                    raise NotCanonical
                table[key] = value[1:-1] if value.startswith('"') else value == "true"
            frozen.add(id(table))
            return table, flat.end()
        table = {}
        frozen.add(id(table))
        pos = F_WS.match(text, pos + 1).end()
        if text.startswith("}", pos):
            return table, pos + 1
        while True:
            key, pos = f_key(text, pos)
            pos = F_WS.match(text, pos).end()
            if not text.startswith("=", pos) or key in table:
                raise NotCanonical
            pos = F_WS.match(text, pos + 1).end()
            table[key], pos = f_value(text, pos, frozen)
            pos = F_WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos = F_WS.match(text, pos + 1).end()
            elif text.startswith("}", pos):
                return table, pos + 1
            else:
                raise NotCanonical
    if char == "[":
        array: list[Any] = []
        pos = F_ARRAY_WS.match(text, pos + 1).end()
        while not text.startswith("]", pos):
            value, pos = f_value(text, pos, frozen)
            if isinstance(value, dict | list):
                frozen.add(id(value))
            array.append(value)
            pos = F_ARRAY_WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos = F_ARRAY_WS.match(text, pos + 1).end()
            elif not text.startswith("]", pos):
                raise NotCanonical
        return array, pos + 1
    match = F_DATETIME.match(text, pos)
    if match:
        try:
            value = utc(match.groups())
        except ValueError:
            raise NotCanonical from None
        return value, match.end()
    for word, value in F_WORDS.items():
        if text.startswith(word, pos) and not F_BARE.match(text, pos + len(word)):
            return value, pos + len(word)
    match = F_NUMBER.match(text, pos)
    if match and not F_BARE.match(text, match.end()) and text[match.end() : match.end() + 1] != ".":
        if match.group(1) or match.group(2):
            return float(match.group()), match.end()
        return int(match.group()), match.end()
    raise NotCanonical


Finish = Callable[[str, Any, dict[str, Any]], Any]
"""``finish(kind, key, table)``: the built entry of a complete ``[runs."key"]`` table
(``kind`` "runs") or ``[[history]]`` table number ``key`` (``kind`` "history")."""


def _entry_of(keys: list[str], array_table: bool, root: dict[str, Any]) -> tuple[str, Any] | None:
    """The entry a header opens or continues: ``("runs", address)``, ``("history", index)``,
    or None for anything else (the header, rejections, baselines)."""
    if keys[0] == "runs" and len(keys) > 1:
        return ("runs", keys[1])
    if keys[0] == "history":
        history = root.get("history")
        count = len(history) if isinstance(history, list) else 0
        return ("history", count if array_table and len(keys) == 1 else count - 1)
    return None


def _finish_entry(root: dict[str, Any], entry: tuple[str, Any], finish: Finish) -> None:
    kind, key = entry
    container = root.get(kind)
    if kind == "runs":
        table = container.get(key) if isinstance(container, dict) else None
    else:
        ok = isinstance(container, list) and 0 <= key < len(container)
        table = container[key] if ok else None  # type: ignore[index]
    if not isinstance(table, dict):
        raise NotCanonical
    container[key] = finish(kind, key, table)  # type: ignore[index]


def fast_load(text: str, finish: Finish | None = None) -> dict[str, Any] | None:
    """Read the TOML subset that ``serialize`` writes, several times faster than
    ``tomllib``; None for anything outside it (hand edits, other TOML styles, errors),
    which ``tomllib`` then reads. It must never accept text ``tomllib`` would read
    differently; the tests check that on generated states and on mutated files.

    With ``finish``, each run and history entry is replaced by ``finish``'s value as soon
    as its last table is read, so the whole document is never held as dicts (a 20,000-run
    lockfile's largest transient). An entry whose tables are not contiguous is outside the
    subset (None). Whatever ``finish`` raises propagates.
    """
    root: dict[str, Any] = {}
    # dicts/lists from inline values (headers may not extend them), and tables already
    # opened by a [header]: the document's, and the open entry's (dropped with its tables
    # when it is finished, as their ids may then be reused).
    frozen: set[int] = set()
    defined: set[int] = set()
    local_frozen, local_defined = frozen, defined
    entry: tuple[str, Any] | None = None
    current = root
    pos, end = 0, len(text)
    simple_line = F_SIMPLE_LINE.match
    # One object per distinct short string and per date-time: a big lockfile repeats the
    # same statuses, benchmark ids, addresses and timestamps thousands of times.
    shared: dict[str, Any] = {}
    try:
        while pos < end:
            # Most lines are `key = "plain string" | integer | datetime | bool`: one regex,
            # read here rather than in a function (a call per line is measurable).
            match = simple_line(text, pos)
            if match:
                key = match.group(1) or match.group(2)
                if key in current:
                    raise NotCanonical
                if match.group(3) is not None:
                    value = match.group(3)
                    current[key] = shared.setdefault(value, value) if len(value) <= 48 else value
                elif match.group(4) is not None:
                    current[key] = int(match.group(4))
                elif match.group(5) is not None:
                    current[key] = match.group(5) == "true"
                elif match.group(12) is not None:
                    current[key] = value = json.loads(match.group(12))
                    local_frozen.add(id(value))
                else:
                    stamp = text[match.start(6) : match.end(11)]
                    value = shared.get(stamp)
                    if value is None:
                        try:
                            value = shared[stamp] = utc(match.group(6, 7, 8, 9, 10, 11))
                        except ValueError:
                            raise NotCanonical from None
                    current[key] = value
                pos = match.end()
                continue
            pos = F_WS.match(text, pos).end()
            char = text[pos : pos + 1]
            if char in ("\n", "\r"):
                match = F_EOL.match(text, pos)
                if not match:
                    raise NotCanonical
                pos = match.end()
                continue
            if char == "#":
                match = F_COMMENT.match(text, pos)
                if not match:
                    raise NotCanonical
                pos = match.end()
                continue
            if char != "[":
                pos = _read_pair(text, pos, current, local_frozen)
                continue
            keys, array_table, pos = _read_header(text, pos)
            if finish is not None:
                opened = _entry_of(keys, array_table, root)
                if opened != entry:
                    if entry is not None:
                        _finish_entry(root, entry, finish)
                    entry = opened
                    local_frozen, local_defined = (
                        (frozen, defined) if entry is None else (set(), set())
                    )
            frozen_ids = (frozen, local_frozen)
            current = _open_table(root, keys, array_table, frozen_ids, (defined, local_defined))
            local_defined.add(id(current))
        if entry is not None and finish is not None:
            _finish_entry(root, entry, finish)
    except (NotCanonical, json.JSONDecodeError, RecursionError):
        return None
    return root


def _read_pair(text: str, pos: int, current: dict[str, Any], frozen: set[int]) -> int:
    """A ``key = value`` line outside the one-regex subset (escapes, floats, inline tables,
    nested arrays) read into ``current``: the position after its line."""
    key, pos = f_key(text, pos)
    pos = F_WS.match(text, pos).end()
    if not text.startswith("=", pos) or key in current:
        raise NotCanonical
    pos = F_WS.match(text, pos + 1).end()
    value, pos = f_value(text, pos, frozen)
    if isinstance(value, dict | list):
        frozen.add(id(value))
    current[key] = value
    match = F_EOL.match(text, pos)
    if not match:
        raise NotCanonical
    return match.end()


def _read_header(text: str, pos: int) -> tuple[list[str], bool, int]:
    """The keys of the ``[table]`` or ``[[array]]`` header at ``pos``, whether it is an
    array of tables, and the position after its line."""
    if not text.startswith("[[", pos):
        match = F_HEADER_LINE.match(text, pos)
        if not match:
            raise NotCanonical
        keys = [
            bare or (quoted[1:-1] if "\\" not in quoted else json.loads(quoted))
            for bare, quoted in F_HEADER_KEY.findall(match.group(1))
        ]
        return keys, False, match.end()
    keys = []
    pos += 2
    while True:
        key, pos = f_key(text, pos)
        keys.append(key)
        if not text.startswith(".", pos):
            break
        pos += 1
    eol = F_EOL.match(text, pos + 2)
    if not text.startswith("]]", pos) or not eol:
        raise NotCanonical
    return keys, True, eol.end()


def _open_table(
    root: dict[str, Any],
    keys: list[str],
    array_table: bool,
    frozen: tuple[set[int], set[int]],
    defined: tuple[set[int], set[int]],
) -> dict[str, Any]:
    """The table a header opens: a new one (appended, for an array of tables), or one a
    dotted header made implicitly. ``frozen`` and ``defined`` (the document's ids and the
    open entry's) are what a header may not extend or open twice."""
    frozen_ids, local_frozen = frozen
    container = root
    for key in keys[:-1]:
        child = container.setdefault(key, {})
        if isinstance(child, list):
            if id(child) in frozen_ids or id(child) in local_frozen or not child:
                raise NotCanonical
            child = child[-1]
        if not isinstance(child, dict) or id(child) in frozen_ids or id(child) in local_frozen:
            raise NotCanonical
        container = child
    last = keys[-1]
    if array_table:
        array = container.setdefault(last, [])
        if not isinstance(array, list) or id(array) in frozen_ids or id(array) in local_frozen:
            raise NotCanonical
        table: dict[str, Any] = {}
        array.append(table)
        return table
    existing = container.get(last)
    if existing is None:
        table = container[last] = {}
        return table
    if (
        isinstance(existing, dict)
        and id(existing) not in frozen_ids
        and id(existing) not in local_frozen
        and id(existing) not in defined[0]
        and id(existing) not in defined[1]
    ):
        return existing
    raise NotCanonical
