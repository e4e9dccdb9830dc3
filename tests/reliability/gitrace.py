"""Applies from two clones of one git remote (issue 15): the git lock must let exactly one
of them pay, and a holder SIGKILLed on "another machine" must be taken over once its lock
expires, with no duplicate run. Shared by ``make reliability`` (20 races) and its smoke
version in ``make test`` (one race).

Ground truth is the Platform's own rows: one run per config, never two.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.local_platform import Faults
from tests.support.git import git

from .harness import (
    APPLY_ARGS,
    CONFIG,
    SECRET_NAME,
    Server,
    _index_of,
    cli_env,
    command,
    finish,
    killed,
    lock_holder_details,
    platform_server,
    run,
    spawn,
)

SUBMITTED = "ok: submitted"
BEHIND = "behind the one the last apply wrote"
PYPROJECT = '[tool.osmosis-reconciler]\nlock = "git"\nlock_ttl = {ttl}\n'
"""A loopback Platform gets the git lock only when asked for (``locking.choose_lock``)."""


def _git_lock_held(repo: Path) -> bool:
    """Whether any (Platform, workspace)'s lock ref is on ``origin``."""
    listed = git(repo, "ls-remote", "origin", "refs/osmosis/*")
    return any(line.endswith("/lock") for line in listed.splitlines())


@dataclass
class GitTally:
    """What the two-clone scenarios saw; ``duplicates``, ``never_submitted``,
    ``races_without_single_applier``, ``losers_without_holder`` and ``not_taken_over``
    must stay 0."""

    races: int = 0
    losers_naming_holder: int = 0
    losers_behind: int = 0
    races_without_single_applier: int = 0
    losers_without_holder: int = 0
    holders_killed: int = 0
    taken_over: int = 0
    not_taken_over: int = 0
    duplicates: int = 0
    never_submitted: int = 0
    unknown_outcomes_settled: int = 0
    notes: list[str] = field(default_factory=list)


def two_clones(
    root: Path, configs: int, *, ttl: int = 3, pyproject: str | None = None
) -> tuple[Path, Path, Path]:
    """A bare remote holding ``configs`` configs, and two clones of it (``a``, ``b``).
    ``pyproject`` is the settings file (default: the git lock with ``lock_ttl = ttl``)."""
    seed = root / "seed"
    bench = seed / "benchmarks" / "tb"
    bench.mkdir(parents=True)
    for index in range(configs):
        (bench / f"c{index:02d}.toml").write_text(CONFIG.format(index=index, secret=SECRET_NAME))
    settings = PYPROJECT.format(ttl=ttl) if pyproject is None else pyproject
    (seed / "pyproject.toml").write_text(settings)
    (seed / ".gitignore").write_text(".osmosis/\n")
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", f"{configs} benchmark configs")
    remote = root / "remote.git"
    git(root, "clone", "-q", "--bare", str(seed), str(remote))
    shutil.rmtree(seed)
    clones = []
    for name in ("a", "b"):
        git(root, "clone", "-q", str(remote), name)
        clones.append(root / name)
    return remote, clones[0], clones[1]


def count_runs(server: Server, configs: int, tally: GitTally) -> None:
    """Duplicates and misses, from the Platform's rows (one run per config index)."""
    per_config = Counter(_index_of(run["body"]) for run in server.runs())
    tally.duplicates += sum(n - 1 for n in per_config.values() if n > 1)
    tally.never_submitted += configs - len(per_config)


def race(root: Path, tally: GitTally, *, configs: int) -> None:
    """Both clones apply at the same moment with no lock timeout: one submits everything,
    the other is refused naming the holder (or, arriving after the winner released, is
    refused because its lockfile is behind the one the winner recorded)."""
    _remote, a, b = two_clones(root, configs)
    with platform_server(root / "platform", faults=Faults(latency_ms=20)) as server:
        procs = [spawn("osmosis-apply", repo, server.url, *APPLY_ARGS) for repo in (a, b)]
        outputs = [finish(proc, timeout=300) for proc in procs]
        results = [
            (proc.returncode, out, err) for proc, (out, err) in zip(procs, outputs, strict=True)
        ]
        tally.races += 1
        winners = [r for r in results if SUBMITTED in r[1]]
        if len(winners) != 1 or winners[0][0] != 0:
            tally.races_without_single_applier += 1
            tally.notes.append(
                "; ".join(f"exit {rc}: {err.strip()[-300:]}" for rc, _o, err in results)
            )
        for rc, out, err in results:
            if SUBMITTED in out:
                continue
            if rc == 1 and "apply lock" in err and lock_holder_details(err):
                tally.losers_naming_holder += 1
            elif rc == 1 and BEHIND in err:
                tally.losers_behind += 1
            else:
                tally.losers_without_holder += 1
                tally.notes.append(f"loser exit {rc}: {err.strip()[-400:]}")
        count_runs(server, configs, tally)


def _restore_state_record(repo: Path) -> None:
    """What the "behind" refusal's hint says: the lockfile from the state record."""
    listed = git(repo, "ls-remote", "origin", "refs/osmosis/*")
    (ref,) = [line.split("\t")[1] for line in listed.splitlines() if line.endswith("/state")]
    git(repo, "fetch", "-q", "origin", ref)
    shown = subprocess.run(
        ["git", "show", "FETCH_HEAD:osmosis.lock"], cwd=repo, capture_output=True, check=True
    )
    (repo / "state").mkdir(exist_ok=True)
    (repo / "state" / "osmosis.lock").write_bytes(shown.stdout)


def _settle_unknown_outcomes(
    repo: Path, server: Server, configs: int, tally: GitTally, taker_out: str
) -> None:
    """With parallel submits, the holder may be killed after writing a submit's intent and
    before sending it. That submit's outcome is unknown: the taker must show it as ``?`` and
    never pay it on its own. A person who checked the Platform settles it
    (``osmosis-state resolve ADDR --not-submitted``, as the plan says); the next apply then
    submits it exactly once. A config missing with no ``?`` shown stays a miss."""
    listed = {_index_of(run["body"]) for run in server.runs()}
    missing = [index for index in range(configs) if str(index) not in listed]
    settled_here = 0
    for index in missing:
        address = f"tb/c{index:02d}"
        if not re.search(rf"\? {re.escape(address)}\b", taker_out):
            continue
        settled = run("osmosis-state", repo, server.url, "resolve", address, "--not-submitted")
        if settled.returncode != 0:
            tally.notes.append(f"resolve {address} exit {settled.returncode}: {settled.stderr}")
            continue
        settled_here += 1
    tally.unknown_outcomes_settled += settled_here
    if settled_here:
        again = run("osmosis-apply", repo, server.url, *APPLY_ARGS, timeout=300)
        if again.returncode != 0:
            tally.notes.append(f"apply after resolve exit {again.returncode}: {again.stderr}")


def killed_holder_elsewhere(
    root: Path, tally: GitTally, *, configs: int, crash_at: str = "submit.after_post:3"
) -> None:
    """Clone ``a`` applies under another host name (its own UTS namespace, so the waiter
    cannot tell that its pid is dead) and is SIGKILLed at ``crash_at`` (by default after its
    third submit), holding the
    git lock. Clone ``b`` waits for the lock: it must take it over once it expires and
    adopt, not pay again, the runs ``a`` created."""
    _remote, a, b = two_clones(root, configs, ttl=3)
    with platform_server(root / "platform") as server:
        holder = subprocess.Popen(
            [
                "unshare",
                "--uts",
                "sh",
                "-c",
                'hostname osmosis-other-host && exec "$@"',
                "sh",
                *command("osmosis-apply", a, server.url, *APPLY_ARGS),
            ],
            env=cli_env({"OSMOSIS_CRASH_AT": crash_at}),
            cwd=a,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _out, err = finish(holder)
        if not killed(holder):
            tally.notes.append(f"the holder was not killed: exit {holder.returncode}: {err}")
            tally.not_taken_over += 1
            return
        tally.holders_killed += 1
        held = _git_lock_held(b)
        if not held:
            tally.notes.append("the killed holder left no git lock behind")
        taker = run(
            "osmosis-apply", b, server.url, *APPLY_ARGS, "--lock-timeout", "60", timeout=300
        )
        took_over = re.search(r"took over the git apply lock", taker.stderr) is not None
        if took_over and taker.returncode == 1 and BEHIND in taker.stderr:
            # The killed holder published its intents to the state record before paying:
            # the taker's checkout is behind it and is refused; restored as the hint says,
            # it adopts what the holder paid for.
            _restore_state_record(b)
            taker = run("osmosis-apply", b, server.url, *APPLY_ARGS, timeout=300)
        if taker.returncode != 0 or not took_over:
            tally.not_taken_over += 1
            tally.notes.append(f"taker exit {taker.returncode}: {taker.stderr.strip()[-600:]}")
        else:
            tally.taken_over += 1
        _settle_unknown_outcomes(b, server, configs, tally, taker.stdout)
        missed = tally.never_submitted + tally.duplicates
        count_runs(server, configs, tally)
        if tally.never_submitted + tally.duplicates != missed:
            tally.notes.append(
                f"holder: {err.strip()[-600:]}\ntaker: {taker.stdout.strip()[-800:]}\n"
                f"{taker.stderr.strip()[-600:]}"
            )
        if _git_lock_held(b):
            tally.notes.append("the taker left the git lock behind")
            tally.not_taken_over += 1


__all__ = ["GitTally", "count_runs", "killed_holder_elsewhere", "race", "two_clones"]
