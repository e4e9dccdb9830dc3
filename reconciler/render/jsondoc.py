"""The JSON document of a plan (``render_json``, ``format_version`` "1.0") and of a refresh."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from reconciler.model import (
    PLAN_FORMAT_VERSION,
    Action,
    DriftItem,
    ObservedRun,
    Plan,
    PlanItem,
    RecordedChange,
)
from reconciler.render.generators import generator_to_dict, source_to_dict
from reconciler.render.tables import result_to_dict


def _item_to_dict(item: PlanItem) -> dict[str, Any]:
    document = _item_fields(item)
    if item.listed_at is not None:  # only an unknown outcome has one
        document["listed_at"] = item.listed_at.isoformat()
    if item.action is Action.BLOCKED:  # only a blocked item can be standing
        document["standing"] = item.standing
    if item.smoke is not None:
        # Only on items with a smoke stage, so plans without one are unchanged.
        document["smoke"] = item.smoke.model_dump()
        document["smoke"]["tasks"] = list(item.smoke.tasks)
    if item.retry is not None:
        # Only on a retry of errored attempts (docs/retrying.md): other plans are unchanged.
        document["retry"] = {
            "retry_of": item.retry.retry_of,
            "retry_of_name": item.retry.retry_of_name,
            "agents": list(item.retry.agents),
            "tasks": list(item.retry.tasks),
            "attempts_per_task": item.retry.attempts_per_task,
            "errored": item.retry.errored,
            "later": list(item.retry.later),
        }
    return document


def _item_fields(item: PlanItem) -> dict[str, Any]:
    # The saved plan's format is flat (format_version 1.0); the model groups these.
    blocked = item.blocked
    return {
        "action": item.action.value,
        "symbol": item.action.symbol,
        "address": item.address,
        "from_address": item.from_address,
        "reason": item.reason.value,
        "intended_action": blocked.intended_action.value
        if blocked and blocked.intended_action
        else None,
        "intended_reason": blocked.intended_reason.value
        if blocked and blocked.intended_reason
        else None,
        "run_id": item.run_id,
        "run_name": item.run_name,
        "before": item.before_digest,
        "after": item.after_digest,
        "benchmark_id": item.benchmark_id,
        "task_count": item.task_count,
        "attempts": item.attempts,
        "changes": list(item.changes),
        "details": list(item.details),
        "warnings": list(item.warnings),
        "requested_by": item.requested_by,
        "requested_subject": item.requested_subject,
        "download_types": list(item.download_types),
        "source_url": item.benchmark.source_url if item.benchmark else None,
        "pass_threshold": item.benchmark.pass_threshold if item.benchmark else None,
        "fixes": [fix.model_dump(exclude_defaults=True) for fix in blocked.fixes]
        if blocked
        else [],
        "context": item.context,
        "cost_usd": {"low": item.cost.usd_low, "high": item.cost.usd_high, "basis": item.cost.basis}
        if item.cost is not None
        else None,
        "spec": json.loads(json.dumps(item.spec, sort_keys=True))
        if item.spec is not None
        else None,
        # Only on a generator's addresses, so plans without generators keep their shape.
        **({"source": source_to_dict(item.source)} if item.source is not None else {}),
    }


def _drift_to_dict(drift: DriftItem) -> dict[str, Any]:
    return {
        "kind": drift.kind.value,
        "address": drift.address,
        "run_id": drift.run_id,
        "message": drift.message,
        "fingerprint": drift.fingerprint,
    }


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The JSON document of a plan (``render_json``) and of a saved plan (``--out``)."""
    return {
        "format_version": PLAN_FORMAT_VERSION,
        "platform": plan.platform,
        "workspace": plan.workspace,
        "lineage": plan.lineage,
        "serial": plan.serial,
        "head": plan.head,
        "config_digests": dict(sorted(plan.config_digests.items())),
        "actions": [_item_to_dict(item) for item in plan.items],
        "drift": [_drift_to_dict(d) for d in plan.drift],
        "summary": plan.summary.model_dump(),
        "warnings": list(plan.warnings),
        "errors": list(plan.errors),
        "errored": bool(plan.errors),
        "other_pending": plan.other_pending,
        "results": [result_to_dict(row) for row in plan.results],
        "unmanaged_count": plan.unmanaged_count,
        "unmanaged": [_unmanaged_to_dict(run) for run in plan.unmanaged],
        "observed_until": plan.observed_until.isoformat() if plan.observed_until else None,
        "ignored": [{"path": path, "why": why} for path, why in plan.ignored],
        **(
            {"generators": [generator_to_dict(g) for g in plan.generators]}
            if plan.generators
            else {}
        ),
    }


def _unmanaged_to_dict(run: ObservedRun) -> dict[str, Any]:
    return {
        "run_id": run.id,
        "run_name": run.name or None,
        "status": run.status or None,
        "benchmark_id": run.benchmark_id,
        "benchmark_name": run.benchmark_name,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "creator_name": run.creator_name,
    }


def render_json(plan: Plan) -> str:
    """``plan_to_dict`` as indented JSON with a final newline."""
    return json.dumps(plan_to_dict(plan), indent=2, ensure_ascii=False) + "\n"


def refresh_to_dict(
    plan: Plan, changes: Sequence[RecordedChange], *, recorded: bool, pending: int
) -> dict[str, Any]:
    """The JSON body of a refresh: the changes, whether they were written, the drift."""
    return {
        "platform": plan.platform,
        "workspace": plan.workspace,
        "lineage": plan.lineage,
        "serial": plan.serial,
        "head": plan.head,
        "recorded": recorded,
        "changes": [change.model_dump() for change in changes],
        "drift": [_drift_to_dict(d) for d in plan.drift],
        "pending_actions": pending,
        "warnings": list(plan.warnings),
    }
