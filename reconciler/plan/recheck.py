"""A saved plan is applied only as far as it is still the plan (design.md §7.10).

A saved plan is a file: it can be edited, or the world can move between ``osmosis-plan
--out`` and ``osmosis-apply PLANFILE`` in ways the staleness check (serial, digests, HEAD)
does not see (a run that ended, a run someone else made). So apply recomputes the plan from
what it observes now and carries out only the saved items that the recomputed plan also
holds, for the same observed run; every other saved item is refused, by name. Items the
recomputed plan adds were never reviewed and are left for the next plan.

Pure: no I/O, imports only the core.
"""

from __future__ import annotations

from reconciler.model import Action, Blocked, Plan, PlanItem

ItemKey = tuple[Action, str, str | None, str | None, str | None]


def item_key(item: PlanItem) -> ItemKey:
    """What makes two items the same decision: the action, the address (and where a move
    comes from), the observed run acted on, and the config digest it leads to."""
    return (item.action, item.address, item.from_address, item.run_id, item.after_digest)


def still_planned(saved: Plan, current: Plan) -> Plan:
    """``saved`` narrowed to the items ``current`` (recomputed now) also holds, taken from
    ``current`` (so nothing in the file but the choice of items is trusted); each other
    saved item becomes a blocked item that says why it is refused (apply reports it as
    failed). The guards are the recomputed plan's."""
    now = {item_key(item): item for item in current.items}
    for item in current.items:
        intended = item.blocked.intended_action if item.blocked is not None else None
        if item.action is Action.BLOCKED and intended is not None:
            # The saved submit cannot succeed now: apply reports why, in the plan's words.
            key = (intended, item.address, item.from_address, item.run_id, item.after_digest)
            now.setdefault(key, item)
    kept: list[PlanItem] = []
    taken: set[ItemKey] = set()
    for item in saved.items:
        key = item_key(item)
        fresh = now.get(key)
        if fresh is not None and key not in taken:
            # Each recomputed item is carried out once, however often the file names it
            # (a submit copied in the file would otherwise pay twice).
            taken.add(key)
            kept.append(fresh)
        elif item.action is not Action.BLOCKED:
            kept.append(_refused(item, duplicate=fresh is not None))
    return current.model_copy(update={"items": tuple(kept)})


def _refused(item: PlanItem, *, duplicate: bool = False) -> PlanItem:
    run = f" of run {item.run_name or item.run_id}" if item.run_id else ""
    if duplicate:
        why = (
            f"refused: the saved plan's {item.action.value}{run} at {item.address} appears "
            "in it more than once; it is carried out once"
        )
    else:
        why = (
            f"refused: the saved plan's {item.action.value}{run} at {item.address} is not in "
            "the plan recomputed now for the same observed run, so it is not carried out"
        )
    return PlanItem(
        action=Action.BLOCKED,
        address=item.address,
        reason=item.reason,
        run_id=item.run_id,
        run_name=item.run_name,
        blocked=Blocked(intended_action=item.action, intended_reason=item.reason, refused=True),
        details=(
            why,
            "fix: make a new plan (`osmosis-plan --out PLANFILE`), review it and apply that",
        ),
    )
