"""Frozen value types shared by the pure core (plan, render) and the edges, one module per
snapshot.

Three snapshots feed ``compute_plan``:

* ``DesiredRun``   one validated config file (``desired``; ``config`` builds these);
* ``LockState``    the recorded state, ``state/osmosis.lock`` (``recorded``; ``state.lockfile``
  reads/writes it);
* ``Observation``  what the Platform and the local disk say now (``observed``;
  ``engine.observe`` builds it from the ``platform`` client and ``outputs``).

and ``Settings`` (``settings``) says how; ``compute_plan`` returns a ``Plan`` (``plan``).
``status`` holds ``RunStatus``, ``adoption`` the fingerprints that recognise a run,
``base`` the ``Frozen`` base and the canonical digest, ``generator`` what a run generator
(``*.matrix.toml``) expanded to, ``policy`` the policy rules of the settings, ``decision`` a config's ``[decide]`` table. Every name is re-exported here:
``from reconciler.model import X`` is the way to import them.

Nothing here does I/O or imports an edge library (httpx, tomlkit, structlog, watchfiles).
"""

from __future__ import annotations

from reconciler.model.adoption import (
    adoption_fingerprint,
    creator_digest,
    fingerprint_fields,
    model_identity,
    spec_fingerprint,
    spec_fingerprint_fields,
)
from reconciler.model.base import (
    DEFAULT_ATTEMPTS_PER_TASK,
    Frozen,
    attempts_per_task,
    canonical_digest,
    canonical_json,
    digest,
    recorded_benchmark,
)
from reconciler.model.decision import (
    FUTILITY_RULES,
    MONITORS,
    DecisionRecord,
    DecisionSpec,
    LookRecord,
)
from reconciler.model.desired import (
    DesiredRun,
)
from reconciler.model.generator import (
    CellOrigin,
    CellSource,
    GeneratorMove,
    GeneratorProduct,
    GeneratorRemoval,
    origin_of,
)
from reconciler.model.observed import (
    AgentResult,
    BenchmarkInfo,
    BenchmarkRef,
    ErroredAttempts,
    LeaderboardScore,
    LocalOutputs,
    Observation,
    ObservedRun,
    RetriedResult,
    TaskCounts,
)
from reconciler.model.plan import (
    ACTION_SYMBOLS,
    PAID_ACTIONS,
    PLAN_FORMAT_VERSION,
    Action,
    BenchmarkFacts,
    Blocked,
    Cost,
    DriftItem,
    DriftKind,
    Fix,
    Plan,
    PlanItem,
    PlanSummary,
    Reason,
    RecordedChange,
    ResultRow,
    Retry,
    Smoke,
    glob_match,
)
from reconciler.model.policy import (
    POLICY_EFFECTS,
    PolicyRule,
)
from reconciler.model.recorded import (
    HASHED_OUTPUTS,
    LOCKFILE_VERSION,
    RERUNS_KEPT,
    Baseline,
    Downloads,
    HistoryEntry,
    HistoryReason,
    Intent,
    LockState,
    RecordedRun,
    Rejection,
    RunResults,
    SmokeStage,
    effective_pass_threshold,
    rejection_context,
    selection_digest,
    spec_attempts_per_task,
    spec_pass_threshold,
)
from reconciler.model.settings import (
    DOWNLOAD_TYPES,
    SETTING_CHOICES,
    LockKind,
    OnChange,
    OnDelete,
    Outputs,
    Refresh,
    Settings,
    SmokeRule,
    Unmanaged,
)
from reconciler.model.status import (
    OUTPUTS_DUE_STATUSES,
    RERUN_HINT,
    AddressStatus,
    DecisionStatus,
    RunStatus,
)

__all__ = [
    "HistoryReason",
    "SmokeStage",
    "SETTING_CHOICES",
    "LockKind",
    "OnChange",
    "OnDelete",
    "Outputs",
    "Refresh",
    "Unmanaged",
    "DEFAULT_ATTEMPTS_PER_TASK",
    "attempts_per_task",
    "ACTION_SYMBOLS",
    "Action",
    "AddressStatus",
    "DecisionStatus",
    "AgentResult",
    "Baseline",
    "BenchmarkFacts",
    "Blocked",
    "Cost",
    "BenchmarkInfo",
    "BenchmarkRef",
    "CellOrigin",
    "CellSource",
    "DOWNLOAD_TYPES",
    "DecisionRecord",
    "DecisionSpec",
    "LookRecord",
    "DesiredRun",
    "Downloads",
    "DriftItem",
    "DriftKind",
    "FUTILITY_RULES",
    "Fix",
    "Frozen",
    "GeneratorMove",
    "GeneratorProduct",
    "GeneratorRemoval",
    "HASHED_OUTPUTS",
    "HistoryEntry",
    "Intent",
    "LOCKFILE_VERSION",
    "RERUNS_KEPT",
    "LeaderboardScore",
    "LocalOutputs",
    "ErroredAttempts",
    "TaskCounts",
    "LockState",
    "MONITORS",
    "Observation",
    "PAID_ACTIONS",
    "ObservedRun",
    "PLAN_FORMAT_VERSION",
    "POLICY_EFFECTS",
    "PolicyRule",
    "Plan",
    "PlanItem",
    "PlanSummary",
    "RERUN_HINT",
    "Reason",
    "RecordedChange",
    "RecordedRun",
    "Rejection",
    "ResultRow",
    "RetriedResult",
    "Retry",
    "RunResults",
    "RunStatus",
    "OUTPUTS_DUE_STATUSES",
    "Settings",
    "Smoke",
    "SmokeRule",
    "adoption_fingerprint",
    "canonical_digest",
    "canonical_json",
    "creator_digest",
    "digest",
    "fingerprint_fields",
    "glob_match",
    "model_identity",
    "origin_of",
    "recorded_benchmark",
    "effective_pass_threshold",
    "rejection_context",
    "selection_digest",
    "spec_attempts_per_task",
    "spec_pass_threshold",
    "spec_fingerprint",
    "spec_fingerprint_fields",
]
