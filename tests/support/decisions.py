"""A simulated decision (issue 39): two agents, 3 attempts per task, the second better by a
fixed shift on every task; paid batch after batch until a verdict.

``tests/unit/test_decide_record.py`` checks the statistics on it, and
``tests/integration/test_decide_replay.py`` replays it from a lockfile holding it, beside
the batches' ``results.csv`` files.
"""

from __future__ import annotations

import random

from reconciler.model import DecisionRecord, DecisionSpec
from reconciler.results.sequential import batch_ends, design, task_order
from reconciler.results.sequential.record import record_look

TASKS = 400
ATTEMPTS = 3
Attempts = dict[str, tuple[tuple[bool, ...], tuple[bool, ...]]]
"""Each task's attempts, ``(left, right)``: passed or not, one per attempt."""


def attempts(shift: float, seed: int) -> Attempts:
    """Each task's attempts, ``(left, right)``, each ``ATTEMPTS`` passes or fails; the right
    agent passes with ``shift`` more chance than the left on every task."""
    rng = random.Random(seed)
    found = {}
    for t in range(TASKS):
        base = rng.uniform(0.1, 0.8)
        left = tuple(rng.random() < base for _ in range(ATTEMPTS))
        right = tuple(rng.random() < min(1.0, base + shift) for _ in range(ATTEMPTS))
        found[f"task-{t:03d}"] = (left, right)
    return found


def per_task_diffs(shift: float, seed: int) -> dict[str, float]:
    """``d_t``, the right agent's pass rate minus the left's, of ``attempts(shift, seed)``."""
    return {
        task: sum(right) / ATTEMPTS - sum(left) / ATTEMPTS
        for task, (left, right) in attempts(shift, seed).items()
    }


def start(spec: DecisionSpec) -> DecisionRecord:
    """The decision before its first batch: its design and its task order."""
    plan = design(margin=spec.margin, omega2=0.143, looks=spec.looks)
    categories = {f"task-{t:03d}": f"c{t % 4}" for t in range(TASKS)}
    return DecisionRecord(
        spec=spec,
        max_tasks=min(plan.max_tasks, TASKS),
        fixed_tasks=plan.fixed_tasks,
        order=task_order(categories, spec.seed),
    )


def pay_all(record: DecisionRecord, diffs: dict[str, float], usd_per_task: float) -> DecisionRecord:
    """Pay batch after batch (run ``run-K`` for batch K), looking after each, until a
    verdict."""
    ends = batch_ends(record.max_tasks, record.spec.looks)
    while record.verdict == "continue":
        k = len(record.batch_ends)
        paid = ends[k] - (record.batch_ends[-1] if record.batch_ends else 0)
        record = record.model_copy(
            update={
                "batch_ends": (*record.batch_ends, ends[k]),
                "batch_runs": (*record.batch_runs, f"run-{k + 1}"),
                "dollars_spent": record.dollars_spent + paid * usd_per_task,
            }
        )
        record = record_look(record, diffs, last=k + 1 == len(ends))
    return record
