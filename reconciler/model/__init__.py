"""Frozen value types shared by the pure core (plan, render) and the edges.

Three snapshots feed ``compute_plan``:

* ``DesiredRun``   one validated config file (``config`` builds these);
* ``LockState``    the recorded state, ``state/osmosis.lock`` (``lockfile`` reads/writes it);
* ``Observation``  what the Platform and the local disk say now (``observe.observe`` builds it
  from the ``platform`` client and ``downloads``).

Nothing here does I/O or imports an edge library (httpx, tomlkit, structlog, watchfiles).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reconciler.hints import RERUN_HINT, UNSUCCESSFUL_STATUSES  # noqa: F401 (re-exported)
from reconciler.model.generator import (  # noqa: F401 (re-exported)
    CellSource,
    GeneratorMove,
    GeneratorProduct,
    GeneratorRemoval,
)
from reconciler.model.policy import POLICY_EFFECTS, PolicyRule  # noqa: F401 (re-exported)

ACTIVE_STATUSES = frozenset({"pending", "queued", "running"})
TERMINAL_STATUSES = frozenset({"finished", "failed", "stopped"})
NOT_DOWNLOADABLE_STATUSES = frozenset({"pending", "queued"})
DOWNLOAD_TYPES = ("summary", "results", "artifacts", "logs")
HASHED_OUTPUTS = frozenset({"summary.csv", "results.csv"})
"""Downloaded files whose own sha256 the lockfile records (``Downloads``)."""
LOCKFILE_VERSION = 1
PLAN_FORMAT_VERSION = "1.0"


def is_terminal(status: str) -> bool:
    """Terminal statuses never change again."""
    return status in TERMINAL_STATUSES


def is_active(status: str) -> bool:
    """A run that still costs money or may still change.

    Unknown status strings count as active: the Platform may have added a new in-flight
    state, and treating it as terminal could trigger a duplicate paid submit.
    """
    return status not in TERMINAL_STATUSES


def canonical_digest(spec: Mapping[str, Any], benchmark_id: str | None) -> str:
    """The spec digest with ``[experiment].benchmark`` replaced by the benchmark's resolved
    id: a key, the exact name and the id of one benchmark are the same request, so editing
    one into another is no change (and no paid replace). Without an id, the plain digest."""
    if not benchmark_id:
        return digest(spec)
    experiment = dict(spec.get("experiment_config") or {})
    # An object, so no benchmark string written in a config can collide with it.
    experiment["benchmark"] = {"id": benchmark_id}
    return digest({**spec, "experiment_config": experiment})


def recorded_benchmark(spec: Mapping[str, Any]) -> str | None:
    """``[experiment].benchmark`` as written in a submit body."""
    value = (spec.get("experiment_config") or {}).get("benchmark")
    return value if isinstance(value, str) else None


def rejection_context(benchmark: BenchmarkInfo | None, secrets: Iterable[str] | None) -> str:
    """What a refusal of a submit may have depended on besides the body: the catalog entry
    of its benchmark and which of the secret records it needs exist (names only).

    ``digest({"benchmark": info, "secrets": [...]})``, with the canonical JSON of ``info``
    built once per catalog entry: a plan computes this for every paid item, and an entry
    lists every task (HLE: 2,500).
    """
    info = "null" if benchmark is None else _benchmark_json(benchmark)
    names = canonical_json(None if secrets is None else sorted(secrets))
    # canonical_json of the two-key dict, spelled out ("benchmark" sorts before "secrets").
    text = '{"benchmark":' + info + ',"secrets":' + names + "}"
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


_BENCHMARK_JSON: dict[int, tuple[Any, str]] = {}


def _benchmark_json(benchmark: BenchmarkInfo) -> str:
    """Canonical JSON of a (frozen) catalog entry, memoised per object (the memo holds the
    object, so its ``id`` is not reused while cached)."""
    cached = _BENCHMARK_JSON.get(id(benchmark))
    if cached is not None and cached[0] is benchmark:
        return cached[1]
    info = {
        key: sorted(value) if isinstance(value, frozenset | set) else value
        for key, value in benchmark.model_dump().items()
    }
    text = canonical_json(info)
    if len(_BENCHMARK_JSON) >= 64:
        _BENCHMARK_JSON.clear()
    _BENCHMARK_JSON[id(benchmark)] = (benchmark, text)
    return text


def canonical_json(value: Any) -> str:
    """The one canonical JSON encoding used for digests: sorted keys, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


class Frozen(BaseModel):
    """Base for every value type: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- desired


class DesiredRun(Frozen):
    """One validated config file: a request for one benchmark run."""

    address: str
    """Path relative to the benchmarks directory, without ``.toml``, ``/``-separated."""
    path: str
    """The file, relative to the repository root."""
    spec: dict[str, Any]
    """The submit request body (platform-api.md §9.6) built from the config. Secret *names* only."""
    spec_digest: str
    """``digest(spec)``: identical for configs that differ only in TOML style."""
    benchmark: str
    """``[experiment].benchmark`` as written: a key, name or ID."""
    task_set: str | None = None
    task_names: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    agent_count: int
    attempts_per_task: int = 1
    """``[execution].attempts_per_task`` when it is an integer, else the route default 1."""
    harnesses: tuple[str | None, ...] = ()
    """Each agent's harness (None = the benchmark's official scaffold), in file order."""
    secret_names: tuple[str, ...] = ()
    """Every referenced secret record name, in reference order, de-duplicated."""
    judge_secret: str | None = None
    """``[execution].judge_api_key_secret``."""
    requested_by: str | None = None
    """Commit sha that last changed the file (filled by gitinfo when history is available)."""
    requested_subject: str | None = None
    """Subject line of that commit."""
    arrived_at: datetime | None = None
    """When the config's current content reached this branch: the committer time of the
    newest first-parent commit of HEAD that changed the file (for a merged pull request,
    the merge). None when unknown (uncommitted, or beyond a shallow clone's boundary). A run
    created before it cannot be one this repository's apply submitted for this content."""
    source: CellSource | None = None
    """For a run expanded from a generator (``*.matrix.toml``): the file and the cell."""
    moved_from: tuple[str, ...] = ()
    """Addresses a ``[[moved]]`` block says this run was recorded under before."""


# --------------------------------------------------------------------------- recorded


class Intent(Frozen):
    """Written to the lockfile *before* a paid call; cleared once the response is recorded."""

    op: str
    """``submit`` or ``stop``."""
    started_at: datetime
    body_digest: str
    """Spec digest of the body being submitted (or of the run being stopped)."""
    spec: dict[str, Any] = Field(default_factory=dict)
    """For ``submit``: the body being POSTed, so adoption can fingerprint it after a crash."""
    benchmark_id: str | None = None
    """The benchmark the submit targets, to narrow adoption candidates."""
    run_id: str | None = None
    """For ``stop``: the run being stopped."""


class Downloads(Frozen):
    """What was downloaded for a run, to detect missing or changed files."""

    types: tuple[str, ...]
    files: int
    bytes: int
    sha256: dict[str, str] = Field(default_factory=dict)
    """Relative path -> hex sha256 of the summary and results files (older lockfiles: of
    every downloaded file). The lockfile stays small and reviewable."""
    others: int | None = None
    """Downloaded files beyond the summary and results (artifacts, logs): counted..."""
    others_sha256: str | None = None
    """... and summed up in one sha256 over their sorted ``path sha256`` lines."""
    directory: str
    """Run directory relative to the repository root."""
    complete: bool = True
    """False after a partial download or a snapshot of a running run."""


class AgentResult(Frozen):
    """One agent's scores in a run, as the run page shows them (platform-api.md §11.2).

    E5 ``agents[]`` joined to ``agent_metrics[]`` by agent id; a missing part is None.
    """

    agent_index: int
    harness: str | None = None
    """None = the benchmark's official scaffold."""
    model: str | None = None
    """``model_display_name``, else ``model``, else ``model_ref``."""
    model_id: str | None = None
    """``model`` (e.g. ``openai/gpt-5``): what a leaderboard entry names, to compare with it."""
    rank: int | None = None
    pass_at_1: float | None = None
    """A fraction in [0, 1], like ``ci_low``/``ci_high`` and ``pass_at_k``."""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    """Tasks the pass@1 was computed over."""
    k: int | None = None
    """The deepest k the Platform reported a pass@k for (its last point)."""
    pass_at_k: float | None = None
    cost_per_task: float | None = None
    """``aggregates.reported_cost_usd`` / ``agent_metrics.n_tasks`` (only when n_tasks > 0)."""
    seconds_per_task: float | None = None
    tokens_per_task: float | None = None


class RunResults(Frozen):
    """A run's scores, recorded once its outputs were downloaded after it ended."""

    agents: tuple[AgentResult, ...] = ()
    """In ``agent_index`` order."""
    passed: int | None = None
    failed: int | None = None
    errored: int | None = None
    total_cost_usd: float | None = None


class RecordedRun(Frozen):
    """One address's entry in ``state/osmosis.lock``."""

    address: str
    spec_digest: str
    spec: dict[str, Any] = Field(default_factory=dict)
    """The body that was submitted, kept so a later plan can show a field-level diff."""
    run_id: str | None = None
    """None only while a first submit's intent is pending."""
    run_name: str | None = None
    status: str | None = None
    """Last observed status."""
    observed_at: datetime | None = None
    submitted_at: datetime | None = None
    requested_by: str | None = None
    applied_at_commit: str | None = None
    benchmark_id: str | None = None
    task_count: int | None = None
    """Tasks the Platform selected (its submit reply)."""
    attempts: int | None = None
    """Attempts the Platform schedules: ``task_count`` x agents x attempts_per_task."""
    planned_attempts: int | None = None
    """What the plan counted, recorded only when it differs from ``attempts``."""
    platform_url: str | None = None
    imported_at: datetime | None = None
    """When ``osmosis-import`` brought this run under management; None for runs this
    repository submitted or adopted."""
    imported_with: str | None = None
    """How it was imported: the ``osmosis-import`` command with the flags that supplied what
    the run's details (E5) do not say (model types, secret names, endpoint URLs), so a reader
    can tell which config values came from a person rather than from the Platform."""
    downloads: Downloads | None = None
    intent: Intent | None = None
    results: RunResults | None = None
    """Scores fetched (E5) when the outputs of the ended run were downloaded."""
    creator: str | None = None
    """``creator_digest`` of the account that created the run, as the Platform lists it:
    evidence for which unrecorded runs can be this repository's (never the e-mail itself)."""
    announced_at: datetime | None = None
    """When ``osmosis-ci announce`` posted the run's results (PR comment, commit status);
    kept here so a fresh checkout never announces the same run twice."""


class Rejection(Frozen):
    """A submit the Platform refused (400 with issues, 404, 409, missing secrets), kept so the
    plan shows the config as blocked in the Platform's own words and apply never POSTs the
    same body again, until the config, the catalog entry or a re-run request changes.
    Holds messages only, never a value."""

    spec_digest: str
    """The canonical digest of the refused body."""
    context: str
    """``rejection_context`` when refused: the catalog entry and the referenced secret
    records as the plan saw them. A different context (a benchmark that finished syncing,
    a secret created since) may be accepted, so the plan tries again."""
    message: str
    """The Platform's message, first line."""
    issues: tuple[str, ...] = ()
    """The Platform's issue lines (``key: message``), when it gave any."""
    status: int | None = None
    code: str | None = None
    rejected_at: datetime
    at_commit: str | None = None
    """HEAD when refused: an ``Osmosis-Rerun`` trailer in an older commit is spent."""


class HistoryEntry(Frozen):
    """A run that no longer backs its address (replaced, re-run or forgotten)."""

    address: str
    run_id: str | None
    run_name: str | None
    spec_digest: str
    status: str | None
    submitted_at: datetime | None = None
    ended_at: datetime | None = None
    reason: str
    """Why it left: ``replaced``, ``rerun``, ``forgotten``, ``moved``, ``lost``."""
    requested_by: str | None = None
    results: RunResults | None = None
    """The run's scores, kept so the next run of the address can be compared with them."""


class LockState(Frozen):
    """The whole recorded state."""

    version: int = LOCKFILE_VERSION
    lineage: str
    serial: int = 0
    platform: str
    workspace: str
    repository: str | None = None
    """The repository this state belongs to (``reconciler.gitinfo.GitRepo.identity``): a
    lockfile copied from another repository must never drive stops. None in lockfiles
    written before it was recorded, and outside git."""
    observed_until: datetime | None = None
    """Watermark of the run list: every run the Platform created before this time (minus
    ``plan.CLOCK_SKEW``) was seen by an observation whose plan this state records, so a
    later plan lists only newer runs (platform-api.md: no other filter exists)."""
    runs: dict[str, RecordedRun] = Field(default_factory=dict)
    """Address -> entry."""
    rejections: dict[str, Rejection] = Field(default_factory=dict)
    """Address -> the Platform's refusal of its config (see ``Rejection``)."""
    history: tuple[HistoryEntry, ...] = ()
    """Newest first, capped per address."""


# --------------------------------------------------------------------------- observed


class ObservedRun(Frozen):
    """A run as the Platform lists it."""

    id: str
    name: str = ""
    status: str = ""
    benchmark_id: str | None = None
    benchmark_name: str | None = None
    created_at: datetime | None = None
    completed_at: datetime | None = None
    platform_url: str | None = None
    agent_count: int | None = None
    best_pass_at_1: float | None = None
    fingerprint: str | None = None
    """Adoption fingerprint from the run's detail (E5), when it was fetched."""
    creator: str | None = None
    """``creator_digest`` of the run's ``creator_email``, when the Platform gave one."""


class LeaderboardScore(Frozen):
    """One published score of a benchmark (E2 ``leaderboard[]``): who, on what, how well."""

    model: str | None = None
    harness: str | None = None
    """None = the benchmark's official scaffold."""
    task_set: str | None = None
    """``parity``, ``full``, ...: the selection the score was measured on."""
    rank: int | None = None
    pass_at_1: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None


class BenchmarkRef(Frozen):
    """A catalog entry as E1 lists it, reduced to what names it (for did-you-mean hints)."""

    id: str
    name: str
    key: str


class BenchmarkInfo(Frozen):
    """What preflight needs to know about one catalog benchmark (E2)."""

    id: str
    name: str
    key: str
    sync_status: str = "ready"
    synced_task_count: int = 0
    sync_error: str | None = None
    platform_url: str | None = None
    task_count: int = 0
    categories: dict[str, int] = Field(default_factory=dict)
    task_sets: dict[str, int] = Field(default_factory=dict)
    task_names: frozenset[str] = frozenset()
    supports_harness: bool = True
    requires_harness: bool = False
    default_harness: str | None = None
    requires_judge_model: bool = False
    requires_judge_api_key: bool = False
    judge_model_default: str | None = None
    required_secret_names: tuple[str, ...] = ()
    source_type: str | None = None
    """``osmosis_managed``, ``harbor_registry``, ...: some rules depend on it (``[verifier]``)."""
    source_url: str | None = None
    """The upstream project or adapter repository."""
    pass_threshold: float | None = None
    """Score at which a task counts as passed."""
    tasks: tuple[tuple[str, str | None], ...] = ()
    """(name, category) of every task in catalog order, when the catalog listed them."""
    recommended_task_sets: tuple[str, ...] = ()
    """Task sets the catalog marks ``recommended`` (comparable with published scores)."""
    unavailable_tasks: tuple[str, ...] = ()
    """Tasks the benchmark lists as unavailable (E2 ``unavailable_tasks.tasks``)."""
    unavailable_reason: str | None = None
    leaderboard: tuple[LeaderboardScore, ...] = ()


class LocalOutputs(Frozen):
    """What is on disk for one recorded run's download directory."""

    present: frozenset[str] = frozenset()
    """Relative paths that exist as regular files."""
    changed: frozenset[str] = frozenset()
    """Recorded files whose sha256 no longer matches."""


class Observation(Frozen):
    """Everything observed now: the Platform's runs and catalog, secrets, and local files."""

    platform: str
    workspace: str
    observed_at: datetime
    runs: dict[str, ObservedRun] = Field(default_factory=dict)
    """Run id -> run, for every run that was seen: with ``listing = "full"`` every run of the
    workspace; with ``"incremental"`` the runs created since the lockfile's watermark plus
    the recorded runs that were read one by one. A recorded ended run that is absent was not
    looked at (ended runs never change); see ``missing`` for runs that are gone."""
    listing: str = "full"
    """``full`` or ``incremental`` (see ``runs``)."""
    missing: frozenset[str] = frozenset()
    """Recorded run ids that a direct read (E5) answered 404: only these count as gone."""
    workspace_runs: int | None = None
    """How many runs the workspace holds (the list's ``total_count``), when known."""
    unmanaged: tuple[ObservedRun, ...] | None = None
    """Every run of the workspace this repository never recorded, when listed in full and
    asked for (``--show-unmanaged``); None otherwise."""
    newest_created: datetime | None = None
    """The newest ``created_at`` of a verified listing: the next watermark."""
    notes: tuple[str, ...] = ()
    """Things observation wants said once (e.g. the list order could not be relied on)."""
    benchmarks: dict[str, BenchmarkInfo | None] = Field(default_factory=dict)
    """``[experiment].benchmark`` as written -> info, None when it does not resolve."""
    secrets: frozenset[str] | None = None
    """Stored secret record names (any scope); None when the lookup failed."""
    outputs: dict[str, LocalOutputs] = Field(default_factory=dict)
    """Address -> local files of its recorded run."""
    head: str | None = None
    """git HEAD sha, when in a repository."""
    catalog: tuple[BenchmarkRef, ...] | None = None
    """The workspace's benchmarks (E1), listed only when a config's benchmark did not resolve;
    None when not listed."""


# --------------------------------------------------------------------------- settings


class Settings(Frozen):
    """Policy knobs: ``[tool.osmosis-reconciler]`` overlaid by command-line flags."""

    benchmarks: str = "benchmarks"
    state: str = "state/osmosis.lock"
    download_types: tuple[str, ...] = ("summary", "results")
    on_delete: str = "stop"
    """``stop`` or ``forget`` for an active run whose config was deleted."""
    on_change: str = "replace"
    """``replace`` or ``keep`` for an active run whose config changed."""
    max_stops: int = 5
    max_attempts: int = 5000
    max_cost_usd: float | None = None
    """Budget guard in dollars: the estimated cost (upper end) of new submits; None: off."""
    parallelism: int = 8
    targets: tuple[str, ...] = ()
    """Address globs; empty = everything."""
    replace: tuple[str, ...] = ()
    """Addresses to re-run even though their config is unchanged."""
    skip: tuple[str, ...] = ()
    """Address globs held back (``Osmosis-Skip`` trailers)."""
    allow_mass_stop: bool = False
    allow_over_budget: bool = False
    refresh_only: bool = False
    download_running: bool = False
    ignore: tuple[str, ...] = ()
    """Address globs of config files kept in the tree but never submitted (templates,
    drafts); a file can also say so itself (``# osmosis-reconciler: ignore``)."""
    allow_foreign_state: bool = False
    """Accept a lockfile of another repository or lineage (``--allow-foreign-state``)."""
    refresh: str = "incremental"
    """``incremental``: list only runs newer than the lockfile's watermark (cost does not
    grow with the workspace's history); ``full``: list every run (scheduled drift checks)."""
    unmanaged: str = "summary"
    """Runs of the workspace this repository did not request: ``ignore``, ``summary`` (one
    line with their count) or ``list`` (every one; needs a full listing)."""
    outputs: str = "recorded"
    """``recorded``: a complete download recorded in the lockfile is done even when its files
    are not on this disk (a fresh clone, a CI runner); ``disk``: missing files are fetched
    again. Files that are on disk are checked against their recorded sha256 either way."""
    lock: str | None = None
    """``local`` (OS lock, one machine) or ``git`` (also a lock ref on the ``origin`` remote);
    None: ``git`` when the repository has an ``origin`` remote, else ``local``."""
    lock_ttl: int = 120
    """Seconds a git lock stays valid without a renewal (the holder renews it every third)."""
    settings_where: str = "[tool.osmosis-reconciler]"
    """Where a person changes a setting: ``osmosis.toml`` (or ``.osmosis.toml``) when the
    settings live there, else ``[tool.osmosis-reconciler]`` (of ``pyproject.toml``)."""
    policy: tuple[PolicyRule, ...] = ()
    """Policy rules (``[[policy]]`` in the settings): allowed models and harnesses, required
    task sets, budgets per address glob; ``deny`` fails the plan, ``warn`` warns."""


# --------------------------------------------------------------------------- plan


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


class Fix(Frozen):
    """One step that makes a blocked item pass on the next plan, exactly as shown.

    Either a shell ``command`` (run from the repository root) or an edit of a config file:
    set ``key`` to ``value`` (or ``remove`` it). ``text`` is how a person reads it.
    """

    command: str | None = None
    file: str | None = None
    """For an edit: the config file, relative to the repository root."""
    key: str | None = None
    """For an edit: the TOML key, dotted, with ``[n]`` for an array-of-tables item
    (``execution.max_concurrent_attempts``, ``agents[0].harness``)."""
    value: Any = None
    """For an edit: the new value (a string, integer or list of strings)."""
    remove: bool = False

    @property
    def text(self) -> str:
        if self.command is not None:
            return f"`{self.command}`"
        if self.remove:
            return f"remove `{self.key}` from {self.file}"
        return f"set `{self.key} = {json.dumps(self.value, ensure_ascii=False)}` in {self.file}"


class PlanItem(Frozen):
    """One thing the plan would do, with why."""

    action: Action
    address: str
    reason: Reason
    run_id: str | None = None
    """The existing run acted on (stop, download, adopt, replace's old run)."""
    run_name: str | None = None
    before_digest: str | None = None
    after_digest: str | None = None
    from_address: str | None = None
    """For ``move``: the old address."""
    spec: dict[str, Any] | None = None
    """For submit/replace: the body to POST."""
    benchmark_id: str | None = None
    task_count: int | None = None
    attempts: int = 0
    """Selected tasks x agents x attempts_per_task (new paid attempts)."""
    changes: tuple[str, ...] = ()
    """Field-level diff lines, e.g. ``agents[0].model.model: "a" -> "b"``."""
    details: tuple[str, ...] = ()
    """For ``blocked``: what is wrong and the exact fix."""
    warnings: tuple[str, ...] = ()
    requested_by: str | None = None
    requested_subject: str | None = None
    download_types: tuple[str, ...] = ()
    intended_action: Action | None = None
    """For ``blocked``: what the plan would have done had preflight passed (submit/replace)."""
    intended_reason: Reason | None = None
    """For ``blocked``: why it would have done it (``reason`` then names the first problem)."""
    source_url: str | None = None
    """For submit/replace: the benchmark's upstream source (E2 ``source_url``)."""
    pass_threshold: float | None = None
    """For submit/replace: the benchmark's pass threshold."""
    fixes: tuple[Fix, ...] = ()
    """For ``blocked``: the steps that make it pass (each also quoted in ``details``)."""
    context: str | None = None
    """For submit/replace: ``rejection_context`` of the plan, recorded with a refusal."""
    cost_usd_low: float | None = None
    """For submit/replace: the estimated dollar range of its attempts (``plan.cost``)..."""
    cost_usd_high: float | None = None
    cost_basis: str | None = None
    """... and where the estimate comes from."""
    source: CellSource | None = None
    """For an address of a generator: the file, the cell, and for a vanished cell which
    element went (``note``)."""


class DriftKind(str, Enum):
    RUN_MISSING = "run_missing"
    STOPPED_OUTSIDE = "stopped_outside"
    FAILED_OUTSIDE = "failed_outside"
    FILES_CHANGED = "files_changed"
    POSSIBLE_DUPLICATE = "possible_duplicate"


class DriftItem(Frozen):
    """A difference between the recorded state and reality that no action explains."""

    kind: DriftKind
    address: str | None
    run_id: str | None
    message: str
    fingerprint: str
    """Stable across plans for the same drift, so scheduled checks alert only on new items."""


class PlanSummary(Frozen):
    submit: int = 0
    replace: int = 0
    stop: int = 0
    download: int = 0
    forget: int = 0
    adopt: int = 0
    move: int = 0
    blocked: int = 0
    attempts: int = 0
    drift: int = 0
    cost_usd_low: float | None = None
    """Estimated dollars of the new attempts (submits and replaces that have an estimate)."""
    cost_usd_high: float | None = None
    unestimated: int = 0
    """Submits and replaces without a cost estimate (no recorded run of their model)."""


class ResultRow(Frozen):
    """One agent of an ended run in the plan's results table, with the previous run's
    scores for the same agent index when the address's history has them."""

    address: str
    run_id: str | None = None
    run_name: str | None = None
    status: str | None = None
    agent: AgentResult
    previous: AgentResult | None = None
    previous_run_id: str | None = None
    previous_run_name: str | None = None
    leaderboard: LeaderboardScore | None = None
    """The benchmark's published score for the same model and harness, when it has one."""
    unavailable_tasks: int = 0
    """How many tasks the benchmark lists as unavailable (not run, not scored)."""
    unavailable_reason: str | None = None


class Plan(Frozen):
    """The value ``compute_plan`` returns; renderers and apply read it, never recompute it."""

    items: tuple[PlanItem, ...] = ()
    drift: tuple[DriftItem, ...] = ()
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    """Guard violations; a plan with errors must not be applied."""
    summary: PlanSummary = PlanSummary()
    lineage: str | None = None
    serial: int | None = None
    platform: str = ""
    workspace: str = ""
    head: str | None = None
    config_digests: dict[str, str] = Field(default_factory=dict)
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

    @property
    def is_empty(self) -> bool:
        return not self.items

    @property
    def has_changes(self) -> bool:
        return bool(self.items) or bool(self.drift)


class RecordedChange(Frozen):
    """One value a refresh records in the lockfile: what the Platform says now about a
    recorded run (``osmosis-plan --refresh-only`` shows these; ``osmosis-apply
    --refresh-only`` writes them)."""

    address: str
    run_id: str | None = None
    run_name: str | None = None
    field: str = "status"
    """The lockfile field that changes."""
    before: str | None = None
    after: str | None = None


def glob_match(address: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether ``address`` matches any of the address globs (``*`` stays within a segment)."""
    from fnmatch import fnmatchcase

    for pattern in patterns:
        if pattern == address or fnmatchcase(address, pattern):
            return True
        if pattern.endswith("/**") and address.startswith(pattern[:-2]):
            return True
    return False


# --------------------------------------------------------------------------- adoption


def creator_digest(email: str | None) -> str | None:
    """A short, stable stand-in for a run creator's e-mail (the lockfile is committed and
    shared; the address itself is not needed, only whether two runs share a creator)."""
    if not email or not email.strip():
        return None
    return "sha256:" + hashlib.sha256(email.strip().lower().encode("utf-8")).hexdigest()[:16]


def model_identity(model: Mapping[str, Any]) -> str:
    """The model string a run's detail reports for an agent's ``[agents.model]`` table."""
    if model.get("type") == "hosted":
        return f"{model.get('base_model', '')}:{model.get('lora_model_name', '')}"
    return str(model.get("model", ""))


def adoption_fingerprint(
    benchmark_id: str | None,
    task_filters: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    agents: list[tuple[str | None, str, Mapping[str, str]]],
) -> str:
    """Fingerprint that both a desired spec and a Platform run detail (E5) can produce.

    The Platform has no idempotency key (platform-api.md §10), so a run created by a
    submit whose response was lost can only be recognised by what it was asked to do:
    the benchmark, the task filters, the execution settings, and per agent its harness,
    model and effective env. Secret values never take part.
    """
    return digest(fingerprint_fields(benchmark_id, task_filters, config, agents))


def fingerprint_fields(
    benchmark_id: str | None,
    task_filters: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    agents: list[tuple[str | None, str, Mapping[str, str]]],
) -> dict[str, Any]:
    """What ``adoption_fingerprint`` digests, as data (to show a difference to people)."""
    return {
        "benchmark_id": benchmark_id,
        "task_filters": dict(task_filters or {}),
        "config": dict(config or {}),
        "agents": [
            {"harness": harness, "model": model, "env": dict(sorted(env.items()))}
            for harness, model, env in agents
        ],
    }


def spec_fingerprint(spec: Mapping[str, Any], benchmark_id: str | None) -> str:
    """``adoption_fingerprint`` of a submit body, with the benchmark resolved to its id."""
    return digest(spec_fingerprint_fields(spec, benchmark_id))


def spec_fingerprint_fields(spec: Mapping[str, Any], benchmark_id: str | None) -> dict[str, Any]:
    """What ``spec_fingerprint`` digests, as data."""
    env_config = spec.get("env_config") or {}
    agents = []
    for agent in spec.get("agents", []):
        effective_env = {**env_config, **(agent.get("env") or {})}
        agents.append((agent.get("harness"), model_identity(agent.get("model", {})), effective_env))
    return fingerprint_fields(
        benchmark_id, spec.get("tasks_config"), spec.get("execution_config"), agents
    )
