"""The text render: Terraform-like terminal output, ANSI colours only when asked."""

from __future__ import annotations

from collections.abc import Callable

from reconciler.model import (
    Action,
    Plan,
    PlanItem,
    Reason,
    SmokeStage,
)
from reconciler.render.generators import generator_lines, source_line
from reconciler.render.pieces import (
    ACTION_VERBS,
    ANSI_CODES,
    BOLD,
    DRIFT_TEXT,
    NO_CHANGES,
    RED,
    RESET,
    YELLOW,
    count_of,
    e,
    ignored_line,
    other_pending_note,
    plan_header,
    present_actions,
    reason_text,
    run_label,
    short_fingerprint,
    unmanaged_line,
    unmanaged_rows,
)
from reconciler.render.tables import money_cell, text_results


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
    if s.retry:
        parts.append(f"{s.retry:,} to retry")
    if s.adopt:
        parts.append(f"{s.adopt:,} to adopt")
    if s.move:
        parts.append(f"{s.move:,} to move")
    if s.blocked:
        standing = f" ({s.standing:,} standing)" if s.standing else ""
        parts.append(f"{s.blocked:,} blocked{standing}")
    unknown = sum(1 for item in plan.items if item.action is Action.UNKNOWN)
    if unknown:
        parts.append(f"{unknown:,} unknown outcome{'' if unknown == 1 else 's'}")
    word = "attempt" if s.attempts == 1 else "attempts"
    cost = ""
    if s.cost_usd_high is not None:
        cost = f", est. {_usd_range(s.cost_usd_low, s.cost_usd_high)}"
        if s.unestimated:
            cost += f" (+{s.unestimated:,} without an estimate)"
    elif s.unestimated:
        cost = ", dollars unknown"
    return f"Plan: {', '.join(parts)}; {s.attempts:,} {word}{cost}{deferred_text(plan)}."


def deferred_text(plan: Plan) -> str:
    """``; then 4 × 462 attempts after their smoke runs``: what this apply does not pay yet."""
    s = plan.summary
    if not s.deferred:
        return ""
    if s.deferred_each is not None and s.deferred > 1:
        return f"; then {s.deferred:,} × {s.deferred_each:,} attempts after their smoke runs"
    if s.deferred == 1:
        return f"; then {s.deferred_attempts:,} attempts after its smoke run"
    return (
        f"; then {s.deferred_attempts:,} attempts ({s.deferred:,} full runs) after their smoke runs"
    )


STANDING_NOTE = (
    "this block is recorded in the lockfile since an earlier apply; it is listed until it is "
    "fixed, and does not fail the plan"
)
"""Said under a standing blocked item (``PlanItem.standing``)."""

UNKNOWN_COST = "dollars unknown (no recorded run of its model)"
"""A paid item without an estimate: the only basis of one is what recorded runs of the same
model cost (``plan.cost``), and there is none; no figure is better than a made-up one."""


def _usd_range(low: float | None, high: float) -> str:
    low = high if low is None else low
    if round(low, 2) == round(high, 2):
        return money_cell(high)
    return f"{money_cell(low)}–{money_cell(high)}"


def smoke_suffix(item: PlanItem) -> str:
    """`` (smoke first: 1 attempt, then 7,500)`` after a staged item's address."""
    smoke = item.smoke
    if smoke is None or item.action is Action.ADOPT:
        return ""
    if smoke.stage == SmokeStage.SMOKE and item.action is not Action.BLOCKED:
        return (
            f" (smoke first: {count_of(smoke.smoke_attempts, 'attempt')}, "
            f"then {smoke.full_attempts:,})"
        )
    if item.reason is Reason.SMOKE_NOT_POSSIBLE:
        return f" (blocked: its smoke run cannot be made; the full run is {smoke.full_attempts:,})"
    if smoke.stage == SmokeStage.SMOKE and item.reason is not Reason.SMOKE_FAILED:
        # Blocked before its smoke run was paid (a twin, a refusal): both sizes, as planned.
        return (
            f" (smoke first: {count_of(smoke.smoke_attempts, 'attempt')}, "
            f"then {smoke.full_attempts:,}; blocked)"
        )
    if smoke.stage == SmokeStage.FULL:
        if smoke.smoke_run_id is None:
            return " (full run: its lost submit sent again)"
        return " (full run: the smoke run ended well)"
    if smoke.stage == SmokeStage.SKIPPED:
        return " (smoke stage skipped on request)"
    return " (full run blocked: the smoke run did not end well)"


def item_body(item: PlanItem) -> list[str]:
    """The indented lines under an item's symbol line (without indentation)."""
    lines = [f"# {reason_text(item)}"]
    if item.standing:
        lines.append(f"standing: {STANDING_NOTE}")
    source = source_line(item)
    if source:
        lines.append(source)
    run = run_label(item.run_name, item.run_id)
    if run:
        label = "old run" if item.action is Action.REPLACE else "run"
        lines.append(f"{label}: {run}")
    if item.action in (Action.SUBMIT, Action.REPLACE, Action.BLOCKED, Action.RETRY) and (
        item.task_count is not None or item.attempts
    ):
        tasks = f"{count_of(item.task_count, 'task')} -> " if item.task_count is not None else ""
        estimate = f", {UNKNOWN_COST}"
        if item.cost is not None:
            estimate = f", est. {_usd_range(item.cost.usd_low, item.cost.usd_high)}"
        lines.append(f"cost: {tasks}{count_of(item.attempts, 'attempt')}{estimate}")
        if item.cost is not None and item.cost.basis:
            lines.append(f"  (estimate: {item.cost.basis})")
    benchmark = _benchmark_line(item)
    if benchmark:
        lines.append(benchmark)
    if item.download_types:
        lines.append(f"types: {', '.join(item.download_types)}")
    if item.requested_by:
        subject = f' "{e(item.requested_subject)}"' if item.requested_subject else ""
        lines.append(f"requested by {item.requested_by[:7]}{subject}")
    if item.changes:
        lines.append("changes:")
        lines.extend(f"  {e(change)}" for change in item.changes)
    lines.extend(f"* {e(detail)}" for detail in item.details)
    lines.extend(f"warning: {e(warning)}" for warning in item.warnings)
    return lines


def _benchmark_line(item: PlanItem) -> str | None:
    """``benchmark: source https://... · pass threshold 0.5`` (the catalog's seed data)."""
    facts = item.benchmark
    if facts is None:
        return None
    parts = []
    if facts.source_url:
        parts.append(f"source {facts.source_url}")
    if facts.pass_threshold is not None:
        parts.append(f"pass threshold {facts.pass_threshold:g}")
    return "benchmark: " + " · ".join(parts) if parts else None


# --------------------------------------------------------------------------- text


def render_text(
    plan: Plan, *, color: bool = False, results: bool | None = None, quiet: bool = False
) -> str:
    """Terraform-like text: header, legend of the symbols present, items, drift, summary.

    The answer leads: a plan with nothing to do says "No changes." first, alone; the
    results table of ended runs follows only when asked (``results``; by default only when
    something is planned, as the items' context). ``quiet`` keeps only what needs a person:
    the items, drift, warnings, errors and the summary line (nothing at all for a plan with
    nothing to do)."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if color else text

    changes = bool(plan.items or plan.drift)
    show_results = (changes if results is None else results) and not quiet
    out: list[str] = []
    if not changes and not plan.errors:
        if quiet and not plan.warnings:
            return ""
        out += [NO_CHANGES, ""]
    if changes and not quiet:
        out += [plan_header(plan), ""]
    if not quiet:
        out += generator_lines(plan)
    if plan.items:
        if not quiet:
            out.append("Actions are shown with these symbols:")
            for action in present_actions(plan):
                out.append(
                    f"  {paint(ANSI_CODES[action], action.symbol.ljust(3))} {ACTION_VERBS[action]}"
                )
            out.append("")
        out += ["Osmosis would:", ""]
        for item in plan.items:
            out.append(
                f"  {paint(ANSI_CODES[item.action], item.action.symbol)} {e(item.address)}"
                + smoke_suffix(item)
            )
            out.extend(f"      {line}" for line in item_body(item))
            out.append("")
    out += text_drift(plan, paint)
    if plan.results and show_results:
        out += text_results(plan.results)
    if plan.warnings:
        out.append(paint(YELLOW, "Warnings:"))
        out.extend(f"  - {e(warning)}" for warning in plan.warnings)
        out.append("")
    if plan.other_pending and not quiet:
        out += [other_pending_note(plan), ""]
    unmanaged = unmanaged_line(plan) if not quiet else None
    if unmanaged:
        out += [unmanaged, ""]
        if plan.unmanaged:
            out += [f"  {row}" for row in unmanaged_rows(plan)] + [""]
    ignored = ignored_line(plan) if not quiet else None
    if ignored:
        out += [ignored, ""]
    for error in plan.errors:
        out.append(f"{paint(RED, 'Error:')} {e(error)}")
    if plan.errors:
        out.append("")
    if plan.items:
        out.append(paint(BOLD, summary_line(plan)))
    elif plan.drift:
        out.append(
            f"No changes to benchmark runs. {count_of(len(plan.drift), 'drift item')} listed above."
        )
    elif plan.errors:
        out.append(NO_CHANGES)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def text_drift(plan: Plan, paint: Callable[[str, str], str]) -> list[str]:
    if not plan.drift:
        return []
    out = [
        f"Drift: {count_of(len(plan.drift), 'difference')} between the lockfile and reality "
        "(reported, not acted on by itself):",
        "",
    ]
    for drift in plan.drift:
        where = e(drift.address) if drift.address else "(workspace)"
        out.append(f"  {paint(YELLOW, '~')} {where}: {DRIFT_TEXT[drift.kind]}")
        out.append(f"      {e(drift.message)}")
        out.append(f"      fingerprint {short_fingerprint(drift.fingerprint)}")
        out.append("")
    return out
