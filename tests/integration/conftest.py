"""Fixtures for integration tests against the local Platform over real loopback HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reconciler.local_platform import LocalPlatform
from reconciler.local_platform.server import ServerHandle
from tests.support.clock import FakeClock
from tests.support.emulator import EmulatorProcess, serve, spawn_emulator, stop_process
from tests.support.osmosis import Platform, RequestLog, start_platform

TEST_TOKEN = "test-token-not-secret"


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

    def auth(self, workspace: str = "default", token: str | None = None) -> dict[str, str]:
        """Headers for a scoped request: bearer token (``token``: one of the server's
        users') and ``X-Osmosis-Workspace``."""
        return {"Authorization": f"Bearer {token or self.token}", "X-Osmosis-Workspace": workspace}


@pytest.fixture
def make_local_server(tmp_path: Path) -> Iterator[Callable[..., LocalServer]]:
    """Factory: ``make_local_server(**LocalPlatform kwargs)`` starts a server on port 0;
    ``users={token: User}`` (``users_from_specs(["alice-token=Alice"])``) makes each token a
    user, else the one token is ``TEST_TOKEN``."""
    started: list[ServerHandle] = []

    def make(data_dir: Path | None = None, **kwargs: Any) -> LocalServer:
        if not kwargs.get("users"):
            kwargs.setdefault("token", TEST_TOKEN)
        # Tests read one schedule (seed 0's); a data dir's own seed is random.
        kwargs.setdefault("seed", 0)
        directory = data_dir or tmp_path / f"local-platform-{len(started)}"
        platform = LocalPlatform(directory, **kwargs)
        handle = serve(platform)
        started.append(handle)
        return LocalServer(
            url=handle.url,
            platform=platform,
            token=next(iter(kwargs["users"]))
            if kwargs.get("users")
            else kwargs["token"] or "any-token",
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
def clock() -> FakeClock:
    """The Platform's wall clock, moved only by the test (runs stay active until then)."""
    return FakeClock()


@pytest.fixture
def platform(tmp_path: Path, clock: FakeClock) -> Iterator[Platform]:
    """A loopback local Platform on ``clock``, counting its requests (``platform.requests``)."""
    server = start_platform(tmp_path / "platform", clock=clock, access_log=RequestLog())
    yield server
    server.close()


@pytest.fixture
def start_emulator(tmp_path: Path) -> Iterator[Callable[..., EmulatorProcess]]:
    """Factory: start ``osmosis-platform-emulator serve --port 0 ...extra args``."""
    started: list[EmulatorProcess] = []

    def start(*extra: str, data_dir: Path | None = None) -> EmulatorProcess:
        started.append(spawn_emulator(data_dir or tmp_path / "emulator-data", *extra))
        return started[-1]

    yield start
    for emulator in started:
        stop_process(emulator.process)
