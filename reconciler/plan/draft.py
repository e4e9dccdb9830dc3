"""The working set of one ``compute_plan`` call, shared by its phases; never outlives it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from reconciler.model import (
    BenchmarkInfo,
    DecisionRecord,
    DesiredRun,
    DriftItem,
    DriftKind,
    GeneratorProduct,
    LockState,
    Observation,
    ObservedRun,
    PlanItem,
    RecordedRun,
    Settings,
    SmokeStage,
    canonical_digest,
    digest,
    recorded_benchmark,
)
from reconciler.plan.cost import CostSample, cost_table

M = TypeVar("M", DesiredRun, RecordedRun)

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
    raw_digests: dict[str, str] = field(default_factory=dict)
    """Address -> the config's plain spec digest (what a saved plan's staleness check uses);
    ``desired`` carries the canonical one (``model.canonical_digest``)."""
    costs: dict[str, tuple[CostSample, ...]] = field(default_factory=dict)
    """``plan.cost.cost_table`` of the recorded runs."""
    creators: frozenset[str] = frozenset()
    """Creators (``creator_digest``) of the runs this lockfile records: an unrecorded run by
    anyone else cannot be one this repository's apply lost track of."""
    generators: tuple[GeneratorProduct, ...] = ()
    """What each run generator expanded to (``plan.generators``)."""
    errors: list[str] = field(default_factory=list)
    """Guard violations found by a phase before ``guards`` (the generator guard, policy)."""
    decisions: dict[str, DecisionRecord] = field(default_factory=dict)
    """Address -> its decision record as apply is to write it (``plan.batches``)."""

    @classmethod
    def start(
        cls,
        desired: Sequence[DesiredRun],
        recorded: LockState,
        observed: Observation,
        settings: Settings,
        generators: Sequence[GeneratorProduct] = (),
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
            desired={run.address: canonical_desired(run, observed) for run in desired},
            recorded=canonical_state(recorded, observed, desired),
            observed=observed,
            settings=settings,
            unrecorded=unrecorded,
            raw_digests={run.address: run.spec_digest for run in desired},
            creators=frozenset(e.creator for e in recorded.runs.values() if e.creator),
            costs=cost_table(recorded),
            generators=tuple(generators),
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


def canonical_desired(run: DesiredRun, observed: Observation) -> DesiredRun:
    """``run`` with its canonical spec digest (the benchmark by its resolved id)."""
    info = observed.benchmarks.get(run.benchmark)
    if info is None:
        return run
    canonical = canonical_digest(run.spec, info.id)
    return run if canonical == run.spec_digest else _with_digest(run, canonical)


def _with_digest(model: M, spec_digest: str) -> M:
    """``model`` with another ``spec_digest``."""
    return model.model_copy(update={"spec_digest": spec_digest})


def canonical_state(
    state: LockState, observed: Observation, desired: Sequence[DesiredRun] = ()
) -> LockState:
    """``state`` with every entry's spec digest in canonical form, computed from the body
    it recorded: lockfiles written before digests were canonical keep working (they are
    migrated on read, and rewritten canonical by the next apply). An entry that kept no
    body but records the plain digest of its config now takes that config's canonical one."""
    wanted = {run.address: run for run in desired}
    runs = {}
    changed = False
    for address, entry in state.runs.items():
        canonical = recorded_digest(entry, observed.benchmarks)
        same = wanted.get(address)
        if not entry.spec and same is not None and entry.spec_digest == same.spec_digest:
            canonical = canonical_desired(same, observed).spec_digest
        if canonical != entry.spec_digest:
            entry = _with_digest(entry, canonical)
            changed = True
        runs[address] = entry
    return state.model_copy(update={"runs": runs}) if changed else state


def recorded_digest(entry: RecordedRun, benchmarks: Mapping[str, BenchmarkInfo | None]) -> str:
    """The canonical digest of what ``entry`` recorded (its stored digest when its body was
    not kept or its benchmark cannot be resolved). A smoke run's entry records the digest of
    the full config it smoke-tests, not of its narrowed body: that one is kept."""
    if not entry.spec or entry.stage == SmokeStage.SMOKE or entry.retry_of is not None:
        # A retry run's entry likewise records its config's digest beside its narrowed body.
        return entry.spec_digest
    benchmark_id = entry.benchmark_id
    if benchmark_id is None:
        written = recorded_benchmark(entry.spec)
        info = benchmarks.get(written) if written else None
        benchmark_id = info.id if info is not None else None
    if benchmark_id is None:
        return entry.spec_digest
    return canonical_digest(entry.spec, benchmark_id)


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
