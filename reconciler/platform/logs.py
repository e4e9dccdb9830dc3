"""A run's log lines as people read them, and the last error lines that say why a run ended
badly: shared by ``osmosis-logs``, apply's and ``osmosis-results``' explanation of a failed
run, and the plan's blocked full run after a smoke run that did not end well.
"""

from __future__ import annotations

from reconciler.platform.client import PlatformClient
from reconciler.platform.models import LogEntry
from reconciler.redact import redact

__all__ = ["LEVELS", "PAGE_MAX", "last_error_lines", "level_rank", "line_text"]

LEVELS = ("debug", "info", "warning", "error")
PAGE_MAX = 200
"""The most lines one log page (E6) returns."""


def level_rank(level: str) -> int:
    """A log level's place in ``LEVELS`` (aliases such as ``warn`` and ``fatal`` folded in;
    an unknown level counts as ``info``)."""
    text = level.lower()
    text = {"warn": "warning", "err": "error", "critical": "error", "fatal": "error"}.get(
        text, text
    )
    return LEVELS.index(text) if text in LEVELS else 1


def line_text(entry: LogEntry) -> str:
    """One log line as people read it; any registered secret value is redacted (a log line
    is the Platform's text, and may echo what an agent was given)."""
    return redact(f"{entry.timestamp} {entry.level.upper():7} [{entry.step}] {entry.message}")


def last_error_lines(
    client: PlatformClient, run_id: str, *, count: int = 3, scan: int = PAGE_MAX
) -> list[str]:
    """The last ``count`` warning-or-worse lines of a run's log (from its newest ``scan``
    lines): why a failed run failed, without reading the whole log."""
    page = client.get_logs(run_id, limit=scan, direction="older")
    worst = [e for e in page.entries if level_rank(e.level) >= level_rank("error")]
    if not worst:
        worst = [e for e in page.entries if level_rank(e.level) >= level_rank("warning")]
    return [line_text(e) for e in worst[-count:]]
