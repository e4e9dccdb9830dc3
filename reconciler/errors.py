"""The one exception tree of osmosis-reconciler.

Every error a user can meet is one of these. Each carries a ``message`` (what happened)
and a ``hint`` (what to do next: the file and key, or the command to run). The CLI maps
the classes to the frozen exit codes; nothing below the CLI prints or exits.

::

    ReconcilerError
    ├── UsageError                  bad flags or arguments
    ├── ConfigError                 one or more invalid benchmark configs (.issues)
    ├── StateError                  lockfile missing pieces, corrupt, conflicted, foreign
    ├── LockHeldError               another apply holds state/.osmosis.lock.held
    ├── StalePlanError              a saved plan no longer matches the repository or state
    ├── ImportRefusedError          osmosis-import cannot record a run against a config
    ├── PolicyError                 a guard (max_stops, max_attempts) denied the plan
    ├── GitError                    git failed or the repository is not usable
    ├── GitHubError                 the GitHub API refused or could not be reached (osmosis-ci)
    ├── DownloadError               an output could not be fetched or was unsafe
    │   └── UnsafePathError         a manifest path would escape the run directory
    └── PlatformError               the Osmosis Platform refused or could not be reached
        ├── AuthError               401: missing, expired or revoked token
        ├── FeatureGateError        benchmarks not enabled for the account
        ├── ScopeError              workspace / repository scope not resolvable
        ├── PlatformValidationError 400: the Platform rejected the request
        ├── NotFoundError           404
        │   └── MissingSecretsError 404 "Secret(s) not found: A, B" (.names)
        ├── ConflictError           409 (benchmark syncing, run not stoppable, ...)
        ├── UpgradeRequiredError    426
        ├── RateLimitedError        429 after retries (.retry_after)
        ├── ServerError             5xx after retries
        ├── InvalidResponseError    a 2xx body that is not the documented shape
        └── TransportError          connection refused, reset or timed out
            └── OutcomeUnknownError a submit may have reached the Platform: never retry

Secret values and the token never appear in any message: the platform layer redacts
before it raises.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reconciler.escaping import escape_text


class ReconcilerError(Exception):
    """Base class: a known, user-facing failure with a message and a hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(ReconcilerError):
    """A command-line flag or argument is wrong."""


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in one config file, located as precisely as the file allows."""

    file: str
    """Path relative to the repository root."""
    line: int | None
    """1-based line of the key or value, when known."""
    column: int | None
    """1-based column of the key or value, when known."""
    key: str
    """Dotted key path, e.g. ``agents[1].model.api_key_secret``; empty for file-level issues."""
    message: str
    """What is wrong."""
    hint: str | None = None
    """What to do about it."""
    severity: str = "error"
    """``error`` or ``warning``; warnings never fail validation."""

    def location(self) -> str:
        where = escape_text(self.file)
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return where

    def render(self) -> str:
        """``file:line:col: key: message (hint)``, with names from disk escaped."""
        key = f" {escape_text(self.key)}:" if self.key else ""
        text = f"{self.location()}:{key} {escape_text(self.message, keep_newlines=True)}"
        if self.hint:
            text += f" ({escape_text(self.hint, keep_newlines=True)})"
        return text


class ConfigError(ReconcilerError):
    """One or more configs are invalid; ``issues`` lists every problem of every file."""

    def __init__(self, issues: list[ConfigIssue], hint: str | None = None) -> None:
        errors = [i for i in issues if i.severity == "error"]
        files = sorted({i.file for i in errors})
        super().__init__(
            f"{len(errors)} error(s) in {len(files)} config file(s)",
            hint or "fix the configs listed above, then run `osmosis-plan --validate-only` again",
        )
        self.issues = issues


class StateError(ReconcilerError):
    """The lockfile cannot be used as it is."""


class LockHeldError(ReconcilerError):
    """Another process holds the apply lock."""

    def __init__(
        self, message: str, hint: str | None = None, holder: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, hint)
        self.holder = holder or {}


class StalePlanError(ReconcilerError):
    """A saved plan was made against a state that has since changed."""


class ImportRefusedError(ReconcilerError):
    """A run cannot be imported as asked: its details leave the config ambiguous, the
    generated config would not describe it, or the file or address is already taken."""


class PolicyError(ReconcilerError):
    """A guard refused the plan (too many stops, over the attempts budget)."""


class GitError(ReconcilerError):
    """git is missing or failed."""


class GitHubError(ReconcilerError):
    """A GitHub REST call of ``osmosis-ci`` failed; ``status`` is the HTTP status (0: none)."""

    def __init__(self, message: str, hint: str | None = None, status: int = 0) -> None:
        super().__init__(message, hint)
        self.status = status


class DownloadError(ReconcilerError):
    """An output file could not be downloaded."""


class UnsafePathError(DownloadError):
    """A manifest path would be written outside the run directory."""


class PlatformError(ReconcilerError):
    """The Platform refused a request or could not be reached."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        status_code: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.status_code = status_code
        self.code = code


class AuthError(PlatformError):
    """401: the token is missing, invalid, expired or revoked."""


class FeatureGateError(PlatformError):
    """Benchmarks are not available for this account."""


class ScopeError(PlatformError):
    """The workspace or repository scope could not be resolved."""


class PlatformValidationError(PlatformError):
    """400: the Platform rejected the request body or parameters."""


class NotFoundError(PlatformError):
    """404: no such run, benchmark or route."""


class MissingSecretsError(NotFoundError):
    """404 ``Secret(s) not found: A, B``; ``names`` lists the missing record names."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        names: tuple[str, ...] = (),
        status_code: int | None = 404,
        code: str | None = None,
    ) -> None:
        super().__init__(message, hint, status_code=status_code, code=code)
        self.names = names


class ConflictError(PlatformError):
    """409: the request conflicts with the resource's state."""


class UpgradeRequiredError(PlatformError):
    """426: the Platform no longer supports this client version."""


class RateLimitedError(PlatformError):
    """429 that persisted through the retry budget."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        retry_after: float | None = None,
        status_code: int | None = 429,
        code: str | None = None,
    ) -> None:
        super().__init__(message, hint, status_code=status_code, code=code)
        self.retry_after = retry_after


class ServerError(PlatformError):
    """5xx that persisted through the retry budget."""


class InvalidResponseError(PlatformError):
    """A success response whose body is not the documented shape."""


class TransportError(PlatformError):
    """The connection failed or timed out."""


class OutcomeUnknownError(TransportError):
    """A submit may have reached the Platform but no response came back.

    Never retried: the apply engine keeps the intent and the next plan adopts the run if
    the Platform created one.
    """


def closest(word: str, options: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The option most like ``word`` (``difflib``'s ratio at least ``cutoff``), for a
    "did you mean" hint; None when none is close. difflib is imported here, when a hint is
    made, not by every command at start-up."""
    import difflib

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=cutoff)
    return close[0] if close else None


def file_error(exc: BaseException) -> ReconcilerError | None:
    """An OS error on a named file that no layer translated: a clear error, not a bug."""
    if not isinstance(exc, OSError) or exc.filename is None:
        return None
    return ReconcilerError(
        f"{os.fsdecode(exc.filename)}: {exc.strerror or exc}",
        "check that the path exists and is writable by this user, and that the disk is not full",
    )
