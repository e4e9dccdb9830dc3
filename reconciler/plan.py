"""The plan engine: a pure function of the three snapshots (design.md §6).

``compute_plan(desired, recorded, observed, settings)`` decides; it does no I/O, reads no
clock (``observed.observed_at`` is "now"), and does not log. Apply carries the result out;
the renderers show it. The order in which the snapshots are examined matters only where an
observed run could be claimed twice, and there it is fixed:

1. pending ``submit`` intents (a crash between POST and record) claim their run first;
2. renames pair a vanished address with a new one of the same spec digest (no Platform call);
3. new configs adopt an unrecorded run with a matching fingerprint, else submit;
4. every other recorded entry: changed, missing, finished, deleted;
5. drift, then targeting, skips, guards and the summary.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from deepdiff import DeepDiff

from reconciler.model import (
    NOT_DOWNLOADABLE_STATUSES,
    Action,
    BenchmarkInfo,
    DesiredRun,
    DriftItem,
    DriftKind,
    LocalOutputs,
    LockState,
    Observation,
    ObservedRun,
    Plan,
    PlanItem,
    PlanSummary,
    Reason,
    RecordedRun,
    ResultRow,
    Settings,
    digest,
    glob_match,
    is_active,
    is_terminal,
    spec_fingerprint,
)

CLOCK_SKEW = timedelta(minutes=10)
"""How far before an intent's ``started_at`` a run may have been created and still be its run:
the intent's time comes from our clock, ``created_at`` from the Platform's."""

ACTION_ORDER = {
    Action.MOVE: 0,
    Action.ADOPT: 1,
    Action.STOP: 2,
    Action.REPLACE: 3,
    Action.SUBMIT: 4,
    Action.BLOCKED: 5,
    Action.DOWNLOAD: 6,
    Action.FORGET: 7,
}
"""Order of items of one address (stops before submits, as apply runs them)."""

DRIFT_ORDER = {
    DriftKind.RUN_MISSING: 0,
    DriftKind.STOPPED_OUTSIDE: 1,
    DriftKind.FAILED_OUTSIDE: 2,
    DriftKind.FILES_CHANGED: 3,
    DriftKind.UNKNOWN_RUN: 4,
}

PREVIOUS_CONFIG_UNKNOWN = "previous config unknown: the lockfile does not hold the submitted body"


def compute_plan(
    desired: Sequence[DesiredRun],
    recorded: LockState,
    observed: Observation,
    settings: Settings,
) -> Plan:
    """Compare desired configs, the lockfile and what the Platform shows; return the plan."""
    return _Planner(desired, recorded, observed, settings).plan()


def result_rows(recorded: LockState, targets: tuple[str, ...] = ()) -> tuple[ResultRow, ...]:
    """One row per agent of every recorded ended run that has scores, by address.

    Each row carries the same agent index's scores from the address's newest earlier run
    that has them (history is newest first), so the table can say what changed.
    ``targets`` (address globs, empty = all) narrows the table like it narrows the plan.
    """
    previous: dict[str, tuple[str | None, str | None, dict[int, Any]]] = {}
    for old in recorded.history:
        if old.results is None or old.address in previous:
            continue
        current = recorded.runs.get(old.address)
        if current is not None and current.run_id == old.run_id:
            continue  # the same run (moved away and back): not an earlier run
        by_index = {agent.agent_index: agent for agent in old.results.agents}
        previous[old.address] = (old.run_id, old.run_name, by_index)
    rows: list[ResultRow] = []
    for address in sorted(recorded.runs):
        entry = recorded.runs[address]
        if entry.results is None or not is_terminal(entry.status or ""):
            continue
        if targets and not glob_match(address, targets):
            continue
        prev_id, prev_name, prev_agents = previous.get(address, (None, None, {}))
        for agent in sorted(entry.results.agents, key=lambda a: a.agent_index):
            before = prev_agents.get(agent.agent_index)
            rows.append(
                ResultRow(
                    address=address,
                    run_id=entry.run_id,
                    run_name=entry.run_name,
                    status=entry.status,
                    agent=agent,
                    previous=before,
                    previous_run_id=prev_id if before is not None else None,
                    previous_run_name=prev_name if before is not None else None,
                )
            )
    return tuple(rows)


def drift_fingerprint(kind: DriftKind, address: str | None, run_id: str | None) -> str:
    """Stable identity of a drift item: the same drift gives the same fingerprint every plan."""
    return digest([kind.value, address, run_id])


def spec_changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[str, ...]:
    """Field-level diff lines of two submit bodies, sorted by path.

    ``agents[0].model.model: "a" -> "b"`` for a changed value, ``+ path: value`` for an added
    key or list item, ``- path`` for a removed one.
    """
    if not before:
        return (PREVIOUS_CONFIG_UNKNOWN,)
    # threshold_to_diff_deeper=0: always report the innermost keys, never "whole table changed".
    diff = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0)
    lines: list[tuple[tuple[tuple[int, int, str], ...], str]] = []
    for report_type, levels in diff.items():
        for level in levels:
            parts = level.path(output_format="list")
            path = _format_path(parts)
            if report_type in ("values_changed", "type_changes"):
                line = f"{path}: {_format_value(level.t1)} -> {_format_value(level.t2)}"
            elif report_type in ("dictionary_item_added", "iterable_item_added"):
                line = f"+ {path}: {_format_value(level.t2)}"
            elif report_type in ("dictionary_item_removed", "iterable_item_removed"):
                line = f"- {path}"
            else:  # JSON bodies hold no sets or attributes; keep anything else visible anyway
                line = f"{path}: changed"
            lines.append((_path_key(parts), line))
    return tuple(line for _, line in sorted(lines))


def _path_key(parts: Iterable[Any]) -> tuple[tuple[int, int, str], ...]:
    # List indexes sort numerically (agents[2] before agents[10]), and before keys.
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in parts)


def _format_path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(root)"


def _format_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _timestamp(moment: datetime) -> float:
    # Lockfile times and Platform times may differ in tz-awareness; naive means UTC here.
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _newest_first(run: ObservedRun) -> tuple[float, str]:
    created = _timestamp(run.created_at) if run.created_at else float("-inf")
    return (-created, run.id)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


class _Planner:
    """Holds the working sets of one ``compute_plan`` call; never outlives it."""

    def __init__(
        self,
        desired: Sequence[DesiredRun],
        recorded: LockState,
        observed: Observation,
        settings: Settings,
    ) -> None:
        self.desired = {run.address: run for run in desired}
        self.recorded = recorded
        self.observed = observed
        self.settings = settings
        self.items: list[PlanItem] = []
        self.drift: list[DriftItem] = []
        self.warnings: list[str] = []
        known = {entry.run_id for entry in recorded.runs.values() if entry.run_id}
        known |= {
            entry.intent.run_id
            for entry in recorded.runs.values()
            if entry.intent and entry.intent.run_id
        }
        known |= {entry.run_id for entry in recorded.history if entry.run_id}
        self.unrecorded = sorted(
            (run for run_id, run in observed.runs.items() if run_id not in known),
            key=_newest_first,
        )
        self.claimed: set[str] = set()
        self.handled: set[str] = set()
        """Recorded addresses already decided (intent resolved or moved)."""

    # ------------------------------------------------------------------ orchestration

    def plan(self) -> Plan:
        for address in sorted(self.recorded.runs):
            entry = self.recorded.runs[address]
            if entry.intent is not None and entry.intent.op == "submit":
                self.handled.add(address)
                self._resolve_submit_intent(entry)
        new_addresses = self._pair_moves()
        for address in new_addresses:
            self._plan_new(self.desired[address])
        for address in sorted(self.recorded.runs):
            if address in self.handled:
                continue
            entry = self.recorded.runs[address]
            if address in self.desired:
                self._plan_recorded(self.desired[address], entry)
            else:
                self._plan_deleted(entry)
        for address in sorted(self.recorded.runs):
            self._status_drift(self.recorded.runs[address])
        for run in sorted(self.unrecorded, key=lambda r: r.id):
            if run.id not in self.claimed:
                self._add_drift(
                    DriftKind.UNKNOWN_RUN,
                    None,
                    run.id,
                    f"run {_run_label(run.name, run.id)}"
                    f"{' of ' + run.benchmark_name if run.benchmark_name else ''}"
                    f" ({run.status or 'unknown status'}) is in workspace "
                    f"{self.observed.workspace} but not in the lockfile",
                )
        return self._finish()

    def _finish(self) -> Plan:
        settings = self.settings
        items = sorted(self.items, key=lambda it: (it.address, ACTION_ORDER[it.action]))
        kept: list[PlanItem] = []
        other_pending = 0
        if not settings.refresh_only:
            for item in items:
                addresses = [item.address] + ([item.from_address] if item.from_address else [])
                if settings.targets and not any(glob_match(a, settings.targets) for a in addresses):
                    other_pending += 1
                    continue
                if settings.skip and any(glob_match(a, settings.skip) for a in addresses):
                    self.warnings.append(
                        f"{item.address}: {item.action.value} held back by a skip "
                        "(Osmosis-Skip); it stays pending for a later plan"
                    )
                    continue
                kept.append(item)
        counts = {action: 0 for action in Action}
        for item in kept:
            counts[item.action] += 1
        attempts = sum(it.attempts for it in kept if it.action in (Action.SUBMIT, Action.REPLACE))
        summary = PlanSummary(
            submit=counts[Action.SUBMIT],
            replace=counts[Action.REPLACE],
            stop=counts[Action.STOP],
            download=counts[Action.DOWNLOAD],
            forget=counts[Action.FORGET],
            adopt=counts[Action.ADOPT],
            move=counts[Action.MOVE],
            blocked=counts[Action.BLOCKED],
            attempts=attempts,
            drift=len(self.drift),
        )
        errors: list[str] = []
        stops = summary.stop + summary.replace
        if stops > settings.max_stops and not settings.allow_mass_stop:
            errors.append(
                f"the plan would stop {_plural(stops, 'run')} ({summary.stop} to stop, "
                f"{summary.replace} to replace), more than max_stops = {settings.max_stops}; "
                "re-run with --allow-mass-stop if that is intended, or raise max_stops in "
                "[tool.osmosis-reconciler]"
            )
        if attempts > settings.max_attempts and not settings.allow_over_budget:
            errors.append(
                f"the plan would start {attempts:,} new attempts, more than max_attempts = "
                f"{settings.max_attempts:,}; re-run with --allow-over-budget if that is "
                "intended, or raise max_attempts in [tool.osmosis-reconciler]"
            )
        drift = sorted(
            self.drift,
            key=lambda d: (d.address is None, d.address or "", DRIFT_ORDER[d.kind], d.run_id or ""),
        )
        return Plan(
            items=tuple(kept),
            drift=tuple(drift),
            warnings=tuple(self.warnings),
            errors=tuple(errors),
            summary=summary,
            lineage=self.recorded.lineage,
            serial=self.recorded.serial,
            platform=self.observed.platform,
            workspace=self.observed.workspace,
            head=self.observed.head,
            config_digests={a: self.desired[a].spec_digest for a in sorted(self.desired)},
            other_pending=other_pending,
            results=result_rows(self.recorded, settings.targets),
        )

    # ------------------------------------------------------------------ intents

    def _resolve_submit_intent(self, entry: RecordedRun) -> None:
        """A submit was in flight when apply stopped: adopt its run, or submit again."""
        intent = entry.intent
        assert intent is not None
        wanted = self.desired.get(entry.address)
        spec = intent.spec
        if not spec and wanted is not None and wanted.spec_digest == intent.body_digest:
            spec = wanted.spec
        fingerprint = spec_fingerprint(spec, intent.benchmark_id) if spec else None
        since = _timestamp(intent.started_at) - CLOCK_SKEW.total_seconds()
        window = [
            run
            for run in self.unrecorded
            if run.id not in self.claimed
            and (run.created_at is None or _timestamp(run.created_at) >= since)
        ]
        match = next(
            (run for run in window if fingerprint and run.fingerprint == fingerprint), None
        )
        before = entry.spec_digest if entry.run_id else None
        if match is not None:
            self.claimed.add(match.id)
            warnings: list[str] = []
            if wanted is None:
                warnings.append(
                    "its config was deleted since the submit; the next plan will stop or "
                    "forget the adopted run"
                )
            elif wanted.spec_digest != intent.body_digest:
                warnings.append(
                    "its config changed since the submit; the next plan will show the change"
                )
            self.items.append(
                PlanItem(
                    action=Action.ADOPT,
                    address=entry.address,
                    reason=Reason.INTENT_PENDING,
                    run_id=match.id,
                    run_name=match.name or None,
                    before_digest=before,
                    after_digest=intent.body_digest,
                    benchmark_id=match.benchmark_id or intent.benchmark_id,
                    warnings=tuple(warnings),
                    spec=dict(spec) if spec else None,
                    requested_by=wanted.requested_by if wanted else None,
                    requested_subject=wanted.requested_subject if wanted else None,
                )
            )
            return
        undecided = [
            run
            for run in window
            if run.fingerprint is None
            and (
                intent.benchmark_id is None
                or run.benchmark_id is None
                or run.benchmark_id == intent.benchmark_id
            )
        ]
        if undecided:
            details = [
                f"run {_run_label(run.name, run.id)}, created after the interrupted submit, "
                "could not be compared with it (its configuration was not fetched)"
                for run in undecided
            ]
            details.append(
                "fix: re-run `osmosis-plan`; it fetches the configuration of such runs and "
                "adopts the matching one instead of paying for a second run"
            )
            self.items.append(
                PlanItem(
                    action=Action.BLOCKED,
                    address=entry.address,
                    reason=Reason.INTENT_PENDING,
                    before_digest=before,
                    after_digest=intent.body_digest,
                    details=tuple(details),
                )
            )
            return
        if wanted is None:
            self.items.append(
                PlanItem(
                    action=Action.FORGET,
                    address=entry.address,
                    reason=Reason.CONFIG_DELETED,
                    run_id=entry.run_id,
                    run_name=entry.run_name,
                    before_digest=entry.spec_digest,
                    details=("the interrupted submit left no run on the Platform",),
                )
            )
            return
        changes = ()
        if entry.run_id and wanted.spec_digest != entry.spec_digest:
            changes = spec_changes(entry.spec, wanted.spec)
        self.items.append(
            self._paid(
                Action.SUBMIT,
                Reason.RESUBMIT_AFTER_LOST,
                wanted,
                run_id=entry.run_id,
                run_name=entry.run_name,
                before=before,
                changes=changes,
            )
        )

    # ------------------------------------------------------------------ new and moved configs

    def _pair_moves(self) -> list[str]:
        """Pair vanished addresses with new ones of the same digest; return the unpaired new."""
        vanished: dict[str, list[str]] = {}
        for address in sorted(self.recorded.runs):
            entry = self.recorded.runs[address]
            if address in self.desired or address in self.handled or entry.intent is not None:
                continue
            vanished.setdefault(entry.spec_digest, []).append(address)
        unpaired: list[str] = []
        for address in sorted(self.desired):
            if address in self.recorded.runs:
                continue
            wanted = self.desired[address]
            candidates = vanished.get(wanted.spec_digest)
            if not candidates:
                unpaired.append(address)
                continue
            old_address = candidates.pop(0)
            entry = self.recorded.runs[old_address]
            self.handled.add(old_address)
            self.items.append(
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

    def _plan_new(self, wanted: DesiredRun) -> None:
        match = self._claim_unrecorded(wanted)
        if match is not None:
            self.items.append(self._adopt(wanted, match, before=None))
        else:
            self.items.append(self._paid(Action.SUBMIT, Reason.NEW_CONFIG, wanted))

    def _claim_unrecorded(self, wanted: DesiredRun) -> ObservedRun | None:
        """The newest unclaimed unrecorded run doing exactly what ``wanted`` asks, if any."""
        benchmark = self.observed.benchmarks.get(wanted.benchmark)
        if benchmark is None:
            return None
        fingerprint = spec_fingerprint(wanted.spec, benchmark.id)
        for run in self.unrecorded:
            if run.id not in self.claimed and run.fingerprint == fingerprint:
                self.claimed.add(run.id)
                return run
        return None

    def _adopt(self, wanted: DesiredRun, run: ObservedRun, *, before: str | None) -> PlanItem:
        return PlanItem(
            action=Action.ADOPT,
            address=wanted.address,
            reason=Reason.UNRECORDED_MATCH,
            run_id=run.id,
            run_name=run.name or None,
            before_digest=before,
            after_digest=wanted.spec_digest,
            spec=wanted.spec,
            benchmark_id=run.benchmark_id,
            requested_by=wanted.requested_by,
            requested_subject=wanted.requested_subject,
        )

    # ------------------------------------------------------------------ recorded configs

    def _plan_recorded(self, wanted: DesiredRun, entry: RecordedRun) -> None:
        settings = self.settings
        run = self.observed.runs.get(entry.run_id) if entry.run_id else None
        active = run is not None and is_active(run.status)
        changed = wanted.spec_digest != entry.spec_digest
        changes = spec_changes(entry.spec, wanted.spec) if changed else ()
        requested = glob_match(wanted.address, settings.replace)
        common = {
            "run_id": entry.run_id,
            "run_name": (run.name if run and run.name else entry.run_name),
            "before": entry.spec_digest,
            "changes": changes,
        }
        if entry.intent is not None and entry.intent.op == "stop" and active:
            if requested or (changed and settings.on_change == "replace"):
                self.items.append(self._paid(Action.REPLACE, Reason.STOP_PENDING, wanted, **common))
            else:
                self.items.append(self._stop(entry, run, Reason.STOP_PENDING))
            return
        if requested:
            action = Action.REPLACE if active else Action.SUBMIT
            self.items.append(self._paid(action, Reason.REPLACE_REQUESTED, wanted, **common))
            return
        if changed:
            if active:
                if settings.on_change == "replace":
                    self.items.append(
                        self._paid(Action.REPLACE, Reason.SPEC_CHANGED, wanted, **common)
                    )
                else:
                    assert run is not None
                    self.warnings.append(
                        f"{wanted.address}: config changed but run "
                        f"{_run_label(common['run_name'], run.id)} is still {run.status or 'active'}; "
                        "on_change = keep leaves it running and submits the new config once "
                        "it has ended"
                    )
                return
            # The old run is over (or gone): a run matching the new config that the lockfile
            # missed (an apply whose lockfile commit was lost) is adopted rather than paid twice.
            match = self._claim_unrecorded(wanted)
            if match is not None:
                self.items.append(self._adopt(wanted, match, before=entry.spec_digest))
            else:
                self.items.append(self._paid(Action.SUBMIT, Reason.SPEC_CHANGED, wanted, **common))
            return
        if run is None:
            match = self._claim_unrecorded(wanted)
            if match is not None:
                self.items.append(self._adopt(wanted, match, before=entry.spec_digest))
            else:
                self.items.append(self._paid(Action.SUBMIT, Reason.RUN_MISSING, wanted, **common))
            return
        self._plan_download(entry, run)

    def _plan_download(self, entry: RecordedRun, run: ObservedRun) -> None:
        settings = self.settings
        status = run.status
        downloadable = is_terminal(status) or (
            settings.download_running and status not in NOT_DOWNLOADABLE_STATUSES
        )
        if not downloadable:
            return
        outputs = self.observed.outputs.get(entry.address, LocalOutputs())
        downloads = entry.downloads
        reason: Reason | None = None
        if downloads is not None:
            changed = sorted(outputs.changed & set(downloads.sha256))
            if changed:
                shown = ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else "")
                self._add_drift(
                    DriftKind.FILES_CHANGED,
                    entry.address,
                    entry.run_id,
                    f"{_plural(len(changed), 'downloaded file')} of run "
                    f"{_run_label(entry.run_name, run.id)} changed on disk: {shown}",
                )
                reason = Reason.RESULTS_CHANGED
            elif (
                not downloads.complete
                or not set(settings.download_types) <= set(downloads.types)
                # A complete recorded download is done; only `outputs = "disk"` wants the
                # files here too (a fresh clone or CI runner has none of them).
                or (
                    settings.outputs == "disk"
                    and any(path not in outputs.present for path in downloads.sha256)
                )
            ):
                reason = Reason.RESULTS_MISSING
        elif is_terminal(status) and (entry.status is None or not is_terminal(entry.status)):
            reason = Reason.RUN_FINISHED
        else:
            reason = Reason.RESULTS_MISSING
        if reason is None:
            return
        self.items.append(
            PlanItem(
                action=Action.DOWNLOAD,
                address=entry.address,
                reason=reason,
                run_id=run.id,
                run_name=run.name or entry.run_name,
                before_digest=entry.spec_digest,
                after_digest=entry.spec_digest,
                benchmark_id=entry.benchmark_id or run.benchmark_id,
                download_types=tuple(settings.download_types),
            )
        )

    def _plan_deleted(self, entry: RecordedRun) -> None:
        run = self.observed.runs.get(entry.run_id) if entry.run_id else None
        if run is not None and is_active(run.status):
            if entry.intent is not None and entry.intent.op == "stop":
                self.items.append(self._stop(entry, run, Reason.STOP_PENDING))
                return
            if self.settings.on_delete == "stop":
                self.items.append(self._stop(entry, run, Reason.CONFIG_DELETED))
                return
            self.items.append(
                self._forget(
                    entry,
                    run,
                    warnings=(
                        f"run {_run_label(run.name or entry.run_name, run.id)} keeps running on "
                        "the Platform (on_delete = forget)",
                    ),
                )
            )
            return
        self.items.append(self._forget(entry, run))

    def _stop(self, entry: RecordedRun, run: ObservedRun | None, reason: Reason) -> PlanItem:
        return PlanItem(
            action=Action.STOP,
            address=entry.address,
            reason=reason,
            run_id=run.id if run else entry.run_id,
            run_name=(run.name if run and run.name else entry.run_name),
            before_digest=entry.spec_digest,
            benchmark_id=entry.benchmark_id,
        )

    def _forget(
        self, entry: RecordedRun, run: ObservedRun | None, warnings: tuple[str, ...] = ()
    ) -> PlanItem:
        return PlanItem(
            action=Action.FORGET,
            address=entry.address,
            reason=Reason.CONFIG_DELETED,
            run_id=entry.run_id,
            run_name=(run.name if run and run.name else entry.run_name),
            before_digest=entry.spec_digest,
            benchmark_id=entry.benchmark_id,
            warnings=warnings,
        )

    # ------------------------------------------------------------------ drift

    def _status_drift(self, entry: RecordedRun) -> None:
        intent = entry.intent
        if intent is not None and intent.op == "submit":
            return  # in flight: the intent resolution above explains this entry
        if not entry.run_id:
            return
        run = self.observed.runs.get(entry.run_id)
        label = _run_label(entry.run_name, entry.run_id)
        if run is None:
            self._add_drift(
                DriftKind.RUN_MISSING,
                entry.address,
                entry.run_id,
                f"recorded run {label} no longer exists on the Platform",
            )
            return
        if entry.status is None or not is_active(entry.status):
            return
        if run.status == "stopped" and not (intent is not None and intent.op == "stop"):
            self._add_drift(
                DriftKind.STOPPED_OUTSIDE,
                entry.address,
                run.id,
                f"run {label} was stopped outside osmosis-reconciler (recorded {entry.status})",
            )
        elif run.status == "failed":
            self._add_drift(
                DriftKind.FAILED_OUTSIDE,
                entry.address,
                run.id,
                f"run {label} failed (recorded {entry.status}); see "
                f"`osmosis benchmark runs logs {run.name or run.id}`",
            )

    def _add_drift(
        self, kind: DriftKind, address: str | None, run_id: str | None, message: str
    ) -> None:
        self.drift.append(
            DriftItem(
                kind=kind,
                address=address,
                run_id=run_id,
                message=message,
                fingerprint=drift_fingerprint(kind, address, run_id),
            )
        )

    # ------------------------------------------------------------------ paid actions

    def _paid(
        self,
        action: Action,
        reason: Reason,
        wanted: DesiredRun,
        *,
        run_id: str | None = None,
        run_name: str | None = None,
        before: str | None = None,
        changes: tuple[str, ...] = (),
    ) -> PlanItem:
        """A submit or replace, with its cost, after preflight; ``blocked`` when it would fail."""
        benchmark = self.observed.benchmarks.get(wanted.benchmark)
        problems, warnings = _preflight(wanted, benchmark, self.observed)
        task_count = _task_count(wanted, benchmark)
        attempts = (
            task_count * wanted.agent_count * wanted.attempts_per_task
            if task_count is not None
            else 0
        )
        fields: dict[str, Any] = {
            "address": wanted.address,
            "run_id": run_id,
            "run_name": run_name,
            "before_digest": before,
            "after_digest": wanted.spec_digest,
            "spec": wanted.spec,
            "benchmark_id": benchmark.id if benchmark else None,
            "task_count": task_count,
            "attempts": attempts,
            "changes": changes,
            "warnings": tuple(warnings),
            "requested_by": wanted.requested_by,
            "requested_subject": wanted.requested_subject,
        }
        if problems:
            return PlanItem(
                action=Action.BLOCKED,
                reason=problems[0][0],
                details=tuple(text for _, text in problems),
                intended_action=action,
                intended_reason=reason,
                **fields,
            )
        return PlanItem(action=action, reason=reason, **fields)


def _run_label(name: str | None, run_id: str | None) -> str:
    if name and run_id and name != run_id:
        return f"{name} ({run_id})"
    return name or run_id or "(no run)"


def _task_count(wanted: DesiredRun, benchmark: BenchmarkInfo | None) -> int | None:
    """Tasks the submit would select; the Platform's precedence is task_set > names > categories.

    An unknown ``task_set`` is silently expanded by the Platform to the whole benchmark, so
    that is what it costs. An empty ``task_names`` list is counted as the whole benchmark:
    over-estimating a budget is the safe side.
    """
    if benchmark is None:
        return len(wanted.task_names) if wanted.task_names else None
    if wanted.task_set:
        return benchmark.task_sets.get(wanted.task_set, benchmark.task_count)
    if wanted.task_names:
        return len(wanted.task_names)
    if wanted.categories:
        return sum(benchmark.categories.get(name, 0) for name in wanted.categories)
    return benchmark.task_count


def _preflight(
    wanted: DesiredRun, benchmark: BenchmarkInfo | None, observed: Observation
) -> tuple[list[tuple[Reason, str]], list[str]]:
    """Every reason the submit would fail, each with its exact fix; and non-blocking warnings."""
    problems: list[tuple[Reason, str]] = []
    warnings: list[str] = []
    path = wanted.path
    if benchmark is None:
        problems.append(
            (
                Reason.BENCHMARK_NOT_FOUND,
                f'benchmark "{wanted.benchmark}" does not resolve by key, name or id in '
                f"workspace {observed.workspace}; fix: add it to the workspace on the Platform, "
                f"or correct [experiment].benchmark in {path}",
            )
        )
    elif benchmark.sync_status != "ready":
        progress = f"{benchmark.synced_task_count} of {benchmark.task_count} tasks synced"
        if benchmark.sync_status == "failed":
            text = (
                f"{benchmark.name} is not runnable: its task sync failed "
                f"({benchmark.sync_error or 'no reason given'}; {progress}); fix: retry its sync"
                f"{' at ' + benchmark.platform_url if benchmark.platform_url else ' on the Platform'}"
                ", then plan again"
            )
        else:
            text = (
                f"{benchmark.name} is still syncing its task list ({progress}, status "
                f"{benchmark.sync_status}); fix: plan again once it is ready"
                f"{' (' + benchmark.platform_url + ')' if benchmark.platform_url else ''}"
            )
        problems.append((Reason.BENCHMARK_NOT_READY, text))

    needed: list[tuple[str, str]] = [
        (name, f"referenced by {path}") for name in wanted.secret_names
    ]
    if benchmark is not None:
        needed += [
            (name, f"required by {benchmark.name}")
            for name in benchmark.required_secret_names
            if name not in wanted.secret_names
        ]
    if needed and observed.secrets is None:
        warnings.append(
            "secrets could not be listed, so these were not checked: "
            + ", ".join(name for name, _ in needed)
        )
    elif observed.secrets is not None:
        for name, why in needed:
            if name not in observed.secrets:
                problems.append(
                    (
                        Reason.SECRET_MISSING,
                        f"secret {name} ({why}) is not stored on the Platform; "
                        f"fix: `osmosis secret set {name}`",
                    )
                )

    if benchmark is None:
        return problems, warnings

    if (benchmark.requires_judge_model or benchmark.requires_judge_api_key) and not (
        wanted.judge_secret
    ):
        problems.append(
            (
                Reason.JUDGE_REQUIRED,
                f"{benchmark.name} is graded by an LLM judge and needs its credential; fix: "
                f"set [execution].judge_api_key_secret in {path} to a stored secret record name",
            )
        )
    for index, harness in enumerate(wanted.harnesses, start=1):
        if harness is None and benchmark.requires_harness:
            suggestion = (
                f'harness = "{benchmark.default_harness}"'
                if benchmark.default_harness
                else "harness"
            )
            problems.append(
                (
                    Reason.HARNESS_REQUIRED,
                    f"{benchmark.name} requires a harness but agent {index} has none; fix: set "
                    f"{suggestion} in [[agents]] {index} of {path}",
                )
            )
        elif harness is not None and not benchmark.supports_harness:
            problems.append(
                (
                    Reason.HARNESS_UNSUPPORTED,
                    f"{benchmark.name} runs only its official scaffold but agent {index} sets "
                    f'harness = "{harness}"; fix: remove harness from [[agents]] {index} of {path}',
                )
            )
        elif (
            harness is not None
            and benchmark.default_harness
            and harness != benchmark.default_harness
        ):
            warnings.append(
                f'agent {index} uses harness "{harness}", not {benchmark.name}\'s default '
                f'"{benchmark.default_harness}": scores not comparable with the published '
                "leaderboard"
            )

    info = f"`osmosis benchmark info {benchmark.key}`"
    if wanted.task_names:
        if benchmark.task_names:
            unknown = [n for n in wanted.task_names if n not in benchmark.task_names]
            if unknown:
                problems.append(
                    (
                        Reason.TASKS_NOT_FOUND,
                        f"{_plural(len(unknown), 'task')} not in {benchmark.name}: "
                        f"{', '.join(unknown)}; fix: correct [tasks].task_names in {path} "
                        f"(list the tasks with {info})",
                    )
                )
        else:
            warnings.append(
                f"the catalog did not list {benchmark.name}'s tasks, so [tasks].task_names "
                "were not checked"
            )
    if wanted.categories:
        unknown = [c for c in wanted.categories if c not in benchmark.categories]
        if unknown:
            known = ", ".join(sorted(benchmark.categories)) or "none"
            problems.append(
                (
                    Reason.TASKS_NOT_FOUND,
                    f"{'category' if len(unknown) == 1 else 'categories'} not in "
                    f"{benchmark.name}: {', '.join(unknown)}; fix: use one of ({known}) in "
                    f"[tasks].categories of {path}",
                )
            )
    if wanted.task_set and wanted.task_set not in benchmark.task_sets:
        known = ", ".join(sorted(benchmark.task_sets)) or "none"
        problems.append(
            (
                Reason.TASKS_NOT_FOUND,
                f'task set "{wanted.task_set}" does not exist in {benchmark.name} (the Platform '
                f"would run every task instead); fix: use one of ({known}) or remove "
                f"[tasks].task_set in {path}",
            )
        )
    is_hle = "hle" in (benchmark.key.strip().lower(), wanted.benchmark.strip().lower())
    if is_hle and wanted.task_set != "parity":
        warnings.append(
            'For HLE, we recommend [tasks] task_set = "parity" so results are comparable with '
            "published scores. This submission uses the full or a custom task selection."
        )
    return problems, warnings
