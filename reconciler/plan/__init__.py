"""The plan engine: a pure function of the three snapshots (design.md §6).

``compute_plan(desired, recorded, observed, settings)`` decides; it does no I/O, reads no
clock (``observed.observed_at`` is "now"), and does not log. Apply carries the result out;
the renderers show it. It runs in phases, one module each, over one working set (``Draft``);
the order matters only where an observed run could be claimed twice, and there it is fixed:

0. ``batches``  a config with ``[decide]`` becomes its decision's current batch (a look
                when the last one ended), before anything plans it like any run (an
                intent resolved to "resubmit" included);
1. ``intents``  pending ``submit`` intents (a crash between POST and record) claim their
                run first;
2. ``moves``    renames pair a vanished address with a new one of the same spec digest
                (no Platform call); after phase 3, a likely rename-and-edit is named;
3. ``diff``     new configs adopt an unrecorded run that can only be theirs, else submit;
                every other recorded entry: changed, missing (``missing``: never a
                reason to pay by itself), finished, deleted;
   ``retries``  each address a retry of the errored attempts was asked for: the retry run
                of one group of them, or why there is none (before the twin guard);
   ``power``    each submit with an earlier complete run of its address gets the smallest
                difference it can detect (before paying);
   ``twins``    every paid item whose body an active run of no evidence already does is
                blocked until a person decides (adopt it, or allow the duplicate);
   ``generators`` a generator's vanished cells: which element went, its ``on_remove``,
                and the per-generator removal guard;
   ``standing`` blocks the lockfile already records (they do not fail the plan);
   ``policy``   rules a config's spelling of its benchmark hid at load time, and budgets of ``[[policy]]`` rules per address glob;
4. ``drift``    recorded runs changed outside the tool, and unrecorded runs;
5. ``guards``   targeting, skips, the stop and budget guards, and the summary.

``preflight`` (would the Platform accept this submit, and what would it cost) is called by
the diff phase for every paid item.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.model import (
    DesiredRun,
    GeneratorProduct,
    LockState,
    Observation,
    Plan,
    Settings,
)
from reconciler.plan.batches import shape_batches
from reconciler.plan.changes import PREVIOUS_CONFIG_UNKNOWN, spec_changes
from reconciler.plan.decision import note_decisions
from reconciler.plan.diff import diff_configs
from reconciler.plan.draft import CLOCK_SKEW, Draft
from reconciler.plan.drift import DRIFT_ORDER, drift_fingerprint, find_drift
from reconciler.plan.generators import shape_generator_items
from reconciler.plan.guards import ACTION_ORDER, finish
from reconciler.plan.intents import resolve_intents
from reconciler.plan.missing import elsewhere, elsewhere_message
from reconciler.plan.moves import hint_renames, pair_moves
from reconciler.plan.policy import check_policy_budgets, check_resolved_rules
from reconciler.plan.power import note_power
from reconciler.plan.results import result_rows
from reconciler.plan.retries import plan_retries
from reconciler.plan.standing import mark_standing
from reconciler.plan.twins import guard_twins

__all__ = [
    "ACTION_ORDER",
    "CLOCK_SKEW",
    "DRIFT_ORDER",
    "PREVIOUS_CONFIG_UNKNOWN",
    "compute_plan",
    "drift_fingerprint",
    "result_rows",
    "spec_changes",
]


def compute_plan(
    desired: Sequence[DesiredRun],
    recorded: LockState,
    observed: Observation,
    settings: Settings,
    generators: Sequence[GeneratorProduct] = (),
) -> Plan:
    """Compare desired configs, the lockfile and what the Platform shows; return the plan.
    ``generators`` is what each ``*.matrix.toml`` expanded to (``LoadResult.generators``)."""
    draft = Draft.start(desired, recorded, observed, settings, generators)
    if elsewhere(draft):
        # Another machine's try-out: every run "missing"; nothing here to act on or pay.
        draft.warnings.append(elsewhere_message(draft))
        return finish(draft)
    shape_batches(draft)
    resolve_intents(draft)
    new_addresses = pair_moves(draft)
    diff_configs(draft, new_addresses)
    hint_renames(draft, new_addresses)
    plan_retries(draft)
    shape_generator_items(draft)
    note_power(draft)
    guard_twins(draft)
    mark_standing(draft)
    check_resolved_rules(draft)
    note_decisions(draft)
    check_policy_budgets(draft)
    find_drift(draft)
    return finish(draft)
