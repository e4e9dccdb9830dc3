"""The saved plan (``osmosis-plan --out PLANFILE``): its own format, read back by
``osmosis-apply PLANFILE`` and ``osmosis-reconciler show``, and refused when stale.

A saved plan is ``{"kind": SAVED_PLAN_KIND, "plan": plan_to_dict(plan)}``: the JSON
document ``render_json`` prints, wrapped so that another JSON file is not taken for a plan.
``plan_from_dict`` reads the document back to an equal ``Plan`` (the renders only write
it). ``save_plan`` and ``read_saved_plan`` move it to and from a file; ``stale_reasons``
says why a saved plan no longer describes the repository (design.md §7.2: the lockfile's
serial and lineage, a config's digest, HEAD, the Platform and workspace).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from reconciler.errors import StalePlanError, UsageError
from reconciler.model import (
    PLAN_FORMAT_VERSION,
    Action,
    AgentResult,
    BenchmarkFacts,
    Blocked,
    CellSource,
    Cost,
    DriftItem,
    DriftKind,
    Fix,
    GeneratorMove,
    GeneratorProduct,
    GeneratorRemoval,
    LeaderboardScore,
    LockState,
    Plan,
    PlanItem,
    PlanSummary,
    Reason,
    ResultRow,
    Retry,
    Smoke,
)
from reconciler.paths import UnsafeInputError, read_named, write_named
from reconciler.render.jsondoc import plan_to_dict

SAVED_PLAN_KIND = "osmosis-reconciler/saved-plan"


def saved_plan_text(plan: Plan) -> str:
    """The text of a saved plan file (sorted keys, final newline)."""
    payload = {"kind": SAVED_PLAN_KIND, "plan": plan_to_dict(plan)}
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


def save_plan(plan: Plan, path: Path) -> None:
    """Write ``plan`` to ``path`` (a temporary file renamed over it: never half a plan)."""
    # Anywhere the user names, never through a symlink (reconciler.paths, issue 36).
    write_named(path, saved_plan_text(plan).encode("utf-8"), what="--out")


def read_saved_plan(path: Path) -> Plan:
    """The plan saved at ``path`` by ``osmosis-plan --out``; a ``UsageError`` for anything
    else (the fuzz suite's saved-plan target: a clear error, never an internal one)."""
    try:
        # A regular file of bounded size (``reconciler.paths``): /dev/zero was read until
        # memory ran out, a FIFO blocked forever.
        return parse_saved_plan(read_named(path, what="saved plan").decode("utf-8"))
    except UnsafeInputError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise UsageError(
            f"{path}: cannot read the saved plan: {exc}",
            "create one with `osmosis-plan --out PLANFILE`",
        ) from exc


def stale_reasons(
    plan: Plan,
    *,
    state: LockState,
    config_digests: Mapping[str, str],
    platform: str,
    workspace: str,
    head: str | None,
) -> list[str]:
    """Why ``plan`` no longer describes what is read now (empty: it still does)."""
    stale = []
    # No lockfile when planned nor now: each read of a missing lockfile gets a fresh
    # lineage, so only serial 0 on both sides proves the state is unchanged.
    unwritten = plan.serial == 0 and state.serial == 0
    if (not unwritten and plan.lineage not in (None, state.lineage)) or (
        plan.lineage is not None and plan.serial != state.serial
    ):
        stale.append(f"the lockfile changed (serial {plan.serial} -> {state.serial})")
    if plan.platform != platform or plan.workspace != workspace:
        stale.append("it was made for another platform or workspace")
    if dict(config_digests) != plan.config_digests:
        changed = sorted(set(config_digests.items()) ^ set(plan.config_digests.items()))
        names = sorted({a for a, _ in changed})
        stale.append(f"configs changed: {', '.join(names[:10])}")
    if plan.head != head:
        stale.append(f"HEAD moved ({(plan.head or 'none')[:12]} -> {(head or 'none')[:12]})")
    return stale


def parse_saved_plan(text: str) -> Plan:
    """Read ``saved_plan_text``'s output back.

    Raises ``ValueError`` (or ``KeyError``/``TypeError``) when the text is not a saved plan,
    ``StalePlanError`` when it is one this version cannot read."""
    payload = json.loads(text)
    if payload.get("kind") != SAVED_PLAN_KIND:
        raise ValueError("not a saved plan")
    return plan_from_dict(payload["plan"])


def _datetime_or_none(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _enum_or_none(enum: Callable[[str], Any], value: Any) -> Any:
    return None if value is None else enum(value)


def _blocked(action: Mapping[str, Any]) -> Blocked | None:
    """The ``blocked`` group of a saved item (its flat keys), None when it has none."""
    intended_action = _enum_or_none(Action, action.get("intended_action"))
    intended_reason = _enum_or_none(Reason, action.get("intended_reason"))
    fixes = tuple(Fix.model_validate(f) for f in action.get("fixes", ()))
    if intended_action is None and intended_reason is None and not fixes:
        return None
    return Blocked(intended_action=intended_action, intended_reason=intended_reason, fixes=fixes)


def _result_row(r: dict[str, Any]) -> ResultRow:
    """One row of the saved plan's results table."""
    return ResultRow(
        address=r["address"],
        run_id=r.get("run_id"),
        run_name=r.get("run_name"),
        status=r.get("status"),
        agent=AgentResult.model_validate(r["agent"]),
        previous=AgentResult.model_validate(r["previous"]) if r.get("previous") else None,
        previous_run_id=r.get("previous_run_id"),
        previous_run_name=r.get("previous_run_name"),
        leaderboard=LeaderboardScore.model_validate(r["leaderboard"])
        if r.get("leaderboard")
        else None,
        unavailable_tasks=r.get("unavailable_tasks", 0),
        unavailable_reason=r.get("unavailable_reason"),
        stage=r.get("stage"),
        retry_runs=tuple(r.get("retry_runs", ())),
        retries_not_counted=tuple(r.get("retries_not_counted", ())),
    )


def plan_from_dict(data: Mapping[str, Any]) -> Plan:
    """Read back ``plan_to_dict``'s document; raises ``StalePlanError`` when it is not one."""
    hint = "make a new one with `osmosis-plan --out PLANFILE`"
    if not isinstance(data, Mapping) or "format_version" not in data:
        raise StalePlanError("the file is not a saved osmosis-reconciler plan", hint)
    version = data["format_version"]
    if version != PLAN_FORMAT_VERSION:
        raise StalePlanError(
            f"the saved plan has format_version {version!r}; this version reads "
            f"{PLAN_FORMAT_VERSION!r}",
            hint,
        )
    try:
        items = tuple(
            PlanItem(
                action=Action(a["action"]),
                address=a["address"],
                from_address=a.get("from_address"),
                reason=Reason(a["reason"]),
                blocked=_blocked(a),
                run_id=a.get("run_id"),
                run_name=a.get("run_name"),
                before_digest=a.get("before"),
                after_digest=a.get("after"),
                benchmark_id=a.get("benchmark_id"),
                task_count=a.get("task_count"),
                attempts=a.get("attempts", 0),
                changes=tuple(a.get("changes", ())),
                details=tuple(a.get("details", ())),
                warnings=tuple(a.get("warnings", ())),
                requested_by=a.get("requested_by"),
                requested_subject=a.get("requested_subject"),
                download_types=tuple(a.get("download_types", ())),
                listed_at=_datetime_or_none(a.get("listed_at")),
                context=a.get("context"),
                cost=Cost(
                    usd_low=a["cost_usd"].get("low"),
                    usd_high=a["cost_usd"]["high"],
                    basis=a["cost_usd"].get("basis"),
                )
                if a.get("cost_usd")
                else None,
                spec=a.get("spec"),
                benchmark=BenchmarkFacts(
                    source_url=a.get("source_url"), pass_threshold=a.get("pass_threshold")
                )
                if a.get("source_url") is not None or a.get("pass_threshold") is not None
                else None,
                **_stages(a),
                source=source_from_dict(a.get("source")),
            )
            for a in data["actions"]
        )
        drift = tuple(
            DriftItem(
                kind=DriftKind(d["kind"]),
                address=d.get("address"),
                run_id=d.get("run_id"),
                message=d["message"],
                fingerprint=d["fingerprint"],
            )
            for d in data["drift"]
        )
        results = tuple(_result_row(r) for r in data.get("results", ()))
        return _checked(
            Plan(
                items=items,
                drift=drift,
                warnings=tuple(data.get("warnings", ())),
                errors=tuple(data.get("errors", ())),
                summary=PlanSummary(**data["summary"]),
                lineage=data.get("lineage"),
                serial=data.get("serial"),
                platform=data.get("platform", ""),
                workspace=data.get("workspace", ""),
                head=data.get("head"),
                config_digests=dict(data.get("config_digests", {})),
                other_pending=data.get("other_pending", 0),
                results=results,
                unmanaged_count=data.get("unmanaged_count"),
                observed_until=_datetime_or_none(data.get("observed_until")),
                ignored=tuple((i["path"], i["why"]) for i in data.get("ignored", ())),
                generators=generators_from_dicts(data.get("generators", ())),
            )
        )
    except (KeyError, TypeError, ValueError, msgspec.ValidationError) as exc:
        raise StalePlanError(f"the saved plan is malformed: {exc}", hint) from exc


def _checked(plan: Plan) -> Plan:
    """``plan`` with the type of every value checked (``1`` where a digest belongs, ``"3"``
    for a count): values are not checked when built, and apply acts on a saved plan, which
    a person or a script may have edited. ``msgspec.ValidationError`` names the first."""
    return Plan.model_validate(msgspec.to_builtins(plan), strict=True)


def _smoke(data: Any) -> Smoke | None:
    """A saved item's smoke stage (``jsondoc``'s ``smoke`` key; absent: none)."""
    if not isinstance(data, dict):
        return None
    return Smoke(
        stage=data["stage"],
        smoke_attempts=data.get("smoke_attempts", 0),
        full_attempts=data.get("full_attempts", 0),
        tasks=tuple(data.get("tasks", ())),
        smoke_run_id=data.get("smoke_run_id"),
    )


def _stages(action: Mapping[str, Any]) -> dict[str, Any]:
    """A saved item's smoke stage and retry of errored attempts (``jsondoc``'s ``smoke`` and
    ``retry`` keys; absent: none)."""
    retry = action.get("retry")
    return {
        "smoke": _smoke(action.get("smoke")),
        "retry": Retry.model_validate(retry) if isinstance(retry, dict) else None,
    }


def generators_from_dicts(data: Sequence[Mapping[str, Any]]) -> tuple[GeneratorProduct, ...]:
    return tuple(
        GeneratorProduct(
            file=g["file"],
            prefix=g["prefix"],
            axes={name: tuple(keys) for name, keys in g["axes"].items()},
            element_lines=dict(g.get("element_lines", {})),
            cells=tuple(g["cells"]),
            excluded=g.get("excluded", 0),
            included=g.get("included", 0),
            on_remove=g.get("on_remove", "stop"),
            removed=tuple(GeneratorRemoval.model_validate(r) for r in g.get("removed", ())),
            moves=tuple(
                GeneratorMove(
                    line=m["line"],
                    label=m.get("label", ""),
                    pairs=tuple((p[0], p[1]) for p in m.get("pairs", ())),
                )
                for m in g.get("moved", ())
            ),
        )
        for g in data
    )


def source_from_dict(data: Mapping[str, Any] | None) -> CellSource | None:
    if not data:
        return None
    return CellSource(
        file=data["file"],
        kind=data.get("kind", "generator"),
        cell=dict(data.get("cell", {})),
        line=data.get("line"),
        note=data.get("note"),
    )
