"""Hand-written inline SVG charts (pure; no dependency, no script, no network).

``shared/results.md`` measured the options: plotly and Altair inline 0.9–4.8 MB per report
or fetch their JS from a CDN (0 charts offline); matplotlib costs ~100 MB of dependencies
and writes dates and random ids into its SVG. Four chart kinds are 50–100 lines each here,
deterministic (same input, same bytes), a few KB each, and readable from ``file://``.

Every chart is an ``<svg role="img" aria-label=...>`` with ``data-chart`` naming its kind
and ``<title>`` tooltips on its marks; the report puts a numeric table beside each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "Look",
    "Point",
    "boundary_chart",
    "cost_scatter",
    "task_grid",
    "trend_chart",
    "whisker_chart",
]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


@dataclass(frozen=True)
class Point:
    """One mark: a label, a value in [0, 1] and its interval (None: no interval)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    series: int = 0
    x: float | None = None
    """For the scatter: the x value (cost)."""


@dataclass(frozen=True)
class Look:
    """One look of a decision, as the boundary chart draws it (on the z scale)."""

    tasks: int
    statistic: float
    boundary: float
    """The efficacy boundary ``±c_k`` (may be infinite: nothing spent there)."""
    verdict: str


def _a(text: str) -> str:
    return escape(text, quote=True)


def _open(kind: str, width: int, height: int, label: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" data-chart="{kind}" role="img" '
        f'aria-label="{_a(label)}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" {FONT}>',
        f"<title>{_a(label)}</title>",
    ]


def _y_axis(out: list[str], left: int, top: int, plot_h: int, right: int) -> None:
    for tick in (0, 25, 50, 75, 100):
        y = top + plot_h - plot_h * tick / 100
        out.append(
            f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">{tick}%</text>'
        )


def trend_chart(label: str, runs: Sequence[str], points: Sequence[Point]) -> str:
    """pass@1 over runs (oldest first) per series, with a shaded 95% CI band."""
    width, height, left, top, bottom = 640, 260, 60, 16, 56
    plot_w, plot_h = width - left - 64, height - top - bottom
    step = plot_w / max(1, len(runs) - 1) if len(runs) > 1 else 0
    x_of = {run: left + (step * i if len(runs) > 1 else plot_w / 2) for i, run in enumerate(runs)}

    def y(v: float) -> float:
        return top + plot_h - plot_h * max(0.0, min(1.0, v))

    out = _open("trend", width, height, label)
    _y_axis(out, left, top, plot_h, left + plot_w)
    for run, x in x_of.items():
        out.append(
            f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle" fill="#555">'
            f"{_a(run)}</text>"
        )
    for series in sorted({p.series for p in points}):
        mine = [p for p in points if p.series == series and p.label in x_of]
        colour = PALETTE[series % len(PALETTE)]
        band = [p for p in mine if p.low is not None and p.high is not None]
        if len(band) >= 2:
            upper = " ".join(f"{x_of[p.label]:.1f},{y(p.high or 0):.1f}" for p in band)
            lower = " ".join(f"{x_of[p.label]:.1f},{y(p.low or 0):.1f}" for p in reversed(band))
            out.append(f'<polygon points="{upper} {lower}" fill="{colour}" fill-opacity="0.15"/>')
        if len(mine) >= 2:
            path = " ".join(f"{x_of[p.label]:.1f},{y(p.value):.1f}" for p in mine)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        for p in mine:
            ci = (
                f" [{(p.low or 0) * 100:.1f}–{(p.high or 0) * 100:.1f}]"
                if p.low is not None
                else ""
            )
            out.append(
                f'<circle cx="{x_of[p.label]:.1f}" cy="{y(p.value):.1f}" r="4" fill="{colour}">'
                f"<title>{_a(p.label)}: {p.value * 100:.1f}%{ci}</title></circle>"
            )
    out.append("</svg>")
    return "".join(out)


def whisker_chart(label: str, points: Sequence[Point]) -> str:
    """One row per agent: a dot at pass@1 and a whisker for its 95% CI."""
    row_h, right_pad, top = 26, 24, 20
    left = 16 + int(6.5 * max((len(p.label) for p in points), default=10))
    width = left + 440
    height = top + row_h * len(points) + 30
    plot_w = width - left - right_pad

    def x(v: float) -> float:
        return left + plot_w * max(0.0, min(1.0, v))

    out = _open("agents", width, height, label)
    for tick in (0, 25, 50, 75, 100):
        xx = x(tick / 100)
        out.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top - 6}" y2="{height - 24}" stroke="#e5e5e5"/>'
            f'<text x="{xx:.1f}" y="{height - 10}" text-anchor="middle" fill="#555">{tick}%</text>'
        )
    for i, p in enumerate(points):
        cy = top + row_h * i + row_h / 2
        colour = PALETTE[p.series % len(PALETTE)]
        out.append(f'<text x="{left - 8}" y="{cy + 4:.1f}" text-anchor="end">{_a(p.label)}</text>')
        if p.low is not None and p.high is not None:
            out.append(
                f'<line data-whisker="1" x1="{x(p.low):.1f}" x2="{x(p.high):.1f}" y1="{cy:.1f}" '
                f'y2="{cy:.1f}" stroke="{colour}" stroke-width="2"/>'
            )
        ci = f" [{(p.low or 0) * 100:.1f}–{(p.high or 0) * 100:.1f}]" if p.low is not None else ""
        out.append(
            f'<circle cx="{x(p.value):.1f}" cy="{cy:.1f}" r="5" fill="{colour}">'
            f"<title>{_a(p.label)}: {p.value * 100:.1f}%{ci}</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)


def cost_scatter(label: str, points: Sequence[Point]) -> str:
    """Cost per task (x) against pass@1 (y), with the Pareto frontier (cheapest for its
    score) drawn as a step line."""
    width, height, left, top, bottom = 640, 280, 56, 16, 40
    plot_w, plot_h = width - left - 16, height - top - bottom
    costs = [p.x for p in points if p.x is not None]
    high = max(costs) if costs else 1.0
    high = high * 1.1 if high > 0 else 1.0

    def xs(v: float) -> float:
        return left + plot_w * v / high

    def y(v: float) -> float:
        return top + plot_h - plot_h * max(0.0, min(1.0, v))

    out = _open("cost", width, height, label)
    _y_axis(out, left, top, plot_h, width - 16)
    for i in range(5):
        v = high * i / 4
        out.append(
            f'<text x="{xs(v):.1f}" y="{height - bottom + 16}" text-anchor="middle" '
            f'fill="#555">${v:,.2f}</text>'
        )
    placed = sorted((p for p in points if p.x is not None), key=lambda p: (p.x, -p.value))
    frontier: list[Point] = []
    for p in placed:
        if not frontier or p.value > frontier[-1].value:
            frontier.append(p)
    if len(frontier) >= 2:
        path = " ".join(f"{xs(p.x or 0):.1f},{y(p.value):.1f}" for p in frontier)
        out.append(
            f'<polyline data-frontier="1" points="{path}" fill="none" stroke="#888" '
            'stroke-dasharray="4 3"/>'
        )
    for p in placed:
        colour = PALETTE[p.series % len(PALETTE)]
        out.append(
            f'<circle cx="{xs(p.x or 0):.1f}" cy="{y(p.value):.1f}" r="5" fill="{colour}">'
            f"<title>{_a(p.label)}: {p.value * 100:.1f}% at ${p.x or 0:,.4f}/task</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)


def task_grid(
    label: str, columns: Sequence[str], tasks: Sequence[str], rates: dict[tuple[str, str], float]
) -> str:
    """Tasks (rows) × runs (columns): a cell's shade is the task's pass rate; a cell whose
    rate moved from the previous column is outlined (a flip)."""
    cell, top = 14, 80
    # Names are never cut: the label margin is as wide as the longest (≈6.5 px a character).
    left = 12 + int(6.5 * max((len(t) for t in tasks), default=10))
    width = left + cell * len(columns) + 60
    height = top + cell * len(tasks) + 10
    out = _open("grid", width, height, label)
    for j, column in enumerate(columns):
        x = left + cell * j + cell / 2
        out.append(
            f'<text transform="translate({x:.1f},{top - 6}) rotate(-45)" fill="#555">'
            f"{_a(column)}</text>"
        )
    for i, task in enumerate(tasks):
        y = top + cell * i
        out.append(f'<text x="{left - 6}" y="{y + cell - 3}" text-anchor="end">{_a(task)}</text>')
        before: float | None = None
        for j, column in enumerate(columns):
            rate = rates.get((task, column))
            x = left + cell * j
            if rate is None:
                out.append(
                    f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="#f3f3f3">'
                    f"<title>{_a(task)} · {_a(column)}: not run</title></rect>"
                )
                before = None
                continue
            flip = before is not None and rate != before
            # From light red (0%) to green (100%).
            red, green, blue = (
                int(a + (b - a) * rate) for a, b in ((244, 26), (214, 152), (214, 80))
            )
            stroke = ' stroke="#000" stroke-width="1.5"' if flip else ""
            out.append(
                f'<rect data-cell="1" x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" '
                f'fill="rgb({red},{green},{blue})"{stroke}>'
                f"<title>{_a(task)} · {_a(column)}: {rate * 100:.0f}%</title></rect>"
            )
            before = rate
    out.append("</svg>")
    return "".join(out)


def boundary_chart(label: str, max_tasks: int, looks: Sequence[Look]) -> str:
    """A decision's statistic per look (dots joined, by tasks used) against its boundaries
    ``±c_k`` (dashed): a dot past the band stopped the decision for better or worse."""
    width, height, left, top, bottom, right = 640, 260, 48, 16, 40, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    finite = [abs(v) for look in looks for v in (look.statistic, look.boundary) if v == v]
    finite = [v for v in finite if v != float("inf")]
    top_z = max(4.0, *finite) * 1.1 if finite else 4.0
    span = max(1, max_tasks)

    def x(tasks: int) -> float:
        return left + plot_w * min(1.0, tasks / span)

    def y(z: float) -> float:
        z = max(-top_z, min(top_z, z))
        return top + plot_h / 2 - plot_h / 2 * z / top_z

    out = _open("boundaries", width, height, label)
    for tick in sorted({0.0, round(top_z / 2, 1), -round(top_z / 2, 1)}):
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="{"#999" if tick == 0 else "#e5e5e5"}"/>'
            f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" fill="#555">'
            f"{tick:+.1f}</text>"
        )
    for tasks in (0, span):
        out.append(
            f'<text x="{x(tasks):.1f}" y="{height - bottom + 16}" text-anchor="middle" '
            f'fill="#555">{tasks} tasks</text>'
        )
    if looks:
        for sign in (1, -1):
            path = " ".join(f"{x(look.tasks):.1f},{y(sign * look.boundary):.1f}" for look in looks)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{PALETTE[1]}" '
                'stroke-width="1.5" stroke-dasharray="5,3"/>'
            )
        path = " ".join(f"{x(look.tasks):.1f},{y(look.statistic):.1f}" for look in looks)
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{PALETTE[0]}" stroke-width="2"/>'
        )
        for index, look in enumerate(looks, start=1):
            out.append(
                f'<circle cx="{x(look.tasks):.1f}" cy="{y(look.statistic):.1f}" r="4" '
                f'fill="{PALETTE[0]}"><title>look {index}: {look.tasks} tasks, statistic '
                f"{look.statistic:+.3f} vs boundary ±{look.boundary:.3f}: "
                f"{_a(look.verdict)}</title></circle>"
            )
    out.append("</svg>")
    return "".join(out)
