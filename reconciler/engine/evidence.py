"""A person's decision, checked against what the Platform says: ``osmosis-state resolve ADDR
--submitted RUN`` and ``osmosis-state adopt ADDR RUN``.

Both record a run as an address's without an apply, so both pay nothing, but each decides
what later applies stop, replace and download. A run id typed by hand can be anyone's run:
``resolve --submitted`` believed any id, and after an ordinary edit of the config the next
apply stopped another user's running run as a replace (issue 34). So each is checked against
the run's details (E5) first, by the fingerprint adoption uses (benchmark, task selection,
execution settings, each agent's harness, model and env), and refused, saying what differs:

* ``resolve --submitted RUN``: the run must do exactly what the lost submit sent (the body
  its intent kept) and have been created after the intent was written (minus the clock
  skew the plan allows);
* ``adopt ADDR RUN``: the run must do exactly what the config at ADDR asks, as its full run
  or as its smoke run (``plan.smoke``'s narrowed body); it is recorded with that stage.

The functions here take values (a ``RunDetail`` already read) and return the differences;
the command reads, checks, then writes through the lockfile's door.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from reconciler.errors import NotFoundError, UsageError
from reconciler.model import (
    BenchmarkInfo,
    DesiredRun,
    Intent,
    LockState,
    RecordedRun,
    RunStatus,
    Settings,
    SmokeStage,
    canonical_digest,
    effective_pass_threshold,
    spec_fingerprint,
    spec_fingerprint_fields,
)
from reconciler.plan import CLOCK_SKEW, spec_changes
from reconciler.plan.draft import timestamp
from reconciler.plan.ownership import recorded_ids
from reconciler.plan.smoke import SMOKE, narrowed_spec, rule_for
from reconciler.platform import PlatformClient, RunDetail
from reconciler.state.door import open_door
from reconciler.state.history import put_run, retire_run
from reconciler.state.lockfile import new_state

if TYPE_CHECKING:
    from reconciler.engine.context import Context

__all__ = [
    "Adoption",
    "adopt_run",
    "adopted_entry",
    "body_differences",
    "check_adoption",
    "check_submitted",
    "resolve_submitted",
    "submitted_differences",
]


def body_differences(
    detail: RunDetail, spec: Mapping[str, Any], benchmark_id: str | None
) -> tuple[str, ...]:
    """Empty when the run does exactly what ``spec`` asks, else what differs (run -> body)."""
    if spec_fingerprint(spec, benchmark_id) == detail.fingerprint():
        return ()
    changes = spec_changes(detail.fingerprint_fields(), spec_fingerprint_fields(spec, benchmark_id))
    return changes or ("its configuration differs",)


def submitted_differences(intent: Intent, detail: RunDetail) -> tuple[str, ...]:
    """Why ``detail`` cannot be the run the lost submit of ``intent`` created (empty: it can)."""
    problems: list[str] = []
    if not intent.spec:
        problems.append("the pending submit kept no body to compare the run with")
    else:
        problems.extend(
            f"the run differs from the body that was sent: {change}"
            for change in body_differences(detail, intent.spec, intent.benchmark_id)
        )
    created = detail.summary.created_at
    if created is None:
        problems.append("the Platform gives no creation time for the run")
    elif _before(created, intent.started_at):
        problems.append(
            f"the run was created {created.isoformat()}, before the submit started "
            f"({intent.started_at.isoformat()})"
        )
    return tuple(problems)


def _before(created: datetime, started: datetime) -> bool:
    return timestamp(created) < timestamp(started) - CLOCK_SKEW.total_seconds()


def adopted_entry(
    wanted: DesiredRun,
    detail: RunDetail,
    benchmark_id: str,
    *,
    stage: SmokeStage | None,
    spec: Mapping[str, Any],
    now: datetime,
    head: str | None,
    catalog_threshold: float | None = None,
) -> RecordedRun:
    """The lockfile entry recording ``detail`` as ``wanted``'s run (``stage``: ``smoke`` when
    it is the config's smoke run, whose ``spec`` is the narrowed body; ``catalog_threshold``:
    the benchmark's pass threshold, recorded when the config sets none)."""
    run = detail.summary
    return RecordedRun(
        address=wanted.address,
        # A smoke run's entry records the digest of the full config it smoke-tests.
        spec_digest=canonical_digest(wanted.spec, benchmark_id),
        spec=dict(spec),
        run_id=run.id,
        run_name=run.name or None,
        status=run.status or None,
        observed_at=now,
        submitted_at=run.created_at,
        requested_by=wanted.requested_by,
        applied_at_commit=head,
        benchmark_id=benchmark_id,
        platform_url=run.platform_url,
        stage=stage,
        pass_threshold=effective_pass_threshold(spec, catalog_threshold),
    )


# --------------------------------------------------------------------------- the checks


def read_run(client: PlatformClient, ref: str, workspace: str) -> RunDetail:
    """E5: the run a person named (its id or name)."""
    try:
        return client.get_run(ref)
    except NotFoundError:
        raise UsageError(
            f"no run {ref!r} in workspace {workspace}",
            "give the run's id or name as the Platform lists it (`osmosis benchmark runs list`)",
        ) from None


def _label(detail: RunDetail) -> str:
    run = detail.summary
    return f"{run.name} ({run.id})" if run.name and run.name != run.id else run.id


def check_submitted(
    client: PlatformClient, state: LockState | None, address: str, ref: str, display: str
) -> tuple[RunDetail, Intent]:
    """The run ``ref`` names, once it is shown to be the run the lost submit of ``address``
    created; a ``UsageError`` saying what differs otherwise."""
    intent = pending_submit(state, address, display)
    detail = read_run(client, ref, client.workspace or "")
    problems = submitted_differences(intent, detail)
    if problems:
        raise UsageError(
            f"run {_label(detail)} cannot be the run the lost submit of {address} created: "
            + "; ".join(problems),
            "name the run that submit created (`osmosis benchmark runs list`); if it created "
            f"none, `osmosis-state resolve {address} --not-submitted`",
        )
    if state is not None and detail.summary.id in recorded_ids(state):
        raise UsageError(
            f"run {_label(detail)} is already recorded in {display}",
            "name the run the interrupted submit created (see `osmosis benchmark runs list`)",
        )
    return detail, intent


def pending_submit(state: LockState | None, address: str, display: str) -> Intent:
    """The submit intent of ``address`` whose outcome is unknown."""
    entry = state.runs.get(address) if state is not None else None
    intent = entry.intent if entry is not None else None
    if intent is None or intent.op != "submit":
        raise UsageError(
            f"{address} has no submit with an unknown outcome in {display}",
            "`osmosis-state resolve` settles only a pending submit (the plan shows it as ?)",
        )
    return intent


def settle_submitted(
    state: LockState | None, address: str, display: str, detail: RunDetail, intent: Intent
) -> tuple[LockState, RecordedRun]:
    """Under the lock: the pending submit of ``address`` (the same one that was checked)
    recorded as having created ``detail``'s run; the next plan reads its status."""
    if pending_submit(state, address, display) != intent:
        raise UsageError(
            f"the pending submit of {address} changed in {display} while this command ran",
            "run the command again",
        )
    assert state is not None
    entry = state.runs[address]
    resolved = entry.model_copy(
        update={
            "intent": None,
            "run_id": detail.summary.id,
            "run_name": None,
            "status": None,
            "observed_at": None,
            "submitted_at": None,
            "spec": intent.spec or entry.spec,
        }
    )
    return put_run(state, resolved), entry


@dataclass(frozen=True)
class Adoption:
    """A run shown to be an address's, ready to record."""

    entry: RecordedRun
    """The lockfile entry to record."""
    replaces: RecordedRun | None
    """The entry at the address, moved to history (``lost``: its run is gone)."""
    replaced_status: str | None
    """That entry's run status as the Platform reported it (``missing`` when gone)."""


def check_adoption(
    client: PlatformClient,
    settings: Settings,
    state: LockState | None,
    wanted: DesiredRun,
    ref: str,
    *,
    display: str,
    now: datetime,
    head: str | None,
) -> Adoption:
    """``osmosis-state adopt ADDR RUN``: the run, shown to do exactly what the config at
    ADDR asks (its full run or its smoke run), and the entry it replaces, if any (only one
    whose run ended or is gone); a ``UsageError`` saying what differs otherwise."""
    address = wanted.address
    detail = read_run(client, ref, client.workspace or "")
    label = _label(detail)
    if state is not None and detail.summary.id in recorded_ids(state):
        raise UsageError(
            f"run {label} is already recorded in {display}",
            "see where with `osmosis-state list`; `osmosis-state mv OLD NEW` re-keys an entry",
        )
    try:
        benchmark = client.get_benchmark(wanted.benchmark).to_info()
    except NotFoundError:
        raise UsageError(
            f"{wanted.path}: benchmark {wanted.benchmark!r} does not resolve in workspace "
            f"{client.workspace}",
            "fix the config's [experiment].benchmark first (`osmosis-plan` says how)",
        ) from None
    stage, spec = _adopted_body(settings, wanted, benchmark, detail, label)
    replaces = state.runs.get(address) if state is not None else None
    status = _replaceable(client, replaces, address, display)
    entry = adopted_entry(
        wanted,
        detail,
        benchmark.id,
        stage=stage,
        spec=spec,
        now=now,
        head=head,
        catalog_threshold=benchmark.pass_threshold,
    )
    return Adoption(entry=entry, replaces=replaces, replaced_status=status)


def _adopted_body(
    settings: Settings,
    wanted: DesiredRun,
    benchmark: BenchmarkInfo,
    detail: RunDetail,
    label: str,
) -> tuple[SmokeStage | None, dict[str, Any]]:
    """(stage, body): what of the config the run does, the full run or its smoke run."""
    differences = body_differences(detail, wanted.spec, benchmark.id)
    if not differences:
        return None, dict(wanted.spec)
    rule = rule_for(settings, wanted.address)
    if rule is not None:
        from reconciler.plan.preflight import select  # only for a staged config

        listed = select(wanted, benchmark).names or ()
        names = rule.task_names or listed[: rule.tasks]
        if names:
            smoke = narrowed_spec(wanted.spec, names)
            if not body_differences(detail, smoke, benchmark.id):
                return SMOKE, smoke
    raise UsageError(
        f"run {label} does not do what {wanted.path} asks, so it is not recorded as "
        f"{wanted.address}'s: " + "; ".join(differences),
        "adopt records only a run identical to the config (or to its smoke run); to manage "
        f"another run, import it to its own config: `osmosis-import {detail.summary.id} --to "
        "PATH`",
    )


def _replaceable(
    client: PlatformClient, entry: RecordedRun | None, address: str, display: str
) -> str | None:
    """The status of the run ``entry`` records (``missing`` when the Platform has none),
    once shown to be ended or gone; a ``UsageError`` for an entry that must stay."""
    if entry is None:
        return None
    if entry.intent is not None:
        raise UsageError(
            f"{address} has a pending {entry.intent.op} in {display}",
            "run `osmosis-plan` and `osmosis-apply` first, or settle a lost submit with "
            f"`osmosis-state resolve {address}`",
        )
    if entry.run_id is None:
        return None
    try:
        status = client.get_run(entry.run_id).summary.status or entry.status
    except NotFoundError:
        return "missing"
    if RunStatus.of(status).is_active:
        raise UsageError(
            f"{address} records run {entry.run_name or entry.run_id}, which is still "
            f"{status}; adopt does not take the place of a running run",
            f"stop it first, or record the other run at a new address (`osmosis-state mv "
            f"{address} NEW`, then adopt)",
        )
    return status


def record_adoption(
    state: LockState | None, adoption: Adoption, display: str, now: datetime
) -> tuple[LockState, RecordedRun]:
    """Under the lock: the checked run recorded at its address (the entry it replaces, if
    any, unchanged since the check, moves to history)."""
    address = adoption.entry.address
    current = state.runs.get(address) if state is not None else None
    if current != adoption.replaces or (
        state is not None and adoption.entry.run_id in recorded_ids(state)
    ):
        raise UsageError(
            f"{address} changed in {display} while this command ran", "run the command again"
        )
    assert state is not None  # the command starts from a state (a new one when none)
    base = state
    if current is None:
        return put_run(base, adoption.entry), adoption.entry
    reason = "lost" if adoption.replaced_status == "missing" else "replaced"
    return (
        retire_run(base, address, reason, ended_at=now, replacement=adoption.entry),
        adoption.entry,
    )


# --------------------------------------------------------------------------- the commands


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def resolve_submitted(
    ctx: Context, address: str, ref: str, *, timeout: float, command: str, err: TextIO
) -> tuple[LockState, LockState, RunDetail]:
    """``osmosis-state resolve ADDR --submitted RUN``: check, then record under the lock.
    Returns (state before, state written, the run)."""
    from reconciler.engine.load import load_state

    display = ctx.settings.state
    detail, intent = check_submitted(ctx.client, load_state(ctx), address, ref, display)
    with open_door(
        ctx.lock_scope(), timeout=timeout, command=command, say=lambda line: err.write(line + "\n")
    ) as door:
        before = door.read(platform=ctx.platform_id, workspace=ctx.workspace)
        after, _entry = settle_submitted(before, address, display, detail, intent)
        assert before is not None
        written = door.write(after)
    return before, written, detail


def adopt_run(
    ctx: Context, address: str, ref: str, *, timeout: float, command: str, err: TextIO
) -> tuple[LockState, LockState, Adoption]:
    """``osmosis-state adopt ADDR RUN``: check the run against the config at ADDR, then
    record it under the lock. Returns (state before, state written, the adoption)."""
    from reconciler.config import load_configs
    from reconciler.engine.load import load_state

    settings = ctx.settings
    display = settings.state
    loaded = load_configs(
        ctx.repo_root, settings.benchmarks, ignore=settings.ignore, policy=settings.policy
    )
    wanted = next((run for run in loaded.runs if run.address == address), None)
    if wanted is None:
        problems = [i.render() for i in loaded.errors if address in i.file]
        raise UsageError(
            f"no valid config at {address} ({settings.benchmarks}/{address}.toml)"
            + (": " + "; ".join(problems) if problems else ""),
            "adopt records a run for a config that exists and validates; list the addresses "
            "with `osmosis-plan`",
        )
    now = _utcnow()
    head = ctx.git.head() if ctx.git else None
    adoption = check_adoption(
        ctx.client, settings, load_state(ctx), wanted, ref, display=display, now=now, head=head
    )
    with open_door(
        ctx.lock_scope(), timeout=timeout, command=command, say=lambda line: err.write(line + "\n")
    ) as door:
        read = door.read(platform=ctx.platform_id, workspace=ctx.workspace)
        before = read or new_state(ctx.platform_id, ctx.workspace)
        after, _entry = record_adoption(before, adoption, display, now)
        written = door.write(after)
    return before, written, adoption
