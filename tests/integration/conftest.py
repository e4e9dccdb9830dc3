"""Fixtures for integration tests against the local Platform over real loopback HTTP."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reconciler.platform.local import LocalPlatform, start_server
from reconciler.platform.local.server import ServerHandle
from tests.support.browser import browser_page  # noqa: F401  (the page tests' fixture)

from .helpers import ManualClock, Platform, RequestLog, start_platform

TEST_TOKEN = "test-token-not-secret"


class FakeClock:
    """A wall clock that only moves when a test says so (no sleeping, no timed asserts)."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class LocalServer:
    """A running loopback local Platform: ``url``, ``platform``, ``token``."""

    url: str
    platform: LocalPlatform
    token: str
    handle: ServerHandle
    data_dir: Path
    clock: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    def auth(self, workspace: str = "default") -> dict[str, str]:
        """Headers for a scoped request: bearer token and ``X-Osmosis-Workspace``."""
        return {"Authorization": f"Bearer {self.token}", "X-Osmosis-Workspace": workspace}


@pytest.fixture
def make_local_server(tmp_path: Path) -> Iterator[Callable[..., LocalServer]]:
    """Factory: ``make_local_server(**LocalPlatform kwargs)`` starts a server on port 0."""
    started: list[ServerHandle] = []

    def make(data_dir: Path | None = None, **kwargs: Any) -> LocalServer:
        kwargs.setdefault("token", TEST_TOKEN)
        directory = data_dir or tmp_path / f"local-platform-{len(started)}"
        platform = LocalPlatform(directory, **kwargs)
        handle = start_server(platform, "127.0.0.1", 0)
        started.append(handle)
        return LocalServer(
            url=handle.url,
            platform=platform,
            token=kwargs["token"] or "any-token",
            handle=handle,
            data_dir=directory,
            clock=kwargs.get("clock"),
        )

    yield make
    for handle in started:
        handle.close()


@pytest.fixture
def local_server(make_local_server: Callable[..., LocalServer]) -> LocalServer:
    """A loopback local Platform with a fixed token, real clock, speed 1."""
    return make_local_server()


@pytest.fixture
def clock() -> ManualClock:
    """The Platform's wall clock, moved only by the test (runs stay active until then)."""
    return ManualClock()


@pytest.fixture
def platform(tmp_path: Path, clock: ManualClock) -> Iterator[Platform]:
    """A loopback local Platform on ``clock``, counting its requests (``platform.requests``)."""
    server = start_platform(tmp_path / "platform", clock=clock, access_log=RequestLog())
    yield server
    server.close()


@dataclass
class EmulatorProcess:
    """``osmosis-platform-emulator serve`` running as a subprocess."""

    process: subprocess.Popen[str]
    url: str
    data_dir: Path


def emulator_command() -> list[str]:
    """The console script when installed, else the module (same ``main``)."""
    script = shutil.which("osmosis-platform-emulator", path=str(Path(sys.executable).parent))
    if script:
        return [script]
    return [sys.executable, "-m", "reconciler.platform.local.server"]


@pytest.fixture
def start_emulator(tmp_path: Path) -> Iterator[Callable[..., EmulatorProcess]]:
    """Factory: start ``osmosis-platform-emulator serve --port 0 ...extra args``."""
    procs: list[subprocess.Popen[str]] = []

    def start(*extra: str, data_dir: Path | None = None) -> EmulatorProcess:
        directory = data_dir or tmp_path / "emulator-data"
        cmd = [*emulator_command(), "serve", "--port", "0", "--data", str(directory), *extra]
        env = {k: v for k, v in os.environ.items() if not k.startswith("OSMOSIS_")}
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            proc.kill()
            raise AssertionError(f"emulator did not start: {line!r} {proc.stderr.read()}")
        return EmulatorProcess(proc, line.split()[-1], directory)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
