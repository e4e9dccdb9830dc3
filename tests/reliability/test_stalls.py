"""Stalls (issue 17): a Platform that trickles or never answers, SIGTERM during a stalled download.

* Trickling server: every API answer written one byte every 2 s, so no read ever times out.
  ``osmosis-plan`` with the default deadline must end with a clear "did not complete ...
  within the 60 s deadline" error, no later than the deadline plus start-up.
* Silent server: requests are read and never answered; the same must hold (main needed
  152 s: five read timeouts and their backoff).
* SIGTERM during a stalled download: presigned GETs after the first few send half a body
  and stop. ``osmosis-apply`` gets SIGTERM once a transfer is stalled and must exit 130
  within 5 s (main: 500 s, until its 600 s read timeout), with every file that did arrive
  recorded in the lockfile (download records are written lazily and flushed on the way
  out) and no ``.partial`` left behind. At parallelism 1, 4 and 8.

Timed, so not in ``make test`` (whose quick versions in ``test_hostile.py`` use a 2 s
deadline and assert no times).
"""

from __future__ import annotations

import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from reconciler.local_platform.faults import FaultInjector
from reconciler.platform.client import DEFAULT_DEADLINE_S

from . import report
from .harness import (
    DOWNLOADS,
    STATE,
    WORKSPACE,
    cli_env,
    command,
    finish,
    make_repo,
    platform_server,
    read_lockfile,
    run,
    spawn,
    wait_until,
)

pytestmark = pytest.mark.reliability

SLACK_S = 5.0
"""Start-up, git and the first request's connect, on a loaded 2-core machine."""
SIGTERM_LIMIT_S = 5.0
CONFIGS = 3
PARALLELISMS = (1, 4, 8)


@dataclass
class _Tally:
    plans: dict[str, float] = field(default_factory=dict)
    late_plans: int = 0
    unclear_plans: int = 0
    sigterms: list[float] = field(default_factory=list)
    late_exits: int = 0
    wrong_exit_codes: int = 0
    unrecorded_files: int = 0
    partials_left: int = 0
    details: list[str] = field(default_factory=list)


_tally = _Tally()


def _plan_against(
    tmp: Path, name: str, faults: Faults
) -> tuple[float, subprocess.CompletedProcess[str]]:
    repo = make_repo(tmp / f"repo-{name}", 1)
    with platform_server(tmp / f"platform-{name}", faults=faults) as server:
        started = time.monotonic()
        done = subprocess.run(
            command("osmosis-plan", repo, server.url),
            env=cli_env(),
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=DEFAULT_DEADLINE_S * 5,
        )
        return time.monotonic() - started, done


def test_a_trickling_or_silent_platform_ends_the_plan_within_the_deadline(tmp_path: Path) -> None:
    kinds = {"trickling": Faults(trickle_ms=2000), "silent": Faults(silent=True)}
    with ThreadPoolExecutor(max_workers=len(kinds)) as pool:
        futures = {k: pool.submit(_plan_against, tmp_path, k, f) for k, f in kinds.items()}
        outcomes = {k: f.result() for k, f in futures.items()}
    for kind, (seconds, done) in outcomes.items():
        _tally.plans[kind] = seconds
        if seconds > DEFAULT_DEADLINE_S + SLACK_S:
            _tally.late_plans += 1
            _tally.details.append(f"{kind}: osmosis-plan took {seconds:.1f} s")
        clear = (
            done.returncode == 1
            and f"within the {DEFAULT_DEADLINE_S:g} s deadline" in done.stderr
            and "internal error" not in done.stderr
        )
        if not clear:
            _tally.unclear_plans += 1
            _tally.details.append(f"{kind}: rc {done.returncode}: {done.stderr[-500:]}")
    _publish()
    assert _tally.late_plans == 0 and _tally.unclear_plans == 0, _tally.details


def _sigterm_scenario(tmp: Path, parallelism: int) -> None:
    repo = make_repo(tmp / f"repo-p{parallelism}", CONFIGS)
    with platform_server(tmp / f"platform-p{parallelism}") as server:
        first = run("osmosis-apply", repo, server.url, "--auto-approve")
        assert first.returncode == 0, first.stderr
        # Two files of two runs arrive; every later GET stalls halfway through its body.
        server.platform.faults = Faults(stall_downloads_after=2)
        server.platform.injector = FaultInjector(server.platform.faults)
        proc = spawn(
            "osmosis-apply", repo, server.url, "--auto-approve", "--parallelism", str(parallelism)
        )
        stalled = wait_until(
            lambda: server.platform.fault_counts.get("stalled_download", 0) > 0, 120
        )
        assert stalled, "no download stalled"
        time.sleep(0.5)  # let the files that arrived be recorded (lazily) first
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            pass
        seconds = time.monotonic() - sent
        out, err = finish(proc)
        _tally.sigterms.append(seconds)
        where = f"parallelism {parallelism}"
        if seconds > SIGTERM_LIMIT_S:
            _tally.late_exits += 1
            _tally.details.append(f"{where}: exited {seconds:.1f} s after SIGTERM")
        if proc.returncode != 130:
            _tally.wrong_exit_codes += 1
            _tally.details.append(f"{where}: exit {proc.returncode}: {err[-500:]}")
        state = read_lockfile(repo / STATE, platform=server.url, workspace=WORKSPACE)
        recorded = {
            (e.downloads.directory.rsplit("/", 1)[-1], path)
            for e in state.runs.values()
            if e.downloads is not None
            for path in e.downloads.sha256
        }
        root = repo / DOWNLOADS
        for path in root.rglob("*") if root.is_dir() else ():
            if not path.is_file():
                continue
            if path.name.endswith(".partial"):
                _tally.partials_left += 1
                _tally.details.append(f"{where}: left {path}")
                continue
            key = (path.relative_to(root).parts[0], "/".join(path.relative_to(root).parts[1:]))
            if key not in recorded:
                _tally.unrecorded_files += 1
                _tally.details.append(f"{where}: {key} on disk but not in the lockfile")


@pytest.mark.parametrize("parallelism", PARALLELISMS)
def test_sigterm_during_a_stalled_download(tmp_path: Path, parallelism: int) -> None:
    before = len(_tally.details)
    _sigterm_scenario(tmp_path, parallelism)
    _publish()
    assert len(_tally.details) == before, _tally.details[before:]


def _publish() -> None:
    t, r = _tally, report.record
    for kind, seconds in sorted(t.plans.items()):
        r("stalls", f"{kind} server: plan ends after, s", round(seconds, 1))
    if t.plans:
        r(
            "stalls",
            f"plans past the {DEFAULT_DEADLINE_S:g} s deadline + {SLACK_S:g} s",
            t.late_plans,
            must_be_zero=True,
        )
        r("stalls", "plans without a clear deadline error", t.unclear_plans, must_be_zero=True)
    if t.sigterms:
        r("stalls", "SIGTERM during a stalled download", len(t.sigterms))
        r("stalls", "  slowest exit after SIGTERM, s", round(max(t.sigterms), 2))
        r("stalls", f"  exits later than {SIGTERM_LIMIT_S:g} s", t.late_exits, must_be_zero=True)
        r("stalls", "  exit codes other than 130", t.wrong_exit_codes, must_be_zero=True)
        r("stalls", "  files on disk not in the lockfile", t.unrecorded_files, must_be_zero=True)
        r("stalls", "  .partial files left behind", t.partials_left, must_be_zero=True)
