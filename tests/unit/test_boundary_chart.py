"""The HTML report's boundary chart (issue 39): a decision's statistic per look against its
boundaries, as inline SVG: deterministic, escaped, no external asset."""

from __future__ import annotations

import math
import re

from reconciler.model.decision import DecisionRecord, DecisionSpec, LookRecord
from reconciler.results import svg
from reconciler.results.html import render_html

LOOKS = (svg.Look(21, 3.516, 3.873, "continue"), svg.Look(41, 4.199, 2.774, "better"))


def _points(chart: str, dashed: bool) -> list[list[tuple[float, float]]]:
    lines = re.findall(r'<polyline points="([^"]+)"([^>]*)/>', chart)
    return [
        [(float(p.split(",")[0]), float(p.split(",")[1])) for p in points.split()]
        for points, rest in lines
        if ("stroke-dasharray" in rest) == dashed
    ]


def test_the_statistic_is_drawn_against_both_boundaries_at_each_look() -> None:
    chart = svg.boundary_chart("looks", 82, LOOKS)
    upper, lower = _points(chart, dashed=True)
    (statistic,) = _points(chart, dashed=False)
    middle = (upper[0][1] + lower[0][1]) / 2  # z = 0 lies between +c and −c
    assert [x for x, _ in statistic] == [x for x, _ in upper] == [x for x, _ in lower]
    assert statistic[0][1] > upper[0][1]  # look 1 inside the band: below +c on screen
    assert statistic[1][1] < upper[1][1]  # look 2 past +c: it stopped for better
    assert all(y < middle for _, y in upper) and all(y > middle for _, y in lower)
    assert chart.count("<circle ") == 2
    assert "look 2: 41 tasks, statistic +4.199 vs boundary ±2.774: better" in chart
    assert chart == svg.boundary_chart("looks", 82, LOOKS)  # same input, same bytes


def test_an_infinite_boundary_is_clipped_to_the_plot() -> None:
    chart = svg.boundary_chart("looks", 10, (svg.Look(3, 0.5, math.inf, "continue"),))
    for points in _points(chart, dashed=True):
        assert all(0 <= y <= 260 for _, y in points)


def test_the_report_escapes_the_address_and_fetches_nothing() -> None:
    address = 'tb/<script>alert("x")</script>'
    record = DecisionRecord(
        spec=DecisionSpec(margin_pp=16, seed=2),
        max_tasks=82,
        fixed_tasks=79,
        order=tuple(f"t-{i}" for i in range(82)),
        batch_ends=(21,),
        batch_runs=("run-1",),
        looks=(
            LookRecord(
                index=1, tasks=21, total=5.3, squares=6.1, estimate=0.254, statistic=3.516,
                boundary=3.873, alpha_spent=0.0001, verdict="continue",
            ),
        ),
    )  # fmt: skip
    page = render_html([], {}, decisions={address: record})
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    assert 'data-chart="boundaries"' in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
