"""The other shapes of a decision go through the batches too (issue 39), over loopback to a
served local Platform whose agents differ by a known amount (test_decide_batches.py's):

* ``monitor = "anytime"``: each batch is the next slice of the recorded order, and each
  look is the confidence sequence (α spent in full at every look, its boundary the
  normal mixture's); the plan states the power it costs; ``--replay`` matches;
* ``baseline = "ADDR"``: one agent against the accepted run of another address, paired
  task by task; the order is drawn from the tasks that run scored; ``--replay`` matches;
* a task whose ``task_checksum`` in a batch's downloaded results differs from the one the
  baseline run's results showed ends the decision with that reason, recorded in the
  lockfile and shown by the plan, ``osmosis-results decide`` and status; no further batch
  is paid.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from jsonschema import Draft202012Validator, FormatChecker

from reconciler.ci.main import main as ci_main
from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.status import main as status_main
from reconciler.engine.context import DOWNLOAD_ROOT
from reconciler.outputs.kept import read_kept_outcomes
from reconciler.results.runs import address_runs
from reconciler.results.sequential import Sums, anytime_look
from reconciler.state.lockfile import read_lockfile
from tests.support.git import commit
from tests.support.osmosis import Osmosis, init_repo, start_platform, write_config

BENCHMARK = "terminal-bench-2-1"
LEFT, RIGHT = "deepseek/deepseek-v3", "moonshot/kimi-k2"
APPLY = ("osmosis-apply", "--auto-approve", "--wait")
VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)


def agent(model: str) -> str:
    return (
        '[[agents]]\nharness = "terminus-2"\n\n[agents.model]\ntype = "provider"\n'
        f'model = "{model}"\napi_key_secret = "OPENAI_API_KEY"\n\n'
    )


def config(*models: str, decide: str | None, benchmark: str = BENCHMARK) -> str:
    return (
        f'[experiment]\nbenchmark = "{benchmark}"\n\n'
        + "".join(agent(m) for m in models)
        + "[execution]\nattempts_per_task = 3\nmax_concurrent_attempts = 4\n"
        + (f"\n[decide]\n{decide}" if decide is not None else "")
    )


def lock_state(repo: Path):
    return read_lockfile(repo / "state" / "osmosis.lock", platform=None, workspace=None)


def bodies(server) -> list[dict]:
    """Every run the Platform created in the workspace, in order, with the body it was sent."""
    rows = (
        server.platform.store.read()
        .execute(
            "SELECT r.body FROM runs r JOIN workspaces w ON w.id = r.workspace_id "
            "WHERE w.name = ? ORDER BY r.seq",
            (server.workspace,),
        )
        .fetchall()
    )
    return [json.loads(row[0]) for row in rows]


def slices(record) -> list[list[str]]:
    starts = (0, *record.batch_ends[:-1])
    return [list(record.order[a:b]) for a, b in zip(starts, record.batch_ends, strict=True)]


def decide_until_stopped(osm: Osmosis, repo: Path, address: str, server, limit: int = 6):
    verdict, applies = "continue", 0
    while verdict == "continue":
        applies += 1
        assert applies <= limit, "the decision never stopped"
        applied = osm.run(*APPLY, timeout=180)
        assert applied.code == 0, applied
        record = lock_state(repo).decisions[address]
        verdict = record.verdict
    return record


def test_an_anytime_decision_pays_batches_and_looks_with_the_confidence_sequence(
    tmp_path: Path,
) -> None:
    address = "tb/anytime"
    decide = 'margin_pp = 16\nseed = 2\nlooks = 4\nmonitor = "anytime"\n'
    server = start_platform(tmp_path / "platform", speed=4000.0)
    with contextlib.closing(server):
        repo = init_repo(tmp_path / "repo", configs={address: config(LEFT, RIGHT, decide=decide)})
        osm = Osmosis(repo, server)
        planned = osm.run("osmosis-plan")
        assert planned.code == 0, planned
        assert "decide: anytime monitoring costs power: " in planned.out
        record = decide_until_stopped(osm, repo, address, server)

        assert record.verdict in ("better", "inconclusive"), record
        assert record.omega2 is not None and record.spec.monitor == "anytime"
        # Every batch an ordinary run of the next slice of the order, each paid once.
        assert [(b.get("tasks_config") or {}).get("task_names") for b in bodies(server)] == (
            slices(record)
        )
        assert len(record.looks) == len(record.batch_ends) >= 1
        for made in record.looks:
            assert made.alpha_spent == record.spec.alpha  # a sequence spends α at every look
        last = record.looks[-1]
        assert last.verdict == record.verdict
        # The look is the normal mixture's: recomputed from its recorded sums.
        again = anytime_look(
            Sums(last.tasks, last.total, last.squares),
            max_tasks=record.max_tasks,
            omega2=record.omega2,
            margin=record.spec.margin,
            alpha=record.spec.alpha,
            futility=True,
            last=last.final,
        )
        assert (again.boundary, again.verdict.value) == (last.boundary, last.verdict)
        replayed = osm.run("osmosis-results", "decide", address, "--replay")
        assert replayed.code == 0, replayed
        assert replayed.out.splitlines()[-1] == "match"
        assert_reported_like_a_decision(osm, repo, address, record, tmp_path)


def assert_reported_like_a_decision(osm: Osmosis, repo: Path, address: str, record, tmp) -> None:
    """``status`` (its verdict column and JSON), the PR comment and the HTML report's
    boundary chart all carry the recorded decision."""
    used = record.batch_ends[-1]
    cell = (
        f"decision {record.verdict}: {used} of {record.max_tasks} tasks, {len(record.looks)} "
        f"look(s), α spent {record.looks[-1].alpha_spent:.4f}"
    )
    shown = osm._call(status_main, ["--format", "json"], None)
    assert shown.code == 0, shown
    body = json.loads(shown.out)
    VALIDATOR.validate(body)
    (row,) = [r for r in body["addresses"] if r["address"] == address]
    assert row["decision"] == {
        "verdict": record.verdict,
        "reason": None,
        "tasks_used": used,
        "max_tasks": record.max_tasks,
        "looks": len(record.looks),
        "alpha_spent": record.looks[-1].alpha_spent,
        "monitor": record.spec.monitor,
    }
    markdown = osm._call(status_main, ["--format", "markdown"], None).out
    assert f"| `{address}` |" in markdown and cell in markdown

    saved, plan_md = tmp / "plan.json", tmp / "plan.md"
    planned = osm.run("osmosis-plan", "--format", "markdown", "--out", str(saved))
    plan_md.write_text(planned.out)
    args = ["--dir", str(repo), "comment", "--print", "--body-file", str(plan_md)]
    args += ["--exit-code", "0", "--plan-json", str(saved), "--state", "state/osmosis.lock"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert ci_main(args) == 0
    comment = out.getvalue()
    decisions = comment[comment.index("#### Decisions") : comment.index("<details>")]
    assert f"- `{address}`: {cell.removeprefix('decision ')}" in decisions

    html = tmp / "report.html"
    assert osm.run("osmosis-results", "--html", str(html)).code == 0
    page = html.read_text()
    chart = page[
        page.index('data-chart="boundaries"') : page.index(
            "</svg>", page.index('data-chart="boundaries"')
        )
    ]
    assert chart.count("<circle ") == len(record.looks)  # one dot per look
    assert chart.count('stroke-dasharray="5,3"') == 2  # the boundaries ±c
    first = record.looks[0]
    assert (
        f"look 1: {first.tasks} tasks, statistic {first.statistic:+.3f} vs boundary "
        f"±{first.boundary:.3f}: {first.verdict}"
    ) in chart
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")


def test_a_baseline_decision_pairs_one_agent_with_the_accepted_run(tmp_path: Path) -> None:
    server = start_platform(tmp_path / "platform", speed=4000.0)
    with contextlib.closing(server):
        repo = init_repo(tmp_path / "repo", configs={"tb/a": config(LEFT, decide=None)})
        osm = Osmosis(repo, server)
        # Before the accepted run exists the decision cannot start: refused, nothing paid.
        write_config(
            repo, "tb/b", config(RIGHT, decide='margin_pp = 16\nseed = 2\nbaseline = "tb/a"\n')
        )
        refused = osm.run("osmosis-plan")
        assert refused.code == 1, refused
        assert "tb/b: decide.baseline 'tb/a' has no finished run with downloaded results" in (
            refused.text
        )
        (repo / "benchmarks" / "tb" / "b.toml").unlink()
        assert bodies(server) == []
        first = osm.run(*APPLY, timeout=180)
        assert first.code == 0, first
        accepted = lock_state(repo).runs["tb/a"].run_id
        write_config(
            repo, "tb/b", config(RIGHT, decide='margin_pp = 16\nseed = 2\nbaseline = "tb/a"\n')
        )
        commit(repo, "a decision against tb/a")

        record = decide_until_stopped(osm, repo, "tb/b", server)
        assert record.baseline_run == accepted
        assert record.verdict == "better", record
        sent = bodies(server)[1:]
        assert len(sent) == len(record.batch_ends)
        # Each batch runs the config's one agent on the next slice of the order.
        assert [b["tasks_config"]["task_names"] for b in sent] == slices(record)
        assert all(len(b["agents"]) == 1 for b in sent)
        shown = json.loads(osm.run("osmosis-results", "decide", "tb/b", "--format", "json").out)
        assert shown["verdict"] == "better" and shown["tasks_used"] == record.batch_ends[-1]
        replayed = osm.run("osmosis-results", "decide", "tb/b", "--replay")
        assert replayed.code == 0, replayed
        assert replayed.out.splitlines()[-1] == "match"


def checksum_bench() -> dict:
    tasks = [{"name": f"t-{i:02d}", "category": "shell" if i % 2 else "git"} for i in range(40)]
    return {"source_ref": "checked-bench", "name": "Checked bench", "tasks": tasks}


def shown_checksums(repo: Path, address: str, run_id: str) -> dict[str, str]:
    """Task -> the task_checksum the run's downloaded results.csv shows (its first agent)."""
    state = lock_state(repo)
    run = next(r for r in address_runs(state, address) if r.run_id == run_id)
    outcomes = read_kept_outcomes(repo, run, repo / DOWNLOAD_ROOT)
    assert outcomes is not None, run_id
    return {t: o.checksum for t, o in outcomes.tasks[0].items() if o.checksum}


def test_a_task_whose_checksum_changed_ends_the_decision_with_that_reason(
    tmp_path: Path,
) -> None:
    address = "cb/b"
    server = start_platform(tmp_path / "platform", speed=4000.0)
    with contextlib.closing(server):
        server.platform.add_benchmark(checksum_bench())
        repo = init_repo(
            tmp_path / "repo",
            configs={"cb/a": config(LEFT, decide=None, benchmark="checked-bench")},
        )
        osm = Osmosis(repo, server)
        assert osm.run(*APPLY, timeout=180).code == 0
        baseline = lock_state(repo).runs["cb/a"].run_id
        # The same agent on both sides, futility off: looks go on, so batches follow.
        decide = 'margin_pp = 40\nseed = 3\nlooks = 4\nfutility = "none"\nbaseline = "cb/a"\n'
        write_config(repo, address, config(LEFT, decide=decide, benchmark="checked-bench"))
        commit(repo, "a decision against cb/a")
        first = osm.run(*APPLY, timeout=180)
        assert first.code == 0, first
        record = lock_state(repo).decisions[address]
        # Recorded from the baseline run's results, the first to show each task.
        was = shown_checksums(repo, "cb/a", baseline)
        assert record.checksums == {name: was[name] for name in record.order}
        assert record.verdict == "continue" and len(record.batch_ends) == 1

        # The task's definition changes after the baseline ran; batch 2 runs the new one.
        changed = record.order[record.batch_ends[0]]
        server.platform.revise_task("checked-bench", changed)
        second = osm.run(*APPLY, timeout=180)
        assert second.code == 0, second
        record = lock_state(repo).decisions[address]
        assert (record.verdict, len(record.looks), len(record.batch_ends)) == ("continue", 1, 2)
        now = shown_checksums(repo, address, lock_state(repo).runs[address].run_id)[changed]
        assert now != was[changed]

        reason = f"task {changed}'s checksum changed (recorded {was[changed]}, batch 2's results show {now})"
        planned = osm.run("osmosis-plan", "--detailed-exitcode")
        assert planned.code == 2, planned
        assert f"{address}: decision ends inconclusive: {reason}" in planned.text
        applied = osm.run(*APPLY, timeout=180)
        assert applied.code == 0, applied

        ended = lock_state(repo).decisions[address]
        assert (ended.verdict, ended.reason) == ("inconclusive", reason)
        assert len(ended.looks) == 1  # the batch that showed the change is not looked at
        assert ended.checksums is not None and ended.checksums[changed] == was[changed]
        assert len(bodies(server)) == 3  # the baseline and two batches: no third is paid
        shown = osm.run("osmosis-results", "decide", address)
        assert shown.out.splitlines()[0] == f"{address}: inconclusive ({reason})"
        body = json.loads(osm.run("osmosis-results", "decide", address, "--format", "json").out)
        assert body["reason"] == reason
        status = json.loads(osm._call(status_main, ["--format", "json"], None).out)
        (row,) = [r for r in status["addresses"] if r["address"] == address]
        assert row["decision"]["reason"] == reason
        replayed = osm.run("osmosis-results", "decide", address, "--replay")
        assert replayed.code == 0, replayed
        assert replayed.out.splitlines()[-1] == "match"
        # Ended: the next plan is clean, and no further batch is planned.
        assert osm.run("osmosis-plan", "--detailed-exitcode").code == 0
