"""Phase 2: renames. A vanished address and a new one with the same spec digest are one run
that moved; the entry is re-keyed, with no Platform call."""

from __future__ import annotations

from reconciler.model import Action, PlanItem, Reason
from reconciler.plan.draft import Draft


def pair_moves(draft: Draft) -> list[str]:
    """Pair vanished addresses with new ones of the same digest; return the unpaired new."""
    vanished: dict[str, list[str]] = {}
    for address in sorted(draft.recorded.runs):
        entry = draft.recorded.runs[address]
        if address in draft.desired or address in draft.handled or entry.intent is not None:
            continue
        vanished.setdefault(entry.spec_digest, []).append(address)
    unpaired: list[str] = []
    for address in sorted(draft.desired):
        if address in draft.recorded.runs:
            continue
        wanted = draft.desired[address]
        # A generator's [[moved]] names the old address: it wins over the digest pairing
        # (the content may have changed too; that change shows once the move is applied).
        named = [
            old
            for old in wanted.moved_from
            if old in draft.recorded.runs
            and old not in draft.desired
            and old not in draft.handled
            and draft.recorded.runs[old].intent is None
        ]
        if named:
            old_entry = draft.recorded.runs[named[0]]
            same = vanished.get(old_entry.spec_digest, [])
            if named[0] in same:
                same.remove(named[0])
        candidates = named or vanished.get(wanted.spec_digest)
        if not candidates:
            unpaired.append(address)
            continue
        old_address = candidates.pop(0)
        entry = draft.recorded.runs[old_address]
        draft.handled.add(old_address)
        draft.items.append(
            PlanItem(
                action=Action.MOVE,
                address=address,
                from_address=old_address,
                reason=Reason.RENAMED,
                run_id=entry.run_id,
                run_name=entry.run_name,
                before_digest=entry.spec_digest,
                after_digest=wanted.spec_digest,
                benchmark_id=entry.benchmark_id,
                requested_by=wanted.requested_by,
                requested_subject=wanted.requested_subject,
            )
        )
    return unpaired
