"""A decision's batches under crashes (issue 39): SIGKILL ``osmosis-apply --wait`` at each
crash point of a batch's submit and of the lockfile's atomic write (its first three
writes), in the first batch and in a later one, then recover with plain applies until the
decision stops.

Each batch is an ordinary submit (``plan.batches``), and its decision record is written
before the submit's intent, so a kill anywhere plans the same batch again. Ground truth is
the Platform's own rows: every run it created, with the body it was sent. After recovery
each batch's slice of the order was sent exactly once, the runs are the decision's
``batch_runs`` in order, and no slice was sent that the decision did not record.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.state.lockfile import read_lockfile
from tests.support.git import git

from . import report
from .harness import (
    APPLY_ARGS,
    RECOVERY_SETTINGS,
    SECRET_NAME,
    platform_server,
    run,
    tail,
)

pytestmark = pytest.mark.reliability


def _agent(model: str) -> str:
    return (
        f'[[agents]]\nharness = "terminus-2"\n\n[agents.model]\ntype = "provider"\n'
        f'model = "{model}"\napi_key_secret = "{SECRET_NAME}"\n\n'
    )


CONFIG = (
    '[experiment]\nbenchmark = "terminal-bench-2-1"\n\n'
    + _agent("deepseek/deepseek-v3")
    + _agent("moonshot/kimi-k2")
    + "[execution]\nattempts_per_task = 2\nmax_concurrent_attempts = 4\n\n"
    + "[decide]\nmargin_pp = 16\nseed = 2\nlooks = 4\n"
)
POINTS = (
    "submit.before_intent:1",
    "submit.before_post:1",
    "submit.after_post:1",
    # The lockfile's atomic write (temp file written and synced; renamed, directory not
    # synced): the first write of a batch's apply is its decision record with the submit
    # intent, the second the submit's outcome, the third the look or the download.
    "lockfile.before_rename:1",
    "lockfile.before_rename:2",
    "lockfile.before_rename:3",
    "lockfile.after_rename:1",
    "lockfile.after_rename:2",
    "lockfile.after_rename:3",
)
BATCHES = (1, 2)
"""The batch whose submit is killed: the first (no look yet) and the second (after one)."""
MAX_APPLIES = 10

_figures: dict[str, int] = {"scenarios": 0, "batches paid twice": 0}


def _repo(path: Path) -> Path:
    bench = path / "benchmarks" / "tb"
    bench.mkdir(parents=True)
    (bench / "ab.toml").write_text(CONFIG)
    (path / "pyproject.toml").write_text(RECOVERY_SETTINGS)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "a decision")
    return path


def _verdict(repo: Path) -> str | None:
    state = read_lockfile(repo / "state" / "osmosis.lock", platform=None, workspace=None)
    record = state.decisions.get("tb/ab")
    return record.verdict if record is not None else None


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("point", POINTS)
def test_a_killed_batch_submit_pays_each_batch_once(tmp_path: Path, point: str, batch: int) -> None:
    repo = _repo(tmp_path / "repo")
    transcript: list[str] = []
    with platform_server(tmp_path / "platform", speed=20000.0) as server:
        for _ in range(batch - 1):
            done = run("osmosis-apply", repo, server.url, *APPLY_ARGS)
            transcript.append(done.stdout + done.stderr)
            assert done.returncode == 0, tail(done.stdout + done.stderr)
        assert _verdict(repo) in (None, "continue"), "the decision stopped before the kill"
        crashed = run(
            "osmosis-apply",
            repo,
            server.url,
            *APPLY_ARGS,
            env={"OSMOSIS_CRASH_AT": point},
        )
        assert crashed.returncode == -9, tail(crashed.stdout + crashed.stderr)
        # Whatever instant the kill hit, the lockfile on disk reads, and its decision (if
        # one was written) is whole: every look has its batch, every run its batch.
        killed = read_lockfile(repo / "state" / "osmosis.lock", platform=None, workspace=None)
        record = killed.decisions.get("tb/ab")
        if record is not None:
            assert len(record.looks) <= len(record.batch_ends)
            assert len(record.batch_runs) <= len(record.batch_ends)
            assert record.order and record.batch_ends[-1] <= len(record.order)

        for _ in range(MAX_APPLIES):
            done = run("osmosis-apply", repo, server.url, *APPLY_ARGS)
            transcript.append(f"apply rc={done.returncode}\n{done.stdout}\n{done.stderr}")
            if _verdict(repo) not in (None, "continue"):
                break
        else:
            pytest.fail("the decision never stopped:\n" + tail("\n".join(transcript), 80))
        check = run("osmosis-plan", repo, server.url, "--detailed-exitcode")
        assert check.returncode == 0, tail(check.stdout + check.stderr)

        state = read_lockfile(repo / "state" / "osmosis.lock", platform=None, workspace=None)
        record = state.decisions["tb/ab"]
        runs = [(row["id"], row["body"]) for row in server.runs()]
        sent = [(body.get("tasks_config") or {}).get("task_names") for _, body in runs]
        starts = (0, *record.batch_ends[:-1])
        slices = [list(record.order[a:b]) for a, b in zip(starts, record.batch_ends, strict=True)]
        _figures["scenarios"] += 1
        _figures["batches paid twice"] += len(sent) - len({tuple(s or ()) for s in sent})
        assert sent == slices, tail("\n".join(transcript), 80)
        assert [run_id for run_id, _ in runs] == list(record.batch_runs)
        assert len(record.looks) == len(record.batch_ends)
    report.record(
        "decision crash",
        "scenarios (SIGKILL in a batch's submit or lockfile write)",
        _figures["scenarios"],
    )
    report.record(
        "decision crash",
        "batches paid twice",
        _figures["batches paid twice"],
        must_be_zero=True,
    )
