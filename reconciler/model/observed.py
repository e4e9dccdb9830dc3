"""The observed snapshot: ``Observation``, what the Platform and the local disk say now
(``engine.observe`` builds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import msgspec

from reconciler.model.base import Frozen


@dataclass(frozen=True, slots=True, kw_only=True)
class ObservedRun:
    """A run as the Platform lists it.

    A slots dataclass: a plan holds one per listed run (tens of thousands in a shared
    workspace), ~150 bytes each. ``Frozen`` fields of this type (``Observation``,
    ``Plan.unmanaged``) read and write it like a ``Frozen`` value: same keys, same order.
    Copy with ``dataclasses.replace``.
    """

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
    creator_name: str | None = None
    """Who created the run, as the Platform names them (``creator_name``): shown when a
    paid item is blocked by this run (``plan.twins``), beside an unmanaged run and a
    possible duplicate, so a person knows whom to ask."""


class LeaderboardScore(Frozen, frozen=True, kw_only=True):
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


class BenchmarkRef(Frozen, frozen=True, kw_only=True):
    """A catalog entry as E1 lists it, reduced to what names it (for did-you-mean hints)."""

    id: str
    name: str
    key: str


class BenchmarkInfo(Frozen, frozen=True, kw_only=True):
    """What preflight needs to know about one catalog benchmark (E2)."""

    id: str
    name: str
    key: str
    sync_status: str = "ready"
    synced_task_count: int = 0
    sync_error: str | None = None
    platform_url: str | None = None
    task_count: int = 0
    categories: dict[str, int] = msgspec.field(default_factory=dict)
    task_sets: dict[str, int] = msgspec.field(default_factory=dict)
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


class LocalOutputs(Frozen, frozen=True, kw_only=True):
    """What is on disk for one recorded run's download directory."""

    present: frozenset[str] = frozenset()
    """Relative paths that exist as regular files."""
    changed: frozenset[str] = frozenset()
    """Recorded files whose sha256 no longer matches."""


class TaskCounts(Frozen, frozen=True, kw_only=True):
    """One recorded run's per-task outcomes, read from its kept ``results.csv`` so a plan can
    estimate the power of the comparison a new submit will face (``plan.power``)."""

    agents: dict[int, dict[str, tuple[int, int]]] = msgspec.field(default_factory=dict)
    """Agent index -> task -> (passed attempts, attempts), errored attempts counting as not
    passed (the headline's definition)."""
    checksums: dict[int, dict[str, str]] = msgspec.field(default_factory=dict)
    """Agent index -> task -> the ``task_checksum`` its results show (empty when the file
    has no such column): a decision ends when a task's changes (``plan.batches``)."""


class AgentResult(Frozen, frozen=True, kw_only=True):
    """One agent's scores in a run, as the run page shows them (platform-api.md §11.2).

    E5 ``agents[]`` joined to ``agent_metrics[]`` by agent id; a missing part is None.
    """

    agent_index: int
    """The agent's position in the config (0-based)."""
    harness: str | None = None
    """None = the benchmark's official scaffold."""
    model: str | None = None
    """``model_display_name``, else ``model``, else ``model_ref``."""
    model_id: str | None = None
    """``model`` (e.g. ``openai/gpt-5``): what a leaderboard entry names, to compare with it."""
    rank: int | None = None
    """The agent's rank in the run, as the run page shows it."""
    pass_at_1: float | None = None
    """A fraction in [0, 1], like ``ci_low``/``ci_high`` and ``pass_at_k``."""
    ci_low: float | None = None
    """Lower end of pass@1's 95% confidence interval."""
    ci_high: float | None = None
    """Upper end of that interval."""
    n: int | None = None
    """Tasks the pass@1 was computed over."""
    k: int | None = None
    """The deepest k the Platform reported a pass@k for (its last point)."""
    pass_at_k: float | None = None
    """pass@``k`` (a fraction)."""
    cost_per_task: float | None = None
    """``aggregates.reported_cost_usd`` / ``agent_metrics.n_tasks`` (only when n_tasks > 0)."""
    seconds_per_task: float | None = None
    """Mean wall time per task."""
    tokens_per_task: float | None = None
    """Mean tokens per task."""
    errored: int | None = None
    """The agent's attempts that errored (pass@1 counts them as not passed)."""
    attempts_per_task: int | None = None
    """The attempts per task the run was asked for (its configuration's
    ``attempts_per_task``): k, and the divisor of the per-attempt cost and tokens."""


class RetriedResult(Frozen, frozen=True, kw_only=True):
    """An address's result after a retry of its errored attempts (docs/retrying.md): its
    retried run's attempts with the retry runs' in place of errored ones, counted from the
    kept ``results.csv`` files by ``osmosis-results``'s own rule
    (``results.retried.merged_outcomes``), so the plan's results table shows the address's
    one number (``engine.observe``)."""

    run_id: str
    """The retried run (the address's result)."""
    agents: tuple[AgentResult, ...] = ()
    """Each agent's numbers counted from the merged attempts; empty when they could not be
    counted (the retried run's ``results.csv`` is not on this disk)."""
    retry_runs: tuple[str, ...] = ()
    """The retry runs counted in ``agents``, oldest first (names, else ids)."""
    not_counted: tuple[str, ...] = ()
    """Retry runs of the run whose ``results.csv`` is not at hand: not counted (yet)."""


class ErroredAttempts(Frozen, frozen=True, kw_only=True):
    """The errored attempts of an address's result: its run's, with the attempts of the
    retry runs already recorded in place of the ones they re-ran, read from the kept
    ``results.csv`` files (``engine.observe``) so a plan can retry them (``plan.retries``)."""

    run_id: str
    """The run whose result this is (the retried run, when retries are recorded)."""
    agents: dict[int, dict[str, int]] = msgspec.field(default_factory=dict)
    """Agent index -> task -> errored attempts (only tasks with some)."""
    unreadable: str | None = None
    """Why the errored attempts could not be read (a file not on this disk, a retry run
    not downloaded yet); None when they were."""


class Observation(Frozen, frozen=True, kw_only=True):
    """Everything observed now: the Platform's runs and catalog, secrets, and local files."""

    platform: str
    workspace: str
    observed_at: datetime
    concurrent_since: datetime | None = None
    """When the apply that observed began (less a clock-skew allowance), if it then waited
    for a lock another command held: a run created since was made meanwhile, by that
    command, never a run this repository ran before on purpose. The twin guard counts such a
    run whether it is still active or has ended (issue 34: two clones applying with
    ``--wait``). None: the command did not wait (or takes no lock: ``osmosis-plan``)."""
    runs: dict[str, ObservedRun] = msgspec.field(default_factory=dict)
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
    benchmarks: dict[str, BenchmarkInfo | None] = msgspec.field(default_factory=dict)
    """``[experiment].benchmark`` as written -> info, None when it does not resolve."""
    secrets: frozenset[str] | None = None
    """Stored secret record names (any scope); None when the lookup failed."""
    personal_secrets: frozenset[str] = frozenset()
    """Those of them found only at personal scope (the token's own user): runs submitted
    with another identity, such as CI's, do not see them."""
    secrets_elsewhere: dict[str, tuple[tuple[str, str], ...]] = msgspec.field(default_factory=dict)
    """Secret name -> where a record of that name exists outside this workspace, as
    (workspace name, scope ``workspace`` or ``user``) pairs, for the needed records this
    workspace lacks: names and places only, never a value."""
    me: str | None = None
    """``creator_digest`` of the token's own user (``GET /api/cli/verify``), read only when
    a submit's outcome is pending: a run another user created is never adopted for it."""
    outputs: dict[str, LocalOutputs] = msgspec.field(default_factory=dict)
    """Address -> local files of its recorded run."""
    head: str | None = None
    """git HEAD sha, when in a repository."""
    catalog: tuple[BenchmarkRef, ...] | None = None
    """The workspace's benchmarks (E1), listed only when a config's benchmark did not resolve;
    None when not listed."""
    task_counts: dict[str, TaskCounts] = msgspec.field(default_factory=dict)
    """Run id -> per-task outcomes of the recorded runs a new submit will be compared with
    (the newest comparable runs of each submit whose files are on disk)."""
    platform_instance: str | None = None
    """With the embedded Platform: its instance (its data directory's id), to compare with
    the one the lockfile records (``LockState.platform_instance``); None otherwise."""
    errored: dict[str, ErroredAttempts] = msgspec.field(default_factory=dict)
    """Address -> the errored attempts of its result, for the addresses a retry of the
    errored attempts was asked for (``Settings.retry_errored``)."""
    retried: dict[str, RetriedResult] = msgspec.field(default_factory=dict)
    """Address -> its result merged with its retry runs, for the addresses whose recorded
    run is a retry run (the plan's results table shows it)."""
    vouched: frozenset[str] = frozenset()
    """Run ids the remote state record of this Platform and workspace names (the lockfile
    the last apply recorded on ``origin``): evidence that a run the branch's lockfile misses
    is this repository's (``plan.ownership``). Empty without a git lock or record."""
