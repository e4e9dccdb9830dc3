"""The working set of one ``compute_plan`` call, shared by its phases; never outlives it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from reconciler.model import (
    DesiredRun,
    DriftItem,
    DriftKind,
    LockState,
    Observation,
    ObservedRun,
    PlanItem,
    RecordedRun,
    Settings,
    digest,
)

CLOCK_SKEW = timedelta(minutes=10)
"""How far before an intent's ``started_at`` a run may have been created and still be its run:
the intent's time comes from our clock, ``created_at`` from the Platform's."""


@dataclass
class Draft:
    """The three snapshots, what the phases decided so far, and which runs are claimed."""

    desired: dict[str, DesiredRun]
    """Address -> desired run."""
    recorded: LockState
    observed: Observation
    settings: Settings
    unrecorded: list[ObservedRun]
    """Observed runs the lockfile does not know, newest first."""
    items: list[PlanItem] = field(default_factory=list)
    drift: list[DriftItem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)
    """Unrecorded run ids an item already adopted: no second address may claim them."""
    handled: set[str] = field(default_factory=set)
    """Recorded addresses already decided (intent resolved or moved)."""
    creators: frozenset[str] = frozenset()
    """Creators (``creator_digest``) of the runs this lockfile records: an unrecorded run by
    anyone else cannot be one this repository's apply lost track of."""

    @classmethod
    def start(
        cls,
        desired: Sequence[DesiredRun],
        recorded: LockState,
        observed: Observation,
        settings: Settings,
    ) -> Draft:
        known = {entry.run_id for entry in recorded.runs.values() if entry.run_id}
        known |= {
            entry.intent.run_id
            for entry in recorded.runs.values()
            if entry.intent and entry.intent.run_id
        }
        known |= {entry.run_id for entry in recorded.history if entry.run_id}
        unrecorded = sorted(
            (run for run_id, run in observed.runs.items() if run_id not in known),
            key=_newest_first,
        )
        return cls(
            desired={run.address: run for run in desired},
            recorded=recorded,
            observed=observed,
            settings=settings,
            unrecorded=unrecorded,
            creators=frozenset(e.creator for e in recorded.runs.values() if e.creator),
        )

    def run_of(self, entry: RecordedRun) -> ObservedRun | None:
        """The entry's run as observed now; None when it has none or a read said it is gone.

        A recorded run that was not looked at (an incremental observation does not read
        ended runs: they never change) is taken as recorded.
        """
        run_id = entry.run_id
        if run_id is None or run_id in self.observed.missing:
            return None
        run = self.observed.runs.get(run_id)
        if run is not None:
            return run
        return ObservedRun(
            id=run_id,
            name=entry.run_name or "",
            status=entry.status or "",
            benchmark_id=entry.benchmark_id,
            created_at=entry.submitted_at,
            platform_url=entry.platform_url,
            creator=entry.creator,
        )

    def add_drift(
        self, kind: DriftKind, address: str | None, run_id: str | None, message: str
    ) -> None:
        self.drift.append(
            DriftItem(
                kind=kind,
                address=address,
                run_id=run_id,
                message=message,
                fingerprint=drift_fingerprint(kind, address, run_id),
            )
        )


def drift_fingerprint(kind: DriftKind, address: str | None, run_id: str | None) -> str:
    """Stable identity of a drift item: the same drift gives the same fingerprint every plan."""
    return digest([kind.value, address, run_id])


def timestamp(moment: datetime) -> float:
    """Seconds since the epoch; lockfile and Platform times may differ in tz-awareness, and
    naive means UTC here."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _newest_first(run: ObservedRun) -> tuple[float, str]:
    created = timestamp(run.created_at) if run.created_at else float("-inf")
    return (-created, run.id)


def run_label(name: str | None, run_id: str | None) -> str:
    """``name (id)`` when both are known and differ, else whichever is known."""
    if name and run_id and name != run_id:
        return f"{name} ({run_id})"
    return name or run_id or "(no run)"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
