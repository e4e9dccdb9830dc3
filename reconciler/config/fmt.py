"""Canonical layout of configs and generators (``osmosis-reconciler fmt``); comments stay.

The layout:

* tables in a fixed order (a config: experiment, tasks, agents, execution, verifier,
  secrets, env; a generator: generate, base, axis, include, exclude, override, moved,
  removed); each ``[[agents]]`` element keeps its place among its siblings, with its
  ``[agents.model]`` right after it; unknown tables after the known ones, as written;
* inside a table, known keys in a fixed order (``key`` first in a generator's element),
  unknown ones after them as written; ``key = value`` with single spaces, no indentation,
  strings in double quotes (tomlkit renders each entry);
* one blank line before each table, none inside one, a final newline.

A comment moves with what it stands above: the comment lines right above a table header
(no blank line between) go with the table, comment lines above a key go with the key, a
comment at the end of a line stays there. The comment block at the top of the file stays at
the top.

``format_text`` never changes what a file means: ``same_meaning`` compares the parsed data,
and ``fmt`` refuses to write a file whose meaning would change (a bug, never a silent edit).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field

import tomlkit
from tomlkit.container import Container
from tomlkit.items import (
    Comment,
    InlineTable,
    Item,
    Key,
    SingleKey,
    String,
    StringType,
    Table,
)

CONFIG_ORDER: dict[tuple[str, ...], tuple[str, ...]] = {
    (): ("experiment", "tasks", "agents", "execution", "verifier", "secrets", "env"),
    ("experiment",): ("benchmark",),
    ("tasks",): ("task_set", "task_names", "categories"),
    ("agents",): ("harness", "harness_api_key_secret", "model", "env"),
    ("agents", "model"): (
        "type",
        "model",
        "base_url",
        "api_key_secret",
        "extra_headers",
        "base_model",
        "lora_model_name",
    ),
    ("execution",): (
        "attempts_per_task",
        "max_concurrent_attempts",
        "timeout_multiplier",
        "max_retries",
        "judge_model",
        "judge_api_key_secret",
    ),
}
GENERATOR_ORDER: dict[tuple[str, ...], tuple[str, ...]] = {
    (): ("generate", "base", "axis", "include", "exclude", "override", "moved", "removed"),
    ("generate",): ("version", "address", "max_runs", "on_remove", "cells"),
    ("base",): (
        "experiment",
        "tasks",
        "agent",
        "agents",
        "execution",
        "verifier",
        "secrets",
        "env",
    ),
    ("axis", "*"): (
        "key",
        "experiment",
        "tasks",
        "agent",
        "execution",
        "env",
        "secrets",
        "verifier",
    ),
    ("override",): ("match", "experiment", "tasks", "agent", "execution", "env"),
    ("moved",): ("axis", "from", "to", "from_prefix"),
    ("removed",): ("axis", "key", "on_remove"),
}
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]#]+?)\s*(\]\]?)\s*(#.*)?$")


def _orders(generator: bool) -> dict[tuple[str, ...], tuple[str, ...]]:
    return GENERATOR_ORDER if generator else CONFIG_ORDER


def _order_for(path: tuple[str, ...], generator: bool) -> tuple[str, ...]:
    orders = _orders(generator)
    if path in orders:
        return orders[path]
    if generator and len(path) >= 2 and path[0] == "axis" and len(path) == 2:
        return orders[("axis", "*")]
    if generator:
        # Inside base / an element / an override, a config's own key orders apply.
        rest: tuple[str, ...] = ()
        if path[:1] in (("base",), ("override",)):
            rest = path[1:]
        elif path[:1] == ("axis",) and len(path) > 2:
            rest = path[2:]
        rest = tuple("agents" if part == "agent" else part for part in rest)
        return CONFIG_ORDER.get(rest, ())
    return ()


@dataclass
class _Block:
    """One table: the comment lines above its header, the header, its body lines."""

    comments: list[str]
    header: str
    path: tuple[str, ...]
    array: bool
    body: list[str] = field(default_factory=list)
    sort_key: tuple[tuple[int, int], ...] = ()


def _header_path(inner: str) -> tuple[str, ...] | None:
    try:
        parsed = tomllib.loads(f"[{inner}]\n")
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    node = parsed
    while isinstance(node, dict) and len(node) == 1:
        ((key, node),) = node.items()
        path.append(key)
    return tuple(path)


def _split(text: str) -> tuple[list[str], list[_Block]]:
    """The preamble (lines before the first table) and the tables, by a line scanner that
    knows multi-line arrays and strings (a ``[`` line inside them is not a header)."""
    preamble: list[str] = []
    blocks: list[_Block] = []
    depth = 0
    in_string: str | None = None
    for line in text.splitlines():
        match = _HEADER.match(line) if depth == 0 and in_string is None else None
        path = _header_path(match.group(2)) if match else None
        if match and path is not None and (match.group(1) == "[[") == (match.group(3) == "]]"):
            target = blocks[-1].body if blocks else preamble
            comments: list[str] = []
            while target and target[-1].lstrip().startswith("#"):
                comments.insert(0, target.pop())
            if not blocks and not any(line.strip() for line in target):
                # The comment block at the top of the file is the file's, not the table's.
                target.extend(comments)
                comments = []
            header = f"{match.group(1)}{match.group(2).strip()}{match.group(3)}"
            if match.group(4):
                header += "  " + match.group(4).strip()
            blocks.append(_Block(comments, header, path, match.group(1) == "[["))
            continue
        (blocks[-1].body if blocks else preamble).append(line)
        depth, in_string = _scan_line(line, depth, in_string)
    return preamble, blocks


def _scan_line(line: str, depth: int, in_string: str | None) -> tuple[int, str | None]:
    """Bracket depth and open multi-line string after ``line`` (outside strings/comments)."""
    i = 0
    while i < len(line):
        if in_string is not None:
            if line.startswith(in_string, i):
                i += len(in_string)
                in_string = None
                continue
            if in_string in ('"""', '"') and line[i] == "\\":
                i += 2
                continue
            i += 1
            continue
        char = line[i]
        if char == "#":
            break
        for quote in ('"""', "'''", '"', "'"):
            if line.startswith(quote, i):
                in_string = quote
                i += len(quote)
                break
        else:
            if char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
            i += 1
    if in_string in ('"', "'"):
        in_string = None  # a single-line string cannot span lines
    return depth, in_string


def _sort_keys(blocks: list[_Block], generator: bool) -> None:
    """Each block's place: per path part, (rank in its parent's order, element index)."""
    first_seen: dict[tuple[str, ...], int] = {}
    elements: dict[tuple[str, ...], int] = {}
    for block in blocks:
        if block.array:
            elements[block.path] = elements.get(block.path, -1) + 1
        key: list[tuple[int, int]] = []
        for depth in range(len(block.path)):
            parent, name = block.path[:depth], block.path[depth]
            order = _order_for(parent, generator)
            if name in order:
                rank = order.index(name)
            else:
                rank = len(order) + first_seen.setdefault((*parent, name), len(first_seen))
            key.append((rank, elements.get(block.path[: depth + 1], 0)))
        block.sort_key = tuple(key)


def _format_entries(lines: Sequence[str], path: tuple[str, ...], generator: bool) -> list[str]:
    """The key/value lines of one table, reordered and rendered by tomlkit; comments kept."""
    text = "\n".join(lines).strip("\n")
    if not text.strip():
        return []
    container: Container = tomlkit.parse(text + "\n")
    groups: list[tuple[list[str], Key, Item]] = []
    pending: list[str] = []
    for key, item in container.body:
        if key is None:
            if isinstance(item, Comment):
                pending.append(item.as_string().strip())
            continue
        groups.append((pending, key, item))
        pending = []
    order = _order_for(path, generator)

    def rank(entry: tuple[int, tuple[list[str], Key, Item]]) -> tuple[int, int]:
        index, (_c, key, _i) = entry
        first = key.key if isinstance(key, SingleKey) else key.as_string().split(".")[0].strip()
        first = first.strip('"').strip("'")
        return (order.index(first), index) if first in order else (len(order), index)

    out: list[str] = []
    for _index, (comments, key, item) in sorted(enumerate(groups), key=rank):
        out.extend(comments)
        out.extend(_render_entry("", key, item, path, generator))
    out.extend(pending)
    return out


def _key_text(key: Key) -> str:
    if isinstance(key, SingleKey):
        return SingleKey(key.key).as_string()
    return ".".join(part.strip() for part in key.as_string().split("."))


def _render_entry(
    prefix: str, key: Key, item: Item, path: tuple[str, ...], generator: bool
) -> list[str]:
    """``key = value`` lines; a dotted-key table (``agent.model = ...``) as its own lines."""
    name = prefix + _key_text(key)
    if isinstance(item, Table) and not isinstance(item, InlineTable):
        inner = (*path, str(key.key) if isinstance(key, SingleKey) else name)
        order = _order_for(inner, generator)
        entries = [(k, v) for k, v in item.value.body if k is not None]
        entries.sort(
            key=lambda e: order.index(str(e[0].key)) if str(e[0].key) in order else len(order)
        )
        lines: list[str] = []
        for child_key, child in entries:
            lines.extend(_render_entry(name + ".", child_key, child, inner, generator))
        return lines
    if isinstance(item, String) and item.type is StringType.SLL:
        fresh = tomlkit.string(str(item))
        fresh.trivia.comment = item.trivia.comment
        item = fresh
    comment = item.trivia.comment.strip()
    item.trivia.indent = ""
    item.trivia.comment = ""
    item.trivia.comment_ws = ""
    item.trivia.trail = ""
    return [f"{name} = {item.as_string().strip()}" + (f"  {comment}" if comment else "")]


def format_text(text: str, *, generator: bool) -> str:
    """``text`` in the canonical layout (see the module doc). Raises ``tomllib``'s or
    tomlkit's parse error for a file that is not TOML."""
    tomllib.loads(text)  # a clear parse error before any reshaping
    preamble, blocks = _split(text)
    _sort_keys(blocks, generator)
    head: list[str] = []
    leading: list[str] = []
    for index, line in enumerate(preamble):
        if line.strip() and not line.lstrip().startswith("#"):
            leading = preamble[index:]
            break
        head.append(line.strip())
    while head and not head[-1]:
        head.pop()
    out: list[str] = [line for line in head]
    entries = _format_entries(leading, (), generator)
    if entries:
        if out:
            out.append("")
        out.extend(entries)
    for block in sorted(blocks, key=lambda b: b.sort_key):
        if out:
            out.append("")
        out.extend(line.strip() for line in block.comments)
        out.append(block.header)
        out.extend(_format_entries(block.body, block.path, generator))
    return "\n".join(out).rstrip("\n") + "\n"


def same_meaning(before: str, after: str) -> bool:
    """Whether two texts parse to the same data (formatting must never change it)."""
    return tomllib.loads(before) == tomllib.loads(after)
