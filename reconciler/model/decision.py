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
    """Batches, and so looks at the statistic, at most (``monitor = "batches"``)."""
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
