"""Renderers: a ``Plan`` in, a string out (design.md §9). Pure; they never recompute the plan.

* ``render_text``      Terraform-like terminal output (ANSI colours only when asked);
* ``render_markdown``  a sticky pull-request comment, capped below ``max_chars``;
* ``render_json``      machine-readable, ``format_version`` "1.0".

``plan_to_dict`` / ``plan_from_dict`` are the JSON shape of a saved plan (``--out``): the
same document ``render_json`` prints, which round-trips to an equal ``Plan``.

Every name from outside (addresses, run names and ids, commit subjects, config values in
diffs, the Platform's texts in details and drift) goes through ``escape_text`` in the text
and markdown renders, so a newline or an ANSI/OSC sequence in a file name cannot forge
lines or rewrite the terminal; in markdown, names are also put in code spans and a ``<``
in plain text cannot open HTML.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from reconciler.errors import StalePlanError
from reconciler.escaping import escape_text
from reconciler.model import (
    PLAN_FORMAT_VERSION,
    RERUN_HINT,
    UNSUCCESSFUL_STATUSES,
    Action,
    AgentResult,
    DriftItem,
    DriftKind,
    Fix,
    LeaderboardScore,
    ObservedRun,
    Plan,
    PlanItem,
    PlanSummary,
    Reason,
    RecordedChange,
    ResultRow,
)
from reconciler.render.generators import (
    generator_grids,
    generator_lines,
    generator_to_dict,
    generators_from_dicts,
    source_from_dict,
    source_line,
    source_to_dict,
)

MARKDOWN_MARKER = "<!-- osmosis-reconciler:plan"
"""Start of the hidden first line of a PR comment; the workspace follows, so one comment per
workspace can be found and updated."""

NO_CHANGES = "No changes. Benchmark runs match the configuration."

ACTION_VERBS = {
    Action.SUBMIT: "submit a new run",
    Action.REPLACE: "replace: stop the active run, then submit",
    Action.STOP: "stop the run",
    Action.FORGET: "forget: the entry moves to history, results stay on disk",
    Action.DOWNLOAD: "download outputs",
    Action.ADOPT: "adopt a run already on the Platform (no new run)",
    Action.MOVE: "move the entry to a renamed config (no Platform call)",
    Action.BLOCKED: "blocked: cannot succeed as configured",
}

REASON_TEXT = {
    Reason.NEW_CONFIG: "new config",
    Reason.SPEC_CHANGED: "config changed",
    Reason.CONFIG_DELETED: "config deleted",
    Reason.RUN_FINISHED: "run ended; outputs not downloaded yet",
    Reason.RESULTS_MISSING: "outputs not fully on disk",
    Reason.RESULTS_CHANGED: "downloaded files changed on disk",
    Reason.INTENT_PENDING: "an interrupted submit is pending",
    Reason.UNRECORDED_MATCH: "an unrecorded run on the Platform matches this config",
    Reason.RENAMED: "config renamed",
    Reason.REPLACE_REQUESTED: "re-run requested (--replace or an Osmosis-Rerun trailer)",
    Reason.RUN_MISSING: "recorded run no longer exists on the Platform",
    Reason.RESUBMIT_AFTER_LOST: "an interrupted submit left no run on the Platform",
    Reason.SECRET_MISSING: "secret missing",
    Reason.BENCHMARK_NOT_FOUND: "benchmark not found",
    Reason.BENCHMARK_NOT_READY: "benchmark not ready",
    Reason.JUDGE_REQUIRED: "judge credential required",
    Reason.HARNESS_REQUIRED: "harness required",
    Reason.HARNESS_UNSUPPORTED: "harness not supported",
    Reason.TASKS_NOT_FOUND: "tasks not found",
    Reason.STOP_PENDING: "an interrupted stop is pending",
    Reason.EXECUTION_INVALID: "[execution] value out of range",
    Reason.VERIFIER_REJECTED: "[verifier] not accepted",
    Reason.TASKS_EMPTY: "task selection is empty",
    Reason.RECORD_MISMATCH: "the lockfile's record does not match the run",
    Reason.PLATFORM_REFUSED: "the Platform refused this config",
}

DRIFT_TEXT = {
    DriftKind.RUN_MISSING: "run missing",
    DriftKind.STOPPED_OUTSIDE: "stopped outside the tool",
    DriftKind.FAILED_OUTSIDE: "failed outside the tool",
    DriftKind.FILES_CHANGED: "files changed on disk",
    DriftKind.POSSIBLE_DUPLICATE: "possible duplicate payment",
}

_ANSI = {
    Action.SUBMIT: "\x1b[32m",
    Action.REPLACE: "\x1b[33m",
    Action.STOP: "\x1b[31m",
    Action.FORGET: "\x1b[2m",
    Action.DOWNLOAD: "\x1b[36m",
    Action.ADOPT: "\x1b[36m",
    Action.MOVE: "\x1b[35m",
    Action.BLOCKED: "\x1b[1;31m",
}
_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_YELLOW = "\x1b[33m"
_RED = "\x1b[1;31m"


# --------------------------------------------------------------------------- shared pieces


def summary_line(plan: Plan) -> str:
    """``Plan: 2 to submit, 1 to replace, 1 to stop, 3 to download, 0 to forget; 1,246 attempts.``"""
    s = plan.summary
    parts = [
        f"{s.submit:,} to submit",
        f"{s.replace:,} to replace",
        f"{s.stop:,} to stop",
        f"{s.download:,} to download",
        f"{s.forget:,} to forget",
    ]
    if s.adopt:
        parts.append(f"{s.adopt:,} to adopt")
    if s.move:
        parts.append(f"{s.move:,} to move")
    if s.blocked:
        parts.append(f"{s.blocked:,} blocked")
    word = "attempt" if s.attempts == 1 else "attempts"
    cost = ""
    if s.cost_usd_high is not None:
        cost = f", est. {_usd_range(s.cost_usd_low, s.cost_usd_high)}"
        if s.unestimated:
            cost += f" (+{s.unestimated:,} without an estimate)"
    return f"Plan: {', '.join(parts)}; {s.attempts:,} {word}{cost}."


def _usd_range(low: float | None, high: float) -> str:
    low = high if low is None else low
    if round(low, 2) == round(high, 2):
        return _money(high)
    return f"{_money(low)}–{_money(high)}"


_e = escape_text


def reason_text(item: PlanItem) -> str:
    """The ``# ...`` comment of an item, in words (names escaped)."""
    text = REASON_TEXT[item.reason]
    if item.action is Action.MOVE and item.from_address:
        return f"{text}: {_e(item.from_address)} -> {_e(item.address)}"
    if item.action is Action.BLOCKED and item.intended_action is not None:
        intended = item.intended_action.value
        why = REASON_TEXT[item.intended_reason] if item.intended_reason else ""
        return f"blocked: would {intended} ({why}); {text}" if why else f"blocked: {text}"
    if item.action is Action.BLOCKED:
        return f"blocked: {text}"
    return text


def _run_label(name: str | None, run_id: str | None) -> str:
    if name and run_id and name != run_id:
        return f"{_e(name)} ({_e(run_id)})"
    return _e(name or run_id or "")


def _item_body(item: PlanItem) -> list[str]:
    """The indented lines under an item's symbol line (without indentation)."""
    lines = [f"# {reason_text(item)}"]
    source = source_line(item)
    if source:
        lines.append(source)
    run = _run_label(item.run_name, item.run_id)
    if run:
        label = "old run" if item.action is Action.REPLACE else "run"
        lines.append(f"{label}: {run}")
    if item.action in (Action.SUBMIT, Action.REPLACE, Action.BLOCKED) and (
        item.task_count is not None or item.attempts
    ):
        tasks = f"{_count(item.task_count, 'task')} -> " if item.task_count is not None else ""
        estimate = ""
        if item.cost_usd_high is not None:
            estimate = f", est. {_usd_range(item.cost_usd_low, item.cost_usd_high)}"
        lines.append(f"cost: {tasks}{_count(item.attempts, 'attempt')}{estimate}")
        if item.cost_basis:
            lines.append(f"  (estimate: {item.cost_basis})")
    benchmark = _benchmark_line(item)
    if benchmark:
        lines.append(benchmark)
    if item.download_types:
        lines.append(f"types: {', '.join(item.download_types)}")
    if item.requested_by:
        subject = f' "{_e(item.requested_subject)}"' if item.requested_subject else ""
        lines.append(f"requested by {item.requested_by[:7]}{subject}")
    if item.changes:
        lines.append("changes:")
        lines.extend(f"  {_e(change)}" for change in item.changes)
    lines.extend(f"* {_e(detail)}" for detail in item.details)
    lines.extend(f"warning: {_e(warning)}" for warning in item.warnings)
    return lines


def _benchmark_line(item: PlanItem) -> str | None:
    """``benchmark: source https://... · pass threshold 0.5`` (the catalog's seed data)."""
    parts = []
    if item.source_url:
        parts.append(f"source {item.source_url}")
    if item.pass_threshold is not None:
        parts.append(f"pass threshold {item.pass_threshold:g}")
    return "benchmark: " + " · ".join(parts) if parts else None


def _header(plan: Plan) -> str:
    serial = f" · lockfile serial {plan.serial}" if plan.serial is not None else ""
    head = f" · HEAD {plan.head[:7]}" if plan.head else ""
    return (
        f"Osmosis plan · workspace {_e(plan.workspace)} · platform {_e(plan.platform)}"
        f"{serial}{head}"
    )


def _present_actions(plan: Plan) -> list[Action]:
    present = {item.action for item in plan.items}
    return [action for action in Action if action in present]


UNMANAGED_LIST_MAX = 200
"""The text and markdown renders list at most this many unmanaged runs (json lists all)."""


def unmanaged_line(plan: Plan) -> str | None:
    """One line about the workspace's runs this repository does not manage (not drift)."""
    n = plan.unmanaged_count
    if not n:
        return None
    runs = "run" if n == 1 else "runs"
    verb = "is" if n == 1 else "are"
    see = "listed below" if plan.unmanaged else "list them with `osmosis-plan --show-unmanaged`"
    return (
        f"{n:,} other {runs} in workspace {_e(plan.workspace)} {verb} not managed by this "
        f"repository (not drift): {see}; bring one under management with "
        "`osmosis-import RUN`."
    )


def _unmanaged_rows(plan: Plan) -> list[str]:
    rows = []
    for run in plan.unmanaged[:UNMANAGED_LIST_MAX]:
        created = run.created_at.strftime("%Y-%m-%d %H:%M") if run.created_at else "–"
        rows.append(
            f"{_run_label(run.name, run.id) or _e(run.id)} · {_e(run.benchmark_name or '–')} · "
            f"{_e(run.status or 'unknown status')} · created {created}"
        )
    if len(plan.unmanaged) > UNMANAGED_LIST_MAX:
        rows.append(f"... {len(plan.unmanaged) - UNMANAGED_LIST_MAX:,} more (see --format json)")
    return rows


IGNORED_SHOWN = 10


def ignored_line(plan: Plan) -> str | None:
    """One line naming the config files kept in the tree but never submitted."""
    if not plan.ignored:
        return None
    why = {"marker": "its # osmosis-reconciler: ignore line", "setting": "the ignore setting"}
    shown = [f"{path} ({why.get(reason, reason)})" for path, reason in plan.ignored]
    more = len(shown) - IGNORED_SHOWN
    listed = "; ".join(shown[:IGNORED_SHOWN]) + (f"; and {more:,} more" if more > 0 else "")
    n = len(plan.ignored)
    return f"Ignored, never submitted: {n:,} config file{'s' if n != 1 else ''}: {listed}."


def _other_pending_note(plan: Plan) -> str:
    n = plan.other_pending
    what = "action is" if n == 1 else "actions are"
    return f"{n:,} other pending {what} outside --target and left out of this plan."


# --------------------------------------------------------------------------- results

TEXT_RESULT_ROWS = 20
"""The text render lists at most this many result rows (markdown and json list them all)."""


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _pass_at_1(agent: AgentResult) -> str:
    """``75.0% (71.9–78.1)``: pass@1 with its confidence interval, as the run page shows it."""
    if agent.pass_at_1 is None:
        return "–"
    text = _pct(agent.pass_at_1)
    if agent.ci_low is not None and agent.ci_high is not None:
        text += f" ({agent.ci_low * 100:.1f}–{agent.ci_high * 100:.1f})"
    return text


def _pass_at_k(agent: AgentResult) -> str:
    if agent.pass_at_k is None:
        return "–"
    return f"pass@{agent.k if agent.k is not None else 'k'} {_pct(agent.pass_at_k)}"


def _money(value: float | None) -> str:
    if value is None:
        return "–"
    # Cheap tasks cost fractions of a cent; two decimals would show them all as $0.00.
    return f"${value:.4f}" if 0 < value < 0.01 else f"${value:,.2f}"


def _agent_label(agent: AgentResult) -> str:
    model = _e(agent.model) if agent.model else f"agent {agent.agent_index + 1}"
    return f"{model} · {_e(agent.harness) if agent.harness else 'default'}"


def _versus_previous(row: ResultRow) -> str:
    """``+4.2 pts (prev 61.0%)``: the pass@1 change against the previous run of the address."""
    before = row.previous
    if before is None:
        return "–"
    if before.pass_at_1 is None or row.agent.pass_at_1 is None:
        return f"prev {_pass_at_1(before)}"
    points = round((row.agent.pass_at_1 - before.pass_at_1) * 100, 1)
    delta = "±0.0" if points == 0 else f"{points:+.1f}"
    return f"{delta} pts (prev {_pct(before.pass_at_1)})"


def _versus_leaderboard(row: ResultRow) -> str:
    """``-3.1 pts vs leaderboard 49.4% (#1, parity)``: against the published score of the
    same model and harness."""
    board = row.leaderboard
    if board is None or board.pass_at_1 is None:
        return "–"
    where = ", ".join(
        part
        for part in (f"#{board.rank}" if board.rank is not None else None, board.task_set)
        if part
    )
    published = f"leaderboard {_pct(board.pass_at_1)}" + (f" ({where})" if where else "")
    if row.agent.pass_at_1 is None:
        return published
    points = round((row.agent.pass_at_1 - board.pass_at_1) * 100, 1)
    delta = "±0.0" if points == 0 else f"{points:+.1f}"
    return f"{delta} pts vs {published}"


def _unavailable_notes(rows: tuple[ResultRow, ...]) -> list[str]:
    """One note per address whose benchmark lists unavailable tasks."""
    notes: dict[str, str] = {}
    for row in rows:
        if row.unavailable_tasks and row.address not in notes:
            why = f" ({row.unavailable_reason})" if row.unavailable_reason else ""
            notes[row.address] = (
                f"{row.address}: {_count(row.unavailable_tasks, 'task')} of the benchmark "
                f"unavailable{why}, not run or scored"
            )
    return list(notes.values())


def _result_runs(rows: tuple[ResultRow, ...]) -> int:
    return len({(row.address, row.run_id) for row in rows})


# --------------------------------------------------------------------------- text


def render_text(plan: Plan, *, color: bool = False) -> str:
    """Terraform-like text: header, legend of the symbols present, items, drift, summary."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    out: list[str] = []
    if plan.items or plan.drift:
        out += [_header(plan), ""]
    out += generator_lines(plan)
    if plan.items:
        out.append("Actions are shown with these symbols:")
        for action in _present_actions(plan):
            out.append(f"  {paint(_ANSI[action], action.symbol.ljust(3))} {ACTION_VERBS[action]}")
        out += ["", "Osmosis would:", ""]
        for item in plan.items:
            out.append(f"  {paint(_ANSI[item.action], item.action.symbol)} {_e(item.address)}")
            out.extend(f"      {line}" for line in _item_body(item))
            out.append("")
    out += _text_drift(plan, paint)
    if plan.results:
        out += _text_results(plan.results)
    if plan.warnings:
        out.append(paint(_YELLOW, "Warnings:"))
        out.extend(f"  - {_e(warning)}" for warning in plan.warnings)
        out.append("")
    if plan.other_pending:
        out += [_other_pending_note(plan), ""]
    unmanaged = unmanaged_line(plan)
    if unmanaged:
        out += [unmanaged, ""]
        if plan.unmanaged:
            out += [f"  {row}" for row in _unmanaged_rows(plan)] + [""]
    ignored = ignored_line(plan)
    if ignored:
        out += [ignored, ""]
    for error in plan.errors:
        out.append(f"{paint(_RED, 'Error:')} {_e(error)}")
    if plan.errors:
        out.append("")
    if plan.items:
        out.append(paint(_BOLD, summary_line(plan)))
    elif plan.drift:
        out.append(
            f"No changes to benchmark runs. {_count(len(plan.drift), 'drift item')} listed above."
        )
    else:
        out.append(NO_CHANGES)
    return "\n".join(out) + "\n"


def _text_drift(plan: Plan, paint: Callable[[str, str], str]) -> list[str]:
    if not plan.drift:
        return []
    out = [
        f"Drift: {_count(len(plan.drift), 'difference')} between the lockfile and reality "
        "(reported, not acted on by itself):",
        "",
    ]
    for drift in plan.drift:
        where = _e(drift.address) if drift.address else "(workspace)"
        out.append(f"  {paint(_YELLOW, '~')} {where}: {DRIFT_TEXT[drift.kind]}")
        out.append(f"      {_e(drift.message)}")
        out.append(f"      fingerprint {_short_fingerprint(drift.fingerprint)}")
        out.append("")
    return out


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()
) -> list[str]:
    """Rows of text cells as aligned lines: every column as wide as its widest cell.

    ``right`` lists the columns aligned to the right (numbers). Trailing spaces are
    trimmed, so a short last cell leaves none.
    """
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(padded).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)]


def _text_results(rows: tuple[ResultRow, ...]) -> list[str]:
    """The compact results table: one row per agent, at most ``TEXT_RESULT_ROWS``."""
    out = [
        f"Results of {_count(_result_runs(rows), 'ended run')} (pass@1 with 95% CI; "
        "change against the previous run of the address):",
        "",
    ]
    table = [
        [
            _e(row.address),
            _result_run(row),
            _agent_label(row.agent),
            _pass_at_1(row.agent),
            _pass_at_k(row.agent),
            _money(row.agent.cost_per_task),
            _versus_previous(row),
            _versus_leaderboard(row),
        ]
        for row in rows[:TEXT_RESULT_ROWS]
    ]
    headers = [
        "address", "run", "agent", "pass@1", "pass@k", "cost/task", "vs previous",
        "vs leaderboard",
    ]  # fmt: skip
    if not any(row.leaderboard is not None for row in rows[:TEXT_RESULT_ROWS]):
        headers.pop()
        table = [cells[:-1] for cells in table]
    out.extend(f"  {line}" for line in format_table(headers, table, right=(5,)))
    more = len(rows) - TEXT_RESULT_ROWS
    if more > 0:
        out.append(f"  ... {more:,} more (see --format markdown or json)")
    out.extend(f"  {note}" for note in _unsuccessful_notes(rows))
    out.extend(f"  note: {note}" for note in _unavailable_notes(rows))
    out.append("")
    return out


def _result_run(row: ResultRow) -> str:
    label = _run_label(row.run_name, row.run_id)
    return f"{label} ({row.status})" if row.status in UNSUCCESSFUL_STATUSES else label


def _unsuccessful_notes(rows: Sequence[ResultRow]) -> list[str]:
    """A line per run that ended failed or stopped, with the command that re-runs it."""
    seen: dict[str, str] = {}
    for row in rows:
        if row.status in UNSUCCESSFUL_STATUSES and row.address not in seen:
            seen[row.address] = f"{_e(row.address)}: the run ended {row.status}; " + (
                RERUN_HINT.format(address=_e(row.address))
            )
    return list(seen.values())


# --------------------------------------------------------------------------- markdown


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_plain(escaped: str) -> str:
    """Markdown text already escaped by ``escape_text``: a ``<`` cannot open HTML."""
    return escaped.replace("<", "&lt;")


def _md_text(text: str) -> str:
    """Plain markdown text from outside (escaped here)."""
    return _md_plain(_e(text))


def _md_code(text: str) -> str:
    """A name from outside as an inline code span (see ``_code_span``)."""
    return _code_span(_e(text))


def _code_span(text: str) -> str:
    """Escaped text as an inline code span that no backtick in it can close early."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _html(text: str) -> str:
    return _e(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fence(body: str) -> tuple[str, str]:
    longest = 0
    run = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return ticks + "text", ticks


def _marker_workspace(workspace: str) -> str:
    # Inside the hidden HTML comment: a "-->" in the name must not close it.
    return _e(workspace).replace("-->", "-- >")


def _group_of(address: str) -> str:
    return address.split("/", 1)[0] if "/" in address else "(top level)"


def _short_fingerprint(fingerprint: str) -> str:
    return fingerprint[: len("sha256:") + 12]


def render_markdown(plan: Plan, *, max_chars: int = 65000) -> str:
    """A PR comment: hidden marker, summary table first, details folded, under ``max_chars``.

    Sections are added whole (an item, a drift row) while they fit; whatever does not fit is
    counted in a closing note, so the comment never breaks its markup.
    """
    marker = f"{MARKDOWN_MARKER} workspace={_marker_workspace(plan.workspace)} -->"
    text = f"{marker}\n### Osmosis plan for {_md_code(plan.workspace)}\n\n"
    if not plan.items and not plan.drift and not plan.errors:
        text += NO_CHANGES + "\n"
        if plan.warnings:
            text += "\n**Warnings:**\n" + "".join(f"- {_md_text(w)}\n" for w in plan.warnings)
        if plan.other_pending:
            text += "\n" + _other_pending_note(plan) + "\n"
        text += _md_unmanaged(plan, max_chars - 400 - len(text))
        if ignored_line(plan):
            text += "\n" + _md_cell(ignored_line(plan) or "") + "\n"
        if plan.results:
            section, left = _md_results(plan.results, max_chars - 400 - len(text) - 1)
            text += "\n" + section
            if left:
                text += _truncation_note([_count(left, "result row")], max_chars)
        return _cap(text, max_chars)

    s = plan.summary
    columns = [
        ("submit", s.submit),
        ("replace", s.replace),
        ("stop", s.stop),
        ("download", s.download),
        ("forget", s.forget),
    ]
    columns += [
        (name, n) for name, n in (("adopt", s.adopt), ("move", s.move), ("blocked", s.blocked)) if n
    ]
    columns += [("attempts", s.attempts), ("drift", s.drift)]
    text += "| " + " | ".join(name for name, _ in columns) + " |\n"
    text += "|" + "---:|" * len(columns) + "\n"
    text += "| " + " | ".join(f"{n:,}" for _, n in columns) + " |\n\n"
    if plan.items:
        text += f"**{summary_line(plan)}**\n\n"
    else:
        text += "No changes to benchmark runs; the drift found is listed below.\n\n"
    if plan.errors:
        text += "**The plan cannot be applied:**\n"
        text += "".join(f"- :x: {_md_text(error)}\n" for error in plan.errors) + "\n"

    budget = max_chars - 400  # room for the truncation note
    grids = generator_grids(plan)
    if grids and len(text) + len(grids) <= budget // 2:
        text += grids
    left_items = 0
    left_drift = 0

    def fits(*parts: str) -> bool:
        return len(text) + sum(len(p) for p in parts) <= budget

    blocked = [item for item in plan.items if item.action is Action.BLOCKED]
    if blocked:
        heading = "**Blocked** (fix these, then plan again):\n\n"
        body = ""
        for item in blocked:
            entry = f"- {_md_code(item.address)}: {_md_plain(reason_text(item))}\n"
            entry += "".join(f"  - {_md_text(detail)}\n" for detail in item.details)
            if fits(heading, body, entry, "\n"):
                body += entry
        if body:
            text += heading + body + "\n"
    if plan.warnings:
        section = "**Warnings:**\n" + "".join(f"- {_md_text(w)}\n" for w in plan.warnings) + "\n"
        if fits(section):
            text += section
    if plan.other_pending:
        note = _other_pending_note(plan) + "\n\n"
        if fits(note):
            text += note
    ignored = ignored_line(plan)
    if ignored and fits(ignored, "\n\n"):
        text += _md_cell(ignored) + "\n\n"
    unmanaged = _md_unmanaged(plan, budget - len(text))
    if unmanaged:
        text += unmanaged + "\n"
    left_results = 0
    if plan.results:
        # Actions matter more than scores: with details or drift to show, the results table
        # may take at most half of the room that is left.
        room = budget - len(text)
        if plan.items or plan.drift:
            room //= 2
        section, left_results = _md_results(plan.results, room)
        text += section

    groups: dict[str, list[PlanItem]] = {}
    for item in plan.items:
        groups.setdefault(_group_of(item.address), []).append(item)
    for group in sorted(groups):
        items = groups[group]
        counts = {a: sum(1 for it in items if it.action is a) for a in Action}
        label = ", ".join(f"{counts[a]} {a.value}" for a in Action if counts[a])
        rendered = [
            "\n".join(
                [f"{it.action.symbol} {_e(it.address)}"] + [f"    {x}" for x in _item_body(it)]
            )
            for it in items
        ]
        start, end = _fence("\n".join(rendered))
        opening = f"<details><summary><b>{_html(group)}</b>: {label}</summary>\n\n{start}\n"
        closing = f"{end}\n\n</details>\n\n"
        shown: list[str] = []
        for piece in rendered:
            if not fits(opening, "\n\n".join(shown + [piece]), closing, " " * 80):
                break
            shown.append(piece)
        left_items += len(items) - len(shown)
        if shown:
            more = len(items) - len(shown)
            tail = f"\n\n... {more:,} more not shown" if more else ""
            text += opening + "\n\n".join(shown) + tail + "\n" + closing

    if plan.drift:
        opening = (
            f"<details><summary><b>Drift</b>: {_count(len(plan.drift), 'difference')} "
            "between the lockfile and reality</summary>\n\n"
            "| kind | address | run | message | fingerprint |\n|---|---|---|---|---|\n"
        )
        closing = "\n</details>\n"
        rows = ""
        for drift in plan.drift:
            row = (
                f"| {DRIFT_TEXT[drift.kind]} | {_md_cell(_md_text(drift.address or '(workspace)'))} | "
                f"{_md_cell(_md_text(drift.run_id or ''))} | {_md_cell(_md_text(drift.message))} | "
                f"`{_short_fingerprint(drift.fingerprint)}` |\n"
            )
            if not fits(opening, rows, row, closing):
                left_drift = len(plan.drift) - rows.count("\n")
                break
            rows += row
        if rows:
            text += opening + rows + closing

    if left_items or left_drift or left_results:
        left = []
        if left_items:
            left.append(_count(left_items, "action"))
        if left_drift:
            left.append(_count(left_drift, "drift item"))
        if left_results:
            left.append(_count(left_results, "result row"))
        text += _truncation_note(left, max_chars)
    return _cap(text, max_chars)


def _md_unmanaged(plan: Plan, room: int) -> str:
    line = unmanaged_line(plan)
    if not line or len(line) + 2 > room:
        return ""
    text = "\n" + line + "\n"
    if plan.unmanaged:
        body = "".join(f"- {_md_cell(_md_plain(row))}\n" for row in _unmanaged_rows(plan))
        folded = f"\n<details><summary>Unmanaged runs</summary>\n\n{body}\n</details>\n"
        if len(text) + len(folded) <= room:
            text += folded
    return text


def _truncation_note(left: list[str], max_chars: int) -> str:
    return (
        f"\n_Truncated: {' and '.join(left)} did not fit in this comment (capped below "
        f"{max_chars:,} characters). Run `osmosis-plan` locally or see the CI log for the "
        "full plan._\n"
    )


def _md_results(rows: tuple[ResultRow, ...], room: int) -> tuple[str, int]:
    """The results table within ``room`` characters, and how many rows did not fit."""
    opening = (
        f"**Results** of {_count(_result_runs(rows), 'ended run')} "
        "(pass@1 with its 95% confidence interval; change against the previous run of the "
        "same address):\n\n"
        "| address | run | agent | pass@1 (95% CI) | best pass@k | cost/task | vs previous "
        "| vs leaderboard |\n"
        "|---|---|---|---:|---:|---:|---|---|\n"
    )
    notes = _unavailable_notes(rows)
    closing = (
        "\n" + "".join(f"_Note: {_md_cell(note)}._\n" for note in notes) + ("\n" if notes else "")
    )
    body = ""
    shown = 0
    for row in rows:
        line = (
            f"| {_md_cell(_md_code(row.address))} | {_md_cell(_md_plain(_result_run(row)))} | "
            f"{_md_cell(_md_plain(_agent_label(row.agent)))} | {_pass_at_1(row.agent)} | "
            f"{_pass_at_k(row.agent)} | {_money(row.agent.cost_per_task)} | "
            f"{_md_cell(_versus_previous(row))} | {_md_cell(_versus_leaderboard(row))} |\n"
        )
        if len(opening) + len(body) + len(line) + len(closing) > room:
            break
        body += line
        shown += 1
    if not shown:
        return "", len(rows)
    notes = "".join(f"- {_md_cell(note)}\n" for note in _unsuccessful_notes(rows[:shown]))
    if notes and len(opening) + len(body) + len(notes) + 1 + len(closing) <= room:
        closing = "\n" + notes + closing
    return opening + body + closing, len(rows) - shown


def render_results_markdown(rows: Sequence[ResultRow], max_chars: int = 60000) -> str:
    """The markdown results table of ``rows`` alone (``osmosis-ci announce`` posts it on the
    pull request that requested the run); empty when no row fits."""
    text, _left = _md_results(tuple(rows), max_chars)
    return text


def _cap(text: str, max_chars: int) -> str:
    # Last resort for absurd inputs (a single enormous line): never exceed the cap.
    if len(text) < max_chars:
        return text
    note = "\n\n_Truncated._\n"
    return text[: max(0, max_chars - len(note) - 1)] + note


# --------------------------------------------------------------------------- refresh


def _change_line(change: RecordedChange) -> str:
    run = _run_label(change.run_name, change.run_id)
    where = f"{_e(change.address)} {run}" if run else _e(change.address)
    before, after = _e(change.before or "none"), _e(change.after or "none")
    return f"{where}: {_e(change.field)} {before} -> {after}"


def _refresh_closing(changes: Sequence[RecordedChange], recorded: bool, pending: int) -> list[str]:
    out: list[str] = []
    if recorded:
        out.append(
            f"Refresh complete: {_count(len(changes), 'change')} recorded."
            if changes
            else "No changes. The lockfile already records what the Platform reports."
        )
    elif changes:
        out.append(
            "This is a refresh-only plan: nothing was written. Record these changes with "
            "`osmosis-apply --refresh-only`."
        )
    else:
        out.append("No changes. The lockfile already records what the Platform reports.")
    if pending:
        what = "action is" if pending == 1 else "actions are"
        out.append(f"{pending:,} pending {what} not part of a refresh; `osmosis-plan` shows them.")
    return out


def render_refresh_text(
    plan: Plan,
    changes: Sequence[RecordedChange],
    *,
    recorded: bool,
    pending: int,
    state_path: str,
    color: bool = False,
) -> str:
    """A refresh: what the lockfile would record (or recorded), then the drift that stays."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    out = [_header(plan).replace("Osmosis plan", "Osmosis refresh", 1), ""]
    if changes:
        verb = "Recorded" if recorded else "Refresh would record"
        out += [f"{verb} {_count(len(changes), 'change')} in {state_path}:", ""]
        out.extend(f"  {paint(_YELLOW, '~')} {_change_line(c)}" for c in changes)
        out.append("")
    out += _text_drift(plan, paint)
    if plan.warnings:
        out.append(paint(_YELLOW, "Warnings:"))
        out.extend(f"  - {_e(warning)}" for warning in plan.warnings)
        out.append("")
    out += _refresh_closing(changes, recorded, pending)
    return "\n".join(out) + "\n"


def render_refresh_markdown(
    plan: Plan, changes: Sequence[RecordedChange], *, recorded: bool, pending: int
) -> str:
    """The refresh for a comment: the changes as a list, the drift as a table."""
    marker = f"{MARKDOWN_MARKER} workspace={_marker_workspace(plan.workspace)} -->"
    text = f"{marker}\n### Osmosis refresh for {_md_code(plan.workspace)}\n\n"
    if changes:
        verb = "Recorded" if recorded else "Would record"
        text += f"**{verb} {_count(len(changes), 'change')}:**\n\n"
        text += "".join(f"- {_md_cell(_code_span(_change_line(c)))}\n" for c in changes) + "\n"
    if plan.drift:
        text += "| drift | address | message |\n|---|---|---|\n"
        for drift in plan.drift:
            text += (
                f"| {DRIFT_TEXT[drift.kind]} | {_md_cell(_md_text(drift.address or '(workspace)'))} | "
                f"{_md_cell(_md_text(drift.message))} |\n"
            )
        text += "\n"
    text += "\n".join(_refresh_closing(changes, recorded, pending)) + "\n"
    return _cap(text, 65000)


def refresh_to_dict(
    plan: Plan, changes: Sequence[RecordedChange], *, recorded: bool, pending: int
) -> dict[str, Any]:
    """The JSON body of a refresh: the changes, whether they were written, the drift."""
    return {
        "platform": plan.platform,
        "workspace": plan.workspace,
        "lineage": plan.lineage,
        "serial": plan.serial,
        "head": plan.head,
        "recorded": recorded,
        "changes": [change.model_dump() for change in changes],
        "drift": [_drift_to_dict(d) for d in plan.drift],
        "pending_actions": pending,
        "warnings": list(plan.warnings),
    }


# --------------------------------------------------------------------------- json


def _item_to_dict(item: PlanItem) -> dict[str, Any]:
    return {
        "action": item.action.value,
        "symbol": item.action.symbol,
        "address": item.address,
        "from_address": item.from_address,
        "reason": item.reason.value,
        "intended_action": item.intended_action.value if item.intended_action else None,
        "intended_reason": item.intended_reason.value if item.intended_reason else None,
        "run_id": item.run_id,
        "run_name": item.run_name,
        "before": item.before_digest,
        "after": item.after_digest,
        "benchmark_id": item.benchmark_id,
        "task_count": item.task_count,
        "attempts": item.attempts,
        "changes": list(item.changes),
        "details": list(item.details),
        "warnings": list(item.warnings),
        "requested_by": item.requested_by,
        "requested_subject": item.requested_subject,
        "download_types": list(item.download_types),
        "source_url": item.source_url,
        "pass_threshold": item.pass_threshold,
        "fixes": [fix.model_dump(exclude_defaults=True) for fix in item.fixes],
        "context": item.context,
        "cost_usd": {"low": item.cost_usd_low, "high": item.cost_usd_high, "basis": item.cost_basis}
        if item.cost_usd_high is not None
        else None,
        "spec": json.loads(json.dumps(item.spec, sort_keys=True))
        if item.spec is not None
        else None,
        # Only on a generator's addresses, so plans without generators keep their shape.
        **({"source": source_to_dict(item.source)} if item.source is not None else {}),
    }


def _drift_to_dict(drift: DriftItem) -> dict[str, Any]:
    return {
        "kind": drift.kind.value,
        "address": drift.address,
        "run_id": drift.run_id,
        "message": drift.message,
        "fingerprint": drift.fingerprint,
    }


def _result_to_dict(row: ResultRow) -> dict[str, Any]:
    now, before = row.agent.pass_at_1, row.previous.pass_at_1 if row.previous else None
    return {
        "address": row.address,
        "run_id": row.run_id,
        "run_name": row.run_name,
        "status": row.status,
        "agent": row.agent.model_dump(),
        "previous": row.previous.model_dump() if row.previous else None,
        "previous_run_id": row.previous_run_id,
        "previous_run_name": row.previous_run_name,
        "leaderboard": row.leaderboard.model_dump() if row.leaderboard else None,
        "unavailable_tasks": row.unavailable_tasks,
        "unavailable_reason": row.unavailable_reason,
        "delta_pass_at_1": round(now - before, 6)
        if now is not None and before is not None
        else None,
    }


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The JSON document of a plan (``render_json``) and of a saved plan (``--out``)."""
    return {
        "format_version": PLAN_FORMAT_VERSION,
        "platform": plan.platform,
        "workspace": plan.workspace,
        "lineage": plan.lineage,
        "serial": plan.serial,
        "head": plan.head,
        "config_digests": dict(sorted(plan.config_digests.items())),
        "actions": [_item_to_dict(item) for item in plan.items],
        "drift": [_drift_to_dict(d) for d in plan.drift],
        "summary": plan.summary.model_dump(),
        "warnings": list(plan.warnings),
        "errors": list(plan.errors),
        "errored": bool(plan.errors),
        "other_pending": plan.other_pending,
        "results": [_result_to_dict(row) for row in plan.results],
        "unmanaged_count": plan.unmanaged_count,
        "unmanaged": [_unmanaged_to_dict(run) for run in plan.unmanaged],
        "observed_until": plan.observed_until.isoformat() if plan.observed_until else None,
        "ignored": [{"path": path, "why": why} for path, why in plan.ignored],
        **(
            {"generators": [generator_to_dict(g) for g in plan.generators]}
            if plan.generators
            else {}
        ),
    }


def _unmanaged_to_dict(run: ObservedRun) -> dict[str, Any]:
    return {
        "run_id": run.id,
        "run_name": run.name or None,
        "status": run.status or None,
        "benchmark_id": run.benchmark_id,
        "benchmark_name": run.benchmark_name,
        "created_at": run.created_at.isoformat() if run.created_at else None,
    }


def render_json(plan: Plan) -> str:
    """``plan_to_dict`` as indented JSON with a final newline."""
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False) + "\n"


def _datetime_or_none(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _enum_or_none(enum: Callable[[str], Any], value: Any) -> Any:
    return None if value is None else enum(value)


def plan_from_dict(data: Mapping[str, Any]) -> Plan:
    """Read back ``plan_to_dict``'s document; raises ``StalePlanError`` when it is not one."""
    hint = "make a new one with `osmosis-plan --out PLANFILE`"
    if not isinstance(data, Mapping) or "format_version" not in data:
        raise StalePlanError("the file is not a saved osmosis-reconciler plan", hint)
    version = data["format_version"]
    if version != PLAN_FORMAT_VERSION:
        raise StalePlanError(
            f"the saved plan has format_version {version!r}; this version reads "
            f"{PLAN_FORMAT_VERSION!r}",
            hint,
        )
    try:
        items = tuple(
            PlanItem(
                action=Action(a["action"]),
                address=a["address"],
                from_address=a.get("from_address"),
                reason=Reason(a["reason"]),
                intended_action=_enum_or_none(Action, a.get("intended_action")),
                intended_reason=_enum_or_none(Reason, a.get("intended_reason")),
                run_id=a.get("run_id"),
                run_name=a.get("run_name"),
                before_digest=a.get("before"),
                after_digest=a.get("after"),
                benchmark_id=a.get("benchmark_id"),
                task_count=a.get("task_count"),
                attempts=a.get("attempts", 0),
                changes=tuple(a.get("changes", ())),
                details=tuple(a.get("details", ())),
                warnings=tuple(a.get("warnings", ())),
                requested_by=a.get("requested_by"),
                requested_subject=a.get("requested_subject"),
                download_types=tuple(a.get("download_types", ())),
                context=a.get("context"),
                cost_usd_low=(a.get("cost_usd") or {}).get("low"),
                cost_usd_high=(a.get("cost_usd") or {}).get("high"),
                cost_basis=(a.get("cost_usd") or {}).get("basis"),
                spec=a.get("spec"),
                source_url=a.get("source_url"),
                pass_threshold=a.get("pass_threshold"),
                fixes=tuple(Fix.model_validate(f) for f in a.get("fixes", ())),
                source=source_from_dict(a.get("source")),
            )
            for a in data["actions"]
        )
        drift = tuple(
            DriftItem(
                kind=DriftKind(d["kind"]),
                address=d.get("address"),
                run_id=d.get("run_id"),
                message=d["message"],
                fingerprint=d["fingerprint"],
            )
            for d in data["drift"]
        )
        results = tuple(
            ResultRow(
                address=r["address"],
                run_id=r.get("run_id"),
                run_name=r.get("run_name"),
                status=r.get("status"),
                agent=AgentResult.model_validate(r["agent"]),
                previous=AgentResult.model_validate(r["previous"]) if r.get("previous") else None,
                previous_run_id=r.get("previous_run_id"),
                previous_run_name=r.get("previous_run_name"),
                leaderboard=LeaderboardScore.model_validate(r["leaderboard"])
                if r.get("leaderboard")
                else None,
                unavailable_tasks=r.get("unavailable_tasks", 0),
                unavailable_reason=r.get("unavailable_reason"),
            )
            for r in data.get("results", ())
        )
        return Plan(
            items=items,
            drift=drift,
            warnings=tuple(data.get("warnings", ())),
            errors=tuple(data.get("errors", ())),
            summary=PlanSummary(**data["summary"]),
            lineage=data.get("lineage"),
            serial=data.get("serial"),
            platform=data.get("platform", ""),
            workspace=data.get("workspace", ""),
            head=data.get("head"),
            config_digests=dict(data.get("config_digests", {})),
            other_pending=data.get("other_pending", 0),
            results=results,
            unmanaged_count=data.get("unmanaged_count"),
            observed_until=_datetime_or_none(data.get("observed_until")),
            ignored=tuple((i["path"], i["why"]) for i in data.get("ignored", ())),
            generators=generators_from_dicts(data.get("generators", ())),
        )
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise StalePlanError(f"the saved plan is malformed: {exc}", hint) from exc
