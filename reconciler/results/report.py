"""What ``osmosis-results`` shows: every recorded run of each address and comparisons, as
text (fitted to the terminal), markdown (PR comments, with a Mermaid trend) and JSON
(pure: values in, strings and dicts out)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.results import numbers as num
from reconciler.results.compare import Comparison, Verdict
from reconciler.results.stats import Interval
from reconciler.results.summary import AgentScore, RunReport
from reconciler.results.table import Column, fit_table, wrap_cell

__all__ = [
    "AddressReport",
    "CompareReport",
    "address_to_dict",
    "compare_to_dict",
    "level_text",
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
    left_run: str | None = None
    """LEFT's run id."""
    right_run: str | None = None


# --------------------------------------------------------------------------- formatting


def pct(value: float | None) -> str:
    return num.percent(value)


def pts(value: float) -> str:
    if math.isinf(value):
        return "∞"
    points = round(value * 100, 1)
    return "±0.0" if points == 0 else f"{points:+.1f}"


def interval(ci: Interval | None) -> str:
    return num.interval_text(ci)


def _status(line: RunLine) -> str:
    run = line.report.run
    word = f"partial ({run.status})" if run.partial else "complete"
    return f"smoke, {word}" if run.smoke else word


def _vs_previous(line: RunLine, agent: AgentScore) -> str:
    if agent.index in line.versus_previous and line.previous:
        return f"{pts(line.versus_previous[agent.index])} pts vs {line.previous}"
    if line.previous_changes:
        return "not comparable: " + "; ".join(line.previous_changes)
    return "–"


def _size(agent: AgentScore) -> str:
    n = agent.numbers
    if n.tasks is None:
        return "–"
    text = f"{n.tasks}×{n.asked_k}"
    return text + (f" ({len(n.short_of_k)} short)" if n.short_of_k else "")


COLUMNS = (
    Column("run", wrap=True),
    Column("status", wrap=True, drop=4),
    Column("commit", drop=6),
    Column("agent", wrap=True),
    Column(num.HEADLINE, wrap=True),
    Column("tasks×k", right=True, drop=5),
    Column("score", right=True, drop=7),
    Column("pass@k", right=True, drop=8),
    Column("cost/task", right=True, drop=9),
    Column("cost/attempt", right=True, drop=10),
    Column("tokens/task", right=True, drop=11),
    Column("tokens/attempt", right=True, drop=12),
    Column("pass@1 among scored (secondary)", right=True, drop=13),
    Column("vs previous comparable", wrap=True, drop=3),
)


def _agent_cells(agent: AgentScore) -> list[str]:
    n = agent.numbers
    return [
        agent.label,
        num.headline_text(n),
        _size(agent),
        pct(n.score) if n.score is not None else "–",
        num.pass_at_k_text(n),
        num.money(n.cost_per_task),
        num.money(n.cost_per_attempt),
        num.tokens(n.tokens_per_task),
        num.tokens(n.tokens_per_attempt),
        pct(n.scored_rate) if n.errored else "–",
    ]


def _rows(report: AddressReport) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in report.runs:
        run = line.report.run
        label = run.label + (" (baseline)" if line.baseline else "")
        commit = (run.requested_by or "")[:7] or "–"
        agents = line.report.agents or ()
        if not agents:
            rows.append([label, _status(line), commit] + ["–"] * (len(COLUMNS) - 3))
        for n, agent in enumerate(agents):
            first = [label, _status(line), commit] if n == 0 else ["", "", ""]
            rows.append(first + _agent_cells(agent) + [_vs_previous(line, agent)])
    return rows


_HIDDEN_WHEN_EMPTY = ("score", "pass@k", "pass@1 among scored (secondary)")


def _table(report: AddressReport) -> tuple[list[Column], list[list[str]]]:
    """The columns and rows, without the optional figures no run of the address has."""
    rows = _rows(report)
    keep = [
        i
        for i, column in enumerate(COLUMNS)
        if column.header not in _HIDDEN_WHEN_EMPTY or any(row[i] != "–" for row in rows)
    ]
    return [COLUMNS[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _number_notes(report: AddressReport) -> list[str]:
    """What a reader must know about the numbers: tasks short of k, the threshold used."""
    notes: list[str] = []
    for line in report.runs:
        for agent in line.report.agents:
            n = agent.numbers
            if n.short_of_k:
                names = ", ".join(n.short_of_k[:MAX_LISTED_TASKS])
                more = len(n.short_of_k) - MAX_LISTED_TASKS
                notes.append(
                    f"{line.report.run.label} ({agent.label}): {len(n.short_of_k)} of "
                    f"{n.tasks} tasks have fewer than the {n.asked_k} attempts asked: {names}"
                    + (f", ... {more} more" if more > 0 else "")
                    + f" (pass@{n.asked_k} leaves them out)"
                )
            if n.score is not None and n.pass_threshold is not None:
                notes.append(
                    f"{line.report.run.label}: a pass is a reward ≥ {n.pass_threshold:g}; "
                    "score is the mean reward"
                )
    return notes


def render_addresses_text(reports: Sequence[AddressReport], width: int = 100) -> str:
    out: list[str] = []
    for report in reports:
        runs = len(report.runs)
        out.append(
            f"{report.address}: {runs} recorded run{'s' if runs != 1 else ''}, newest first"
            + (f"; baseline {report.baseline}" if report.baseline else "")
        )
        columns, rows = _table(report)
        lines, dropped = fit_table(columns, rows, width)
        out.extend(lines)
        notes = list(report.notes)
        if dropped:
            notes.insert(0, f"left out to fit {width} columns: {', '.join(dropped)} "
                         "(--format json has everything)")  # fmt: skip
        notes += [f"{line.report.run.label}: {line.report.note}" for line in report.runs
                  if line.report.note]  # fmt: skip
        notes += _number_notes(report)
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
        columns, rows = _table(report)
        out.append("| " + " | ".join(c.header for c in columns) + " |")
        out.append("|" + "|".join("---:" if c.right else "---" for c in columns) + "|")
        for row in rows:
            out.append("| " + " | ".join(_md(cell) for cell in row) + " |")
        out.append("")
        trend = mermaid_trend(report)
        if trend:
            out.append(trend)
            out.append("")
        out.extend(f"_note: {_md(note)}_" for note in (*report.notes, *_number_notes(report)))
    return "\n".join(out).rstrip("\n") + "\n"


def mermaid_trend(report: AddressReport, max_points: int = 12) -> str | None:
    """A Mermaid ``xychart-beta`` line of the first agent's pass@1 over the address's
    complete runs, oldest first (GitHub renders it; Mermaid cannot draw intervals or a
    legend, so the line above it says what it shows). None below two comparable runs."""
    points = [
        (line.report.run.label, line.report.agents[0].pass_at_1)
        for line in reversed(report.runs)
        if not line.report.run.partial
        and not line.report.run.smoke
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


def level_text(c: Comparison) -> str:
    """``95%``, or the Holm-adjusted level (``99.5%``) of one of a family."""
    level = (1 - c.alpha) * 100
    text = f"{level:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _ci_name(c: Comparison) -> str:
    return f"{level_text(c)} CI" + (" (Holm-adjusted)" if c.family else "")


def _detects(c: Comparison) -> str:
    if math.isinf(c.mde):
        return (
            f"at {c.tasks} tasks no difference can be shown: an exact test needs at least 6 "
            "tasks that changed the same way"
        )
    return f"at {c.tasks} tasks this comparison detects |Δ| ≥ {c.mde * 100:.1f} pts (80% power)"


def verdict_sentence(c: Comparison) -> str:
    """The verdict in words, with the reason it follows from the interval."""
    margin = f"±{c.margin * 100:.1f} pts"
    ci = _ci_name(c)
    if c.verdict is Verdict.BETTER:
        text = f"better: the {ci} of Δ lies above 0 ({pts(c.delta)} pts)"
    elif c.beyond_margin:
        text = (
            f"worse beyond the margin: the whole {ci} of Δ lies below "
            f"-{c.margin * 100:.1f} pts ({pts(c.delta)} pts)"
        )
    elif c.verdict is Verdict.WORSE:
        text = (
            f"worse, within the {margin} margin: the {ci} of Δ lies below 0 but not wholly "
            f"below -{c.margin * 100:.1f} pts ({pts(c.delta)} pts); a regression gate passes it"
        )
    elif c.verdict is Verdict.NO_CHANGE:
        text = f"no change beyond the margin: the {ci} lies inside {margin} " \
            f"(no evidence of a change of {c.margin * 100:.1f} pts or more)"  # fmt: skip
    elif not c.decisive:
        text = (
            f"inconclusive: every task tied, so the data cannot bound Δ (the {ci} is "
            f"{interval_pts(c.ci)}); {_detects(c)}"
        )
    else:
        text = f"inconclusive: the {ci} includes 0 and changes beyond {margin}; {_detects(c)}"
    if c.same_config:
        text += (
            "; both runs are the same configuration, so any difference is run-to-run noise "
            "or Platform drift"
        )
    return text


def _task_list(tasks: Sequence[str]) -> str:
    shown = ", ".join(tasks[:MAX_LISTED_TASKS])
    more = len(tasks) - MAX_LISTED_TASKS
    return shown + (f", ... {more} more" if more > 0 else "")


def _errored_side(errored: int, total: int) -> str:
    share = f" ({errored / total * 100:.1f}%)" if total else ""
    return f"{errored} of {total}{share}"


def errored_line(c: Comparison) -> str | None:
    """The errored attempts of each side, and a warning when their rates differ."""
    if not c.paired:
        return None
    text = (
        f"errored attempts (counted as not passed): LEFT {_errored_side(c.errored_left, c.total_left)}, "
        f"RIGHT {_errored_side(c.errored_right, c.total_right)}"
    )
    if c.errored_differ:
        return "warning: " + text + "; the error rates differ, and Δ counts the difference"
    return text


def same_config_line(c: Comparison) -> str | None:
    if not c.same_config:
        return None
    return (
        "same configuration: both runs were submitted with identical bodies; a difference "
        "between them is run-to-run noise or Platform drift, not a change of agent"
    )


def _p_text(c: Comparison) -> str:
    text = f"p = {_p(c.p_value)}"
    if c.adjusted_p is not None:
        text += f" (Holm-adjusted p = {_p(c.adjusted_p)}, {c.family})"
    return text


def _compare_lines(r: CompareReport) -> list[str]:
    c = r.comparison
    lines = [
        f"LEFT  {r.left} ({r.left_agent}): pass@1 {pct(c.left)}",
        f"RIGHT {r.right} ({r.right_agent}): pass@1 {pct(c.right)}",
    ]
    lines += [line for line in (same_config_line(c),) if line]
    if c.paired:
        lines.append(
            f"aligned on {c.tasks} tasks both attempted ({len(c.only_left)} only in LEFT, "
            f"{len(c.only_right)} new in RIGHT, {len(c.changed)} changed and left out); "
            f"attempts per task {c.attempts_left} and {c.attempts_right}"
        )
    lines.append(
        f"Δ = RIGHT − LEFT: {pts(c.delta)} pts, {_ci_name(c)} {interval_pts(c.ci)}"
        + (" (paired)" if c.paired else " (unpaired)")
    )
    if c.paired and c.unpaired_ci is not None:
        corr = "undefined" if c.correlation is None else f"{c.correlation:.2f}"
        lines.append(
            f"unpaired CI for contrast {interval_pts(c.unpaired_ci)}; correlation {corr}; "
            f"tasks up {len(c.up)}, down {len(c.down)}, tied {c.tied}"
        )
    lines += [line for line in (errored_line(c),) if line]
    lines.append(f"test: {c.test}, {_p_text(c)}")
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


def verdict_word(c: Comparison) -> str:
    """The verdict as one short phrase (tables)."""
    if c.beyond_margin:
        return "worse beyond the margin"
    if c.verdict is Verdict.WORSE:
        return "worse (within the margin)"
    return str(c.verdict.value)


def render_compare_markdown(reports: Sequence[CompareReport]) -> str:
    out: list[str] = []
    for r in reports:
        c = r.comparison
        out.append(f"**{_md(r.right)}** vs **{_md(r.left)}**: **{verdict_word(c)}**")
        out.append("")
        out.append(f"| | pass@1 | Δ vs LEFT [{_ci_name(c)}] | test | verdict |")
        out.append("|---|---:|---|---|---|")
        out.append(f"| LEFT `{_md(r.left)}` | {pct(c.left)} | | | |")
        out.append(
            f"| RIGHT `{_md(r.right)}` | {pct(c.right)} | {pts(c.delta)} pts "
            f"{_md(interval_pts(c.ci))} | {c.test}, {_md(_p_text(c))} | {verdict_word(c)} |"
        )
        out.append("")
        out.append(_md(verdict_sentence(c)))
        for note in (same_config_line(c), errored_line(c), c.note, *r.notes):
            if note:
                out.append("")
                out.append(
                    f"_{_md(note)}_"
                    if note.startswith(("warning", "same"))
                    else f"_note: {_md(note)}_"
                )
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
        **num.numbers_to_dict(agent.numbers),
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
                "smoke": line.report.run.smoke,
                "requested_by": line.report.run.requested_by,
                "baseline": line.baseline,
                "source": line.report.source,
                "outputs": line.local_dir,
                "previous_comparable": line.previous,
                "not_comparable_because": list(line.previous_changes),
                "note": line.report.note,
                "retried_attempts": line.report.retried,
                "retry_runs": list(line.report.retry_runs),
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
        "ci": _ci(c.ci),
        "level": _num(1 - c.alpha),
        "adjusted_p_value": _num(c.adjusted_p),
        "family": c.family,
        "decisive": c.decisive,
        "beyond_margin": c.beyond_margin,
        "same_config": c.same_config,
        "errored_left": c.errored_left,
        "attempts_left": c.total_left,
        "errored_right": c.errored_right,
        "attempts_right": c.total_right,
        "errored_rates_differ": c.errored_differ,
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
