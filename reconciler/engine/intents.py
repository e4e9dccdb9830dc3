"""What a paid action writes to the lockfile around its Platform call.

The executor (``engine/executor.py``) writes a submit's intent before the POST and records
the run after it (style rule 8); these are those state edits, as pure functions of a
``LockState``: the intent, the run a submit follows moving to history, and the intent
cleared when the submit made no run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reconciler.engine.requests import with_reruns
from reconciler.model import Action, Intent, LockState, PlanItem, Reason, RecordedRun
from reconciler.plan.smoke import SMOKE
from reconciler.state.lockfile import put_run, retire_run


def retire(state: LockState, address: str, reason: str, now: datetime) -> LockState:
    """Move the run recorded at ``address`` into history (newest first, capped)."""
    return retire_run(state, address, reason, ended_at=now)


def submit_intent(item: PlanItem, spec: dict[str, Any], now: datetime) -> Intent:
    """The intent written before a submit's POST. A retry run (``--retry-errored``) carries
    its provenance from the intent on: a crash between the POST and its record adopts the
    run as the retry it is."""
    retry = item.retry if item.action is Action.RETRY else None
    return Intent(
        op="submit",
        started_at=now,
        body_digest=item.after_digest or "",
        spec=spec,
        benchmark_id=item.benchmark_id,
        stage=SMOKE if item.smoke is not None and item.smoke.stage == SMOKE else None,
        retry_of=retry.retry_of if retry is not None else None,
        retry_agents=retry.agents if retry is not None else None,
    )


def leaving_reason(item: PlanItem) -> str:
    """Why the run a submit follows leaves its address (``HistoryReason``)."""
    if item.action is Action.RETRY:
        return "retried"  # the retried run stays the address's result
    return "rerun" if item.reason is Reason.REPLACE_REQUESTED else "replaced"


def with_submit_intent(
    state: LockState, item: PlanItem, intent: Intent, reason: str, head: str | None
) -> LockState:
    """``state`` with the submit's intent recorded at its address, and the re-run requests
    it carries out. A retry's intent sits on the retried run's entry until the retry run is
    recorded: a refusal or a submit that made no run leaves the address as it was."""
    old = state.runs.get(item.address)
    if intent.retry_of is not None and old is not None and old.run_id is not None:
        state = put_run(state, old.model_copy(update={"intent": intent}))
        return with_reruns(state, item.address, item.reruns)
    if old is not None and old.run_id is not None:
        # A smoke run leaves the address as its own kind of history.
        why = SMOKE if old.stage == SMOKE else reason
        state = retire(state, item.address, why, intent.started_at)
    entry = RecordedRun(
        address=item.address,
        spec_digest=item.after_digest or "",
        spec=intent.spec,
        benchmark_id=item.benchmark_id,
        intent=intent,
        stage=intent.stage,
        retry_of=intent.retry_of,
        retry_agents=intent.retry_agents,
        # The commit this submit carries out: a run adopted later as its run was applied
        # here, not at the adopting apply's commit (``_adopt``).
        applied_at_commit=head,
    )
    return with_reruns(put_run(state, entry), item.address, item.reruns)


def clear_failed_intent(state: LockState, address: str) -> LockState:
    """``state`` after a submit at ``address`` made no run: a new address's entry goes, a
    recorded run's entry loses the intent (the run stays the address's)."""
    entry = state.runs.get(address)
    if entry is None or entry.intent is None:
        return state
    if entry.run_id is None:
        return state.model_copy(
            update={"runs": {k: v for k, v in state.runs.items() if k != address}}
        )
    return put_run(state, entry.model_copy(update={"intent": None}))
