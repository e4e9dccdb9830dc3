"""``osmosis-ci comment``: post the osmosis plan as one sticky pull-request comment, or
update the one already there.

``osmosis-plan --format markdown`` starts its output with a hidden marker line
``<!-- osmosis-reconciler:plan ... -->``; the comment that starts with that marker is the
sticky one. A project of a root of many (docs/projects.md) has a sticky comment of its own:
its matrix job posts ``<!-- osmosis-reconciler:plan project=ID ... -->`` (``sticky_marker``),
so N jobs on one pull request keep N comments instead of overwriting one. The decisions are pure functions (``prepare_comment_body``,
``decide_comment_action``); ``sync_comment`` makes the REST calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reconciler.ci.github import BOT_LOGIN, GitHubAPI
from reconciler.exit_codes import OK, PENDING

MARKER_PREFIX = "<!-- osmosis-reconciler:plan"
"""Every sticky plan comment starts with this; ``osmosis-plan`` adds the rest of the line."""
FALLBACK_MARKER = f"{MARKER_PREFIX} -->"
COMMENT_LIMIT = 65_536
"""GitHub rejects comment bodies longer than this many characters."""


@dataclass(frozen=True)
class CommentAction:
    """What to do with the sticky comment: ``create`` it, ``update`` comment ``comment_id``,
    or leave it (``unchanged``) because it already says exactly this."""

    kind: Literal["create", "update", "unchanged"]
    comment_id: int | None = None


_PROJECT = " project="


def sticky_marker(project: str | None) -> str:
    """The start of the sticky comment's first line: the plan marker, with ``project=ID``
    for a project of a root of many (ids are letters, digits, ``.``, ``_`` and ``-``)."""
    return MARKER_PREFIX if project is None else f"{MARKER_PREFIX}{_PROJECT}{project} "


def has_marker(body: str, marker: str = MARKER_PREFIX) -> bool:
    """True when ``body`` is a sticky plan comment: its first line starts with the marker.

    Only the first line counts, so a reviewer quoting the plan in their own comment is never
    mistaken for the sticky comment. The bare ``MARKER_PREFIX`` (a repository of one
    project) never matches a project's comment, so the two never overwrite each other.
    """
    text = body.lstrip("\ufeff")
    if marker == MARKER_PREFIX and text.startswith(MARKER_PREFIX + _PROJECT):
        return False
    return text.startswith(marker)


def decide_comment_action(
    existing_comments: Sequence[Mapping[str, Any]],
    marker: str,
    body: str,
    *,
    bot_login: str | None = BOT_LOGIN,
) -> CommentAction:
    """Decide between creating the sticky comment and updating the one already there.

    ``existing_comments`` are GitHub issue-comment objects (``id``, ``body``, ``user.login``)
    in the API's order, oldest first. The oldest comment that starts with ``marker`` (and,
    when ``bot_login`` is given, was written by that account) is the sticky one; later
    duplicates from a past race are left alone rather than guessed at.
    """
    for comment in existing_comments:
        text = comment.get("body") or ""
        author = (comment.get("user") or {}).get("login")
        if not has_marker(text, marker):
            continue
        if bot_login is not None and author != bot_login:
            continue
        comment_id = int(comment["id"])
        if text == body:
            return CommentAction("unchanged", comment_id)
        return CommentAction("update", comment_id)
    return CommentAction("create")


def prepare_comment_body(
    markdown: str,
    *,
    exit_code: int | None,
    validation_failed: bool = False,
    run_url: str | None = None,
    limit: int = COMMENT_LIMIT,
    status: str | None = None,
    decisions: Sequence[str] = (),
    project: str | None = None,
) -> str:
    """The comment text for one workflow run, always starting with the marker.

    * configs failed ``--validate-only``: a short note pointing at the annotations, since the
      plan was never computed (an old plan left in the comment would mislead reviewers);
    * plan exit code 1: whatever the plan printed, under a warning that it cannot be applied;
    * otherwise the plan's markdown as printed.

    ``decisions`` (a line per decision at minimum cost: its verdict, tasks used of the
    maximum, looks, α spent) follow the plan, open, since a decision is what a reviewer
    reads; ``status`` (the markdown table of ``osmosis-reconciler status``) follows in a
    collapsed section. A footer links the workflow run. The result never exceeds ``limit`` characters.
    ``project``: the id of the project whose plan this is; its marker names it.
    """
    text = markdown.replace("\r\n", "\n").strip("\n")
    if text.startswith(MARKER_PREFIX):
        marker, _, rest = text.partition("\n")
    else:
        marker, rest = FALLBACK_MARKER, text
    if project is not None and not marker.startswith(sticky_marker(project)):
        marker = sticky_marker(project) + marker[len(MARKER_PREFIX) :].lstrip()
    rest = rest.strip("\n")

    sections: list[str] = []
    if validation_failed:
        sections.append(
            "### osmosis-plan\n\n"
            ":x: **The benchmark configs failed validation**, so no plan was made. "
            "The errors are annotated on the changed files; run `osmosis-plan --validate-only` "
            "locally to see them."
        )
    elif exit_code not in (OK, PENDING):
        warning = (
            ":x: **osmosis-plan failed** (exit code "
            f"{exit_code if exit_code is not None else 'unknown'}): this plan cannot be "
            "applied as it is. The job log says why."
        )
        sections.append(f"{warning}\n\n{rest}" if rest else f"### osmosis-plan\n\n{warning}")
    else:
        sections.append(rest or "### osmosis-plan\n\nThe plan printed nothing.")
    if decisions and not validation_failed:
        sections.append("#### Decisions\n\n" + "\n".join(decisions))
    if status and not validation_failed:
        rows = max(0, status.count("\n") - 2)
        sections.append(
            f"<details><summary>Status of every address ({rows})</summary>\n\n"
            f"{status.strip(chr(10))}\n\n</details>"
        )

    footer = f"\n\n---\n<sub>[workflow run]({run_url})</sub>" if run_url else ""
    body = f"{marker}\n" + "\n\n".join(sections) + footer + "\n"
    if len(body) <= limit:
        return body
    note = "\n\n_… cut to fit GitHub's comment size limit; the full plan is in the job log._"
    room = limit - len(marker) - 1 - len(note) - len(footer) - 1
    return f"{marker}\n" + "\n\n".join(sections)[: max(room, 0)] + note + footer + "\n"


def sync_comment(
    github: GitHubAPI,
    pr: int,
    body: str,
    *,
    bot_login: str | None = BOT_LOGIN,
    project: str | None = None,
) -> CommentAction:
    """Create or update the sticky comment (of ``project``, when given) on pull request
    ``pr``; return what was done."""
    action = decide_comment_action(
        github.list_issue_comments(pr), sticky_marker(project), body, bot_login=bot_login
    )
    if action.kind == "create":
        created = github.create_issue_comment(pr, body)
        return CommentAction("create", int(created["id"]))
    if action.kind == "update":
        assert action.comment_id is not None
        github.update_issue_comment(action.comment_id, body)
    return action
