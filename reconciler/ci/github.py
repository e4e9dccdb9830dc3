"""The GitHub REST calls ``osmosis-ci`` makes, through githubkit.

githubkit (httpx and pydantic, like the rest of this package) is the kept client: typed
request bodies, GitHub Enterprise base URLs, rate-limit aware retries. Two choices here:

* responses are read as JSON (``Response.json()``), not as githubkit's pydantic models:
  the helpers need three or four fields of each object, and validating whole objects
  against the full schema would make every call depend on every field GitHub may add;
* githubkit's HTTP cache is off: a comment list read right after a comment was created
  must see it;
* it is used as a context manager (one connection pool per command).

Every githubkit exception is translated into ``GitHubError`` where it enters; the token is
never part of a message (errors name the route and the status; GitHub's own message is
redacted, since GitHub may quote the request's ``Authorization`` header).

Limits: a command's GitHub calls share one overall deadline (``DEFAULT_DEADLINE_S``,
``OSMOSIS_CI_DEADLINE``), enforced at the socket (``reconciler.deadlines``: a server that
trickles a byte every few seconds ends there, not never); no answer is read past
``OSMOSIS_MAX_RESPONSE_BYTES`` (``reconciler.limits``); redirects are not followed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx

from reconciler import deadlines, limits
from reconciler.errors import GitHubError, UsageError
from reconciler.escaping import escape_text
from reconciler.redact import redact

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_DEADLINE_S = 120.0
"""Overall deadline of one osmosis-ci command's GitHub calls, retries included (seconds)."""
DEADLINE_ENV = "OSMOSIS_CI_DEADLINE"
"""Environment variable that overrides ``DEFAULT_DEADLINE_S``."""
READ_TIMEOUT_S = 30.0
"""Longest silence on a connection to GitHub before one try gives up."""
PAGE_SIZE = 100
MAX_PAGES = 50
"""Stop paging after this many pages: a pull request with 5,000 comments is not worth scanning."""
BOT_LOGIN = "github-actions[bot]"
"""Author of comments made with a workflow's ``GITHUB_TOKEN``."""


def _load_githubkit() -> Any:
    try:
        import githubkit
    except ImportError as exc:  # the [ci] extra is not installed
        raise UsageError(
            "osmosis-ci needs the GitHub client: githubkit is not installed",
            "install the CI extra: `python -m pip install 'osmosis-reconciler[ci]'`",
        ) from exc
    return githubkit


class GitHubAPI:
    """The REST calls the workflows need, for one repository ``owner/name``."""

    def __init__(
        self,
        repo: str,
        *,
        token: str,
        api_url: str = DEFAULT_API_URL,
        transport: Any = None,
    ) -> None:
        if repo.count("/") != 1 or not all(repo.split("/")):
            raise UsageError(
                f"--repo must be owner/name, got {repo!r}",
                "pass --repo OWNER/NAME or set GITHUB_REPOSITORY",
            )
        if not token:
            raise UsageError(
                "GITHUB_TOKEN is not set",
                "pass it to the step: `env: GITHUB_TOKEN: ${{ github.token }}`",
            )
        if not token.isascii() or not token.isprintable():
            # httpx would fail inside header encoding with the token in its message.
            raise UsageError(
                "GITHUB_TOKEN contains whitespace, control or non-ASCII characters",
                "pass the token exactly as GitHub issued it",
            )
        kit = _load_githubkit()
        self.owner, self.name = repo.split("/")
        self.repo = repo
        self.api_url = api_url
        self.max_response_bytes = limits.max_response_bytes()
        self._exceptions = kit.exception
        if transport is None:
            # Our own socket transport: every read obeys the command's deadline budget
            # (``reconciler.deadlines``), and no answer is read past the size cap.
            transport = deadlines.guard_transport(httpx.HTTPTransport())
        self._kit = kit.GitHub(
            kit.TokenAuthStrategy(token),
            base_url=api_url.rstrip("/") + "/",
            http_cache=False,
            timeout=READ_TIMEOUT_S,
            user_agent="osmosis-reconciler-ci",
            transport=limits.CappedTransport(transport, self.max_response_bytes),
            follow_redirects=False,
            auto_retry=_retry_within_deadline(kit),
        )

    def __enter__(self) -> GitHubAPI:
        # One connection pool for the whole command: outside a `with`, githubkit opens a
        # new HTTP client per request (measured: 30-50 ms a call against 3-4 ms inside).
        self._kit.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._kit.__exit__(*exc)

    @classmethod
    def from_env(cls, repo: str | None, env: Mapping[str, str] | None = None) -> GitHubAPI:
        env = os.environ if env is None else env
        return cls(
            repo or env.get("GITHUB_REPOSITORY", ""),
            token=(env.get("GITHUB_TOKEN") or "").strip(),
            api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
        )

    # -- plumbing ------------------------------------------------------------

    def _call(self, route: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        exc_mod = self._exceptions
        budget = deadlines.current()
        try:
            return fn(self.owner, self.name, *args, **kwargs).json()
        except exc_mod.RequestFailed as exc:
            raise _refused(route, exc.response) from None
        except (exc_mod.RequestError, limits.AnswerTooLargeError) as exc:
            cause = getattr(exc, "exc", exc)
            if isinstance(cause, limits.AnswerTooLargeError):
                raise _too_large(route, cause) from None
            if budget is not None and budget.remaining() <= 0:
                raise _out_of_time(route, budget) from None
            raise GitHubError(
                f"GitHub {route}: {type(cause).__name__}",
                "check GITHUB_API_URL and the network, then re-run the job",
            ) from None
        except exc_mod.GitHubException as exc:
            raise GitHubError(
                f"GitHub {route}: {type(exc).__name__}",
                "check GITHUB_API_URL and the network, then re-run the job",
            ) from None
        except ValueError as exc:  # a 2xx that is not JSON
            raise GitHubError(
                f"GitHub {route}: the answer is not JSON ({type(exc).__name__})",
                "check GITHUB_API_URL: it must point at the GitHub REST API",
            ) from None

    def _pages(
        self, route: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Iterator[Any]:
        for page in range(1, MAX_PAGES + 1):
            items = self._call(route, fn, *args, per_page=PAGE_SIZE, page=page, **kwargs)
            if not isinstance(items, list):
                raise GitHubError(f"GitHub {route}: expected a JSON list")
            yield from items
            if len(items) < PAGE_SIZE:
                return

    # -- issue comments (a pull request is an issue for comments) -------------

    def list_issue_comments(self, number: int) -> list[dict[str, Any]]:
        issues = self._kit.rest.issues
        return list(self._pages("list comments", issues.list_comments, number))

    def create_issue_comment(self, number: int, body: str) -> dict[str, Any]:
        return self._call("create comment", self._kit.rest.issues.create_comment, number, body=body)

    def update_issue_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        issues = self._kit.rest.issues
        return self._call("update comment", issues.update_comment, comment_id, body=body)

    # -- issues -----------------------------------------------------------------

    def list_open_issues(self, label: str) -> list[dict[str, Any]]:
        """Open issues carrying ``label``, oldest first; pull requests left out."""
        issues = self._pages(
            "list issues",
            self._kit.rest.issues.list_for_repo,
            state="open",
            labels=label,
            sort="created",
            direction="asc",
        )
        return [issue for issue in issues if "pull_request" not in issue]

    def create_issue(self, title: str, body: str, labels: list[str]) -> dict[str, Any]:
        issues = self._kit.rest.issues
        return self._call("create issue", issues.create, title=title, body=body, labels=labels)

    def update_issue(self, number: int, **fields: Any) -> dict[str, Any]:
        return self._call("update issue", self._kit.rest.issues.update, number, **fields)

    def ensure_label(self, name: str, color: str, description: str) -> None:
        issues = self._kit.rest.issues
        try:
            self._call("get label", issues.get_label, name)
        except GitHubError as exc:
            if exc.status != 404:
                raise
            self._call(
                "create label", issues.create_label, name=name, color=color, description=description
            )

    # -- commits ----------------------------------------------------------------

    def pulls_for_commit(self, sha: str) -> list[dict[str, Any]]:
        """Pull requests associated with commit ``sha`` (the PR that merged it, or whose
        branch holds it)."""
        repos = self._kit.rest.repos
        return list(
            self._pages("pulls for a commit", repos.list_pull_requests_associated_with_commit, sha)
        )

    def create_status(
        self, sha: str, *, state: str, context: str, description: str, target_url: str | None
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {"state": state, "context": context, "description": description}
        if target_url:
            fields["target_url"] = target_url
        return self._call("create status", self._kit.rest.repos.create_commit_status, sha, **fields)


def _refused(route: str, response: Any) -> GitHubError:
    """A GitHub error answer: its status, and GitHub's own message (redacted: it may quote
    the request's headers) or where a redirect pointed."""
    status = response.status_code
    detail = ""
    try:
        detail = str(response.json().get("message", ""))
    except (ValueError, AttributeError):
        pass
    if 300 <= status < 400:
        where = response.headers.get("Location")
        detail = f"a redirect to {where[:300]}, not followed" if where else "a redirect"
    shown = f" ({escape_text(redact(detail[:500]))})" if detail else ""
    return GitHubError(f"GitHub {route}: HTTP {status}{shown}", _hint(status), status=status)


def _too_large(route: str, exc: limits.AnswerTooLargeError) -> GitHubError:
    return GitHubError(
        f"GitHub {route}: {exc}",
        "check GITHUB_API_URL: it must point at the GitHub REST API; if its answers are "
        f"really this large, raise the cap with {limits.MAX_RESPONSE_ENV}=SIZE (e.g. 256M)",
    )


def _out_of_time(route: str, budget: deadlines.Budget) -> GitHubError:
    if budget.interrupted:
        return GitHubError(f"GitHub {route}: interrupted (the command is shutting down)")
    return GitHubError(
        f"GitHub {route}: the GitHub API did not answer within osmosis-ci's "
        f"{budget.seconds:g} s deadline (it answers too slowly, or not at all)",
        "check https://www.githubstatus.com and GITHUB_API_URL; if it is only slow, raise "
        f"the deadline with {DEADLINE_ENV}=SECONDS",
    )


def _retry_within_deadline(kit: Any) -> Callable[[Any, int], Any]:
    """githubkit's retry rules (rate limits, 5xx), but only while the deadline leaves time
    for the wait and another try: its own wait for a rate limit without ``Retry-After``
    is 60 s, longer than a whole command may take."""
    default = kit.retry.RETRY_DEFAULT

    def decide(exc: Any, count: int) -> Any:
        option = default(exc, count)
        budget = deadlines.current()
        if option.do_retry and budget is not None:
            wait = option.retry_after.total_seconds() if option.retry_after else 60.0
            if wait + 1.0 >= budget.remaining():
                return kit.typing.RetryOption(False)
        return option

    return decide


def _hint(status: int) -> str:
    if status in (401, 403):
        return (
            "the token cannot do this: give the workflow the permission it needs "
            "(`permissions:` pull-requests/issues/statuses: write) or pass a token that has it"
        )
    if status == 404:
        return "check --repo (GITHUB_REPOSITORY) and that the token can see the repository"
    return "re-run the job; if it keeps failing, check https://www.githubstatus.com"
