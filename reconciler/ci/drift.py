"""``osmosis-ci drift-issue``: keep one GitHub issue in step with the drift a scheduled
``osmosis-plan`` reports.

The plan JSON (``osmosis-plan --format json``, or a saved plan from ``--out``) lists
``drift: [{kind, address, run_id, message, fingerprint}]``. The issue body keeps the
fingerprints it was written for inside a hidden marker, so the next check knows which
items are new:

* drift and no open issue: open one (labelled ``osmosis-drift``);
* new fingerprints: rewrite the body and add a comment listing them (edits notify nobody);
* some items gone, none new: rewrite the body quietly;
* same fingerprints: leave the issue alone;
* no drift: comment and close the issue.

The decisions are pure functions (``read_drift``, ``known_fingerprints``,
``drift_issue_action``, ``render_issue_body``); ``sync_drift_issue`` makes the REST calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reconciler.ci.github import GitHubAPI
from reconciler.errors import UsageError

LABEL = "osmosis-drift"
LABEL_COLOR = "d93f0b"
LABEL_DESCRIPTION = "Drift found by the scheduled osmosis-plan check"
MARKER = "osmosis-reconciler:drift"
MAX_ROWS = 200
"""Drift items listed in the issue table; the rest are counted, never silently dropped."""
MAX_LISTED_FINGERPRINTS = 600
"""Above this many, the marker keeps a digest of the set instead of the set: a body must
stay under GitHub's 65,536 characters. New items are then reported as a change of the set."""

_MARKER_RE = re.compile(r"<!--\s*" + re.escape(MARKER) + r"\s+(\{.*?\})\s*-->", re.DOTALL)


@dataclass(frozen=True)
class DriftEntry:
    """One drift item from the plan JSON."""

    kind: str
    address: str | None
    run_id: str | None
    message: str
    fingerprint: str


@dataclass(frozen=True)
class Known:
    """What an issue body says it was written for: the fingerprints, or (for very large
    sets) only their digest and count."""

    fingerprints: frozenset[str] | None
    digest: str
    count: int


@dataclass(frozen=True)
class DriftDecision:
    """What to do with the drift issue.

    ``kind``: ``none`` (nothing to do), ``create``, ``update`` or ``close``. ``new`` are the
    fingerprints not in the open issue (empty when the issue only lists a digest and the set
    changed: ``notify`` is then still true); ``resolved`` are those that went away.
    """

    kind: Literal["none", "create", "update", "close"]
    new: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()
    notify: bool = False


class PlanJsonError(UsageError):
    """The plan JSON could not be read."""


def read_drift(payload: Mapping[str, Any]) -> tuple[DriftEntry, ...]:
    """The drift items of a plan JSON document, de-duplicated by fingerprint, sorted.

    Accepts the ``--format json`` document and the saved-plan wrapper ``{"plan": {...}}``.
    """
    wrapped = payload.get("plan")
    plan = wrapped if isinstance(wrapped, Mapping) else payload
    raw = plan.get("drift")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise PlanJsonError("'drift' must be a list")
    entries: dict[str, DriftEntry] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not item.get("fingerprint"):
            raise PlanJsonError(f"drift[{index}] has no fingerprint")
        entry = DriftEntry(
            kind=str(item.get("kind") or "unknown"),
            address=_opt_str(item.get("address")),
            run_id=_opt_str(item.get("run_id")),
            message=str(item.get("message") or ""),
            fingerprint=str(item["fingerprint"]),
        )
        entries.setdefault(entry.fingerprint, entry)
    return tuple(
        sorted(
            entries.values(), key=lambda e: (e.kind, e.address or "", e.run_id or "", e.fingerprint)
        )
    )


def read_standing(payload: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(address, what blocks it)`` of every standing blocked item of a plan JSON document:
    not drift, and no reason to open the issue, but listed in it (issue 34)."""
    wrapped = payload.get("plan")
    plan = wrapped if isinstance(wrapped, Mapping) else payload
    actions = plan.get("actions")
    found = []
    for action in actions if isinstance(actions, list) else ():
        if isinstance(action, Mapping) and action.get("standing") is True:
            details = action.get("details")
            first = details[0] if isinstance(details, list) and details else action.get("reason")
            found.append((str(action.get("address")), str(first)))
    return tuple(sorted(found))


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def fingerprint_digest(fingerprints: Iterable[str]) -> str:
    """Order-independent digest of a set of fingerprints."""
    joined = "\n".join(sorted(set(fingerprints)))
    return "sha256:" + hashlib.sha256(joined.encode("utf-8")).hexdigest()


def render_marker(fingerprints: Iterable[str]) -> str:
    """The hidden marker line recording ``fingerprints``."""
    listed = sorted(set(fingerprints))
    data: dict[str, Any] = {"count": len(listed), "digest": fingerprint_digest(listed)}
    if len(listed) <= MAX_LISTED_FINGERPRINTS:
        data["fingerprints"] = listed
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    # '>' and '-' escaped so no fingerprint can end the HTML comment early.
    text = text.replace(">", "\\u003e").replace("-", "\\u002d")
    return f"<!-- {MARKER} {text} -->"


def known_fingerprints(body: str | None) -> Known | None:
    """The fingerprints an issue body was written for; ``None`` if it has no valid marker."""
    match = _MARKER_RE.search(body or "")
    if not match:
        return None
    try:
        data = json.loads(match.group(1))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    listed = data.get("fingerprints")
    if isinstance(listed, list) and all(isinstance(f, str) for f in listed):
        return Known(frozenset(listed), fingerprint_digest(listed), len(set(listed)))
    digest, count = data.get("digest"), data.get("count")
    if isinstance(digest, str) and isinstance(count, int):
        return Known(None, digest, count)
    return None


def drift_issue_action(
    open_issue_body: str | None, new_fingerprints: Iterable[str]
) -> DriftDecision:
    """Decide what the drift issue needs, from the open issue's body (``None`` when no issue
    is open) and the fingerprints the latest plan reported."""
    current = frozenset(new_fingerprints)
    if open_issue_body is None:
        return (
            DriftDecision("create", new=tuple(sorted(current)), notify=True)
            if current
            else DriftDecision("none")
        )
    if not current:
        return DriftDecision("close")
    known = known_fingerprints(open_issue_body)
    if known is None:
        # An issue we cannot read (edited by hand): rewrite it and tell the watchers.
        return DriftDecision("update", new=tuple(sorted(current)), notify=True)
    if known.fingerprints is None:
        if known.digest == fingerprint_digest(current):
            return DriftDecision("none")
        return DriftDecision("update", notify=True)
    added = tuple(sorted(current - known.fingerprints))
    resolved = tuple(sorted(known.fingerprints - current))
    if added:
        return DriftDecision("update", new=added, resolved=resolved, notify=True)
    if resolved:
        return DriftDecision("update", resolved=resolved)
    return DriftDecision("none")


def issue_title(drift: Sequence[DriftEntry]) -> str:
    count = len(drift)
    noun = "item differs" if count == 1 else "items differ"
    return f"Osmosis drift: {count} {noun} from the lockfile"


def _cell(value: str | None) -> str:
    text = (value or "—").replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= 300 else text[:299] + "…"


def drift_table(drift: Sequence[DriftEntry], limit: int = MAX_ROWS) -> str:
    lines = ["| kind | address | run id | what happened |", "|---|---|---|---|"]
    for entry in drift[:limit]:
        lines.append(
            f"| `{_cell(entry.kind)}` | {_cell(entry.address)} | "
            f"{_cell(entry.run_id)} | {_cell(entry.message)} |"
        )
    if len(drift) > limit:
        lines.append(
            f"\n…and {len(drift) - limit} more; the full list is in the plan "
            "artifact of the workflow run."
        )
    return "\n".join(lines)


def render_issue_body(
    drift: Sequence[DriftEntry],
    *,
    run_url: str | None = None,
    standing: Sequence[tuple[str, str]] = (),
) -> str:
    """The issue body: the marker, what drifted, what to do about it, and the standing
    blocks (recorded in the lockfile; not drift, listed so they are not forgotten)."""
    parts = [
        render_marker(e.fingerprint for e in drift),
        "The scheduled `osmosis-plan --detailed-exitcode` check found runs whose state on the "
        "Osmosis Platform differs from `state/osmosis.lock` in ways no planned action "
        "explains.",
        drift_table(drift),
        "**What to do:** run `osmosis-plan` locally to see the drift with the rest of the "
        "plan. Re-apply or delete the affected configs, or accept the change; this issue is "
        "updated by each check and closed when a check finds no drift.",
    ]
    if standing:
        rows = "\n".join(
            f"- {_cell(address)}: {_cell(why)}" for address, why in standing[:MAX_ROWS]
        )
        parts.append(
            "**Standing blocks** (recorded by an earlier apply; they fail no check, and stay "
            "until fixed as the plan says):\n\n" + rows
        )
    if run_url:
        parts.append(f"<sub>Last checked by [this workflow run]({run_url}).</sub>")
    return "\n\n".join(parts) + "\n"


def render_new_items_comment(
    drift: Sequence[DriftEntry], new: Sequence[str], *, run_url: str | None = None
) -> str:
    fresh = [e for e in drift if e.fingerprint in set(new)]
    head = (
        f"New drift: {len(fresh)} item{'s' if len(fresh) != 1 else ''}."
        if fresh
        else "The drift changed."
    )
    text = head + ("\n\n" + drift_table(fresh) if fresh else "")
    if run_url:
        text += f"\n\n<sub>[workflow run]({run_url})</sub>"
    return text + "\n"


def find_drift_issue(issues: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The open issue this script manages: the oldest labelled issue carrying the marker.
    Issues opened by people with the same label are not ours to edit or close."""
    for issue in issues:
        if MARKER in (issue.get("body") or ""):
            return issue
    return None


def sync_drift_issue(
    github: GitHubAPI,
    drift: Sequence[DriftEntry],
    *,
    label: str = LABEL,
    run_url: str | None = None,
    standing: Sequence[tuple[str, str]] = (),
) -> tuple[DriftDecision, int | None]:
    """Bring the drift issue in line with ``drift``; return the decision and the issue number."""
    issue = find_drift_issue(github.list_open_issues(label))
    body = (issue.get("body") or "") if issue is not None else None
    decision = drift_issue_action(body, (e.fingerprint for e in drift))
    number = int(issue["number"]) if issue else None
    if decision.kind == "create":
        github.ensure_label(label, LABEL_COLOR, LABEL_DESCRIPTION)
        created = github.create_issue(
            issue_title(drift),
            render_issue_body(drift, run_url=run_url, standing=standing),
            [label],
        )
        number = int(created["number"])
    elif decision.kind == "update":
        assert number is not None
        github.update_issue(
            number,
            title=issue_title(drift),
            body=render_issue_body(drift, run_url=run_url, standing=standing),
        )
        if decision.notify:
            github.create_issue_comment(
                number, render_new_items_comment(drift, decision.new, run_url=run_url)
            )
    elif decision.kind == "close":
        assert number is not None
        note = "The latest drift check found no drift; closing."
        if run_url:
            note += f"\n\n<sub>[workflow run]({run_url})</sub>"
        github.create_issue_comment(number, note + "\n")
        github.update_issue(number, state="closed", state_reason="completed")
    return decision, number
