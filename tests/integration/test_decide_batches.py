"""A decision pays its batches across applies (issue 39), over loopback to a served local
Platform whose two agents differ by a known amount: the plan sizes it, each
``osmosis-apply --wait`` pays the next slice of the recorded order as an ordinary run and
downloads it, the next apply records the look, and the decision stops at the boundary
before its maximum; ``osmosis-results decide`` reports the saving and ``--replay``
matches. The commands are docs/deciding.md's ("Trying it on the local Platform")."""

from __future__ import annotations

import contextlib
import json
import shlex
from pathlib import Path
from types import SimpleNamespace

from reconciler.local_platform.catalog import seed_catalog
from reconciler.local_platform.simulation import agent_skill, expected_pass_at_1, task_shifts
from reconciler.state.lockfile import read_lockfile
from tests.support import docs
from tests.support.osmosis import Osmosis, init_repo, start_platform

DOC = docs.DOCS / "deciding.md"
SECTION = "## Trying it on the local Platform"
ADDRESS = "tb/ab"
BENCHMARK = "terminal-bench-2-1"
LEFT, RIGHT = "deepseek/deepseek-v3", "moonshot/kimi-k2"
MARGIN_PP = 16
# The local Platform is deterministic (seed 0: run ids, and so outcomes, follow the order
# of creation); with this task order the difference is clear at the second of four looks.
DECIDE = f"margin_pp = {MARGIN_PP}\nseed = 2\nlooks = 4\n"


def agent(model: str) -> str:
    return (
        '[[agents]]\nharness = "terminus-2"\n\n[agents.model]\ntype = "provider"\n'
        f'model = "{model}"\napi_key_secret = "OPENAI_API_KEY"\n\n'
    )


CONFIG = (
    f'[experiment]\nbenchmark = "{BENCHMARK}"\n\n'
    + agent(LEFT)
    + agent(RIGHT)
    + "[execution]\nattempts_per_task = 3\nmax_concurrent_attempts = 4\n\n[decide]\n"
    + DECIDE
)


def known_difference() -> float:
    """The simulated agents' expected pass@1 difference on the whole benchmark, in points."""
    (benchmark,) = [b for b in seed_catalog() if b["source_ref"] == BENCHMARK]
    tasks = tuple(t["name"] for t in benchmark["tasks"])
    run = SimpleNamespace(benchmark=benchmark, tasks=tasks)
    shifts = task_shifts(benchmark, tasks)

    def pass_at_1(model: str) -> float:
        skill = agent_skill(run, {"model": {"model": model}, "harness": "terminus-2"})  # type: ignore[arg-type]
        return expected_pass_at_1(skill, shifts)

    return (pass_at_1(RIGHT) - pass_at_1(LEFT)) * 100


def shown_decision() -> tuple[list[str], list[str]]:
    """The page's "Reading a decision" text: what ``decide`` and ``--replay`` print."""
    (block,) = [
        b for b in docs.blocks(DOC) if b.lang == "console" and "## Reading a decision" in b.headings
    ]
    shown, replay = block.body.split("$ osmosis-results decide tb/ab --replay\n")
    return shown.splitlines()[1:], replay.splitlines()


def doc_commands() -> list[list[str]]:
    (block,) = [b for b in docs.blocks(DOC) if b.lang == "sh" and SECTION in b.headings]
    return [shlex.split(line) for line in block.body.splitlines() if line.strip()]


def test_a_decision_pays_its_batches_once_each_and_stops_at_the_boundary(tmp_path: Path) -> None:
    assert known_difference() > 1.5 * MARGIN_PP  # the agents really differ, by a known amount
    plan_cmd, apply_cmd, show_cmd, replay_cmd = doc_commands()
    assert apply_cmd[:1] == ["osmosis-apply"] and show_cmd[:2] == ["osmosis-results", "decide"]
    server = start_platform(tmp_path / "platform", speed=4000.0)
    with contextlib.closing(server):
        repo = init_repo(tmp_path / "repo", configs={ADDRESS: CONFIG})
        osm = Osmosis(repo, server)
        lock = repo / "state" / "osmosis.lock"

        planned = osm.run(*plan_cmd)
        assert planned.code == 0, planned
        assert "decide: fixed design " in planned.out
        assert "sequential maximum" in planned.out

        verdict, applies, applied_text = "continue", 0, []
        while verdict == "continue":
            applies += 1
            assert applies <= 5, "the decision never stopped"
            applied = osm.run(*apply_cmd, timeout=180)
            assert applied.code == 0, applied
            applied_text.extend(applied.out.splitlines())
            record = read_lockfile(lock, platform=None, workspace=None).decisions[ADDRESS]
            # One paid run per batch, never two, even while the looks go on.
            assert server.submits() == len(record.batch_ends), applied
            verdict = record.verdict

        state = read_lockfile(lock, platform=None, workspace=None)
        record = state.decisions[ADDRESS]
        assert record.verdict == "better"
        assert len(record.looks) == len(record.batch_ends) == len(record.batch_runs)
        used = record.batch_ends[-1]
        assert used < record.max_tasks  # stopped at the boundary, before the maximum
        assert record.looks[-1].statistic >= record.looks[-1].boundary
        # Each batch is the next slice of the recorded order, paid once as its own run (the
        # Platform's own rows: every run it created, with the body it was sent).
        rows = (
            server.platform.store.read()
            .execute(
                "SELECT r.id, r.body FROM runs r JOIN workspaces w ON w.id = r.workspace_id "
                "WHERE w.name = ? ORDER BY r.seq",
                (server.workspace,),
            )
            .fetchall()
        )
        assert [row[0] for row in rows] == list(record.batch_runs)
        starts = (0, *record.batch_ends[:-1])
        slices = [list(record.order[a:b]) for a, b in zip(starts, record.batch_ends, strict=True)]
        assert [json.loads(row[1])["tasks_config"]["task_names"] for row in rows] == slices
        assert record.dollars_spent > 0

        looks = [line for line in applied_text if "decision look" in line]
        assert looks[0].endswith(
            "tb/ab: decision look 1: 21 tasks, statistic +3.516 vs boundary ±3.873, "
            "α spent 0.0001: continue"
        )
        text, replay_text = shown_decision()
        assert osm.run(*show_cmd).out.splitlines() == text
        shown = osm.run(*show_cmd, "--format", "json")
        assert shown.code == 0, shown
        body = json.loads(shown.out)
        assert body["verdict"] == "better"
        assert body["tasks_used"] == used < body["max_tasks"]
        assert body["dollars_saved"] > 0
        replayed = osm.run(*replay_cmd)
        assert replayed.code == 0, replayed
        assert replayed.out.splitlines()[-1] == replay_text[-1] == "match"

        # Once stopped, nothing more is paid and the plan is clean.
        again = osm.run(*apply_cmd, timeout=180)
        assert again.code == 0, again
        assert server.submits() == len(record.batch_ends)
        assert osm.run("osmosis-plan", "--detailed-exitcode").code == 0
