"""The real ``osmosis`` CLI (osmosis-ai 0.3.8, Python 3.12+) against the loopback server.

Opt-in: set ``OSMOSIS_REAL_CLI`` to the ``osmosis`` executable of an environment that has
osmosis-ai installed (it cannot be a project dependency: it needs Python 3.12). Skipped
otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.clock import FakeClock

from .conftest import LocalServer

CLI = os.environ.get("OSMOSIS_REAL_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="set OSMOSIS_REAL_CLI to an osmosis executable")

CONFIG = """\
[experiment]
benchmark = "terminal-bench-2-1"
[tasks]
categories = ["games"]
[[agents]]
harness = "codex"
[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
[execution]
attempts_per_task = 2
"""


def osmosis(server: LocalServer, cwd: Path, *args: str, stdin: str | None = None) -> Any:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "OSMOSIS_PLATFORM_URL": server.url,
        "OSMOSIS_TOKEN": server.token,
        "OSMOSIS_TOKEN_PLATFORM_URL": server.url,
        "NO_PROXY": "127.0.0.1",
        "MY_KEY": "sk-real-cli-test",
    }
    done = subprocess.run(
        [str(CLI), "--json", "--workspace", "default", *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done


def test_real_cli_lifecycle(make_local_server: Any, tmp_path: Path) -> None:
    clock = FakeClock()
    server = make_local_server(clock=clock)
    set_secret = osmosis(
        server,
        tmp_path,
        "secret",
        "set",
        "OPENAI_API_KEY",
        "--scope",
        "workspace",
        "--env",
        "MY_KEY",
    )
    assert set_secret.returncode == 0, set_secret.stderr
    listed = osmosis(server, tmp_path, "benchmark", "list")
    assert listed.returncode == 0 and len(json.loads(listed.stdout)["items"]) == 9
    info = osmosis(server, tmp_path, "benchmark", "info", "hle")
    assert json.loads(info.stdout)["data"]["benchmark"]["task_sets"][0]["task_count"] == 249
    (tmp_path / "tb.toml").write_text(CONFIG)
    submitted = osmosis(server, tmp_path, "benchmark", "submit", "tb.toml", "--yes")
    assert submitted.returncode == 0, submitted.stderr
    name = json.loads(submitted.stdout)["resource"]["name"]
    early = osmosis(server, tmp_path, "benchmark", "runs", "download", name)
    assert early.returncode != 0 and "not yet available" in early.stderr
    clock.advance(10_000)
    runs = osmosis(server, tmp_path, "benchmark", "runs", "list")
    assert json.loads(runs.stdout)["items"][0]["name"] == name
    detail = osmosis(server, tmp_path, "benchmark", "runs", "info", name)
    assert json.loads(detail.stdout)["data"]["benchmark_run"]["status"] in ("finished", "failed")
    logs = osmosis(server, tmp_path, "benchmark", "runs", "logs", name, "--limit", "5")
    assert logs.returncode == 0 and len(json.loads(logs.stdout)["items"]) == 5
    download = osmosis(server, tmp_path, "benchmark", "runs", "download", name, "--type", "all")
    assert download.returncode == 0, download.stderr
    assert json.loads(download.stdout)["resource"]["files_failed"] == []
    stop = osmosis(server, tmp_path, "benchmark", "runs", "stop", name, "--yes")
    assert stop.returncode != 0 and "already" in stop.stderr
