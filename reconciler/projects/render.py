"""What a run at the root prints: one JSON document for all projects, a text table, the
GitHub Actions matrix (``--emit-matrix``) and one pull-request comment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.escaping import escape_text
from reconciler.projects.discover import Project
from reconciler.projects.run import Outcome
from reconciler.projects.select import Selected

MATRIX_MAX = 256
"""GitHub Actions runs at most 256 jobs from one matrix: above it, ``chunks``."""
COMMENT_MAX = 65_536
"""GitHub's limit of a comment's body, in characters."""
_ACTIONS = (
    "submit", "replace", "stop", "forget", "download", "retry", "adopt", "move", "blocked",
)  # fmt: skip


def actions_of(document: Mapping[str, Any]) -> dict[str, int]:
    """A project's action counts, from its plan document (or its apply's plan)."""
    summary = document.get("summary")
    plan = document.get("plan")
    if document.get("type") == "apply":
        summary = plan.get("summary") if isinstance(plan, dict) else None
    if not isinstance(summary, dict):
        return {}
    return {a: int(summary[a]) for a in _ACTIONS if isinstance(summary.get(a), int)}


def projects_body(outcomes: Sequence[Outcome], *, status: str) -> dict[str, Any]:
    """The document's body (``type`` ``projects``): one entry per selected project."""
    entries = []
    for outcome in outcomes:
        project = outcome.selected.project
        document = outcome.document
        found = document.get("summary")
        summary: dict[str, Any] = found if isinstance(found, dict) else {}
        entry: dict[str, Any] = {
            "id": project.id,
            "dir": project.dir,
            "reason": outcome.selected.reason,
            "status": outcome.status,
            "exit_code": outcome.exit_code,
            "actions": actions_of(document),
            "attempts": summary.get("attempts") if document.get("type") == "plan" else None,
            "cost_usd_high": summary.get("cost_usd_high")
            if document.get("type") == "plan"
            else None,
            "workspace": document.get("plan", {}).get("workspace")
            if isinstance(document.get("plan"), dict)
            else document.get("workspace"),
            "errors": [str(e) for e in document.get("errors", [])][:20],
            "skipped_because": outcome.skipped_because,
        }
        if document.get("type") == "apply" and isinstance(summary, dict):
            entry["applied"] = {
                k: summary[k] for k in ("outcome", "succeeded", "failed") if k in summary
            }
        entries.append(entry)
    return {
        "status": status,
        "failed": [o.selected.project.id for o in outcomes if o.status == "failed"],
        "skipped": [o.selected.project.id for o in outcomes if o.status == "skipped"],
        "projects": entries,
    }


def status_of(outcomes: Sequence[Outcome]) -> str:
    """``done`` (every project), ``partial`` (some), ``failed`` (none) or ``empty``."""
    if not outcomes:
        return "empty"
    done = sum(1 for o in outcomes if o.status == "done")
    return "done" if done == len(outcomes) else "partial" if done else "failed"


def text_table(outcomes: Sequence[Outcome], *, command: str, status: str) -> str:
    """The people's view: a line per project, then the ending."""
    if not outcomes:
        return "No project selected.\n"
    width = max(len(o.selected.project.id) for o in outcomes)
    lines = []
    for outcome in outcomes:
        project = outcome.selected.project
        counts = actions_of(outcome.document)
        changes = ", ".join(f"{n} {a}" for a, n in counts.items() if n) or "no changes"
        state = outcome.status
        if outcome.status == "skipped":
            state = f"skipped: {outcome.skipped_because}"
        elif outcome.status == "failed":
            state = f"failed (exit {outcome.exit_code})"
        lines.append(
            f"{escape_text(project.id):<{width}}  {state:<10}  {changes}  "
            f"[{escape_text(outcome.selected.reason)}]"
        )
        if outcome.status == "failed":
            for error in outcome.document.get("errors", [])[:3]:
                lines.append(f"{'':<{width}}    {escape_text(str(error))}")
    failed = [o.selected.project.id for o in outcomes if o.status == "failed"]
    skipped = [o.selected.project.id for o in outcomes if o.status == "skipped"]
    verb = "planned" if command == "plan" else "applied"
    done = sum(1 for o in outcomes if o.status == "done")
    tail = f"{done} of {len(outcomes)} project(s) {verb}"
    if status == "partial" or failed or skipped:
        tail += f"; {status}: failed {', '.join(failed) or 'none'}"
        tail += f"; skipped {', '.join(skipped) or 'none'}"
        if command == "apply":
            tail += " (re-run them with osmosis-apply --failed)"
    return "\n".join(lines) + f"\n\n{tail}.\n"


def matrix(selected: Sequence[Selected]) -> dict[str, Any]:
    """``{"include": [{"project", "dir", "workspace", "reason"}]}``; above ``MATRIX_MAX``
    projects, ``{"chunks": [{"include": [...]}, ...]}`` (one matrix job per chunk)."""
    rows = [_row(s.project, s.reason) for s in selected]
    if len(rows) <= MATRIX_MAX:
        return {"include": rows}
    return {
        "chunks": [{"include": rows[i : i + MATRIX_MAX]} for i in range(0, len(rows), MATRIX_MAX)]
    }


def _row(project: Project, reason: str) -> dict[str, str]:
    return {
        "project": project.id,
        "dir": project.dir,
        "workspace": project.workspace or "",
        "reason": reason,
    }


def comment(outcomes: Sequence[Outcome], *, command: str, limit: int = COMMENT_MAX) -> str:
    """One pull-request comment for every project: a table (changes, attempts, cost,
    status), then each project's details collapsed; details are dropped, last first, to
    stay under ``limit`` characters (the full plans are the workflow's artifacts)."""
    head = [
        f"### osmosis-{command}: {len(outcomes)} project(s)",
        "",
        "| Project | Status | Changes | Attempts | Cost (high) | Why |",
        "|---|---|---|---|---|---|",
    ]
    for outcome in outcomes:
        counts = actions_of(outcome.document)
        changes = ", ".join(f"{n} {a}" for a, n in counts.items() if n) or "none"
        summary = outcome.document.get("summary")
        summary = summary if isinstance(summary, dict) else {}
        cost = summary.get("cost_usd_high")
        head.append(
            f"| `{_cell(outcome.selected.project.id)}` | {outcome.status} | {changes} | "
            f"{summary.get('attempts', '')} | {'' if cost is None else f'${cost:,.2f}'} | "
            f"{_cell(outcome.selected.reason)} |"
        )
    text = "\n".join(head) + "\n"
    details = []
    for outcome in outcomes:
        errors = "\n".join(f"- {_cell(str(e))}" for e in outcome.document.get("errors", []))
        body = errors or "No errors."
        details.append(
            f"\n<details><summary>{_cell(outcome.selected.project.id)}</summary>\n\n"
            f"{body}\n\n</details>\n"
        )
    note = "\n_Some details were left out to fit; the full plans are the workflow's artifacts._\n"
    for index in range(len(details), -1, -1):
        candidate = text + "".join(details[:index]) + (note if index < len(details) else "")
        if len(candidate) <= limit:
            return candidate
    return text[: limit - len(note)] + note


def _cell(text: str) -> str:
    return escape_text(text).replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")
