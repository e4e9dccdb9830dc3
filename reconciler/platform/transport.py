"""How the client talks to the Platform: deadlines, size caps, retries, redaction.

``PlatformConnection`` sends one logical request (``_request``) and returns its decoded JSON
object; the routes (``reconciler.platform.client``) are built on it. Failures become the
classes of ``reconciler.errors`` through the error table (``reconciler.platform.error_table``).

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

Why this loop and not tenacity or stamina (compared against tenacity 9.2 and stamina 26.1;
``python -m tests.perf.bench_retry``, part of ``make perf``). Most of ``_attempts`` is not
retrying: it maps each failure to our error (by request mode: the same 429 or reset is
retried for a read and raised for a submit) and redacts it, and that stays ours with any
library. The retrying itself is about 20 lines: count the attempt, pick the wait (``Retry-After``
capped at 30 s, else full-jitter backoff), give up when the next try could not finish
within the deadline, log, sleep.

* stamina cannot express it. Its ``timeout`` is tenacity's ``stop_after_delay`` on its own
  clock: it sleeps into the deadline and stops after it, where this loop stops *before* a
  wait that would overrun the budget the socket-level deadline and the interrupt grace
  share (``reconciler.deadlines``). Its jitter is added to the exponential delay, not full
  jitter. Its synchronous sleep is ``time.sleep``, so SIGTERM would wait out a backoff
  (``shutdown.sleep`` returns at once); tests can only switch retries off or shorten them
  process-wide (``set_testing``), not inject a sleep per connection as the reliability
  suites do. The retry decision depends on the request's mode, which its ``on=`` hook
  (given only the exception) does not see.
* tenacity can express it, only as four custom callables: a ``retry`` predicate closed over
  the mode, a ``wait`` reading the Retry-After from the failure, a ``stop`` comparing
  ``upcoming_sleep`` with ``budget.remaining()``, ``before_sleep`` for the log, plus
  ``sleep=`` and ``reraise=True``, and each failure would need wrapping in a retryable
  marker exception and unwrapping after. That is more lines than the 20 it replaces, a new
  dependency, and 54 us per request instead of 0.1 us around a request that succeeds at
  once (stamina 44 us; the bench's figures on the 2-core reference machine under load).
  The overhead is small next to a loopback request (about 1 ms); the size is the reason.
 token and secret values are redacted (``reconciler.redact``) from every message
and hint, and httpx exceptions are not chained (their request objects carry the headers).

Size: every answer is read as a stream up to ``limits.max_response_bytes()`` (32 MiB;
``OSMOSIS_MAX_RESPONSE_BYTES`` changes it) and ends the request with
``InvalidResponseError`` past it (``OutcomeUnknownError`` for a submit), so a 1 GB answer
costs the process at most the cap in memory (``reconciler.limits``).
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Self, TypeVar
from urllib.parse import urlencode

import httpx
import msgspec

from reconciler import __version__, deadlines, limits, shutdown
from reconciler.errors import (
    InvalidResponseError,
    OutcomeUnknownError,
    PlatformError,
    ScopeError,
    TransportError,
    UsageError,
)
from reconciler.log import get_logger
from reconciler.platform.error_table import SCOPE_HINT, platform_error
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

log = get_logger()
T = TypeVar("T")


class RetryPolicy(msgspec.Struct, frozen=True):
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


DEFAULT_RETRY = RetryPolicy()
"""The retry policy a client has unless given another."""


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


class RequestMode(Enum):
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


@dataclass(frozen=True)
class _Call:
    """One logical request, as each of its attempts sends it."""

    method: str
    path: str
    url: str
    headers: tuple[tuple[bytes, bytes], ...]
    content: bytes | None
    mode: RequestMode
    redact: _Redactor


class PlatformConnection:
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
        retry: RetryPolicy = DEFAULT_RETRY,
        timeout: float = READ_TIMEOUT_S,
        deadline: float | None = None,
        max_response_bytes: int | None = None,
        sleep: Callable[[float], None] = shutdown.sleep,
    ) -> None:
        self.base_url = normalize_platform_url(base_url)
        token = token.strip() if token is not None else None
        if token is not None and any(
            c.isspace() or not c.isascii() or not c.isprintable() for c in token
        ):
            # Checked here because httpx would otherwise fail inside header encoding with
            # an exception that may quote the header value (a non-ASCII character was a
            # UnicodeEncodeError with the token in it). Issued tokens are printable ASCII.
            raise UsageError(
                "The Platform token contains whitespace, control or non-ASCII characters.",
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
        self.max_response_bytes = (
            max_response_bytes if max_response_bytes is not None else limits.max_response_bytes()
        )
        """Largest answer read from the Platform (bytes); past it the request fails."""
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
        self._quickest: float | None = None
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def request_count(self) -> int:
        """HTTP requests attempted so far, retries included."""
        with self._lock:
            return self._request_count

    @property
    def round_trip_s(self) -> float | None:
        """The quickest round trip so far (seconds from sending a request to its answer's
        headers), or None before the first answer: how far the Platform is. The quickest,
        because a long answer or a busy machine only ever adds to a round trip."""
        with self._lock:
            return self._quickest

    # ------------------------------------------------------------------ plumbing

    def _headers(
        self, *, scoped: bool, git_only: bool = False, workspace: str | None = None
    ) -> dict[str, str | bytes]:
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
            if workspace or self.workspace:
                # Sent as typed (exact-name match on the Platform); UTF-8 so names outside
                # ASCII survive.
                headers["X-Osmosis-Workspace"] = (workspace or self.workspace or "").encode("utf-8")
            elif self.git_identity:
                headers["X-Osmosis-Git"] = self.git_identity
            else:
                raise ScopeError(
                    "Workspace-scoped Platform requests need a workspace name or a "
                    "repository identity.",
                    SCOPE_HINT,
                    code="GIT_SCOPE_HEADER_REQUIRED",
                )
        return headers

    def _round_trip(self, seconds: float) -> None:
        with self._lock:
            if self._quickest is None or seconds < self._quickest:
                self._quickest = seconds

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
        mode: RequestMode = RequestMode.SAFE,
        secrets: Sequence[str] = (),
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Send one logical request (with retries) and return the decoded JSON object;
        ``workspace`` scopes it to that workspace (by name) instead of the client's own.

        The whole of it, retries and their waits included, has ``self.deadline`` seconds
        (see ``reconciler.deadlines``); an interrupted process gives it
        ``INTERRUPT_GRACE_S`` more at most.
        """
        with deadlines.budget(self.deadline, grace=INTERRUPT_GRACE_S) as budget:
            redact = _Redactor([*([self._token] if self._token else []), *secrets])
            url = self.base_url + API_PREFIX + path
            if query:
                url += "?" + urlencode([(k, v) for k, v in query.items() if v is not None])
            headers = self._headers(scoped=scoped, git_only=git_only, workspace=workspace)
            call = _Call(
                method=method,
                path=path,
                url=url,
                headers=tuple(
                    (k.encode("ascii"), v if isinstance(v, bytes) else v.encode("utf-8"))
                    for k, v in headers.items()
                ),
                content=json.dumps(body).encode("utf-8") if body is not None else None,
                mode=mode,
                redact=redact,
            )
            return self._attempts(budget, call)

    def _attempts(self, budget: deadlines.Budget, call: _Call) -> dict[str, Any]:
        """Send ``call`` until it is answered, fails for good, or the budget is spent."""
        attempt = 0
        while True:
            attempt += 1
            left = budget.remaining()
            if left <= 0:
                raise self._out_of_time(budget, call.method, call.path)
            request = self._build_request(call, left)
            self._count()
            sent = self._send(call, request, budget)
            retry_after: float | None = None
            if isinstance(sent, PlatformError):
                failure = sent
            else:
                response, answer = sent
                status = response.status_code
                if 200 <= status < 300:
                    self._note_version(response)
                    return self._decode(status, answer, call.method, call.path)
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                failure = self._refusal(call, response, answer, retry_after)
            self._wait_to_retry(call, attempt, failure, retry_after, budget)

    def _build_request(self, call: _Call, left: float) -> httpx.Request:
        try:
            return self._http.build_request(
                call.method,
                call.url,
                headers=list(call.headers),
                content=call.content,
                timeout=self._timeouts(left),
            )
        except httpx.InvalidURL as exc:
            raise TransportError(
                f"Could not build the request {call.method} {call.path[:80]} for the Platform "
                f"at {self.base_url}: {self._reason(exc, call.redact)}",
                "check the platform URL and the names or ids given",
            ) from None

    def _send(
        self, call: _Call, request: httpx.Request, budget: deadlines.Budget
    ) -> tuple[httpx.Response, bytes] | PlatformError:
        """One attempt: the answer and its body, or a failure worth another try. Failures
        that no retry can fix, and a submit whose outcome is unknown, are raised."""
        method, path, redact = call.method, call.path, call.redact
        try:
            sent = time.monotonic()
            response = deadlines.send(self._http, request)
            self._round_trip(time.monotonic() - sent)
            # Read here, inside the same handlers: a read that fails or stalls is a
            # failure after sending, like any other.
            return response, limits.read_capped(response, self.max_response_bytes)
        except limits.AnswerTooLargeError as exc:
            raise self._too_large(exc, call.mode, method, path) from None
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
            return TransportError(
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
            # protocol error, an undecodable body). httpx exceptions are not chained: they
            # hold the request, whose headers carry the token.
            if call.mode is RequestMode.SUBMIT:
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
                return TransportError(
                    f"Connection to the Platform at {self.base_url} timed out ({method} {path}).",
                    "check your connection and retry",
                )
            return TransportError(
                f"The connection to the Platform at {self.base_url} failed "
                f"({self._reason(exc, redact)}).",
                "check your connection and retry",
            )

    def _refusal(
        self, call: _Call, response: httpx.Response, answer: bytes, retry_after: float | None
    ) -> PlatformError:
        """The error of an answer that is not a success, when another try may get a better
        one (429, 5xx); any other is raised, and so is an answer to a submit that may have
        created the run."""
        status = response.status_code
        failure = platform_error(
            status,
            answer.decode("utf-8", "replace"),
            retry_after=retry_after,
            location=response.headers.get("Location"),
            redact=call.redact,
        )
        if call.mode is RequestMode.SUBMIT and status >= 500:
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
        if call.mode is RequestMode.SUBMIT:
            # A 429 may come after the run was committed (a limiter behind the
            # handler): retrying blindly could pay twice. The caller looks for the
            # run first (``Applier``), then submits again.
            raise failure
        return failure

    def _wait_to_retry(
        self,
        call: _Call,
        attempt: int,
        failure: PlatformError,
        retry_after: float | None,
        budget: deadlines.Budget,
    ) -> None:
        """Sleep before the next attempt, or raise ``failure`` when there is none."""
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
            method=call.method,
            path=call.path,
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

    def _too_large(
        self, exc: limits.AnswerTooLargeError, mode: RequestMode, method: str, path: str
    ) -> Exception:
        hint = (
            "check that the platform URL points at an Osmosis Platform; if its answers are "
            f"really this large, raise the cap with {limits.MAX_RESPONSE_ENV}=SIZE (e.g. 256M)"
        )
        if mode is RequestMode.SUBMIT:
            return OutcomeUnknownError(
                f"The submit was sent to {self.base_url} but its answer was refused: {exc}; "
                "the Platform may have created the run.",
                "do not resubmit by hand: run osmosis-plan, which adopts the run if the "
                "Platform created it and resubmits it otherwise",
            )
        return InvalidResponseError(
            f"The Platform at {self.base_url} answered {method} {path} with too much data: {exc}.",
            hint,
        )

    def _decode(self, status: int, content: bytes, method: str, path: str) -> dict[str, Any]:
        if status == 204 or not content.strip():
            return {}
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):  # RecursionError: nested without end
            data = None
        if not isinstance(data, dict):
            raise InvalidResponseError(
                f"Invalid JSON response from the Platform for {method} {path}: expected a "
                "JSON object.",
                "check that the platform URL points at an Osmosis Platform",
                status_code=status,
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
