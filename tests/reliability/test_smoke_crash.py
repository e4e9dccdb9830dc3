"""The smoke stage under crashes (docs/smoke.md, issue 27): SIGKILL ``osmosis-apply --wait``
at the crash points of both stages' submits, then recover with plain applies.

One ``--wait`` apply carries both stages, so the first hit of a submit crash point is the
smoke run's submit and the second the full run's. After recovery the Platform's own rows
must show exactly one smoke run and one full run per config (nothing paid twice, in
particular no second smoke run after a lost full submit), the lockfile the full run with
the smoke run in its history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.local_platform.core import new_run_id
from reconciler.local_platform.simulation import make_schedule
from reconciler.model import RunStatus
from reconciler.state.lockfile import read_lockfile
from tests.support.git import git

from . import report
from .harness import APPLY_ARGS, converge, platform_server, run, tail

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

[agents.env]
RELIABILITY_INDEX = "{index}"

[execution]
attempts_per_task = 2
max_concurrent_attempts = 4
"""

SETTINGS = """\
[tool.osmosis-reconciler]
unknown_outcome_listings = 1
unknown_outcome_quiet_minutes = 0

[[tool.osmosis-reconciler.smoke]]
addresses = ["**"]
above = 10
"""

CONFIGS = 2
POINTS = (
    # (crash point, hit): hit 1..CONFIGS are the smoke runs' submits, the rest the full runs'.
    ("submit.before_intent", 1),
    ("submit.before_post", 1),
    ("submit.after_post", 1),
    ("submit.before_intent", CONFIGS + 1),
    ("submit.before_post", CONFIGS + 1),
    ("submit.before_post", CONFIGS + 2),
    ("submit.after_post", CONFIGS + 1),
    ("submit.after_post", CONFIGS + 2),
)

_figures: dict[str, int] = {"scenarios": 0, "kills": 0, "duplicate smoke runs": 0}


def _repo(path: Path) -> Path:
    bench = path / "benchmarks" / "tb"
    bench.mkdir(parents=True)
    for index in range(CONFIGS):
        (bench / f"c{index}.toml").write_text(CONFIG.format(index=index))
    (path / "pyproject.toml").write_text(SETTINGS)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "configs")
    return path


def _is_smoke(body: dict[str, Any]) -> bool:
    return bool((body.get("tasks_config") or {}).get("task_names"))


# The simulation lets ~10 % of runs fail, chosen by run id, and ids follow the seed and the
# order of creation. Which stage of which config gets which id depends on timing, and a
# failed smoke run blocks its full run on purpose (tests/integration/test_smoke.py), so
# with seed 0 the third run (always failed) made this test fail under load. This seed's
# first 16 runs all finish.
ALL_FINISH_SEED = 12


def test_the_seed_lets_every_run_finish() -> None:
    for counter in range(1, 17):
        run_id = new_run_id(ALL_FINISH_SEED, counter)
        assert make_schedule(run_id, ALL_FINISH_SEED, 10).final_status is RunStatus.FINISHED
    # ... where seed 0's third run fails: the check can tell.
    assert make_schedule(new_run_id(0, 3), 0, 10).final_status is RunStatus.FAILED


@pytest.mark.parametrize(("point", "hit"), POINTS, ids=[f"{p}:{h}" for p, h in POINTS])
def test_smoke_stage_crash_recovery_pays_each_stage_once(
    tmp_path: Path, point: str, hit: int
) -> None:
    repo = _repo(tmp_path / "repo")
    with platform_server(tmp_path / "platform", speed=20000.0, seed=ALL_FINISH_SEED) as server:
        crashed = run(
            "osmosis-apply",
            repo,
            server.url,
            *APPLY_ARGS,
            env={"OSMOSIS_CRASH_AT": f"{point}:{hit}"},
        )
        assert crashed.returncode == -9, tail(crashed.stdout + crashed.stderr)
        rounds, transcript = converge(repo, server.url)
        assert rounds <= 6, tail("\n".join(transcript), 80)

        runs = server.runs()
        smoke = [r for r in runs if _is_smoke(r["body"])]
        full = [r for r in runs if not _is_smoke(r["body"])]
        _figures["scenarios"] += 1
        _figures["kills"] += 1
        _figures["duplicate smoke runs"] += max(0, len(smoke) - CONFIGS)
        assert len(smoke) == CONFIGS, [r["name"] for r in smoke]
        assert len(full) == CONFIGS, [r["name"] for r in full]

        state = read_lockfile(repo / "state" / "osmosis.lock", platform=None, workspace=None)
        assert {e.run_id for e in state.runs.values()} == {r["id"] for r in full}
        assert all(e.stage is None and e.intent is None for e in state.runs.values())
        left = {h.run_id for h in state.history if h.stage == "smoke"}
        assert left == {r["id"] for r in smoke}
        check = run("osmosis-plan", repo, server.url, "--detailed-exitcode")
        assert check.returncode == 0, tail(check.stdout + check.stderr)
    report.record(
        "smoke crash", "scenarios (SIGKILL in either stage's submit)", _figures["scenarios"]
    )
    report.record(
        "smoke crash", "duplicate smoke runs", _figures["duplicate smoke runs"], must_be_zero=True
    )
