"""Paying once, round three (issue 34), with plain values: twins, missing runs, a smoke
stage that fails closed, deferred attempts and standing blocks."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import msgspec
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from reconciler.config.policy import check_policy
from reconciler.model import (
    Action,
    BenchmarkInfo,
    PolicyRule,
    Reason,
    Rejection,
    SmokeRule,
    spec_fingerprint,
)
from reconciler.plan import compute_plan
from reconciler.plan.smoke import narrowed_spec
from reconciler.render import render_markdown, render_text
from tests.support.plan_fixtures import (
    HLE,
    NOW,
    TB,
    canonical_of,
    desired,
    downloads,
    fingerprint_of,
    lock,
    observation,
    observed_run,
    recorded_run,
    settings,
)

A = desired("hle/a")
BIG_TB = desired(
    "tb/full", "terminal-bench-2-1", harness="terminus-2", task_set=None, judge=None, attempts=3
)
SMOKE_ALL = SmokeRule(addresses=("**",), above=10, tasks=1)


def twin(run_id: str = "x1", status: str = "running", fingerprint: str | None = None):
    run = observed_run(run_id, status, fingerprint=fingerprint or fingerprint_of(A))
    return replace(run, creator_name="Colleague", created_at=NOW - timedelta(minutes=5))


def test_a_twin_blocks_with_who_when_and_both_ways_on() -> None:
    plan = compute_plan([A], lock(), observation(twin()), settings())
    (item,) = plan.items
    assert item.action is Action.BLOCKED and item.reason is Reason.TWIN_ACTIVE
    assert item.blocked is not None and item.blocked.intended_action is Action.SUBMIT
    first = item.details[0]
    assert "name-x1 (x1) is running" in first
    assert "created by Colleague on 2026-09-01 11:55 UTC" in first
    fix = item.details[1]
    assert "`osmosis-state adopt hle/a x1`" in fix
    assert "`osmosis-apply --allow-duplicate hle/a`" in fix
    assert "Osmosis-Allow-Duplicate: hle/a" in fix
    assert [f.command for f in item.fixes] == [
        "osmosis-state adopt hle/a x1",
        "osmosis-apply --allow-duplicate hle/a",
    ]
    assert plan.summary.attempts == 0 and plan.summary.blocked == 1
    assert plan.newly_blocked == (item,)


def test_an_ended_twin_made_while_the_apply_waited_blocks_an_older_one_does_not() -> None:
    """Two clones applying with --wait: the first's runs ended while the second waited for
    the lock. Made since the second began, they are its twins; the same run made before it
    began is an ordinary ended run, and re-running its config pays."""
    ended = twin(status="finished")  # created 5 minutes before NOW
    waited = msgspec.structs.replace(
        observation(ended), concurrent_since=NOW - timedelta(minutes=10)
    )
    (item,) = compute_plan([A], lock(), waited, settings()).items
    assert item.action is Action.BLOCKED and item.reason is Reason.TWIN_ACTIVE
    assert "name-x1 (x1) is finished" in item.details[0]
    before = msgspec.structs.replace(
        observation(ended), concurrent_since=NOW - timedelta(minutes=1)
    )
    (item,) = compute_plan([A], lock(), before, settings()).items
    assert item.action is Action.SUBMIT
    (item,) = compute_plan([A], lock(), observation(ended), settings()).items
    assert item.action is Action.SUBMIT


def test_allowed_duplicates_pay_and_say_so() -> None:
    plan = compute_plan([A], lock(), observation(twin()), settings(allow_duplicate=("hle/**",)))
    (item,) = plan.items
    assert item.action is Action.SUBMIT
    assert any("allowed by --allow-duplicate" in w for w in item.warnings)


def test_a_smoke_stage_twin_is_compared_with_the_smoke_body() -> None:
    rules = settings(smoke=(SMOKE_ALL,))
    staged = compute_plan([BIG_TB], lock(), observation(), rules)
    (item,) = staged.items
    assert item.smoke is not None and item.smoke.stage == "smoke"
    smoke_body = narrowed_spec(BIG_TB.spec, item.smoke.tasks)
    run = observed_run("s1", "queued", benchmark_id=TB.id)
    run = replace(run, fingerprint=spec_fingerprint(smoke_body, TB.id))
    blocked = compute_plan([BIG_TB], lock(), observation(run), rules)
    (item,) = blocked.items
    assert item.action is Action.BLOCKED and item.reason is Reason.TWIN_ACTIVE
    assert "does exactly what this smoke run asks" in item.details[0]
    assert "(smoke first: 1 attempt, then 267; blocked)" in render_text(blocked)


def test_a_hand_edited_run_id_blocks_naming_the_original_run() -> None:
    entry = recorded_run(A, "r-edited", status="running")
    plan = compute_plan(
        [A], lock(entry), observation(twin("r-real"), missing=("r-edited",)), settings()
    )
    (item,) = plan.items
    assert item.action is Action.BLOCKED and item.reason is Reason.RUN_MISSING_UNDECIDED
    assert "last seen running" in item.details[0]
    assert "name-r-real (r-real) is running" in item.details[1]
    assert "osmosis-state adopt hle/a r-real" in item.details[2]


def test_an_ended_run_never_downloaded_that_went_is_named_with_what_was_lost() -> None:
    entry = recorded_run(A, "r1", status="finished")
    plan = compute_plan([A], lock(entry), observation(missing=("r1",)), settings())
    assert plan.items == ()
    (warning,) = [w for w in plan.warnings if w.startswith("hle/a:")]
    assert "ended finished and the Platform no longer lists it" in warning
    assert "never downloaded" in warning and "osmosis-apply --replace hle/a" in warning


def test_an_ended_downloaded_run_that_went_plans_nothing() -> None:
    entry = recorded_run(A, "r1", status="finished", downloads=downloads("summary.csv"))
    plan = compute_plan([A], lock(entry), observation(missing=("r1",)), settings())
    assert plan.items == () and not [w for w in plan.warnings if w.startswith("hle/a:")]


def test_a_smoke_stage_that_cannot_be_made_is_blocked_not_paid_in_full() -> None:
    # HLE's parity set: the catalog counts its tasks but does not list them.
    plan = compute_plan([A], lock(), observation(), settings(smoke=(SMOKE_ALL,)))
    (item,) = plan.items
    assert item.action is Action.BLOCKED and item.reason is Reason.SMOKE_NOT_POSSIBLE
    assert plan.summary.attempts == 0
    assert "its smoke run cannot be made" in item.details[0]
    fix = item.details[1]
    assert "`osmosis-apply --skip-smoke hle/a`" in fix
    assert "task_names" in fix and "[[smoke]]" in fix
    assert "(blocked: its smoke run cannot be made; the full run is 249)" in render_text(plan)


def test_a_smoke_selection_in_the_settings_makes_the_smoke_run() -> None:
    rule = SmokeRule(above=10, task_names=("hle/q-0001",))
    plan = compute_plan([A], lock(), observation(), settings(smoke=(rule,)))
    (item,) = plan.items
    assert item.action is Action.SUBMIT and item.smoke is not None
    assert item.smoke.tasks == ("hle/q-0001",) and item.attempts == 1
    assert item.spec is not None and item.spec["tasks_config"] == {"task_names": ["hle/q-0001"]}


def test_skip_smoke_still_goes_to_the_full_run() -> None:
    plan = compute_plan(
        [A], lock(), observation(), settings(smoke=(SMOKE_ALL,), skip_smoke=("hle/a",))
    )
    (item,) = plan.items
    assert item.action is Action.SUBMIT and item.attempts == 249


def test_skip_smoke_of_a_glob_skips_only_its_own_segment() -> None:
    """``--skip-smoke 'hle/*'`` skipped the smoke stage of a generator's cell ``hle/gen/a``
    too (``*`` crossed ``/``; found by the lifecycle suite); ``hle/**`` is everything below."""
    cell = desired("hle/gen/a")
    one = settings(smoke=(SMOKE_ALL,), skip_smoke=("hle/*",))
    (item,) = compute_plan([cell], lock(), observation(), one).items
    assert item.smoke is not None and item.smoke.stage != "skipped", item
    assert item.action is not Action.SUBMIT or item.attempts == 1, item
    below = settings(smoke=(SMOKE_ALL,), skip_smoke=("hle/**",))
    (item,) = compute_plan([cell], lock(), observation(), below).items
    assert item.action is Action.SUBMIT and item.attempts == 249, item


def test_the_summary_shows_what_is_paid_now_and_what_is_deferred() -> None:
    configs = [
        desired(f"tb/c{i}", "terminal-bench-2-1", harness="terminus-2", task_set=None, judge=None,
                attempts=3, models=(f"m/{i}",))
        for i in range(4)
    ]  # fmt: skip
    plan = compute_plan(configs, lock(), observation(), settings(smoke=(SMOKE_ALL,)))
    s = plan.summary
    assert (s.attempts, s.deferred, s.deferred_attempts, s.deferred_each) == (4, 4, 1068, 267)
    line = render_text(plan).strip().splitlines()[-1]
    assert line == (
        "Plan: 4 to submit, 0 to replace, 0 to stop, 0 to download, 0 to forget; 4 attempts, "
        "dollars unknown; then 4 × 267 attempts after their smoke runs."
    )
    assert "then 4 × 267 attempts after their smoke runs" in render_markdown(plan)


def test_a_smoke_failure_recorded_in_the_lockfile_is_standing() -> None:
    smoke = recorded_run(BIG_TB, "s1", status="failed").model_copy(
        update={"stage": "smoke", "spec_digest": canonical_of(BIG_TB)}
    )
    rules = settings(smoke=(SMOKE_ALL,))
    plan = compute_plan([BIG_TB], lock(smoke), observation(observed_run("s1", "failed")), rules)
    (item,) = plan.items
    assert item.reason is Reason.SMOKE_FAILED and item.standing
    assert plan.newly_blocked == () and plan.summary.standing == 1
    assert "standing: this block is recorded in the lockfile" in render_text(plan)
    # The apply that sees it end first has not recorded it yet: new, the plan fails.
    running = smoke.model_copy(update={"status": "running"})
    fresh = compute_plan([BIG_TB], lock(running), observation(observed_run("s1", "failed")), rules)
    assert [i.standing for i in fresh.items] == [False] and len(fresh.newly_blocked) == 1


def test_a_remembered_refusal_is_standing() -> None:
    plan = compute_plan([A], lock(), observation(), settings())
    (submit,) = plan.items
    assert submit.context is not None
    refused = lock().model_copy(
        update={
            "rejections": {
                "hle/a": Rejection(
                    spec_digest=submit.after_digest or "",
                    context=submit.context,
                    message="over your workspace limits",
                    rejected_at=NOW - timedelta(days=1),
                )
            }
        }
    )
    again = compute_plan([A], refused, observation(), settings())
    (item,) = again.items
    assert item.reason is Reason.PLATFORM_REFUSED and item.standing


# --------------------------------------------------------------------------- item 6

SPELLINGS = ("hle", "HLE", "bench-hle")
"""Every way the Platform accepts to name the fixture's HLE: its key, its exact name, its id."""


def _rule_spelling() -> st.SearchStrategy[str]:
    """How a rule may name the benchmark: any accepted spelling, in any case."""
    return st.sampled_from(SPELLINGS).flatmap(
        lambda name: st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
            lambda upper: "".join(
                c.upper() if u else c.lower() for c, u in zip(name, upper, strict=True)
            )
        )
    )


@given(rule_name=_rule_spelling(), config_name=st.sampled_from(SPELLINGS))
@hsettings(max_examples=60, deadline=None)
def test_no_accepted_spelling_bypasses_a_deny_rule(rule_name: str, config_name: str) -> None:
    """A deny rule scoped to a benchmark applies to a config of that benchmark however either
    names it (main: ``benchmark = "HLE"`` escaped a rule on ``"hle"``)."""
    run = desired("hle/a", config_name, models=("openai/gpt-5",))
    models = PolicyRule(name="anthropic only", benchmark=rule_name, models=("anthropic/*",))
    budget = PolicyRule(name="small", benchmark=rule_name, max_attempts=10)
    benchmarks: dict[str, BenchmarkInfo | None] = {config_name: HLE}
    at_load = check_policy([run], [models], Path("/nonexistent"))
    plan = compute_plan(
        [run],
        lock(),
        observation(benchmarks=benchmarks),
        settings(policy=(models, budget)),
    )
    denied_models = [i for i in at_load if i.severity == "error"] + [
        e for e in plan.errors if 'policy "anthropic only"' in e
    ]
    assert len(denied_models) == 1, (at_load, plan.errors)
    assert any('policy "small"' in e for e in plan.errors), plan.errors


def test_a_rule_on_another_benchmark_stays_out() -> None:
    run = desired("hle/a", "HLE", models=("openai/gpt-5",))
    rule = PolicyRule(name="tb only", benchmark="terminal-bench-2-1", models=("anthropic/*",))
    plan = compute_plan([run], lock(), observation(), settings(policy=(rule,)))
    assert plan.errors == ()


# --------------------------------------------------------------------------- item 3


def test_another_machines_try_out_lockfile_plans_nothing_and_says_so_once() -> None:
    entries = [recorded_run(desired(f"hle/m{i}"), f"r{i}", status="finished") for i in range(12)]
    theirs = lock(*entries).model_copy(update={"platform_instance": "lp_theirs"})
    configs = [desired(f"hle/m{i}") for i in range(12)]
    missing = tuple(f"r{i}" for i in range(12))
    here = observation(missing=missing).model_copy(update={"platform_instance": "lp_mine"})
    plan = compute_plan(configs, theirs, here, settings())
    assert plan.items == () and plan.summary.attempts == 0 and plan.drift == ()
    (message,) = plan.warnings
    assert "embedded Platform of another machine (instance lp_theirs; this one is lp_mine)" in (
        message
    )
    assert "none of its 12 recorded run(s) exist here" in message
    assert "docs/local-platform.md" in message
    # The same lockfile on the machine that wrote it plans as ever.
    mine = observation(missing=missing).model_copy(update={"platform_instance": "lp_theirs"})
    same = compute_plan(configs, theirs, mine, settings())
    assert not any("another machine" in w for w in same.warnings)


def test_the_drift_report_lists_standing_blocks_without_counting_them_as_drift() -> None:
    from reconciler.ci.drift import read_drift, read_standing, render_issue_body

    payload = {
        "drift": [
            {"kind": "run_missing", "address": "a", "run_id": "r", "message": "m",
             "fingerprint": "sha256:" + "0" * 64}
        ],
        "actions": [
            {"address": "tb/full", "action": "blocked", "standing": True,
             "details": ["the smoke run ended failed: ..."], "reason": "smoke_failed"},
            {"address": "tb/new", "action": "blocked", "standing": False, "details": ["x"]},
        ],
    }  # fmt: skip
    standing = read_standing(payload)
    assert standing == (("tb/full", "the smoke run ended failed: ..."),)
    body = render_issue_body(read_drift(payload), standing=standing)
    assert "**Standing blocks**" in body and "- tb/full: the smoke run ended failed" in body
    assert len(read_drift(payload)) == 1
