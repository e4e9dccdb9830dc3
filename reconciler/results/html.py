"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external
reference), so it opens from ``file://`` or a repository browser with no network (pure).

Per address: the trend of pass@1 over its runs with 95% CI bands, the newest run's agents
with whiskers, the per-task grid over its runs; across addresses: cost per task against
pass@1 with the Pareto frontier; then any comparisons. Each chart has its numbers in a
table beside it (Mermaid and screen readers cannot read a chart).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from reconciler.results import svg
from reconciler.results.data import RunOutcomes
from reconciler.results.grid import Grid
from reconciler.results.report import (
    AddressReport,
    CompareReport,
    interval,
    interval_pts,
    pct,
    pts,
    verdict_sentence,
)

__all__ = ["MAX_GRID_TASKS", "render_html"]

MAX_GRID_TASKS = 120

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}td.n{text-align:right}
.partial{color:#a15c00}.verdict{font-weight:600}.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0}figcaption{font-size:12px;color:#555}
"""


def _e(text: str | None) -> str:
    return escape(text or "", quote=True)


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{_e(caption)}</figcaption></figure>"


def _address_section(report: AddressReport, outcomes: Mapping[str, RunOutcomes]) -> str:
    parts = [f"<h2>{_e(report.address)}</h2>"]
    if report.baseline:
        parts.append(f"<p>Accepted baseline: {_e(report.baseline)}</p>")
    rows = []
    for line in report.runs:
        run = line.report.run
        cls = ' class="partial"' if run.partial else ""
        state = f"partial ({run.status})" if run.partial else "complete"
        for agent in line.report.agents:
            rows.append(
                f"<tr{cls}><td>{_e(run.label)}{' (baseline)' if line.baseline else ''}</td>"
                f"<td>{_e(state)}</td><td>{_e((run.requested_by or '')[:7])}</td>"
                f"<td>{_e(agent.label)}</td><td class=n>{pct(agent.pass_at_1)}</td>"
                f"<td>{interval(agent.ci)}</td><td class=n>{agent.tasks or '–'}</td></tr>"
            )
    parts.append(
        "<table><tr><th>run</th><th>status</th><th>commit</th><th>agent</th><th>pass@1</th>"
        "<th>95% CI</th><th>tasks</th></tr>" + "".join(rows) + "</table>"
    )
    charts = []
    ordered = list(reversed(report.runs))  # oldest first
    labels = [line.report.run.label for line in ordered]
    points = [
        svg.Point(
            label=line.report.run.label,
            value=agent.pass_at_1,
            low=agent.ci.low if agent.ci else None,
            high=agent.ci.high if agent.ci else None,
            series=agent.index,
        )
        for line in ordered
        if not line.report.run.partial
        for agent in line.report.agents
        if agent.pass_at_1 is not None
    ]
    charts.append(
        _figure(
            svg.trend_chart(f"pass@1 over the runs of {report.address}", labels, points),
            "pass@1 per complete run, oldest first; shaded: 95% CI (one colour per agent)",
        )
    )
    newest = report.runs[0].report if report.runs else None
    if newest is not None:
        agent_points = [
            svg.Point(
                label=a.label,
                value=a.pass_at_1,
                low=a.ci.low if a.ci else None,
                high=a.ci.high if a.ci else None,
                series=a.index,
            )
            for a in newest.agents
            if a.pass_at_1 is not None
        ]
        charts.append(
            _figure(
                svg.whisker_chart(f"agents of {newest.run.label}", agent_points),
                f"agents of the newest run {newest.run.label}: pass@1 and 95% CI",
            )
        )
    grid_columns = [line.report.run.label for line in ordered if line.report.run.run_id in outcomes]
    rates: dict[tuple[str, str], float] = {}
    tasks: set[str] = set()
    for line in ordered:
        found = outcomes.get(line.report.run.run_id)
        if found is None:
            continue
        for task, outcome in found.scored(0).items():
            rates[(task, line.report.run.label)] = outcome.rate
            tasks.add(task)
    if grid_columns and tasks:
        shown = sorted(tasks)[:MAX_GRID_TASKS]
        more = len(tasks) - len(shown)
        charts.append(
            _figure(
                svg.task_grid(
                    f"per-task pass rate of {report.address}", grid_columns, shown, rates
                ),
                "per-task pass rate of agent 1 over the runs (darker: higher; outlined: changed "
                "from the run before)" + (f"; {more} more tasks not drawn" if more > 0 else ""),
            )
        )
    parts.append(f'<div class="charts">{"".join(charts)}</div>')
    return "".join(parts)


def _cost_section(reports: Sequence[AddressReport]) -> str:
    points = [
        svg.Point(
            label=f"{report.address} {line.report.run.label} {agent.label}",
            value=agent.pass_at_1,
            x=agent.cost_per_task,
            series=agent.index,
        )
        for report in reports
        for line in report.runs[:1]
        for agent in line.report.agents
        if agent.pass_at_1 is not None and agent.cost_per_task is not None
    ]
    if not points:
        return ""
    rows = "".join(
        f"<tr><td>{_e(p.label)}</td><td class=n>${p.x or 0:,.4f}</td>"
        f"<td class=n>{p.value * 100:.1f}%</td></tr>"
        for p in points
    )
    return (
        "<h2>Cost against pass@1</h2>"
        + _figure(
            svg.cost_scatter("cost per task against pass@1, newest runs", points),
            "newest run of each address; dashed: the Pareto frontier (cheapest for its score)",
        )
        + "<table><tr><th>run · agent</th><th>cost/task</th><th>pass@1</th></tr>"
        + rows
        + "</table>"
    )


def _compare_section(reports: Sequence[CompareReport]) -> str:
    if not reports:
        return ""
    rows = "".join(
        f"<tr><td>{_e(r.left)} ({_e(r.left_agent)})</td><td>{_e(r.right)} ({_e(r.right_agent)})"
        f"</td><td class=n>{pts(r.comparison.delta)} pts</td>"
        f"<td>{_e(interval_pts(r.comparison.ci))}</td><td>{_e(r.comparison.test)}</td>"
        f'<td class="verdict">{_e(r.comparison.verdict.value)}</td></tr>'
        f'<tr><td colspan="6">{_e(verdict_sentence(r.comparison))}</td></tr>'
        for r in reports
    )
    return (
        "<h2>Comparisons</h2><table><tr><th>LEFT</th><th>RIGHT</th><th>Δ</th><th>95% CI</th>"
        "<th>test</th><th>verdict</th></tr>" + rows + "</table>"
    )


def _generator_section(grids: Sequence[Grid]) -> str:
    """Each generator's grid as a heat-map table: one row per element of its first axis,
    one column per combination of the others; a cell's shade is its pass@1 (none: grey,
    with why it has no score)."""
    parts: list[str] = []
    for grid in grids:
        head = "".join(f"<th>{_e(c)}</th>" for c in grid.columns)
        rows = []
        for row in grid.rows:
            cells = []
            for column in grid.columns:
                cell = grid.cell(row, column)
                if cell.scored and cell.pass_at_1 is not None:
                    hue = round(cell.pass_at_1 * 120)
                    style = f' style="background:hsl({hue},70%,85%)"'
                else:
                    style = ' style="background:#eee;color:#666"'
                title = f"{cell.address} · {cell.run}" if cell.address and cell.run else ""
                cells.append(
                    f'<td class=n data-cell data-state="{_e(cell.state)}"{style}'
                    f' title="{_e(title or cell.address)}">{_e(cell.text)}</td>'
                )
            rows.append(f"<tr><th>{_e(row)}</th>{''.join(cells)}</tr>")
        across = " × ".join(grid.column_axes) or "pass@1"
        parts.append(
            f"<h3>{_e(grid.file)}</h3>"
            f"<p>{_e(grid.row_axis)} (rows) × {_e(across)} (columns): pass@1 of each cell's "
            "newest run with its 95% CI; * partial (did not finish or outputs incomplete)</p>"
            f'<table data-grid="{_e(grid.file)}"><tr><th>{_e(grid.row_axis)}</th>{head}</tr>'
            + "".join(rows)
            + "</table>"
        )
    if not parts:
        return ""
    return "<h2>Generators</h2>" + "".join(parts)


def render_html(
    reports: Sequence[AddressReport],
    outcomes: Mapping[str, RunOutcomes],
    comparisons: Sequence[CompareReport] = (),
    *,
    title: str = "Benchmark results",
    grids: Sequence[Grid] = (),
) -> str:
    """The whole report; ``outcomes``: run id -> per-task outcomes (for the grids);
    ``grids``: the run generators' grids (``results.grid``)."""
    body = _generator_section(grids)
    body += "".join(_address_section(r, outcomes) for r in reports)
    body += _cost_section(reports) + _compare_section(comparisons)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>{body}</body></html>\n"
    )
