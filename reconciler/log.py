"""Logging through structlog: console lines on a TTY, JSON lines in CI.

Every logger goes through ``redact``, the one processor that removes the token and any
secret value registered with ``register_secret`` from every field of every event.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, TextIO

import structlog

REDACTED = "[REDACTED]"
_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Never let ``value`` reach a log line (short values would redact too much)."""
    if value and len(value) >= 4:
        with _secrets_lock:
            _secrets.add(value)


def redact_text(text: str) -> str:
    """Replace every registered secret in ``text``, longest first."""
    with _secrets_lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact_value(v) for v in value)
    if isinstance(value, BaseException):
        return redact_text(repr(value))
    return value


def redact(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """structlog processor: scrub secrets from every value of the event."""
    return {key: _redact_value(value) for key, value in event_dict.items()}


def configure_logging(
    *, fmt: str | None, verbosity: int, command: str, stream: TextIO | None = None
) -> None:
    """Set up structlog for one CLI invocation.

    ``fmt`` is ``console`` or ``json``; None picks console on a TTY and JSON otherwise.
    ``verbosity`` -1 (``-q``) shows errors only, 0 warnings, 1 info, 2+ debug.
    """
    stream = stream or sys.stderr
    if fmt is None:
        fmt = "console" if stream.isatty() else "json"
    level = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(
        max(-1, min(verbosity, 2)), logging.DEBUG
    )
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=stream.isatty())

    def add_command(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        # Not only a context variable: worker threads (parallel actions) start with an
        # empty context, and every line must still name its command.
        event_dict.setdefault("command", command)
        return event_dict

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_command,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(command=command)


def get_logger(**context: Any) -> Any:
    return structlog.get_logger("osmosis-reconciler").bind(**context)
