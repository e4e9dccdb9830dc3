"""``osmosis-results decide`` and ``--replay`` on a recorded decision, as real processes in
a repository whose lockfile records a simulated decision (``tests/support/decisions.py``)
and whose ``results/`` keeps each batch run's ``results.csv`` (every attempt of both
agents): the replay recomputes every look from those files, prints what ``decide`` prints
and ends with ``match``; a file that disagrees with a recorded look makes it exit 1 naming
the look. (docs/deciding.md's blocks are run end to end by test_decide_batches.py.)
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from reconciler.model import DecisionSpec, HistoryEntry
from reconciler.outputs.layout import run_dir_name
from reconciler.state.lockfile import serialize
from tests.support import decisions, docs
from tests.support.osmosis import cli_env, init_repo
from tests.support.plan_fixtures import entry, lock

PAGE = docs.DOCS / "deciding.md"
ADDRESS = "tb/ab"
SHIFT, SEED, USD_PER_TASK = 0.15, 4, 0.5
"""The page's decision: the second agent 15 points better, $0.50 a task."""


def results_csv(tasks: list[str], attempts: decisions.Attempts) -> str:
    rows = ["task_name,agent_index,attempt,outcome"]
    for task in tasks:
        for agent, outcomes in enumerate(attempts[task]):
            for number, passed in enumerate(outcomes, start=1):
                rows.append(f"{task},{agent},{number},{'pass' if passed else 'fail'}")
    return "\n".join(rows) + "\n"


def decided_repo(tmp_path: Path) -> Path:
    """The repository: the decision, its batch runs (the last current, the others in the
    history) and each run's kept results."""
    spec = DecisionSpec(margin_pp=10, seed=3, looks=4)
    diffs = decisions.per_task_diffs(SHIFT, SEED)
    record = decisions.pay_all(decisions.start(spec), diffs, USD_PER_TASK)
    attempts = decisions.attempts(SHIFT, SEED)
    repo = init_repo(tmp_path / "repo")
    runs = [entry(ADDRESS, run_id, status="completed") for run_id in record.batch_runs]
    *former, current = runs
    history = tuple(
        HistoryEntry(
            address=ADDRESS,
            run_id=run.run_id,
            run_name=run.run_name,
            spec_digest=run.spec_digest,
            status="completed",
            reason="replaced",
        )
        for run in reversed(former)
    )
    state = lock(current, history=history).model_copy(update={"decisions": {ADDRESS: record}})
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(serialize(state), encoding="utf-8")
    start = 0
    for run, end in zip(runs, record.batch_ends, strict=True):
        assert run.run_id is not None
        kept = repo / "results" / ADDRESS / run_dir_name(run.run_name, run.run_id)
        kept.mkdir(parents=True)
        text = results_csv(list(record.order[start:end]), attempts)
        (kept / "results.csv").write_text(text, encoding="utf-8")
        start = end
    return repo


def run(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        shlex.split(command),
        cwd=repo,
        env=cli_env({"COLUMNS": "100", "NO_COLOR": "1"}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_recorded_decision_replays_to_match(tmp_path: Path) -> None:
    repo = decided_repo(tmp_path)
    done = run(repo, f"osmosis-results decide {ADDRESS}")
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert printed[0].startswith(f"{ADDRESS}: ") and "look" in done.stdout
    done = run(repo, f"osmosis-results decide {ADDRESS} --replay")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[: len(printed)] == printed
    assert done.stdout.splitlines()[-1] == "match"


def test_a_kept_result_that_disagrees_fails_the_replay_naming_the_look(tmp_path: Path) -> None:
    repo = decided_repo(tmp_path)
    (kept,) = [p for p in (repo / "results" / ADDRESS).glob("*/results.csv") if "run-2" in str(p)]
    lines = kept.read_text(encoding="utf-8").splitlines()
    # The right agent's first attempt at the batch's first task, turned around.
    at = next(i for i, line in enumerate(lines) if ",1,1," in line)
    lines[at] = (
        lines[at].replace(",pass", ",FLIP").replace(",fail", ",pass").replace(",FLIP", ",fail")
    )
    kept.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run(repo, f"osmosis-results decide {ADDRESS} --replay")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("look 2: total recorded ")
