"""Concurrency scenarios, shared by the full suite and its smoke version in ``make test``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reconciler.local_platform import Faults

from .harness import (
    APPLY_ARGS,
    Findings,
    check_converged,
    converge,
    finish,
    killed,
    lock_holder_details,
    make_repo,
    platform_server,
    run,
    spawn,
    wait_until,
)

SUBMITTED = "ok: submitted"
WAITING = "Waiting for the apply lock"


@dataclass
class Tally:
    """What the concurrency scenarios saw; the ``*_without_*`` / ``blocked`` / ``unexpected``
    counts and ``findings`` must stay 0."""

    processes: int = 0
    races: int = 0
    refused_with_holder: int = 0
    waited: int = 0
    holders_killed: int = 0
    races_without_single_applier: int = 0
    refusals_without_holder: int = 0
    blocked_by_dead_holder: int = 0
    unexpected_exits: int = 0
    findings: Findings = field(default_factory=Findings)
    notes: list[str] = field(default_factory=list)


def _classify(tally: Tally, rc: int, out: str, err: str, *, may_wait: bool) -> None:
    """One non-applying process: a refusal naming the holder, or a waiter with nothing to do."""
    if rc == 1 and "apply lock" in err:
        if lock_holder_details(err):
            tally.refused_with_holder += 1
        else:
            tally.refusals_without_holder += 1
            tally.notes.append(f"refusal without holder details: {err.strip()[-400:]}")
    elif rc == 0:
        if WAITING in err:
            tally.waited += 1
        elif not may_wait and "Plan: 0 to submit" not in out and "No changes" not in out:
            tally.notes.append(f"rc 0 without waiting: {out[-300:]}")
    else:
        tally.unexpected_exits += 1
        tally.notes.append(f"exit {rc}: {err.strip()[-400:]}")


def eight_applies(
    root: Path, tally: Tally, *, configs: int, processes: int, wait: bool, faults: Faults
) -> None:
    """``processes`` applies started together on one repo; exactly one may submit."""
    repo = make_repo(root / "repo", configs)
    with platform_server(root / "platform", faults=faults) as server:
        extra = ("--lock-timeout", "300") if wait else ()
        procs = [
            spawn("osmosis-apply", repo, server.url, *APPLY_ARGS, *extra) for _ in range(processes)
        ]
        results = []
        for proc in procs:
            out, err = finish(proc, timeout=600)
            results.append((proc.returncode, out, err))
        tally.processes += processes
        tally.races += 1
        submitters = [r for r in results if SUBMITTED in r[1]]
        if len(submitters) != 1:
            tally.races_without_single_applier += 1
            tally.notes.append(f"{len(submitters)} processes submitted")
        for rc, out, err in results:
            if SUBMITTED in out:
                if rc != 0:
                    tally.unexpected_exits += 1
                    tally.notes.append(f"applier exit {rc}: {err[-400:]}")
                continue
            _classify(tally, rc, out, err, may_wait=wait)
        _settle(repo, server, configs, tally)


def killed_holder_then_apply(root: Path, tally: Tally, *, configs: int, crash_at: str) -> None:
    """A holder SIGKILLed at ``crash_at``; the next apply, with no lock timeout, must run."""
    repo = make_repo(root / "repo", configs)
    with platform_server(root / "platform") as server:
        holder = spawn(
            "osmosis-apply", repo, server.url, *APPLY_ARGS, env={"OSMOSIS_CRASH_AT": crash_at}
        )
        finish(holder)
        tally.processes += 1
        assert killed(holder), f"{crash_at} was never reached"
        tally.holders_killed += 1
        nxt = run("osmosis-apply", repo, server.url, *APPLY_ARGS)
        tally.processes += 1
        if nxt.returncode != 0 or "apply lock" in nxt.stderr:
            tally.blocked_by_dead_holder += 1
            tally.notes.append(f"after a killed holder: exit {nxt.returncode}: {nxt.stderr[-400:]}")
        _settle(repo, server, configs, tally)


def killed_holder_with_waiters(root: Path, tally: Tally, *, configs: int, waiters: int) -> None:
    """Waiters queue behind a holder that is SIGKILLed mid-apply: one of them takes over."""
    repo = make_repo(root / "repo", configs)
    lock = repo / "state" / ".osmosis.lock.held"
    with platform_server(root / "platform", faults=Faults(after_submit_delay_ms=150)) as server:
        holder = spawn("osmosis-apply", repo, server.url, *APPLY_ARGS)
        assert wait_until(lambda: lock.exists() and b"pid" in _read(lock), timeout=60)
        queue = [
            spawn("osmosis-apply", repo, server.url, *APPLY_ARGS, "--lock-timeout", "300")
            for _ in range(waiters)
        ]
        tally.processes += 1 + waiters
        wait_until(lambda: server.platform.submit_count() >= 5 or holder.poll() is not None, 60)
        holder.kill()
        finish(holder)
        if killed(holder):
            tally.holders_killed += 1
        results = []
        for proc in queue:
            out, err = finish(proc, timeout=600)
            results.append((proc.returncode, out, err))
        takers = [r for r in results if SUBMITTED in r[1] or "adopt" in r[1]]
        if killed(holder) and len(takers) != 1:
            tally.races_without_single_applier += 1
            said = [
                [line for line in out.splitlines() if SUBMITTED in line or "adopt" in line][:4]
                for _rc, out, _err in takers
            ]
            tally.notes.append(f"{len(takers)} waiters took over from the killed holder: {said}")
        for rc, _out, err in results:
            if rc != 0:
                tally.blocked_by_dead_holder += 1
                tally.notes.append(f"waiter exit {rc}: {err[-400:]}")
            elif WAITING in err:
                tally.waited += 1
        _settle(repo, server, configs, tally)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _settle(repo: Path, server: object, configs: int, tally: Tally) -> None:
    rounds, transcript = converge(repo, server.url)  # type: ignore[attr-defined]
    if rounds > 6:
        tally.findings.unconverged += 1
        tally.findings.details.append(transcript[-1][-800:])
    check_converged(repo, server, configs, tally.findings, {})  # type: ignore[arg-type]


__all__ = ["Tally", "eight_applies", "killed_holder_then_apply", "killed_holder_with_waiters"]
