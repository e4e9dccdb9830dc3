"""A decision's batches as ordinary runs (docs/deciding.md, "How a decision runs") (pure).

Runs before ``diff``: each desired run with ``[decide]`` becomes the run of its current
batch, ``tasks_config = {task_names = <the batch's slice of the order>}``, so the diff
plans it exactly like any config: a submit when the batch is new (intents, the twin
guard, the pay-once path and its crash points are the ordinary ones), nothing while it
runs, a download once it ended. The decision's state moves on here, and the plan carries
the new record (``Plan.decisions``) for apply to write through the lockfile's door:

* no record, or a ``[decide]`` changed before the first look: a new decision, its order
  fixed now (``task_order``, before any result) and its first batch;
* the current batch's run ended and its per-task outcomes are on disk
  (``Observation.task_counts``, read from the kept ``results.csv`` after the download):
  the look (``record_look``), then the next batch (``next_batch``) or the verdict, unless
  its results show a task's ``task_checksum`` changed (``task_checksums``): the decision
  then ends inconclusive with that reason, unlooked at;
* otherwise the current batch, unchanged (its run id added once the lockfile has it).

Batch ``k`` is in flight while ``len(looks) == len(batch_ends) - 1``; a record is
written before the batch's submit intent, so a crash between the two leaves the same
batch planned again, and the intent resolution of the ordinary submit pays it once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from reconciler.model import DesiredRun, RunStatus, canonical_digest
from reconciler.model.decision import DecisionRecord, DecisionSpec
from reconciler.model.observed import TaskCounts
from reconciler.plan.cost import estimate
from reconciler.plan.draft import Draft
from reconciler.results.runs import accepted_run, address_runs

__all__ = ["baseline_count_diffs", "count_diffs", "shape_batches", "slice_of", "task_checksums"]

BUDGET_SPENT = "the budget buys no further task"


def _frozen(spec: DecisionSpec) -> DecisionSpec:
    """The parameters that make a decision (where the table is written does not)."""
    return spec.model_copy(update={"where": ""})


def slice_of(record: DecisionRecord, k: int) -> tuple[str, ...]:
    """Batch ``k``'s tasks (1-based)."""
    start = record.batch_ends[k - 2] if k > 1 else 0
    return record.order[start : record.batch_ends[k - 1]]


def count_diffs(counts: Iterable[TaskCounts], left: int = 0, right: int = 1) -> dict[str, float]:
    """``d_t = right_t − left_t`` from recorded per-task counts, as
    ``results.sequential.record.paired_diffs`` computes it from the downloaded results
    (the same passes over attempts, errored attempts counted: a replay matches)."""
    diffs: dict[str, float] = {}
    for run in counts:
        mine, theirs = run.agents.get(left, {}), run.agents.get(right, {})
        for task in sorted(mine.keys() & theirs.keys()):
            (a_pass, a_n), (b_pass, b_n) = mine[task], theirs[task]
            if a_n and b_n:
                diffs[task] = b_pass / b_n - a_pass / a_n
    return diffs


def baseline_count_diffs(counts: Iterable[TaskCounts], baseline: TaskCounts) -> dict[str, float]:
    """``d_t = mine_t − baseline_t`` from recorded per-task counts (the config's one agent
    against the accepted run's first agent), as ``results.sequential.record.baseline_diffs``
    computes it from the downloaded results."""
    theirs = baseline.agents.get(0, {})
    diffs: dict[str, float] = {}
    for run in counts:
        mine = run.agents.get(0, {})
        for task in sorted(mine.keys() & theirs.keys()):
            (a_pass, a_n), (b_pass, b_n) = theirs[task], mine[task]
            if a_n and b_n:
                diffs[task] = b_pass / b_n - a_pass / a_n
    return diffs


def _selection(draft: Draft, wanted: DesiredRun) -> dict[str, str | None] | None:
    """Task -> category of the config's selection, from the catalog; None when the
    catalog does not list its tasks or the selection is a task set (not supported yet)."""
    info = draft.observed.benchmarks.get(wanted.benchmark)
    if info is None or not info.tasks or wanted.task_set:
        return None
    tasks = dict(info.tasks)
    if wanted.task_names:
        return {name: tasks.get(name) for name in wanted.task_names if name in tasks}
    if wanted.categories:
        chosen = set(wanted.categories)
        return {name: cat for name, cat in tasks.items() if cat in chosen}
    return tasks


def _batch_run(wanted: DesiredRun, tasks: tuple[str, ...], benchmark_id: str | None) -> DesiredRun:
    spec = dict(wanted.spec)
    spec["tasks_config"] = {"task_names": list(tasks)}
    return wanted.model_copy(
        update={
            "spec": spec,
            "spec_digest": canonical_digest(spec, benchmark_id),
            "task_names": tasks,
            "task_set": None,
            "categories": None,
        }
    )


def _worst_per_task(draft: Draft, wanted: DesiredRun) -> float | None:
    cost = estimate(wanted, None, 1, draft.costs)
    return cost.high if cost is not None else None


def _new_record(
    draft: Draft, wanted: DesiredRun, spec: DecisionSpec
) -> tuple[DecisionRecord | None, str | None]:
    """A new decision's record (its order fixed now, before any result), or why it cannot
    start (an error for the plan)."""
    # Here, not at the top: a plan without a decision never loads the statistics.
    from reconciler.plan.decision import design_of
    from reconciler.results.sequential import task_order

    selection = _selection(draft, wanted)
    if not selection or len(selection) < 2:
        return None, None
    baseline_run = None
    if spec.baseline is not None:
        run = accepted_run(draft.recorded, spec.baseline)
        counts = draft.observed.task_counts.get(run.run_id) if run is not None else None
        scored = counts.agents.get(0, {}) if counts is not None else {}
        if run is None or not scored:
            return None, (
                f"{wanted.address}: decide.baseline {spec.baseline!r} has no finished run "
                f"with downloaded results to compare with ({spec.where or wanted.path}); "
                f"run osmosis-apply --wait for {spec.baseline} first, or accept one of its "
                f"runs (osmosis-results accept {spec.baseline}@RUN)"
            )
        # Only the tasks the accepted run scored can be paired: the order is drawn from them.
        selection = {name: cat for name, cat in selection.items() if name in scored}
        if len(selection) < 2:
            return None, (
                f"{wanted.address}: decide.baseline {spec.baseline!r}: its run "
                f"{run.label} scored fewer than two of this config's tasks"
            )
        baseline_run = run.run_id
    order = task_order(selection, spec.seed)
    design = design_of(draft, wanted, spec, len(order))
    checksums: dict[str, str] = {}
    if baseline_run is not None:
        # The accepted run's results show the tasks as it ran them: each batch must too.
        stated = draft.observed.task_counts[baseline_run].checksums.get(0, {})
        checksums = {name: stated[name] for name in order if name in stated}
    return (
        DecisionRecord(
            spec=_frozen(spec),
            max_tasks=min(design.max_tasks, len(order)),
            fixed_tasks=design.fixed_tasks,
            order=order,
            omega2=design.omega2 if spec.monitor == "anytime" else None,
            baseline_run=baseline_run,
            checksums=checksums or None,
        ),
        None,
    )


def task_checksums(
    record: DecisionRecord, batches: Sequence[TaskCounts]
) -> tuple[dict[str, str], str | None]:
    """Every task's checksum as the downloaded batches' results show it (batch ``k`` is
    ``batches[k - 1]``), added to those recorded (the first seen is kept), and why the
    decision must end, or None: a task whose checksum differs from the one recorded, or
    whose two sides in one batch ran different checksums, is no longer the task the other
    side (or the baseline run) was scored on, so its difference measures nothing. Results
    without a ``task_checksum`` column check nothing."""
    known = dict(record.checksums or {})
    for k, counts in enumerate(batches, start=1):
        for name in record.order:
            sides = [counts.checksums[agent].get(name) for agent in sorted(counts.checksums)]
            stated = sorted({c for c in sides if c is not None})
            if len(stated) > 1:
                return known, (
                    f"task {name}'s checksum differs between the sides of batch {k} "
                    f"({', '.join(stated)})"
                )
            if not stated:
                continue
            was = known.setdefault(name, stated[0])
            if was != stated[0]:
                return known, (
                    f"task {name}'s checksum changed (recorded {was}, batch {k}'s results "
                    f"show {stated[0]})"
                )
    return known, None


def _dollars(draft: Draft, address: str, runs: tuple[str, ...]) -> float:
    wanted = set(runs)
    total = 0.0
    for run in address_runs(draft.recorded, address):
        if run.run_id in wanted and run.results and run.results.total_cost_usd:
            total += run.results.total_cost_usd
    return total


def _current_run(draft: Draft, record: DecisionRecord, address: str) -> tuple[str, str] | None:
    """The in-flight batch's run (id, status) as the lockfile records it, if any."""
    k = len(record.batch_ends)
    if len(record.batch_runs) >= k:
        run_id = record.batch_runs[k - 1]
        for run in address_runs(draft.recorded, address):
            if run.run_id == run_id:
                return run_id, run.status or ""
        return run_id, ""
    entry = draft.recorded.runs.get(address)
    if entry is None or entry.run_id is None or entry.intent is not None:
        return None
    names = (entry.spec.get("tasks_config") or {}).get("task_names")
    if names != list(slice_of(record, k)):
        return None
    observed = draft.observed.runs.get(entry.run_id)
    return entry.run_id, (observed.status if observed else entry.status) or ""


def _advance(
    draft: Draft, wanted: DesiredRun, record: DecisionRecord
) -> tuple[DecisionRecord, list[str]]:
    """The record after what happened since it was written, and what to say about it."""
    from reconciler.results.sequential.record import next_batch, record_look

    notes: list[str] = []
    address = wanted.address
    per_task = _worst_per_task(draft, wanted)
    if not record.batch_ends:
        batch = next_batch(record, per_task)
        if batch is None:
            return record.model_copy(update={"verdict": "inconclusive", "reason": BUDGET_SPENT}), [
                f"{address}: decision inconclusive: {BUDGET_SPENT}"
            ]
        return record.model_copy(update={"batch_ends": (batch.end,)}), notes
    if len(record.looks) == len(record.batch_ends) or record.verdict != "continue":
        return record, notes  # it stopped
    current = _current_run(draft, record, address)
    if current is None:
        return record, notes
    run_id, status = current
    if len(record.batch_runs) < len(record.batch_ends):
        record = record.model_copy(update={"batch_runs": (*record.batch_runs, run_id)})
    counts = draft.observed.task_counts
    if not RunStatus.of(status).is_terminal or run_id not in counts:
        return record, notes
    if any(r not in counts for r in record.batch_runs):
        return record, notes
    if record.baseline_run is not None:
        if record.baseline_run not in counts:
            return record, notes
        diffs = baseline_count_diffs(
            (counts[r] for r in record.batch_runs), counts[record.baseline_run]
        )
    else:
        diffs = count_diffs(counts[r] for r in record.batch_runs)
    record = record.model_copy(
        update={"dollars_spent": _dollars(draft, address, record.batch_runs)}
    )
    checksums, changed = task_checksums(record, [counts[r] for r in record.batch_runs])
    record = record.model_copy(update={"checksums": checksums or None})
    if changed is not None:
        # No look at this batch, and no further batch: a changed task ends the decision.
        ended = record.model_copy(update={"verdict": "inconclusive", "reason": changed})
        return ended, [f"{address}: decision ends inconclusive: {changed}"]
    k = len(record.batch_ends)
    planned = _planned_ends(record)
    last = k >= len(planned) or record.batch_ends[-1] < planned[k - 1]
    record = record_look(record, diffs, last=last)
    made = record.looks[-1]
    notes.append(
        f"{address}: decision look {made.index}: {made.tasks} tasks, statistic "
        f"{made.statistic:+.3f} vs boundary ±{made.boundary:.3f}, α spent "
        f"{made.alpha_spent:.4f}: {made.verdict}"
    )
    if record.verdict != "continue":
        return record, notes
    batch = next_batch(record, per_task)
    if batch is None:
        record = record.model_copy(update={"verdict": "inconclusive", "reason": BUDGET_SPENT})
        notes.append(f"{address}: decision inconclusive: {BUDGET_SPENT}")
        return record, notes
    record = record.model_copy(update={"batch_ends": (*record.batch_ends, batch.end)})
    return record, notes


def _planned_ends(record: DecisionRecord) -> tuple[int, ...]:
    from reconciler.results.sequential import batch_ends

    return tuple(batch_ends(record.max_tasks, min(record.spec.looks, record.max_tasks)))


def shape_batches(draft: Draft) -> None:
    """Turn each desired run with ``[decide]`` into its current batch's run, and put the
    decision records that changed in ``draft.decisions``."""
    recorded: Mapping[str, DecisionRecord] = draft.recorded.decisions
    for address, wanted in list(draft.desired.items()):
        spec = wanted.decide
        if spec is None:
            continue
        record = recorded.get(address)
        if record is not None and record.spec != _frozen(spec):
            if record.looks:
                draft.warnings.append(
                    f"{address}: [decide] changed after {len(record.looks)} look(s): its "
                    "parameters are frozen, so a new decision starts (the old one's looks "
                    "stay in the history of the lockfile's git log)"
                )
            record = None
        if record is None:
            record, error = _new_record(draft, wanted, spec)
            if error is not None:
                draft.errors.append(error)
            if record is None:
                continue
        advanced, notes = _advance(draft, wanted, record)
        draft.warnings.extend(notes)
        if advanced != recorded.get(address):
            draft.decisions[address] = advanced
        if advanced.batch_ends:
            info = draft.observed.benchmarks.get(wanted.benchmark)
            tasks = slice_of(advanced, len(advanced.batch_ends))
            draft.desired[address] = _batch_run(wanted, tasks, info.id if info else None)
