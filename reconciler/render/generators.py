"""How the plan shows run generators: the product line of each in text, a grid per
generator in the PR comment, and their JSON (``generators[]`` and each action's ``source``).

Pure: takes the ``Plan`` and returns strings or plain data.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from reconciler.escaping import escape_text
from reconciler.model import (
    Action,
    CellSource,
    GeneratorProduct,
    Plan,
    PlanItem,
    ResultRow,
)
from reconciler.results import numbers


def generator_lines(plan: Plan) -> list[str]:
    """``benchmarks/compare/frontier.matrix.toml  generator  benchmark(3) × model(4) ...``."""
    if not plan.generators:
        return []
    width = max(len(g.file) for g in plan.generators)
    out = ["Generators:"]
    for product in plan.generators:
        out.append(f"  {escape_text(product.file).ljust(width)}  {product.product_line()}")
    return [*out, ""]


def source_line(item: PlanItem) -> str | None:
    """The ``# ...`` line naming the generator cell of an item (None for a plain file)."""
    source = item.source
    if source is None:
        return None
    if source.note:
        return f"# {escape_text(source.note)} in {escape_text(source.file)}"
    cell = " × ".join(f"{axis}={key}" for axis, key in source.cell.items())
    return f"# from {escape_text(source.file)} (cell {escape_text(cell)})"


def _cell_text(item: PlanItem | None, in_product: bool) -> str:
    if item is None:
        return "=" if in_product else "excluded"
    if item.action in (Action.SUBMIT, Action.REPLACE):
        return f"{item.action.symbol} {item.attempts:,}"
    return f"{item.action.symbol} {item.action.value}"


def _md(text: str) -> str:
    return escape_text(text).replace("|", "\\|")


def generator_grids(plan: Plan) -> str:
    """One markdown grid per generator: rows are the first axis, columns the others."""
    if not plan.generators:
        return ""
    by_address: dict[str, PlanItem] = {}
    for item in plan.items:
        by_address.setdefault(item.address, item)
    out = ""
    for product in plan.generators:
        axes = {name: list(keys) for name, keys in product.axes.items()}
        for item in plan.items:
            if item.source is None or item.source.file != product.file:
                continue
            for axis, key in item.source.cell.items():
                if axis in axes and key not in axes[axis]:
                    axes[axis].append(key)
        names = list(axes)
        first, rest = names[0], names[1:]
        known = {name: set(product.axes[name]) for name in names}

        def label(axis: str, key: str, known: Mapping[str, set[str]] = known) -> str:
            return key if key in known[axis] else f"{key} (removed)"

        columns: list[tuple[str, ...]] = (
            list(itertools.product(*(axes[name] for name in rest))) if rest else [()]
        )
        heads = [" / ".join(label(n, k) for n, k in zip(rest, col, strict=True)) for col in columns]
        cells = set(product.cells)
        title = " × ".join(names)
        out += f"**{_md(product.file)}** — {_md(title)}: {_md(product.product_line())}\n\n"
        out += "| " + " | ".join([_md(first) if rest else "", *map(_md, heads or ["run"])]) + " |\n"
        out += "|---" * (len(columns) + 1) + "|\n"
        for key in axes[first]:
            row = [label(first, key)]
            for column in columns:
                address = product.prefix + "/" + "/".join((key, *column))
                row.append(_cell_text(by_address.get(address), address in cells))
            out += "| " + " | ".join(_md(c) for c in row) + " |\n"
        out += "\n"
    return out


def _score_text(row: ResultRow) -> str:
    """The cell's headline, as every surface shows it (``results.numbers``)."""
    if row.agent.pass_at_1 is None:
        return row.status or "no scores"
    text = numbers.headline_text(numbers.summary_numbers(row.agent))
    return text + ("*" if row.status != "finished" else "")


def generator_result_grids(plan: Plan) -> str:
    """The finished-run results of each generator as its grid (markdown, for the PR
    comment): rows the first axis, columns the others; a cell shows its ended run's pass@1
    with its 95% CI (the first agent's; ``*`` a run that did not finish), else why it has
    none: what this plan does to it (``+ submit``, ``↓ download``, ...), ``no ended run``, or
    ``excluded``. Only generators with at least one ended run are shown."""
    if not plan.generators or not plan.results:
        return ""
    scores: dict[str, ResultRow] = {}
    for row in plan.results:
        if (
            row.address not in scores
            or row.agent.agent_index < scores[row.address].agent.agent_index
        ):
            scores[row.address] = row
    planned: dict[str, PlanItem] = {}
    for item in plan.items:
        planned.setdefault(item.address, item)
    out = ""
    partial = False
    for product in plan.generators:
        if not any(address in scores for address in product.cells):
            continue
        names = list(product.axes)
        first, rest = names[0], names[1:]
        columns: list[tuple[str, ...]] = (
            list(itertools.product(*(product.axes[name] for name in rest))) if rest else [()]
        )
        heads = [" / ".join(column) for column in columns]
        cells = set(product.cells)
        out += (
            f"**{_md(product.file)}**: pass@1 (95% CI) of each cell's ended run, "
            f"{_md(first)} (rows) × {_md(' × '.join(rest) or 'run')} (columns)\n\n"
        )
        out += "| " + " | ".join([_md(first), *map(_md, heads or ["pass@1"])]) + " |\n"
        out += "|---" + "|---:" * len(columns) + "|\n"
        for key in product.axes[first]:
            texts = [key]
            for column in columns:
                address = product.prefix + "/" + "/".join((key, *column))
                if address in scores:
                    text = _score_text(scores[address])
                    partial = partial or text.endswith("*")
                elif address not in cells:
                    text = "excluded"
                elif address in planned:
                    item = planned[address]
                    text = f"{item.action.symbol} {item.action.value}"
                else:
                    text = "no ended run"
                texts.append(text)
            out += "| " + " | ".join(_md(c) for c in texts) + " |\n"
        out += "\n"
    if partial:
        out += "_* the run did not finish: a partial score._\n\n"
    return out


# --------------------------------------------------------------------------- json


def source_to_dict(source: CellSource) -> dict[str, Any]:
    return {
        "file": source.file,
        "kind": source.kind,
        "cell": dict(source.cell),
        "line": source.line,
        "note": source.note,
    }


def generator_to_dict(product: GeneratorProduct) -> dict[str, Any]:
    return {
        "file": product.file,
        "prefix": product.prefix,
        "axes": {name: list(keys) for name, keys in product.axes.items()},
        "element_lines": dict(product.element_lines),
        "cells": list(product.cells),
        "excluded": product.excluded,
        "included": product.included,
        "runs": product.runs,
        "on_remove": product.on_remove,
        "removed": [removal.model_dump() for removal in product.removed],
        "moved": [
            {"line": m.line, "label": m.label, "pairs": [list(p) for p in m.pairs]}
            for m in product.moves
        ],
        "product": product.product_line(),
    }
