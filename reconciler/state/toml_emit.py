"""The lockfile's TOML emitter: one fixed layout, byte for byte.

Why it is hand-written (the reader side: reconciler/state/lockfile.py), measured against
tomli-w 1.2 and tomlkit 0.15 by ``python -m tests.perf.bench_toml_emit`` (part of
``make perf``): one lockfile of 20,000 runs and 1,000 history entries, each emitter handed
the same state, ours with its per-entry cache cleared, median of 3 on the 2-core reference
machine under load (tomlkit timed once)::

    emitter     emit s  x ours       bytes  fast reader  watermark  read s
    ours         6.235    1.00  24,050,937      accepts      found  11.752
    tomli-w      9.747    1.56  26,418,846     declines     missed  28.688
    tomlkit    169.067   27.12  25,998,841      accepts      found  15.894

tomli-w is 56 % slower to emit (beyond the 20 % the house rule allows), and its text is not
what the lockfile needs: it writes datetimes as ``2026-01-02 03:04:05+00:00``, so the
header peek (``peek_watermark``) misses the watermark; its layout (arrays of tables for a
spec's agents, multi-line short arrays) is outside the subset the fast reader reads, so
every read falls back to ``tomllib`` (28.7 s against 11.8 s for the same state); it cannot
write the header comment, keeps insertion order instead of sorting (two equal states must
give the same bytes) and refuses None. Beyond the table: an apply that persists after
every action re-emits only the entries it changed here (``lockfile._RUN_LINES``), where a
library re-emits the whole file. tomlkit writes what we need but is 27 times slower.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')


def escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return ESCAPES.get(char) or f"\\u{ord(char):04x}"


def toml_str(value: str) -> str:
    return '"' + NEEDS_ESCAPE.sub(escape_char, value) + '"'


def toml_key(key: str) -> str:
    return key if BARE_KEY.fullmatch(key) else toml_str(key)


def toml_datetime(value: datetime) -> str:
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
    )


def toml_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)  # repr round-trips and is always a valid TOML float ("1.0", "1e-05")


def inline_value(value: Any, indent: str = "") -> str:
    """A value on the right of ``=``: scalars, arrays and inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return toml_float(value)
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, datetime):
        return toml_datetime(value)
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in sorted(value.items()) if v is not None]
        if not items:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {inline_value(v)}" for k, v in items) + " }"
    if isinstance(value, list | tuple | set | frozenset):
        elements = [
            v
            for v in (sorted(value) if isinstance(value, set | frozenset) else value)
            if v is not None
        ]
        if not elements:
            return "[]"
        if any(isinstance(v, Mapping) for v in elements):
            # Arrays of objects (a spec's agents) get one element per line so a change to
            # one agent is a one-line diff in git.
            inner = indent + "  "
            body = "".join(f"{inner}{inline_value(v, inner)},\n" for v in elements)
            return "[\n" + body + indent + "]"
        return "[" + ", ".join(inline_value(v, indent) for v in elements) + "]"
    raise TypeError(f"cannot write a {type(value).__name__} to the lockfile")


def emit_table(
    out: list[str],
    header: str,
    pairs: Iterable[tuple[str, Any]],
    subtables: Iterable[tuple[str, Mapping[str, Any]]] = (),
) -> None:
    """Emit ``[header]``, its key/value lines, then each sub-table (depth first)."""
    out.append("")
    out.append(f"[{header}]")
    for key, value in pairs:
        if value is not None:
            out.append(f"{toml_key(key)} = {inline_value(value)}")
    for key, mapping in subtables:
        emit_mapping(out, f"{header}.{toml_key(key)}", mapping)


def emit_mapping(out: list[str], header: str, mapping: Mapping[str, Any]) -> None:
    """A free-form mapping (a spec, a sha256 map) as a table with sorted keys.

    Non-empty nested mappings become sub-tables; everything else stays inline. TOML has no
    null, so None values are left out (submit bodies omit unset fields anyway).
    """
    pairs: list[tuple[str, Any]] = []
    subtables: list[tuple[str, Mapping[str, Any]]] = []
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, Mapping) and any(v is not None for v in value.values()):
            subtables.append((key, value))
        else:
            pairs.append((key, value))
    emit_table(out, header, pairs, subtables)
