"""Shared machinery of the reliability suites: real repos, a loopback Platform, real CLIs.

Every check here reads ground truth independently of the code under test: the Platform's
own SQLite rows say which runs exist, the served outputs say what a complete file is, and
the lockfile is parsed from disk after the process that wrote it is dead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from reconciler.errors import StateError
from reconciler.local_platform import Faults, LocalPlatform
from reconciler.local_platform.faults import FaultInjector
from reconciler.local_platform.server import ServerHandle
from reconciler.state.lockfile import read_lockfile
from tests.support.emulator import serve
from tests.support.git import git

WORKSPACE = "reliability"
SECRET_NAME = "OPENAI_API_KEY"
BIN = Path(sys.executable).parent
STATE = Path("state/osmosis.lock")
DOWNLOADS = Path(".osmosis/benchmarks")
DOWNLOAD_TYPES = ("summary", "results")

CONFIG = """\
# Terminal-Bench 2.1 smoke config number {index} (reliability suite).
[experiment]
benchmark = "terminal-bench-2-1"

[tasks]
task_names = ["terminal-bench/git-multibranch"]

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "{secret}"

[agents.env]
RELIABILITY_INDEX = "{index}"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 1
"""

# Temp names the product may leave behind when killed: never at a final path.
_PARTIAL_RE = re.compile(r"^\..+\.[0-9a-f]+\.partial$")
_LOCK_TMP_RE = re.compile(r"^\.osmosis\.lock\..+\.tmp$")
_STATE_FILES = {"osmosis.lock", ".osmosis.lock.held"}


# --------------------------------------------------------------------------- repos


RECOVERY_SETTINGS = """\
[tool.osmosis-reconciler]
# The recovery suites (crashes, faults, holes) measure convergence in a few rounds of apply
# against a Platform whose run list does not leave runs out: one complete listing without
# a match settles an unknown outcome there. The default quiet period (3 listings over 30
# minutes) is measured by the unknown-outcome suite, whose list does leave runs out.
unknown_outcome_listings = 1
unknown_outcome_quiet_minutes = 0
"""


def make_repo(
    path: Path, configs: int, *, secret: str = SECRET_NAME, settings: str | None = RECOVERY_SETTINGS
) -> Path:
    """A real git repository with ``configs`` distinct Terminal-Bench smoke configs (and
    ``settings`` as its pyproject.toml, when given)."""
    bench = path / "benchmarks" / "tb"
    bench.mkdir(parents=True)
    for index in range(configs):
        (bench / f"c{index:02d}.toml").write_text(CONFIG.format(index=index, secret=secret))
    if settings is not None:
        (path / "pyproject.toml").write_text(settings)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"{configs} benchmark configs")
    return path


class RepoFactory:
    """Copies one template repository per scenario (cheaper than ``git init`` each time)."""

    def __init__(
        self, root: Path, configs: int, *, settings: str | None = RECOVERY_SETTINGS
    ) -> None:
        self.root = root
        self.configs = configs
        self.template = make_repo(root / "template", configs, settings=settings)
        self.count = 0

    def new(self) -> Path:
        self.count += 1
        target = self.root / f"repo-{self.count:03d}"
        shutil.copytree(self.template, target, symlinks=True)
        return target


# --------------------------------------------------------------------------- platform


@dataclass
class Server:
    """A loopback local Platform (fresh data dir) and its HTTP server thread."""

    platform: LocalPlatform
    handle: ServerHandle

    @property
    def url(self) -> str:
        return self.handle.url

    def close(self) -> None:
        self.handle.close()

    def calm(self) -> dict[str, int]:
        """Stop injecting faults (ground truth is read after the commands ran); returns
        what was injected until now."""
        counts = self.platform.fault_counts
        self.platform.faults = Faults(presign_ttl_s=self.platform.faults.presign_ttl_s)
        self.platform.injector = FaultInjector(self.platform.faults)
        return counts

    # -- ground truth, straight from the Platform's rows --------------------------------

    def runs(self) -> list[dict[str, Any]]:
        """Every run ever created in the workspace: id, name and the stored submit body."""
        rows = (
            self.platform.store.read()
            .execute(
                "SELECT r.id, r.name, r.body FROM runs r JOIN workspaces w "
                "ON w.id = r.workspace_id WHERE w.name = ? ORDER BY r.seq",
                (WORKSPACE,),
            )
            .fetchall()
        )
        return [{"id": r[0], "name": r[1], "body": json.loads(r[2])} for r in rows]

    def stopped(self) -> set[str]:
        """Ids of runs that were stopped (the Platform's own record of the stop)."""
        rows = (
            self.platform.store.read()
            .execute("SELECT id FROM runs WHERE stopped_at IS NOT NULL")
            .fetchall()
        )
        return {r[0] for r in rows}

    def _api(self, method: str, target: str, body: Any = None) -> Any:
        headers = {"Authorization": "Bearer local", "X-Osmosis-Workspace": WORKSPACE}
        raw = b""
        if body is not None:
            headers["Content-Type"] = "application/json"
            raw = json.dumps(body).encode()
        answer = self.platform.handle(method, target, headers, raw)
        assert answer.status == 200, (target, answer.status, answer.body[:200])
        return answer.json()

    def expected_outputs(self, run_id: str) -> dict[str, bytes] | None:
        """The exact bytes the Platform serves for a run's selected outputs (None: not yet)."""
        headers = {"Authorization": "Bearer local", "X-Osmosis-Workspace": WORKSPACE}
        target = (
            f"/api/cli/benchmark-runs/{quote(run_id)}/outputs/manifest"
            f"?types={','.join(DOWNLOAD_TYPES)}"
        )
        answer = self.platform.handle("GET", target, headers, b"")
        if answer.status != 200:
            return None
        files = answer.json().get("files") or []
        if not files:
            return {}
        urls = self._api(
            "POST",
            f"/api/cli/benchmark-runs/{quote(run_id)}/outputs/download-urls",
            {"items": [{"path": f["path"], "token": f.get("token")} for f in files]},
        )
        out: dict[str, bytes] = {}
        for item in urls["items"]:
            target = item["url"].split("://", 1)[1]
            target = target[target.index("/") :]
            got = self.platform.handle("GET", target, {}, b"")
            assert got.status == 200, (item["path"], got.status)
            out[item["path"]] = got.body
        sizes = {f["path"]: f["size"] for f in files}
        assert {p: len(b) for p, b in out.items()} == sizes, "Platform served other sizes"
        return out


def start_platform(
    data_dir: Path,
    *,
    speed: float = 5000.0,
    faults: Faults | None = None,
    secret_value: str = "sk-reliability-not-a-real-key",
    seed: int = 0,
) -> Server:
    """A fresh local Platform on a free loopback port, with the configs' secret set.
    ``seed`` fixes run ids and names, and so which runs the simulation lets fail."""
    platform = LocalPlatform(
        data_dir, speed=speed, seed=seed, faults=faults or Faults(), workspaces=(WORKSPACE,)
    )
    platform.set_secret(WORKSPACE, SECRET_NAME, secret_value)
    handle = serve(platform, quiet=True)
    return Server(platform, handle)


@contextmanager
def platform_server(data_dir: Path, **kwargs: Any) -> Iterator[Server]:
    server = start_platform(data_dir, **kwargs)
    try:
        yield server
    finally:
        server.close()


# --------------------------------------------------------------------------- the CLIs


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OSMOSIS_", "GITHUB_"))}
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


def command(tool: str, repo: Path, url: str, *args: str) -> list[str]:
    return [
        str(BIN / tool),
        "--dir",
        str(repo),
        "--platform",
        url,
        "--workspace",
        WORKSPACE,
        "--no-color",
        *args,
    ]


APPLY_ARGS = ("--auto-approve", "--wait", "--wait-timeout", "60", "--parallelism", "4")


def run(
    tool: str,
    repo: Path,
    url: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    # cwd: the repo, so anything written relative to it (a crash log) stays in the sandbox.
    return subprocess.run(
        command(tool, repo, url, *args),
        env=cli_env(env),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def spawn(
    tool: str, repo: Path, url: str, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(tool, repo, url, *args),
        env=cli_env(env),
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def killed(proc: subprocess.Popen[str]) -> bool:
    return proc.returncode == -signal.SIGKILL


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out, err


def kill_after(proc: subprocess.Popen[str], seconds: float) -> bool:
    """SIGKILL ``proc`` after ``seconds`` unless it already ended; True if it was killed."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
    finish(proc)
    return killed(proc)


def converge(repo: Path, url: str, *, max_rounds: int = 6) -> tuple[int, list[str]]:
    """Apply, then plan with --detailed-exitcode, until the plan is empty.

    Returns (rounds, transcript). ``rounds`` is ``max_rounds + 1`` when it never converged.
    """
    transcript: list[str] = []
    for rounds in range(1, max_rounds + 1):
        applied = run("osmosis-apply", repo, url, *APPLY_ARGS)
        transcript.append(f"apply rc={applied.returncode}\n{applied.stdout}\n{applied.stderr}")
        planned = run("osmosis-plan", repo, url, "--detailed-exitcode")
        transcript.append(f"plan rc={planned.returncode}\n{planned.stdout}\n{planned.stderr}")
        if planned.returncode == 0:
            return rounds, transcript
    return max_rounds + 1, transcript


# --------------------------------------------------------------------------- checks


@dataclass
class Findings:
    """Counts of broken guarantees; every field must stay 0."""

    duplicate_submits: int = 0
    never_submitted: int = 0
    missing_from_lockfile: int = 0
    lockfile_parse_failures: int = 0
    half_written_files: int = 0
    unconverged: int = 0
    details: list[str] = field(default_factory=list)

    def add(self, other: Findings) -> None:
        for name in (
            "duplicate_submits",
            "never_submitted",
            "missing_from_lockfile",
            "lockfile_parse_failures",
            "half_written_files",
            "unconverged",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.details.extend(other.details)

    def total(self) -> int:
        return (
            self.duplicate_submits
            + self.never_submitted
            + self.missing_from_lockfile
            + self.lockfile_parse_failures
            + self.half_written_files
            + self.unconverged
        )


def _index_of(body: Mapping[str, Any]) -> str | None:
    for agent in body.get("agents") or []:
        value = (agent.get("env") or {}).get("RELIABILITY_INDEX")
        if value is not None:
            return str(value)
    return None


def generation_of(body: Mapping[str, Any]) -> str:
    for agent in body.get("agents") or []:
        value = (agent.get("env") or {}).get("RELIABILITY_GEN")
        if value is not None:
            return str(value)
    return "1"


def change_every_config(repo: Path, configs: int) -> None:
    """Commit a new spec for every config (a second generation): each run must be replaced."""
    for index in range(configs):
        path = repo / "benchmarks" / "tb" / f"c{index:02d}.toml"
        text = CONFIG.format(index=index, secret=SECRET_NAME)
        path.write_text(text.replace("[agents.env]\n", '[agents.env]\nRELIABILITY_GEN = "2"\n'))
    git(repo, "commit", "-qam", "second generation of every config")


def check_replaced(repo: Path, server: Server, configs: int, findings: Findings) -> int:
    """After replacing every config: one run per (config, generation), every first-generation
    run stopped, every run recorded. Returns how many runs were stopped."""
    runs = server.runs()
    per_key = Counter((_index_of(r["body"]), generation_of(r["body"])) for r in runs)
    for key, count in per_key.items():
        if count > 1:
            findings.duplicate_submits += count - 1
            findings.details.append(f"{repo.name}: config {key} was submitted {count} times")
    for index in range(configs):
        for gen in ("1", "2"):
            if per_key.get((str(index), gen), 0) == 0:
                findings.never_submitted += 1
                findings.details.append(f"{repo.name}: config {index} gen {gen} never submitted")
    stopped = server.stopped()
    for r in runs:
        if generation_of(r["body"]) == "1" and r["id"] not in stopped:
            findings.never_submitted += 1  # a paid stop that never happened
            findings.details.append(f"{repo.name}: replaced run {r['name']} was never stopped")
    state = read_state(repo, server, findings, "after convergence")
    if state is not None:
        recorded = {e.run_id for e in state.runs.values() if e.run_id}
        recorded |= {h.run_id for h in state.history if h.run_id}
        for r in runs:
            if r["id"] not in recorded:
                findings.missing_from_lockfile += 1
                findings.details.append(f"{repo.name}: run {r['name']} is not in the lockfile")
    return len(stopped)


def read_state(repo: Path, server: Server, findings: Findings, when: str) -> Any:
    """Parse the lockfile the way the product reads it; a failure is counted, not raised."""
    try:
        return read_lockfile(repo / STATE, platform=server.url, workspace=WORKSPACE)
    except StateError as exc:
        findings.lockfile_parse_failures += 1
        findings.details.append(f"{repo.name} {when}: lockfile unreadable: {exc.message}")
        return None


def check_disk(
    repo: Path,
    server: Server,
    findings: Findings,
    when: str,
    expected_cache: dict[str, dict[str, bytes] | None],
) -> int:
    """Every file at a final path is complete; returns how many temp files are lying around.

    A final path is any name in a run directory or ``state/`` that is not one of the
    product's temp names. Its bytes must be exactly what the Platform serves for that run.
    """
    temps = 0
    state_dir = repo / STATE.parent
    if state_dir.is_dir():
        for entry in state_dir.iterdir():
            if _LOCK_TMP_RE.match(entry.name):
                temps += 1
            elif entry.name not in _STATE_FILES:
                findings.half_written_files += 1
                findings.details.append(f"{repo.name} {when}: unexpected {entry}")
    root = repo / DOWNLOADS
    if not root.is_dir():
        return temps
    by_name = {r["name"]: r["id"] for r in server.runs()}
    for run_dir in sorted(root.iterdir()):
        run_id = by_name.get(run_dir.name)
        if run_id is None:
            findings.half_written_files += 1
            findings.details.append(f"{repo.name} {when}: run dir of no run: {run_dir.name}")
            continue
        if run_id not in expected_cache or expected_cache[run_id] is None:
            expected_cache[run_id] = server.expected_outputs(run_id)
        expected = expected_cache[run_id] or {}
        for dirpath, _dirs, names in os.walk(run_dir):
            for name in names:
                full = Path(dirpath) / name
                rel = full.relative_to(run_dir).as_posix()
                if _PARTIAL_RE.match(name):
                    temps += 1
                    continue
                if rel not in expected or full.read_bytes() != expected[rel]:
                    findings.half_written_files += 1
                    findings.details.append(
                        f"{repo.name} {when}: {run_dir.name}/{rel} is not the served file "
                        f"({full.stat().st_size} bytes)"
                    )
    return temps


def check_converged(
    repo: Path,
    server: Server,
    configs: int,
    findings: Findings,
    expected_cache: dict[str, dict[str, bytes] | None],
) -> dict[str, int]:
    """The end state after recovery: one run per config, all recorded, all downloaded."""
    runs = server.runs()
    per_index = Counter(_index_of(r["body"]) for r in runs)
    for index, count in per_index.items():
        if count > 1:
            findings.duplicate_submits += count - 1
            findings.details.append(f"{repo.name}: config {index} was submitted {count} times")
    for number in range(configs):
        if per_index.get(str(number), 0) == 0:
            findings.never_submitted += 1
            findings.details.append(f"{repo.name}: config {index} never submitted")
    state = read_state(repo, server, findings, "after convergence")
    recorded: set[str] = set()
    if state is not None:
        recorded = {e.run_id for e in state.runs.values() if e.run_id}
        recorded |= {h.run_id for h in state.history if h.run_id}
    for r in runs:
        if r["id"] not in recorded:
            findings.missing_from_lockfile += 1
            findings.details.append(f"{repo.name}: run {r['name']} is not in the lockfile")
    temps = check_disk(repo, server, findings, "after convergence", expected_cache)
    downloaded = 0
    if state is not None:
        for entry in state.runs.values():
            if entry.downloads is not None and entry.downloads.complete:
                run_dir = repo / entry.downloads.directory
                expected = server.expected_outputs(entry.run_id or "") or {}
                present = {
                    p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file()
                }
                if set(expected) <= present:
                    downloaded += 1
    return {"runs": len(runs), "temps_left": temps, "downloaded": downloaded}


def wait_until(predicate: Any, timeout: float, interval: float = 0.005) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def lock_holder_details(text: str) -> bool:
    """Whether a lock-held message names the holder (pid, host) and the way out."""
    return bool(re.search(r"pid \d+", text)) and "--force-unlock" in text


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])
