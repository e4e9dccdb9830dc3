"""The smoke stage: an expensive submit runs a small smoke run first (docs/smoke.md).

A submit or replace of an address a ``smoke`` rule covers, planning more attempts than the
rule's ``above``, becomes a smoke run: the same body narrowed to the first ``tasks`` tasks
(catalog order) of the selection the config would run, one attempt per task. Its entry is
recorded under the address with ``stage = "smoke"`` and the full config's digest; the plan
that sees it ended well submits the full run; one that sees it end badly blocks the full run
with the reason and what to do. Pure: no I/O, no clock.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Sequence
from typing import Any

from reconciler.escaping import escape_text
from reconciler.model import (
    Action,
    Blocked,
    DesiredRun,
    Fix,
    LockState,
    ObservedRun,
    PlanItem,
    Reason,
    RecordedRun,
    RunStatus,
    Settings,
    Smoke,
    SmokeRule,
    SmokeStage,
    glob_match,
)

SMOKE = SmokeStage.SMOKE

LOG_LINES = 3
"""The smoke run's last error lines a blocked full run quotes."""
LOG_WIDTH = 160
"""The most characters of each quoted line (escaped), the cut marked with ``...``."""


def rule_for(settings: Settings, address: str) -> SmokeRule | None:
    """The first ``smoke`` rule covering ``address``, or None."""
    return next((rule for rule in settings.smoke if glob_match(address, rule.addresses)), None)


def skipped(settings: Settings, address: str) -> bool:
    """Whether the smoke stage of ``address`` is skipped on request."""
    return glob_match(address, settings.skip_smoke)


def narrowed_spec(spec: dict[str, Any], tasks: Sequence[str]) -> dict[str, Any]:
    """``spec`` narrowed to ``tasks`` (by name) with one attempt per task."""
    body = copy.deepcopy(spec)
    body["tasks_config"] = {"task_names": list(tasks)}
    execution = dict(body.get("execution_config") or {})
    execution["attempts_per_task"] = 1
    body["execution_config"] = execution
    return body


def stage_paid_item(
    settings: Settings,
    item: PlanItem,
    wanted: DesiredRun,
    selected: tuple[str, ...] | None,
    *,
    after_smoke: str | None = None,
    resend_full: bool = False,
) -> PlanItem:
    """``item`` (a submit or replace of ``wanted``) as its smoke stage when a rule asks for
    one; ``after_smoke`` is the run id of a smoke run that ended well (the full run now);
    ``resend_full``: the item sends again a full run whose submit was lost (never a smoke
    run in its place)."""
    if item.action not in (Action.SUBMIT, Action.REPLACE):
        return item
    rule = rule_for(settings, item.address)
    if rule is None or item.attempts <= rule.above:
        return item
    if after_smoke is not None or resend_full:
        smoke = Smoke(stage=SmokeStage.FULL, full_attempts=item.attempts, smoke_run_id=after_smoke)
        return item.model_copy(update={"smoke": smoke})
    if skipped(settings, item.address):
        smoke = Smoke(stage=SmokeStage.SKIPPED, full_attempts=item.attempts)
        return item.model_copy(update={"smoke": smoke})
    if rule.task_names:
        tasks = rule.task_names
    elif selected:
        tasks = selected[: rule.tasks]
    else:
        return smoke_not_possible(settings, item, wanted, rule)
    smoke = Smoke(
        stage=SMOKE,
        smoke_attempts=len(tasks) * wanted.agent_count,  # one attempt per task
        full_attempts=item.attempts,
        tasks=tasks,
    )
    return item.model_copy(
        update={
            "spec": narrowed_spec(wanted.spec, tasks),
            "task_count": len(tasks),
            "attempts": smoke.smoke_attempts,
            "smoke": smoke,
            "cost": None,
        }
    )


def smoke_not_possible(
    settings: Settings, item: PlanItem, wanted: DesiredRun, rule: SmokeRule
) -> PlanItem:
    """A staged config whose smoke run cannot be made (the catalog does not list the tasks
    of its selection), blocked: the full run is never paid in its place (issue 34: HLE with
    ``task_set = "parity"`` paid 1,245 attempts at once, with a warning and exit 0)."""
    address = wanted.address
    skip = f"osmosis-apply --skip-smoke {shlex.quote(address)}"
    details = (
        f"a smoke rule covers {address} ({item.attempts:,} attempts, above {rule.above:,}), "
        "but its smoke run cannot be made: the catalog does not list the tasks of this "
        "selection, so none can be chosen for it; the full run is not submitted in its place",
        f"fix: one of: submit the full run without a smoke run, `{skip}` (or an "
        f"`Osmosis-Skip-Smoke: {address}` commit trailer); select tasks the catalog lists in "
        f"[tasks] of {wanted.path} (task_names or categories); or name the smoke run's tasks "
        f'in its smoke rule, `task_names = ["..."]` in its [[smoke]] table '
        f"({settings.settings_where})",
    )
    smoke = Smoke(stage=SMOKE, full_attempts=item.attempts)
    return item.model_copy(
        update={
            "action": Action.BLOCKED,
            "reason": Reason.SMOKE_NOT_POSSIBLE,
            "details": (*details, *item.details),
            "blocked": Blocked(
                intended_action=item.action,
                intended_reason=item.reason,
                fixes=(Fix(command=skip),),
            ),
            "smoke": smoke,
        }
    )


def passed_smoke_run(recorded: LockState, address: str, digest: str) -> str | None:
    """The smoke run of the config ``digest`` that left ``address`` for its full run, or None.

    It is the address's newest history entry: a smoke run of this config retired by the
    full run's submit (history reason ``smoke``). The full run it made way for was then
    never recorded (its submit was lost, or settled with ``osmosis-state resolve
    --not-submitted``), so what is sent next is that full run, never a second smoke run.
    """
    newest = next((h for h in recorded.history if h.address == address), None)  # newest first
    if (
        newest is None
        or newest.stage != SMOKE
        or newest.reason != SMOKE
        or newest.spec_digest != digest
    ):
        return None
    return newest.run_id


def ended_badly(entry: RecordedRun, run: ObservedRun | None, rule: SmokeRule | None) -> str | None:
    """Why the smoke run recorded in ``entry`` did not end well; None when it did.

    Ended well: finished (not failed or stopped), no errored task where the Platform's
    scores say so, and, when the rule asks for one, at least ``min_score`` best pass@1.
    """
    status = run.status if run is not None else entry.status
    if RunStatus.of(status) is not RunStatus.FINISHED:
        return f"the smoke run ended {status or 'without a status'}"
    if entry.results is not None and entry.results.errored:
        return f"{entry.results.errored} task(s) of the smoke run errored"
    if rule is not None and rule.min_score is not None:
        score = run.best_pass_at_1 if run is not None else None
        if score is None:
            return f"the smoke run has no score, and min_score = {rule.min_score:.2f} asks for one"
        if score < rule.min_score:
            return (
                f"the smoke run scored best pass@1 {score:.2f}, below min_score = "
                f"{rule.min_score:.2f}"
            )
    return None


def smoke_failed_item(
    wanted: DesiredRun, entry: RecordedRun, run: ObservedRun | None, why: str, full_attempts: int
) -> PlanItem:
    """The full run, blocked by a smoke run that did not end well, with what to do."""
    label = entry.run_name or entry.run_id or "?"
    skip = f"osmosis-apply --skip-smoke {shlex.quote(wanted.address)}"
    details = (
        f"{why}: smoke run {label} of {wanted.address} did not end well, so the full run "
        f"({full_attempts:,} attempts) is not submitted",
        f"see why: `{logs_command(wanted.address, label)}`"
        + (f" or the run page {entry.platform_url}" if entry.platform_url else ""),
        f"fix: correct the config ({wanted.path}); the changed config starts a new smoke run. "
        f"To submit the full run anyway: `{skip}` (or an `Osmosis-Skip-Smoke: "
        f"{wanted.address}` commit trailer)",
    )
    return PlanItem(
        action=Action.BLOCKED,
        address=wanted.address,
        reason=Reason.SMOKE_FAILED,
        run_id=entry.run_id,
        run_name=entry.run_name,
        before_digest=entry.spec_digest,
        after_digest=wanted.spec_digest,
        spec=wanted.spec,
        benchmark_id=entry.benchmark_id,
        attempts=0,
        details=details,
        requested_by=wanted.requested_by,
        requested_subject=wanted.requested_subject,
        blocked=Blocked(
            intended_action=Action.SUBMIT,
            fixes=(Fix(command=skip),),
        ),
        smoke=Smoke(stage=SMOKE, full_attempts=full_attempts, smoke_run_id=entry.run_id),
    )


def logs_command(address: str, run: str) -> str:
    """The command that shows a smoke run's warning and error lines."""
    return f"osmosis-logs {shlex.quote(f'{address}@{run}')} --level warning"


def quoted_line(line: str, width: int = LOG_WIDTH) -> str:
    """A log line as a blocked full run quotes it: escaped (a log is the Platform's text; no
    terminal escape or forged line gets through) and cut to ``width`` characters."""
    # Controls escaped here, so that no consumer of the plan (its JSON included) meets them;
    # backslashes are left to the renderers, which escape every detail once more.
    text = escape_text(line, keep_newlines=True).replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 3] + "..."


def with_log_lines(item: PlanItem, lines: Sequence[str] | None, problem: str | None) -> PlanItem:
    """A full run blocked by its smoke run (``smoke_failed_item``) with the smoke run's last
    error lines (``lines``, at most ``LOG_LINES`` shown), or why they could not be fetched
    (``problem``): a log that cannot be read never fails the plan."""
    if problem is not None or lines is None:
        said = f"the smoke run's log lines could not be fetched: {problem or 'no answer'}"
        return item.model_copy(update={"details": (*item.details[:2], said, *item.details[2:])})
    shown = [quoted_line(line) for line in lines[-LOG_LINES:]]
    head = (
        "the smoke run's last error lines:"
        if shown
        else "the smoke run's log has no warning or error line"
    )
    quoted = (head, *(f"    {line}" for line in shown))
    return item.model_copy(update={"details": (*item.details[:2], *quoted, *item.details[2:])})
