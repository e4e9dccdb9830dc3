"""Pure edits of a recorded state's entries and history (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import get_args

from reconciler.model import (
    OUTPUTS_DUE_STATUSES,
    HistoryEntry,
    HistoryReason,
    LockState,
    RecordedRun,
    SmokeStage,
    model_identity,
    selection_digest,
    spec_pass_threshold,
)

HISTORY_LIMIT_PER_ADDRESS = 20
"""At most this many ``[[history]]`` entries are kept per address (the newest)."""


_REASONS: dict[str, HistoryReason] = {reason: reason for reason in get_args(HistoryReason)}
HISTORY_REASONS = frozenset(_REASONS)
"""Every ``HistoryReason``; ``smoke``: a smoke run that left its address to the full run
(or to a new smoke run)."""


def history_reason(reason: str) -> HistoryReason:
    """``reason`` as a ``HistoryReason``; ``ValueError`` when it is none."""
    try:
        return _REASONS[reason]
    except KeyError:
        raise ValueError(f"unknown history reason {reason!r}") from None


def cap_history(
    history: Iterable[HistoryEntry], limit: int = HISTORY_LIMIT_PER_ADDRESS
) -> tuple[HistoryEntry, ...]:
    """Keep the first (newest) ``limit`` entries of each address, preserving order."""
    counts: dict[str, int] = {}
    kept = []
    for entry in history:
        seen = counts.get(entry.address, 0)
        if seen < limit:
            kept.append(entry)
        counts[entry.address] = seen + 1
    return tuple(kept)


def add_history(state: LockState, entry: HistoryEntry) -> LockState:
    """Prepend ``entry`` (history is newest first) and cap the address's history."""
    if entry.reason not in HISTORY_REASONS:
        raise ValueError(f"unknown history reason {entry.reason!r}")
    return state.model_copy(update={"history": cap_history((entry, *state.history))})


OUTPUTS_DUE_REASONS = frozenset({"replaced", "rerun", "forgotten", "stopped", "retried"})
"""History reasons after which an ended run's outputs are still fetched (``moved`` carries
the run on under its new address; ``lost`` has no run to fetch from)."""


def history_entry(
    run: RecordedRun, reason: str, ended_at: datetime | None, address: str | None = None
) -> HistoryEntry:
    downloaded = run.downloads is not None and run.downloads.complete
    pending = (
        reason in OUTPUTS_DUE_REASONS
        and run.run_id is not None
        and run.status in OUTPUTS_DUE_STATUSES
        and not downloaded
        and run.stage != SmokeStage.SMOKE  # a smoke run's outputs are not the address's
    )
    per_task = run.attempts_per_task
    return HistoryEntry(
        outputs_pending=True if pending else None,
        benchmark_id=run.benchmark_id,
        models=tuple(
            model_identity((agent or {}).get("model") or {})
            for agent in run.spec.get("agents") or []
        )
        or None,
        attempts_per_task=per_task if per_task > 1 else None,
        address=address or run.address,
        run_id=run.run_id,
        run_name=run.run_name,
        spec_digest=run.spec_digest,
        status=run.status,
        submitted_at=run.submitted_at,
        ended_at=ended_at,
        reason=history_reason(reason),
        requested_by=run.requested_by,
        results=None if run.stage == SmokeStage.SMOKE else run.results,
        task_count=run.task_count,
        selection=selection_digest(run.spec) if run.spec else None,
        stage=run.stage,
        retry_of=run.retry_of,
        retry_agents=run.retry_agents,
        # A run recorded before its threshold was still has its config's in the body.
        pass_threshold=(
            run.pass_threshold if run.pass_threshold is not None else spec_pass_threshold(run.spec)
        ),
    )


def put_run(state: LockState, run: RecordedRun) -> LockState:
    """Insert or replace the entry of ``run.address``."""
    return state.model_copy(update={"runs": {**state.runs, run.address: run}})


def retire_run(
    state: LockState,
    address: str,
    reason: str,
    *,
    ended_at: datetime | None = None,
    replacement: RecordedRun | None = None,
) -> LockState:
    """Move the entry of ``address`` to history (``replaced``, ``rerun``, ``forgotten``,
    ``lost``), then store ``replacement`` at the address or drop the address.

    An entry that never got a run id (an intent that was resolved as "nothing created")
    leaves no history: there is no run to remember.
    """
    runs = dict(state.runs)
    old = runs.pop(address, None)
    if replacement is not None:
        if replacement.address != address:
            raise ValueError("replacement must have the same address")
        runs[address] = replacement
    new = state.model_copy(update={"runs": runs})
    if old is not None and old.run_id is not None:
        new = add_history(new, history_entry(old, reason, ended_at))
    return new


def rekey_run(
    state: LockState, old_address: str, new_address: str, *, ended_at: datetime | None = None
) -> LockState:
    """Re-key an entry after a config rename (plan action ``move``), without a Platform call.

    The old address gets a ``moved`` history entry so ``git log`` readers of the lockfile
    can follow the run; the run itself carries on under the new address.
    """
    if old_address not in state.runs:
        raise KeyError(old_address)
    if new_address in state.runs:
        raise ValueError(f"{new_address} already has a recorded run")
    runs = dict(state.runs)
    run = runs.pop(old_address)
    runs[new_address] = run.model_copy(update={"address": new_address})
    new = state.model_copy(update={"runs": runs})
    if run.run_id is not None:
        new = add_history(new, history_entry(run, "moved", ended_at, address=old_address))
    return new
