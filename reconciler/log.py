"""Logging through structlog: console lines on a TTY, JSON lines in CI.

Every logger goes through ``redact``, the processor that applies the tool's one redaction
rule (``reconciler.redact``) to every field of every event.

structlog is imported by the first event that is printed, not at start-up: most commands
print none at the default level, and the import is about 35 ms of a 10-config plan's
start-up (``make perf``, start-up). Until ``configure_logging`` runs, every event goes to
structlog as configured by default, as before.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, TextIO

from reconciler.redact import redact_value


def redact(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: the tool's one redaction rule over every value of the event."""
    return {key: redact_value(value) for key, value in event_dict.items()}


@dataclass(frozen=True)
class _Config:
    fmt: str
    level: int
    command: str
    stream: TextIO
    color: bool | None


_config: _Config | None = None
_configured = False
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}


def configure_logging(
    *,
    fmt: str | None,
    verbosity: int,
    command: str,
    stream: TextIO | None = None,
    color: bool | None = None,
) -> None:
    """Set up logging for one CLI invocation (structlog itself on the first printed event).

    ``fmt`` is ``console`` or ``json``; None picks console on a TTY and JSON otherwise.
    ``verbosity`` -1 (``-q``) shows errors only, 0 warnings, 1 info, 2+ debug. ``color``
    colours console lines (None: when the stream is a TTY).
    """
    global _config, _configured
    stream = stream or sys.stderr
    if fmt is None:
        fmt = "console" if stream.isatty() else "json"
    level = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(
        max(-1, min(verbosity, 2)), logging.DEBUG
    )
    _config = _Config(fmt=fmt, level=level, command=command, stream=stream, color=color)
    _configured = False


def reset_logging() -> None:
    """Forget ``configure_logging`` and structlog's configuration (tests: process-global)."""
    global _config, _configured
    _config, _configured = None, False
    if "structlog" in sys.modules:
        import structlog

        structlog.reset_defaults()
        structlog.contextvars.clear_contextvars()


def _structlog() -> Any:
    """structlog, configured as ``configure_logging`` last asked."""
    global _configured
    import structlog

    if _config is None or _configured:
        return structlog
    config = _config
    renderer: Any
    if config.fmt == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    else:
        colors = config.stream.isatty() if config.color is None else config.color
        renderer = structlog.dev.ConsoleRenderer(colors=colors)

    def add_command(
        _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        # Not only a context variable: worker threads (parallel actions) start with an
        # empty context, and every line must still name its command.
        event_dict.setdefault("command", config.command)
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
        wrapper_class=structlog.make_filtering_bound_logger(config.level),
        logger_factory=structlog.PrintLoggerFactory(file=config.stream),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(command=config.command)
    _configured = True
    return structlog


class Logger:
    """The tool's logger: bound context now, structlog when an event is printed."""

    __slots__ = ("_context",)

    def __init__(self, context: dict[str, Any]) -> None:
        self._context = context

    def bind(self, **context: Any) -> Logger:
        return Logger({**self._context, **context})

    def _emit(self, method: str, event: str | None, fields: dict[str, Any]) -> None:
        if _config is not None and _LEVELS[method] < _config.level:
            return
        logger = _structlog().get_logger("osmosis-reconciler").bind(**self._context)
        getattr(logger, method)(event, **fields)

    def debug(self, event: str | None = None, **fields: Any) -> None:
        self._emit("debug", event, fields)

    def info(self, event: str | None = None, **fields: Any) -> None:
        self._emit("info", event, fields)

    def warning(self, event: str | None = None, **fields: Any) -> None:
        self._emit("warning", event, fields)

    def error(self, event: str | None = None, **fields: Any) -> None:
        self._emit("error", event, fields)

    def exception(self, event: str | None = None, **fields: Any) -> None:
        self._emit("exception", event, fields)


def get_logger(**context: Any) -> Logger:
    return Logger(context)
