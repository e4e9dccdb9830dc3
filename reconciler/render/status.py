"""``osmosis-reconciler status`` rendered: one table, one row per address (text and
markdown), and its JSON body. The rows (``model.AddressStatus``) come from ``engine.status``; nothing is computed here.

The text table fits 100 columns: an address too long for its column is shortened in the
middle (``terminal-bench/…/smoke``: both ends say which one it is), never wrapped; the JSON
and markdown carry it whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from reconciler.model import AddressStatus
from reconciler.render.pieces import md_cell, shorten_middle
from reconciler.results.table import Column, fit_table

TEXT_WIDTH = 100
ADDRESS_MAX = 28
"""An address longer than this is shortened in the middle in the text table."""
HEADERS = ("address", "run", "status", "downloaded", "baseline", "verdict", "pending", "blocked")


def _downloaded(value: bool | None) -> str:
    return "–" if value is None else ("yes" if value else "no")


def _verdict(row: AddressStatus) -> str | None:
    """The baseline's verdict and the decision's, each when there is one."""
    parts = [row.verdict] if row.verdict else []
    if row.decision is not None:
        parts.append(f"decision {row.decision.describe()}")
    return "; ".join(parts) or None


def _baseline(row: AddressStatus) -> str:
    verdict = _verdict(row)
    if row.baseline is None:
        return verdict or "–"
    return f"{row.baseline}: {verdict}" if verdict else row.baseline


def _pending(row: AddressStatus) -> str:
    parts = [*row.pending, *(["blocked"] if row.blocked else [])]
    return ", ".join(parts) or "–"


def _cells(row: AddressStatus, address_width: int) -> list[str]:
    return [
        shorten_middle(row.address, address_width),
        row.run or "–",
        row.status or "–",
        _downloaded(row.downloaded),
        _baseline(row),
        _pending(row),
    ]


TEXT_COLUMNS = (
    Column("address"),
    Column("run"),
    Column("status"),
    Column("downloaded"),
    Column("baseline: verdict", wrap=True),
    Column("pending", wrap=True),
)
"""The text table: the baseline and its verdict share a column, and a blocked address says
``blocked`` in the pending column with its reason below the table, so eight facts fit 100
columns; the JSON and markdown keep each in its own field."""


def render_status_text(rows: Sequence[AddressStatus], width: int = TEXT_WIDTH) -> str:
    if not rows:
        return "No addresses: no config and no recorded run.\n"
    lines, _dropped = fit_table(TEXT_COLUMNS, [_cells(r, ADDRESS_MAX) for r in rows], width)
    reasons = [f"  blocked: {r.address}: {r.blocked}" for r in rows if r.blocked]
    if reasons:
        reasons.append("  (osmosis-plan shows how to fix each)")
    pending = sum(1 for r in rows if r.pending)
    blocked = sum(1 for r in rows if r.blocked)
    summary = f"{len(rows)} address(es): {pending} with something pending, {blocked} blocked."
    return "\n".join([*lines, *([""] + reasons if reasons else []), "", summary]) + "\n"


def render_status_markdown(rows: Sequence[AddressStatus]) -> str:
    out = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for row in rows:
        cells = [
            f"`{row.address}`",
            row.run or "–",
            row.status or "–",
            _downloaded(row.downloaded),
            row.baseline or "–",
            _verdict(row) or "–",
            ", ".join(row.pending) or "–",
            row.blocked or "–",
        ]
        out.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
    return "\n".join(out) + "\n"


def render_decision_lines(rows: Sequence[AddressStatus]) -> list[str]:
    """One markdown bullet per address with a decision (the PR comment shows them open)."""
    return [
        f"- `{r.address}`: {md_cell(r.decision.describe())}" for r in rows if r.decision is not None
    ]


def status_to_dict(rows: Sequence[AddressStatus], **header: Any) -> dict[str, Any]:
    """The ``status`` document's body: ``{format_version, addresses: [...]}`` (the envelope
    adds the rest)."""
    return {
        **header,
        "addresses": [
            {
                "address": r.address,
                "run": r.run,
                "run_id": r.run_id,
                "status": r.status,
                "downloaded": r.downloaded,
                "baseline": r.baseline,
                "verdict": r.verdict,
                "decision": msgspec.to_builtins(r.decision) if r.decision else None,
                "pending": list(r.pending),
                "blocked": r.blocked,
            }
            for r in rows
        ],
    }
