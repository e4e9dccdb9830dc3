"""Phase 2: renames. A vanished address and a new one with the same spec digest are one run
that moved; the entry is re-keyed, with no Platform call.

A rename and an edit in one change cannot be told from a deleted config and a new one by the
digest; ``hint_renames`` (after the diff phase) names the likely pair on both items, with the
command that keeps the run's history (``osmosis-state mv``), and decides nothing itself."""

from __future__ import annotations

from pathlib import PurePosixPath

from reconciler.model import Action, DesiredRun, PlanItem, Reason, RecordedRun, recorded_benchmark
from reconciler.plan.changes import spec_changes
from reconciler.plan.draft import Draft

SIMILAR_CHANGES = 3
"""At most this many changed fields, on the same benchmark in the same directory, and a
deleted config and a new one look like one config renamed and edited (a shared file name, in
another directory, is enough on its own)."""


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
        if address in draft.recorded.runs or address in draft.handled:
            continue  # recorded, or waiting on a pending submit made at its old address
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


def hint_renames(draft: Draft, new_addresses: list[str]) -> None:
    """Name a deleted config and a new one that look like one config renamed and edited."""
    vanished = [
        draft.recorded.runs[address]
        for address in sorted(draft.recorded.runs)
        if address not in draft.desired and address not in draft.handled
    ]
    if not vanished or not new_addresses:
        return
    paid = {
        item.address
        for item in draft.items
        if item.action in (Action.SUBMIT, Action.BLOCKED) and item.address in new_addresses
    }
    pairs: dict[str, str] = {}
    taken: set[str] = set()
    for address in sorted(paid):
        wanted = draft.desired[address]
        match = next(
            (e for e in vanished if e.address not in taken and _looks_renamed(draft, e, wanted)),
            None,
        )
        if match is not None:
            taken.add(match.address)
            pairs[address] = match.address
    if not pairs:
        return
    olds = {old: new for new, old in pairs.items()}
    for index, item in enumerate(draft.items):
        if item.address in pairs and item.action in (Action.SUBMIT, Action.BLOCKED):
            old, new = pairs[item.address], item.address
            text = (
                f"looks like {old} renamed to {new} and edited in one change: to keep the run "
                f"and history of {old} under the new name, run `osmosis-state mv {old} {new}` "
                "before applying (the plan then shows the edit as a change of that config)"
            )
        elif item.address in olds and item.action in (Action.STOP, Action.FORGET):
            old, new = item.address, olds[item.address]
            text = (
                f"looks like renamed to {new} and edited: `osmosis-state mv {old} {new}` keeps "
                "this run and its history under the new name instead of a new submit"
            )
        else:
            continue
        draft.items[index] = item.model_copy(update={"warnings": (*item.warnings, text)})


def _looks_renamed(draft: Draft, entry: RecordedRun, wanted: DesiredRun) -> bool:
    if entry.intent is not None or not entry.spec or entry.run_id is None:
        return False
    if entry.run_id in draft.observed.missing:
        return False  # nothing to keep: its run is gone
    old, new = PurePosixPath(entry.address), PurePosixPath(wanted.address)
    if old.name == new.name:
        return True
    if old.parent != new.parent:
        return False
    benchmark = draft.observed.benchmarks.get(wanted.benchmark)
    same_benchmark = (
        benchmark is not None and entry.benchmark_id == benchmark.id
    ) or recorded_benchmark(entry.spec) == wanted.benchmark
    return same_benchmark and len(spec_changes(entry.spec, wanted.spec)) <= SIMILAR_CHANGES
