"""plan/smoke.py's verdicts: what "ended well" means, as data (docs/smoke.md)."""

from __future__ import annotations

from typing import Any

from reconciler.model import (
    HistoryEntry,
    HistoryReason,
    LockState,
    ObservedRun,
    RecordedRun,
    RunResults,
    SmokeRule,
    SmokeStage,
)
from reconciler.plan.smoke import ended_badly, narrowed_spec, passed_smoke_run

ENTRY = RecordedRun(address="a", spec_digest="sha256:x", run_id="r", stage=SmokeStage.SMOKE)


def run(status: str, score: float | None = None) -> ObservedRun:
    return ObservedRun(id="r", status=status, best_pass_at_1=score)


def test_finished_is_well_without_a_min_score() -> None:
    assert ended_badly(ENTRY, run("finished"), SmokeRule(above=1)) is None


def test_failed_and_stopped_are_not_well() -> None:
    assert ended_badly(ENTRY, run("failed"), None) == "the smoke run ended failed"
    assert ended_badly(ENTRY, run("stopped"), None) == "the smoke run ended stopped"


def test_errored_tasks_are_not_well() -> None:
    entry = ENTRY.model_copy(update={"results": RunResults(errored=1)})
    assert ended_badly(entry, run("finished"), None) == "1 task(s) of the smoke run errored"


def test_min_score() -> None:
    rule = SmokeRule(above=1, min_score=0.5)
    assert ended_badly(ENTRY, run("finished", 0.5), rule) is None
    assert ended_badly(ENTRY, run("finished", 0.25), rule) == (
        "the smoke run scored best pass@1 0.25, below min_score = 0.50"
    )
    assert ended_badly(ENTRY, run("finished"), rule) == (
        "the smoke run has no score, and min_score = 0.50 asks for one"
    )


def test_narrowed_spec_keeps_the_rest_and_does_not_touch_the_original() -> None:
    spec: dict[str, Any] = {
        "experiment_config": {"benchmark": "hle"},
        "tasks_config": {"task_set": "parity"},
        "execution_config": {"attempts_per_task": 3, "max_concurrent_attempts": 4},
        "agents": [{"harness": "x"}],
    }
    body = narrowed_spec(spec, ["t1"])
    assert body["tasks_config"] == {"task_names": ["t1"]}
    assert body["execution_config"] == {"attempts_per_task": 1, "max_concurrent_attempts": 4}
    assert body["agents"] == spec["agents"]
    assert spec["tasks_config"] == {"task_set": "parity"}
    assert spec["execution_config"]["attempts_per_task"] == 3


def _left(
    run_id: str, *, stage: SmokeStage | None, reason: HistoryReason, digest: str = "sha256:x"
) -> HistoryEntry:
    return HistoryEntry(
        address="a",
        run_id=run_id,
        run_name=None,
        spec_digest=digest,
        status="finished",
        reason=reason,
        stage=stage,
    )


def test_passed_smoke_run_is_the_addresss_newest_history_entry() -> None:
    def state(*history: HistoryEntry) -> LockState:
        return LockState(lineage="l", platform="local", workspace="w", history=history)

    smoke = _left("s2", stage=SmokeStage.SMOKE, reason="smoke")
    assert passed_smoke_run(state(smoke), "a", "sha256:x") == "s2"
    assert passed_smoke_run(state(smoke), "a", "sha256:other") is None  # another config
    assert passed_smoke_run(state(smoke), "b", "sha256:x") is None
    # History is newest first: a full run that left after the smoke run means the full run
    # was recorded once, so a submit now is a new one (smoke first).
    full = _left("f1", stage=None, reason="replaced")
    assert passed_smoke_run(state(full, smoke), "a", "sha256:x") is None
    assert passed_smoke_run(state(smoke, full), "a", "sha256:x") == "s2"
    # A smoke run forgotten by a person made way for nothing.
    forgotten = _left("s3", stage=SmokeStage.SMOKE, reason="forgotten")
    assert passed_smoke_run(state(forgotten), "a", "sha256:x") is None


def test_quoted_log_lines_are_escaped_and_cut() -> None:
    from reconciler.plan.smoke import LOG_WIDTH, quoted_line

    hostile = "2026 ERROR [x] \x1b]0;owned\x07\x1b[2J red\nforged line \u202e C:\\tmp"
    quoted = quoted_line(hostile)
    assert "\x1b" not in quoted and "\x07" not in quoted and "\n" not in quoted
    assert "\u202e" not in quoted
    assert "\\x1b]0;owned\\x07" in quoted and "red\\nforged line" in quoted
    assert quoted.endswith("C:\\tmp")  # backslashes are the renderers' to escape
    long = quoted_line("E " + "x" * 1000)
    assert len(long) == LOG_WIDTH and long.endswith("...")
    assert len(quoted_line("\x1b" * 1000)) == LOG_WIDTH  # cut after escaping


def test_with_log_lines_quotes_at_most_three_or_says_why_not() -> None:
    from reconciler.model import Action, PlanItem, Reason
    from reconciler.plan.smoke import with_log_lines

    item = PlanItem(
        action=Action.BLOCKED,
        address="a",
        reason=Reason.SMOKE_FAILED,
        details=("why", "see why: ...", "fix: ..."),
    )
    quoted = with_log_lines(item, [f"line {n}" for n in range(5)], None).details
    assert quoted == (
        "why",
        "see why: ...",
        "the smoke run's last error lines:",
        "    line 2",
        "    line 3",
        "    line 4",
        "fix: ...",
    )
    empty = with_log_lines(item, [], None).details
    assert empty[2] == "the smoke run's log has no warning or error line"
    failed = with_log_lines(item, None, "timed out").details
    assert failed[2] == "the smoke run's log lines could not be fetched: timed out"
    assert failed[3] == "fix: ..."
