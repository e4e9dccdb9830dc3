"""The markdown render: a sticky pull-request comment, capped below ``max_chars``."""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.model import (
    Action,
    Plan,
    PlanItem,
)
from reconciler.render.generators import generator_grids, generator_result_grids
from reconciler.render.pieces import (
    DRIFT_TEXT,
    MARKDOWN_MARKER,
    NO_CHANGES,
    cap_text,
    count_of,
    e,
    fence,
    group_of,
    html,
    ignored_line,
    marker_workspace,
    md_cell,
    md_code,
    md_plain,
    md_text,
    other_pending_note,
    reason_text,
    short_fingerprint,
    truncation_note,
    unmanaged_line,
    unmanaged_rows,
)
from reconciler.render.tables import md_results
from reconciler.render.text import STANDING_NOTE, item_body, smoke_suffix, summary_line


def render_markdown(plan: Plan, *, max_chars: int = 65000) -> str:
    """A PR comment: hidden marker, summary table first, details folded, under ``max_chars``.

    Sections are added whole (an item, a drift row) while they fit; whatever does not fit is
    counted in a closing note, so the comment never breaks its markup.
    """
    marker = f"{MARKDOWN_MARKER} workspace={marker_workspace(plan.workspace)} -->"
    text = f"{marker}\n### Osmosis plan for {md_code(plan.workspace)}\n\n"
    if not plan.items and not plan.drift and not plan.errors:
        return cap_text(_md_no_changes(plan, text, max_chars), max_chars)
    text += _md_summary(plan)
    comment = _Comment(text, max_chars - 400)  # room for the truncation note
    grids = generator_grids(plan)
    if grids and len(comment.text) + len(grids) <= comment.budget // 2:
        comment.text += grids
    _md_blocked(plan, comment)
    _md_notes(plan, comment)
    untold: list[str] = []
    left_results = _md_results_section(plan, comment)
    left_items = _md_item_groups(plan, comment)
    left_drift = _md_drift(plan, comment)
    if left_items:
        untold.append(count_of(left_items, "action"))
    if left_drift:
        untold.append(count_of(left_drift, "drift item"))
    if left_results:
        untold.append(count_of(left_results, "result row"))
    if untold:
        comment.text += truncation_note(untold, max_chars)
    return cap_text(comment.text, max_chars)


@dataclass
class _Comment:
    """The comment so far, and how long it may grow before the truncation note."""

    text: str
    budget: int

    def fits(self, *parts: str) -> bool:
        return len(self.text) + sum(len(p) for p in parts) <= self.budget


def _md_no_changes(plan: Plan, text: str, max_chars: int) -> str:
    """The comment of a plan with nothing to do: notes, unmanaged runs and results."""
    text += NO_CHANGES + "\n"
    if plan.warnings:
        text += "\n**Warnings:**\n" + "".join(f"- {md_text(w)}\n" for w in plan.warnings)
    if plan.other_pending:
        text += "\n" + other_pending_note(plan) + "\n"
    text += _md_unmanaged(plan, max_chars - 400 - len(text))
    if ignored_line(plan):
        text += "\n" + md_cell(ignored_line(plan) or "") + "\n"
    if plan.results:
        section, left = md_results(plan.results, max_chars - 400 - len(text) - 1)
        text += "\n" + section
        result_grids = generator_result_grids(plan)
        if section and result_grids and len(text) + len(result_grids) <= max_chars - 400:
            text += result_grids
        if left:
            text += truncation_note([count_of(left, "result row")], max_chars)
    return text


def _md_summary(plan: Plan) -> str:
    """The counts table, the summary line and the errors that stop an apply."""
    s = plan.summary
    columns = [
        ("submit", s.submit),
        ("replace", s.replace),
        ("stop", s.stop),
        ("download", s.download),
        ("forget", s.forget),
    ]
    columns += [
        (name, n)
        for name, n in (
            ("retry", s.retry),
            ("adopt", s.adopt),
            ("move", s.move),
            ("blocked", s.blocked),
        )
        if n
    ]
    columns += [("attempts", s.attempts), ("drift", s.drift)]
    text = "| " + " | ".join(name for name, _ in columns) + " |\n"
    text += "|" + "---:|" * len(columns) + "\n"
    text += "| " + " | ".join(f"{n:,}" for _, n in columns) + " |\n\n"
    if plan.items:
        text += f"**{summary_line(plan)}**\n\n"
    else:
        text += "No changes to benchmark runs; the drift found is listed below.\n\n"
    if plan.errors:
        text += "**The plan cannot be applied:**\n"
        text += "".join(f"- :x: {md_text(error)}\n" for error in plan.errors) + "\n"
    return text


def _md_blocked(plan: Plan, comment: _Comment) -> None:
    """The blocked items first, each with its details, as many as fit."""
    blocked = [item for item in plan.items if item.action is Action.BLOCKED]
    if not blocked:
        return
    heading = "**Blocked** (fix these, then plan again):\n\n"
    body = ""
    for item in blocked:
        entry = f"- {md_code(item.address)}: {md_plain(reason_text(item))}\n"
        if item.standing:
            entry += f"  - standing: {md_text(STANDING_NOTE)}\n"
        entry += "".join(f"  - {md_text(detail)}\n" for detail in item.details)
        if comment.fits(heading, body, entry, "\n"):
            body += entry
    if body:
        comment.text += heading + body + "\n"


def _md_notes(plan: Plan, comment: _Comment) -> None:
    """Warnings, other pending plans, ignored files and unmanaged runs, each when it fits."""
    if plan.warnings:
        section = "**Warnings:**\n" + "".join(f"- {md_text(w)}\n" for w in plan.warnings) + "\n"
        if comment.fits(section):
            comment.text += section
    if plan.other_pending:
        note = other_pending_note(plan) + "\n\n"
        if comment.fits(note):
            comment.text += note
    ignored = ignored_line(plan)
    if ignored and comment.fits(ignored, "\n\n"):
        comment.text += md_cell(ignored) + "\n\n"
    unmanaged = _md_unmanaged(plan, comment.budget - len(comment.text))
    if unmanaged:
        comment.text += unmanaged + "\n"


def _md_results_section(plan: Plan, comment: _Comment) -> int:
    """The results table (and its generator grids): the result rows left out."""
    if not plan.results:
        return 0
    # Actions matter more than scores: with details or drift to show, the results table
    # may take at most half of the room that is left.
    room = comment.budget - len(comment.text)
    if plan.items or plan.drift:
        room //= 2
    section, left = md_results(plan.results, room)
    comment.text += section
    result_grids = generator_result_grids(plan)
    if section and result_grids and comment.fits(result_grids):
        comment.text += result_grids
    return left


def _md_item_groups(plan: Plan, comment: _Comment) -> int:
    """One folded block per group of addresses: the items left out."""
    left = 0
    groups: dict[str, list[PlanItem]] = {}
    for item in plan.items:
        groups.setdefault(group_of(item.address), []).append(item)
    for group in sorted(groups):
        items = groups[group]
        counts = {a: sum(1 for it in items if it.action is a) for a in Action}
        label = ", ".join(f"{counts[a]} {a.value}" for a in Action if counts[a])
        rendered = [
            "\n".join(
                [f"{it.action.symbol} {e(it.address)}{smoke_suffix(it)}"]
                + [f"    {x}" for x in item_body(it)]
            )
            for it in items
        ]
        start, end = fence("\n".join(rendered))
        opening = f"<details><summary><b>{html(group)}</b>: {label}</summary>\n\n{start}\n"
        closing = f"{end}\n\n</details>\n\n"
        shown: list[str] = []
        for piece in rendered:
            if not comment.fits(opening, "\n\n".join(shown + [piece]), closing, " " * 80):
                break
            shown.append(piece)
        left += len(items) - len(shown)
        if shown:
            more = len(items) - len(shown)
            tail = f"\n\n... {more:,} more not shown" if more else ""
            comment.text += opening + "\n\n".join(shown) + tail + "\n" + closing
    return left


def _md_drift(plan: Plan, comment: _Comment) -> int:
    """The drift table, folded: the drift items left out."""
    if not plan.drift:
        return 0
    opening = (
        f"<details><summary><b>Drift</b>: {count_of(len(plan.drift), 'difference')} "
        "between the lockfile and reality</summary>\n\n"
        "| kind | address | run | message | fingerprint |\n|---|---|---|---|---|\n"
    )
    closing = "\n</details>\n"
    rows = ""
    left = 0
    for drift in plan.drift:
        row = (
            f"| {DRIFT_TEXT[drift.kind]} | {md_cell(md_text(drift.address or '(workspace)'))} | "
            f"{md_cell(md_text(drift.run_id or ''))} | {md_cell(md_text(drift.message))} | "
            f"`{short_fingerprint(drift.fingerprint)}` |\n"
        )
        if not comment.fits(opening, rows, row, closing):
            left = len(plan.drift) - rows.count("\n")
            break
        rows += row
    if rows:
        comment.text += opening + rows + closing
    return left


def _md_unmanaged(plan: Plan, room: int) -> str:
    line = unmanaged_line(plan)
    if not line or len(line) + 2 > room:
        return ""
    text = "\n" + line + "\n"
    if plan.unmanaged:
        body = "".join(f"- {md_cell(md_plain(row))}\n" for row in unmanaged_rows(plan))
        folded = f"\n<details><summary>Unmanaged runs</summary>\n\n{body}\n</details>\n"
        if len(text) + len(folded) <= room:
            text += folded
    return text
