"""Crash scenarios: kill ``osmosis-apply`` somewhere, check the wreck, recover, check again.

Used by the full crash suite (``test_crash.py``) and by its smoke version in ``make test``.
A scenario is one fresh repository, one fresh local Platform, one or more SIGKILLs and a
recovery by plain ``osmosis-apply`` / ``osmosis-plan`` runs until the plan is empty.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.local_platform import Faults

from .harness import (
    APPLY_ARGS,
    Findings,
    RepoFactory,
    Server,
    change_every_config,
    check_converged,
    check_disk,
    check_replaced,
    converge,
    finish,
    killed,
    platform_server,
    read_state,
    run,
    spawn,
    tail,
    wait_until,
)

MAX_ROUNDS = 6


@dataclass(frozen=True)
class KillPoint:
    """Where to kill: ``hook`` (``OSMOSIS_CRASH_AT=label:n``), ``window`` (after the n-th
    submit committed on the Platform, before its delayed response) or ``timed`` (SIGKILL
    after each of ``offsets`` seconds, restarting in between)."""

    kind: str
    label: str = ""
    n: int = 0
    offsets: tuple[float, ...] = ()

    def describe(self) -> str:
        if self.kind in ("hook", "replace"):
            return f"{self.label}:{self.n}"
        if self.kind == "window":
            return f"submit #{self.n} committed, response pending"
        return "t=" + ",".join(f"{o:.2f}s" for o in self.offsets)


@dataclass
class ScenarioResult:
    point: KillPoint
    kills: list[str] = field(default_factory=list)
    not_reached: int = 0
    rounds: int = 0
    runs: int = 0
    downloaded: int = 0
    temps_after_kill: int = 0
    temps_left: int = 0
    findings: Findings = field(default_factory=Findings)
    seconds: float = 0.0
    stops: int = 0
    desired: int = 0


class CrashRunner:
    """Runs scenarios (two at a time: the machine has two cores) over one repo template."""

    def __init__(self, root: Path, configs: int) -> None:
        self.root = root
        self.configs = configs
        self.repos = RepoFactory(root, configs)
        self._lock = threading.Lock()
        self._seq = 0

    def _next(self) -> tuple[Path, Path]:
        with self._lock:
            self._seq += 1
            seq = self._seq
            repo = self.repos.new()
        return repo, self.root / f"platform-{seq:03d}"

    def run_all(self, points: Sequence[KillPoint], workers: int = 2) -> list[ScenarioResult]:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self.run, points))

    def run(self, point: KillPoint) -> ScenarioResult:
        if point.kind == "replace":
            return self.run_replace(point)
        started = time.monotonic()
        repo, data = self._next()
        faults = Faults(after_submit_delay_ms=400) if point.kind == "window" else Faults()
        result = ScenarioResult(point, desired=self.configs)
        with platform_server(data, faults=faults) as server:
            cache: dict = {}

            def after_kill(proc_label: str) -> None:
                result.kills.append(proc_label)
                read_state(repo, server, result.findings, f"after kill {proc_label}")
                result.temps_after_kill += check_disk(
                    repo, server, result.findings, f"after kill {proc_label}", cache
                )

            self._kill(point, repo, server, result, after_kill)
            rounds, transcript = converge(repo, server.url, max_rounds=MAX_ROUNDS)
            result.rounds = rounds
            if rounds > MAX_ROUNDS:
                result.findings.unconverged += 1
                result.findings.details.append(
                    f"{repo.name} ({point.describe()}) did not converge:\n" + tail(transcript[-1])
                )
            stats = check_converged(repo, server, self.configs, result.findings, cache)
            result.runs, result.temps_left = stats["runs"], stats["temps_left"]
            result.downloaded = stats["downloaded"]
        result.seconds = time.monotonic() - started
        return result

    def run_replace(self, point: KillPoint) -> ScenarioResult:
        """Runs still active (speed 1), every config changed, apply killed while replacing:
        the stops and the new submits must each happen exactly once."""
        started = time.monotonic()
        repo, data = self._next()
        result = ScenarioResult(point, desired=2 * self.configs)
        args = ("--auto-approve", "--allow-mass-stop", "--parallelism", "4")
        with platform_server(data, speed=1.0) as server:
            first = run("osmosis-apply", repo, server.url, *args)
            assert first.returncode == 0, first.stdout + first.stderr
            change_every_config(repo, self.configs)
            proc = spawn(
                "osmosis-apply",
                repo,
                server.url,
                *args,
                env={"OSMOSIS_CRASH_AT": f"{point.label}:{point.n}"},
            )
            finish(proc)
            if killed(proc):
                result.kills.append(point.describe())
                read_state(repo, server, result.findings, f"after kill {point.describe()}")
            else:
                result.not_reached += 1
            for rounds in range(1, MAX_ROUNDS + 1):
                run("osmosis-apply", repo, server.url, *args)
                planned = run("osmosis-plan", repo, server.url, "--detailed-exitcode")
                result.rounds = rounds
                if planned.returncode == 0:
                    break
            else:
                result.rounds = MAX_ROUNDS + 1
                result.findings.unconverged += 1
                result.findings.details.append(tail(planned.stdout + planned.stderr))
            result.stops = check_replaced(repo, server, self.configs, result.findings)
            result.runs = len(server.runs())
        result.seconds = time.monotonic() - started
        return result

    def _kill(
        self,
        point: KillPoint,
        repo: Path,
        server: Server,
        result: ScenarioResult,
        after_kill: Callable[[str], None],
    ) -> None:
        if point.kind == "hook":
            proc = spawn(
                "osmosis-apply",
                repo,
                server.url,
                *APPLY_ARGS,
                env={"OSMOSIS_CRASH_AT": f"{point.label}:{point.n}"},
            )
            finish(proc)
            if killed(proc):
                after_kill(point.describe())
            else:
                result.not_reached += 1
        elif point.kind == "window":
            proc = spawn("osmosis-apply", repo, server.url, *APPLY_ARGS)
            reached = wait_until(
                lambda: server.platform.submit_count() >= point.n or proc.poll() is not None,
                timeout=60,
            )
            if reached and proc.poll() is None:
                proc.kill()
            finish(proc)
            if killed(proc):
                after_kill(point.describe())
            else:
                result.not_reached += 1
        else:
            for offset in point.offsets:
                proc = spawn("osmosis-apply", repo, server.url, *APPLY_ARGS)
                try:
                    proc.wait(timeout=offset)
                except Exception:  # noqa: BLE001 - TimeoutExpired: still running, kill it
                    proc.kill()
                finish(proc)
                if killed(proc):
                    after_kill(f"t={offset:.2f}s")
                else:
                    result.not_reached += 1


def hook_points(plan: Mapping[str, Sequence[int]]) -> list[KillPoint]:
    return [KillPoint("hook", label, n) for label, ns in plan.items() for n in ns]


def summarise(results: Sequence[ScenarioResult]) -> dict[str, int | float]:
    """Totals over scenarios; the must-be-0 counts come from ``Findings``."""
    total = Findings()
    for r in results:
        total.add(r.findings)
    kills = [k for r in results for k in r.kills]
    return {
        "scenarios": len(results),
        "kills": len(kills),
        "kills_hook": sum(len(r.kills) for r in results if r.point.kind == "hook"),
        "kills_window": sum(len(r.kills) for r in results if r.point.kind == "window"),
        "kills_timed": sum(len(r.kills) for r in results if r.point.kind == "timed"),
        "kills_replace": sum(len(r.kills) for r in results if r.point.kind == "replace"),
        "stops": sum(r.stops for r in results),
        "distinct_points": len(
            {(r.point.kind, r.point.describe(), k) for r in results for k in r.kills}
        ),
        "not_reached": sum(r.not_reached for r in results),
        "max_rounds": max((r.rounds for r in results), default=0),
        "runs_created": sum(r.runs for r in results),
        "runs_desired": sum(r.desired for r in results),
        "temps_after_kill": sum(r.temps_after_kill for r in results),
        "temps_left": sum(r.temps_left for r in results),
        "downloaded": sum(r.downloaded for r in results),
        "duplicate_submits": total.duplicate_submits,
        "never_submitted": total.never_submitted,
        "missing_from_lockfile": total.missing_from_lockfile,
        "lockfile_parse_failures": total.lockfile_parse_failures,
        "half_written_files": total.half_written_files,
        "unconverged": total.unconverged,
        "details": total.details,  # type: ignore[dict-item]
    }
