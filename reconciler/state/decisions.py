"""The lockfile's ``[decisions."ADDR"]`` tables: one per decision (docs/deciding.md).

Layout (version 1; only when a config has ``[decide]`` and its first batch was planned,
so a lockfile without decisions is byte-for-byte what it was)::

    [decisions."tb/ab"]
    version = 1
    max_tasks = 468
    fixed_tasks = 452
    order = ["t-17", "t-3", ...]      # the seeded stratified order, fixed before any result
    batch_ends = [117, 234]
    batch_runs = ["run-a", "run-b"]
    dollars_spent = 41.5
    verdict = "continue"

    [decisions."tb/ab".spec]          # the [decide] table as frozen at the first batch
    margin_pp = 5.0
    ...

    [[decisions."tb/ab".looks]]       # one per look, in order
    index = 1
    tasks = 117
    total = 3.0                       # Σd and Σd²: a replay recomputes the look exactly
    ...

Scalars in field order, None omitted; floats by ``repr`` (they round-trip exactly).
"""

from __future__ import annotations

from typing import Any

from reconciler.model.decision import DecisionRecord, DecisionSpec, LookRecord
from reconciler.state.tables import shape_error, validate
from reconciler.state.toml_emit import emit_table, inline_value, toml_key
from reconciler.toml_locate import KeyLines

__all__ = ["build_decisions", "emit_decisions"]

_SCALARS = tuple(name for name in DecisionRecord.field_names() if name not in ("spec", "looks"))


def emit_decisions(out: list[str], decisions: dict[str, DecisionRecord]) -> None:
    """Append every decision's tables, addresses sorted."""
    for address in sorted(decisions):
        record = decisions[address]
        header = f"decisions.{toml_key(address)}"
        emit_table(out, header, [(name, getattr(record, name)) for name in _SCALARS])
        emit_table(
            out,
            f"{header}.spec",
            [(name, getattr(record.spec, name)) for name in DecisionSpec.field_names()],
        )
        for look in record.looks:
            out.append("")
            out.append(f"[[{header}.looks]]")
            for name in LookRecord.field_names():
                out.append(f"{toml_key(name)} = {inline_value(getattr(look, name))}")


def build_decisions(raw: Any, filename: str, locator: KeyLines) -> dict[str, DecisionRecord]:
    """The ``decisions`` table of a parsed lockfile, each checked against its type."""
    if not isinstance(raw, dict):
        raise shape_error(filename, locator, ["decisions"], "must be a table of addresses")
    decisions = {}
    for address, table in raw.items():
        base: list[str | int] = ["decisions", address]
        if not isinstance(table, dict):
            raise shape_error(filename, locator, base, "must be a table")
        version = table.get("version", 1)
        if version != 1:
            raise shape_error(
                filename,
                locator,
                [*base, "version"],
                f"is {version!r}; this osmosis-reconciler reads decision version 1 "
                "(upgrade it to read this lockfile)",
            )
        decisions[address] = validate(DecisionRecord, dict(table), filename, locator, base)
    return decisions
