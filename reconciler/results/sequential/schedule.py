"""The order tasks are bought in and the batches a dollar budget allows (pure)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence


def task_order(categories: Mapping[str, str | None], seed: int) -> tuple[str, ...]:
    """Every task once, in a seeded order stratified by category: each prefix holds every
    category in about its share of the catalog (jittered systematic allocation: the ``i``-th
    of a category's ``n_c`` tasks, in a seeded shuffle, sorts at ``(i + u) / n_c`` with
    ``u`` uniform). Depends only on ``random.random``, whose sequence for a seed Python
    keeps across versions, and on the sorted names, not on the mapping's order."""
    rng = random.Random(seed)
    by_category: dict[str, list[str]] = {}
    for name in sorted(categories):
        by_category.setdefault(categories[name] or "", []).append(name)
    keyed: list[tuple[float, str, str]] = []
    for category in sorted(by_category):
        names = by_category[category]
        for i in range(len(names) - 1, 0, -1):  # Fisher–Yates on random() alone
            j = int(rng.random() * (i + 1))
            names[i], names[j] = names[j], names[i]
        count = len(names)
        for i, name in enumerate(names):
            keyed.append(((i + rng.random()) / count, category, name))
    keyed.sort()
    return tuple(name for _, _, name in keyed)


def _nano_up(usd: float) -> int:
    """Nanodollars, rounded up past the product's own rounding (never below ``usd``)."""
    return math.ceil(usd * 1e9) + 1


def _nano_down(usd: float) -> int:
    """Nanodollars, rounded down past the product's own rounding (never above ``usd``)."""
    return math.floor(usd * 1e9) - 1


def affordable_tasks(budget_usd: float, spent_usd: float, worst_usd: Sequence[float]) -> int:
    """How many of the next tasks (their worst-case dollars, in order) fit in what is left
    of the budget: the longest prefix whose worst cases sum to at most
    ``budget_usd − spent_usd``. Summed in whole nanodollars, each cost rounded up and the
    budget down, so float rounding cannot let a batch through by a hair: a batch planned
    this way cannot overshoot the budget when no attempt costs more than its worst case."""
    left = _nano_down(budget_usd) - _nano_up(spent_usd)
    total = 0
    for count, cost in enumerate(worst_usd):
        if not cost >= 0:
            raise ValueError(f"a worst-case cost must be a non-negative number, got {cost!r}")
        total += _nano_up(cost)
        if total > left:
            return count
    return len(worst_usd)
