"""The renders of a refresh (``--refresh-only``): what the lockfile would record, or
recorded, and the drift that stays.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.model import (
    Plan,
    RecordedChange,
)
from reconciler.render.pieces import (
    DRIFT_TEXT,
    MARKDOWN_MARKER,
    RESET,
    YELLOW,
    cap_text,
    code_span,
    count_of,
    e,
    marker_workspace,
    md_cell,
    md_code,
    md_text,
    plan_header,
    run_label,
)
from reconciler.render.text import text_drift


def _change_line(change: RecordedChange) -> str:
    run = run_label(change.run_name, change.run_id)
    where = f"{e(change.address)} {run}" if run else e(change.address)
    before, after = e(change.before or "none"), e(change.after or "none")
    return f"{where}: {e(change.field)} {before} -> {after}"


def _refresh_closing(changes: Sequence[RecordedChange], recorded: bool, pending: int) -> list[str]:
    out: list[str] = []
    if recorded:
        out.append(
            f"Refresh complete: {count_of(len(changes), 'change')} recorded."
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
        return f"{code}{text}{RESET}" if color else text

    out = [plan_header(plan).replace("Osmosis plan", "Osmosis refresh", 1), ""]
    if changes:
        verb = "Recorded" if recorded else "Refresh would record"
        out += [f"{verb} {count_of(len(changes), 'change')} in {state_path}:", ""]
        out.extend(f"  {paint(YELLOW, '~')} {_change_line(c)}" for c in changes)
        out.append("")
    out += text_drift(plan, paint)
    if plan.warnings:
        out.append(paint(YELLOW, "Warnings:"))
        out.extend(f"  - {e(warning)}" for warning in plan.warnings)
        out.append("")
    out += _refresh_closing(changes, recorded, pending)
    return "\n".join(out) + "\n"


def render_refresh_markdown(
    plan: Plan, changes: Sequence[RecordedChange], *, recorded: bool, pending: int
) -> str:
    """The refresh for a comment: the changes as a list, the drift as a table."""
    marker = f"{MARKDOWN_MARKER} workspace={marker_workspace(plan.workspace)} -->"
    text = f"{marker}\n### Osmosis refresh for {md_code(plan.workspace)}\n\n"
    if changes:
        verb = "Recorded" if recorded else "Would record"
        text += f"**{verb} {count_of(len(changes), 'change')}:**\n\n"
        text += "".join(f"- {md_cell(code_span(_change_line(c)))}\n" for c in changes) + "\n"
    if plan.drift:
        text += "| drift | address | message |\n|---|---|---|\n"
        for drift in plan.drift:
            text += (
                f"| {DRIFT_TEXT[drift.kind]} | {md_cell(md_text(drift.address or '(workspace)'))} | "
                f"{md_cell(md_text(drift.message))} |\n"
            )
        text += "\n"
    text += "\n".join(_refresh_closing(changes, recorded, pending)) + "\n"
    return cap_text(text, 65000)
