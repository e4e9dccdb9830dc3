"""The Platform's error answers as the tool's errors (platform-api.md §6): one table.

::

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


A few answers are decided by their content whatever the status (scope codes, the feature
gate, missing secrets); the rest by status through ``STATUS_ERRORS``, the table of error
class and hint per status. A 3xx is never followed (the client sets
``follow_redirects=False``): it is reported with the place it points to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.errors import (
    AuthError,
    ConflictError,
    FeatureGateError,
    MissingSecretsError,
    NotFoundError,
    PlatformError,
    PlatformValidationError,
    RateLimitedError,
    ScopeError,
    ServerError,
    UpgradeRequiredError,
)
from reconciler.escaping import escape_text

FEATURE_GATE_TEXT = "Benchmarks is not available for your account"
DEPLOYMENT_CONFLICT_MESSAGE = (
    "The platform is temporarily blocking this request during a deployment or release "
    "transition. Please try again shortly. If this persists, contact Osmosis support."
)
_MISSING_SECRETS_RE = re.compile(r"Secret\(s\) not found: (.+)")
_TOKEN_HINT = (
    "create a new personal access token on the Platform and export it as OSMOSIS_TOKEN, "
    "or `unset OSMOSIS_TOKEN` to use the embedded local Platform"
)
SCOPE_HINT = (
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


def _trimmed(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _render_issues(issues: Any) -> list[str]:
    lines: list[str] = []
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
    location: str | None = None,
    redact: Callable[[str | None], str | None] = lambda text: text,
) -> PlatformError:
    """Translate a non-2xx response into the error tree (platform-api.md §6)."""
    answer = _Answer.read(status, body_text)
    cls, text, hint, extra = _classify(answer, retry_after, location)
    return cls(
        redact(text) or "", redact(hint), status_code=status, code=redact(answer.code), **extra
    )


@dataclass(frozen=True)
class _Answer:
    """What a refusal says: its status and the fields of its JSON body."""

    status: int
    error_text: str | None
    """The body's ``error``."""
    server_message: str | None
    """The body's ``message``, else its ``error``."""
    code: str | None
    message: str
    """What the error says: the server's message (or the raw body) and its issues."""
    platform_url: str | None

    @classmethod
    def read(cls, status: int, body_text: str) -> _Answer:
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
        return cls(
            status=status,
            error_text=error_text,
            server_message=server_message,
            code=code,
            message=message,
            platform_url=_trimmed(body.get("platform_url")),
        )


_Kind = tuple[type[PlatformError], str, str, dict[str, Any]]
"""An error class, its message and hint, and its extra fields."""


def _classify(answer: _Answer, retry_after: float | None, location: str | None) -> _Kind:
    """The error an answer is, in the order the rules apply (first match wins)."""
    status, code, server_message = answer.status, answer.code, answer.server_message
    if code is not None and code in SCOPE_MESSAGES:
        return ScopeError, SCOPE_MESSAGES[code], SCOPE_HINT, {}
    if FEATURE_GATE_TEXT.lower() in f"{server_message or ''} {answer.error_text or ''}".lower():
        return (
            FeatureGateError,
            f"{FEATURE_GATE_TEXT}.",
            "ask Osmosis to enable benchmarks for your account, or use the embedded local "
            "Platform (`--platform local`)",
            {},
        )
    if status == 401:
        return AuthError, _auth_text(answer), _TOKEN_HINT, {}
    if status == 403 and (
        code in _SUBSCRIPTION_CODES or "subscription" in (answer.error_text or "").lower()
    ):
        return (
            FeatureGateError,
            server_message or "Active subscription required",
            "set up a subscription or billing for the workspace on the Platform",
            {},
        )
    if 400 <= status < 500 and status != 429:
        missing = _missing_secrets(answer)
        if missing is not None:
            return missing
    if 300 <= status < 400:
        # Redirects are never followed (a redirect could carry the token to another host):
        # say where it pointed, so that the user can check and point the tool there.
        where = f" to {escape_text(location[:300])}" if location else " without a Location"
        return (
            PlatformError,
            f"The Platform answered HTTP {status}, a redirect{where}; redirects are not followed.",
            "if the Platform moved, point --platform (or OSMOSIS_PLATFORM_URL) at the new "
            "address yourself, after checking it",
            {},
        )
    if status == 409 and code == "deployment_conflict":
        return ConflictError, answer.message, "retry in a few minutes", {}
    if status == 426:
        text = server_message or "This client version is no longer supported by the Platform."
        return UpgradeRequiredError, text, STATUS_ERRORS[426][1], {}
    entry = STATUS_ERRORS.get(status) or (STATUS_ERRORS[500] if status >= 500 else None)
    if entry is not None:
        cls, hint = entry
        extra = {"retry_after": retry_after} if cls is RateLimitedError else {}
        return cls, answer.message, hint, extra
    if server_message is None:
        return (
            PlatformError,
            answer.message,
            f"the Platform answered HTTP {status} with no message of its own; check the "
            "platform URL, and retry later",
            {},
        )
    return PlatformError, answer.message, "see the Platform's message above", {}


def _auth_text(answer: _Answer) -> str:
    if answer.code == "TOKEN_EXPIRED":
        return "The Platform rejected OSMOSIS_TOKEN: the token has expired."
    if answer.code == "TOKEN_REVOKED":
        return "The Platform rejected OSMOSIS_TOKEN: the token has been revoked."
    detail = f" ({answer.server_message})" if answer.server_message else ""
    return f"The Platform did not accept the token{detail}."


def _missing_secrets(answer: _Answer) -> _Kind | None:
    """A refusal naming secrets that are not set: the commands that set them."""
    names = _missing_secret_names(answer.message, answer.error_text)
    if not names:
        return None
    hint_lines = ["Run the following to add them:"]
    hint_lines += [f"  osmosis secret set {name}" for name in names]
    hint_lines.append(
        "Secrets default to personal scope. Use --scope workspace for secrets shared "
        "across the workspace."
    )
    if answer.platform_url:
        hint_lines.append(f"Or add them in the UI: {answer.platform_url}")
    return (
        MissingSecretsError,
        f"Secret(s) not found: {', '.join(names)}",
        "\n".join(hint_lines),
        {"names": names},
    )


STATUS_ERRORS: Mapping[int, tuple[type[PlatformError], str]] = {
    400: (
        PlatformValidationError,
        "fix the request or config fields named above, then run osmosis-plan again",
    ),
    404: (
        NotFoundError,
        "check the name or id; the resource may have been deleted or belong to another workspace",
    ),
    409: (
        ConflictError,
        "the resource is not in a state that allows this; re-run osmosis-plan to see its "
        "current state",
    ),
    426: (UpgradeRequiredError, "upgrade osmosis-reconciler to the latest release"),
    429: (
        RateLimitedError,
        "the Platform is rate limiting requests; wait a minute, or lower --parallelism",
    ),
    500: (
        ServerError,
        "the Platform failed to handle the request; retry later, and contact Osmosis support "
        "if it persists",
    ),
}
"""Error class and hint by status, for answers not decided by their content (every 5xx
uses the 500 row). Read after the content rules of ``platform_error``."""
