"""The hostile network of the fault suite, and rounds of apply until the plan is empty."""

from __future__ import annotations

from pathlib import Path

from reconciler.local_platform import Faults

from .harness import APPLY_ARGS, Findings, Server, read_state, run, tail


def hostile_network(seed: int) -> Faults:
    return Faults(
        error_rate=0.20,
        rate_limit_rate=0.10,
        retry_after_s=1,
        drop_rate=0.05,
        latency_spike_ms=200,
        latency_spike_rate=0.10,
        drop_after_submit_rate=0.10,
        seed=seed,
    )


def apply_until_converged(
    repo: Path, url: str, findings: Findings, server: Server, max_rounds: int
) -> tuple[int, dict[int, int]]:
    """Rounds of apply; after each, a plan must parse the lockfile. Returns rounds, exits."""
    exits: dict[int, int] = {}
    for rounds in range(1, max_rounds + 1):
        applied = run("osmosis-apply", repo, url, *APPLY_ARGS, timeout=600)
        exits[applied.returncode] = exits.get(applied.returncode, 0) + 1
        assert "internal error" not in applied.stderr, applied.stderr
        read_state(repo, server, findings, f"after apply round {rounds}")
        planned = run("osmosis-plan", repo, url, "--detailed-exitcode", timeout=600)
        assert "internal error" not in planned.stderr, planned.stderr
        if planned.returncode == 0:
            return rounds, exits
        last = planned.stdout + planned.stderr
    findings.unconverged += 1
    findings.details.append(tail(last))
    return max_rounds + 1, exits
