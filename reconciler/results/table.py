"""Text tables that fit the terminal (pure).

A table is fitted to ``width`` columns in two steps: optional columns are left out, least
important first (the caller lists them in ``optional``, and the table says which were left
out), then the wrappable columns (names) are wrapped onto several lines at spaces. Nothing is ever cut: a number or a name's longest unbreakable piece keeps its
full width, so a table that cannot fit even then is printed wider rather than wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

__all__ = ["Column", "fit_table", "wrap_cell"]

GAP = 2
_BREAK = re.compile(r"(?<= )")
_SLASH = re.compile(r"(?<=/)")


class Column(msgspec.Struct, frozen=True):
    header: str
    right: bool = False
    """Aligned right (numbers)."""
    wrap: bool = False
    """May be wrapped onto several lines (names, lists); never for numbers."""
    drop: int = 0
    """0: always shown; otherwise left out when the table is too wide, highest first."""


def _pieces(text: str, width: int) -> list[str]:
    """``text`` split after spaces; a word longer than ``width`` is split after its ``/``
    (a path's segments stay whole)."""
    out: list[str] = []
    for word in _BREAK.split(text):
        if not word:
            continue
        if len(word.rstrip()) > width and "/" in word:
            out.extend(p for p in _SLASH.split(word) if p)
        else:
            out.append(word)
    return out


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces, and inside a
    word only after a ``/`` when the word is longer than the line (never inside a name
    segment or a number); a piece longer than ``width`` stays whole."""
    if len(text) <= width:
        return [text]
    lines: list[str] = []
    current = ""
    for piece in _pieces(text, width):
        if current and len(current) + len(piece.rstrip()) > width:
            lines.append(current.rstrip())
            current = piece
        else:
            current += piece
    if current.strip():
        lines.append(current.rstrip())
    return lines


def _min_width(column: Column, cells: Sequence[str]) -> int:
    if not column.wrap:
        return max([len(column.header), *(len(c) for c in cells)])
    pieces = [len(p.rstrip()) for c in cells for p in _pieces(c, 0)]
    return max([len(column.header), *pieces])


def fit_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    indent: int = 2,
) -> tuple[list[str], list[str]]:
    """The table's lines (indented) fitted to ``width``, and the headers left out.

    Optional columns are left out (highest ``drop`` first) until the rest fits with each
    wrapped cell on at most about two lines; then wrappable columns are narrowed, the
    widest first, never below their longest unbreakable piece.
    """
    keep = list(range(len(columns)))
    natural = [max([len(columns[i].header), *(len(r[i]) for r in rows)]) for i in keep]
    minimum = [_min_width(columns[i], [r[i] for r in rows]) for i in keep]
    moderate = [
        max(minimum[i], -(-natural[i] // 2)) if columns[i].wrap else natural[i] for i in keep
    ]

    def total(indices: Sequence[int], widths: Sequence[int]) -> int:
        return indent + sum(widths[i] for i in indices) + GAP * (len(indices) - 1)

    dropped: list[str] = []
    for i in sorted((i for i in keep if columns[i].drop), key=lambda i: -columns[i].drop):
        if total(keep, moderate) <= width:
            break
        keep.remove(i)
        dropped.append(columns[i].header)
    widths = list(natural)
    while total(keep, widths) > width:
        narrower = [i for i in keep if columns[i].wrap and widths[i] > minimum[i]]
        if not narrower:
            break  # nothing may be cut: the table stays wider than asked
        widest = max(narrower, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
    lines: list[str] = []
    pad = " " * indent
    if total(keep, widths) > width:
        return _records(columns, keep, rows, width, pad), dropped

    def emit(cells: Sequence[str]) -> None:
        wrapped = [wrap_cell(cells[i], widths[i]) if columns[i].wrap else [cells[i]] for i in keep]
        for n in range(max(len(w) for w in wrapped)):
            parts = []
            for slot, i in enumerate(keep):
                text = wrapped[slot][n] if n < len(wrapped[slot]) else ""
                parts.append(text.rjust(widths[i]) if columns[i].right else text.ljust(widths[i]))
            lines.append((pad + (" " * GAP).join(parts)).rstrip())

    emit([c.header for c in columns])
    lines.append((pad + (" " * GAP).join("-" * widths[i] for i in keep)).rstrip())
    for row in rows:
        emit(row)
    return lines, dropped


def _records(
    columns: Sequence[Column],
    keep: Sequence[int],
    rows: Sequence[Sequence[str]],
    width: int,
    pad: str,
) -> list[str]:
    """The last resort when even the narrowest columns are too wide (a long unbreakable
    name): one block per row, one ``header: value`` line per cell, wrapped."""
    label = max(len(columns[i].header) for i in keep) + 2
    out: list[str] = []
    for row in rows:
        for n, i in enumerate(keep):
            head = (columns[i].header + ":").ljust(label)
            lead = pad + ("" if n == 0 else "  ")
            parts = wrap_cell(row[i], max(10, width - len(lead) - label))
            out.append((lead + head + parts[0]).rstrip())
            out.extend((" " * (len(lead) + label) + part).rstrip() for part in parts[1:])
    return out
