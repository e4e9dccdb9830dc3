"""Builders shared by the end-to-end CLI tests: temp git repos, a loopback local Platform,
and runners for ``osmosis-plan`` / ``osmosis-apply`` (in-process through ``plan_main`` /
``apply_main``, or as real processes).

Everything is real: git repositories in ``tmp_path``, the local Platform served over
127.0.0.1, the CLI entry points the console scripts call.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.cli.apply import main as apply_main
from reconciler.cli.importing import main as import_main
from reconciler.cli.plan import main as plan_main
from reconciler.cli.state import main as state_main
from reconciler.local_platform import Faults, LocalPlatform, make_user
from reconciler.local_platform.server import ServerHandle
from reconciler.platform import PlatformClient
from tests.support.emulator import start_local_platform
from tests.support.git import commit, git

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT_ROOT / "benchmarks"
BIN_DIR = Path(sys.executable).parent
WORKSPACE = "e2e"
TOKEN = "e2e-token-do-not-print-0xC0FFEE"
COLLEAGUE_TOKEN = "e2e-colleague-token-0xBEEF"
TEAM = {TOKEN: make_user("E2E Runner", "e2e@example.com"), COLLEAGUE_TOKEN: make_user("Colleague")}
"""The users of every test Platform: this repository's runner and a colleague who works in
the same workspace by hand."""
SECRET_NAMES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "CURSOR_API_KEY",
    "MY_ENDPOINT_KEY",
    "HF_TOKEN",
)
SECRET_VALUE_PREFIX = "sk-e2e-secret-value-"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")


# --------------------------------------------------------------------------- git


def smoke_config(
    model: str = "openai/gpt-5.2",
    *,
    attempts: int = 1,
    task: str = "terminal-bench/git-multibranch",
    secret: str = "OPENAI_API_KEY",
    comment: str = "",
) -> str:
    """A small valid Terminal-Bench 2.1 config (one task, one agent)."""
    return (
        f"# {comment or 'smoke run'}\n"
        "[experiment]\n"
        'benchmark = "terminal-bench-2-1"\n\n'
        "[tasks]\n"
        f'task_names = ["{task}"]\n\n'
        "[[agents]]\n"
        'harness = "terminus-2"\n\n'
        "[agents.model]\n"
        'type = "provider"\n'
        f'model = "{model}"\n'
        f'api_key_secret = "{secret}"\n\n'
        "[execution]\n"
        f"attempts_per_task = {attempts}\n"
        "max_concurrent_attempts = 1\n"
    )


def init_repo(
    path: Path,
    *,
    examples: bool = False,
    configs: Mapping[str, str] | None = None,
    message: str = "Add configs",
    pyproject: str | None = None,
) -> Path:
    """A fresh git repo at ``path`` with the example configs and/or ``configs``
    (address -> TOML text) under ``benchmarks/``, committed once."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / ".gitignore").write_text(".osmosis/\n*.plan.json\n", encoding="utf-8")
    if examples:
        shutil.copytree(EXAMPLES, path / "benchmarks", dirs_exist_ok=True)
    for address, text in (configs or {}).items():
        write_config(path, address, text)
    if pyproject is not None:
        (path / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    commit(path, message)
    return path


def write_config(repo: Path, address: str, text: str) -> Path:
    target = repo / "benchmarks" / f"{address}.toml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def example_addresses() -> list[str]:
    return sorted(
        p.relative_to(EXAMPLES).with_suffix("").as_posix() for p in EXAMPLES.rglob("*.toml")
    )


def read_lock(repo: Path) -> dict[str, Any]:
    """The lockfile parsed with the standard library (proves it is valid TOML)."""
    with (repo / "state" / "osmosis.lock").open("rb") as fh:
        return tomllib.load(fh)


# --------------------------------------------------------------------------- platform


class RequestLog(io.StringIO):
    """An access log that counts requests (method and path, no query) for the figures (a
    StringIO for its type: the server takes an ``IO[str]``; what is written goes to
    ``lines``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines.extend(line for line in text.splitlines() if line)
        return len(text)

    def count(self, prefix: str = "") -> int:
        return sum(1 for line in self.lines if line.startswith(prefix))

    def reset(self) -> None:
        self.lines.clear()


@dataclass
class Platform:
    """A loopback local Platform for one test."""

    handle: ServerHandle
    platform: LocalPlatform
    workspace: str = WORKSPACE
    requests: RequestLog | None = None
    """The server's access log (method, path, status per line), when one was asked for."""

    @property
    def url(self) -> str:
        return self.handle.url

    def submits(self) -> int:
        return self.platform.submit_count(self.workspace)

    def client(self, token: str = TOKEN) -> PlatformClient:
        """A client as this repository's runner (``TOKEN``), or as another user."""
        return PlatformClient(self.url, token=token, workspace=self.workspace)

    def statuses(self) -> dict[str, str]:
        """Run id -> status, as the Platform lists them now."""
        with contextlib.closing(self.client()) as client:
            return {run.id: run.status for run in client.list_runs()}

    def delete_secret(self, name: str) -> None:
        with contextlib.closing(self.client()) as client:
            client.delete_secret(name, scope="workspace")

    def in_workspace(self, name: str) -> Platform:
        """The same server seen from another workspace (created, secrets seeded)."""
        with contextlib.closing(PlatformClient(self.url, token=TOKEN, workspace=name)) as c:
            c.list_secrets()  # the local Platform creates a workspace on first sight
        for secret in SECRET_NAMES:
            self.platform.set_secret(name, secret, SECRET_VALUE_PREFIX + secret.lower())
        return Platform(self.handle, self.platform, name, self.requests)

    def close(self) -> None:
        self.handle.close()


def start_platform(
    data_dir: Path,
    *,
    speed: float = 1.0,
    clock: Any = None,
    faults: Faults | None = None,
    secrets: bool = True,
    workspace: str = WORKSPACE,
    access_log: RequestLog | None = None,
) -> Platform:
    """Start a local Platform on 127.0.0.1:0 whose users are ``TEAM`` (``TOKEN`` and a
    colleague's token; no other token is accepted); seed the secrets the example configs
    reference (workspace scope, so both users' runs can use them)."""
    # seed 0: the tests read its schedules (a data dir's own seed is random).
    kwargs: dict[str, Any] = {
        "speed": speed,
        "seed": 0,
        "users": TEAM,
        "workspaces": (workspace,),
    }
    if clock is not None:
        kwargs["clock"] = clock
    if faults is not None:
        kwargs["faults"] = faults
    seeded = {name: SECRET_VALUE_PREFIX + name.lower() for name in SECRET_NAMES}
    handle = start_local_platform(
        data_dir, secrets={workspace: seeded} if secrets else {}, access_log=access_log, **kwargs
    )
    return Platform(handle, handle.platform, workspace, access_log)


# --------------------------------------------------------------------------- CLI


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err

    def json(self) -> Any:
        return json.loads(self.out)

    def __str__(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI call: no OSMOSIS_/GITHUB_ settings leak in from outside,
    the test token, the venv's bin dir first on PATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OSMOSIS_", "GITHUB_")) and k not in ("CI", "NO_COLOR")
    }
    env["OSMOSIS_TOKEN"] = TOKEN
    env["PATH"] = f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env


@contextlib.contextmanager
def _environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclass
class Osmosis:
    """Runs the two commands against one repo and one Platform.

    ``plan``/``apply`` call ``plan_main``/``apply_main`` in this process (stdout and stderr
    captured); ``run`` starts the console script as a real process.
    """

    repo: Path
    platform: Platform

    def common(self) -> list[str]:
        return [
            "--dir",
            str(self.repo),
            "--platform",
            self.platform.url,
            "--workspace",
            self.platform.workspace,
            "--no-color",
            "--log-format",
            "json",
        ]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return cli_env({"OSMOSIS_CRASH_LOG": str(self.repo.parent / "crash.log"), **(extra or {})})

    def _call(self, main: Any, args: list[str], env: Mapping[str, str] | None) -> Result:
        out, err = io.StringIO(), io.StringIO()
        with (
            _environ(self.env(env)),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = main([*self.common(), *args])
        result = Result(code, out.getvalue(), err.getvalue())
        _check_clean(result)
        return result

    def plan(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        return self._call(plan_main, list(args), env)

    def apply(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        return self._call(apply_main, list(args), env)

    def import_(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        return self._call(import_main, list(args), env)

    def state(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        return self._call(state_main, list(args), env)

    def command(self, name: str, *args: str) -> list[str]:
        return [str(BIN_DIR / name), *self.common(), *args]

    def run(
        self, name: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 60
    ) -> Result:
        done = subprocess.run(
            self.command(name, *args),
            env=self.env(env),
            text=True,
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        result = Result(done.returncode, done.stdout, done.stderr)
        _check_clean(result)
        return result

    def popen(
        self, name: str, *args: str, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(name, *args),
            env=self.env(env),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )


def _check_clean(result: Result) -> None:
    """Every CLI call: no crash (internal error), no token or secret value in any output."""
    assert "internal error" not in result.err, str(result)
    assert TOKEN not in result.text, "the token leaked into the output"
    assert SECRET_VALUE_PREFIX not in result.text, "a secret value leaked into the output"


def plan_items(result: Result) -> dict[str, dict[str, Any]]:
    """``address -> action`` from a ``--format json`` plan."""
    return {a["address"]: a for a in result.json()["actions"]}


def actions(result: Result) -> dict[str, str]:
    return {address: a["action"] for address, a in plan_items(result).items()}


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON log lines of a stream (other lines are skipped)."""
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
    return lines


class LineReader:
    """Collects a process's output lines on a thread, so a test can wait for a line."""

    def __init__(self, stream: Any) -> None:
        import threading

        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    @property
    def text(self) -> str:
        with self._cond:
            return "".join(self.lines)

    def wait_for(self, needle: str, *, timeout: float, count: int = 1) -> str:
        """Wait until ``needle`` occurs ``count`` times in the output; returns the output."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while "".join(self.lines).count(needle) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._done:
                    raise AssertionError(
                        f"{needle!r} (x{count}) not seen within {timeout}s; got:\n"
                        + "".join(self.lines)
                    )
                self._cond.wait(left)
            return "".join(self.lines)

    def finish(self, timeout: float = 10) -> str:
        self._thread.join(timeout)
        return self.text
