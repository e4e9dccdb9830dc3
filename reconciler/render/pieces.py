"""What the text, markdown and refresh renders share: the words for actions, reasons and
drift, the ANSI colours, the escaping of names from outside, and the lines about runs and
files outside the plan.
"""

from __future__ import annotations

from reconciler.escaping import escape_text
from reconciler.model import (
    Action,
    DriftKind,
    Plan,
    PlanItem,
    Reason,
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
    Action.UNKNOWN: "unknown outcome: a submit got no clear answer; not sent again yet",
    Action.RETRY: "retry: a new run of only the attempts that errored",
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
    Reason.SMOKE_PASSED: "its smoke run ended well",
    Reason.SMOKE_FAILED: "its smoke run did not end well",
    Reason.OUTCOME_UNKNOWN: "a submit's outcome is unknown (no matching run listed yet)",
    Reason.TWIN_ACTIVE: "an identical run is active that this repository has no evidence for",
    Reason.RUN_MISSING_UNDECIDED: "recorded run not listed; it may still be running",
    Reason.SMOKE_NOT_POSSIBLE: "its smoke stage cannot be made",
    Reason.RETRY_ERRORED: "retry of the errored attempts requested (--retry-errored or an "
    "Osmosis-Retry-Errored trailer)",
    Reason.RETRY_NOT_READY: "retry requested, but the run's errored attempts cannot be read yet",
}

DRIFT_TEXT = {
    DriftKind.RUN_MISSING: "run missing",
    DriftKind.STOPPED_OUTSIDE: "stopped on the Platform",
    DriftKind.FAILED_OUTSIDE: "failed on the Platform",
    DriftKind.FILES_CHANGED: "files changed on disk",
    DriftKind.POSSIBLE_DUPLICATE: "possible duplicate payment",
}

ANSI_CODES = {
    Action.SUBMIT: "\x1b[32m",
    Action.REPLACE: "\x1b[33m",
    Action.STOP: "\x1b[31m",
    Action.FORGET: "\x1b[2m",
    Action.DOWNLOAD: "\x1b[36m",
    Action.ADOPT: "\x1b[36m",
    Action.MOVE: "\x1b[35m",
    Action.BLOCKED: "\x1b[1;31m",
    Action.UNKNOWN: "\x1b[1;33m",
    Action.RETRY: "\x1b[32m",
}
RESET = "\x1b[0m"
BOLD = "\x1b[1m"
YELLOW = "\x1b[33m"
RED = "\x1b[1;31m"


e = escape_text


def reason_text(item: PlanItem) -> str:
    """The ``# ...`` comment of an item, in words (names escaped)."""
    text = REASON_TEXT[item.reason]
    if item.action in (Action.MOVE, Action.ADOPT) and item.from_address:
        return f"{text}: {e(item.from_address)} -> {e(item.address)}"
    blocked = item.blocked
    if blocked is not None and blocked.intended_action is not None:
        intended = blocked.intended_action.value
        why = REASON_TEXT[blocked.intended_reason] if blocked.intended_reason else ""
        return f"blocked: would {intended} ({why}); {text}" if why else f"blocked: {text}"
    if item.action is Action.BLOCKED:
        return f"blocked: {text}"
    return text


def run_label(name: str | None, run_id: str | None) -> str:
    if name and run_id and name != run_id:
        return f"{e(name)} ({e(run_id)})"
    return e(name or run_id or "")


def plan_header(plan: Plan) -> str:
    serial = f" · lockfile serial {plan.serial}" if plan.serial is not None else ""
    head = f" · HEAD {plan.head[:7]}" if plan.head else ""
    return (
        f"Osmosis plan · workspace {e(plan.workspace)} · platform {e(plan.platform)}{serial}{head}"
    )


def present_actions(plan: Plan) -> list[Action]:
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
        f"{n:,} other {runs} in workspace {e(plan.workspace)} {verb} not managed by this "
        f"repository (not drift): {see}; bring one under management with "
        "`osmosis-import RUN`."
    )


def unmanaged_rows(plan: Plan) -> list[str]:
    rows = []
    for run in plan.unmanaged[:UNMANAGED_LIST_MAX]:
        created = run.created_at.strftime("%Y-%m-%d %H:%M") if run.created_at else "–"
        by = f" by {e(run.creator_name)}" if run.creator_name else ""
        rows.append(
            f"{run_label(run.name, run.id) or e(run.id)} · {e(run.benchmark_name or '–')} · "
            f"{e(run.status or 'unknown status')} · created {created}{by}"
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


def other_pending_note(plan: Plan) -> str:
    n = plan.other_pending
    what = "action is" if n == 1 else "actions are"
    return f"{n:,} other pending {what} outside --target and left out of this plan."


def count_of(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_plain(escaped: str) -> str:
    """Markdown text already escaped by ``escape_text``: a ``<`` cannot open HTML."""
    return escaped.replace("<", "&lt;")


def md_text(text: str) -> str:
    """Plain markdown text from outside (escaped here)."""
    return md_plain(e(text))


def md_code(text: str) -> str:
    """A name from outside as an inline code span (see ``code_span``)."""
    return code_span(e(text))


def code_span(text: str) -> str:
    """Escaped text as an inline code span that no backtick in it can close early."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def html(text: str) -> str:
    return e(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fence(body: str) -> tuple[str, str]:
    longest = 0
    run = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return ticks + "text", ticks


def marker_workspace(workspace: str) -> str:
    # Inside the hidden HTML comment: a "-->" in the name must not close it.
    return e(workspace).replace("-->", "-- >")


def group_of(address: str) -> str:
    return address.split("/", 1)[0] if "/" in address else "(top level)"


def short_fingerprint(fingerprint: str) -> str:
    return fingerprint[: len("sha256:") + 12]


def truncation_note(left: list[str], max_chars: int) -> str:
    return (
        f"\n_Truncated: {' and '.join(left)} did not fit in this comment (capped below "
        f"{max_chars:,} characters). Run `osmosis-plan` locally or see the CI log for the "
        "full plan._\n"
    )


def cap_text(text: str, max_chars: int) -> str:
    # Last resort for absurd inputs (a single enormous line): never exceed the cap.
    if len(text) < max_chars:
        return text
    note = "\n\n_Truncated._\n"
    return text[: max(0, max_chars - len(note) - 1)] + note


def shorten_middle(text: str, width: int) -> str:
    """``text`` at most ``width`` characters: its start and end, joined by ``…``."""
    if len(text) <= width:
        return text
    keep = width - 1
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]
