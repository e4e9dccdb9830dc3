"""``osmosis-apply --only KINDS``: keep only the action kinds an apply is allowed to perform.

The collect loop runs ``osmosis-apply --only download,refresh`` on a schedule: it may fetch
the outputs of ended runs and record what it observed, and it must never pay, replace or
stop, whatever the plan says. That is enforced here, on the plan value, before anything
is rendered or applied, so a workflow file that forgets a flag elsewhere cannot widen it.

Pure: no I/O, imports only the core.
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.errors import UsageError
from reconciler.model import Action, Plan, PlanItem
from reconciler.plan.guards import summarise

REFRESH = "refresh"
"""Not a plan action: record observed statuses in the lockfile even when nothing else is
to be done (an apply that acts always records the statuses it observed)."""
KINDS = (*(a.value for a in Action if a not in (Action.BLOCKED, Action.UNKNOWN)), REFRESH)
"""What ``--only`` accepts, in the order the help lists them."""
PAID_OR_DESTRUCTIVE = frozenset({Action.SUBMIT, Action.REPLACE, Action.STOP, Action.RETRY})
"""The guards (``max_stops``, ``max_attempts``) are about these; without them they cannot fire."""


def parse_only(value: str, where: str = "--only") -> frozenset[str]:
    """``download,refresh`` -> the set of kinds; unknown or empty lists are usage errors."""
    kinds = [part.strip().lower() for part in value.split(",") if part.strip()]
    if not kinds:
        raise UsageError(
            f"{where}: must list at least one kind", f"choose from: {', '.join(KINDS)}"
        )
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise UsageError(
            f"{where}: unknown kind(s): {', '.join(unknown)}", f"choose from: {', '.join(KINDS)}"
        )
    return frozenset(kinds)


def _allowed(item: PlanItem, kinds: frozenset[str]) -> bool:
    if item.action is Action.BLOCKED:
        # A blocked item is a submit or replace that cannot run: it belongs to that kind.
        intended = (item.blocked and item.blocked.intended_action) or Action.SUBMIT
        return intended.value in kinds
    if item.action is Action.UNKNOWN:
        # Records only what the run list showed (evidence), like a refresh; never pays.
        return REFRESH in kinds or Action.SUBMIT.value in kinds
    return item.action.value in kinds


def restrict_plan(plan: Plan, kinds: Iterable[str]) -> Plan:
    """``plan`` with only the items whose kind is in ``kinds``; the rest are held back,
    named in one warning, and stay pending for a later apply."""
    allowed = frozenset(kinds)
    kept = tuple(item for item in plan.items if _allowed(item, allowed))
    held = [item for item in plan.items if not _allowed(item, allowed)]
    if not held:
        return plan
    summary = summarise(list(kept), drift=plan.summary.drift)
    shown = ", ".join(f"{i.action.value} {i.address}" for i in held[:10])
    more = f", and {len(held) - 10} more" if len(held) > 10 else ""
    warning = (
        f"--only {','.join(k for k in KINDS if k in allowed)}: held back "
        f"{len(held)} action(s) ({shown}{more}); they stay pending for a later apply"
    )
    guarded = any(i.action in PAID_OR_DESTRUCTIVE for i in kept)
    return plan.model_copy(
        update={
            "items": kept,
            "summary": summary,
            # What the observation said about a held-back item stays said (design.md §6).
            "warnings": (*plan.warnings, *held_warnings(held), warning),
            "errors": plan.errors if guarded else (),
            # A held-back adoption's run must stay in view of the next plan's run list.
            "observed_until": None
            if any(i.action is Action.ADOPT for i in held)
            else plan.observed_until,
        }
    )


def held_warnings(held: Iterable[PlanItem]) -> tuple[str, ...]:
    """The warnings of items left out of a plan (``--only``, ``--target``), as plan
    warnings naming their address: they come from the observation, and leaving an action
    for later must not hide them."""
    return tuple(f"{item.address}: {warning}" for item in held for warning in item.warnings)
