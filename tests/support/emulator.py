"""The emulator (the local Platform) started and stopped one way for every suite.

In this process: ``start_local_platform`` builds a ``LocalPlatform`` on a data directory, sets
the secrets a test's configs name and serves it on a free loopback port; the ``ServerHandle``
it returns has ``url``, ``platform`` and ``close()`` (and is a context manager). ``serve`` does
the serving alone, for a platform a test built itself (a subclass, a seeded store).

As a process: ``spawn_emulator`` runs ``osmosis-platform-emulator serve --port 0`` (what a
user runs) and waits for its ``listening on`` line; ``stop_process`` ends it by its own handle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from reconciler.local_platform import LocalPlatform, start_server
from reconciler.local_platform.server import ServerHandle


def serve(
    platform: LocalPlatform, *, access_log: IO[str] | None = None, quiet: bool = False
) -> ServerHandle:
    """Serve ``platform`` on 127.0.0.1 and a free port.

    ``quiet``: a client killed mid-response (the crash suites' point) makes the server's
    write fail with a broken pipe; that is expected there, so socketserver does not print it.
    """
    handle = start_server(platform, "127.0.0.1", 0, access_log=access_log)
    if quiet:
        handle.server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    return handle


def start_local_platform(
    data_dir: Path,
    *,
    secrets: Mapping[str, Mapping[str, str]] | None = None,
    access_log: IO[str] | None = None,
    quiet: bool = False,
    platform_class: type[LocalPlatform] = LocalPlatform,
    **platform_kwargs: Any,
) -> ServerHandle:
    """A ``platform_class(data_dir, **platform_kwargs)`` with ``secrets`` (workspace -> name
    -> value) set, served on loopback. Close the handle (or use it in ``with``) when done."""
    platform = platform_class(data_dir, **platform_kwargs)
    for workspace, values in (secrets or {}).items():
        for name, value in values.items():
            platform.set_secret(workspace, name, value)
    return serve(platform, access_log=access_log, quiet=quiet)


# --------------------------------------------------------------------------- as a process


def emulator_command() -> list[str]:
    """The console script when installed, else the module (the same ``main``)."""
    script = shutil.which("osmosis-platform-emulator", path=str(Path(sys.executable).parent))
    if script:
        return [script]
    return [sys.executable, "-m", "reconciler.local_platform.cli"]


@dataclass
class EmulatorProcess:
    """``osmosis-platform-emulator serve`` running as a subprocess."""

    process: subprocess.Popen[str]
    url: str
    data_dir: Path


def spawn_emulator(data_dir: Path, *extra: str) -> EmulatorProcess:
    """Start ``osmosis-platform-emulator serve --port 0 --data data_dir *extra`` and wait
    until it listens. The caller stops it with ``stop_process(emulator.process)``."""
    cmd = [*emulator_command(), "serve", "--port", "0", "--data", str(data_dir), *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSMOSIS_")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        message = proc.stderr.read()
        stop_process(proc)
        raise AssertionError(f"the emulator did not start: {line!r} {message}")
    return EmulatorProcess(proc, line.split()[-1], data_dir)


def stop_process(proc: subprocess.Popen[str]) -> None:
    """Terminate a process the test started (by its own handle), then reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
