"""The lockfile's TOML emitter: one fixed layout, byte for byte (why it is hand-written: reconciler/state/lockfile.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _toml_str(value: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_str(key)


def _toml_datetime(value: datetime) -> str:
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
    )


def _toml_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)  # repr round-trips and is always a valid TOML float ("1.0", "1e-05")


def _inline(value: Any, indent: str = "") -> str:
    """A value on the right of ``=``: scalars, arrays and inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _toml_float(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, datetime):
        return _toml_datetime(value)
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in sorted(value.items()) if v is not None]
        if not items:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {_inline(v)}" for k, v in items) + " }"
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
            body = "".join(f"{inner}{_inline(v, inner)},\n" for v in elements)
            return "[\n" + body + indent + "]"
        return "[" + ", ".join(_inline(v, indent) for v in elements) + "]"
    raise TypeError(f"cannot write a {type(value).__name__} to the lockfile")


def _emit_table(
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
            out.append(f"{_toml_key(key)} = {_inline(value)}")
    for key, mapping in subtables:
        _emit_mapping(out, f"{header}.{_toml_key(key)}", mapping)


def _emit_mapping(out: list[str], header: str, mapping: Mapping[str, Any]) -> None:
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
    _emit_table(out, header, pairs, subtables)
