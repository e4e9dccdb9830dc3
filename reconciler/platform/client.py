"""httpx client for the Osmosis Platform's ``/api/cli/`` routes (platform-api.md §1-§8).

The only place that speaks HTTP to the Platform (the local Platform included: it is
reached through the same client, over loopback or an in-process transport). Responses
become frozen models from ``reconciler.platform.models``; failures become the classes of
``reconciler.errors``::

    HTTP status / httpx exception          raised as
    ------------------------------------   -------------------------------------------
    scope codes (GIT_*, WORKSPACE_SCOPE_*)  ScopeError (any status)
    "Benchmarks is not available ..."       FeatureGateError (any status)
    401                                     AuthError (TOKEN_EXPIRED / TOKEN_REVOKED texts)
    403 subscription / billing              FeatureGateError
    4xx "Secret(s) not found: A, B"         MissingSecretsError(names=("A", "B"))
    400                                     PlatformValidationError (issues rendered)
    404                                     NotFoundError
    409                                     ConflictError
    426                                     UpgradeRequiredError
    429 (after retries)                     RateLimitedError(retry_after=)
    5xx (after retries)                     ServerError
    connect error / timeout                 TransportError
    submit sent, no usable answer           OutcomeUnknownError
    2xx that is not a JSON object           InvalidResponseError

Deadlines: every request has an overall deadline, ``DEFAULT_DEADLINE_S`` (60 s; the
``OSMOSIS_PLATFORM_DEADLINE`` environment variable or the ``deadline`` argument change it),
that covers connecting, sending, the whole answer, every retry and every wait between
them; no single network operation waits longer than ``READ_TIMEOUT_S`` (30 s, connects
``CONNECT_TIMEOUT_S``, 10 s). The deadline is enforced at the socket
(``reconciler.deadlines``), so a server that trickles one byte every few seconds or accepts
and never answers ends the request with ``TransportError`` ("did not complete ... within
the 60 s deadline") at the deadline, not after the retries' read timeouts add up. When the
process is interrupted (SIGTERM, Ctrl-C), a request in flight gets ``INTERRUPT_GRACE_S``
(2 s) to finish and then ends.

Retries: reads, stops, download-URL batches and secret upserts/deletes are retried on
connection errors, timeouts, 429 and 5xx with exponential backoff and full jitter
(``Retry-After`` honoured, capped), while the deadline leaves time for another try. A
submit is retried here only when nothing can have reached the Platform (connect-phase
failures). A 429 to a submit is raised at once (``RateLimitedError``): a limiter may answer
after the run was committed, so the applier looks for the run before it submits again. Any
failure after the body may have been sent (read timeout, reset, protocol error, 5xx, an
unreadable or wrong-shaped 2xx) raises
``OutcomeUnknownError``, because the Platform has no idempotency key (§10) and a blind
retry could pay for the same run twice.

The bearer token and secret values are redacted (``reconciler.redact``) from every message
and hint, and httpx exceptions are not chained (their request objects carry the headers).
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import httpx

from reconciler import __version__, deadlines, shutdown
from reconciler.errors import (
    AuthError,
    ConflictError,
    FeatureGateError,
    InvalidResponseError,
    MissingSecretsError,
    NotFoundError,
    OutcomeUnknownError,
    PlatformError,
    PlatformValidationError,
    RateLimitedError,
    ScopeError,
    ServerError,
    TransportError,
    UpgradeRequiredError,
    UsageError,
)
from reconciler.log import get_logger
from reconciler.model import DOWNLOAD_TYPES
from reconciler.platform.models import (
    Benchmark,
    BenchmarkDetail,
    DownloadUrl,
    LogPage,
    Manifest,
    ManifestFile,
    RunDetail,
    RunSummary,
    SecretRecord,
    SubmittedRun,
    Workspace,
)
from reconciler.platform.settings import normalize_platform_url
from reconciler.redact import redact_optional, register_secret

API_PREFIX = "/api/cli"
CLI_COMPAT_VERSION = "0.3.8"
"""The osmosis-ai version whose wire contract this client speaks (X-Osmosis-CLI-Version)."""
USER_AGENT = (
    f"osmosis-reconciler/{__version__} (osmosis-cli-compatible; osmosis-cli/{CLI_COMPAT_VERSION})"
)
DEFAULT_DEADLINE_S = 60.0
"""Overall deadline of one Platform request, retries and their waits included (seconds)."""
DEADLINE_ENV = "OSMOSIS_PLATFORM_DEADLINE"
"""Environment variable that overrides ``DEFAULT_DEADLINE_S``."""
READ_TIMEOUT_S = 30.0
"""Longest silence on a connection before one attempt gives up."""
CONNECT_TIMEOUT_S = 10.0
INTERRUPT_GRACE_S = 2.0
"""How long a request in flight may still finish once the process is interrupted."""
PAGE_LIMIT = 50
LOGS_MAX_LIMIT = 200
DOWNLOAD_URL_BATCH = 500
SECRET_SCOPES = ("workspace", "user")
SECRET_LIST_SCOPES = ("all", "workspace", "user")
FEATURE_GATE_TEXT = "Benchmarks is not available for your account"
DEPLOYMENT_CONFLICT_MESSAGE = (
    "The platform is temporarily blocking this request during a deployment or release "
    "transition. Please try again shortly. If this persists, contact Osmosis support."
)
_SECRET_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")
_MISSING_SECRETS_RE = re.compile(r"Secret\(s\) not found: (.+)")
_TOKEN_HINT = (
    "create a new personal access token on the Platform and export it as OSMOSIS_TOKEN, "
    "or `unset OSMOSIS_TOKEN` to use the embedded local Platform"
)
_SCOPE_HINT = (
    "pass --workspace NAME (or set OSMOSIS_WORKSPACE), or run inside a clone of the "
    "Platform-connected GitHub repository; check that your account can access it"
)
# Replacement texts for the Platform's scope codes (platform-api.md §6.2): the osmosis CLI
# shows these regardless of the body's own text, and so do we.
SCOPE_MESSAGES: Mapping[str, str] = {
    "GIT_SCOPE_REQUIRED": "This command requires an Osmosis workspace (a repository scope).",
    "GIT_SCOPE_HEADER_REQUIRED": "This command requires an Osmosis workspace (a repository scope).",
    "GIT_SCOPE_INVALID": "The repository identity sent to the Platform is invalid.",
    "GIT_SCOPE_HEADER_INVALID": "The repository identity sent to the Platform is invalid.",
    "GIT_REPOSITORY_NOT_CONNECTED": (
        "The Platform could not resolve this repository: it is not connected to a workspace."
    ),
    "GIT_REPOSITORY_ACCESS_DENIED": (
        "Your account does not have access to the Platform workspace connected to this repository."
    ),
    "GIT_SCOPE_HEADER_ACCESS_DENIED": (
        "The Platform could not resolve this repository, or your account does not have "
        "access to its workspace."
    ),
    "WORKSPACE_SCOPE_HEADER_CONFLICT": "Specify either a Git workspace or a workspace name, not both.",
    "WORKSPACE_SCOPE_HEADER_ACCESS_DENIED": (
        "The Platform could not resolve the selected workspace, or your account does not "
        "have access to it."
    ),
}
_SUBSCRIPTION_CODES = frozenset({"SUBSCRIPTION_REQUIRED", "BILLING_REQUIRED"})

log = get_logger()
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently retryable requests are retried.

    ``max_attempts`` counts every try, the first included. The n-th retry waits a
    uniformly random time in ``[0, min(max_delay, base_delay * 2**(n-1))]`` (full jitter;
    exactly the upper bound with ``jitter=False``), or the ``Retry-After`` the Platform
    sent, capped at ``max_retry_after``.
    """

    max_attempts: int = 5
    base_delay: float = 0.25
    max_delay: float = 8.0
    jitter: bool = True
    max_retry_after: float = 30.0

    def backoff(self, retry_number: int) -> float:
        """Delay before the ``retry_number``-th retry (1-based), without ``Retry-After``."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** max(0, retry_number - 1)))
        return random.uniform(0.0, ceiling) if self.jitter else ceiling


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP-date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


class _Mode(Enum):
    """How a request may be retried."""

    SAFE = "safe"
    """Repeating it cannot do harm: reads, stop, download URLs, secret upsert/delete."""
    SUBMIT = "submit"
    """Paid and not idempotent: only retried when nothing can have reached the Platform."""


class _Redactor:
    """The tool's one redaction rule (``reconciler.redact``) plus one request's secrets.

    The token is registered for the whole process when the client is made; the secret
    values a request carries (a submit's provided secrets, a secret upsert) are added here
    and registered too, since they stay secret after the request.
    """

    def __init__(self, secrets: Sequence[str]) -> None:
        self._also = tuple(s for s in secrets if s)
        for value in self._also:
            register_secret(value)

    def __call__(self, text: str | None) -> str | None:
        return redact_optional(text, also=self._also)


def _trimmed(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _render_issues(issues: Any) -> list[str]:
    lines = []
    if not isinstance(issues, list):
        return lines
    for issue in issues:
        if isinstance(issue, str) and issue.strip():
            lines.append(f"  - {issue.strip()}")
        elif isinstance(issue, Mapping):
            key = _trimmed(issue.get("key")) or _trimmed(issue.get("path"))
            message = _trimmed(issue.get("message")) or "invalid"
            line = f"  - {key}: {message}" if key else f"  - {message}"
            correction = _trimmed(issue.get("key_correction"))
            if correction:
                line += f" (did you mean '{correction}'?)"
            lines.append(line)
    return lines


def _missing_secret_names(*texts: str | None) -> tuple[str, ...]:
    for text in texts:
        if not text:
            continue
        match = _MISSING_SECRETS_RE.search(text)
        if match:
            names = []
            for part in match.group(1).splitlines()[0].split(","):
                name = part.strip().rstrip(".").strip()
                if name and name not in names:
                    names.append(name)
            if names:
                return tuple(names)
    return ()


def platform_error(
    status: int,
    body_text: str,
    *,
    retry_after: float | None = None,
    redact: Callable[[str | None], str | None] = lambda text: text,
) -> PlatformError:
    """Translate a non-2xx response into the error tree (platform-api.md §6)."""
    try:
        decoded = json.loads(body_text) if body_text.strip() else {}
    except (ValueError, RecursionError):
        decoded = {}
    body: Mapping[str, Any] = decoded if isinstance(decoded, Mapping) else {}
    error_text = _trimmed(body.get("error"))
    server_message = _trimmed(body.get("message")) or error_text
    code = _trimmed(body.get("code"))
    if code is None and error_text == "deployment_conflict":
        code = "deployment_conflict"

    if server_message is None:
        message = f"API error: HTTP {status}."
        raw = body_text.strip()
        if raw:
            message += " Response: " + (raw[:200] + "...(truncated)" if len(raw) > 200 else raw)
    else:
        message = server_message
    if code == "deployment_conflict" and (
        server_message is None
        or server_message == "deployment_conflict"
        or "reload" in server_message.lower()
    ):
        message = DEPLOYMENT_CONFLICT_MESSAGE
    issue_lines = _render_issues(body.get("issues"))
    if issue_lines:
        message = "\n".join([message, *issue_lines])
    platform_url = _trimmed(body.get("platform_url"))

    def build(cls: type[PlatformError], text: str, hint: str, **extra: Any) -> PlatformError:
        return cls(redact(text) or "", redact(hint), status_code=status, code=redact(code), **extra)

    if code in SCOPE_MESSAGES:
        return build(ScopeError, SCOPE_MESSAGES[code], _SCOPE_HINT)
    if FEATURE_GATE_TEXT.lower() in f"{server_message or ''} {error_text or ''}".lower():
        return build(
            FeatureGateError,
            f"{FEATURE_GATE_TEXT}.",
            "ask Osmosis to enable benchmarks for your account, or use the embedded local "
            "Platform (`--platform local`)",
        )
    if status == 401:
        if code == "TOKEN_EXPIRED":
            text = "The Platform rejected OSMOSIS_TOKEN: the token has expired."
        elif code == "TOKEN_REVOKED":
            text = "The Platform rejected OSMOSIS_TOKEN: the token has been revoked."
        else:
            detail = f" ({server_message})" if server_message else ""
            text = f"The Platform did not accept the token{detail}."
        return build(AuthError, text, _TOKEN_HINT)
    if status == 403 and (
        code in _SUBSCRIPTION_CODES or "subscription" in (error_text or "").lower()
    ):
        return build(
            FeatureGateError,
            server_message or "Active subscription required",
            "set up a subscription or billing for the workspace on the Platform",
        )
    if 400 <= status < 500 and status != 429:
        names = _missing_secret_names(message, error_text)
        if names:
            hint_lines = ["Run the following to add them:"]
            hint_lines += [f"  osmosis secret set {name}" for name in names]
            hint_lines.append(
                "Secrets default to personal scope. Use --scope workspace for secrets shared "
                "across the workspace."
            )
            if platform_url:
                hint_lines.append(f"Or add them in the UI: {platform_url}")
            return build(
                MissingSecretsError,
                f"Secret(s) not found: {', '.join(names)}",
                "\n".join(hint_lines),
                names=names,
            )
    if status == 400:
        return build(
            PlatformValidationError,
            message,
            "fix the request or config fields named above, then run osmosis-plan again",
        )
    if status == 404:
        return build(
            NotFoundError,
            message,
            "check the name or id; the resource may have been deleted or belong to another "
            "workspace",
        )
    if status == 409:
        hint = (
            "retry in a few minutes"
            if code == "deployment_conflict"
            else "the resource is not in a state that allows this; re-run osmosis-plan to "
            "see its current state"
        )
        return build(ConflictError, message, hint)
    if status == 426:
        text = server_message or "This client version is no longer supported by the Platform."
        return build(UpgradeRequiredError, text, "upgrade osmosis-reconciler to the latest release")
    if status == 429:
        return build(
            RateLimitedError,
            message,
            "the Platform is rate limiting requests; wait a minute, or lower --parallelism",
            retry_after=retry_after,
        )
    if status >= 500:
        return build(
            ServerError,
            message,
            "the Platform failed to handle the request; retry later, and contact Osmosis "
            "support if it persists",
        )
    return build(PlatformError, message, "see the Platform's message above")


@dataclass(frozen=True)
class RunPage:
    """One page of the run list (E4)."""

    runs: list[RunSummary]
    next_offset: int | None
    """None at the end of the list."""
    total_count: int | None


def _seg(value: str) -> str:
    """A path segment, percent-encoded with no safe characters (``/`` → ``%2F``)."""
    return quote(str(value), safe="")


def _valid_offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class PlatformClient:
    """Typed access to one Osmosis Platform (real, or the local one over loopback HTTP).

    ``workspace`` selects the workspace by name (``X-Osmosis-Workspace``); otherwise
    ``git_identity`` (lower-case ``owner/repo``) selects it by connected repository
    (``X-Osmosis-Git``). Exactly one of the two is sent on every scoped route; when both
    are given, the explicit workspace name wins. ``transport`` is the seam for tests and
    for the in-process local Platform. ``sleep`` is injected so tests never wait.
    Thread-safe: the apply engine shares one client between its workers.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None,
        workspace: str | None = None,
        git_identity: str | None = None,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy = RetryPolicy(),
        timeout: float = READ_TIMEOUT_S,
        deadline: float | None = None,
        sleep: Callable[[float], None] = shutdown.sleep,
    ) -> None:
        self.base_url = normalize_platform_url(base_url)
        token = token.strip() if token is not None else None
        if token is not None and any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in token):
            # Checked here because httpx would otherwise fail inside header encoding with
            # an exception that may quote the header value.
            raise UsageError(
                "The Platform token contains whitespace or control characters.",
                "set OSMOSIS_TOKEN to the token exactly as the Platform issued it",
            )
        self._token = token or None
        register_secret(self._token)
        self.workspace = workspace.strip() if workspace and workspace.strip() else None
        self.git_identity = (
            git_identity.strip().lower() if git_identity and git_identity.strip() else None
        )
        self.retry = retry
        self.timeout = timeout
        """Longest wait for any one network operation (a read, a connect)."""
        self.deadline = (
            deadline
            if deadline is not None
            else deadlines.seconds_from_env(DEADLINE_ENV, DEFAULT_DEADLINE_S)
        )
        """Longest time one logical request may take, retries and backoff included."""
        self._sleep = sleep
        self._redact = _Redactor([self._token] if self._token else [])
        self._http = deadlines.guard(
            httpx.Client(
                transport=transport,
                timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_S, timeout)),
                follow_redirects=False,
                # A plain-HTTP Platform (loopback) never negotiates TLS, and no redirect is
                # followed to one that would: skip loading the CA bundle (20 ms a command).
                verify=not self.base_url.startswith("http://"),
            )
        )
        self._lock = threading.Lock()
        self._request_count = 0
        self.version_status: str | None = None
        """Last ``X-Osmosis-Version-Status`` seen on a success response."""
        self.version_warning: str | None = None
        """Last ``upgrade_available`` / ``deprecated`` message, for the CLI to show once."""

    # ------------------------------------------------------------------ lifecycle

    def __repr__(self) -> str:
        scope = (
            f"workspace={self.workspace!r}"
            if self.workspace
            else f"git_identity={self.git_identity!r}"
        )
        return f"PlatformClient(base_url={self.base_url!r}, {scope})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PlatformClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def request_count(self) -> int:
        """HTTP requests attempted so far, retries included."""
        with self._lock:
            return self._request_count

    # ------------------------------------------------------------------ plumbing

    def _headers(self, *, scoped: bool, git_only: bool = False) -> dict[str, str | bytes]:
        headers: dict[str, str | bytes] = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Osmosis-CLI-Version": CLI_COMPAT_VERSION,
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if git_only:
            if self.git_identity:
                headers["X-Osmosis-Git"] = self.git_identity
        elif scoped:
            if self.workspace:
                # Sent as typed (exact-name match on the Platform); UTF-8 so names outside
                # ASCII survive.
                headers["X-Osmosis-Workspace"] = self.workspace.encode("utf-8")
            elif self.git_identity:
                headers["X-Osmosis-Git"] = self.git_identity
            else:
                raise ScopeError(
                    "Workspace-scoped Platform requests need a workspace name or a "
                    "repository identity.",
                    _SCOPE_HINT,
                    code="GIT_SCOPE_HEADER_REQUIRED",
                )
        return headers

    def _count(self) -> None:
        with self._lock:
            self._request_count += 1

    def _note_version(self, response: httpx.Response) -> None:
        status = response.headers.get("X-Osmosis-Version-Status")
        if status is None:
            return
        status = status.strip().lower()
        self.version_status = status
        message = (response.headers.get("X-Osmosis-Version-Message") or "").strip()
        if status in ("upgrade_available", "deprecated") and message:
            self.version_warning = self._redact(message)

    def _reason(self, exc: Exception, redact: _Redactor) -> str:
        text = redact(str(exc)) or ""
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        scoped: bool = True,
        git_only: bool = False,
        mode: _Mode = _Mode.SAFE,
        secrets: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Send one logical request (with retries) and return the decoded JSON object.

        The whole of it, retries and their waits included, has ``self.deadline`` seconds
        (see ``reconciler.deadlines``); an interrupted process gives it
        ``INTERRUPT_GRACE_S`` more at most.
        """
        with deadlines.budget(self.deadline, grace=INTERRUPT_GRACE_S) as budget:
            return self._attempts(
                budget, method, path, query, body, scoped, git_only, mode, secrets
            )

    def _attempts(
        self,
        budget: deadlines.Budget,
        method: str,
        path: str,
        query: Mapping[str, Any] | None,
        body: Any,
        scoped: bool,
        git_only: bool,
        mode: _Mode,
        secrets: Sequence[str],
    ) -> dict[str, Any]:
        redact = _Redactor([*([self._token] if self._token else []), *secrets])
        url = self.base_url + API_PREFIX + path
        if query:
            url += "?" + urlencode([(k, v) for k, v in query.items() if v is not None])
        headers = self._headers(scoped=scoped, git_only=git_only)
        content = json.dumps(body).encode("utf-8") if body is not None else None
        attempt = 0
        while True:
            attempt += 1
            left = budget.remaining()
            if left <= 0:
                raise self._out_of_time(budget, method, path)
            request = self._http.build_request(
                method, url, headers=headers, content=content, timeout=self._timeouts(left)
            )
            self._count()
            retry_after: float | None = None
            try:
                response = self._http.send(request)
            except (
                httpx.ConnectError,
                httpx.ConnectTimeout,
                httpx.PoolTimeout,
                httpx.ProxyError,
            ) as exc:
                # Connect phase: the request never left this machine, so even a submit
                # may be repeated.
                if budget.remaining() <= 0:
                    raise self._out_of_time(budget, method, path) from None
                failure = TransportError(
                    f"Could not connect to the Platform at {self.base_url}: "
                    f"{self._reason(exc, redact)}",
                    "check the platform URL and your network connection, then retry",
                )
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
                # Raised before sending, and retrying cannot fix them.
                raise TransportError(
                    f"Could not send the request to the Platform at {self.base_url}: "
                    f"{self._reason(exc, redact)}",
                    "check the platform URL",
                ) from None
            except httpx.RequestError as exc:
                # The request may have reached the Platform (read/write timeout, reset,
                # protocol error, an undecodable body). httpx exceptions are not chained: they hold the request,
                # whose headers carry the token.
                if mode is _Mode.SUBMIT:
                    if budget.remaining() <= 0:
                        why = (
                            "the command was interrupted"
                            if budget.interrupted
                            else f"no answer within the {self.deadline:g} s deadline"
                        )
                    else:
                        why = self._reason(exc, redact)
                    raise OutcomeUnknownError(
                        f"The submit was sent to {self.base_url} but no response came back "
                        f"({why}); the Platform may have created the run.",
                        "do not resubmit by hand: run osmosis-plan, which adopts the run if "
                        "the Platform created it and resubmits it otherwise",
                    ) from None
                if budget.remaining() <= 0:
                    raise self._out_of_time(budget, method, path) from None
                if isinstance(exc, httpx.TimeoutException):
                    failure = TransportError(
                        f"Connection to the Platform at {self.base_url} timed out "
                        f"({method} {path}).",
                        "check your connection and retry",
                    )
                else:
                    failure = TransportError(
                        f"The connection to the Platform at {self.base_url} failed "
                        f"({self._reason(exc, redact)}).",
                        "check your connection and retry",
                    )
            else:
                status = response.status_code
                if 200 <= status < 300:
                    self._note_version(response)
                    return self._decode(response, method, path, redact)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                failure = platform_error(
                    status, response.text, retry_after=retry_after, redact=redact
                )
                if mode is _Mode.SUBMIT and status >= 500:
                    # A 5xx can come after the run was committed (e.g. a proxy timing out).
                    raise OutcomeUnknownError(
                        f"The Platform answered HTTP {status} to the submit; it may have "
                        f"created the run anyway. {failure.message}",
                        "do not resubmit by hand: run osmosis-plan, which adopts the run if "
                        "the Platform created it and resubmits it otherwise",
                        status_code=status,
                        code=failure.code,
                    ) from None
                if status != 429 and status < 500:
                    raise failure
                if mode is _Mode.SUBMIT:
                    # A 429 may come after the run was committed (a limiter behind the
                    # handler): retrying blindly could pay twice. The caller looks for the
                    # run first (``Applier``), then submits again.
                    raise failure
            if attempt >= self.retry.max_attempts:
                raise failure
            if retry_after is not None:
                delay = min(retry_after, self.retry.max_retry_after)
            else:
                delay = self.retry.backoff(attempt)
            if delay >= budget.remaining():
                # Another try could not finish within the deadline: the last answer is
                # the clearest error there is.
                raise failure
            log.info(
                "platform.retry",
                method=method,
                path=path,
                attempt=attempt,
                delay=round(delay, 3),
                reason=failure.message.splitlines()[0],
            )
            self._sleep(delay)

    def _timeouts(self, left: float) -> httpx.Timeout:
        """The per-operation timeouts of one attempt, none longer than the time left."""
        read = min(self.timeout, left)
        return httpx.Timeout(read, connect=min(CONNECT_TIMEOUT_S, read))

    def _out_of_time(self, budget: deadlines.Budget, method: str, path: str) -> TransportError:
        if budget.interrupted:
            return TransportError(
                f"The request to the Platform ({method} {path}) was interrupted: the command "
                "is shutting down.",
                "run the command again when you are ready",
            )
        return TransportError(
            f"The Platform at {self.base_url} did not complete {method} {path} within the "
            f"{self.deadline:g} s deadline (it answers too slowly, or not at all).",
            "check the Platform's status and your network; if it is only slow, raise the "
            f"deadline with {DEADLINE_ENV}=SECONDS",
        )

    def _decode(
        self, response: httpx.Response, method: str, path: str, redact: _Redactor
    ) -> dict[str, Any]:
        if response.status_code == 204 or not response.content.strip():
            return {}
        try:
            data = json.loads(response.content)
        except (ValueError, RecursionError):  # RecursionError: nested without end
            data = None
        if not isinstance(data, dict):
            raise InvalidResponseError(
                f"Invalid JSON response from the Platform for {method} {path}: expected a "
                "JSON object.",
                "check that the platform URL points at an Osmosis Platform",
                status_code=response.status_code,
            )
        return data

    @staticmethod
    def _build(build: Callable[[Any], T], raw: Any, what: str) -> T:
        try:
            return build(raw)
        except (ValueError, TypeError) as exc:
            raise InvalidResponseError(
                f"The Platform returned an unusable {what}: {exc}",
                "check that the platform URL points at an Osmosis Platform; report it to "
                "Osmosis support if it persists",
            ) from None

    def _page(
        self, path: str, key: str, offset: int, extra: Mapping[str, str] | None
    ) -> tuple[list[Any], Any, Any]:
        """One page: (items, next_offset, total_count)."""
        body = self._request(
            "GET", path, query={"limit": PAGE_LIMIT, "offset": offset, **(extra or {})}
        )
        items = body.get(key)
        if not isinstance(items, list):
            raise InvalidResponseError(
                f"The Platform's {path} response has no '{key}' list.",
                "check that the platform URL points at an Osmosis Platform",
            )
        return items, body.get("next_offset"), body.get("total_count")

    def _pages(
        self,
        path: str,
        key: str,
        extra: Mapping[str, str] | None = None,
        *,
        start: int = 0,
        ahead: int = 1,
    ) -> Iterator[list[Any]]:
        """Walk an offset-paged list: limit 50, follow ``next_offset``, stop on null or empty.

        With ``ahead`` > 1, the offsets that the first page's ``total_count`` announces are
        fetched that many at a time. The walk still follows ``next_offset``: a page whose
        ``next_offset`` is not the offset fetched next (a server with shorter pages, or a
        list that changed meanwhile) ends the read-ahead and the walk goes on one page at a
        time from there, so no item is skipped (duplicates are dropped by ``_unique``).
        """
        offset = start
        seen: set[int] = set()
        while True:
            seen.add(offset)
            items, next_offset, total = self._page(path, key, offset, extra)
            yield items
            if not _valid_offset(next_offset) or not items or next_offset in seen:
                # A server that points back at a page already read would loop forever.
                return
            if ahead > 1 and isinstance(total, int) and not isinstance(total, bool):
                planned = [o for o in range(next_offset, total, PAGE_LIMIT) if o not in seen]
                if len(planned) > 1:
                    followed = yield from self._read_ahead(path, key, extra, planned, ahead, seen)
                    if followed is None:
                        return
                    next_offset = followed
                    if next_offset in seen:
                        return
            offset = next_offset

    def _read_ahead(
        self,
        path: str,
        key: str,
        extra: Mapping[str, str] | None,
        offsets: list[int],
        workers: int,
        seen: set[int],
    ) -> Generator[list[Any], None, int | None]:
        """Fetch ``offsets`` concurrently, yield them in order; return where to go on."""
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="osmosis-pages") as pool:
            pages = pool.map(lambda o: (o, self._page(path, key, o, extra)), offsets)
            for index, (offset, (items, next_offset, _total)) in enumerate(pages):
                seen.add(offset)
                yield items
                if not items or not _valid_offset(next_offset):
                    return None
                expected = offsets[index + 1] if index + 1 < len(offsets) else None
                if next_offset != expected:
                    return next_offset
        return None

    @staticmethod
    def _unique(items: Sequence[T], key: Callable[[T], str]) -> list[T]:
        # New runs created while paging (newest first) shift offsets, so the same item
        # can appear on two pages; keep its first occurrence.
        seen: set[str] = set()
        unique = []
        for item in items:
            if key(item) not in seen:
                seen.add(key(item))
                unique.append(item)
        return unique

    # ------------------------------------------------------------------ benchmarks

    def list_benchmarks(self) -> list[Benchmark]:
        """E1, every page."""
        found = [
            self._build(Benchmark.from_api, raw, "benchmark")
            for page in self._pages("/benchmarks", "benchmarks")
            for raw in page
        ]
        return self._unique(found, lambda b: b.id)

    def get_benchmark(self, name_or_id: str) -> BenchmarkDetail:
        """E2: a benchmark by key, name or id."""
        body = self._request("GET", f"/benchmarks/{_seg(name_or_id)}")
        return self._build(BenchmarkDetail.from_api, body, "benchmark detail")

    # ------------------------------------------------------------------ runs

    def iter_run_pages(self, *, benchmark_id: str | None = None) -> Iterator[list[RunSummary]]:
        """E4 one page at a time (limit 50), optionally filtered by benchmark id."""
        extra = {"benchmark": benchmark_id} if benchmark_id else None
        for page in self._pages("/benchmark-runs", "benchmark_runs", extra):
            yield [self._build(RunSummary.from_api, raw, "benchmark run") for raw in page]

    def list_runs(
        self, *, benchmark_id: str | None = None, ahead: int = 1, start: int = 0
    ) -> list[RunSummary]:
        """E4, every page from offset ``start``, each run once; ``ahead`` pages at a time."""
        extra = {"benchmark": benchmark_id} if benchmark_id else None
        runs = [
            self._build(RunSummary.from_api, raw, "benchmark run")
            for page in self._pages(
                "/benchmark-runs", "benchmark_runs", extra, start=start, ahead=ahead
            )
            for raw in page
        ]
        return self._unique(runs, lambda r: r.id)

    def run_page(self, offset: int, *, benchmark_id: str | None = None) -> RunPage:
        """One E4 page (limit 50) at ``offset``, with what the Platform says comes next."""
        extra = {"benchmark": benchmark_id} if benchmark_id else None
        items, next_offset, total = self._page("/benchmark-runs", "benchmark_runs", offset, extra)
        return RunPage(
            runs=[self._build(RunSummary.from_api, raw, "benchmark run") for raw in items],
            next_offset=next_offset if _valid_offset(next_offset) and items else None,
            total_count=total if isinstance(total, int) and not isinstance(total, bool) else None,
        )

    def get_run(self, name_or_id: str) -> RunDetail:
        """E5: a run by name or id."""
        body = self._request("GET", f"/benchmark-runs/{_seg(name_or_id)}")
        return self._build(RunDetail.from_api, body, "benchmark run detail")

    def submit_run(self, body: Mapping[str, Any]) -> SubmittedRun:
        """E3: submit a paid run. Never retried once the request may have been sent.

        Raises ``OutcomeUnknownError`` when the Platform may have created the run but the
        answer was lost or unusable; the caller must keep its intent and adopt later.
        """
        provided = (body.get("secrets") or {}).get("provided") or {}
        secret_values = (
            [str(v) for v in provided.values() if v] if isinstance(provided, Mapping) else []
        )
        try:
            response = self._request(
                "POST", "/benchmark-runs", body=dict(body), mode=_Mode.SUBMIT, secrets=secret_values
            )
            return SubmittedRun.from_api(response)
        except (InvalidResponseError, ValueError) as exc:
            # A 2xx came back, so the run was most likely created, but without a usable id
            # it cannot be recorded: the same recovery as a lost response.
            raise OutcomeUnknownError(
                f"The Platform accepted the submit but its response was unusable ({exc}); "
                "the run may exist.",
                "do not resubmit by hand: run osmosis-plan, which adopts the run if the "
                "Platform created it",
            ) from None

    def stop_run(self, run_id: str) -> None:
        """E7: stop a run by id (body ``{}``; the response is ignored)."""
        self._request("POST", f"/benchmark-runs/{_seg(run_id)}/stop", body={})

    def get_logs(
        self,
        name_or_id: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        direction: str = "older",
    ) -> LogPage:
        """E6: one page of a run's logs (oldest first within the page)."""
        if isinstance(limit, bool) or not 1 <= limit <= LOGS_MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {LOGS_MAX_LIMIT}")
        if direction not in ("older", "newer"):
            raise ValueError("direction must be 'older' or 'newer'")
        query: dict[str, Any] = {"limit": limit, "direction": direction}
        if cursor:
            query["cursor"] = cursor
        body = self._request("GET", f"/benchmark-runs/{_seg(name_or_id)}/logs", query=query)
        return self._build(LogPage.from_api, body, "log page")

    # ------------------------------------------------------------------ outputs

    def get_manifest(self, run_id: str, types: Sequence[str]) -> Manifest:
        """E8: the files of the selected output types (``summary``, ``results``, ...)."""
        selected = list(dict.fromkeys(types))
        unknown = [t for t in selected if t not in DOWNLOAD_TYPES]
        if not selected or unknown:
            raise ValueError(f"types must be a non-empty subset of {DOWNLOAD_TYPES}")
        body = self._request(
            "GET",
            f"/benchmark-runs/{_seg(run_id)}/outputs/manifest",
            query={"types": ",".join(selected)},
        )
        return self._build(Manifest.from_api, body, "output manifest")

    def get_download_urls(self, run_id: str, files: Sequence[ManifestFile]) -> list[DownloadUrl]:
        """E9 in batches of at most 500; one URL per matched file, in request order.

        Files the Platform returned no URL for are left out (the caller reports them).
        """
        urls: list[DownloadUrl] = []
        for start in range(0, len(files), DOWNLOAD_URL_BATCH):
            batch = files[start : start + DOWNLOAD_URL_BATCH]
            items = [
                {"path": f.path, **({"token": f.token} if f.token is not None else {})}
                for f in batch
            ]
            body = self._request(
                "POST",
                f"/benchmark-runs/{_seg(run_id)}/outputs/download-urls",
                body={"items": items},
            )
            urls.extend(self._match_urls(body, batch))
        return urls

    @staticmethod
    def _match_urls(body: Mapping[str, Any], batch: Sequence[ManifestFile]) -> list[DownloadUrl]:
        entries: Any = None
        for key in ("items", "files", "urls"):
            if isinstance(body.get(key), list):
                entries = body[key]
                break
        if entries is None:
            raise InvalidResponseError(
                "The Platform's download-urls response has no list of URLs.",
                "check that the platform URL points at an Osmosis Platform",
            )
        expires = body.get("expires_in")
        expires_in = expires if isinstance(expires, int) and not isinstance(expires, bool) else None
        by_pair: dict[tuple[str | None, str], str] = {}
        by_path: dict[str, list[str]] = {}
        for entry in entries:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
                continue
            url = next(
                (
                    entry[k]
                    for k in ("url", "presignedUrl", "presigned_url")
                    if isinstance(entry.get(k), str) and entry[k]
                ),
                None,
            )
            if url is None:
                continue
            token = entry.get("token") if isinstance(entry.get("token"), str) else None
            by_pair.setdefault((token, entry["path"]), url)
            by_path.setdefault(entry["path"], []).append(url)
        matched = []
        for file in batch:
            url = by_pair.get((file.token, file.path))
            if url is None and len(by_path.get(file.path, [])) == 1:
                url = by_path[file.path][0]
            if url is not None:
                matched.append(
                    DownloadUrl(path=file.path, token=file.token, url=url, expires_in=expires_in)
                )
        return matched

    # ------------------------------------------------------------------ secrets

    def list_secrets(self, scope: str = "all") -> list[SecretRecord]:
        """S1, every page. Records carry names and scopes, never values."""
        if scope not in SECRET_LIST_SCOPES:
            raise ValueError(f"scope must be one of {SECRET_LIST_SCOPES}")
        found = [
            self._build(SecretRecord.from_api, raw, "secret record")
            for page in self._pages("/environment-secrets", "environment_secrets", {"scope": scope})
            for raw in page
        ]
        return self._unique(found, lambda s: s.id)

    def set_secret(self, name: str, value: str, scope: str = "user") -> SecretRecord:
        """S2: create or replace a secret record (personal scope by default)."""
        self._check_secret_args(name, scope)
        body = self._request(
            "POST",
            "/environment-secrets",
            body={"name": name, "value": value, "scope": scope},
            secrets=[value],
        )
        return self._build(SecretRecord.from_api, body, "secret record")

    def delete_secret(self, name: str, scope: str = "user") -> None:
        """S3: delete a secret record (DELETE with a JSON body)."""
        self._check_secret_args(name, scope)
        self._request("DELETE", "/environment-secrets", body={"name": name, "scope": scope})

    @staticmethod
    def _check_secret_args(name: str, scope: str) -> None:
        if not _SECRET_NAME_RE.match(name):
            raise UsageError(
                f"Invalid secret name '{name}'.",
                "secret names are 1-255 characters of A-Z, 0-9 and _, starting with a letter",
            )
        if scope not in SECRET_SCOPES:
            raise UsageError(
                f"Invalid secret scope '{scope}'.", "use scope 'user' (personal) or 'workspace'"
            )

    # ------------------------------------------------------------------ account

    def list_workspaces(self) -> list[Workspace]:
        """W1: the workspaces the token can see (no scope header)."""
        body = self._request("GET", "/workspaces", scoped=False)
        raw = body.get("workspaces")
        if not isinstance(raw, list):
            raise InvalidResponseError(
                "The Platform's workspaces response has no 'workspaces' list.",
                "check that the platform URL points at an Osmosis Platform",
            )
        return [self._build(Workspace.from_api, item, "workspace") for item in raw]

    def verify(self) -> dict[str, Any]:
        """``GET /api/cli/verify``: who the token belongs to (optional ``X-Osmosis-Git`` only)."""
        return self._request("GET", "/verify", scoped=False, git_only=True)
