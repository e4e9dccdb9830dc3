"""A decision at minimum cost, as a config's ``[decide]`` table states it (docs/deciding.md).

The table is part of the reviewed config but never part of the request: it is left out
of the submit body and of the config's digest, so adding or editing it never replaces a
run. ``config.decide`` reads and checks it; ``results.sequential`` does the statistics.

This module imports only ``reconciler.model.base`` so that ``model`` can re-export it.
"""

from __future__ import annotations

from reconciler.model.base import Frozen

FUTILITY_RULES = ("equivalence", "none")
"""``equivalence``: stop for *no change of practical size* when the equivalence repeated
CI lies inside ±margin (non-binding); ``none``: stop only for better or worse."""
MONITORS = ("batches", "anytime")
"""``batches``: look after each batch against α-spending boundaries; ``anytime``: a
confidence sequence that may be read after every download (less power)."""
AUTO = "auto"
"""``max_tasks = "auto"``: the fixed design's tasks times the inflation that keeps the power."""


class DecisionSpec(Frozen, frozen=True, kw_only=True):
    """The parameters of one decision (frozen after its first batch: changing them starts
    a new decision, visibly)."""

    margin_pp: float
    """The smallest difference that matters, in points of pass@1 (5 = five points)."""
    seed: int
    """Seeds the task order (a permutation stratified by the catalog's categories)."""
    alpha: float = 0.05
    """The false-alarm rate of *better*/*worse*, two-sided, spent over the looks."""
    power: float = 0.8
    """The chance to see a difference of ``margin_pp`` (sizes the decision)."""
    looks: int = 4
    """Batches, and so looks at the statistic, at most (with ``monitor = "anytime"`` the
    batches the tasks are bought in: the sequence is valid at any of them)."""
    futility: str = "equivalence"
    """One of ``FUTILITY_RULES``."""
    max_tasks: int | None = None
    """Tasks at most; None when written ``"auto"`` (sized from the power calculation)."""
    budget_usd: float | None = None
    """Dollars at most, all batches together; None: no dollar limit of its own."""
    monitor: str = "batches"
    """One of ``MONITORS``."""
    baseline: str | None = None
    """The accepted run to compare with (its config's address), when the config has one
    agent; None when the config's two agents are the two sides."""
    where: str = ""
    """Where the table is written (``benchmarks/a.toml:12``), for messages."""

    @property
    def margin(self) -> float:
        """The margin as a fraction of pass@1 (what the statistics use)."""
        return self.margin_pp / 100.0


DECISION_RECORD_VERSION = 1
"""The version of the lockfile's ``[decisions."ADDR"]`` table (docs/deciding.md)."""


class LookRecord(Frozen, frozen=True, kw_only=True):
    """One look as the lockfile records it: the sums it was computed from (so a replay
    recomputes it exactly) and what it concluded."""

    index: int
    """1-based."""
    tasks: int
    """Completed tasks the look used (a prefix of the order's batches)."""
    total: float
    """``S = Σ d_t`` over those tasks."""
    squares: float
    """``Q = Σ d_t²``."""
    estimate: float
    statistic: float
    boundary: float
    alpha_spent: float
    verdict: str
    """A ``results.sequential.Verdict`` value."""
    final: bool = False
    """Computed as the decision's last look (it spends all of α that is left)."""


class DecisionRecord(Frozen, frozen=True, kw_only=True):
    """A decision's state: its frozen parameters, the task order fixed before any result,
    the batches paid and the looks made."""

    version: int = DECISION_RECORD_VERSION
    spec: DecisionSpec
    """The parameters at the first batch (a changed ``[decide]`` is a new decision)."""
    max_tasks: int
    """The sequential maximum the plan fixed at the first batch."""
    fixed_tasks: int
    """The fixed design's tasks (what ``dollars_saved`` is measured against)."""
    order: tuple[str, ...]
    """Every task, in the seeded stratified order (``results.sequential.task_order``)."""
    batch_ends: tuple[int, ...] = ()
    """Tasks bought after each paid batch (batch ``k`` is ``order[ends[k-1]:ends[k]]``)."""
    batch_runs: tuple[str, ...] = ()
    """Each paid batch's run id, in order."""
    looks: tuple[LookRecord, ...] = ()
    dollars_spent: float = 0.0
    verdict: str = "continue"
    """The last look's verdict (``continue`` until one stops the decision)."""
    reason: str | None = None
    """Why it ended other than by a boundary (a task's checksum changed, budget exhausted)."""
    omega2: float | None = None
    """``monitor = "anytime"``: the variance per task the plan assumed at the first batch;
    it fixes the confidence sequence's mixture ρ (never re-estimated from the results)."""
    baseline_run: str | None = None
    """With ``baseline``: the accepted run of that address the decision compares with,
    fixed at the first batch (a replay reads the same run)."""
    checksums: dict[str, str] | None = None
    """Task -> its ``task_checksum`` as the downloaded results first showed it (the
    baseline run's, at the first batch, with ``baseline``; else its batch's), None while no
    results file had the column: a later batch that shows another checksum for a task, or
    two sides of one batch that disagree, end the decision (``plan.batches``)."""
