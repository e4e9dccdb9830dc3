"""compute_plan: table-driven over design.md §6 with plain values (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from reconciler.model import (
    Action,
    BenchmarkRef,
    DriftKind,
    HistoryEntry,
    Intent,
    LocalOutputs,
    Reason,
    digest,
    spec_fingerprint,
)
from reconciler.plan import (
    ACTION_ORDER,
    PREVIOUS_CONFIG_UNKNOWN,
    compute_plan,
    drift_fingerprint,
    spec_changes,
)
from tests.support.plan_fixtures import (
    BENCHMARKS,
    HLE,
    NOW,
    canonical_of,
    desired,
    downloads,
    fingerprint_of,
    lock,
    make_spec,
    observation,
    observed_run,
    recorded_run,
    settings,
)

A = desired("hle/a")
A2 = desired("hle/a", models=("openai/gpt-5.2",))
EARLIER = NOW - timedelta(hours=3)
"""When the configs of the adoption cases reached the branch (their runs are newer)."""
A_IN = desired("hle/a", arrived_at=EARLIER)
A2_IN = desired("hle/a", models=("openai/gpt-5.2",), arrived_at=EARLIER)
B = desired("hle/b", models=("anthropic/claude-sonnet-4",))
TB = desired("tb/smoke", "terminal-bench-2-1", harness="terminus-2", task_set=None, judge=None)
FILES = ("summary.json", "results.jsonl")
ON_DISK = LocalOutputs(present=frozenset(FILES))
HLE_WITH_TASKS = HLE.model_copy(update={"task_names": frozenset({"t1", "t2", "t3"})})


@dataclass
class Case:
    name: str
    want: list = field(default_factory=list)
    entries: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, LocalOutputs] = field(default_factory=dict)
    items: list[tuple[Action, str, Reason]] = field(default_factory=list)
    drift: list[tuple[DriftKind, str | None, str | None]] = field(default_factory=list)
    history: tuple = ()
    missing: tuple[str, ...] | None = None
    """Run ids a direct read said are gone; None: every recorded run not in ``runs``."""
    vouched: tuple[str, ...] = ()
    """Run ids the remote state record names (``Observation.vouched``)."""


def gone(entries, runs, missing=None) -> tuple[str, ...]:
    """What observe reports with a full listing: recorded runs not listed, read, 404."""
    if missing is not None:
        return tuple(missing)
    listed = {r.id for r in runs}
    return tuple(e.run_id for e in entries if e.run_id and e.run_id not in listed)


def submit_intent(
    spec: dict,
    started_minutes_ago: float = 1.0,
    benchmark_id: str = "bench-hle",
    listed_minutes_ago: tuple[float, ...] = (),
) -> Intent:
    return Intent(
        op="submit",
        started_at=NOW - timedelta(minutes=started_minutes_ago),
        body_digest=digest(spec),
        spec=spec,
        benchmark_id=benchmark_id,
        listings=tuple(NOW - timedelta(minutes=m) for m in listed_minutes_ago) or None,
    )


def quiet_intent(spec: dict, benchmark_id: str = "bench-hle") -> Intent:
    """A submit of unknown outcome 45 minutes ago, with two run listings since that showed no
    match: with this plan's own listing, the quiet period (3 listings, 30 minutes) is over."""
    return submit_intent(spec, 45, benchmark_id, listed_minutes_ago=(40, 20))


def stop_intent(run_id: str) -> Intent:
    return Intent(
        op="stop", started_at=NOW - timedelta(minutes=1), body_digest=digest({}), run_id=run_id
    )


CASES = [
    # ---- submit (+)
    Case("new config submits", want=[A], items=[(Action.SUBMIT, "hle/a", Reason.NEW_CONFIG)]),
    Case(
        "changed config of a finished run submits",
        want=[A2],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        items=[(Action.SUBMIT, "hle/a", Reason.SPEC_CHANGED)],
    ),
    Case(
        "changed config of a missing run submits and reports drift",
        want=[A2],
        entries=[recorded_run(A, "r1", status="finished")],
        items=[(Action.SUBMIT, "hle/a", Reason.SPEC_CHANGED)],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    Case(
        "--replace of a finished run submits",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        settings={"replace": ("hle/a",)},
        items=[(Action.SUBMIT, "hle/a", Reason.REPLACE_REQUESTED)],
    ),
    # ---- replace (-/+)
    Case(
        "--replace of an active run replaces",
        want=[A],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        settings={"replace": ("hle/*",)},
        items=[(Action.REPLACE, "hle/a", Reason.REPLACE_REQUESTED)],
    ),
    Case(
        "changed config of an active run replaces",
        want=[A2],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "queued")],
        items=[(Action.REPLACE, "hle/a", Reason.SPEC_CHANGED)],
    ),
    Case(
        "on_change = keep leaves an active changed run alone",
        want=[A2],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        settings={"on_change": "keep"},
        items=[],
    ),
    # ---- stop (-) and forget (.)
    Case(
        "deleted config with an active run stops it",
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        items=[(Action.STOP, "hle/a", Reason.CONFIG_DELETED)],
    ),
    Case(
        "deleted config with on_delete = forget forgets the active run",
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "pending")],
        settings={"on_delete": "forget"},
        items=[(Action.FORGET, "hle/a", Reason.CONFIG_DELETED)],
    ),
    Case(
        "deleted config with a downloaded terminal run forgets it",
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        items=[(Action.FORGET, "hle/a", Reason.CONFIG_DELETED)],
    ),
    Case(
        "deleted config with an undownloaded ended run downloads it as it forgets it",
        entries=[recorded_run(A, "r1", status="finished")],
        runs=[observed_run("r1", "finished")],
        items=[
            (Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING),
            (Action.FORGET, "hle/a", Reason.CONFIG_DELETED),
        ],
    ),
    Case(
        "deleted config with a missing run forgets it and reports drift",
        entries=[recorded_run(A, "r1", status="finished")],
        items=[(Action.FORGET, "hle/a", Reason.CONFIG_DELETED)],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    # ---- download (↓)
    Case(
        "a run that just finished is downloaded",
        want=[A],
        entries=[recorded_run(A, "r1", status="running")],
        runs=[observed_run("r1", "finished")],
        items=[(Action.DOWNLOAD, "hle/a", Reason.RUN_FINISHED)],
    ),
    Case(
        "a recorded finished run without downloads is downloaded",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished")],
        runs=[observed_run("r1", "finished")],
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "outputs = disk: a recorded file missing on disk is downloaded again",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": LocalOutputs(present=frozenset({"summary.json"}))},
        settings={"outputs": "disk"},
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "outputs = disk: no outputs entry at all means every recorded file is missing",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        settings={"outputs": "disk"},
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "a complete recorded download with no files on disk (fresh clone) is done",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        items=[],
    ),
    Case(
        "a complete recorded download with some files on disk is done",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": LocalOutputs(present=frozenset({"summary.json"}))},
        items=[],
    ),
    Case(
        "an incomplete recorded download with no files on disk is fetched",
        want=[A],
        entries=[
            recorded_run(A, "r1", status="finished", downloads=downloads(*FILES, complete=False))
        ],
        runs=[observed_run("r1", "finished")],
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "a changed file on disk is drift even when files need not be on disk",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={
            "hle/a": LocalOutputs(
                present=frozenset({"summary.json"}), changed=frozenset({"summary.json"})
            )
        },
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_CHANGED)],
        drift=[(DriftKind.FILES_CHANGED, "hle/a", "r1")],
    ),
    Case(
        "downloaded types not covering download_types are downloaded",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        settings={"download_types": ("summary", "results", "logs")},
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "an incomplete download is resumed",
        want=[A],
        entries=[
            recorded_run(A, "r1", status="finished", downloads=downloads(*FILES, complete=False))
        ],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "changed files are drift and downloaded again",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={
            "hle/a": LocalOutputs(present=frozenset(FILES), changed=frozenset({"summary.json"}))
        },
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_CHANGED)],
        drift=[(DriftKind.FILES_CHANGED, "hle/a", "r1")],
    ),
    Case(
        "complete outputs on disk: nothing to do",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        items=[],
    ),
    Case(
        "a running run is not downloaded by default",
        want=[A],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        items=[],
    ),
    Case(
        "a running run is downloaded with download_running",
        want=[A],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        settings={"download_running": True},
        items=[(Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING)],
    ),
    Case(
        "a queued run is never downloaded",
        want=[A],
        entries=[recorded_run(A, "r1", status="queued")],
        runs=[observed_run("r1", "queued")],
        settings={"download_running": True},
        items=[],
    ),
    # ---- adopt (<=)
    Case(
        # Issue 22: timing is no evidence (another repository's run looks the same).
        "an unrecorded active twin of a new config is not adopted: the submit is blocked",
        want=[A_IN],
        runs=[observed_run("x1", "running", fingerprint=fingerprint_of(A))],
        items=[(Action.BLOCKED, "hle/a", Reason.TWIN_ACTIVE)],
    ),
    Case(
        "an unrecorded run the remote state record names is adopted (lost lockfile commit)",
        want=[A_IN],
        runs=[observed_run("x1", "running", fingerprint=fingerprint_of(A))],
        vouched=("x1",),
        items=[(Action.ADOPT, "hle/a", Reason.UNRECORDED_MATCH)],
    ),
    Case(
        "an identical run made before the config arrived is someone else's: submit",
        want=[desired("hle/a", arrived_at=NOW - timedelta(hours=1))],
        runs=[observed_run("x1", "finished", fingerprint=fingerprint_of(A))],
        items=[(Action.SUBMIT, "hle/a", Reason.NEW_CONFIG)],
    ),
    Case(
        "an identical active run of an uncommitted config is never adopted: blocked",
        want=[A],
        runs=[observed_run("x1", "running", fingerprint=fingerprint_of(A))],
        items=[(Action.BLOCKED, "hle/a", Reason.TWIN_ACTIVE)],
    ),
    Case(
        "an identical active run by a creator the lockfile never had is not adopted: blocked",
        want=[A_IN, B],
        entries=[recorded_run(B, "r2", creator="sha256:ci-bot")],
        runs=[
            observed_run("r2", "running"),
            observed_run("x1", "running", fingerprint=fingerprint_of(A), creator="sha256:alice"),
        ],
        items=[(Action.BLOCKED, "hle/a", Reason.TWIN_ACTIVE)],
    ),
    Case(
        # Issue 22: one service token for the whole organisation: creator is no evidence.
        "an identical active run by the lockfile's creator is not adopted without evidence: blocked",
        want=[A_IN, B],
        entries=[recorded_run(B, "r2", creator="sha256:ci-bot")],
        runs=[
            observed_run("r2", "running"),
            observed_run("x1", "running", fingerprint=fingerprint_of(A), creator="sha256:ci-bot"),
        ],
        items=[(Action.BLOCKED, "hle/a", Reason.TWIN_ACTIVE)],
    ),
    Case(
        # Issue 34: a hand-edited run_id while the original run still runs pays nothing.
        "a recorded run that is gone does not adopt its active twin: blocked, naming it",
        want=[A],
        entries=[recorded_run(A, "r-edited", status="running")],
        runs=[observed_run("x1", "running", fingerprint=fingerprint_of(A))],
        items=[(Action.BLOCKED, "hle/a", Reason.RUN_MISSING_UNDECIDED)],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r-edited")],
    ),
    Case(
        "a duplicate made after the config arrived, while it has its run, is drift",
        want=[A_IN],
        entries=[recorded_run(A, "r1")],
        runs=[
            observed_run("r1", "running"),
            observed_run(
                "x1", "running", fingerprint=fingerprint_of(A), created_at=NOW - timedelta(hours=1)
            ),
        ],
        items=[],
        drift=[(DriftKind.POSSIBLE_DUPLICATE, "hle/a", "x1")],
    ),
    Case(
        "an unrecorded run with another fingerprint is not adopted",
        want=[A_IN],
        runs=[observed_run("x1", "running", fingerprint=fingerprint_of(B))],
        items=[(Action.SUBMIT, "hle/a", Reason.NEW_CONFIG)],
    ),
    Case(
        "a run already in history is never adopted",
        want=[A],
        runs=[observed_run("x1", "finished", fingerprint=fingerprint_of(A))],
        history=(
            HistoryEntry(
                address="hle/a",
                run_id="x1",
                run_name="n",
                spec_digest=A.spec_digest,
                status="finished",
                reason="forgotten",
            ),
        ),
        items=[(Action.SUBMIT, "hle/a", Reason.NEW_CONFIG)],
    ),
    Case(
        "a finished run with a changed config adopts a vouched run of the new config",
        want=[A2_IN],
        entries=[recorded_run(A, "r1", status="finished")],
        runs=[
            observed_run("r1", "finished"),
            observed_run("x1", "running", fingerprint=fingerprint_of(A2)),
        ],
        vouched=("x1",),
        items=[
            (Action.ADOPT, "hle/a", Reason.UNRECORDED_MATCH),
            (Action.DOWNLOAD, "hle/a", Reason.RESULTS_MISSING),
        ],
    ),
    Case(
        "a pending submit intent adopts its run",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        runs=[observed_run("x1", "pending", fingerprint=fingerprint_of(A), created_at=NOW)],
        items=[(Action.ADOPT, "hle/a", Reason.INTENT_PENDING)],
    ),
    Case(
        "intent adoption allows ten minutes of clock skew",
        want=[A],
        entries=[
            recorded_run(A, None, status=None, intent=submit_intent(A.spec, started_minutes_ago=1))
        ],
        runs=[
            observed_run(
                "x1",
                "pending",
                fingerprint=fingerprint_of(A),
                created_at=NOW - timedelta(minutes=10),
            )
        ],
        items=[(Action.ADOPT, "hle/a", Reason.INTENT_PENDING)],
    ),
    Case(
        "a matching run created long before the intent is not its run: resubmit",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=quiet_intent(A.spec))],
        runs=[
            observed_run(
                "x1",
                "finished",
                fingerprint=fingerprint_of(A),
                created_at=NOW - timedelta(minutes=90),
            )
        ],
        # The old run is still a perfect match for the *config*, but it cannot be this
        # intent's run; it stays unmanaged.
        items=[(Action.SUBMIT, "hle/a", Reason.RESUBMIT_AFTER_LOST)],
    ),
    Case(
        "no run for the intent after the quiet period: resubmit",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=quiet_intent(A.spec))],
        items=[(Action.SUBMIT, "hle/a", Reason.RESUBMIT_AFTER_LOST)],
    ),
    Case(
        "no run for a recent intent yet: unknown outcome, not sent again",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        items=[(Action.UNKNOWN, "hle/a", Reason.OUTCOME_UNKNOWN)],
    ),
    Case(
        "three listings, but not 30 minutes since the submit: still unknown",
        want=[A],
        entries=[
            recorded_run(
                A, None, status=None, intent=submit_intent(A.spec, 20, listed_minutes_ago=(15, 5))
            )
        ],
        items=[(Action.UNKNOWN, "hle/a", Reason.OUTCOME_UNKNOWN)],
    ),
    Case(
        "45 minutes, but only this plan's listing: still unknown",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec, 45))],
        items=[(Action.UNKNOWN, "hle/a", Reason.OUTCOME_UNKNOWN)],
    ),
    Case(
        "the quiet period is a setting",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec, 6))],
        settings={"unknown_outcome_listings": 1, "unknown_outcome_quiet_minutes": 5.0},
        items=[(Action.SUBMIT, "hle/a", Reason.RESUBMIT_AFTER_LOST)],
    ),
    Case(
        "a candidate whose fingerprint is unknown blocks the intent",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        runs=[observed_run("x1", "pending", fingerprint=None, created_at=NOW)],
        items=[(Action.BLOCKED, "hle/a", Reason.INTENT_PENDING)],
    ),
    Case(
        "an unknown-fingerprint run of another benchmark does not block",
        want=[A],
        entries=[recorded_run(A, None, status=None, intent=quiet_intent(A.spec))],
        runs=[
            observed_run("x1", "pending", benchmark_id="bench-tb", fingerprint=None, created_at=NOW)
        ],
        items=[(Action.SUBMIT, "hle/a", Reason.RESUBMIT_AFTER_LOST)],
    ),
    Case(
        "an intent whose config was deleted and whose run never appeared is forgotten",
        entries=[recorded_run(A, None, status=None, intent=quiet_intent(A.spec))],
        items=[(Action.FORGET, "hle/a", Reason.CONFIG_DELETED)],
    ),
    Case(
        "an intent whose config was deleted is unknown until the quiet period is over",
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        items=[(Action.UNKNOWN, "hle/a", Reason.OUTCOME_UNKNOWN)],
    ),
    Case(
        "a config renamed while its submit is unknown waits for it, not submitted again",
        want=[A.model_copy(update={"address": "hle/b"})],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        items=[(Action.UNKNOWN, "hle/a", Reason.OUTCOME_UNKNOWN)],
    ),
    Case(
        "a config renamed while its submit is unknown takes the run the submit made",
        want=[A.model_copy(update={"address": "hle/b"})],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        runs=[observed_run("x1", "pending", fingerprint=fingerprint_of(A), created_at=NOW)],
        items=[(Action.ADOPT, "hle/b", Reason.INTENT_PENDING)],
    ),
    Case(
        "a config renamed whose submit made no run after the quiet period: submitted anew",
        want=[A.model_copy(update={"address": "hle/b"})],
        entries=[recorded_run(A, None, status=None, intent=quiet_intent(A.spec))],
        items=[
            (Action.FORGET, "hle/a", Reason.CONFIG_DELETED),
            (Action.SUBMIT, "hle/b", Reason.NEW_CONFIG),
        ],
    ),
    Case(
        "a pending stop of an active run is retried",
        entries=[recorded_run(A, "r1", intent=stop_intent("r1"))],
        runs=[observed_run("r1", "running")],
        items=[(Action.STOP, "hle/a", Reason.STOP_PENDING)],
    ),
    Case(
        "a pending stop whose run stopped: forget, no stopped-outside drift",
        entries=[recorded_run(A, "r1", intent=stop_intent("r1"))],
        runs=[observed_run("r1", "stopped")],
        items=[(Action.FORGET, "hle/a", Reason.CONFIG_DELETED)],
    ),
    Case(
        "a pending stop during a replace is retried as the replace",
        want=[A2],
        entries=[recorded_run(A, "r1", intent=stop_intent("r1"))],
        runs=[observed_run("r1", "running")],
        items=[(Action.REPLACE, "hle/a", Reason.STOP_PENDING)],
    ),
    # ---- move (>)
    Case(
        "a renamed config moves its entry",
        want=[desired("hle/renamed")],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        items=[(Action.MOVE, "hle/renamed", Reason.RENAMED)],
    ),
    Case(
        "a renamed and changed config is a delete plus a new config",
        want=[desired("hle/renamed", models=("x/y",))],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        items=[
            (Action.FORGET, "hle/a", Reason.CONFIG_DELETED),
            (Action.SUBMIT, "hle/renamed", Reason.NEW_CONFIG),
        ],
    ),
    # ---- missing and outside changes
    Case(
        # Issue 34: missing is not a reason to pay.
        "a recorded active run missing on the Platform is drift and blocked, not paid again",
        want=[A],
        entries=[recorded_run(A, "r1")],
        items=[(Action.BLOCKED, "hle/a", Reason.RUN_MISSING_UNDECIDED)],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    Case(
        "a recorded active run missing is submitted again with --allow-duplicate",
        want=[A],
        entries=[recorded_run(A, "r1")],
        settings={"allow_duplicate": ("hle/*",)},
        items=[(Action.SUBMIT, "hle/a", Reason.RUN_MISSING)],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    Case(
        "a recorded ended and downloaded run that is missing plans nothing",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        outputs={"hle/a": ON_DISK},
        items=[],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    Case(
        "a recorded ended run never downloaded that is missing plans nothing (named)",
        want=[A],
        entries=[recorded_run(A, "r1", status="failed")],
        items=[],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    Case(
        "a recorded ended run that is missing is submitted again on request",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished")],
        settings={"replace": ("hle/a",)},
        items=[(Action.SUBMIT, "hle/a", Reason.REPLACE_REQUESTED)],
        drift=[(DriftKind.RUN_MISSING, "hle/a", "r1")],
    ),
    Case(
        "a new config whose identical run ended is submitted (an ended run is no twin)",
        want=[A],
        runs=[observed_run("x1", "finished", fingerprint=fingerprint_of(A))],
        items=[(Action.SUBMIT, "hle/a", Reason.NEW_CONFIG)],
    ),
    Case(
        "a new config with an active twin is submitted with --allow-duplicate",
        want=[A],
        runs=[observed_run("x1", "running", fingerprint=fingerprint_of(A))],
        settings={"allow_duplicate": ("hle/a",)},
        items=[(Action.SUBMIT, "hle/a", Reason.NEW_CONFIG)],
    ),
    Case(
        "a re-run of a finished config with an active twin is blocked",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[
            observed_run("r1", "finished"),
            observed_run("x1", "queued", fingerprint=fingerprint_of(A)),
        ],
        outputs={"hle/a": ON_DISK},
        settings={"replace": ("hle/a",)},
        items=[(Action.BLOCKED, "hle/a", Reason.TWIN_ACTIVE)],
    ),
    Case(
        "an active run of this repository at another address is no twin",
        want=[A, desired("hle/copy")],
        entries=[recorded_run(A, "r1", status="running")],
        runs=[observed_run("r1", "running", fingerprint=fingerprint_of(A))],
        items=[(Action.SUBMIT, "hle/copy", Reason.NEW_CONFIG)],
    ),
    Case(
        "a run stopped outside the tool is drift, and its outputs are downloaded",
        want=[A],
        entries=[recorded_run(A, "r1", status="running")],
        runs=[observed_run("r1", "stopped")],
        items=[(Action.DOWNLOAD, "hle/a", Reason.RUN_FINISHED)],
        drift=[(DriftKind.STOPPED_OUTSIDE, "hle/a", "r1")],
    ),
    Case(
        "a run that failed is drift, and its outputs are downloaded",
        want=[A],
        entries=[recorded_run(A, "r1", status="queued")],
        runs=[observed_run("r1", "failed")],
        items=[(Action.DOWNLOAD, "hle/a", Reason.RUN_FINISHED)],
        drift=[(DriftKind.FAILED_OUTSIDE, "hle/a", "r1")],
    ),
    Case(
        "an unrecorded run is unmanaged, not drift",
        runs=[observed_run("x9", "running")],
    ),
    Case(
        "a recorded ended run that was not looked at is taken as recorded",
        want=[A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        outputs={"hle/a": ON_DISK},
        missing=(),
        items=[],
    ),
    Case(
        "a run under the recorded id with another name is not stopped",
        entries=[recorded_run(A, "r1", run_name="bright-otter")],
        runs=[observed_run("r1", "running", name="calm-yak")],
        items=[(Action.BLOCKED, "hle/a", Reason.RECORD_MISMATCH)],
    ),
    # ---- unknown statuses are active
    Case(
        "an unknown status counts as active for a deleted config",
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "paused")],
        items=[(Action.STOP, "hle/a", Reason.CONFIG_DELETED)],
    ),
    Case(
        "an unknown status counts as active for a changed config",
        want=[A2],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "warming_up")],
        items=[(Action.REPLACE, "hle/a", Reason.SPEC_CHANGED)],
    ),
    Case(
        "an unknown status is not downloaded and is no drift",
        want=[A],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "warming_up")],
        items=[],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plan_rows(case: Case) -> None:
    plan = compute_plan(
        case.want,
        lock(*case.entries, history=case.history),
        observation(
            *case.runs,
            outputs=case.outputs,
            missing=gone(case.entries, case.runs, case.missing),
            vouched=case.vouched,
        ),
        settings(**case.settings),
    )
    assert [(i.action, i.address, i.reason) for i in plan.items] == case.items
    assert [(d.kind, d.address, d.run_id) for d in plan.drift] == case.drift
    assert plan.errors == ()


def plan_of(want=(), entries=(), runs=(), **kwargs):
    obs_keys = ("secrets", "outputs", "benchmarks", "platform", "workspace", "catalog", "vouched")
    obs_kwargs = {k: kwargs.pop(k) for k in obs_keys if k in kwargs}
    obs_kwargs["missing"] = gone(entries, runs, kwargs.pop("missing", None))
    return compute_plan(
        list(want), lock(*entries), observation(*runs, **obs_kwargs), settings(**kwargs)
    )


# --------------------------------------------------------------------------- item contents


def test_submit_carries_spec_digests_cost_and_commit():
    want = desired(
        "hle/a",
        attempts=3,
        models=("a/b", "c/d"),
        requested_by="f00d" * 10,
        requested_subject="Add HLE",
    )
    (item,) = plan_of([want]).items
    assert item.spec == want.spec
    assert item.after_digest == canonical_of(want) and item.before_digest is None
    assert item.benchmark_id == "bench-hle"
    assert item.task_count == 249  # the parity task set
    assert item.attempts == 249 * 2 * 3
    assert item.requested_by == "f00d" * 10 and item.requested_subject == "Add HLE"


@pytest.mark.parametrize(
    ("kwargs", "tasks"),
    [
        ({"task_set": None}, 2500),
        ({"task_set": "parity"}, 249),
        ({"task_set": None, "categories": ("math",)}, 1000),
        ({"task_set": None, "categories": ("math", "physics")}, 2500),
        ({"task_set": None, "task_names": ("t1", "t2", "t3")}, 3),
    ],
)
def test_task_count_follows_the_selection(kwargs, tasks):
    bench = HLE_WITH_TASKS
    (item,) = plan_of([desired("hle/a", **kwargs)], benchmarks={"HLE": bench}).items
    assert item.action is Action.SUBMIT
    assert item.task_count == tasks
    assert item.attempts == tasks


def test_summary_totals_attempts_of_submits_and_replaces_only():
    blocked = desired("hle/c", judge=None)  # judge required: blocked
    plan = plan_of(
        [A2, B, blocked],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
    )
    kinds = {i.address: i.action for i in plan.items}
    assert kinds == {"hle/a": Action.REPLACE, "hle/b": Action.SUBMIT, "hle/c": Action.BLOCKED}
    assert plan.items[2].attempts == 249  # cost still shown on the blocked item
    assert plan.summary.attempts == 249 * 2
    assert (plan.summary.submit, plan.summary.replace, plan.summary.blocked) == (1, 1, 1)


def test_replace_names_the_old_run_and_the_change():
    plan = plan_of([A2], entries=[recorded_run(A, "r1")], runs=[observed_run("r1", "running")])
    (item,) = plan.items
    assert item.run_id == "r1" and item.run_name == "name-r1"
    assert item.before_digest == canonical_of(A) and item.after_digest == canonical_of(A2)
    assert item.changes == ('agents[0].model.model: "openai/gpt-5" -> "openai/gpt-5.2"',)


def test_on_change_keep_warns():
    plan = plan_of(
        [A2],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        on_change="keep",
    )
    assert plan.items == ()
    assert len(plan.warnings) == 1
    assert "hle/a" in plan.warnings[0] and "on_change = keep" in plan.warnings[0]


def test_forget_of_active_run_warns_it_keeps_running():
    plan = plan_of(
        entries=[recorded_run(A, "r1")], runs=[observed_run("r1", "running")], on_delete="forget"
    )
    (item,) = plan.items
    assert "keeps running" in item.warnings[0]


def test_download_item_names_types_and_run():
    plan = plan_of(
        [A],
        entries=[recorded_run(A, "r1", status="finished")],
        runs=[observed_run("r1", "finished")],
        download_types=("summary",),
    )
    (item,) = plan.items
    assert (item.run_id, item.run_name, item.download_types) == ("r1", "name-r1", ("summary",))


def test_move_pairs_deterministically_and_keeps_the_run():
    old1 = recorded_run(None, "r1", address="old/one", spec=A.spec, status="finished")
    old2 = recorded_run(None, "r2", address="old/two", spec=A.spec, status="finished")
    new = [desired("new/one"), desired("new/two")]
    for order in (new, list(reversed(new))):
        plan = plan_of(
            order,
            entries=[old2, old1],
            runs=[observed_run("r1", "finished"), observed_run("r2", "finished")],
        )
        moves = [(i.from_address, i.address, i.run_id) for i in plan.items]
        assert moves == [("old/one", "new/one", "r1"), ("old/two", "new/two", "r2")]
        assert all(i.action is Action.MOVE and i.reason is Reason.RENAMED for i in plan.items)


def test_unrecorded_adoption_prefers_newest_and_adopts_each_run_once():
    arrived = NOW - timedelta(days=3)
    a = desired("hle/a", arrived_at=arrived)
    twin = desired("hle/twin", arrived_at=arrived)  # same spec as A
    fp = fingerprint_of(A)
    runs = [
        observed_run("old", "finished", fingerprint=fp, created_at=NOW - timedelta(days=2)),
        observed_run("new", "running", fingerprint=fp, created_at=NOW - timedelta(hours=1)),
    ]
    plan = plan_of([twin, a], runs=runs, vouched=("old", "new"))
    assert [(i.address, i.action, i.run_id) for i in plan.items] == [
        ("hle/a", Action.ADOPT, "new"),
        ("hle/twin", Action.ADOPT, "old"),
    ]
    assert plan.drift == ()
    third = plan_of(
        [a, twin, desired("hle/zz", arrived_at=arrived)], runs=runs, vouched=("old", "new")
    )
    assert third.items[-1].action is Action.SUBMIT


def test_a_run_that_cannot_be_ours_is_named_on_the_submit_with_the_import_command():
    # Another repository's identical run, made before this config reached the branch.
    want = desired("hle/a", arrived_at=NOW - timedelta(hours=1))
    run = observed_run("x1", "finished", fingerprint=fingerprint_of(A))
    plan = plan_of([want], runs=[run])
    (item,) = plan.items
    assert item.action is Action.SUBMIT
    assert any(
        "name-x1 (x1)" in w and "not adopted" in w and "osmosis-import name-x1 --to" in w
        for w in item.warnings
    )
    assert plan.drift == ()


def test_possible_duplicate_names_both_runs():
    want = desired("hle/a", arrived_at=NOW - timedelta(hours=3))
    dup = observed_run(
        "x1", "running", fingerprint=fingerprint_of(A), created_at=NOW - timedelta(hours=1)
    )
    plan = plan_of([want], entries=[recorded_run(A, "r1")], runs=[observed_run("r1"), dup])
    (drift,) = plan.drift
    assert drift.kind is DriftKind.POSSIBLE_DUPLICATE
    assert "name-x1 (x1)" in drift.message and "name-r1 (r1)" in drift.message


def test_unmanaged_runs_are_counted_not_planned():
    obs = observation(observed_run("r1"), observed_run("u1"), observed_run("u2"))
    obs = obs.model_copy(update={"workspace_runs": 3_000})
    plan = compute_plan([A], lock(recorded_run(A, "r1")), obs, settings())
    assert plan.items == () and plan.drift == ()
    assert plan.unmanaged_count == 2_999
    ignored = compute_plan([A], lock(recorded_run(A, "r1")), obs, settings(unmanaged="ignore"))
    assert ignored.unmanaged_count is None


def test_watermark_never_passes_an_adoption_left_out_by_a_target():
    want = desired("hle/a", arrived_at=NOW - timedelta(hours=3))
    run = observed_run(
        "x1", "running", fingerprint=fingerprint_of(A), created_at=NOW - timedelta(hours=1)
    )
    obs = observation(run, vouched=("x1",)).model_copy(update={"newest_created": NOW})
    kept = compute_plan([want], lock(), obs, settings())
    assert kept.observed_until == NOW
    left_out = compute_plan([want], lock(), obs, settings(targets=("other/*",)))
    assert left_out.observed_until is not None and left_out.observed_until < run.created_at


def test_intent_adoption_claims_the_run_before_config_adoption():
    # "hle/a" has an interrupted submit; "hle/b" is a new config with the same body. The run
    # belongs to the intent; the new config must pay for its own.
    same = desired("hle/b")
    plan = plan_of(
        [A, same],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        runs=[observed_run("x1", "pending", fingerprint=fingerprint_of(A), created_at=NOW)],
    )
    assert [(i.address, i.action) for i in plan.items] == [
        ("hle/a", Action.ADOPT),
        ("hle/b", Action.SUBMIT),
    ]
    assert plan.items[0].run_id == "x1"


def test_intent_adoption_of_a_changed_config_warns():
    plan = plan_of(
        [A2],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        runs=[observed_run("x1", "pending", fingerprint=fingerprint_of(A), created_at=NOW)],
    )
    (item,) = plan.items
    assert item.action is Action.ADOPT and item.after_digest == canonical_of(A)
    assert "changed since the submit" in item.warnings[0]


def test_blocked_intent_tells_the_user_to_plan_again():
    plan = plan_of(
        [A],
        entries=[recorded_run(A, None, status=None, intent=submit_intent(A.spec))],
        runs=[observed_run("x1", "pending", fingerprint=None, created_at=NOW)],
    )
    (item,) = plan.items
    assert "name-x1 (x1)" in item.details[0]
    assert "re-run `osmosis-plan`" in item.details[-1]


def test_resubmit_after_lost_sends_the_desired_spec():
    plan = plan_of([A2], entries=[recorded_run(A, None, status=None, intent=quiet_intent(A.spec))])
    (item,) = plan.items
    assert item.action is Action.SUBMIT and item.spec == A2.spec


# --------------------------------------------------------------------------- preflight


def only_item(want, **kwargs):
    (item,) = plan_of([want], **kwargs).items
    return item


CATALOG = (
    BenchmarkRef(id="bench-hle", name="HLE", key="hle"),
    BenchmarkRef(id="bench-tb", name="Terminal-Bench 2.1", key="terminal-bench-2-1"),
    BenchmarkRef(id="bench-tool", name="Toolathlon-Verified", key="toolathlon-verified"),
)
REAL = "https://platform.osmosis.ai"


def test_benchmark_not_found_is_blocked():
    item = only_item(desired("x/a", "no-such-bench"))
    assert (item.action, item.reason) == (Action.BLOCKED, Reason.BENCHMARK_NOT_FOUND)
    assert item.blocked is not None
    assert item.blocked.intended_action is Action.SUBMIT
    assert item.blocked.intended_reason is Reason.NEW_CONFIG
    assert "Benchmark 'no-such-bench' was not found in this workspace" in item.details[0]
    assert "correct [experiment].benchmark in benchmarks/x/a.toml" in item.details[0]
    assert item.fixes == ()


def test_benchmark_not_found_offers_the_nearest_key_as_an_edit():
    item = only_item(desired("x/a", "terminal-bench", task_set=None), catalog=CATALOG)
    assert item.reason is Reason.BENCHMARK_NOT_FOUND
    assert "Did you mean terminal-bench-2-1 (Terminal-Bench 2.1)?" in item.details[0]
    fix, harness = item.fixes
    # The rest of the config is checked against the benchmark it most likely names, so
    # fixing the name does not reveal the next error one plan later.
    assert item.details[1] == (
        "Agent 1: Terminal-Bench 2.1 requires a harness (its published scores use harness = "
        '"terminus-2") (checked against Terminal-Bench 2.1, the benchmark it most likely '
        'names); fix: set `agents[0].harness = "terminus-2"` in benchmarks/x/a.toml'
    )
    assert (harness.key, harness.value) == ("agents[0].harness", "terminus-2")
    assert (fix.file, fix.key, fix.value) == (
        "benchmarks/x/a.toml",
        "experiment.benchmark",
        "terminal-bench-2-1",
    )
    assert item.details[0].endswith(
        'fix: set `experiment.benchmark = "terminal-bench-2-1"` in benchmarks/x/a.toml'
    )
    # A name in the wrong case resolves to its key too.
    fix = only_item(desired("x/a", "terminal-bench 2.1"), catalog=CATALOG).fixes[0]
    assert fix.value == "terminal-bench-2-1"


def test_benchmark_not_found_without_a_near_key_lists_the_catalog():
    item = only_item(desired("x/a", "zzzz"), catalog=CATALOG)
    assert (
        "Benchmarks in workspace acme/evals: hle, terminal-bench-2-1, toolathlon-verified"
        in (item.details[0])
    )
    assert "`osmosis-platform-emulator benchmark list --workspace acme/evals`" in item.details[0]
    # The local Platform's catalog page is a command: add it to this workspace.
    assert item.details[0].endswith(
        "or add it to the workspace: "
        "`osmosis-platform-emulator benchmark add zzzz --workspace acme/evals`"
    )
    item = only_item(desired("x/a", "zzzz"), catalog=CATALOG, platform=REAL)
    assert "`osmosis benchmark list`" in item.details[0]


def test_an_unknown_benchmark_does_not_hide_the_execution_range_errors():
    # No catalog name is near "zzzz", so nothing else can be checked; [execution] can.
    want = desired("x/a", "zzzz")
    want = want.model_copy(
        update={"spec": {**want.spec, "execution_config": {"max_concurrent_attempts": 500}}}
    )
    item = only_item(want, catalog=CATALOG)
    assert item.reason is Reason.BENCHMARK_NOT_FOUND
    assert item.details[1] == (
        "max_concurrent_attempts must be an integer from 1 to 64; fix: set "
        "`execution.max_concurrent_attempts = 64` in benchmarks/x/a.toml"
    )


def test_benchmark_missing_from_the_observation_is_not_found():
    item = only_item(desired("x/a", "never-looked-up"))
    assert item.reason is Reason.BENCHMARK_NOT_FOUND


def test_syncing_benchmark_is_blocked_with_progress():
    item = only_item(desired("c/a", "acme/custom@1.0", task_set=None, judge=None))
    assert item.reason is Reason.BENCHMARK_NOT_READY
    assert "acme/custom is still syncing its task list (12 of 40 tasks)" in item.details[0]
    (fix,) = item.fixes
    assert fix.command == "osmosis-platform-emulator benchmark sync acme/custom@1.0 --status ready"
    real = only_item(desired("c/a", "acme/custom@1.0", task_set=None, judge=None), platform=REAL)
    assert real.fixes == () and "plan again once its task list is ready" in real.details[0]


def test_failed_sync_is_blocked_with_error_and_url():
    item = only_item(
        desired("c/a", "acme/broken@2", task_set=None, judge=None),
        platform="http://127.0.0.1:8765",
    )
    assert item.reason is Reason.BENCHMARK_NOT_READY
    assert "acme/broken is not runnable: Missing fixture." in item.details[0]
    (fix,) = item.fixes
    assert fix.command == (
        "osmosis-platform-emulator benchmark sync acme/broken@2 --status ready "
        "--platform http://127.0.0.1:8765"
    )
    real = only_item(desired("c/a", "acme/broken@2", task_set=None, judge=None), platform=REAL)
    assert "retry its sync at https://platform.example/acme/benchmarks/broken" in real.details[0]


def test_missing_secret_hint_is_the_working_command_for_each_platform():
    want = desired("hle/a", extra_secrets=("WANDB_KEY",))
    item = only_item(want)
    assert item.reason is Reason.SECRET_MISSING
    assert item.details == (
        "Secret(s) not found: WANDB_KEY (referenced by benchmarks/hle/a.toml); fix: "
        "`echo VALUE | osmosis-platform-emulator secret set WANDB_KEY --scope workspace "
        "--workspace acme/evals`",
    )
    loopback = only_item(want, platform="http://127.0.0.1:9000", workspace="git:acme/evals")
    assert loopback.fixes[0].command == (
        "echo VALUE | osmosis-platform-emulator secret set WANDB_KEY --scope workspace "
        "--git acme/evals --platform http://127.0.0.1:9000"
    )
    real = only_item(want, platform=REAL, workspace="git:acme/evals")
    assert real.fixes[0].command == "osmosis secret set WANDB_KEY --scope workspace"
    named = only_item(want, platform=REAL, workspace="team evals")
    assert named.fixes[0].command == (
        "osmosis --workspace 'team evals' secret set WANDB_KEY --scope workspace"
    )


def test_missing_required_benchmark_secret_is_blocked():
    item = only_item(A, secrets=frozenset({"OPENAI_API_KEY"}))
    assert item.reason is Reason.SECRET_MISSING
    assert "HF_TOKEN (required by HLE)" in item.details[0]
    assert "secret set HF_TOKEN --scope workspace" in item.fixes[0].command


def test_unlistable_secrets_warn_instead_of_blocking():
    item = only_item(A, secrets=None)
    assert item.action is Action.SUBMIT
    assert item.warnings == (
        "secrets could not be listed, so these were not checked: OPENAI_API_KEY, HF_TOKEN",
    )


def test_judge_required():
    item = only_item(desired("hle/a", judge=None))
    assert item.reason is Reason.JUDGE_REQUIRED
    assert "HLE uses an LLM judge and requires judge_api_key_secret" in item.details[0]
    (fix,) = item.fixes
    assert (fix.key, fix.value) == ("execution.judge_api_key_secret", "OPENAI_API_KEY")


def test_judge_api_key_only_benchmark_also_requires_the_secret():
    bench = HLE.model_copy(update={"requires_judge_model": False, "requires_judge_api_key": True})
    item = only_item(desired("hle/a", judge=None), benchmarks={"HLE": bench})
    assert item.reason is Reason.JUDGE_REQUIRED


def test_harness_required():
    item = only_item(desired("tb/a", "terminal-bench-2-1", harness=None, task_set=None, judge=None))
    assert item.reason is Reason.HARNESS_REQUIRED
    assert "Terminal-Bench 2.1 requires a harness" in item.details[0]
    (fix,) = item.fixes
    assert (fix.key, fix.value, fix.remove) == ("agents[0].harness", "terminus-2", False)


def test_harness_unsupported():
    item = only_item(
        desired("t/a", "toolathlon-verified", harness="codex", task_set=None, judge=None)
    )
    assert item.reason is Reason.HARNESS_UNSUPPORTED
    (fix,) = item.fixes
    assert (fix.key, fix.remove) == ("agents[0].harness", True)
    assert "fix: remove `agents[0].harness` from benchmarks/t/a.toml" in item.details[0]


def tb_item(**kwargs):
    kwargs = {"harness": "terminus-2", "task_set": None, "judge": None, **kwargs}
    return only_item(desired("tb/a", "terminal-bench-2-1", **kwargs))


def test_unknown_task_names_offer_the_nearest_names():
    names = tb_item(task_names=("terminal-bench/hello-world", "terminal-bench/git-multibrnch"))
    assert names.reason is Reason.TASKS_NOT_FOUND
    assert (
        "Unknown task 'terminal-bench/git-multibrnch' in Terminal-Bench 2.1 (did you mean "
        "'terminal-bench/git-multibranch'?)"
    ) in names.details[0]
    (fix,) = names.fixes
    assert (fix.key, fix.value) == (
        "tasks.task_names",
        ["terminal-bench/hello-world", "terminal-bench/git-multibranch"],
    )
    far = tb_item(task_names=("zzz",))
    assert far.fixes == () and "correct tasks.task_names in benchmarks/tb/a.toml" in far.details[0]


def test_unknown_categories_offer_the_nearest_category():
    cats = tb_item(categories=("Terminal",))
    assert cats.reason is Reason.TASKS_NOT_FOUND and "Terminal" in cats.details[0]
    (fix,) = cats.fixes
    assert (fix.key, fix.value) == ("tasks.categories", ["terminal"])


def test_an_unknown_task_set_runs_everything_and_says_so():
    # The Platform silently expands a task set it does not have (platform-api.md §6.3), so
    # the plan promises what it will do, at that cost, and warns.
    tset = tb_item(task_set="parity")
    assert tset.action is Action.SUBMIT
    assert tset.task_count == 89
    assert 'task set "parity" does not exist in Terminal-Bench 2.1' in tset.warnings[0]


def test_empty_task_names_are_refused_with_a_one_task_fix():
    item = tb_item(task_names=())
    assert item.reason is Reason.TASKS_EMPTY
    (fix,) = item.fixes
    assert (fix.key, fix.value) == ("tasks.task_names", ["terminal-bench/git-multibranch"])


def test_execution_values_out_of_range_are_refused_with_the_nearest_valid_value():
    want = desired("hle/a")
    spec = {**want.spec, "execution_config": {**want.spec["execution_config"]}}
    spec["execution_config"].update({"attempts_per_task": 0, "max_concurrent_attempts": 1000})
    item = only_item(want.model_copy(update={"spec": spec}))
    assert item.reason is Reason.EXECUTION_INVALID
    assert item.details[0].startswith("attempts_per_task must be an integer from 1 to 16")
    assert [(f.key, f.value) for f in item.fixes] == [
        ("execution.attempts_per_task", 1),
        ("execution.max_concurrent_attempts", 64),
    ]


def test_verifier_is_refused_for_managed_benchmarks_only():
    want = desired("hle/a")
    spec = {**want.spec, "execution_config": {**want.spec["execution_config"]}}
    spec["execution_config"]["verifier_secrets"] = ["OPENAI_API_KEY"]
    managed = HLE.model_copy(update={"source_type": "osmosis_managed"})
    item = only_item(want.model_copy(update={"spec": spec}), benchmarks={"HLE": managed})
    assert item.reason is Reason.VERIFIER_REJECTED
    assert [(f.key, f.remove) for f in item.fixes] == [("verifier", True)]
    harbor = HLE.model_copy(update={"source_type": "harbor_registry"})
    item = only_item(want.model_copy(update={"spec": spec}), benchmarks={"HLE": harbor})
    assert item.action is Action.SUBMIT


def test_every_problem_is_listed_in_the_platforms_order():
    want = desired(
        "tb/a",
        "terminal-bench-2-1",
        harness=None,
        task_set=None,
        judge=None,
        extra_secrets=("NOPE",),
        categories=("gpu",),
    )
    item = only_item(want)
    # The Platform checks its rules before it looks for secrets (local_platform/app.py).
    assert item.reason is Reason.HARNESS_REQUIRED
    assert len(item.details) == 3
    assert [d.split(" ")[0] for d in item.details] == ["Agent", "Unknown", "Secret(s)"]


def test_submit_shows_the_benchmarks_source_and_pass_threshold():
    bench = HLE.model_copy(update={"source_url": "https://lastexam.ai", "pass_threshold": 1.0})
    item = only_item(A, benchmarks={"HLE": bench})
    assert item.benchmark is not None
    assert (item.benchmark.source_url, item.benchmark.pass_threshold) == (
        "https://lastexam.ai",
        1.0,
    )


def test_blocked_replace_keeps_the_intended_action():
    want = desired("hle/a", models=("openai/gpt-5.2",), judge=None)
    plan = plan_of([want], entries=[recorded_run(A, "r1")], runs=[observed_run("r1", "running")])
    (item,) = plan.items
    assert item.action is Action.BLOCKED
    assert item.blocked is not None
    assert (item.blocked.intended_action, item.blocked.intended_reason) == (
        Action.REPLACE,
        Reason.SPEC_CHANGED,
    )
    assert item.run_id == "r1" and item.changes  # the change stays visible
    assert plan.summary.replace == 0 and plan.summary.blocked == 1


def test_warnings_for_non_default_harness_and_no_recommended_task_set():
    tb = only_item(
        desired("tb/a", "terminal-bench-2-1", harness="codex", task_set=None, judge=None)
    )
    assert tb.action is Action.SUBMIT
    assert "scores not comparable with the published leaderboard" in tb.warnings[0]
    hle = only_item(desired("hle/a", task_set=None))
    assert hle.action is Action.SUBMIT
    assert hle.warnings == (
        'For HLE, we recommend [tasks] task_set = "parity" (249 tasks) so results are '
        "comparable with published scores. This submission uses the full or a custom task "
        "selection.",
    )
    assert only_item(A).warnings == ()
    # Keyed to the catalog's flag, not to the name "hle".
    plain = HLE.model_copy(update={"recommended_task_sets": ()})
    assert only_item(desired("hle/a", task_set=None), benchmarks={"HLE": plain}).warnings == ()


def test_task_names_and_categories_select_their_union_once():
    both = tb_item(
        task_names=("terminal-bench/hello-world", "terminal-bench/hello-world", "x"),
        categories=("terminal",),
    )
    assert both.reason is Reason.TASKS_NOT_FOUND  # "x" is unknown
    union = tb_item(task_names=("terminal-bench/hello-world",), categories=("terminal",))
    assert union.task_count == 89  # the name is in the category: counted once
    names = tb_item(task_names=("terminal-bench/hello-world", "terminal-bench/hello-world"))
    assert names.task_count == 1


def test_task_set_takes_precedence_and_the_rest_is_said_to_be_ignored():
    item = only_item(desired("hle/a", task_names=("t9",)), benchmarks={"HLE": HLE_WITH_TASKS})
    assert item.action is Action.SUBMIT and item.task_count == 249
    assert "[tasks].task_names is ignored: task_set takes precedence" in item.warnings[0]


# --------------------------------------------------------------------------- guards and selection


def stops(n: int) -> dict:
    wants = [desired(f"hle/r{i}") for i in range(n)]
    return {
        "entries": [recorded_run(w, f"r{i}") for i, w in enumerate(wants)],
        "runs": [observed_run(f"r{i}", "running") for i in range(n)],
    }


def test_mass_stop_guard():
    assert plan_of(**stops(5)).errors == ()
    plan = plan_of(**stops(6))
    assert plan.summary.stop == 6
    assert len(plan.errors) == 1 and "--allow-mass-stop" in plan.errors[0]
    assert plan_of(**stops(6), allow_mass_stop=True).errors == ()
    assert plan_of(**stops(3), max_stops=2).errors != ()


def test_replaces_count_towards_the_stop_guard():
    plan = plan_of(
        [A2], entries=[recorded_run(A, "r1")], runs=[observed_run("r1", "running")], max_stops=0
    )
    assert "--allow-mass-stop" in plan.errors[0]


def test_budget_guard():
    plan = plan_of([desired("hle/a", task_set=None, attempts=3)])  # 2500 x 3 = 7500
    assert plan.summary.attempts == 7500
    assert len(plan.errors) == 1
    assert "7,500" in plan.errors[0] and "--allow-over-budget" in plan.errors[0]
    assert (
        plan_of([desired("hle/a", task_set=None, attempts=3)], allow_over_budget=True).errors == ()
    )
    assert plan_of([A], max_attempts=248).errors != ()
    assert plan_of([A], max_attempts=249).errors == ()


def test_targets_keep_matching_items_and_count_the_rest():
    plan = plan_of([A, B, TB], targets=("hle/*",))
    assert [i.address for i in plan.items] == ["hle/a", "hle/b"]
    assert plan.other_pending == 1
    plan = plan_of([A, B, TB], targets=("tb/smoke",))
    assert [i.address for i in plan.items] == ["tb/smoke"] and plan.other_pending == 2
    assert plan.config_digests.keys() == {"hle/a", "hle/b", "tb/smoke"}


def test_a_move_is_targeted_by_either_address():
    plan = plan_of(
        [desired("new/a")],
        entries=[recorded_run(A, "r1")],
        runs=[observed_run("r1", "running")],
        targets=("hle/a",),
    )
    assert [i.action for i in plan.items] == [Action.MOVE]


def test_skip_holds_items_back_with_a_warning():
    plan = plan_of([A, B], skip=("hle/b",))
    assert [i.address for i in plan.items] == ["hle/a"]
    assert any("hle/b" in w and "held back" in w for w in plan.warnings)
    assert plan.summary.submit == 1


def test_refresh_only_plans_nothing_but_reports_drift():
    plan = plan_of([A, B], entries=[recorded_run(A, "r1")], refresh_only=True)
    assert plan.items == ()
    assert [d.kind for d in plan.drift] == [DriftKind.RUN_MISSING]
    assert plan.errors == ()


# --------------------------------------------------------------------------- drift, order, plan fields


def test_drift_fingerprints_are_stable_and_distinct():
    first = plan_of([A], entries=[recorded_run(A, "r1")], runs=[observed_run("zz")])
    second = plan_of(
        [A, B],
        entries=[recorded_run(A, "r1", status="finished")],
        runs=[observed_run("zz", "finished")],
    )
    assert [d.fingerprint for d in first.drift] == [d.fingerprint for d in second.drift]
    assert first.drift[0].fingerprint == digest(["run_missing", "hle/a", "r1"])
    assert drift_fingerprint(DriftKind.RUN_MISSING, "hle/a", "r1") != drift_fingerprint(
        DriftKind.STOPPED_OUTSIDE, "hle/a", "r1"
    )
    assert len({d.fingerprint for d in first.drift}) == 1


def test_plan_is_deterministic_and_sorted():
    wants = [TB, B, A2, desired("x/new")]
    entries = [
        recorded_run(A, "r1"),
        recorded_run(None, "r2", address="gone/one", spec=make_spec(models=("q",))),
    ]
    runs = [
        observed_run("r1", "running"),
        observed_run("r2", "running"),
        observed_run("u1"),
        observed_run("u0"),
    ]
    one = plan_of(wants, entries, runs)
    two = plan_of(list(reversed(wants)), list(reversed(entries)), list(reversed(runs)))
    assert one == two
    assert [i.address for i in one.items] == sorted(i.address for i in one.items)
    assert one.drift == ()


def test_key_name_and_id_of_one_benchmark_are_no_change():
    # The lockfile recorded the config written with the key; the config now names the
    # benchmark by its exact name, then by its id: the same request, no paid replace.
    by_key = desired("hle/a", "hle")
    entry = recorded_run(by_key, "r1", status="finished", downloads=downloads(*FILES))
    entry = entry.model_copy(update={"benchmark_id": "bench-hle"})
    benchmarks = {"hle": HLE, "HLE": HLE, "bench-hle": HLE}
    for written in ("hle", "HLE", "bench-hle"):
        plan = plan_of(
            [desired("hle/a", written)],
            entries=[entry],
            runs=[observed_run("r1", "finished")],
            outputs={"hle/a": ON_DISK},
            benchmarks=benchmarks,
        )
        assert plan.items == (), (written, plan.items)
    # An old entry without a recorded benchmark id is resolved by what it wrote.
    old = entry.model_copy(update={"benchmark_id": None})
    plan = plan_of(
        [desired("hle/a", "bench-hle")],
        entries=[old],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        benchmarks=benchmarks,
    )
    assert plan.items == ()
    # Another benchmark is a change.
    other = plan_of(
        [desired("hle/a", "terminal-bench-2-1", task_set=None, harness="terminus-2", judge=None)],
        entries=[entry],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
        benchmarks={**benchmarks, "terminal-bench-2-1": BENCHMARKS["terminal-bench-2-1"]},
    )
    assert [i.reason for i in other.items] == [Reason.SPEC_CHANGED]


def test_plan_carries_state_identity_and_config_digests():
    plan = plan_of([A, TB])
    assert plan.lineage == "11111111-2222-3333-4444-555555555555" and plan.serial == 7
    assert (plan.platform, plan.workspace) == ("local", "acme/evals")
    assert plan.head == "0123456789abcdef0123456789abcdef01234567"
    assert plan.config_digests == {"hle/a": A.spec_digest, "tb/smoke": TB.spec_digest}


def test_no_changes_plan_is_empty():
    plan = plan_of(
        [A],
        entries=[recorded_run(A, "r1", status="finished", downloads=downloads(*FILES))],
        runs=[observed_run("r1", "finished")],
        outputs={"hle/a": ON_DISK},
    )
    assert plan.is_empty and not plan.has_changes
    counts = plan.summary.model_dump()
    assert counts.pop("cost_usd_low") is None and counts.pop("cost_usd_high") is None
    assert counts.pop("deferred_each") is None
    assert counts == {k: 0 for k in counts}


def test_cost_is_estimated_from_recorded_runs_of_the_same_benchmark_and_model():
    from reconciler.model import AgentResult, RunResults

    # Two recorded runs of openai/gpt-5 on HLE: $0.40 and $1.00 per task, one attempt each.
    def priced(address: str, run_id: str, cost: float):
        entry = recorded_run(desired(address), run_id, status="finished")
        results = RunResults(agents=(AgentResult(agent_index=0, cost_per_task=cost),))
        return entry.model_copy(update={"benchmark_id": "bench-hle", "results": results})

    entries = [priced("hle/x", "r1", 0.40), priced("hle/y", "r2", 1.00)]
    want = desired("hle/new", attempts=2)  # parity: 249 tasks x 2 attempts
    runs = [observed_run("r1", "finished"), observed_run("r2", "finished")]
    plan = plan_of([want, desired("hle/x"), desired("hle/y")], entries=entries, runs=runs)
    (item,) = [i for i in plan.items if i.address == "hle/new"]
    assert item.cost is not None
    assert (item.cost.usd_low, item.cost.usd_high) == (199.2, 498.0)
    assert (
        item.cost.basis == "cost per attempt of 2 recorded runs of openai/gpt-5 on this benchmark"
    )
    assert plan.summary.cost_usd_high == 498.0
    other = desired("hle/other", models=("anthropic/claude-sonnet-4",))
    unpriced = plan_of([other], entries=entries)
    assert unpriced.items[0].cost is None and unpriced.summary.unestimated == 1
    guarded = plan_of([want], entries=entries, max_cost_usd=100.0)
    assert guarded.errors and "may cost up to $498.00" in guarded.errors[0]
    assert not plan_of([want], entries=entries, max_cost_usd=100.0, allow_over_budget=True).errors


# --------------------------------------------------------------------------- field-level diff


def test_spec_changes_formats_each_kind_of_difference():
    before = make_spec(env={"FOO": "1", "KEEP": "x"}, attempts=2)
    after = make_spec(
        models=("openai/gpt-5.2", "anthropic/claude-sonnet-4"),
        env={"KEEP": "x"},
        attempts=2,
        task_set=None,
        categories=("math",),
    )
    after["execution_config"]["attempts_per_task"] = "2"
    assert spec_changes(before, after) == (
        'agents[0].model.model: "openai/gpt-5" -> "openai/gpt-5.2"',
        '+ agents[1]: {"env": {}, "model": {"api_key_secret": "OPENAI_API_KEY", '
        '"model": "anthropic/claude-sonnet-4", "type": "provider"}}',
        "- env_config.FOO",
        'execution_config.attempts_per_task: 2 -> "2"',
        '+ tasks_config.categories: ["math"]',
        "- tasks_config.task_set",
    )


def test_spec_changes_sorts_list_indexes_numerically():
    before = {"agents": [{"m": i} for i in range(12)]}
    after = {"agents": [{"m": i if i not in (2, 10) else -i} for i in range(12)]}
    assert spec_changes(before, after) == ("agents[2].m: 2 -> -2", "agents[10].m: 10 -> -10")


def test_spec_changes_of_an_unknown_previous_config():
    assert spec_changes({}, A.spec) == (PREVIOUS_CONFIG_UNKNOWN,)
    plan = plan_of(
        [A2],
        entries=[recorded_run(A, "r1", spec={}, status="finished")],
        runs=[observed_run("r1", "finished")],
    )
    # An empty recorded spec has another digest, so this is a change with an unknown "before".
    assert plan.items[0].changes == (PREVIOUS_CONFIG_UNKNOWN,)


def test_fingerprint_helper_matches_model():
    assert fingerprint_of(A) == spec_fingerprint(A.spec, "bench-hle")


# --------------------------------------------------------------------------- invariants

SPECS = [desired("p/x", models=(f"m/{i}",)) for i in range(3)]
STATUSES = ["pending", "running", "finished", "failed", "stopped", "mystery"]


@st.composite
def snapshots(draw):
    addresses = ["p/a", "p/b", "p/c", "q/d"]
    wants, entries, runs = [], [], []
    for n, address in enumerate(addresses):
        if draw(st.booleans()):
            base = draw(st.sampled_from(SPECS))
            wants.append(base.model_copy(update={"address": address}))
        if draw(st.booleans()):
            spec = draw(st.sampled_from(SPECS)).spec
            run_id = f"r{n}"
            entries.append(
                recorded_run(
                    None, run_id, address=address, spec=spec, status=draw(st.sampled_from(STATUSES))
                )
            )
            if draw(st.booleans()):
                runs.append(observed_run(run_id, draw(st.sampled_from(STATUSES))))
    for n in range(draw(st.integers(0, 3))):
        fp = fingerprint_of(draw(st.sampled_from(SPECS)).model_copy(update={"address": "z"}))
        runs.append(observed_run(f"u{n}", draw(st.sampled_from(STATUSES)), fingerprint=fp))
    opts = {
        "on_change": draw(st.sampled_from(["replace", "keep"])),
        "on_delete": draw(st.sampled_from(["stop", "forget"])),
    }
    return wants, entries, runs, opts


@hsettings(max_examples=150, deadline=None)
@given(snapshots())
def test_plan_invariants(snapshot):
    wants, entries, runs, opts = snapshot
    plan = plan_of(wants, entries, runs, **opts)
    again = plan_of(list(reversed(wants)), list(reversed(entries)), list(reversed(runs)), **opts)
    assert plan == again
    adopted = [i.run_id for i in plan.items if i.action is Action.ADOPT]
    assert len(adopted) == len(set(adopted))
    observed = {r.id: r for r in runs}
    recorded_ids = {e.run_id for e in entries}
    for item in plan.items:
        if item.action is Action.ADOPT:
            assert item.run_id not in recorded_ids
        if item.action is Action.SUBMIT and item.run_id in observed:
            # never a second paid run while the address's run is still going
            assert observed[item.run_id].status in ("finished", "failed", "stopped")
        if item.action is Action.STOP:
            assert observed[item.run_id].status not in ("finished", "failed", "stopped")
    counts = {a: sum(1 for i in plan.items if i.action is a) for a in Action}
    assert plan.summary.submit == counts[Action.SUBMIT]
    assert plan.summary.stop == counts[Action.STOP]
    assert plan.summary.drift == len(plan.drift)
    keys = [(i.address, i.action) for i in plan.items]
    assert keys == sorted(keys, key=lambda k: (k[0], ACTION_ORDER[k[1]]))
    assert len({d.fingerprint for d in plan.drift}) == len(plan.drift)


def test_judge_fix_names_a_record_of_the_judge_models_provider():
    want = desired("hle/a", judge=None, models=("anthropic/claude-sonnet-4",))
    spec = {**want.spec, "agents": [{**want.spec["agents"][0]}]}
    spec["agents"][0]["model"] = {
        **spec["agents"][0]["model"],
        "api_key_secret": "ANTHROPIC_API_KEY",
    }
    item = only_item(want.model_copy(update={"spec": spec}))
    # HLE's default judge is openai/gpt-5: its key, not the agent's Anthropic one.
    assert item.fixes[0].value == "OPENAI_API_KEY"
