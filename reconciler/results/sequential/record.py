"""A decision's looks as the lockfile records them: the next look, the replay that
recomputes every look bit for bit, and the report (pure; docs/deciding.md).

The paired difference of task ``t`` is ``d_t = right_t − left_t``, each side's per-task
pass rate (the mean of its attempts; Miller 2024, recommendation 5 — the task is the
cluster). A look at batch boundary ``k`` uses every task of ``order[:batch_ends[k]]`` that
has both sides' results, and ``looks.look`` compares it with the boundary spent at the
fractions of the looks actually made (Lan & DeMets 1983).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reconciler.model.decision import DecisionRecord, LookRecord
from reconciler.results.data import RunOutcomes
from reconciler.results.sequential.anytime import anytime_look
from reconciler.results.sequential.boundaries import batch_ends
from reconciler.results.sequential.looks import Look, Sums, look
from reconciler.results.sequential.schedule import affordable_tasks

__all__ = [
    "NextBatch",
    "first_difference",
    "look_at",
    "next_batch",
    "baseline_diffs",
    "paired_diffs",
    "record_look",
    "report",
]


def _sums(record: DecisionRecord, diffs: Mapping[str, float], upto: int) -> Sums:
    return Sums.of([diffs[name] for name in record.order[:upto] if name in diffs])


def look_at(
    record: DecisionRecord, diffs: Mapping[str, float], k: int, *, last: bool
) -> LookRecord:
    """Look ``k`` (1-based) after batch ``k``, with the tasks of the earlier looks."""
    sums = _sums(record, diffs, record.batch_ends[k - 1])
    spec = record.spec
    result: Look
    if spec.monitor == "anytime":
        if record.omega2 is None:
            raise ValueError("an anytime decision records its ω² at the first batch")
        # Robbins' normal mixture (Howard, Ramdas, McAuliffe & Sekhon 2021, §3; the
        # design note's "Anytime monitoring"): |Σd| < √((Σd² + ρ) log((Σd² + ρ)/(ρ α²)))
        # at every task with probability ≥ 1 − α, so a look after any batch (or any
        # download) keeps α; ρ is fixed by the recorded max_tasks · ω², never the data.
        result = anytime_look(
            sums,
            max_tasks=record.max_tasks,
            omega2=record.omega2,
            margin=spec.margin,
            alpha=spec.alpha,
            futility=spec.futility == "equivalence",
            last=last,
        )
    else:
        result = look(
            sums,
            [r.tasks for r in record.looks[: k - 1]],
            max_tasks=record.max_tasks,
            margin=spec.margin,
            alpha=spec.alpha,
            futility=spec.futility == "equivalence",
            last=last,
        )
    return LookRecord(
        index=k,
        tasks=sums.tasks,
        total=sums.total,
        squares=sums.squares,
        estimate=result.estimate,
        statistic=result.statistic,
        boundary=result.boundary,
        alpha_spent=result.alpha_spent,
        verdict=result.verdict.value,
        final=last,
    )


def record_look(
    record: DecisionRecord, diffs: Mapping[str, float], *, last: bool
) -> DecisionRecord:
    """The record with the look after its latest batch added, and its verdict."""
    k = len(record.looks) + 1
    if k > len(record.batch_ends):
        raise ValueError(f"look {k} needs batch {k}; {len(record.batch_ends)} paid")
    made = look_at(record, diffs, k, last=last)
    return record.model_copy(update={"looks": (*record.looks, made), "verdict": made.verdict})


_COMPARED = ("tasks", "total", "squares", "estimate", "statistic", "boundary", "alpha_spent")


def first_difference(record: DecisionRecord, diffs: Mapping[str, float]) -> str | None:
    """Recompute every recorded look from ``diffs``; None when each matches bit for bit,
    else the first difference, named (``look 2: statistic recorded 2.1, recomputed 2.3``)."""
    replayed = record.model_copy(update={"looks": ()})
    for recorded in record.looks:
        again = look_at(replayed, diffs, recorded.index, last=recorded.final)
        for field in (*_COMPARED, "verdict"):
            mine, theirs = getattr(recorded, field), getattr(again, field)
            if mine != theirs and not (mine != mine and theirs != theirs):  # NaN == NaN here
                return f"look {recorded.index}: {field} recorded {mine!r}, recomputed {theirs!r}"
        replayed = replayed.model_copy(update={"looks": (*replayed.looks, recorded)})
    return None


def report(record: DecisionRecord, dollars_per_task: float | None = None) -> dict[str, object]:
    """The decision as ``osmosis-results decide --format json`` shows it."""
    used = record.batch_ends[-1] if record.batch_ends else 0
    saved = None
    if dollars_per_task is not None:
        saved = round(max(0.0, record.fixed_tasks * dollars_per_task - record.dollars_spent), 6)
    return {
        "verdict": record.verdict,
        "reason": record.reason,
        "tasks_used": used,
        "max_tasks": record.max_tasks,
        "fixed_tasks": record.fixed_tasks,
        "looks": [
            {field: getattr(r, field) for field in ("index", *_COMPARED, "verdict")}
            for r in record.looks
        ],
        "alpha_spent": record.looks[-1].alpha_spent if record.looks else 0.0,
        "dollars_spent": record.dollars_spent,
        "dollars_saved": saved,
        "batches": len(record.batch_ends),
    }


def paired_diffs(runs: Iterable[RunOutcomes], left: int = 0, right: int = 1) -> dict[str, float]:
    """``d_t = right_t − left_t`` for every task both agents scored in any of ``runs`` (the
    decision's batches: each task is in one batch), each side's per-task pass rate."""
    diffs: dict[str, float] = {}
    for outcomes in runs:
        mine, theirs = outcomes.attempted(left), outcomes.attempted(right)
        for task in sorted(mine.keys() & theirs.keys()):
            a, b = mine[task], theirs[task]
            diffs[task] = b.passes / b.attempts - a.passes / a.attempts
    return diffs


def baseline_diffs(runs: Iterable[RunOutcomes], baseline: RunOutcomes) -> dict[str, float]:
    """``d_t = mine_t − baseline_t`` for a decision with ``baseline``: the config's one
    agent in its batch runs against the accepted run's first agent, each side's per-task
    pass rate (as ``paired_diffs``, the task the cluster)."""
    theirs = baseline.attempted(0)
    diffs: dict[str, float] = {}
    for outcomes in runs:
        mine = outcomes.attempted(0)
        for task in sorted(mine.keys() & theirs.keys()):
            a, b = theirs[task], mine[task]
            diffs[task] = b.passes / b.attempts - a.passes / a.attempts
    return diffs


@dataclass(frozen=True)
class NextBatch:
    """The slice of the order the next paid run buys (its ``task_names``)."""

    index: int
    """1-based: the look that follows it."""
    tasks: tuple[str, ...]
    end: int
    """Tasks bought once it is paid (the look's ``batch_ends`` entry)."""
    last: bool
    """Its look is the decision's last: the planned maximum, or all the budget buys."""


def next_batch(record: DecisionRecord, worst_usd_per_task: float | None) -> NextBatch | None:
    """The next batch of a decision that goes on, within its dollar budget (each task at
    its worst case, ``schedule.affordable_tasks``); None once a look stopped it, the
    planned batches are all paid, or the budget buys no further task."""
    if record.verdict != "continue" or len(record.looks) < len(record.batch_ends):
        return None
    spec = record.spec
    planned = batch_ends(record.max_tasks, min(spec.looks, record.max_tasks))
    k = len(record.batch_ends)
    if k >= len(planned):
        return None
    start = record.batch_ends[-1] if record.batch_ends else 0
    names = record.order[start : planned[k]]
    last = k + 1 == len(planned)
    if spec.budget_usd is not None and worst_usd_per_task is not None:
        fits = affordable_tasks(
            spec.budget_usd, record.dollars_spent, [worst_usd_per_task] * len(names)
        )
        if fits == 0:
            return None
        if fits < len(names):
            names, last = names[:fits], True
    return NextBatch(k + 1, tuple(names), start + len(names), last)
