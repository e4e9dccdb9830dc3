"""Run statuses: the one vocabulary, with the behaviour every layer asks of it.

``RunStatus`` holds the six statuses the Platform reports (platform-api.md §5) and
``UNKNOWN`` for anything else: a string this version does not know, or no status recorded
yet. Ask a status what it means (``is_active``, ``is_terminal``, ``is_unsuccessful``,
``may_have_outputs``) instead of testing strings against sets.

The models keep the Platform's status *string* (an unknown one is kept as it came, and
the lockfile records it byte for byte); ``RunStatus.of(text)`` reads it.

The command-line layer imports it inside the functions that run after a command's work,
so its start-up does not load the model classes (``tests/unit/test_run_status.py``).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class RunStatus(StrEnum):
    """A run's status, and what it implies for planning, downloads and reports."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    STOPPED = "stopped"
    UNKNOWN = "unknown"
    """Not a status the Platform reports: a string this version does not know, or none."""

    @classmethod
    def parse(cls, value: str | None) -> RunStatus | None:
        """The reported status ``value`` names, or None for anything else."""
        if value is None:
            return None
        try:
            status = cls(value)
        except ValueError:
            return None
        return None if status is cls.UNKNOWN else status

    @classmethod
    def of(cls, value: str | None) -> RunStatus:
        """The status ``value`` names; ``UNKNOWN`` for an unknown string or None."""
        return cls.parse(value) or cls.UNKNOWN

    @classmethod
    def reported(cls) -> tuple[RunStatus, ...]:
        """The statuses the Platform reports, in lifecycle order (without ``UNKNOWN``)."""
        return tuple(status for status in cls if status is not cls.UNKNOWN)

    @property
    def is_terminal(self) -> bool:
        """Ended: the status never changes again."""
        return self in _TERMINAL

    @property
    def is_active(self) -> bool:
        """Still costs money or may still change.

        ``UNKNOWN`` counts as active: the Platform may have added a new in-flight state,
        and treating it as ended could trigger a duplicate paid submit.
        """
        return not self.is_terminal

    @property
    def is_unsuccessful(self) -> bool:
        """Ended without results to trust (failed or stopped): shown with ``RERUN_HINT``."""
        return self in _UNSUCCESSFUL

    @property
    def may_have_outputs(self) -> bool:
        """Started (or unknown): outputs may be downloadable; pending and queued runs have
        none yet."""
        return self not in _NOT_STARTED


_TERMINAL = frozenset({RunStatus.FINISHED, RunStatus.FAILED, RunStatus.STOPPED})
_UNSUCCESSFUL = frozenset({RunStatus.FAILED, RunStatus.STOPPED})
_NOT_STARTED = frozenset({RunStatus.PENDING, RunStatus.QUEUED})

OUTPUTS_DUE_STATUSES = frozenset({RunStatus.FINISHED, RunStatus.FAILED})
"""A run that ran to its end on its own: its outputs are results to keep (a run stopped
because its config went has nothing worth a download)."""

RERUN_HINT = (
    "re-run it with `osmosis-apply --replace {address}`, or from CI with an empty commit: "
    '`git commit --allow-empty -m "Re-run {address}" -m "Osmosis-Rerun: {address}"`'
)
"""What to do about a run that ended unsuccessfully (``{address}`` is filled in)."""


class DecisionStatus(msgspec.Struct, frozen=True, kw_only=True):
    """Where an address's decision stands (``[decisions."ADDR"]`` in the lockfile)."""

    verdict: str
    """``continue`` while it buys batches; better, worse, no change or inconclusive."""
    reason: str | None = None
    """Why it ended other than at a boundary (a task's checksum changed, the budget)."""
    tasks_used: int = 0
    max_tasks: int = 0
    looks: int = 0
    alpha_spent: float = 0.0
    monitor: str = "batches"

    def describe(self) -> str:
        """One cell: ``better: 41 of 82 tasks, 2 look(s), α spent 0.0056``."""
        text = (
            f"{self.verdict}: {self.tasks_used} of {self.max_tasks} tasks, {self.looks} "
            f"look(s), α spent {self.alpha_spent:.4f}"
        )
        return f"{text} ({self.reason})" if self.reason else text


class AddressStatus(msgspec.Struct, frozen=True, kw_only=True):
    """One address: its recorded run and what is pending for it."""

    address: str
    run: str | None = None
    """The recorded run's name (its id when it has none); None before any run."""
    run_id: str | None = None
    status: str | None = None
    """The run's status: as the Platform says now when this status read it, else as recorded."""
    downloaded: bool | None = None
    """Whether the run's outputs are recorded as downloaded in full; None while there is no
    ended run to download."""
    baseline: str | None = None
    """The accepted baseline run (``osmosis-results accept``), when the address has one."""
    verdict: str | None = None
    """The newest run against the baseline (better, worse, no change, inconclusive), or why
    there is none (``is the baseline``, ``no results on disk``); None without a baseline."""
    decision: DecisionStatus | None = None
    """Its decision at minimum cost, when its config has ``[decide]`` and one is recorded."""
    pending: tuple[str, ...] = ()
    """What a plan would do for it now (``submit``, ``download``, ...), in plan order."""
    blocked: str | None = None
    """Why the plan cannot do what it would (a secret missing, ...); None when not blocked."""
