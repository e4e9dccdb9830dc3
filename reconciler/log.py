"""Logging through structlog: console lines on a TTY, JSON lines in CI.

Every logger goes through ``redact``, the processor that applies the tool's one redaction
rule (``reconciler.redact``) to every field of every event.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

from reconciler.redact import redact_value


def redact(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: the tool's one redaction rule over every value of the event."""
    return {key: redact_value(value) for key, value in event_dict.items()}


def configure_logging(
    *,
    fmt: str | None,
    verbosity: int,
    command: str,
    stream: TextIO | None = None,
    color: bool | None = None,
) -> None:
    """Set up structlog for one CLI invocation.

    ``fmt`` is ``console`` or ``json``; None picks console on a TTY and JSON otherwise.
    ``verbosity`` -1 (``-q``) shows errors only, 0 warnings, 1 info, 2+ debug. ``color``
    colours console lines (None: when the stream is a TTY).
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
        renderer = structlog.dev.ConsoleRenderer(colors=stream.isatty() if color is None else color)

    def add_command(
        _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
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
