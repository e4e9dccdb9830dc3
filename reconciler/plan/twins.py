"""The twin guard: never pay for a run identical to an active one without a decision.

Two clones of one repository on one machine, a lockfile copied from another clone, a
hand-edited ``run_id``, a colleague who ran the same config by hand: each leaves an *active*
run on the Platform that does exactly what a config asks, which this repository's lockfile
does not name. The adoption rule (``plan.ownership``) rightly refuses to take such a run
without evidence; paying for a second one without a word is the other half of the mistake
(issue 34: 9 duplicate runs in 3 rounds of two clones).

So before any paid submit (a new config, a replace, a re-run, a smoke or a full stage, the
resubmit of a lost or missing run) the body it would send is compared with every active
run the observation fingerprinted, by the same fingerprint adoption uses (benchmark, task
selection, execution settings, each agent's harness, model and env). An identical active run
this repository has no evidence for (``ownership.evidence_of``) blocks the item, naming the
run, its creator and when it was made, and the two ways on: record it as the address's run
(``osmosis-state adopt ADDR RUN``, checked against the config) or pay for another
(``--allow-duplicate ADDR|GLOB``, an ``Osmosis-Allow-Duplicate:`` trailer).

Runs are compared only when their details were read (``ObservedRun.fingerprint``): the
observation reads them for every listed run of a config's benchmark and agent count when
the config needs a run, and for recent ones otherwise. Pure: no I/O, no clock.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from reconciler.model import (
    Action,
    Blocked,
    Fix,
    Observation,
    ObservedRun,
    PlanItem,
    Reason,
    RunStatus,
    glob_match,
    spec_fingerprint,
)
from reconciler.plan.draft import Draft, run_label
from reconciler.plan.ownership import evidence_of

__all__ = ["active_twins", "adopt_command", "allow_command", "guard_twins", "twin_lines"]

TWINS_SHOWN = 3
"""Twins named per item; the rest are counted."""


def guard_twins(draft: Draft) -> None:
    """Block every submit and replace whose body an active run of nobody's evidence already
    does, unless ``allow_duplicate`` covers its address."""
    guarded: list[PlanItem] = []
    for item in draft.items:
        if item.action not in (Action.SUBMIT, Action.REPLACE, Action.RETRY) or not item.spec:
            guarded.append(item)
            continue
        twins = active_twins(draft, _fingerprint(item), exclude=(item.run_id,))
        if not twins:
            guarded.append(item)
        elif glob_match(item.address, draft.settings.allow_duplicate):
            allowed = (
                f"pays for another run although {_named(twins)} does exactly this and is "
                f"{twins[0].status or 'active'} (allowed by --allow-duplicate or an "
                "Osmosis-Allow-Duplicate trailer)"
            )
            guarded.append(item.model_copy(update={"warnings": (*item.warnings, allowed)}))
        else:
            guarded.append(twin_blocked(item, twins))
    draft.items[:] = guarded


def _fingerprint(item: PlanItem) -> str | None:
    if item.benchmark_id is None or item.spec is None:
        return None
    return spec_fingerprint(item.spec, item.benchmark_id)


def active_twins(
    draft: Draft, fingerprint: str | None, *, exclude: Iterable[str | None] = ()
) -> list[ObservedRun]:
    """Active runs, newest first, doing exactly what ``fingerprint`` describes, that this
    repository has no evidence for and no item of this plan adopts; with them, ended ones
    made while this command waited for its lock (``Observation.concurrent_since``)."""
    if fingerprint is None:
        return []
    skip = {run_id for run_id in exclude if run_id}
    return [
        run
        for run in draft.unrecorded
        if run.fingerprint == fingerprint
        and run.id not in skip
        and run.id not in draft.claimed
        and (RunStatus.of(run.status).is_active or _made_meanwhile(run, draft.observed))
        and evidence_of(run, draft.recorded, draft.observed) is None
    ]


def _made_meanwhile(run: ObservedRun, observed: Observation) -> bool:
    since = observed.concurrent_since
    return since is not None and run.created_at is not None and run.created_at >= since


def adopt_command(address: str, run: ObservedRun) -> str:
    """The command that records ``run`` as ``address``'s run (a person's decision)."""
    return f"osmosis-state adopt {shlex.quote(address)} {shlex.quote(run.id)}"


def allow_command(address: str) -> str:
    """The command that pays for another run at ``address`` anyway."""
    return f"osmosis-apply --allow-duplicate {shlex.quote(address)}"


def twin_lines(address: str, twins: list[ObservedRun], what: str) -> tuple[str, ...]:
    """Who made each twin and when, then the two ways on (``what``: "this config asks")."""
    lines = []
    for run in twins[:TWINS_SHOWN]:
        who = run.creator_name or "an unnamed user"
        when = run.created_at.strftime("%Y-%m-%d %H:%M UTC") if run.created_at else "(no time)"
        lines.append(
            f"run {run_label(run.name, run.id)} is {run.status or 'active'}, created by {who} "
            f"on {when}, and does exactly what {what}; nothing this repository wrote names "
            "it, so paying for another is a decision"
        )
    if len(twins) > TWINS_SHOWN:
        lines.append(f"{len(twins) - TWINS_SHOWN} more such runs")
    lines.append(
        f"fix: if it is this address's run, record it: `{adopt_command(address, twins[0])}` "
        f"(checked against the config); to pay for another anyway: `{allow_command(address)}` "
        f"(or an `Osmosis-Allow-Duplicate: {address}` commit trailer)"
    )
    return tuple(lines)


def twin_fixes(address: str, twins: list[ObservedRun]) -> tuple[Fix, ...]:
    return (Fix(command=adopt_command(address, twins[0])), Fix(command=allow_command(address)))


def twin_blocked(item: PlanItem, twins: list[ObservedRun]) -> PlanItem:
    """``item`` blocked by ``twins``: what it would have done, and the decision to make."""
    staged = item.smoke is not None and item.smoke.stage == "smoke"
    what = "this smoke run asks" if staged else "this config asks"
    ids = {run.id for run in twins}
    # The diff phase's "not adopted" notes name the same runs: said once, here.
    warnings = tuple(w for w in item.warnings if not any(run_id in w for run_id in ids))
    return item.model_copy(
        update={
            "action": Action.BLOCKED,
            "reason": Reason.TWIN_ACTIVE,
            "details": (*twin_lines(item.address, twins, what), *item.details),
            "warnings": warnings,
            "blocked": Blocked(
                intended_action=item.action,
                intended_reason=item.reason,
                fixes=twin_fixes(item.address, twins),
            ),
        }
    )


def _named(twins: list[ObservedRun]) -> str:
    first = run_label(twins[0].name, twins[0].id)
    return f"run {first}" if len(twins) == 1 else f"run {first} (and {len(twins) - 1} more)"
