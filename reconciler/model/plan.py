"""The plan: ``compute_plan``'s value, read by the renderers and by apply."""

from __future__ import annotations

import json
from datetime import datetime
from enum import Enum
from typing import Any

import msgspec

from reconciler.model.base import Frozen
from reconciler.model.decision import DecisionRecord
from reconciler.model.generator import CellSource, GeneratorProduct
from reconciler.model.observed import AgentResult, LeaderboardScore, ObservedRun
from reconciler.model.recorded import SmokeStage

PLAN_FORMAT_VERSION = "1.0"


class Action(str, Enum):
    """The closed set of things apply can do. Apply switches on this alone."""

    SUBMIT = "submit"
    REPLACE = "replace"
    STOP = "stop"
    FORGET = "forget"
    DOWNLOAD = "download"
    ADOPT = "adopt"
    MOVE = "move"
    BLOCKED = "blocked"
    UNKNOWN = "unknown"
    """A submit whose outcome is unknown: no run found yet, not sent again yet. Apply only
    records the observation as evidence (no Platform call)."""
    RETRY = "retry"
    """A paid follow-up run of only the attempts of the address's ended, downloaded run
    that errored (``--retry-errored``, docs/retrying.md); submitted like any run."""

    @property
    def symbol(self) -> str:
        return ACTION_SYMBOLS[self]


ACTION_SYMBOLS = {
    Action.SUBMIT: "+",
    Action.REPLACE: "-/+",
    Action.STOP: "-",
    Action.FORGET: ".",
    Action.DOWNLOAD: "↓",
    Action.ADOPT: "<=",
    Action.MOVE: ">",
    Action.BLOCKED: "!",
    Action.UNKNOWN: "?",
    Action.RETRY: "↻",
}


class Reason(str, Enum):
    """Why an item is in the plan. For people; never drives apply."""

    NEW_CONFIG = "new_config"
    SPEC_CHANGED = "spec_changed"
    CONFIG_DELETED = "config_deleted"
    RUN_FINISHED = "run_finished"
    RESULTS_MISSING = "results_missing"
    RESULTS_CHANGED = "results_changed"
    INTENT_PENDING = "intent_pending"
    UNRECORDED_MATCH = "unrecorded_match"
    RENAMED = "renamed"
    REPLACE_REQUESTED = "replace_requested"
    RUN_MISSING = "run_missing"
    RESUBMIT_AFTER_LOST = "resubmit_after_lost"
    SECRET_MISSING = "secret_missing"
    BENCHMARK_NOT_FOUND = "benchmark_not_found"
    BENCHMARK_NOT_READY = "benchmark_not_ready"
    JUDGE_REQUIRED = "judge_required"
    HARNESS_REQUIRED = "harness_required"
    HARNESS_UNSUPPORTED = "harness_unsupported"
    TASKS_NOT_FOUND = "tasks_not_found"
    STOP_PENDING = "stop_pending"
    EXECUTION_INVALID = "execution_invalid"
    VERIFIER_REJECTED = "verifier_rejected"
    TASKS_EMPTY = "tasks_empty"
    RECORD_MISMATCH = "record_mismatch"
    PLATFORM_REFUSED = "platform_refused"
    SMOKE_PASSED = "smoke_passed"
    SMOKE_FAILED = "smoke_failed"
    OUTCOME_UNKNOWN = "outcome_unknown"
    TWIN_ACTIVE = "twin_active"
    """An active run this repository has no evidence for does exactly what the paid item
    would submit (``plan.twins``)."""
    RUN_MISSING_UNDECIDED = "run_missing_undecided"
    """The recorded run is not listed and was last seen active (or never seen ended): it
    may still run, so nothing is paid until a person decides (``plan.missing``)."""
    SMOKE_NOT_POSSIBLE = "smoke_not_possible"
    """A smoke rule covers the config but its smoke selection cannot be made."""
    RETRY_ERRORED = "retry_errored"
    """A retry of the errored attempts was asked for (``--retry-errored``, an
    ``Osmosis-Retry-Errored`` trailer)."""
    RETRY_NOT_READY = "retry_not_ready"
    """A retry was asked for, but the run has not ended, or its outputs are not on disk."""


class Fix(Frozen, frozen=True, kw_only=True):
    """One step that makes a blocked item pass on the next plan, exactly as shown.

    Either a shell ``command`` (run from the repository root) or an edit of a config file:
    set ``key`` to ``value`` (or ``remove`` it). ``text`` is how a person reads it.
    """

    command: str | None = None
    """A shell command that fixes it, run from the repository root."""
    file: str | None = None
    """For an edit: the config file, relative to the repository root."""
    key: str | None = None
    """For an edit: the TOML key, dotted, with ``[n]`` for an array-of-tables item
    (``execution.max_concurrent_attempts``, ``agents[0].harness``)."""
    value: Any = None
    """For an edit: the new value (a string, integer or list of strings)."""
    remove: bool = False
    """For an edit: remove ``key`` instead of setting it."""

    @property
    def text(self) -> str:
        if self.command is not None:
            return f"`{self.command}`"
        if self.remove:
            return f"remove `{self.key}` from {self.file}"
        return f"set `{self.key} = {json.dumps(self.value, ensure_ascii=False)}` in {self.file}"


class Blocked(Frozen, frozen=True, kw_only=True):
    """Preflight's verdict on a ``blocked`` item: what the plan would have done, and the
    steps that make it pass."""

    intended_action: Action | None = None
    """What the plan would have done had preflight passed (submit or replace); None for an
    item blocked before preflight (an interrupted stop, a record that does not match)."""
    intended_reason: Reason | None = None
    """Why it would have done it (the item's ``reason`` then names the first problem)."""
    fixes: tuple[Fix, ...] = ()
    """The steps that make it pass, in order (each is also quoted in ``details``)."""
    refused: bool = False
    """A saved plan's item that the plan recomputed at apply time does not hold: apply
    refuses it, and that is a failure of the apply (an ordinary blocked item is not)."""


class Cost(Frozen, frozen=True, kw_only=True):
    """The estimated dollars of a paid item's attempts (``plan.cost``)."""

    usd_high: float
    """Upper end of the range (the budget guard compares this)."""
    usd_low: float | None = None
    """Lower end; None when the estimate is a single figure."""
    basis: str | None = None
    """Where the estimate comes from (e.g. recorded runs of the same model)."""


class BenchmarkFacts(Frozen, frozen=True, kw_only=True):
    """The catalog's seed data shown with a paid item (E2)."""

    source_url: str | None = None
    """The benchmark's upstream source (E2 ``source_url``)."""
    pass_threshold: float | None = None
    """Score at which a task counts as passed."""


class Smoke(Frozen, frozen=True, kw_only=True):
    """The smoke stage of a paid item (``smoke`` setting, docs/smoke.md)."""

    stage: SmokeStage
    """``smoke``: this item submits the smoke run (``spec`` is the narrowed body); ``full``:
    the full run, after the smoke run ended well; ``skipped``: the full run, the smoke
    stage skipped on request (``--skip-smoke``, an ``Osmosis-Skip-Smoke`` trailer)."""
    smoke_attempts: int = 0
    """Attempts of the smoke run."""
    full_attempts: int = 0
    """Attempts of the full run that follows (or follows now)."""
    tasks: tuple[str, ...] = ()
    """For ``smoke``: the tasks of the smoke run, in catalog order."""
    smoke_run_id: str | None = None
    """For ``full`` and a blocked item: the smoke run it follows."""


class Retry(Frozen, frozen=True, kw_only=True):
    """What a ``retry`` item re-runs (``plan.retries``): one group of the errored attempts
    of a run, the tasks that errored equally often for the same agents."""

    retry_of: str
    """The run whose errored attempts it re-runs (the address's result)."""
    retry_of_name: str | None = None
    """That run's name."""
    agents: tuple[int, ...]
    """The retried run's agent index of each agent of the narrowed body, in order."""
    tasks: tuple[str, ...]
    """The tasks of the narrowed body (``tasks_config.task_names``)."""
    attempts_per_task: int
    """Attempts per task of the narrowed body: how often each of these errored."""
    errored: int
    """Errored attempts of the address's result, in all (this group and the others)."""
    later: tuple[str, ...] = ()
    """The other groups (``"3 tasks x 1 agent x 2 attempts"``): the Platform takes one
    attempts count per run, so each is a retry run of its own, planned once this one has
    ended and its outputs were downloaded."""


PAID_ACTIONS = frozenset({Action.SUBMIT, Action.REPLACE, Action.BLOCKED, Action.RETRY})
"""Actions that start (or would start) a paid run: the only ones with a cost, benchmark
facts and a rejection context."""


class PlanItem(Frozen, frozen=True, kw_only=True):
    """One thing the plan would do, with why.

    Facts that belong to some actions only are optional groups, and an item that carries
    one for another action cannot be built (``ValueError``): ``blocked`` only on a blocked
    item, ``cost``/``benchmark``/``context`` only on a paid one (submit, replace, blocked),
    ``from_address`` only on a move (or on the adoption that carries a renamed config's
    pending submit to its new address).
    """

    action: Action
    """What apply does (apply switches on this alone)."""
    address: str
    """The config's address (for a move, the new one)."""
    reason: Reason
    """Why, for people; never drives apply."""
    run_id: str | None = None
    """The existing run acted on (stop, download, adopt, replace's old run)."""
    run_name: str | None = None
    """That run's name, as the Platform lists it."""
    before_digest: str | None = None
    """Spec digest recorded in the lockfile (None for a new config)."""
    after_digest: str | None = None
    """Spec digest of the config now (None for a deleted config)."""
    from_address: str | None = None
    """For ``move``, the old address; for ``adopt``, the address whose pending submit made
    the run, when its config has moved to ``address`` since."""
    spec: dict[str, Any] | None = None
    """The submit body: for submit/replace the body to POST; for adopt, the config's."""
    benchmark_id: str | None = None
    """The benchmark the body targets, resolved to its id (None when it did not resolve)."""
    task_count: int | None = None
    """Selected tasks (None when the selection is unknown)."""
    attempts: int = 0
    """Selected tasks x agents x attempts_per_task (new paid attempts)."""
    changes: tuple[str, ...] = ()
    """Field-level diff lines, e.g. ``agents[0].model.model: "a" -> "b"``."""
    details: tuple[str, ...] = ()
    """For ``blocked``: what is wrong and the exact fix; otherwise further notes."""
    warnings: tuple[str, ...] = ()
    """Preflight warnings that do not block (scores not comparable, ...)."""
    requested_by: str | None = None
    """Commit sha that requested this (the config's last commit, or a re-run trailer's)."""
    requested_subject: str | None = None
    """That commit's subject line."""
    reruns: tuple[str, ...] = ()
    """For a paid item: the commits whose pending ``Osmosis-Rerun`` request it carries out;
    apply records them in the lockfile (``LockState.reruns``) when it submits."""
    download_types: tuple[str, ...] = ()
    """For ``download``: the output types to fetch."""
    blocked: Blocked | None = None
    """For ``blocked`` only: what it would have done and how to make it pass."""
    benchmark: BenchmarkFacts | None = None
    """For paid items: the benchmark's source and pass threshold, when the catalog has them."""
    context: str | None = None
    """For paid items: ``rejection_context`` of the plan, recorded with a refusal."""
    cost: Cost | None = None
    """For paid items: the estimated dollars, when recorded runs allow an estimate."""
    smoke: Smoke | None = None
    """For paid items and the adoption of a smoke run: the smoke stage, when one applies."""
    source: CellSource | None = None
    """For an address of a run generator: the file, the cell, and for a vanished cell which
    element went (``note``)."""
    listed_at: datetime | None = None
    """For ``unknown`` only: when this plan's run list, complete back to the submit, showed
    no run that could be it. Apply records it in the intent as evidence for the quiet
    period."""
    retry: Retry | None = None
    """For ``retry`` (and its blocked form, and the adoption of a retry run after a crash):
    which run's errored attempts it re-runs, and how."""
    standing: bool = False
    """For ``blocked`` only: the block is already recorded in the lockfile (a smoke run
    recorded as ended badly, a remembered refusal): listed in every plan, but it does not
    fail one (``osmosis-plan`` exits 4 only for blocks that are new since the last apply)."""

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """The steps that make a blocked item pass (none for other items)."""
        return self.blocked.fixes if self.blocked is not None else ()

    def __post_init__(self) -> None:
        wrong = []
        if self.blocked is not None and self.action is not Action.BLOCKED:
            wrong.append("blocked")
        if self.action not in PAID_ACTIONS:
            wrong += [
                name
                for name, value in (
                    ("cost", self.cost),
                    ("benchmark", self.benchmark),
                    ("context", self.context),
                )
                if value is not None
            ]
        if self.from_address is not None and self.action not in (Action.MOVE, Action.ADOPT):
            wrong.append("from_address")
        if self.listed_at is not None and self.action is not Action.UNKNOWN:
            wrong.append("listed_at")
        if self.standing and self.action is not Action.BLOCKED:
            wrong.append("standing")
        if wrong:
            raise ValueError(
                f"a {self.action.value} item cannot carry {', '.join(wrong)} ({self.address})"
            )


class DriftKind(str, Enum):
    RUN_MISSING = "run_missing"
    STOPPED_OUTSIDE = "stopped_outside"
    FAILED_OUTSIDE = "failed_outside"
    FILES_CHANGED = "files_changed"
    POSSIBLE_DUPLICATE = "possible_duplicate"


class DriftItem(Frozen, frozen=True, kw_only=True):
    """A difference between the recorded state and reality that no action explains."""

    kind: DriftKind
    """What kind of difference (closed set)."""
    address: str | None
    """The address it concerns; None for the workspace as a whole."""
    run_id: str | None
    """The run it concerns, when one."""
    message: str
    """What differs, in words, with what to do."""
    fingerprint: str
    """Stable across plans for the same drift, so scheduled checks alert only on new items."""


class PlanSummary(Frozen, frozen=True, kw_only=True):
    """The plan counted: items per action, new attempts, drift and estimated cost."""

    submit: int = 0
    """Items that submit a new run."""
    replace: int = 0
    """Items that stop a run, then submit its replacement."""
    stop: int = 0
    """Items that stop a run."""
    download: int = 0
    """Items that download a run's outputs."""
    forget: int = 0
    """Items that move an entry to history."""
    adopt: int = 0
    """Items that record a run already on the Platform."""
    move: int = 0
    """Items that re-key an entry to a renamed config."""
    blocked: int = 0
    """Items that cannot succeed as configured."""
    retry: int = 0
    """Items that re-run the errored attempts of a run (``--retry-errored``)."""
    standing: int = 0
    """Of those, the blocks already recorded in the lockfile (``PlanItem.standing``): the
    rest are new, and fail the plan."""
    attempts: int = 0
    """New paid attempts of the submits and replaces (a staged item: its smoke run's)."""
    deferred: int = 0
    """Full runs that follow this apply's smoke runs (paid only once those ended well)."""
    deferred_attempts: int = 0
    """Their attempts, in all."""
    deferred_each: int | None = None
    """Their attempts each, when they are all the same size ("then 4 x 462 attempts")."""
    drift: int = 0
    """Drift items."""
    cost_usd_low: float | None = None
    """Estimated dollars of the new attempts (submits and replaces that have an estimate)."""
    cost_usd_high: float | None = None
    """... and its upper end (the budget guard compares this)."""
    unestimated: int = 0
    """Submits and replaces without a cost estimate (no recorded run of their model)."""


class ResultRow(Frozen, frozen=True, kw_only=True):
    """One agent of an ended run in the plan's results table, with the previous comparable
    run's scores for the same agent index when the address's history has them."""

    address: str
    """The address whose run this is."""
    run_id: str | None = None
    """The ended run."""
    run_name: str | None = None
    """Its name."""
    status: str | None = None
    """Its final status (``finished``, ``failed``, ``stopped``)."""
    agent: AgentResult
    """This agent's scores in the run."""
    previous: AgentResult | None = None
    """The same agent index's scores in the address's previous comparable run."""
    previous_run_id: str | None = None
    """That previous run."""
    previous_run_name: str | None = None
    """Its name."""
    previous_note: str | None = None
    """When no earlier run is comparable: what changed (``task selection changed``, ``<run>
    is partial (failed)``, ...)."""
    leaderboard: LeaderboardScore | None = None
    """The benchmark's published score for the same model and harness, when it has one and
    the run covered the full benchmark or a recommended task set."""
    unavailable_tasks: int = 0
    """How many tasks the benchmark lists as unavailable (not run, not scored)."""
    unavailable_reason: str | None = None
    """Why they are unavailable, as the catalog says."""
    stage: str | None = None
    """``smoke`` for a smoke run (labelled so wherever it is listed), ``retried`` for a run
    whose errored attempts were retried; None for a full run."""
    retry_runs: tuple[str, ...] = ()
    """The retry runs whose attempts ``agent``'s numbers count in place of errored ones
    (``RetriedResult``), oldest first."""
    retries_not_counted: tuple[str, ...] = ()
    """Retry runs of the run that ``agent``'s numbers do not count (their ``results.csv``,
    or the run's own, is not at hand)."""


class Plan(Frozen, frozen=True, kw_only=True):
    """The value ``compute_plan`` returns; renderers and apply read it, never recompute it."""

    items: tuple[PlanItem, ...] = ()
    """What apply would do, in the order apply does it."""
    drift: tuple[DriftItem, ...] = ()
    """Differences no action explains (reported, never acted on by themselves)."""
    warnings: tuple[str, ...] = ()
    """Things people should know that do not stop the plan."""
    errors: tuple[str, ...] = ()
    """Guard violations; a plan with errors must not be applied."""
    summary: PlanSummary = PlanSummary()
    """Counts per action, attempts and cost."""
    lineage: str | None = None
    """The lockfile's lineage when planned (staleness check of a saved plan)."""
    serial: int | None = None
    """The lockfile's serial when planned (staleness check of a saved plan)."""
    platform: str = ""
    """The Platform planned against (normalised URL or ``local``)."""
    workspace: str = ""
    """The workspace planned against."""
    head: str | None = None
    """git HEAD when planned (staleness check of a saved plan)."""
    config_digests: dict[str, str] = msgspec.field(default_factory=dict)
    """Address -> spec digest of every desired run the plan saw (staleness check)."""
    other_pending: int = 0
    """Actions outside ``--target``/``--changed-since`` that were left out."""
    results: tuple[ResultRow, ...] = ()
    """Scores of the recorded ended runs (informational; apply never reads them)."""
    unmanaged_count: int | None = None
    """Runs of the workspace this repository does not manage (not plan items, not drift)."""
    unmanaged: tuple[ObservedRun, ...] = ()
    """Those runs, when listed (``unmanaged = "list"`` or ``--show-unmanaged``)."""
    observed_until: datetime | None = None
    """The watermark apply may record with this plan (never past a run the plan could still
    have to adopt)."""
    ignored: tuple[tuple[str, str], ...] = ()
    """Config files left out on purpose: (path, why), why = ``marker`` or ``setting``."""
    generators: tuple[GeneratorProduct, ...] = ()
    """What each run generator (``*.matrix.toml``) expanded to, by file."""
    decisions: dict[str, DecisionRecord] = msgspec.field(default_factory=dict)
    """Address -> the decision record apply writes before its items (``plan.batches``:
    a new decision's order and first batch, a look, the next batch or the verdict)."""

    @property
    def is_empty(self) -> bool:
        return not self.items

    @property
    def newly_blocked(self) -> tuple[PlanItem, ...]:
        """Blocked items whose block is not recorded in the lockfile yet: what fails a plan."""
        return tuple(i for i in self.items if i.action is Action.BLOCKED and not i.standing)

    @property
    def has_changes(self) -> bool:
        return bool(self.items) or bool(self.drift) or bool(self.decisions)


class RecordedChange(Frozen, frozen=True, kw_only=True):
    """One value a refresh records in the lockfile: what the Platform says now about a
    recorded run (``osmosis-plan --refresh-only`` shows these; ``osmosis-apply
    --refresh-only`` writes them)."""

    address: str
    """The address whose entry changes."""
    run_id: str | None = None
    """Its run."""
    run_name: str | None = None
    """Its run's name."""
    field: str = "status"
    """The lockfile field that changes."""
    before: str | None = None
    """The value the lockfile records now."""
    after: str | None = None
    """The value it will record."""


def glob_match(address: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether ``address`` matches any of the address globs: ``*`` (and ``?``, ``[...]``)
    stays within a segment, a ``**`` segment is any number of segments (``dir/**`` is
    everything below ``dir``). ``tb/*`` is ``tb/a``, never a generator's ``tb/gen/a``."""
    parts = address.split("/")
    return any(
        pattern == address or _segments_match(parts, pattern.split("/")) for pattern in patterns
    )


def _segments_match(parts: list[str], pattern: list[str]) -> bool:
    from fnmatch import fnmatchcase

    if not pattern:
        return not parts
    if pattern[0] == "**":
        if len(pattern) == 1:
            return bool(parts)  # ``dir/**``: something below ``dir``
        return any(_segments_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return (
        bool(parts)
        and fnmatchcase(parts[0], pattern[0])
        and _segments_match(parts[1:], pattern[1:])
    )
