"""How an issue shared by several cells of a generator names them."""

from __future__ import annotations

from collections.abc import Sequence

CELLS_NAMED = 3
"""How many cells an issue shared by several cells names before counting the rest."""


def cells_label(cells: Sequence[str]) -> str:
    """``a/b`` for one cell; ``4 cells (a/b, a/c, a/d and 1 more)`` for several."""
    if len(cells) == 1:
        return cells[0]
    named = ", ".join(cells[:CELLS_NAMED])
    more = len(cells) - CELLS_NAMED
    return f"{len(cells)} cells ({named}" + (f" and {more} more)" if more > 0 else ")")
