"""What ``osmosis-results`` shows: every recorded run of each address and comparisons, as
text (fitted to the terminal), markdown (PR comments, with a Mermaid trend) and JSON
(pure: values in, strings and dicts out)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.results.compare import Comparison, Verdict
from reconciler.results.stats import Interval
from reconciler.results.summary import AgentScore, RunReport
from reconciler.results.table import Column, fit_table, wrap_cell

__all__ = [
    "AddressReport",
    "CompareReport",
    "address_to_dict",
    "compare_to_dict",
    "mermaid_trend",
    "render_addresses_markdown",
    "render_addresses_text",
    "render_compare_markdown",
    "render_compare_text",
    "verdict_sentence",
]

MAX_LISTED_TASKS = 20


@dataclass(frozen=True)
class RunLine:
    """A run of an address with what it is compared with."""

    report: RunReport
    previous: str | None = None
    """The previous comparable run's label, when there is one."""
    previous_changes: tuple[str, ...] = ()
    """Why the older run is not comparable (when no previous comparable run)."""
    versus_previous: dict[int, float] = field(default_factory=dict)
    """Agent index -> Δ pass@1 against the previous comparable run (reading, not a gate)."""
    baseline: bool = False
    local_dir: str | None = None
    """``results/<address>/<run-dir>`` when its files are kept."""


@dataclass(frozen=True)
class AddressReport:
    address: str
    runs: tuple[RunLine, ...]
    """Newest first."""
    baseline: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompareReport:
    left: str
    right: str
    left_agent: str
    right_agent: str
    comparison: Comparison
    notes: tuple[str, ...] = ()


# --------------------------------------------------------------------------- formatting


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def pts(value: float) -> str:
    if math.isinf(value):
        return "∞"
    points = round(value * 100, 1)
    return "±0.0" if points == 0 else f"{points:+.1f}"


def interval(ci: Interval | None) -> str:
    if ci is None or ci.method == "none":
        return "–"
    return f"[{ci.low * 100:.1f}–{ci.high * 100:.1f}]"


def _money(value: float | None) -> str:
    if value is None:
        return "–"
    return f"${value:.4f}" if 0 < value < 0.01 else f"${value:,.2f}"


def _tokens(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 10_000:
        return f"{value / 1000:,.0f}k"
    return f"{value:,.0f}"


def _status(line: RunLine) -> str:
    run = line.report.run
    word = "partial" if run.partial else "complete"
    return f"{word} ({run.status})" if run.partial else word


def _vs_previous(line: RunLine, agent: AgentScore) -> str:
    if agent.index in line.versus_previous and line.previous:
        return f"{pts(line.versus_previous[agent.index])} pts vs {line.previous}"
    if line.previous_changes:
        return "not comparable: " + "; ".join(line.previous_changes)
    return "–"


def _size(agent: AgentScore) -> str:
    if agent.tasks is None:
        return "–"
    return f"{agent.tasks}×{agent.attempts}" if agent.attempts else f"{agent.tasks}"


COLUMNS = (
    Column("run", wrap=True),
    Column("status", wrap=True, drop=3),
    Column("commit", drop=5),
    Column("agent", wrap=True),
    Column("pass@1", right=True),
    Column("95% CI"),
    Column("tasks×k", right=True, drop=4),
    Column("pass@k", right=True, drop=6),
    Column("cost/task", right=True, drop=7),
    Column("tokens/task", right=True, drop=8),
    Column("vs previous comparable", wrap=True, drop=2),
)


def _rows(report: AddressReport) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in report.runs:
        run = line.report.run
        label = run.label + (" (baseline)" if line.baseline else "")
        commit = (run.requested_by or "")[:7] or "–"
        agents = line.report.agents or ()
        if not agents:
            rows.append([label, _status(line), commit, "–", "–", "–", "–", "–", "–", "–", "–"])
        for n, agent in enumerate(agents):
            rows.append(
                [
                    label if n == 0 else "",
                    _status(line) if n == 0 else "",
                    commit if n == 0 else "",
                    agent.label,
                    pct(agent.pass_at_1),
                    interval(agent.ci),
                    _size(agent),
                    f"@{agent.k} {pct(agent.pass_at_k)}" if agent.pass_at_k is not None else "–",
                    _money(agent.cost_per_task),
                    _tokens(agent.tokens_per_task),
                    _vs_previous(line, agent),
                ]
            )
    return rows


def render_addresses_text(reports: Sequence[AddressReport], width: int = 100) -> str:
    out: list[str] = []
    for report in reports:
        runs = len(report.runs)
        out.append(
            f"{report.address}: {runs} recorded run{'s' if runs != 1 else ''}, newest first"
            + (f"; baseline {report.baseline}" if report.baseline else "")
        )
        lines, dropped = fit_table(COLUMNS, _rows(report), width)
        out.extend(lines)
        notes = list(report.notes)
        if dropped:
            notes.insert(0, f"left out to fit {width} columns: {', '.join(dropped)} "
                         "(--format json has everything)")  # fmt: skip
        notes += [f"{line.report.run.label}: {line.report.note}" for line in report.runs
                  if line.report.note]  # fmt: skip
        for note in notes:
            wrapped = wrap_cell(f"note: {note}", width - 6)
            out.append("  " + wrapped[0])
            out.extend("        " + more for more in wrapped[1:])
        out.append("")
    if not reports:
        out.append("No recorded runs with results.")
    return "\n".join(out).rstrip("\n") + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_addresses_markdown(reports: Sequence[AddressReport]) -> str:
    out: list[str] = []
    for report in reports:
        out.append(f"### `{report.address}`")
        out.append("")
        headers = [c.header for c in COLUMNS]
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "|".join("---:" if c.right else "---" for c in COLUMNS) + "|")
        for row in _rows(report):
            out.append("| " + " | ".join(_md(cell) for cell in row) + " |")
        out.append("")
        trend = mermaid_trend(report)
        if trend:
            out.append(trend)
            out.append("")
        out.extend(f"_note: {_md(note)}_" for note in report.notes)
    return "\n".join(out).rstrip("\n") + "\n"


def mermaid_trend(report: AddressReport, max_points: int = 12) -> str | None:
    """A Mermaid ``xychart-beta`` line of the first agent's pass@1 over the address's
    complete runs, oldest first (GitHub renders it; Mermaid cannot draw intervals or a
    legend, so the line above it says what it shows). None below two comparable runs."""
    points = [
        (line.report.run.label, line.report.agents[0].pass_at_1)
        for line in reversed(report.runs)
        if not line.report.run.partial
        and line.report.agents
        and line.report.agents[0].pass_at_1 is not None
    ][-max_points:]
    if len(points) < 2:
        return None
    labels = ", ".join('"' + label.replace('"', "'") + '"' for label, _ in points)
    values = ", ".join(f"{(value or 0.0) * 100:.1f}" for _, value in points)
    agent = report.runs[0].report.agents[0].label if report.runs[0].report.agents else "agent 1"
    return "\n".join(
        [
            f"pass@1 (%) of {_md(agent)} over the complete runs of `{report.address}`, "
            "oldest first (intervals in the table):",
            "",
            "```mermaid",
            "xychart-beta",
            f'  title "pass@1 (%) — {report.address}"',
            f"  x-axis [{labels}]",
            '  y-axis "pass@1 (%)" 0 --> 100',
            f"  line [{values}]",
            "```",
        ]
    )


# --------------------------------------------------------------------------- compare


def verdict_sentence(c: Comparison) -> str:
    margin = f"±{c.margin * 100:.1f} pts"
    if c.verdict is Verdict.BETTER:
        return f"better: the 95% CI of Δ lies above 0 ({pts(c.delta)} pts)"
    if c.verdict is Verdict.WORSE:
        return f"worse: the 95% CI of Δ lies below 0 ({pts(c.delta)} pts)"
    if c.verdict is Verdict.NO_CHANGE:
        return f"no change beyond the margin: the 95% CI lies inside {margin} " \
            f"(no evidence of a change of {c.margin * 100:.1f} pts or more)"  # fmt: skip
    mde = "∞" if math.isinf(c.mde) else f"{c.mde * 100:.1f} pts"
    return (
        f"inconclusive: the 95% CI includes 0 and changes beyond {margin}; at {c.tasks} tasks "
        f"this comparison detects |Δ| ≥ {mde} (80% power)"
    )


def _task_list(tasks: Sequence[str]) -> str:
    shown = ", ".join(tasks[:MAX_LISTED_TASKS])
    more = len(tasks) - MAX_LISTED_TASKS
    return shown + (f", ... {more} more" if more > 0 else "")


def _compare_lines(r: CompareReport) -> list[str]:
    c = r.comparison
    lines = [
        f"LEFT  {r.left} ({r.left_agent}): pass@1 {pct(c.left)}",
        f"RIGHT {r.right} ({r.right_agent}): pass@1 {pct(c.right)}",
    ]
    if c.paired:
        lines.append(
            f"aligned on {c.tasks} tasks both scored ({len(c.only_left)} only in LEFT, "
            f"{len(c.only_right)} new in RIGHT, {len(c.changed)} changed and left out); "
            f"attempts per task {c.attempts_left} and {c.attempts_right}"
        )
    lines.append(
        f"Δ = RIGHT − LEFT: {pts(c.delta)} pts, 95% CI {interval_pts(c.ci)}"
        + (" (paired)" if c.paired else " (unpaired)")
    )
    if c.paired and c.unpaired_ci is not None:
        corr = "undefined" if c.correlation is None else f"{c.correlation:.2f}"
        lines.append(
            f"unpaired CI for contrast {interval_pts(c.unpaired_ci)}; correlation {corr}; "
            f"tasks up {len(c.up)}, down {len(c.down)}, tied {c.tied}"
        )
    lines.append(f"test: {c.test}, p = {_p(c.p_value)}")
    if c.note:
        lines.append(f"note: {c.note}")
    lines.extend(f"note: {note}" for note in r.notes)
    lines.append(f"Verdict: {verdict_sentence(c)}")
    return lines


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def interval_pts(ci: Interval) -> str:
    if ci.method == "none":
        return "undefined (too few common tasks)"
    return f"[{pts(ci.low)}, {pts(ci.high)}]"


def render_compare_text(reports: Sequence[CompareReport], width: int = 100) -> str:
    def wrapped(text: str, indent: str) -> list[str]:
        lines = wrap_cell(text, width - len(indent) - 4)
        return [indent + lines[0], *(indent + "    " + line for line in lines[1:])]

    out: list[str] = []
    for r in reports:
        for line in _compare_lines(r):
            out.extend(wrapped(line, ""))
        c = r.comparison
        if c.up:
            out.extend(wrapped(f"up in RIGHT: {_task_list(c.up)}", "  "))
        if c.down:
            out.extend(wrapped(f"down in RIGHT: {_task_list(c.down)}", "  "))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def render_compare_markdown(reports: Sequence[CompareReport]) -> str:
    out: list[str] = []
    for r in reports:
        c = r.comparison
        out.append(f"**{_md(r.right)}** vs **{_md(r.left)}**: **{c.verdict.value}**")
        out.append("")
        out.append("| | pass@1 | Δ vs LEFT [95% CI] | test | verdict |")
        out.append("|---|---:|---|---|---|")
        out.append(f"| LEFT `{_md(r.left)}` | {pct(c.left)} | | | |")
        out.append(
            f"| RIGHT `{_md(r.right)}` | {pct(c.right)} | {pts(c.delta)} pts "
            f"{_md(interval_pts(c.ci))} | {c.test}, p = {_md(_p(c.p_value))} | {c.verdict.value} |"
        )
        out.append("")
        out.append(_md(verdict_sentence(c)))
        for note in (c.note, *r.notes):
            if note:
                out.append("")
                out.append(f"_note: {_md(note)}_")
        if c.up or c.down:
            out.append("")
            out.append("<details><summary>Tasks that flipped</summary>")
            out.append("")
            if c.up:
                out.append(f"- up in RIGHT ({len(c.up)}): {_md(_task_list(c.up))}")
            if c.down:
                out.append(f"- down in RIGHT ({len(c.down)}): {_md(_task_list(c.down))}")
            out.append("")
            out.append("</details>")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- json


def _num(value: float | None) -> float | None:
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return round(value, 6)


def _ci(ci: Interval | None) -> dict[str, Any] | None:
    if ci is None or ci.method == "none":
        return None
    return {"low": _num(ci.low), "high": _num(ci.high), "method": ci.method}


def _agent_dict(agent: AgentScore, line: RunLine) -> dict[str, Any]:
    return {
        "agent_index": agent.index,
        "label": agent.label,
        "model": agent.model,
        "harness": agent.harness,
        "pass_at_1": _num(agent.pass_at_1),
        "ci": _ci(agent.ci),
        "tasks": agent.tasks,
        "attempts_per_task": agent.attempts,
        "k": agent.k,
        "pass_at_k": _num(agent.pass_at_k),
        "pass_hat_k": _num(agent.pass_hat_k),
        "cost_per_task": _num(agent.cost_per_task),
        "cost_ci": _ci(agent.cost_ci),
        "tokens_per_task": _num(agent.tokens_per_task),
        "errored_attempts": agent.errored,
        "vs_previous": _num(line.versus_previous.get(agent.index)),
    }


def address_to_dict(report: AddressReport) -> dict[str, Any]:
    return {
        "address": report.address,
        "baseline": report.baseline,
        "notes": list(report.notes),
        "runs": [
            {
                "run_id": line.report.run.run_id,
                "run_name": line.report.run.run_name,
                "status": line.report.run.status,
                "current": line.report.run.current,
                "complete": not line.report.run.partial,
                "requested_by": line.report.run.requested_by,
                "baseline": line.baseline,
                "source": line.report.source,
                "outputs": line.local_dir,
                "previous_comparable": line.previous,
                "not_comparable_because": list(line.previous_changes),
                "note": line.report.note,
                "agents": [_agent_dict(a, line) for a in line.report.agents],
            }
            for line in report.runs
        ],
    }


def compare_to_dict(r: CompareReport) -> dict[str, Any]:
    c = r.comparison
    return {
        "left": r.left,
        "right": r.right,
        "left_agent": r.left_agent,
        "right_agent": r.right_agent,
        "paired": c.paired,
        "tasks": c.tasks,
        "left_pass_at_1": _num(c.left),
        "right_pass_at_1": _num(c.right),
        "delta": _num(c.delta),
        "se": _num(c.se),
        "ci": _ci(c.ci),
        "unpaired_ci": _ci(c.unpaired_ci),
        "correlation": _num(c.correlation),
        "test": c.test,
        "p_value": _num(c.p_value),
        "verdict": c.verdict.value,
        "margin": _num(c.margin),
        "mde": _num(c.mde),
        "up": list(c.up),
        "down": list(c.down),
        "tied": c.tied,
        "only_left": list(c.only_left),
        "only_right": list(c.only_right),
        "changed": list(c.changed),
        "note": c.note,
        "notes": list(r.notes),
    }
