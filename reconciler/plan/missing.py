"""A recorded run the Platform no longer lists is never by itself a reason to pay.

A direct read answering 404 says the run id is unknown to this Platform and workspace now;
it does not say the config's run is gone. A hand-edited ``run_id``, a lockfile copied from
another clone or written against another machine's embedded Platform, a run the Platform
dropped: in each, paying again could make a second run while the first still runs
(issue 34: a hand edit paid for 2 runs of one config; a teammate's clone planned 12 submits,
$437). So what the plan does depends on what the lockfile last recorded of the run:

* **ended and downloaded**: nothing; its results stay (lockfile and disk);
* **ended, not downloaded**: named, with what was lost; submitted again only on request
  (``--replace``, an ``Osmosis-Rerun`` trailer);
* **active or unknown** (it may still run): ``!`` blocked, naming any active run that does
  exactly what the config asks (the twin guard's decision: ``osmosis-state adopt`` or
  ``--allow-duplicate``).

A re-run request goes through the diff phase's ordinary submit (and the twin guard); the
lockfile of another machine's embedded Platform is refused as a whole before this
(``elsewhere``). Pure: no I/O, no clock.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from reconciler.model import (
    Action,
    Blocked,
    DesiredRun,
    Fix,
    PlanItem,
    Reason,
    RecordedRun,
    RunStatus,
    glob_match,
    spec_fingerprint,
)
from reconciler.plan.draft import Draft, run_label
from reconciler.plan.twins import active_twins, allow_command, twin_fixes, twin_lines

__all__ = ["elsewhere", "elsewhere_message", "plan_missing"]

LOCAL_PLATFORM_DOC = "docs/local-platform.md#trying-it-out-as-a-team"
"""Where a team reads how to try the tool together on one served local Platform."""


def elsewhere(draft: Draft) -> bool:
    """Whether the lockfile was written against another instance of the embedded Platform
    (a try-out made on another machine and committed): none of its runs can exist here."""
    recorded = draft.recorded.platform_instance
    current = draft.observed.platform_instance
    return (
        recorded is not None
        and current is not None
        and recorded != current
        and bool(draft.recorded.runs or draft.recorded.history)
    )


def elsewhere_message(draft: Draft) -> str:
    """The one thing a plan says about another machine's try-out lockfile."""
    state = draft.settings.state
    runs = len(draft.recorded.runs)
    return (
        f"{state} was written against the embedded Platform of another machine (instance "
        f"{draft.recorded.platform_instance}; this one is {draft.observed.platform_instance}): "
        f"it is a try-out made there, and none of its {runs} recorded run(s) exist here, so "
        "nothing is planned, and nothing is paid. To try the configs on this machine, start "
        f"from a fresh state (`git rm {state}`, or move it away); to try them together, "
        f"serve one local Platform to the team (see {LOCAL_PLATFORM_DOC})"
    )


def plan_missing(
    draft: Draft,
    wanted: DesiredRun,
    entry: RecordedRun,
    submit: Callable[[], None],
) -> None:
    """Decide an unchanged config whose recorded run a direct read says is gone.

    ``submit`` plans the ordinary submit (adopting a run of evidence first): used when a
    person allowed it (``--allow-duplicate``) or when nothing was ever recorded to lose.
    """
    if entry.run_id is None or glob_match(wanted.address, draft.settings.allow_duplicate):
        submit()
        return
    label = run_label(entry.run_name, entry.run_id)
    status = RunStatus.of(entry.status)
    if status.is_terminal:
        downloads = entry.downloads
        if downloads is not None and downloads.complete:
            return  # its results stay
        draft.warnings.append(
            f"{wanted.address}: recorded run {label} ended {entry.status} and the Platform no "
            f"longer lists it; its outputs were {_lost(entry)}, and nothing is paid for "
            f"them: to run the config again, `osmosis-apply --replace {shlex.quote(wanted.address)}` "
            f'(or `git commit --allow-empty -m "Re-run {wanted.address}" -m "Osmosis-Rerun: '
            f'{wanted.address}"`)'
        )
        return
    benchmark = draft.observed.benchmarks.get(wanted.benchmark)
    fingerprint = spec_fingerprint(wanted.spec, benchmark.id) if benchmark is not None else None
    twins = active_twins(draft, fingerprint)
    seen = entry.status or "with no status"
    when = (
        f" on {entry.observed_at.strftime('%Y-%m-%d %H:%M UTC')}"
        if entry.observed_at is not None
        else ""
    )
    head = (
        f"recorded run {label} was last seen {seen}{when}, and the Platform no longer lists "
        "it (a direct read answered 404): it may still be running under another id (a "
        "hand-edited or copied lockfile), so nothing is paid until you decide"
    )
    if twins:
        details = (head, *twin_lines(wanted.address, twins, "this config asks"))
        fixes = twin_fixes(wanted.address, twins)
    else:
        allow = allow_command(wanted.address)
        details = (
            head,
            "no active run doing exactly what this config asks is listed",
            f"fix: to pay for a new run: `{allow}` (or an `Osmosis-Allow-Duplicate: "
            f"{wanted.address}` commit trailer); if the lockfile was edited by hand, restore "
            f"it from git (`git checkout HEAD -- {draft.settings.state}`)",
        )
        fixes = (Fix(command=allow),)
    draft.items.append(
        PlanItem(
            action=Action.BLOCKED,
            address=wanted.address,
            reason=Reason.RUN_MISSING_UNDECIDED,
            run_id=entry.run_id,
            run_name=entry.run_name,
            before_digest=entry.spec_digest,
            after_digest=wanted.spec_digest,
            spec=wanted.spec,
            benchmark_id=benchmark.id if benchmark is not None else None,
            details=details,
            requested_by=wanted.requested_by,
            requested_subject=wanted.requested_subject,
            blocked=Blocked(
                intended_action=Action.SUBMIT, intended_reason=Reason.RUN_MISSING, fixes=fixes
            ),
        )
    )


def _lost(entry: RecordedRun) -> str:
    downloads = entry.downloads
    if downloads is None:
        return "never downloaded (summary, results and artifacts are lost with the run)"
    got = ", ".join(downloads.types) or "none"
    return f"downloaded only in part ({got}; {downloads.files} files)"
