"""The grid's text form keeps to the width it is given: columns go to further blocks and the
title and the partial-run legend wrap; no number or name is cut."""

from __future__ import annotations

import pytest

from reconciler.results.grid import Grid, GridCell, render_grids_text
from reconciler.results.stats import Interval


def _grid(states: dict[tuple[str, str], str]) -> Grid:
    rows = ("tb-smoke", "gdpval")
    columns = ("gpt-5-2", "gpt-5", "gpt-5-mini")
    cells = []
    for row in rows:
        for column in columns:
            state = states.get((row, column), "scored")
            scored = state in ("scored", "partial")
            cells.append(
                GridCell(
                    row=row,
                    column=column,
                    address=f"compare/{row}/{column}",
                    state=state,
                    pass_at_1=0.473 if scored else None,
                    ci=Interval(0.383, 0.565, "wilson") if scored else None,
                    agents=1,
                )
            )
    return Grid(
        file="benchmarks/compare/frontier.matrix.toml",
        row_axis="benchmark",
        column_axes=("model",),
        rows=rows,
        columns=columns,
        cells=tuple(cells),
    )


@pytest.mark.parametrize("width", [40, 50, 64, 100])
@pytest.mark.parametrize("partial", [False, True])
def test_every_line_fits_the_width(width: int, partial: bool) -> None:
    states = {("gdpval", "gpt-5-2"): "partial"} if partial else {}
    text = render_grids_text([_grid(states)], width=width)
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert too_long == [], text
    assert ("partial: the run did not finish" in " ".join(text.split())) is partial
    assert text.count("47.3% [38.3–56.5]") == 6


def test_the_legend_is_whole_on_a_wide_terminal() -> None:
    text = render_grids_text([_grid({("gdpval", "gpt-5"): "partial"})], width=100)
    assert "* partial: the run did not finish or its outputs are incomplete" in text.splitlines()
