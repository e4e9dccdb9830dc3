"""A small fake of the GitHub REST routes ``osmosis-ci`` uses, as a real HTTP server on
127.0.0.1 (a thread), so the helpers are tested over loopback exactly as they talk to
GitHub: issue comments, issues, labels, "pulls for a commit" and commit statuses.

State lives in memory and is inspected directly by the tests (``comments``, ``issues``,
``statuses``); every request is logged (method, path, status). Only requests carrying the
expected token are served; the token is never echoed back.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.support.http_server import LoopbackServer

BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}


@dataclass
class Pull:
    number: int
    head_sha: str
    merge_commit_sha: str | None = None
    commits: tuple[str, ...] = ()
    merged: bool = True
    title: str = "A pull request"


@dataclass
class FakeGitHub:
    """The state of one fake repository ``owner/name``."""

    repo: str = "acme/bench"
    token: str = "ghs_fake_token_never_printed"
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    pulls: list[Pull] = field(default_factory=list)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    fail: dict[tuple[str, str], int] = field(default_factory=dict)
    """``(method, path regex)`` -> status to answer instead (e.g. 403 on a fork)."""
    next_issue: int = 1
    _next: int = 1000
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: LoopbackServer | None = None

    # -- lifecycle ------------------------------------------------------------

    def start(self) -> FakeGitHub:
        self._server = LoopbackServer(self._handle)
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return self._server.url

    def env(self) -> dict[str, str]:
        """What a workflow step passes to ``osmosis-ci``."""
        return {
            "GITHUB_TOKEN": self.token,
            "GITHUB_API_URL": self.url,
            "GITHUB_REPOSITORY": self.repo,
        }

    # -- test set-up ------------------------------------------------------------

    def add_pull(self, number: int, head_sha: str, **kw: Any) -> Pull:
        pull = Pull(number, head_sha, **kw)
        self.pulls.append(pull)
        self.issues.setdefault(number, {"number": number, "pull_request": {}, "state": "open"})
        return pull

    def bodies(self, number: int) -> list[str]:
        return [c["body"] for c in self.comments.get(number, [])]

    def writes(self) -> list[tuple[str, str, int]]:
        return [r for r in self.requests if r[0] != "GET"]

    def calls(self, method: str) -> list[str]:
        """``METHOD /path`` of every request with that method, in order."""
        return [f"{m} {p}" for m, p, _s in self.requests if m == method]

    # -- routing ------------------------------------------------------------------

    def _id(self) -> int:
        self._next += 1
        return self._next

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        path, query = unquote(parts.path), parse_qs(parts.query)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        auth = handler.headers.get("Authorization") or ""
        if auth.split(" ", 1)[-1] != self.token:
            status, body = 401, {"message": "Bad credentials"}
        else:
            status, body = 404, {"message": "Not Found"}
            for (fail_method, pattern), code in self.fail.items():
                if fail_method == method and re.fullmatch(pattern, path):
                    status, body = code, {"message": "Resource not accessible by integration"}
                    break
            else:
                with self._lock:
                    status, body = self._route(method, path, query, json.loads(raw or b"null"))
        self.requests.append((method, path, status))
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], data: Any
    ) -> tuple[int, Any]:
        prefix = f"/repos/{self.repo}"
        if not path.startswith(prefix + "/"):
            return 404, {"message": "Not Found"}
        rest = path[len(prefix) :]
        page = int((query.get("page") or ["1"])[0])
        per_page = int((query.get("per_page") or ["30"])[0])

        def paged(items: list[Any]) -> list[Any]:
            return items[(page - 1) * per_page : page * per_page]

        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m.group(1))
            if method == "GET":
                return 200, paged(self.comments.get(number, []))
            if method == "POST":
                comment = {"id": self._id(), "body": data["body"], "user": BOT}
                self.comments.setdefault(number, []).append(comment)
                return 201, comment
        if (m := re.fullmatch(r"/issues/comments/(\d+)", rest)) and method == "PATCH":
            for comments in self.comments.values():
                for comment in comments:
                    if comment["id"] == int(m.group(1)):
                        comment["body"] = data["body"]
                        return 200, comment
        if rest == "/issues":
            if method == "GET":
                label = (query.get("labels") or [""])[0]
                state = (query.get("state") or ["open"])[0]
                found = [
                    i
                    for n, i in sorted(self.issues.items())
                    if i.get("state") == state and label in i.get("labels", [])
                ]
                return 200, paged(found)
            if method == "POST":
                number = max(self.next_issue, max(self.issues, default=0) + 1)
                self.next_issue = number + 1
                issue = {
                    "number": number,
                    "title": data["title"],
                    "body": data.get("body"),
                    "labels": list(data.get("labels") or []),
                    "state": "open",
                }
                self.issues[number] = issue
                return 201, issue
        if (m := re.fullmatch(r"/issues/(\d+)", rest)) and method == "PATCH":
            found_issue = self.issues.get(int(m.group(1)))
            if found_issue is not None:
                found_issue.update(data)
                return 200, found_issue
        if m := re.fullmatch(r"/labels/(.+)", rest):
            found_label = self.labels.get(m.group(1))
            return (200, found_label) if found_label else (404, {"message": "Not Found"})
        if rest == "/labels" and method == "POST":
            self.labels[data["name"]] = data
            return 201, data
        if m := re.fullmatch(r"/commits/([0-9a-f]{7,40})/pulls", rest):
            sha = m.group(1)
            found = [
                {
                    "number": p.number,
                    "title": p.title,
                    "state": "closed" if p.merged else "open",
                    "merged_at": "2026-09-01T12:00:00Z" if p.merged else None,
                    "merge_commit_sha": p.merge_commit_sha,
                    "head": {"sha": p.head_sha},
                    "html_url": f"https://github.com/{self.repo}/pull/{p.number}",
                }
                for p in self.pulls
                if sha in (p.head_sha, p.merge_commit_sha, *p.commits)
            ]
            return 200, paged(found)
        if (m := re.fullmatch(r"/statuses/([0-9a-f]{40})", rest)) and method == "POST":
            status = {"id": self._id(), **data}
            self.statuses.setdefault(m.group(1), []).append(status)
            return 201, status
        return 404, {"message": "Not Found"}
