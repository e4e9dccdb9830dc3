"""A run's result with its retry runs' attempts in place of its errored ones (pure, given a
reader): ``osmosis-results`` and the plan's retry (``engine.observe``) read it the same way,
so the address has one number on every surface (docs/retrying.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from reconciler.results.data import RunOutcomes, merge_retry
from reconciler.results.runs import RecordedResult

__all__ = ["merged_outcomes"]


def merged_outcomes(
    run: RecordedResult, read: Callable[[RecordedResult], RunOutcomes | None]
) -> tuple[RunOutcomes | None, tuple[str, ...]]:
    """``run``'s outcomes with each of its retries (``run.retries``, oldest first) merged in,
    and the retries left out because their ``results.csv`` is not at hand (their labels).
    A retry is merged only after every earlier one: a later retry re-ran what was still
    errored after them."""
    outcomes = read(run)
    if outcomes is None or not run.retries:
        return outcomes, ()
    left_out: list[str] = []
    for retry in run.retries:
        found = read(retry) if not left_out else None
        if found is None or not found.paired:
            left_out.append(retry.label)
            continue
        outcomes = merge_retry(outcomes, found, retry.retry_agents, retry.label)
    if left_out:
        outcomes = replace(outcomes, retries_left_out=tuple(left_out))
    return outcomes, tuple(left_out)
