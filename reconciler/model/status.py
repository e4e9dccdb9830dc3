"""Run statuses: which ones are active, terminal, or ended without results to trust."""

from __future__ import annotations

from reconciler.hints import RERUN_HINT, UNSUCCESSFUL_STATUSES  # noqa: F401 (re-exported)

ACTIVE_STATUSES = frozenset({"pending", "queued", "running"})
TERMINAL_STATUSES = frozenset({"finished", "failed", "stopped"})
NOT_DOWNLOADABLE_STATUSES = frozenset({"pending", "queued"})


def is_terminal(status: str) -> bool:
    """Terminal statuses never change again."""
    return status in TERMINAL_STATUSES


def is_active(status: str) -> bool:
    """A run that still costs money or may still change.

    Unknown status strings count as active: the Platform may have added a new in-flight
    state, and treating it as terminal could trigger a duplicate paid submit.
    """
    return status not in TERMINAL_STATUSES
