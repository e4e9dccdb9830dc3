"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external
reference), so it opens from ``file://`` or a repository browser with no network (pure).

It leads with the decision: what it is about (repository, commit, date), the regression
gate's one-line summary and every verdict against an accepted baseline (always, not only
under ``--fail-on-regression``), folded after ``FOLD_ROWS`` rows; then the grids (each run
generator's, and one line per address); then per address the runs, the trend of pass@1
over its complete runs (smoke and partial runs are labelled and never a trend point), the
newest run's agents with whiskers and the per-task grid, folded when long; then cost per
task against pass@1 with the Pareto frontier. Each chart has its numbers in a table beside
it (Mermaid and screen readers cannot read a chart).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from reconciler.model.decision import DecisionRecord
from reconciler.results import numbers as num
from reconciler.results import svg
from reconciler.results.data import RunOutcomes
from reconciler.results.gate import Gate
from reconciler.results.grid import Grid
from reconciler.results.report import (
    AddressReport,
    CompareReport,
    interval_pts,
    level_text,
    pts,
    verdict_sentence,
    verdict_word,
)
from reconciler.results.runs import RecordedResult

__all__ = ["FOLD_ROWS", "MAX_GRID_TASKS", "About", "render_html"]

MAX_GRID_TASKS = 120
FOLD_ROWS = 20
"""Tables and per-task grids longer than this many rows fold under ``<details>``."""

CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}td.n{text-align:right}
.partial{color:#a15c00}.smoke{color:#555;font-style:italic}.verdict{font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0}figcaption{font-size:12px;color:#555}
.about{color:#555;font-size:13px;margin:0 0 12px}
.gate{font-size:15px;font-weight:600;padding:6px 10px;border-radius:4px;display:inline-block}
.gate.passed{background:#e6f4ea}.gate.failed{background:#fce8e6}.gate.none{background:#eee}
tr.fails td{background:#fce8e6}summary{cursor:pointer;font-size:13px;color:#333}
table.verdicts td,table.verdicts th{padding:1px 6px;font-size:12px;white-space:nowrap}
"""


@dataclass(frozen=True)
class About:
    """What the report is about, shown first."""

    repository: str
    commit: str | None
    generated: str
    """When the report was made (UTC, ISO 8601)."""


def _e(text: str | None) -> str:
    return escape(text or "", quote=True)


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{_e(caption)}</figcaption></figure>"


def _state(run: RecordedResult) -> str:
    state = f"partial ({run.status})" if run.partial else "complete"
    return f"smoke, {state}" if run.smoke else state


def _p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"= {value:.3f}"


def _verdict_rows(comparisons: Sequence[CompareReport], gate: Gate | None) -> list[str]:
    """One line per comparison: what, against what, Δ, its interval (at its level), the
    p-value (Holm's beside it), the verdict (its sentence as the cell's title)."""
    rows = []
    for r in comparisons:
        c = r.comparison
        fails = gate is not None and gate.failing(r)
        address, _, run = r.right.partition("@")
        base_address, _, base = r.left.partition("@")
        against = base if base_address == address else r.left
        p = f"p {_p(c.p_value)}"
        if c.adjusted_p is not None:
            p += f", Holm {_p(c.adjusted_p)}"
        cls = ' class="fails"' if fails else ""
        rows.append(
            f'<tr{cls} data-verdict="{_e(c.verdict.value)}">'
            f"<td>{_e(address)} <small>{_e(r.right_agent)}</small></td>"
            f"<td>{_e(run)}</td><td>{_e(against)}</td>"
            f"<td class=n>{pts(c.delta)} pts</td>"
            f"<td>{_e(interval_pts(c.ci))} <small>{_e(level_text(c))}</small></td>"
            f'<td title="{_e(c.test)}">{_e(p)}</td>'
            f'<td class="verdict" title="{_e(verdict_sentence(c))}">{_e(verdict_word(c))}'
            f"{' · fails the gate' if fails else ''}</td></tr>"
        )
    return rows


def _folded_table(head: str, rows: Sequence[str], what: str, *, name: str | None = None) -> str:
    """A table whose rows after ``FOLD_ROWS`` fold under ``<details>`` (``name``: the first
    part's id and both parts' class)."""
    attrs = f' id="{name}" class="{name}"' if name else ""
    first = f"<table{attrs}>{head}{''.join(rows[:FOLD_ROWS])}</table>"
    if len(rows) <= FOLD_ROWS:
        return first
    rest = len(rows) - FOLD_ROWS
    more = f' id="{name}-more" class="{name}"' if name else ""
    return (
        first + f"<details><summary>{rest} more {_e(what)}</summary>"
        f"<table{more}>{head}{''.join(rows[FOLD_ROWS:])}</table></details>"
    )


def _decision_section(
    gate: Gate | None, comparisons: Sequence[CompareReport], about: About | None
) -> str:
    parts = ['<section id="decision">']
    if about is not None:
        commit = about.commit[:12] if about.commit else "no commit"
        parts.append(
            f'<p class="about">{_e(about.repository)} · {_e(commit)} · {_e(about.generated)}</p>'
        )
    if gate is not None and gate.comparisons:
        state = "failed" if gate.failed else "passed"
        parts.append(f'<p id="gate-summary" class="gate {state}">{_e(gate.summary_line())}</p>')
    else:
        parts.append(
            '<p id="gate-summary" class="gate none">gate: no accepted baseline with a newer run '
            "to check (<code>osmosis-results accept ADDR@RUN</code> records one)</p>"
        )
    shown = list(gate.comparisons) if gate is not None else []
    shown += [c for c in comparisons if c not in shown]
    if shown:
        head = (
            "<tr><th>address</th><th>run</th><th>against</th><th>Δ pass@1</th><th>interval</th>"
            "<th>test</th><th>verdict</th></tr>"
        )
        parts.append(_folded_table(head, _verdict_rows(shown, gate), "verdicts", name="verdicts"))
        notes = {note for r in shown for note in r.notes}
        parts += [f"<p><small>{_e(note)}</small></p>" for note in sorted(notes)]
    parts.append("</section>")
    return "".join(parts)


def _decisions_section(decisions: Mapping[str, DecisionRecord]) -> str:
    """Each decision at minimum cost: its verdict, the boundary chart (the statistic per
    look against ``±c_k``) and the looks as numbers beside it."""
    if not decisions:
        return ""
    parts = ['<h2>Decisions</h2><section id="decisions">']
    for address in sorted(decisions):
        record = decisions[address]
        used = record.batch_ends[-1] if record.batch_ends else 0
        reason = f" ({record.reason})" if record.reason else ""
        parts.append(
            f'<h3 id="decision-{_e(address)}">{_e(address)}: {_e(record.verdict)}{_e(reason)}'
            f"</h3><p>tasks {used} of {record.max_tasks} (fixed design {record.fixed_tasks}), "
            f"{len(record.looks)} look(s), monitor {_e(record.spec.monitor)}</p>"
        )
        looks = [svg.Look(r.tasks, r.statistic, r.boundary, r.verdict) for r in record.looks]
        chart = svg.boundary_chart(
            f"looks of {address} against their boundaries", record.max_tasks, looks
        )
        parts.append(_figure(chart, "statistic per look (dots) against its boundaries ±c (dashed)"))
        rows = [
            f"<tr><td>{r.index}</td><td>{r.tasks}</td><td>{r.estimate * 100:+.1f}</td>"
            f"<td>{r.statistic:+.3f}</td><td>±{r.boundary:.3f}</td><td>{r.alpha_spent:.4f}</td>"
            f"<td>{_e(r.verdict)}</td></tr>"
            for r in record.looks
        ]
        head = (
            "<tr><th>look</th><th>tasks</th><th>Δ̂ pts</th><th>statistic</th><th>boundary</th>"
            "<th>α spent</th><th>verdict</th></tr>"
        )
        parts.append(f"<table>{head}{''.join(rows)}</table>")
    parts.append("</section>")
    return "".join(parts)


def _overview_section(reports: Sequence[AddressReport]) -> str:
    """One line per address: its newest full run's numbers."""
    rows = []
    for report in reports:
        line = next((x for x in report.runs if not x.report.run.smoke), None)
        if line is None:
            continue
        for agent in line.report.agents:
            rows.append(
                f"<tr><td>{_e(report.address)}</td><td>{_e(line.report.run.label)}</td>"
                f"<td>{_e(_state(line.report.run))}</td><td>{_e(agent.label)}</td>"
                f"<td class=n>{_e(num.headline_text(agent.numbers))}</td>"
                f"<td class=n>{_e(num.cost_text(agent.numbers))}</td></tr>"
            )
    if not rows:
        return ""
    head = (
        f"<tr><th>address</th><th>newest run</th><th>status</th><th>agent</th>"
        f"<th>{_e(num.HEADLINE)}</th><th>cost</th></tr>"
    )
    return "<h2>Every address</h2>" + _folded_table(head, rows, "addresses")


def _address_section(report: AddressReport, outcomes: Mapping[str, RunOutcomes]) -> str:
    parts = [f'<h2 id="address-{_e(report.address)}">{_e(report.address)}</h2>']
    if report.baseline:
        parts.append(f"<p>Accepted baseline: {_e(report.baseline)}</p>")
    rows = []
    for line in report.runs:
        run = line.report.run
        cls = ' class="smoke"' if run.smoke else ' class="partial"' if run.partial else ""
        for agent in line.report.agents:
            n = agent.numbers
            rows.append(
                f"<tr{cls}><td>{_e(run.label)}{' (baseline)' if line.baseline else ''}</td>"
                f"<td>{_e(_state(run))}</td><td>{_e((run.requested_by or '')[:7])}</td>"
                f"<td>{_e(agent.label)}</td><td class=n>{_e(num.headline_text(n))}</td>"
                f"<td class=n>{n.tasks if n.tasks is not None else '–'}×{n.asked_k}</td>"
                f"<td class=n>{_e(num.money(n.cost_per_task))}</td>"
                f"<td class=n>{_e(num.money(n.cost_per_attempt))}</td>"
                f"<td class=n>{_e(num.tokens(n.tokens_per_task))}</td>"
                f"<td class=n>{_e(num.tokens(n.tokens_per_attempt))}</td></tr>"
            )
    head = (
        f"<tr><th>run</th><th>status</th><th>commit</th><th>agent</th>"
        f"<th>{_e(num.HEADLINE)}</th><th>tasks×k</th><th>cost/task</th><th>cost/attempt</th>"
        "<th>tokens/task</th><th>tokens/attempt</th></tr>"
    )
    parts.append(_folded_table(head, rows, "runs"))
    # The text and markdown reports' run notes (which attempts came from a retry run).
    parts += [
        f'<p class="note"><small>note: {_e(line.report.run.label)}: {_e(line.report.note)}'
        "</small></p>"
        for line in report.runs
        if line.report.note
    ]
    charts = []
    ordered = list(reversed(report.runs))  # oldest first
    labels = [line.report.run.label for line in ordered if not line.report.run.smoke]
    points = [
        svg.Point(
            label=line.report.run.label,
            value=agent.pass_at_1,
            low=agent.ci.low if agent.ci else None,
            high=agent.ci.high if agent.ci else None,
            series=agent.index,
        )
        for line in ordered
        if not line.report.run.partial and not line.report.run.smoke
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
        for task, outcome in found.attempted(0).items():
            rates[(task, line.report.run.label)] = outcome.rate
            tasks.add(task)
    parts.append(f'<div class="charts">{"".join(charts)}</div>')
    if grid_columns and tasks:
        shown = sorted(tasks)[:MAX_GRID_TASKS]
        more = len(tasks) - len(shown)
        grid = _figure(
            svg.task_grid(f"per-task pass rate of {report.address}", grid_columns, shown, rates),
            "per-task pass rate of agent 1 over the runs (darker: higher; outlined: changed "
            "from the run before)" + (f"; {more} more tasks not drawn" if more > 0 else ""),
        )
        if len(tasks) > FOLD_ROWS:
            grid = (
                f"<details><summary>per-task grid: {len(tasks)} tasks × {len(grid_columns)} "
                f"runs</summary>{grid}</details>"
            )
        parts.append(grid)
    return "".join(parts)


def _cost_section(reports: Sequence[AddressReport]) -> str:
    points = [
        svg.Point(
            label=f"{report.address} {line.report.run.label} {agent.label}",
            value=agent.pass_at_1,
            x=agent.numbers.cost_per_task,
            series=agent.index,
        )
        for report in reports
        for line in report.runs[:1]
        for agent in line.report.agents
        if agent.pass_at_1 is not None and agent.numbers.cost_per_task is not None
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
    gate: Gate | None = None,
    comparisons: Sequence[CompareReport] = (),
    *,
    title: str = "Benchmark results",
    grids: Sequence[Grid] = (),
    about: About | None = None,
    decisions: Mapping[str, DecisionRecord] | None = None,
) -> str:
    """The whole report; ``outcomes``: run id -> per-task outcomes (for the grids); ``gate``:
    the comparisons against accepted baselines; ``comparisons``: any others asked for;
    ``grids``: the run generators' grids (``results.grid``); ``decisions``: the lockfile's
    decisions at minimum cost, each with its boundary chart."""
    body = _decision_section(gate, comparisons, about) + _decisions_section(decisions or {})
    body += _generator_section(grids) + _overview_section(reports)
    body += "".join(_address_section(r, outcomes) for r in reports)
    body += _cost_section(reports)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>{body}</body></html>\n"
    )
