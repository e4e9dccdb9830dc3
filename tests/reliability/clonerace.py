"""Two clones of one repository on one machine race ``osmosis-apply`` against one served
loopback Platform, round after round (issue 34, "Done when" bullet 2).

Each round commits a new generation of every config (pushed from clone ``a``, pulled into
``b``), then both clones apply at the same moment, the second waiting for the first's lock
(``--lock-timeout``). Under the machine-wide lock (the default for a loopback Platform) the
second apply gets the lock once the first has paid, with no evidence that the first's runs
are its own: it must not pay for a twin of any of them. Under ``lock = "git"`` the second
is refused as behind the state record the first published. Then the team catches up as it
would: the clone that paid commits its lockfile and pushes; the other drops its own
lockfile edits (it paid nothing) and pulls; then each in turn pulls, applies again, plans
(which must find nothing left to do) and commits and pushes what the apply wrote.

Ground truth is the Platform's own rows. The runs last far longer than a round (the
Platform runs at real speed), so every run of a round is active while the round lasts:
two runs of one desired config are two active identical runs, a duplicate payment.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.git import git

from .gitrace import PYPROJECT, two_clones
from .harness import (
    APPLY_ARGS,
    CONFIG,
    SECRET_NAME,
    Server,
    _index_of,
    finish,
    generation_of,
    platform_server,
    run,
    spawn,
)

CONFIGS = 3
MACHINE_LOCK = "[tool.osmosis-reconciler]\n"
"""No ``lock`` setting: a loopback Platform gets the machine-wide lock
(``locking.choose_lock``)."""
GIT_LOCK = PYPROJECT.format(ttl=30)
RACE_ARGS = ("--auto-approve", "--parallelism", "4", "--lock-timeout", "120")
PAID = re.compile(r"^Apply complete: [1-9]\d* succeeded", re.MULTILINE)
TWIN = "an identical run is active that this repository has no evidence for"
BEHIND = "behind the one the last apply wrote"
LOCKFILE = "state/osmosis.lock"


@dataclass
class RaceTally:
    """What the rounds saw; ``duplicates``, ``never_submitted``, ``not_one_payer``,
    ``not_converged`` and ``superseded_active`` must stay 0."""

    rounds: int = 0
    desired: int = 0
    losers_blocked_by_twins: int = 0
    losers_refused_behind: int = 0
    losers_other: int = 0
    not_one_payer: int = 0
    not_converged: int = 0
    duplicates: int = 0
    never_submitted: int = 0
    superseded_active: int = 0
    waited_rounds: int = 0
    ended_twins_paid: int = 0
    notes: list[str] = field(default_factory=list)


def _write_generation(repo: Path, generation: int) -> None:
    """Every config's next desired body: the same config with ``RELIABILITY_GEN``."""
    for index in range(CONFIGS):
        text = CONFIG.format(index=index, secret=SECRET_NAME)
        text = text.replace("[agents.env]\n", f'[agents.env]\nRELIABILITY_GEN = "{generation}"\n')
        (repo / "benchmarks" / "tb" / f"c{index:02d}.toml").write_text(text)


def _commit_to_both(a: Path, b: Path, generation: int) -> None:
    git(a, "pull", "-q", "--ff-only")
    _write_generation(a, generation)
    git(a, "commit", "-qam", f"generation {generation} of every config")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")


def _catch_up(payer: Path, other: Path) -> None:
    """What a team does after the race: the clone that paid commits its lockfile and
    pushes; the other, which paid nothing, drops what its refused or blocked apply left in
    its lockfile and pulls."""
    _push_lockfile(payer)
    _drop_lockfile_edits(other)
    git(other, "pull", "-q", "--ff-only")


def _push_lockfile(repo: Path) -> None:
    """Commit what the apply wrote to the lockfile (as it asks) and push it."""
    if git(repo, "status", "--porcelain", "--", LOCKFILE):
        git(repo, "add", LOCKFILE)
        git(repo, "commit", "-qm", "osmosis-apply: record the runs")
        git(repo, "push", "-q", "origin", "main")


def _drop_lockfile_edits(repo: Path) -> None:
    """Back to the lockfile on ``main``, for a clone whose apply paid nothing (what it wrote
    is what it observed; the next apply observes again)."""
    if git(repo, "ls-files", LOCKFILE):
        git(repo, "checkout", "-q", "--", LOCKFILE)
    else:
        (repo / LOCKFILE).unlink(missing_ok=True)


def _converged(repo: Path, server: Server, env: dict[str, str]) -> tuple[bool, str]:
    """Apply again (paying nothing), then plan: nothing may be left to do."""
    applied = run("osmosis-apply", repo, server.url, *RACE_ARGS, env=env, timeout=300)
    planned = run("osmosis-plan", repo, server.url, "--detailed-exitcode", env=env)
    paid = PAID.search(applied.stdout) is not None
    ok = applied.returncode == 0 and planned.returncode == 0 and not paid
    transcript = (
        f"{repo.name}: apply exit {applied.returncode}: {applied.stdout.strip()[-600:]} "
        f"{applied.stderr.strip()[-300:]}\nplan exit {planned.returncode}: "
        f"{planned.stdout.strip()[-600:]}"
    )
    return ok, transcript


def _count_runs(server: Server, generation: int, tally: RaceTally) -> None:
    """Duplicates and misses of this round's desired configs, and runs of earlier rounds
    still active (each should have been replaced), from the Platform's rows."""
    runs = server.runs()
    stopped = server.stopped()
    per_config = Counter(
        _index_of(r["body"]) for r in runs if generation_of(r["body"]) == str(generation)
    )
    tally.desired += CONFIGS
    tally.duplicates += sum(n - 1 for n in per_config.values() if n > 1)
    tally.never_submitted += sum(1 for i in range(CONFIGS) if per_config[str(i)] == 0)
    tally.superseded_active += sum(
        1 for r in runs if generation_of(r["body"]) != str(generation) and r["id"] not in stopped
    )


def _loser(out: str, err: str, tally: RaceTally) -> None:
    if TWIN in out:
        tally.losers_blocked_by_twins += 1
    elif BEHIND in err:
        tally.losers_refused_behind += 1
    else:
        tally.losers_other += 1
        tally.notes.append(f"loser: {out.strip()[-400:]} {err.strip()[-400:]}")


def race_rounds(root: Path, tally: RaceTally, *, rounds: int, pyproject: str) -> None:
    """``rounds`` rounds of the race in two fresh clones against one served Platform."""
    _remote, a, b = two_clones(root, CONFIGS, pyproject=pyproject)
    runtime = root / "runtime"
    runtime.mkdir()
    env = {"XDG_RUNTIME_DIR": str(runtime)}  # both clones share it: one machine
    with platform_server(root / "platform", speed=1.0) as server:
        for generation in range(1, rounds + 1):
            _commit_to_both(a, b, generation)
            procs = [
                spawn("osmosis-apply", repo, server.url, *RACE_ARGS, env=env) for repo in (a, b)
            ]
            outputs = [finish(proc, timeout=300) for proc in procs]
            tally.rounds += 1
            paid = [PAID.search(out) is not None for out, _err in outputs]
            if paid.count(True) != 1:
                tally.not_one_payer += 1
                tally.notes.append(
                    f"round {generation}: {paid.count(True)} clones paid: "
                    + "; ".join(
                        f"{out.strip()[-300:]} {err.strip()[-300:]}" for out, err in outputs
                    )
                )
            else:
                winner = paid.index(True)
                _loser(*outputs[1 - winner], tally)
                clones = (a, b)
                _catch_up(clones[winner], clones[1 - winner])
                for repo in clones:
                    git(repo, "pull", "-q", "--ff-only")
                    ok, transcript = _converged(repo, server, env)
                    if not ok:
                        tally.not_converged += 1
                        tally.notes.append(f"round {generation}: {transcript}")
                    _push_lockfile(repo)
            _count_runs(server, generation, tally)


def waited_race(root: Path, tally: RaceTally) -> None:
    """The same race under the machine-wide lock, each apply waiting for its runs
    (``APPLY_ARGS``: ``--wait``), on a fast Platform: the second clone gets the lock once
    the first's runs have ended. Those runs were made while the second waited for the lock,
    so they are its twins although they ended (docs/paying-once.md, "Never a twin without
    a decision"): the second pays for none (``ended_twins_paid`` must be 0)."""
    _remote, a, b = two_clones(root, CONFIGS, pyproject=MACHINE_LOCK)
    runtime = root / "runtime"
    runtime.mkdir()
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    with platform_server(root / "platform") as server:
        _commit_to_both(a, b, 1)
        args = (*APPLY_ARGS, "--lock-timeout", "120")
        procs = [spawn("osmosis-apply", repo, server.url, *args, env=env) for repo in (a, b)]
        for proc in procs:
            finish(proc, timeout=300)
        per_config = Counter(_index_of(r["body"]) for r in server.runs())
        tally.waited_rounds += 1
        tally.ended_twins_paid += sum(n - 1 for n in per_config.values() if n > 1)
        tally.never_submitted += sum(1 for i in range(CONFIGS) if per_config[str(i)] == 0)


__all__ = ["GIT_LOCK", "MACHINE_LOCK", "RaceTally", "race_rounds", "waited_race"]
