"""Write and edit benchmark config files with tomlkit, keeping what people wrote.

Configs are written by people and reviewed in pull requests, so a tool that edits one must
leave everything it does not change exactly as it was: comments, blank lines, key order,
inline vs. standard tables, quoting. tomlkit keeps all of that through a parse/dump round
trip (the lockfile is machine-written and has its own emitter, see ``reconciler.state.lockfile``).

* ``render_config(data, header)`` writes a new config in the layout of the example configs:
  a comment header, then ``[experiment]``, ``[tasks]``, ``[[agents]]`` with ``[agents.model]``
  (and its ``extra_headers``) and ``[agents.env]``, ``[execution]``, ``[verifier]``,
  ``[secrets]``, ``[env]``, one blank line between tables;
* ``set_key(text, path, value)`` changes one key (``None`` removes it);
* ``update_config(text, data)`` makes a document hold exactly ``data`` while touching only
  the keys whose values differ.

TOML has no null: a ``None`` in ``data`` means "no such key".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Array, InlineTable, Item, Table

from reconciler.config import rules
from reconciler.errors import ConfigError, ConfigIssue

__all__ = ["render_config", "set_key", "update_config"]

# The order keys take in a generated config: the schema's for top-level tables (platform-api.md
# §9.2), the example configs' inside an agent and its model.
_AGENT_ORDER = ("harness", "harness_api_key_secret", "model", "env")
_MODEL_ORDER = (
    "type",
    "base_url",
    "model",
    "api_key_secret",
    "base_model",
    "lora_model_name",
    "extra_headers",
)
_ORDERS: dict[str, tuple[str, ...]] = {
    "": rules.TOP_LEVEL_KEYS,
    "tasks": rules.TASKS_KEYS,
    "execution": rules.EXECUTION_KEYS,
    "agents": _AGENT_ORDER,
    "agents.model": _MODEL_ORDER,
}

Path_ = Sequence[str | int]


# --------------------------------------------------------------------------- new files


def render_config(data: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """A new config holding ``data`` (parsed-TOML shape), with ``header`` as comment lines."""
    doc = tomlkit.document()
    for line in header:
        doc.add(tomlkit.comment(line) if line else tomlkit.nl())
    for key in _ordered(data, ""):
        value = data[key]
        if value is None:
            continue
        if key == "agents" and _is_table_list(value):
            doc.append(key, _agents(value))
        elif isinstance(value, Mapping):
            doc.append(key, _table(value, key))
        else:
            doc.append(key, _item(value))
    text = tomlkit.dumps(doc)
    # tomlkit puts no blank line between the header comments and the first table.
    if header:
        first_table = text.find("\n[")
        if first_table != -1 and not text[:first_table].endswith("\n"):
            text = text[: first_table + 1] + "\n" + text[first_table + 1 :]
    return text


def _ordered(data: Mapping[str, Any], where: str) -> list[str]:
    order = _ORDERS.get(where, ())
    known = [k for k in order if k in data]
    return known + [k for k in data if k not in order]


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _table(data: Mapping[str, Any], where: str, *, blank_first: bool = False) -> Table:
    """A standard table: scalars first, then sub-tables (TOML requires that order)."""
    table = tomlkit.table()
    if blank_first:
        table.add(tomlkit.nl())
    keys = _ordered(data, where)
    for key in keys:
        value = data[key]
        if value is not None and not isinstance(value, Mapping):
            table.append(key, _item(value))
    for key in keys:
        value = data[key]
        if isinstance(value, Mapping) and value:
            table.append(key, _table(value, f"{where}.{key}"))
    return table


def _agents(agents: list[Mapping[str, Any]]) -> AoT:
    aot = tomlkit.aot()
    for agent in agents:
        aot.append(_agent_table(agent))
    return aot


def _agent_table(agent: Mapping[str, Any]) -> Table:
    # An agent with only sub-tables (a hosted model on the official scaffold) gets a blank
    # line after ``[[agents]]``, as in the example configs.
    scalars = any(v is not None and not isinstance(v, Mapping) for v in agent.values())
    return _table(agent, "agents", blank_first=not scalars)


def _item(value: Any, *, inline: bool = False) -> Item:
    """A TOML value; mappings inside arrays or inline tables stay inline."""
    if isinstance(value, Mapping):
        table = tomlkit.inline_table()
        for key, inner in value.items():
            if inner is not None:
                table.append(key, _item(inner, inline=True))
        return table
    if isinstance(value, list | tuple):
        array = tomlkit.array()
        for inner in value:
            array.append(_item(inner, inline=True))
        return array
    if isinstance(value, bool | int | float | str | datetime | date | time):
        return tomlkit.item(value)
    raise TypeError(f"a {type(value).__name__} cannot be written to TOML")


# --------------------------------------------------------------------------- edits


def _parse(text: str, file: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        line = getattr(exc, "line", None)
        column = getattr(exc, "col", None)
        raise ConfigError(
            [
                ConfigIssue(
                    file,
                    line,
                    column,
                    "",
                    f"Invalid TOML: {exc}",
                    "fix the TOML syntax there (reference: https://toml.io/en/v1.0.0)",
                )
            ]
        ) from None


def set_key(text: str, path: Path_, value: Any, *, file: str = "<config>") -> str:
    """``text`` with the key at ``path`` set to ``value`` (None removes it), all else kept.

    ``path`` is keys and array indexes from the top, e.g. ``("agents", 0, "model", "model")``.
    Missing tables on the way are created (inline inside an inline table). A trailing
    comment on a replaced value stays.
    """
    if not path:
        raise ValueError("set_key needs a non-empty path")
    doc = _parse(text, file)
    container: Any = doc
    created: Table | None = None
    for depth, step in enumerate(path):
        last = depth == len(path) - 1
        if isinstance(step, int):
            if not isinstance(container, AoT | Array) or not -len(container) <= step < len(
                container
            ):
                raise KeyError(f"{_describe(path[: depth + 1])}: no such array element")
        elif not isinstance(container, Table | InlineTable | Container):
            raise KeyError(f"{_describe(path[:depth])} is not a table")
        if last:
            break
        if isinstance(step, str) and step not in container:
            if value is None:
                return text  # removing a key under a table that does not exist: nothing to do
            container[step] = (
                tomlkit.inline_table() if isinstance(container, InlineTable) else tomlkit.table()
            )
            if created is None and isinstance(container[step], Table):
                created = container[step]
        container = container[step]
    _assign(container, path[-1], value)
    if created is not None:
        _trailing_blank(created)
    return _dump(doc, text)


def update_config(text: str, data: Mapping[str, Any], *, file: str = "<config>") -> str:
    """``text`` changed so that it parses to exactly ``data``, touching only what differs.

    Keys whose value is already equal (same types too: ``1`` is not ``1.0``) keep their
    formatting and comments; changed values are replaced in place; missing keys are added
    at the end of their table; keys not in ``data`` are removed.
    """
    doc = _parse(text, file)
    _sync(doc, data)
    return _dump(doc, text)


def _dump(doc: tomlkit.TOMLDocument, original: str) -> str:
    text = tomlkit.dumps(doc)
    # Removing the last table, or adding one at the end, can leave blank lines at the end.
    if original.endswith("\n") and not original.endswith("\n\n"):
        text = text.rstrip("\n") + "\n"
    return text


def _trailing_blank(table: Table) -> None:
    """A blank line after a table added to an existing document, before the next header."""
    body = table.value.body
    last = body[-1][1] if body else None
    if isinstance(last, Table):
        _trailing_blank(last)
    elif isinstance(last, AoT) and len(last):
        _trailing_blank(last[-1])
    else:
        table.add(tomlkit.nl())


def _sync(container: Any, desired: Mapping[str, Any]) -> None:
    wanted = {k: v for k, v in desired.items() if v is not None}
    for key in [k for k in container if k not in wanted]:
        del container[key]
    for key, value in wanted.items():
        if key not in container:
            _assign(container, key, value)
            continue
        current = container[key]
        if isinstance(value, Mapping) and isinstance(current, Table | InlineTable):
            _sync(current, value)
        elif (
            isinstance(value, list)
            and isinstance(current, AoT | Array)
            and len(current) == len(value)
            and _is_table_list(value)
            and all(isinstance(c, Table | InlineTable) for c in current)
        ):
            for element, wanted_element in zip(current, value, strict=True):
                _sync(element, wanted_element)
        elif isinstance(value, list) and isinstance(current, AoT) and _is_table_list(value):
            _sync_aot(current, value)
        elif not _same(_plain(current), value):
            _assign(container, key, value)


def _sync_aot(aot: AoT, desired: list[Mapping[str, Any]]) -> None:
    """Shared elements synced in place; extra ones dropped, new ones appended."""
    for element, wanted in zip(aot, desired, strict=False):
        _sync(element, wanted)
    while len(aot) > len(desired):
        del aot[len(aot) - 1]
    for wanted in desired[len(aot) :]:
        element = _agent_table(wanted)
        _trailing_blank(element)
        aot.append(element)


def _assign(container: Any, key: str | int, value: Any) -> None:
    if value is None:
        if isinstance(key, int) or key in container:
            del container[key]
        return
    inline = isinstance(container, InlineTable | Array)
    if isinstance(value, Mapping) and not inline:
        table = _table(value, "")
        _trailing_blank(table)
        new: Item = table
    elif _is_table_list(value) and not inline:
        new = tomlkit.aot()
        for element in value:
            table = _agent_table(element)
            _trailing_blank(table)
            new.append(table)
    else:
        new = _item(value, inline=inline)
    container[key] = new


def _plain(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types (TOML ``1`` and ``1.0`` differ, as do ``true`` and ``1``)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _describe(path: Path_) -> str:
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else ("." if text else "") + step
    return text
