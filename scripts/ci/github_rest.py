"""A thin GitHub REST client for the workflow helper scripts (httpx + standard library).

Only the handful of calls the osmosis workflows make: list/create/update issue comments,
list/create/update issues, make sure a label exists. Every decision lives in the calling
scripts as pure functions; this module only moves JSON. The ``httpx.Client`` is passed in,
so tests drive it through ``httpx.MockTransport`` and the workflows through the network.

The token comes from ``GITHUB_TOKEN`` and is never echoed: errors name the request and the
status, not the headers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import httpx

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PAGE_SIZE = 100
MAX_PAGES = 50
"""Stop paging after this many pages: a PR with 5,000 comments is not worth scanning."""


class GitHubError(Exception):
    """A GitHub REST call failed; ``status`` is the HTTP status (0 for a transport error)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def make_client(
    env: Mapping[str, str] | None = None, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    """An ``httpx.Client`` for the REST API named by ``GITHUB_API_URL`` (GitHub Enterprise
    sets it), authenticated with ``GITHUB_TOKEN``."""
    env = os.environ if env is None else env
    token = (env.get("GITHUB_TOKEN") or "").strip()
    if not token:
        raise GitHubError(
            "GITHUB_TOKEN is not set; pass it to the step with "
            "`env: GITHUB_TOKEN: ${{ github.token }}`"
        )
    base = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
    return httpx.Client(
        base_url=base,
        transport=transport,
        timeout=httpx.Timeout(30.0),
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "osmosis-reconciler-ci",
        },
    )


class GitHub:
    """The REST calls the workflows need, for one repository ``owner/name``."""

    def __init__(self, client: httpx.Client, repo: str) -> None:
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise GitHubError(f"repository must be owner/name, got {repo!r}")
        self.client = client
        self.repo = repo

    # -- plumbing ------------------------------------------------------------

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.client.request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise GitHubError(f"{method} {url}: {type(exc).__name__}") from exc
        if response.status_code >= 400:
            detail = ""
            try:
                detail = str(response.json().get("message", ""))
            except ValueError:
                pass
            raise GitHubError(
                f"{method} {url}: HTTP {response.status_code}" + (f" ({detail})" if detail else ""),
                response.status_code,
            )
        return response

    def _paged(self, url: str, params: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        next_url: str | None = url
        query: Mapping[str, Any] | None = {**params, "per_page": PAGE_SIZE}
        for _ in range(MAX_PAGES):
            if next_url is None:
                return
            response = self._request("GET", next_url, params=query)
            items = response.json()
            if not isinstance(items, list):
                raise GitHubError(f"GET {next_url}: expected a JSON list")
            yield from items
            # The Link header's next URL already carries the query string.
            next_url = response.links.get("next", {}).get("url")
            query = None

    # -- issue comments (a PR is an issue for comments) ------------------------

    def list_issue_comments(self, number: int) -> list[dict[str, Any]]:
        return list(self._paged(f"/repos/{self.repo}/issues/{number}/comments", {}))

    def create_issue_comment(self, number: int, body: str) -> dict[str, Any]:
        return self._request(
            "POST", f"/repos/{self.repo}/issues/{number}/comments", json={"body": body}
        ).json()

    def update_issue_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        return self._request(
            "PATCH", f"/repos/{self.repo}/issues/comments/{comment_id}", json={"body": body}
        ).json()

    # -- issues -----------------------------------------------------------------

    def list_open_issues(self, label: str) -> list[dict[str, Any]]:
        """Open issues carrying ``label``, oldest first; pull requests left out."""
        issues = self._paged(
            f"/repos/{self.repo}/issues",
            {"state": "open", "labels": label, "sort": "created", "direction": "asc"},
        )
        return [issue for issue in issues if "pull_request" not in issue]

    def create_issue(self, title: str, body: str, labels: list[str]) -> dict[str, Any]:
        return self._request(
            "POST",
            f"/repos/{self.repo}/issues",
            json={"title": title, "body": body, "labels": labels},
        ).json()

    def update_issue(self, number: int, **fields: Any) -> dict[str, Any]:
        return self._request("PATCH", f"/repos/{self.repo}/issues/{number}", json=fields).json()

    def ensure_label(self, name: str, color: str, description: str) -> None:
        try:
            self._request("GET", f"/repos/{self.repo}/labels/{quote(name, safe='')}")
        except GitHubError as exc:
            if exc.status != 404:
                raise
            self._request(
                "POST",
                f"/repos/{self.repo}/labels",
                json={"name": name, "color": color, "description": description},
            )
