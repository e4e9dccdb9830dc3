"""The suite's guards (tests/support/guards.py) at work: here in this session, and in a pytest
run of its own started with a leaking environment, where each guard must bite."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.guards import SUITE_KNOBS, NetworkGuardError, hermetic_environ, is_loopback

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_home_and_xdg_are_in_a_temporary_directory_of_this_session() -> None:
    home = Path(os.environ["HOME"])
    assert home != Path(os.path.expanduser("~" + os.environ.get("USER", "root")))
    assert home.is_dir() and (home / ".gitconfig").is_file()
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert Path(os.environ[key]).is_relative_to(home), key
    assert Path.home() == home


def test_no_osmosis_setting_but_the_suites_knobs() -> None:
    leaked = {k for k in os.environ if k.startswith("OSMOSIS_")} - SUITE_KNOBS
    assert leaked == set()


def test_git_commits_with_the_sessions_identity(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("x\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "x"], check=True)
    author = subprocess.run(
        ["git", "-C", str(tmp_path), "log", "-1", "--format=%ae"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert author == "tests@osmosis-reconciler.invalid"


def test_hermetic_environ_drops_outside_settings(tmp_path: Path) -> None:
    env = hermetic_environ(
        {
            "HOME": "/home/dev",
            "OSMOSIS_TOKEN": "sk-from-the-shell",
            "OSMOSIS_REAL_CLI": "/opt/osmosis",
            "XDG_CONFIG_HOME": "/home/dev/.config",
            "PATH": "/usr/bin",
        },
        tmp_path / "home",
    )
    assert "OSMOSIS_TOKEN" not in env
    assert env["OSMOSIS_REAL_CLI"] == "/opt/osmosis"
    assert env["HOME"] == str(tmp_path / "home")
    assert env["XDG_CONFIG_HOME"] == str(tmp_path / "home" / ".config")
    assert env["PATH"] == "/usr/bin"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        (b"localhost", True),
        ("10.0.0.1", False),
        ("pypi.org", False),
        ("platform.osmosis.ai", False),
        ("::ffff:8.8.8.8", False),
    ],
)
def test_is_loopback(host: str | bytes, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_loopback_connections_pass_the_guard() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5):
            pass


PROBE = """
import os, socket
import pytest

def test_env():
    assert not [k for k in os.environ if k.startswith("OSMOSIS_")], os.environ
    assert os.environ["HOME"] != {real_home!r}
    assert os.environ["XDG_CACHE_HOME"].startswith(os.environ["HOME"])

def test_reaches_out():
    try:
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1: never routed
    except OSError:
        pass  # the guard's refusal looks like any network error to the code under test...

def test_looks_up_a_name():
    with pytest.raises(OSError):
        socket.getaddrinfo("pypi.org", 443)

@pytest.mark.needs_index
def test_marked():
    # Marked: the guard does not refuse (the connection itself may fail offline).
    try:
        socket.create_connection(("192.0.2.1", 443), timeout=0.2)
    except OSError as exc:
        assert "socket guard" not in str(exc)
"""


def test_a_session_with_a_leaking_environment_is_guarded(tmp_path: Path) -> None:
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    (probe_dir / "conftest.py").write_text(
        (PROJECT_ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    )
    (probe_dir / "test_probe.py").write_text(textwrap.dedent(PROBE.format(real_home="/home/dev")))
    (probe_dir / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    needs_index: the package index\n"
    )
    env = {
        # The suite's own knobs (make test sets OSMOSIS_REAL_CLI) are let through by design;
        # the probe shows only that the shell's OSMOSIS_* settings are not.
        **{k: v for k, v in os.environ.items() if not k.startswith("OSMOSIS_")},
        "HOME": "/home/dev",
        "XDG_CACHE_HOME": "/home/dev/.cache",
        "OSMOSIS_TOKEN": "sk-from-the-shell",
        "OSMOSIS_PLATFORM_URL": "https://platform.osmosis.ai",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-rA"],
        cwd=probe_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert "PASSED test_probe.py::test_env" in out, out
    assert "PASSED test_probe.py::test_marked" in out, out
    # ...but a test that tried fails all the same, naming what it tried.
    assert "ERROR at teardown of test_reaches_out" in out, out
    assert "network beyond loopback: a name lookup of '192.0.2.1'" in out, out
    assert "ERROR at teardown of test_looks_up_a_name" in out, out
    assert "network beyond loopback: a name lookup of 'pypi.org'" in out, out
    assert "ERROR at teardown of test_marked" not in out, out
    assert done.returncode != 0


def test_the_guard_error_is_an_os_error() -> None:
    # Code under test sees a refusal as a network failure (no packet leaves), not a crash.
    assert issubclass(NetworkGuardError, OSError)


def test_perf_and_reliability_are_deselected_unless_asked_for() -> None:
    # A bare run of a directory skips the 20 s perf test; `make perf`'s `-m perf` selects it.
    def collected(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", *args],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return [line for line in done.stdout.splitlines() if "::" in line]

    perf_test = "tests/unit/test_lockfile.py::test_perf_read_write_5000_entries"
    assert perf_test not in collected("tests/unit/test_lockfile.py")
    assert collected("-m", "perf", "tests/unit/test_lockfile.py") == [perf_test]
