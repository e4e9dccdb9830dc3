"""Holes suite (issue 17, items 1 and 2, and the 429 of item 6): the Platform lies a little,
or the lockfile is not this repository's own, and still nothing is paid twice and nothing
of others is touched.

* recorded run absent from the list: the run list leaves out half of the runs (a direct
  read still returns them); nothing recorded may be declared gone and submitted again;
* wrong submit reply: half of the submits are committed and answered ``{"id": 5, "name":
  null}``; the reply is not a run, the intent stays and the run is adopted;
* 429 after commit: half of the submits are committed and then answered 429; the apply
  looks for the run before it submits again;
* foreign lockfile: another repository's lockfile (same workspace) copied in; plan and
  apply refuse it and none of that repository's runs is stopped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reconciler.local_platform import Faults

from . import report
from .faults import apply_until_converged
from .harness import APPLY_ARGS, Findings, RepoFactory, check_converged, platform_server, run

pytestmark = pytest.mark.reliability

CONFIGS = 12
SEEDS = (1, 2)
MAX_ROUNDS = 8

SCENARIOS = {
    "recorded run absent from the list": lambda seed: Faults(list_omit_rate=0.5, seed=seed),
    "wrong submit reply": lambda seed: Faults(wrong_submit_reply_rate=0.5, seed=seed),
    "429 after commit": lambda seed: Faults(
        rate_limit_after_submit_rate=0.5, retry_after_s=0, seed=seed
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_lying_platform_never_costs_a_second_run(tmp_path: Path, name: str) -> None:
    repos = RepoFactory(tmp_path, CONFIGS)
    total = Findings()
    injected = 0
    runs = 0
    for seed in SEEDS:
        repo = repos.new()
        with platform_server(tmp_path / f"platform-{seed}", faults=SCENARIOS[name](seed)) as server:
            findings = Findings()
            apply_until_converged(repo, server.url, findings, server, MAX_ROUNDS)
            # A plan after convergence, the Platform still lying, must still be empty.
            again = run("osmosis-plan", repo, server.url, "--detailed-exitcode", timeout=600)
            if again.returncode != 0:
                findings.unconverged += 1
                findings.details.append(again.stdout[-2000:])
            injected += sum(server.calm().values())
            stats = check_converged(repo, server, CONFIGS, findings, {})
            runs += stats["runs"]
            total.add(findings)
    r = report.record
    r(name, "scenarios (12 configs each)", len(SEEDS))
    r(name, "faults injected", injected)
    r(name, "runs created / desired", f"{runs}/{len(SEEDS) * CONFIGS}")
    r(name, "duplicate submits", total.duplicate_submits, must_be_zero=True)
    r(name, "desired runs never submitted", total.never_submitted, must_be_zero=True)
    r(name, "created runs missing from lockfile", total.missing_from_lockfile, must_be_zero=True)
    r(name, "runs that did not converge", total.unconverged, must_be_zero=True)
    assert total.total() == 0, "\n".join(total.details[:20])
    assert injected > 0


def test_foreign_lockfile_is_refused(tmp_path: Path) -> None:
    repos = RepoFactory(tmp_path, 4)
    with platform_server(tmp_path / "platform", speed=1.0) as server:
        theirs, ours = repos.new(), repos.new()
        for repo, name in ((theirs, "theirs"), (ours, "ours")):
            # Origins on GitHub (unreachable from here): the apply lock stays local.
            (repo / "pyproject.toml").write_text('[tool.osmosis-reconciler]\nlock = "local"\n')
            for args in (
                ["remote", "add", "origin", f"https://github.com/acme/{name}.git"],
                ["add", "-A"],
                ["commit", "-q", "-m", "Lock on this machine"],
            ):
                subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
        applied = run("osmosis-apply", theirs, server.url, "--auto-approve", timeout=600)
        assert applied.returncode == 0, applied.stderr
        theirs_runs = {r["id"] for r in server.runs()}
        # Their lockfile copied over ours, and our configs changed so a stop would follow.
        (ours / "state").mkdir(exist_ok=True)
        shutil.copy(theirs / "state" / "osmosis.lock", ours / "state" / "osmosis.lock")
        shutil.rmtree(ours / "benchmarks")
        (ours / "benchmarks").mkdir()
        refusals = 0
        for command, flags in (("osmosis-plan", ()), ("osmosis-apply", APPLY_ARGS)):
            done = run(command, ours, server.url, *flags, timeout=600)
            if done.returncode == 1 and "belongs to repository github.com/acme/theirs" in (
                done.stderr
            ):
                refusals += 1
        stopped = len(theirs_runs & server.stopped())
    r = report.record
    r("foreign lockfile", "commands refused", f"{refusals}/2")
    r("foreign lockfile", "runs of the other repository stopped", stopped, must_be_zero=True)
    r("foreign lockfile", "commands not refused", 2 - refusals, must_be_zero=True)
    assert stopped == 0 and refusals == 2
