"""Unknown-outcome suite (issue 22, item 5): the Platform commits a submit and then answers
with nothing clear (the connection dropped, a reply of the wrong shape, a 429), and its run
list leaves the new run out. Repeated applies must never pay for a config twice.

With the default quiet period (3 complete listings spanning 30 minutes since the submit),
every config stays an unknown outcome (``?``) through the three applies of a scenario: no
second run, no lost intent. A person then settles each with ``osmosis-state resolve ADDR
--submitted RUN`` and one more apply converges: every run recorded, downloaded, and the plan
empty.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reconciler.local_platform import Faults

from . import report
from .harness import (
    APPLY_ARGS,
    Findings,
    RepoFactory,
    _index_of,
    check_converged,
    platform_server,
    read_state,
    run,
)

pytestmark = pytest.mark.reliability

CONFIGS = 6
SEEDS = (1, 2)
APPLIES = 3

COMBINATIONS = {
    "dropped answer, run not listed": lambda seed: Faults(
        drop_after_submit_rate=1.0, list_omit_rate=1.0, seed=seed
    ),
    "wrong-shaped answer, run not listed": lambda seed: Faults(
        wrong_submit_reply_rate=1.0, list_omit_rate=1.0, seed=seed
    ),
    "429 answer, run not listed": lambda seed: Faults(
        rate_limit_after_submit_rate=1.0, retry_after_s=0, list_omit_rate=1.0, seed=seed
    ),
}


def address_of(index: str) -> str:
    return f"tb/c{int(index):02d}"


@pytest.mark.parametrize("name", list(COMBINATIONS))
def test_unknown_outcomes_are_never_paid_twice(tmp_path: Path, name: str) -> None:
    # Default settings: the quiet period as shipped.
    repos = RepoFactory(tmp_path, CONFIGS, settings=None)
    total = Findings()
    shown_unknown = lost_intents = resolved = injected = 0
    for seed in SEEDS:
        repo = repos.new()
        faults = COMBINATIONS[name](seed)
        with platform_server(tmp_path / f"platform-{seed}", faults=faults) as server:
            findings = Findings()
            for _ in range(APPLIES):
                applied = run("osmosis-apply", repo, server.url, *APPLY_ARGS, timeout=600)
                assert "internal error" not in applied.stderr, applied.stderr
            per_index = Counter(_index_of(r["body"]) for r in server.runs())
            for index, count in per_index.items():
                if count > 1:
                    findings.duplicate_submits += count - 1
                    findings.details.append(f"{repo.name}: config {index} paid {count} times")
            planned = run("osmosis-plan", repo, server.url, timeout=600)
            shown_unknown += sum(
                1 for line in planned.stdout.splitlines() if line.startswith("  ? tb/")
            )
            state = read_state(repo, server, findings, "after the applies")
            pending = set()
            if state is not None:
                pending = {
                    address
                    for address, entry in state.runs.items()
                    if entry.intent is not None or entry.run_id is not None
                }
            lost_intents += sum(
                1 for index in per_index if index and address_of(index) not in pending
            )
            injected += sum(server.calm().values())
            # A person who knows the runs settles every address; one apply converges.
            for record in server.runs():
                index = _index_of(record["body"])
                entry = state.runs.get(address_of(index or "0")) if state else None
                if entry is None or entry.intent is None:
                    continue
                done = run(
                    "osmosis-state",
                    repo,
                    server.url,
                    "resolve",
                    address_of(index or "0"),
                    "--submitted",
                    record["id"],
                    timeout=120,
                )
                assert done.returncode == 0, done.stderr
                resolved += 1
            final = run("osmosis-apply", repo, server.url, *APPLY_ARGS, timeout=600)
            assert "internal error" not in final.stderr, final.stderr
            again = run("osmosis-plan", repo, server.url, "--detailed-exitcode", timeout=600)
            if again.returncode != 0:
                findings.unconverged += 1
                findings.details.append(again.stdout[-2000:])
            check_converged(repo, server, CONFIGS, findings, {})
            total.add(findings)
    r = report.record
    r(name, "scenarios (6 configs, 3 applies)", len(SEEDS))
    r(name, "faults injected", injected)
    r(name, "addresses shown as unknown outcome (?)", shown_unknown)
    r(name, "settled by osmosis-state resolve", resolved)
    r(name, "paid runs beyond one per config", total.duplicate_submits, must_be_zero=True)
    r(name, "paid runs with no intent or record left", lost_intents, must_be_zero=True)
    r(name, "desired runs never submitted", total.never_submitted, must_be_zero=True)
    r(name, "created runs missing from lockfile", total.missing_from_lockfile, must_be_zero=True)
    r(name, "runs that did not converge", total.unconverged, must_be_zero=True)
    assert total.total() == 0 and lost_intents == 0, "\n".join(total.details[:20])
    assert shown_unknown == len(SEEDS) * CONFIGS and injected > 0
