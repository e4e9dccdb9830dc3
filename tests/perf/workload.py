"""Workloads for ``make perf``: a repository of N configs whose lockfile records M runs, and
the local Platform, in its own process over loopback, seeded with those M runs plus extras.

The repository is a steady state with a little churn, the shape a scheduled CI plan sees:

* N configs (``bench_config.config_text``), all on Terminal-Bench 2.1;
* 1 % of them are new (no lockfile entry: planned as submits, which also makes the planner
  look for adoptable runs), 0.5 % changed since their run (planned as submits), and 10
  lockfile entries whose config was deleted (forget / stop);
* every other config has its current run in the lockfile; the remaining recorded runs are
  ``[[history]]`` entries (three or four per address), so the lockfile records M runs;
* terminal current runs have their summary and results on disk and recorded (sha256), so
  the plan verifies them; the Platform also holds ``extra`` runs the lockfile does not
  know (informational drift): most on another benchmark, ``extra // 25`` on the same one
  (adoption candidates whose details the planner must fetch when their shape fits).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from reconciler.config import load_configs
from reconciler.local_platform import LocalPlatform
from reconciler.model import Downloads, HistoryEntry, LockState, RecordedRun, RunStatus
from reconciler.platform import PlatformClient
from reconciler.platform.settings import normalize_platform_url
from reconciler.state.lockfile import new_state, write_lockfile
from tests.perf.bench_config import config_text, generate

WORKSPACE = "perf"
SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_ENDPOINT_KEY")
# Recorded runs are all terminal, so the plan does not change while it is measured
# (active runs end within minutes at speed 1); the extras keep the default mix.
TERMINAL_MIX = {RunStatus.FINISHED: 0.88, RunStatus.FAILED: 0.07, RunStatus.STOPPED: 0.05}
OTHER_BENCHMARK = "swe-bench-verified"


class Serves(Protocol):
    """What ``build_plan_repo`` needs of a server: its URL and a client of it."""

    url: str

    def client(self) -> PlatformClient: ...


class Server:
    """The local Platform served from ``data_dir`` by a child process (``tests.perf.serve``)."""

    def __init__(self, data_dir: Path, *, latency_ms: int = 0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.perf.serve", str(data_dir),
             "--latency-ms", str(latency_ms), "--workspace", WORKSPACE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self.close()
            raise RuntimeError(f"the perf server did not start: {line!r}")
        self.url = normalize_platform_url(line)

    def client(self) -> PlatformClient:
        return PlatformClient(self.url, token="local", workspace=WORKSPACE)

    def close(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def seed_platform(
    data_dir: Path,
    runs: int,
    extra: int,
    *,
    mix: Mapping[str, float] | None = None,
    body: dict | None = None,
) -> None:
    """Create the Platform's data: secrets, ``runs`` recorded-to-be runs, ``extra`` others."""
    platform = LocalPlatform(data_dir, workspaces=(WORKSPACE,))
    for name in SECRETS:
        platform.set_secret(WORKSPACE, name, f"perf-{name.lower()}-value")
    same = extra // 25
    if extra - same:
        platform.seed_runs(WORKSPACE, extra - same, benchmark_key=OTHER_BENCHMARK)
    if same:
        platform.seed_runs(WORKSPACE, same)
    # Seeded last so they are the newest: the recorded runs.
    status_mix = {RunStatus(k): v for k, v in mix.items()} if mix else TERMINAL_MIX
    platform.seed_runs(WORKSPACE, runs, status_mix=status_mix, body=body)
    platform.store.close()


@dataclass
class PlanRepo:
    root: Path
    configs: list[Path]
    lockfile: Path
    recorded: int
    """Runs the lockfile records (current entries plus history)."""
    workspace_runs: int
    """Runs the Platform lists for the workspace."""


def _outputs(repo: Path, run_dir: str, run_id: str) -> Downloads:
    directory = Path(".osmosis/benchmarks") / run_dir
    sha = {}
    total = 0
    for name, text in (
        ("summary.csv", f"run_id,pass_at_1\n{run_id},0.5\n"),
        ("results.csv", "task,attempt,passed\n" + "".join(f"t{i},1,{i % 2}\n" for i in range(8))),
    ):
        data = text.encode()
        (repo / directory).mkdir(parents=True, exist_ok=True)
        (repo / directory / name).write_bytes(data)
        sha[name] = hashlib.sha256(data).hexdigest()
        total += len(data)
    return Downloads(
        types=("summary", "results"),
        files=2,
        bytes=total,
        sha256=sha,
        directory=directory.as_posix(),
        complete=True,
    )


def build_plan_repo(
    root: Path,
    server: Serves,
    n: int,
    m: int,
    *,
    churn: bool = True,
    outputs: bool = True,
    listed: list | None = None,
) -> PlanRepo:
    """Write N configs and a lockfile recording M of the server's runs (see module doc).

    Without ``churn`` every config is recorded unchanged and nothing is deleted; without
    ``outputs`` no run has its outputs on disk (all terminal runs are then downloads).
    ``listed``: the runs to record from (default: the whole run list).
    """
    from reconciler.outputs.downloads import run_dir_name

    repo = root / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    configs = sorted(generate(repo, n))
    desired = load_configs(repo).runs
    if listed is None:
        with server.client() as client:
            listed = client.list_runs()
    tb = next(r.benchmark_id for r in listed if r.benchmark_name and "Terminal" in r.benchmark_name)
    recorded = [r for r in listed if r.benchmark_id == tb][:m]
    assert len(recorded) == m, (len(recorded), m)
    now = datetime.now(UTC).replace(microsecond=0)
    # Every 100th config is new and every 200th changed, spread over the address order so
    # their agent counts vary like the rest.
    deleted = 10 if churn else 0
    runs: dict[str, RecordedRun] = {}
    pool = iter(recorded)
    for i, d in enumerate(desired):
        if churn and i % 100 == 37:
            continue
        run = next(pool)
        digest = "0" * 64 if churn and i % 200 == 74 else d.spec_digest
        downloads = None
        if outputs and run.status in ("finished", "failed", "stopped"):
            downloads = _outputs(repo, run_dir_name(run.name, run.id), run.id)
        runs[d.address] = RecordedRun(
            address=d.address, spec_digest=digest, spec=d.spec, run_id=run.id,
            run_name=run.name, status=run.status, observed_at=now,
            submitted_at=run.created_at, benchmark_id=run.benchmark_id,
            task_count=1, attempts=d.agent_count * d.attempts_per_task,
            platform_url=run.platform_url, downloads=downloads,
        )  # fmt: skip
    for k in range(deleted):
        run = next(pool)
        address = f"retired/gone-{k:02d}"
        runs[address] = RecordedRun(
            address=address, spec_digest="1" * 64, run_id=run.id, run_name=run.name,
            status=run.status, observed_at=now, submitted_at=run.created_at,
            benchmark_id=run.benchmark_id,
        )  # fmt: skip
    addresses = sorted(runs)
    history = []
    for j, run in enumerate(pool):
        history.append(HistoryEntry(
            address=addresses[j % len(addresses)], run_id=run.id, run_name=run.name,
            spec_digest=f"{j:064x}"[-64:], status=run.status, submitted_at=run.created_at,
            ended_at=now, reason="replaced",
        ))  # fmt: skip
    state: LockState = new_state(server.url, WORKSPACE)
    state = state.model_copy(update={"runs": dict(sorted(runs.items())), "history": tuple(history)})
    lockfile = repo / "state" / "osmosis.lock"
    lockfile.parent.mkdir(parents=True, exist_ok=True)
    write_lockfile(lockfile, state)
    return PlanRepo(
        repo, configs, lockfile, recorded=len(runs) + len(history), workspace_runs=len(listed)
    )


def config_body(i: int) -> dict:
    """The submit body of generated config ``i`` (what the reconciler would send)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "benchmarks" / "one.toml"
        path.parent.mkdir(parents=True)
        path.write_text(config_text(i))
        return dict(load_configs(Path(tmp)).runs[0].spec)


def seed_workspace_secrets(data_dir: Path, workspace: str) -> None:
    platform = LocalPlatform(data_dir, workspaces=(workspace,))
    for name in SECRETS:
        platform.set_secret(workspace, name, f"perf-{name.lower()}-value")
    platform.store.close()


def dir_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(dirpath, name))
    return total
