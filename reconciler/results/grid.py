"""A run generator's runs as its grid (pure): rows are the generator's first axis, columns
the others (``benchmark × model``: one row per benchmark, one column per model), and each
cell the pass@1 of its address's newest run with its 95% interval, or why it has none:
``pending``/``running`` (the run has not ended), ``failed``/``stopped`` with no scores,
``not downloaded`` (ended, outputs not fetched yet), ``not submitted`` (no run recorded),
``excluded`` (``[[exclude]]`` took the cell out). A partial run's score is marked ``*``.

Text fits the width by splitting the columns into blocks that each repeat the row labels;
no number or name is ever cut.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.model import GeneratorProduct, LockState, RunStatus
from reconciler.results.report import AddressReport, interval, pct
from reconciler.results.stats import Interval

__all__ = [
    "Grid",
    "GridCell",
    "build_grids",
    "grid_to_dict",
    "render_grids_markdown",
    "render_grids_text",
]

PARTIAL_MARK = "*"


@dataclass(frozen=True)
class GridCell:
    row: str
    column: str
    address: str | None
    """None for an excluded cell."""
    state: str
    """``scored``, ``partial`` (scored, but the run did not finish or its outputs are
    incomplete), or why there is no score: ``pending``, ``running``, ``not downloaded``,
    ``not submitted``, ``excluded``, or the ended run's status (``failed``, ``stopped``)."""
    run: str | None = None
    pass_at_1: float | None = None
    ci: Interval | None = None
    agents: int = 0
    """Agents of the run (the cell shows the first)."""
    errored: int | None = None
    """The first agent's errored attempts (shown beside its pass@1, as everywhere)."""

    @property
    def scored(self) -> bool:
        return self.state in ("scored", "partial")

    @property
    def text(self) -> str:
        if not self.scored:
            return self.state
        shown = pct(self.pass_at_1)
        if interval(self.ci) != "–":
            shown += f" {interval(self.ci)}"
        if self.errored is not None:
            shown += f" · {self.errored} errored"
        return shown + (PARTIAL_MARK if self.state == "partial" else "")


@dataclass(frozen=True)
class Grid:
    file: str
    row_axis: str
    column_axes: tuple[str, ...]
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    cells: tuple[GridCell, ...]
    """Row-major: ``rows × columns``."""

    def cell(self, row: str, column: str) -> GridCell:
        return self.cells[self.rows.index(row) * len(self.columns) + self.columns.index(column)]


def _why_unscored(state: LockState, address: str) -> str:
    entry = state.runs.get(address)
    if entry is None:
        return "not submitted"
    if entry.run_id is None:
        return "submitting"
    status = RunStatus.of(entry.status)
    if status.is_active:
        return "running" if entry.status == "running" else "pending"
    if entry.downloads is None or not entry.downloads.complete:
        return "not downloaded"
    return entry.status or "no scores"


def _cell(
    row: str,
    column: str,
    address: str | None,
    state: LockState,
    reports: Mapping[str, AddressReport],
) -> GridCell:
    if address is None:
        return GridCell(row, column, None, "excluded")
    report = reports.get(address)
    entry = state.runs.get(address)
    newest = report.runs[0].report if report is not None and report.runs else None
    current = entry is not None and newest is not None and newest.run.run_id == entry.run_id
    if newest is not None and current and newest.agents and newest.agents[0].pass_at_1 is not None:
        first = newest.agents[0]
        return GridCell(
            row,
            column,
            address,
            "partial" if newest.run.partial else "scored",
            run=newest.run.label,
            pass_at_1=first.pass_at_1,
            ci=first.ci,
            errored=first.numbers.errored,
            agents=len(newest.agents),
        )
    run = entry.run_name or entry.run_id if entry is not None else None
    return GridCell(row, column, address, _why_unscored(state, address), run=run)


def build_grids(
    products: Sequence[GeneratorProduct],
    cells: Mapping[str, Mapping[str, str]],
    state: LockState,
    reports: Mapping[str, AddressReport],
) -> list[Grid]:
    """One grid per generator. ``cells``: address -> its cell (axis -> element key), from
    the expanded configs' sources; ``reports``: address -> its ``build_address_reports``
    report (addresses without one have no scored run)."""
    grids: list[Grid] = []
    for product in products:
        names = list(product.axes)
        if not names:
            continue
        first, rest = names[0], names[1:]
        by_key: dict[tuple[str, ...], str] = {}
        for address in product.cells:
            cell = cells.get(address)
            if cell is not None:
                by_key[tuple(cell.get(axis, "") for axis in names)] = address
        columns: list[tuple[str, ...]] = [()]
        for axis in rest:
            columns = [(*c, key) for c in columns for key in product.axes[axis]]
        labels = tuple(" × ".join(c) if c else "pass@1" for c in columns)
        grid_cells = [
            _cell(row, label, by_key.get((row, *column)), state, reports)
            for row in product.axes[first]
            for column, label in zip(columns, labels, strict=True)
        ]
        grids.append(
            Grid(
                file=product.file,
                row_axis=first,
                column_axes=tuple(rest),
                rows=tuple(product.axes[first]),
                columns=labels,
                cells=tuple(grid_cells),
            )
        )
    return grids


def _title(grid: Grid) -> str:
    across = " × ".join(grid.column_axes) if grid.column_axes else "pass@1"
    return f"{grid.file}: {grid.row_axis} (rows) × {across} (columns), newest run per cell"


def _legend(grids: Sequence[Grid]) -> str | None:
    if any(c.state == "partial" for g in grids for c in g.cells):
        return f"{PARTIAL_MARK} partial: the run did not finish or its outputs are incomplete"
    return None


def render_grids_text(grids: Sequence[Grid], width: int = 100) -> str:
    """Each grid as a text table of at most ``width`` columns: columns that do not fit go
    to a further block under it, each block repeating the row labels."""
    out: list[str] = []
    for grid in grids:
        out += textwrap.wrap(
            _title(grid) + " (pass@1 with 95% CI and errored attempts):",
            width,
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        out.append("")
        row_width = max(len(grid.row_axis), *(len(r) for r in grid.rows))
        widths = [
            max(len(label), *(len(grid.cell(r, label).text) for r in grid.rows))
            for label in grid.columns
        ]
        blocks: list[list[int]] = [[]]
        used = 2 + row_width
        for index, w in enumerate(widths):
            if blocks[-1] and used + 2 + w > width:
                blocks.append([])
                used = 2 + row_width
            blocks[-1].append(index)
            used += 2 + w
        for block in blocks:
            header = "  " + grid.row_axis.ljust(row_width)
            rule = "  " + "-" * row_width
            for i in block:
                header += "  " + grid.columns[i].ljust(widths[i])
                rule += "  " + "-" * widths[i]
            out += [header.rstrip(), rule]
            for row in grid.rows:
                line = "  " + row.ljust(row_width)
                for i in block:
                    line += "  " + grid.cell(row, grid.columns[i]).text.ljust(widths[i])
                out.append(line.rstrip())
            out.append("")
    legend = _legend(grids)
    if legend:
        out += [*textwrap.wrap(legend, width, subsequent_indent="  "), ""]
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_grids_markdown(grids: Sequence[Grid]) -> str:
    """Each grid as a markdown table (for PR comments)."""
    out: list[str] = []
    for grid in grids:
        out.append(f"**{_md(_title(grid))}** (pass@1 with 95% CI and errored attempts)")
        out.append("")
        out.append("| " + " | ".join(_md(h) for h in (grid.row_axis, *grid.columns)) + " |")
        out.append("|---|" + "---:|" * len(grid.columns))
        for row in grid.rows:
            texts = [grid.cell(row, c).text for c in grid.columns]
            out.append("| " + " | ".join(_md(t) for t in (row, *texts)) + " |")
        out.append("")
    legend = _legend(grids)
    if legend:
        out += [f"_{_md(legend)}_", ""]
    return "\n".join(out)


def _interval_dict(ci: Interval | None) -> dict[str, Any] | None:
    if ci is None or ci.method == "none":
        return None
    return {"low": round(ci.low, 6), "high": round(ci.high, 6), "method": ci.method}


def grid_to_dict(grid: Grid) -> dict[str, Any]:
    return {
        "file": grid.file,
        "row_axis": grid.row_axis,
        "column_axes": list(grid.column_axes),
        "rows": list(grid.rows),
        "columns": list(grid.columns),
        "cells": [
            {
                "row": c.row,
                "column": c.column,
                "address": c.address,
                "state": c.state,
                "run": c.run,
                "pass_at_1": c.pass_at_1,
                "errored_attempts": c.errored,
                "ci": _interval_dict(c.ci),
                "agents": c.agents,
            }
            for c in grid.cells
        ],
    }
