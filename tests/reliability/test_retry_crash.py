"""A retry of the errored attempts under crashes (docs/retrying.md): SIGKILL
``osmosis-apply --retry-errored`` at each crash point of its submit, then recover with
applies that ask for the retry again until one is recorded.

After recovery the Platform's own rows must show the run and exactly one retry run of its
errored attempts (nothing paid twice, and never the whole config again), and the lockfile
the retry run with its provenance and no intent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.results.data import parse_results_csv
from reconciler.state.lockfile import read_lockfile
from tests.support.git import git

from . import report
from .harness import APPLY_ARGS, RECOVERY_SETTINGS, converge, platform_server, run, tail

pytestmark = pytest.mark.reliability

CONFIG = """\
[experiment]
benchmark = "terminal-bench-2-1"

[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[execution]
attempts_per_task = 2
max_concurrent_attempts = 4
"""

ADDRESS = "tb/full"
POINTS = ("submit.before_intent", "submit.before_post", "submit.after_post")
ALL_FINISH_SEED = 12
"""A seed whose first runs all finish (``test_smoke_crash``): a failed run is still
retried, but a finished one makes the expected rows plain."""

_figures: dict[str, int] = {"scenarios": 0, "duplicate retry runs": 0}


def _repo(path: Path) -> Path:
    (path / "benchmarks" / "tb").mkdir(parents=True)
    (path / "benchmarks" / "tb" / "full.toml").write_text(CONFIG)
    (path / "pyproject.toml").write_text(RECOVERY_SETTINGS)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "config")
    return path


@pytest.mark.parametrize("point", POINTS)
def test_retry_crash_recovery_pays_once(tmp_path: Path, point: str) -> None:
    repo = _repo(tmp_path / "repo")
    lockfile = repo / "state" / "osmosis.lock"
    with platform_server(tmp_path / "platform", speed=20000.0, seed=ALL_FINISH_SEED) as server:
        first = run("osmosis-apply", repo, server.url, *APPLY_ARGS)
        assert first.returncode == 0, tail(first.stdout + first.stderr)
        entry = read_lockfile(lockfile, platform=None, workspace=None).runs[ADDRESS]
        assert entry.downloads is not None and entry.run_id is not None
        base_id = entry.run_id
        outcomes = parse_results_csv(
            (repo / entry.downloads.directory / "results.csv").read_text(encoding="utf-8")
        )
        errored = {t: o.errored for t, o in outcomes.tasks[0].items() if o.errored}
        assert errored, "an 89 x 2 run of the seeded local Platform errors some attempts"

        crashed = run(
            "osmosis-apply",
            repo,
            server.url,
            *APPLY_ARGS,
            "--retry-errored",
            ADDRESS,
            env={"OSMOSIS_CRASH_AT": f"{point}:1"},
        )
        assert crashed.returncode == -9, tail(crashed.stdout + crashed.stderr)
        # Ask again until a retry run is recorded (a person re-running the same command).
        for _ in range(4):
            entry = read_lockfile(lockfile, platform=None, workspace=None).runs[ADDRESS]
            if entry.retry_of is not None and entry.intent is None:
                break
            again = run("osmosis-apply", repo, server.url, *APPLY_ARGS, "--retry-errored", ADDRESS)
            assert again.returncode in (0, 3), tail(again.stdout + again.stderr)
        rounds, transcript = converge(repo, server.url)
        assert rounds <= 6, tail("\n".join(transcript), 80)

        runs = server.runs()
        retries = [r for r in runs if r["id"] != base_id]
        _figures["scenarios"] += 1
        _figures["duplicate retry runs"] += max(0, len(retries) - 1)
        assert [r["id"] for r in runs][0] == base_id
        assert len(retries) == 1, [r["body"].get("tasks_config") for r in retries]
        body = retries[0]["body"]
        count = max(errored.values())
        assert body["tasks_config"] == {
            "task_names": sorted(t for t, n in errored.items() if n == count)
        }
        assert body["execution_config"]["attempts_per_task"] == count

        state = read_lockfile(lockfile, platform=None, workspace=None)
        entry = state.runs[ADDRESS]
        assert (entry.run_id, entry.retry_of, entry.intent) == (retries[0]["id"], base_id, None)
        assert [(h.run_id, h.reason) for h in state.history] == [(base_id, "retried")]
    report.record("retry crash", "scenarios (SIGKILL in a retry's submit)", _figures["scenarios"])
    report.record(
        "retry crash", "duplicate retry runs", _figures["duplicate retry runs"], must_be_zero=True
    )
