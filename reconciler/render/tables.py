"""The results tables: a plan's ``results`` as the text render's table, the markdown
render's table and the JSON render's rows (each render imports its own from here), and
``render_results_text`` / ``render_results_markdown`` for the rows alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconciler.model import (
    RERUN_HINT,
    AgentResult,
    ResultRow,
    RunStatus,
)
from reconciler.render.pieces import (
    count_of,
    e,
    md_cell,
    md_code,
    md_plain,
    run_label,
    shorten_middle,
)
from reconciler.results import numbers
from reconciler.results.table import Column, fit_table, wrap_cell

TEXT_RESULT_ROWS = 20
"""The text render lists at most this many result rows (markdown and json list them all)."""
TEXT_WIDTH = 100
"""The results table fits this many columns."""


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def money_cell(value: float | None) -> str:
    return numbers.money(value)


def _number_cells(agent: AgentResult) -> list[str]:
    """The agent's headline, pass@k, cost and tokens per task and per attempt, as cells."""
    figures = numbers.summary_numbers(agent)
    return [
        numbers.headline_text(figures),
        numbers.pass_at_k_text(figures),
        numbers.money(figures.cost_per_task),
        numbers.money(figures.cost_per_attempt),
        numbers.tokens(figures.tokens_per_task),
        numbers.tokens(figures.tokens_per_attempt),
    ]


def _agent_label(agent: AgentResult) -> str:
    model = e(agent.model) if agent.model else f"agent {agent.agent_index + 1}"
    return f"{model} · {e(agent.harness) if agent.harness else 'default'}"


def _versus_previous(row: ResultRow) -> str:
    """``+4.2 pts (prev 61.0%)``: the pass@1 change against the previous comparable run of
    the address (else what changed)."""
    before = row.previous
    if before is None:
        return f"not comparable: {row.previous_note}" if row.previous_note else "–"
    if before.pass_at_1 is None or row.agent.pass_at_1 is None:
        return f"prev {numbers.headline_text(numbers.summary_numbers(before))}"
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
                f"{row.address}: {count_of(row.unavailable_tasks, 'task')} of the benchmark "
                f"unavailable{why}, not run or scored"
            )
    return list(notes.values())


def _result_runs(rows: tuple[ResultRow, ...]) -> int:
    return len({(row.address, row.run_id) for row in rows})


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


ADDRESS_WIDTH = 28
"""An address longer than this is shortened in the middle in the text table (never
wrapped: a wrapped address reads as two; the markdown and JSON carry it whole)."""
RESULT_COLUMNS = (
    Column("address"),
    Column("run", wrap=True),
    Column("agent", wrap=True),
    Column(numbers.HEADLINE, wrap=True),
    Column("pass@k", drop=4),
    Column("cost/task", right=True, drop=2),
    Column("cost/attempt", right=True, drop=5),
    Column("tokens/task", right=True, drop=6),
    Column("tokens/attempt", right=True, drop=7),
    Column("vs previous", wrap=True, drop=1),
    Column("vs leaderboard", wrap=True, drop=3),
)


def text_results(rows: tuple[ResultRow, ...], width: int = TEXT_WIDTH) -> list[str]:
    """The compact results table: one row per agent, at most ``TEXT_RESULT_ROWS``, fitted
    to ``width`` columns (``results.table``: columns left out, names wrapped, nothing cut)."""
    title = (
        f"Results of {count_of(_result_runs(rows), 'ended run')} (pass@1 with 95% CI and "
        "errored attempts; change against the previous comparable run of the address):"
    )
    out = [*wrap_cell(title, width), ""]
    table = [
        [
            shorten_middle(e(row.address), ADDRESS_WIDTH),
            _result_run(row, with_id=False),
            _agent_label(row.agent),
            *_number_cells(row.agent),
            _versus_previous(row),
            _versus_leaderboard(row),
        ]
        for row in rows[:TEXT_RESULT_ROWS]
    ]
    # Optional figures no row has (all "–") take no room.
    keep = [
        i
        for i, column in enumerate(RESULT_COLUMNS)
        if not column.drop or any(cells[i] != "–" for cells in table)
    ]
    columns = [RESULT_COLUMNS[i] for i in keep]
    table = [[cells[i] for i in keep] for cells in table]
    lines, dropped = fit_table(columns, table, width)
    out.extend(lines)
    more = len(rows) - TEXT_RESULT_ROWS
    notes: list[str] = []
    if more > 0:
        notes.append(f"... {more:,} more (see --format markdown or json)")
    if dropped:
        notes.append(
            f"left out to fit {width} columns: {', '.join(dropped)} "
            "(see --format markdown or json, or osmosis-results)"
        )
    notes += _unsuccessful_notes(rows)
    notes += [f"note: {note}" for note in _unavailable_notes(rows)]
    for note in notes:
        wrapped = wrap_cell(note, width - 6)
        out.append("  " + wrapped[0])
        out.extend("      " + line for line in wrapped[1:])
    out.append("")
    return out


def render_results_text(rows: Sequence[ResultRow], width: int = TEXT_WIDTH) -> str:
    """The text results table of ``rows`` alone (``osmosis-apply --wait`` prints it for the
    runs it downloaded: the same table as the plan's)."""
    return "\n".join(text_results(tuple(rows), width)) + "\n" if rows else ""


def _result_run(row: ResultRow, *, with_id: bool = True) -> str:
    label = run_label(row.run_name, row.run_id) if with_id else e(row.run_name or row.run_id or "")
    if row.stage == "smoke":
        label += " (smoke)"
    elif row.stage == "retried":
        label += retry_label(row.retry_runs, row.retries_not_counted)
    return f"{label} (partial: {row.status})" if RunStatus.of(row.status).is_unsuccessful else label


def retry_label(counted: Sequence[str], not_counted: Sequence[str]) -> str:
    """`` (with retry run happy-eagle)``: the numbers count a retry run's attempts in place
    of errored ones; `` (retry run calm-yak not counted yet)``: they do not (yet)."""
    parts = []
    if counted:
        parts.append(f"with retry {'run' if len(counted) == 1 else 'runs'} {', '.join(counted)}")
    if not_counted:
        runs = ", ".join(not_counted)
        parts.append(f"retry {'run' if len(not_counted) == 1 else 'runs'} {runs} not counted yet")
    return f" ({e('; '.join(parts))})" if parts else ""


def _unsuccessful_notes(rows: Sequence[ResultRow]) -> list[str]:
    """A line per run that ended failed or stopped, with the command that re-runs it."""
    seen: dict[str, str] = {}
    for row in rows:
        if RunStatus.of(row.status).is_unsuccessful and row.address not in seen:
            seen[row.address] = f"{e(row.address)}: the run ended {row.status}; " + (
                RERUN_HINT.format(address=e(row.address))
            )
    return list(seen.values())


def md_results(rows: tuple[ResultRow, ...], room: int) -> tuple[str, int]:
    """The results table within ``room`` characters, and how many rows did not fit."""
    opening = (
        f"**Results** of {count_of(_result_runs(rows), 'ended run')} "
        "(pass@1 with its 95% confidence interval and the errored attempts, which count as "
        "not passed; change against the previous run of the same address):\n\n"
        f"| address | run | agent | {numbers.HEADLINE} | pass@k | cost/task | cost/attempt "
        "| tokens/task | tokens/attempt | vs previous | vs leaderboard |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n"
    )
    notes = _unavailable_notes(rows)
    closing = (
        "\n" + "".join(f"_Note: {md_cell(note)}._\n" for note in notes) + ("\n" if notes else "")
    )
    body = ""
    shown = 0
    for row in rows:
        line = (
            f"| {md_cell(md_code(row.address))} | {md_cell(md_plain(_result_run(row)))} | "
            f"{md_cell(md_plain(_agent_label(row.agent)))} | "
            + " | ".join(_number_cells(row.agent))
            + f" | {md_cell(_versus_previous(row))} | {md_cell(_versus_leaderboard(row))} |\n"
        )
        if len(opening) + len(body) + len(line) + len(closing) > room:
            break
        body += line
        shown += 1
    if not shown:
        return "", len(rows)
    failures = "".join(f"- {md_cell(note)}\n" for note in _unsuccessful_notes(rows[:shown]))
    if failures and len(opening) + len(body) + len(failures) + 1 + len(closing) <= room:
        closing = "\n" + failures + closing
    return opening + body + closing, len(rows) - shown


def render_results_markdown(rows: Sequence[ResultRow], max_chars: int = 60000) -> str:
    """The markdown results table of ``rows`` alone (``osmosis-ci announce`` posts it on the
    pull request that requested the run); empty when no row fits."""
    text, _left = md_results(tuple(rows), max_chars)
    return text


def result_to_dict(row: ResultRow) -> dict[str, Any]:
    now, before = row.agent.pass_at_1, row.previous.pass_at_1 if row.previous else None
    return {
        "address": row.address,
        "run_id": row.run_id,
        "run_name": row.run_name,
        "status": row.status,
        "agent": row.agent.model_dump(),
        "numbers": numbers.numbers_to_dict(numbers.summary_numbers(row.agent)),
        "previous": row.previous.model_dump() if row.previous else None,
        "previous_run_id": row.previous_run_id,
        "previous_run_name": row.previous_run_name,
        "leaderboard": row.leaderboard.model_dump() if row.leaderboard else None,
        "unavailable_tasks": row.unavailable_tasks,
        "unavailable_reason": row.unavailable_reason,
        "stage": row.stage,
        "retry_runs": list(row.retry_runs),
        "retries_not_counted": list(row.retries_not_counted),
        "delta_pass_at_1": round(now - before, 6)
        if now is not None and before is not None
        else None,
    }
