"""The recorded snapshot: ``LockState``, the lockfile ``state/osmosis.lock`` as values
(``state.lockfile`` reads and writes it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

import msgspec

from reconciler.model.base import Frozen, attempts_per_task, canonical_json, digest
from reconciler.model.decision import DecisionRecord
from reconciler.model.observed import AgentResult, BenchmarkInfo

RERUNS_KEPT = 20
"""Re-run request commits kept per address (``LockState.reruns``)."""
HASHED_OUTPUTS = frozenset({"summary.csv", "results.csv"})
"""Downloaded files whose own sha256 the lockfile records (``Downloads``)."""
LOCKFILE_VERSION = 3
"""The lockfile format this version writes; older ones are read and migrated on write
(``state.lockfile.migrate_v1``), newer ones refused. Format 2 adds the root commit
(``LockState.root_commit``), the unknown-outcome evidence of an intent (``Intent.listings``)
and what a history entry keeps (pending downloads, the cost inputs), and ``stage`` (smoke
runs) on entries, intents and history. Format 3 adds the embedded Platform instance that
wrote it (``LockState.platform_instance``) and the re-run requests acted on
(``LockState.reruns``)."""


class SmokeStage(StrEnum):
    """The stages of a config under a ``smoke`` setting (docs/smoke.md). A recorded run,
    intent or history entry holds ``SMOKE`` or nothing (None: a full run); a plan item's
    ``Smoke`` holds any of the three."""

    SMOKE = "smoke"
    """The smoke run: a narrowed body of the config, never the address's result."""
    FULL = "full"
    """The full run, after the smoke run ended well."""
    SKIPPED = "skipped"
    """The full run, the smoke stage skipped on request."""


HistoryReason = Literal[
    "replaced", "rerun", "forgotten", "stopped", "moved", "lost", "smoke", "retried"
]
"""Why a run left its address (``HistoryEntry.reason``); ``smoke``: a smoke run that left
its address to the full run (or to a new smoke run); ``retried``: a run whose errored
attempts a retry run re-runs (``--retry-errored``): it stays the address's result, with the
retry run's attempts in place of its errored ones."""


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


class Intent(Frozen, frozen=True, kw_only=True):
    """Written to the lockfile *before* a paid call; cleared once the response is recorded."""

    op: Literal["submit", "stop"]
    """The paid call in flight."""
    started_at: datetime
    """When the paid call started (adoption looks for runs created after it)."""
    body_digest: str
    """Spec digest of the body being submitted (or of the run being stopped)."""
    spec: dict[str, Any] = msgspec.field(default_factory=dict)
    """For ``submit``: the body being POSTed, so adoption can fingerprint it after a crash."""
    benchmark_id: str | None = None
    """The benchmark the submit targets, to narrow adoption candidates."""
    run_id: str | None = None
    """For ``stop``: the run being stopped."""
    stage: SmokeStage | None = None
    """``smoke`` for a smoke run's submit (its ``body_digest`` is then the full config's
    digest); None for a full run."""
    retry_of: str | None = None
    """For a retry run's submit (``--retry-errored``): the run whose errored attempts it
    re-runs (``body_digest`` is then the config's digest, ``spec`` the narrowed body)."""
    retry_agents: tuple[int, ...] | None = None
    """For a retry run's submit: the agent index, in the retried run, of each agent of the
    narrowed body, in order."""
    listings: tuple[datetime, ...] | None = None
    """For ``submit`` whose outcome is unknown: when a complete run list, read by an apply
    after the submit, showed no run that could be it (the quiet-period evidence,
    ``Settings.unknown_outcome_listings``)."""


class Downloads(Frozen, frozen=True, kw_only=True):
    """What was downloaded for a run, to detect missing or changed files."""

    types: tuple[str, ...]
    """Output types downloaded (``summary``, ``results``, ...)."""
    files: int
    """Files downloaded."""
    bytes: int
    """Their total size."""
    sha256: dict[str, str] = msgspec.field(default_factory=dict)
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


class RunResults(Frozen, frozen=True, kw_only=True):
    """A run's scores, recorded once its outputs were downloaded after it ended."""

    agents: tuple[AgentResult, ...] = ()
    """In ``agent_index`` order."""
    passed: int | None = None
    """Tasks passed (all agents)."""
    failed: int | None = None
    """Tasks failed."""
    errored: int | None = None
    """Tasks that errored (not scored)."""
    total_cost_usd: float | None = None
    """What the run cost, as the Platform reports it."""


class RecordedRun(Frozen, frozen=True, kw_only=True):
    """One address's entry in ``state/osmosis.lock``."""

    address: str
    """The config's address (the key of its table)."""
    spec_digest: str
    """Canonical digest of the submitted body (``canonical_digest``)."""
    spec: dict[str, Any] = msgspec.field(default_factory=dict)
    """The body that was submitted, kept so a later plan can show a field-level diff."""
    run_id: str | None = None
    """None only while a first submit's intent is pending."""
    run_name: str | None = None
    """The run's name, as the Platform lists it."""
    status: str | None = None
    """Last observed status."""
    observed_at: datetime | None = None
    """When ``status`` was observed."""
    submitted_at: datetime | None = None
    """When this repository submitted (or adopted) the run."""
    requested_by: str | None = None
    """Commit sha that last changed the config when it was applied."""
    applied_at_commit: str | None = None
    """HEAD when applied."""
    benchmark_id: str | None = None
    """The benchmark the run targets, resolved to its id."""
    task_count: int | None = None
    """Tasks the Platform selected (its submit reply)."""
    attempts: int | None = None
    """Attempts the Platform schedules: ``task_count`` x agents x attempts_per_task."""
    planned_attempts: int | None = None
    """What the plan counted, recorded only when it differs from ``attempts``."""
    platform_url: str | None = None
    """The run's page on the Platform."""
    imported_at: datetime | None = None
    """When ``osmosis-import`` brought this run under management; None for runs this
    repository submitted or adopted."""
    imported_with: str | None = None
    """How it was imported: the ``osmosis-import`` command with the flags that supplied what
    the run's details (E5) do not say (model types, secret names, endpoint URLs), so a reader
    can tell which config values came from a person rather than from the Platform."""
    downloads: Downloads | None = None
    """What was downloaded for the run, once it was."""
    intent: Intent | None = None
    """Present while a paid call is in flight (written before it, cleared after)."""
    results: RunResults | None = None
    """Scores fetched (E5) when the outputs of the ended run were downloaded."""
    creator: str | None = None
    """``creator_digest`` of the account that created the run, as the Platform lists it:
    evidence for which unrecorded runs can be this repository's (never the e-mail itself)."""
    stage: SmokeStage | None = None
    """``smoke``: this is a smoke run (a narrowed body of the config whose digest is
    ``spec_digest``); never the address's result, never downloaded. None: the full run."""
    announced_at: datetime | None = None
    """When ``osmosis-ci announce`` posted the run's results (PR comment, commit status);
    kept here so a fresh checkout never announces the same run twice."""
    retry_of: str | None = None
    """For a retry run (``--retry-errored``, docs/retrying.md): the run whose errored
    attempts it re-runs; ``spec`` is then the narrowed body (the errored tasks, as many
    attempts as errored) and ``spec_digest`` the config's. The retried run stays in the
    history (``retried``) and stays the address's result, with this run's attempts in place
    of its errored ones. None: an ordinary run."""
    retry_agents: tuple[int, ...] | None = None
    """For a retry run: the agent index, in the retried run, of each agent of its body."""
    pass_threshold: float | None = None
    """The reward at or above which a task's attempt passes in this run, as it was when the
    run was recorded: the config's ``[execution].pass_threshold``, else the catalog's
    (``effective_pass_threshold``). Kept with the run so its history entry can still count
    fractional rewards by it once the config is gone. None: neither was known, or a lockfile
    written before it was recorded (results then use the config's, else the catalog's now)."""

    @property
    def attempts_per_task(self) -> int:
        """``attempts_per_task`` of the submitted body (``model.attempts_per_task``), at
        least 1: the Platform accepted the body, and a hand-edited 0 must not divide a
        cost by zero."""
        return spec_attempts_per_task(self.spec)


class Rejection(Frozen, frozen=True, kw_only=True):
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
    """The HTTP status of the refusal."""
    code: str | None = None
    """The Platform's error code, when it gave one."""
    rejected_at: datetime
    """When it refused."""
    at_commit: str | None = None
    """HEAD when refused: an ``Osmosis-Rerun`` trailer in an older commit is spent."""


class HistoryEntry(Frozen, frozen=True, kw_only=True):
    """A run that no longer backs its address (replaced, re-run or forgotten)."""

    address: str
    """The address it backed."""
    run_id: str | None
    """The run (None for a submit that never created one)."""
    run_name: str | None
    """Its name."""
    spec_digest: str
    """Digest of the body it was submitted with."""
    status: str | None
    """Its last recorded status."""
    submitted_at: datetime | None = None
    """When it was submitted."""
    ended_at: datetime | None = None
    """When it left (replaced, forgotten, ...)."""
    reason: HistoryReason
    """Why it left (``HistoryReason``)."""
    requested_by: str | None = None
    """Commit sha that requested it."""
    results: RunResults | None = None
    """The run's scores, kept so the next run of the address can be compared with them."""
    stage: SmokeStage | None = None
    """``smoke`` for a smoke run (never a baseline to compare with); None for a full run."""
    outputs_pending: bool | None = None
    """True when the run had ended but its outputs were not (fully) downloaded when it left
    its address: the plan keeps offering the download until they are. None: nothing due."""
    benchmark_id: str | None = None
    """The run's benchmark, and ..."""
    models: tuple[str, ...] | None = None
    """... each agent's model (``model_identity``), in agent order, with ..."""
    attempts_per_task: int | None = None
    """... its attempts per task (None: 1): what the cost estimate reads from history."""
    task_count: int | None = None
    """Tasks the Platform selected (format 2)."""
    selection: str | None = None
    """``selection_digest`` of the run's task selection (format 2): runs are comparable
    only on the same selection."""
    retry_of: str | None = None
    """For a retry run (``RecordedRun.retry_of``): the run whose errored attempts it re-ran."""
    retry_agents: tuple[int, ...] | None = None
    """For a retry run: the retried run's agent index of each of its agents."""
    pass_threshold: float | None = None
    """The run's pass threshold (``RecordedRun.pass_threshold``), carried into history: a
    history entry keeps no config, so without it fractional rewards would be counted at the
    catalog's threshold, not the one the run was asked for. None: not recorded (a lockfile
    written before it was), and results fall back to the catalog's, saying so."""


def spec_attempts_per_task(spec: Mapping[str, Any]) -> int:
    """A submit body's ``execution_config.attempts_per_task`` (``model.attempts_per_task``),
    at least 1; ``RecordedRun.attempts_per_task`` is this for a recorded run's body."""
    return max(1, attempts_per_task(spec.get("execution_config")))


def spec_pass_threshold(spec: Mapping[str, Any]) -> float | None:
    """A submit body's ``execution_config.pass_threshold`` (the config's), None when it sets
    none or sets something that is not a number."""
    value = (spec.get("execution_config") or {}).get("pass_threshold")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def effective_pass_threshold(spec: Mapping[str, Any], catalog: float | None) -> float | None:
    """The threshold that decides a run's passes, as the Platform applies it: the config's
    (``spec_pass_threshold``), else the catalog's ``catalog``; None when neither is known."""
    own = spec_pass_threshold(spec)
    return own if own is not None else catalog


def selection_digest(spec: Mapping[str, Any]) -> str:
    """A short digest of a submit body's task selection (``tasks_config``)."""
    return digest(spec.get("tasks_config") or {})[:19]


class Baseline(Frozen, frozen=True, kw_only=True):
    """An address's accepted baseline run (``osmosis-results accept ADDR@RUN``): what
    ``--fail-on-regression`` compares the newest run with. A fixed, accepted run, never the
    moving "previous" one (repeated checks against a moving baseline inflate false alarms)."""

    run_id: str
    """The accepted run."""
    run_name: str | None = None
    """Its name."""
    accepted_at: datetime
    """When it was accepted."""
    accepted_at_commit: str | None = None
    """HEAD when accepted."""


class LockState(Frozen, frozen=True, kw_only=True):
    """The whole recorded state."""

    version: int = LOCKFILE_VERSION
    """The lockfile format's version (``LOCKFILE_VERSION``)."""
    lineage: str
    """uuid of this state's history: a saved plan of another lineage is stale."""
    serial: int = 0
    """+1 on every write."""
    platform: str
    """Normalised Platform URL, or ``local``: state of another Platform is refused."""
    workspace: str
    """The workspace: state of another workspace is refused."""
    repository: str | None = None
    """The repository this state belongs to (``reconciler.gitinfo.GitRepo.identity``): a
    lockfile copied from another repository must never drive stops. None in lockfiles
    written before it was recorded, and outside git."""
    root_commit: str | None = None
    """The root commit of the repository's history (format 2). A lockfile written before
    the repository had a remote (``repository = "root:..."``) is accepted by a clone with
    the same root commit, which records its remote; a different remote is a fork."""
    observed_until: datetime | None = None
    """Watermark of the run list: every run the Platform created before this time (minus
    ``plan.CLOCK_SKEW``) was seen by an observation whose plan this state records, so a
    later plan lists only newer runs (platform-api.md: no other filter exists)."""
    runs: dict[str, RecordedRun] = msgspec.field(default_factory=dict)
    """Address -> entry."""
    rejections: dict[str, Rejection] = msgspec.field(default_factory=dict)
    """Address -> the Platform's refusal of its config (see ``Rejection``)."""
    history: tuple[HistoryEntry, ...] = ()
    """Newest first, capped per address."""
    baselines: dict[str, Baseline] = msgspec.field(default_factory=dict)
    """Address -> its accepted baseline run (format 2)."""
    platform_instance: str | None = None
    """With ``platform = "local"``: the instance of the embedded Platform that wrote this
    state (its data directory's id, format 3). A clone on another machine has another
    instance, where none of these runs exist: its plan says so and pays for nothing."""
    reruns: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    """Address -> the commits whose ``Osmosis-Rerun`` trailer an apply acted on for it,
    oldest first, at most ``RERUNS_KEPT`` (format 3): only these, or a later run of the
    address, consume a request; no other lockfile commit does."""
    decisions: dict[str, DecisionRecord] = msgspec.field(default_factory=dict)
    """Address -> its decision (``[decide]``; state/decisions.py): none, no table."""
