"""Renderers: golden files byte for byte, plus the rules every render must keep.

Regenerate the golden files with ``UPDATE_GOLDEN=1 pytest tests/unit/test_render.py`` and
review the diff by eye before committing it.
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest

from reconciler.engine.saved_plan import plan_from_dict
from reconciler.errors import StalePlanError
from reconciler.model import (
    Action,
    DriftKind,
    ErroredAttempts,
    Intent,
    LocalOutputs,
    Plan,
    PlanSummary,
    Reason,
    digest,
)
from reconciler.plan import compute_plan
from reconciler.render import (
    DRIFT_TEXT,
    MARKDOWN_MARKER,
    NO_CHANGES,
    REASON_TEXT,
    plan_to_dict,
    render_json,
    render_markdown,
    render_text,
    summary_line,
)
from tests.support.plan_fixtures import (
    NOW,
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

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
ANSI = re.compile("\x1b\\[")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_bytes(text.encode("utf-8"))
    assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1"
    assert text == path.read_bytes().decode("utf-8")


def full_plan() -> Plan:
    """One plan with every action, every drift kind, warnings and a skip."""
    sha = "3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345"
    new = desired(
        "hle/parity", attempts=2, requested_by=sha, requested_subject="Add HLE parity run"
    )
    tb_old = desired(
        "terminal-bench/smoke",
        "terminal-bench-2-1",
        harness="terminus-2",
        task_set=None,
        judge=None,
        env={"LOG_LEVEL": "info"},
    )
    tb_new = desired(
        "terminal-bench/smoke",
        "terminal-bench-2-1",
        harness="terminus-2",
        task_set=None,
        judge=None,
        models=("openai/gpt-5.2",),
        task_names=("terminal-bench/git-multibranch",),
        requested_by="a1b2c3d4e5f6",
        requested_subject="Try gpt-5.2 on one task",
    )
    codex = desired(
        "terminal-bench/codex",
        "terminal-bench-2-1",
        harness="codex",
        task_set=None,
        judge=None,
        models=("openai/gpt-5", "anthropic/claude-sonnet-4"),
    )
    blocked = desired(
        "toolathlon/codex",
        "toolathlon-verified",
        harness="codex",
        task_set=None,
        judge=None,
        extra_secrets=("WANDB_API_KEY",),
    )
    done = desired("hle/done", arrived_at=NOW - timedelta(days=1))
    moved = desired("hle/renamed", models=("openai/o3",))
    adopted = desired(
        "hle/adopted", models=("anthropic/claude-opus-4",), arrived_at=NOW - timedelta(days=1)
    )
    crashed = desired("hle/crashed", models=("google/gemini-2.5-pro",))
    held = desired("hle/held", models=("x/held",))
    unsure = desired("hle/unsure", models=("meta/llama-4",))
    retried = desired("hle/retried", models=("openai/gpt-5.1",))
    deleted_active = recorded_run(
        None,
        "run-del",
        address="old/active",
        status="running",
        spec=make_spec(models=("old/one",)),
        run_name="calm-yak",
    )
    deleted_done = recorded_run(
        None,
        "run-fin",
        address="old/finished",
        status="running",
        spec=make_spec(models=("old/two",)),
        run_name="warm-gull",
    )
    entries = [
        recorded_run(tb_old, "run-tb", run_name="bright-otter"),
        recorded_run(
            done,
            "run-done",
            status="running",
            run_name="brave-otter",
            downloads=downloads("summary.json", "results.jsonl"),
        ),
        recorded_run(
            None,
            "run-mv",
            address="hle/old-name",
            spec=moved.spec,
            status="finished",
            run_name="quiet-owl",
        ),
        recorded_run(
            crashed,
            None,
            status=None,
            intent=Intent(
                op="submit",
                started_at=NOW - timedelta(minutes=3),
                body_digest=crashed.spec_digest,
                spec=crashed.spec,
                benchmark_id="bench-hle",
            ),
        ),
        recorded_run(
            unsure,
            None,
            status=None,
            intent=Intent(
                op="submit",
                started_at=NOW - timedelta(minutes=4),
                body_digest=unsure.spec_digest,
                spec=unsure.spec,
                benchmark_id="bench-hle",
            ),
        ),
        deleted_active,
        deleted_done,
        recorded_run(
            retried,
            "run-re",
            status="finished",
            run_name="bold-ibis",
            downloads=downloads("summary.json", "results.jsonl"),
        ),
        recorded_run(
            None,
            "run-gone",
            address="hle/gone",
            spec=make_spec(models=("g/one",)),
            status="finished",
            run_name="lost-lynx",
        ),
    ]
    runs = [
        observed_run("run-tb", "running", benchmark_id="bench-tb", name="bright-otter"),
        observed_run("run-done", "stopped", name="brave-otter"),
        observed_run("run-mv", "finished", name="quiet-owl"),
        observed_run("run-del", "running", name="calm-yak"),
        observed_run("run-fin", "failed", name="warm-gull"),
        observed_run("run-x1", "finished", fingerprint=fingerprint_of(adopted), name="swift-fox"),
        observed_run(
            "run-x2",
            "pending",
            fingerprint=fingerprint_of(crashed),
            created_at=NOW,
            name="keen-hawk",
        ),
        observed_run("run-x3", "running", name="odd-newt"),
        observed_run(
            "run-x4",
            "running",
            fingerprint=fingerprint_of(done),
            created_at=NOW - timedelta(hours=1),
            name="twin-crow",
        ),
    ]
    outputs = {
        "hle/done": LocalOutputs(
            present=frozenset({"summary.json", "results.jsonl"}),
            changed=frozenset({"results.jsonl"}),
        ),
        "hle/retried": LocalOutputs(present=frozenset({"summary.json", "results.jsonl"})),
    }
    # run-x1 is named by the remote state record: the evidence that adopts it (issue 22).
    observed = observation(*runs, outputs=outputs, missing=("run-gone",), vouched=("run-x1",))
    # hle/retried's run errored twice on one task and once on two others (--retry-errored).
    errored = ErroredAttempts(run_id="run-re", agents={0: {"hle/q1": 2, "hle/q2": 1, "hle/q3": 1}})
    return compute_plan(
        [new, tb_new, codex, blocked, done, moved, adopted, crashed, held, unsure, retried],
        lock(*entries),
        observed.model_copy(update={"workspace_runs": 1_250, "errored": {"hle/retried": errored}}),
        settings(skip=("hle/held",), retry_errored=("hle/retried",)),
    )


def empty_plan() -> Plan:
    want = desired("hle/parity")
    entry = recorded_run(want, "r1", status="finished", downloads=downloads("summary.json"))
    return compute_plan(
        [want],
        lock(entry),
        observation(
            observed_run("r1", "finished"),
            outputs={"hle/parity": LocalOutputs(present=frozenset({"summary.json"}))},
        ),
        settings(),
    )


def guarded_plan() -> Plan:
    wants = [desired(f"hle/run-{i:02d}", task_set=None, models=(f"m/{i}",)) for i in range(3)]
    wants.append(
        desired(
            "terminal-bench/other",
            "terminal-bench-2-1",
            harness="terminus-2",
            task_set=None,
            judge=None,
        )
    )
    stopping = [
        recorded_run(None, f"s{i}", address=f"old/s{i}", spec=make_spec(models=(f"s/{i}",)))
        for i in range(3)
    ]
    return compute_plan(
        wants,
        lock(*stopping),
        observation(*[observed_run(f"s{i}") for i in range(3)]),
        settings(targets=("hle/*", "old/*"), max_stops=2),
    )


def drift_only_plan() -> Plan:
    want = desired("hle/parity")
    entry = recorded_run(
        want, "r1", status="running", run_name="lone-wolf", downloads=downloads("summary.json")
    )
    observed = observation(
        observed_run("r1", "failed", name="lone-wolf"),
        observed_run("stray", "finished", name="stray-cat"),
        outputs={"hle/parity": LocalOutputs(present=frozenset({"summary.json"}))},
    )
    return compute_plan(
        [want], lock(entry), observed.model_copy(update={"workspace_runs": 2}), settings()
    )


PLANS = {
    "full": full_plan,
    "empty": empty_plan,
    "guarded": guarded_plan,
    "drift_only": drift_only_plan,
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_golden_text(name):
    check_golden(f"plan_{name}.txt", render_text(PLANS[name]()))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_golden_markdown(name):
    check_golden(f"plan_{name}.md", render_markdown(PLANS[name]()))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_golden_json(name):
    check_golden(f"plan_{name}.json", render_json(PLANS[name]()))


def test_golden_text_in_colour():
    check_golden("plan_full_color.txt", render_text(full_plan(), color=True))


def test_golden_markdown_truncated():
    check_golden("plan_full_truncated.md", render_markdown(full_plan(), max_chars=2500))


def test_full_plan_has_every_action():
    plan = full_plan()
    assert {item.action for item in plan.items} == set(Action)
    assert len({d.kind for d in plan.drift}) == 5


# --------------------------------------------------------------------------- text rules


def summary_plan(**counts) -> Plan:
    return Plan(summary=PlanSummary(**counts), workspace="w", platform="local")


def test_summary_line_format():
    plan = summary_plan(submit=2, replace=1, stop=1, download=3, forget=0, attempts=1246)
    assert summary_line(plan) == (
        "Plan: 2 to submit, 1 to replace, 1 to stop, 3 to download, 0 to forget; 1,246 attempts."
    )
    extra = summary_plan(submit=1, adopt=2, move=1, blocked=3, attempts=1)
    assert summary_line(extra) == (
        "Plan: 1 to submit, 0 to replace, 0 to stop, 0 to download, 0 to forget, "
        "2 to adopt, 1 to move, 3 blocked; 1 attempt."
    )


def test_empty_plan_says_no_changes():
    assert render_text(empty_plan()) == NO_CHANGES + "\n"
    assert NO_CHANGES == "No changes. Benchmark runs match the configuration."


def test_text_has_no_colour_unless_asked():
    plan = full_plan()
    assert not ANSI.search(render_text(plan))
    coloured = render_text(plan, color=True)
    assert ANSI.search(coloured)
    assert ANSI.sub("", re.sub("\x1b\\[[0-9;]*m", "", coloured)) == render_text(plan)


def test_legend_lists_only_the_symbols_present():
    text = render_text(guarded_plan())
    legend = text.split("Osmosis would:")[0]
    assert "  +   submit a new run" in legend and "  -   stop the run" in legend
    for absent in ("-/+", "↓", "<=", "  >", "  !", "  ."):
        assert absent not in legend


def test_each_item_line_and_reason():
    text = render_text(full_plan())
    assert "\n  + hle/parity\n      # new config\n" in text
    assert "\n  -/+ terminal-bench/smoke\n      # config changed\n" in text
    assert '      requested by 3f9c2a1 "Add HLE parity run"\n' in text
    assert "secret set WANDB_API_KEY --scope workspace" in text
    assert "Plan: 2 to submit, 1 to replace, 1 to stop, 2 to download, 2 to forget" in text
    assert "1 blocked, 1 unknown outcome; 679 attempts, dollars unknown." in text
    assert "\n  ↻ hle/retried\n      # retry of the errored attempts requested" in text


# --------------------------------------------------------------------------- markdown rules


def test_markdown_starts_with_the_workspace_marker_and_summary_table():
    md = render_markdown(full_plan())
    lines = md.splitlines()
    assert lines[0] == f"{MARKDOWN_MARKER} workspace=acme/evals -->"
    assert lines[3].startswith("| submit | replace | stop | download | forget |")
    assert md.index("**Blocked**") < md.index("<details>")
    assert md.count("<details>") == md.count("</details>")


@pytest.mark.parametrize("cap", [600, 1500, 4000, 65000])
def test_markdown_stays_under_the_cap(cap):
    wants = [
        desired(f"suite{i % 7}/cfg-{i:04d}", models=(f"vendor/model-{i}",), task_set=None)
        for i in range(400)
    ]
    plan = compute_plan(
        wants,
        lock(),
        observation(*[observed_run(f"u{i}") for i in range(50)]),
        settings(allow_over_budget=True),
    )
    md = render_markdown(plan, max_chars=cap)
    assert len(md) < cap
    assert md.startswith(MARKDOWN_MARKER)
    assert md.count("<details>") == md.count("</details>")
    assert md.count("```") % 2 == 0
    if cap < 65000:
        assert "_Truncated" in md


def test_markdown_of_a_small_plan_is_not_truncated():
    assert "Truncated" not in render_markdown(full_plan())


# --------------------------------------------------------------------------- json and saved plans


def test_json_shape():
    doc = json.loads(render_json(full_plan()))
    assert doc["format_version"] == "1.0"
    assert doc["errored"] is False
    first = doc["actions"][0]
    for key in (
        "action",
        "symbol",
        "address",
        "reason",
        "run_id",
        "before",
        "after",
        "attempts",
        "changes",
        "details",
        "warnings",
    ):
        assert key in first
    assert set(doc["drift"][0]) == {"kind", "address", "run_id", "message", "fingerprint"}
    assert doc["summary"]["submit"] == 2
    assert json.loads(render_json(guarded_plan()))["errored"] is True


@pytest.mark.parametrize("name", sorted(PLANS))
def test_saved_plan_round_trips(name):
    plan = PLANS[name]()
    again = plan_from_dict(json.loads(render_json(plan)))
    assert again == plan
    assert render_json(again) == render_json(plan)


def test_saved_plan_of_another_version_is_refused():
    doc = plan_to_dict(full_plan())
    doc["format_version"] = "2.0"
    with pytest.raises(StalePlanError) as info:
        plan_from_dict(doc)
    assert "2.0" in info.value.message and "osmosis-plan --out" in info.value.hint


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("format_version"),
        lambda d: d["actions"][0].update(action="explode"),
        lambda d: d["drift"][0].pop("fingerprint"),
        lambda d: d.update(summary={"nonsense": 1}),
        # Wrong types anywhere: apply must never act on them.
        lambda d: d["actions"][0].update(attempts="many"),
        lambda d: d["actions"][0].update(address=7),
        lambda d: d.update(serial="3"),
        lambda d: d["drift"][0].update(run_id=["r"]),
        lambda d: d["actions"][0].update(listed_at="yesterday"),
    ],
)
def test_malformed_saved_plan_is_refused(mutate):
    doc = plan_to_dict(full_plan())
    mutate(doc)
    with pytest.raises(StalePlanError):
        plan_from_dict(doc)


def test_no_secret_values_in_renders():
    # Specs hold secret *names*; nothing else secret ever reaches a plan. Guard the names'
    # neighbourhood: no "provided" secrets block sneaks into any output.
    plan = full_plan()
    for text in (render_text(plan), render_markdown(plan), render_json(plan)):
        assert '"provided"' not in text
    assert digest({}) not in render_text(plan)


def test_every_reason_and_drift_kind_has_words():
    assert set(REASON_TEXT) == set(Reason)
    assert set(DRIFT_TEXT) == set(DriftKind)


def test_a_run_that_ended_failed_shows_its_status_and_how_to_rerun_it():
    from reconciler.model import AgentResult, ResultRow

    row = ResultRow(
        address="tb/x",
        run_id="r9",
        run_name="calm-yak",
        status="failed",
        agent=AgentResult(agent_index=0, model="m", pass_at_1=0.0),
    )
    plan = Plan(results=(row,), workspace="w", platform="local")
    text = render_text(plan, results=True)  # nothing planned: the table is shown when asked
    assert "calm-yak (partial: failed)" in text
    assert "tb/x: the run ended failed; re-run it with `osmosis-apply --replace tb/x`" in text
    md = render_markdown(plan)
    assert "calm-yak (r9) (partial: failed)" in md and '"Osmosis-Rerun: tb/x"' in md


def test_a_plan_with_nothing_to_do_says_so_first_and_alone():
    """Issue 37, finding 6: a 30-line results table came before "No changes."."""
    from reconciler.model import AgentResult, ResultRow

    row = ResultRow(
        address="tb/x",
        run_id="r9",
        run_name="calm-yak",
        status="finished",
        agent=AgentResult(agent_index=0, model="m", pass_at_1=0.5),
    )
    plan = Plan(results=(row,), workspace="w", platform="local")
    assert render_text(plan) == "No changes. Benchmark runs match the configuration.\n"
    asked = render_text(plan, results=True)
    assert asked.startswith("No changes. Benchmark runs match the configuration.\n\n")
    assert "calm-yak" in asked
    # -q: nothing needs a person, so nothing is printed.
    assert render_text(plan, quiet=True) == ""
    warned = Plan(results=(row,), workspace="w", platform="local", warnings=("look",))
    assert render_text(warned, quiet=True).startswith("No changes.")


def test_quiet_keeps_the_items_and_the_summary_only():
    from tests.unit.test_results import results_plan

    plan = results_plan()
    quiet = render_text(plan, quiet=True)
    assert "Actions are shown with these symbols" not in quiet
    assert not quiet.startswith("Osmosis plan ·")
    assert "Results of" not in quiet
    assert "Osmosis would:" in quiet and "  + hle/new" in quiet
    assert quiet.rstrip("\n").splitlines()[-1].startswith("Plan: 1 to submit")


def test_a_long_address_is_shortened_in_the_middle_never_wrapped():
    """Issue 37, finding 6: addresses wrapped over 2-3 lines at 100 columns."""
    from reconciler.model import AgentResult, ResultRow
    from reconciler.render import plan_to_dict

    address = "benchmarks-for-the-platform-team/terminal-bench/nightly/openai-gpt-5-2-codex"
    row = ResultRow(
        address=address,
        run_id="r9",
        run_name="calm-yak",
        status="finished",
        agent=AgentResult(agent_index=0, model="openai/gpt-5.2", harness="codex", pass_at_1=0.5),
    )
    plan = Plan(results=(row,), workspace="w", platform="local")
    text = render_text(plan, results=True)
    assert all(len(line) <= 100 for line in text.splitlines()), text
    (line,) = [x for x in text.splitlines() if "calm-yak" in x]
    shortened = line.split()[0]
    assert len(shortened) == 28 and "…" in shortened
    head, tail = shortened.split("…")
    assert address.startswith(head) and address.endswith(tail)
    assert not any(
        x.strip().startswith(address[len(head) : len(head) + 8]) for x in text.splitlines()
    )
    assert plan_to_dict(plan)["results"][0]["address"] == address
