"""The suite's guards, installed by ``tests/conftest.py`` for every test session.

* **A home of its own.** ``HOME`` and the XDG base directories point into one temporary
  directory per session (per xdist worker), with a ``.gitconfig`` that gives git a test
  identity: nothing reads or writes the developer's dotfiles, and a test passes the same on a
  laptop with a signing key configured and on a fresh CI machine.
* **No settings from outside.** Every ``OSMOSIS_*`` variable is removed for the session, so a
  token or a Platform URL exported in the developer's shell never reaches a test (nor the
  subprocesses it starts). The exceptions are the suite's own knobs in ``SUITE_KNOBS``: the
  tests read them, the reconciler never does.
* **No network beyond loopback.** A socket guard refuses, in this process, every connection and
  name lookup that is not loopback (127.0.0.0/8, ::1, ``localhost``, Unix sockets), answers
  the caller with an ``OSError`` (no packet leaves) and fails the test that tried. A test
  that needs the package index says so with ``@pytest.mark.needs_index``.

Subprocesses are not under the socket guard (they inherit the environment guards only).
Under ``make coverage`` they are measured too (the environment carries coverage's settings);
``without_coverage`` takes them out for the child a test must see alone.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SUITE_KNOBS = frozenset(
    {
        "OSMOSIS_REAL_CLI",  # the real osmosis executable (make test sets it)
        "OSMOSIS_RELIABILITY_FIGURES",  # where make reliability saves its figures
        "OSMOSIS_TEST_CHROMIUM",  # a chromium binary for the browser tests
    }
)
XDG_DIRS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_RUNTIME_DIR": "run",
}
GITCONFIG = """\
[user]
\tname = Osmosis Tests
\temail = tests@osmosis-reconciler.invalid
[init]
\tdefaultBranch = main
[commit]
\tgpgsign = false
[tag]
\tgpgsign = false
"""


COVERAGE_VARIABLES = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")
"""What makes coverage start in a Python child (``[tool.coverage.run] patch``)."""


def without_coverage(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (by default this process's) for a child coverage must not measure: one whose
    imports are the test's subject (coverage brings sqlite3 along) or that runs where
    coverage cannot write its data (a file-size limit). Outside ``make coverage`` the same."""
    source = dict(os.environ) if env is None else env
    return {key: value for key, value in source.items() if key not in COVERAGE_VARIABLES}


class NetworkGuardError(OSError):
    """A test tried to reach beyond loopback without ``@pytest.mark.needs_index``."""


def hermetic_environ(environ: dict[str, str], home: Path) -> dict[str, str]:
    """``environ`` with ``HOME`` and the XDG directories under ``home`` (created) and no
    ``OSMOSIS_*`` setting but the suite's knobs."""
    env = {
        key: value
        for key, value in environ.items()
        if not key.startswith("OSMOSIS_") or key in SUITE_KNOBS
    }
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    for key, relative in XDG_DIRS.items():
        directory = home / relative
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[key] = str(directory)
    (home / ".gitconfig").write_text(GITCONFIG, encoding="utf-8")
    # A system gitconfig could still sign or hook; the session's own is the only one read.
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def is_loopback(host: object) -> bool:
    """True for a loopback address or name (``localhost``, 127.0.0.0/8, ``::1``)."""
    if not isinstance(host, str | bytes):
        return False
    name = host.decode() if isinstance(host, bytes) else host
    name = name.strip("[]").split("%", 1)[0].rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class SocketGuard:
    """Refuses connections and lookups beyond loopback; remembers each attempt."""

    def __init__(self) -> None:
        self.allow_network = False
        self.attempts: list[str] = []
        self._connect = socket.socket.connect
        self._connect_ex = socket.socket.connect_ex
        self._getaddrinfo = socket.getaddrinfo

    def _check(self, host: object, what: str) -> None:
        if self.allow_network or host is None or is_loopback(host):
            return
        attempt = f"{what} {host!r}"
        self.attempts.append(attempt)
        raise NetworkGuardError(
            f"the test suite's socket guard refused {attempt}: tests reach only loopback "
            "(mark a test @pytest.mark.needs_index if it needs the package index)"
        )

    def install(self) -> None:
        guard = self

        def connect(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                guard._check(address[0], "a connection to")
            guard._connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                guard._check(address[0], "a connection to")
            return guard._connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            guard._check(host, "a name lookup of")
            return guard._getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = getaddrinfo

    def uninstall(self) -> None:
        socket.socket.connect = self._connect  # type: ignore[method-assign]
        socket.socket.connect_ex = self._connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = self._getaddrinfo


GUARD = SocketGuard()


# --------------------------------------------------------------------------- pytest hooks


def pytest_configure(config: pytest.Config) -> None:
    GUARD.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    GUARD.uninstall()


@pytest.fixture(scope="session", autouse=True)
def hermetic_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOME and XDG in a temp dir, no outside ``OSMOSIS_*``: for the whole session."""
    home = tmp_path_factory.mktemp("home")
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(hermetic_environ(saved, home))
    try:
        yield home
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(autouse=True)
def loopback_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that tried to reach beyond loopback (unless it needs the index)."""
    GUARD.allow_network = request.node.get_closest_marker("needs_index") is not None
    before = len(GUARD.attempts)
    try:
        yield
    finally:
        GUARD.allow_network = False
    tried = GUARD.attempts[before:]
    if tried:
        pytest.fail("network beyond loopback: " + "; ".join(tried), pytrace=False)
