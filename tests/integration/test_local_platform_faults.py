"""Fault knobs, multi-process safety, the in-process transport and the emulator command."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.local_platform import Faults, LocalPlatform, LocalTransport
from tests.support.bodies import tb_body
from tests.support.clock import FakeClock
from tests.support.emulator import EmulatorProcess, emulator_command

from .conftest import TEST_TOKEN, LocalServer

BODY = tb_body()


def faulty(make_local_server: Any, **knobs: Any) -> LocalServer:
    server = make_local_server(faults=Faults(**knobs))
    server.platform.set_secret("default", "OPENAI_API_KEY", "sk-x")
    return server


def test_error_rate_answers_5xx_with_a_json_body(make_local_server: Any) -> None:
    server = faulty(make_local_server, error_rate=0.5, seed=3)
    statuses = [
        httpx.get(f"{server.url}/api/cli/benchmarks?limit=1", headers=server.auth())
        for _ in range(40)
    ]
    errors = [r for r in statuses if r.status_code >= 500]
    assert 0 < len(errors) < 40
    assert len(errors) == server.platform.fault_counts["error"]
    assert {r.status_code for r in errors} <= {500, 502, 503}
    assert all(r.json()["error"] for r in errors)
    assert all(r.status_code == 200 for r in statuses if r not in errors)


def test_faults_are_deterministic_given_their_seed(tmp_path: Path) -> None:
    def pattern(directory: str) -> list[int]:
        platform = LocalPlatform(
            tmp_path / directory, faults=Faults(error_rate=0.3, rate_limit_rate=0.2, seed=11)
        )
        headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
        return [
            platform.handle("GET", "/api/cli/benchmarks?limit=1", headers).status for _ in range(30)
        ]

    first = pattern("a")
    assert first == pattern("b")
    assert {200, 429} <= set(first)


def test_rate_limit_answers_429_with_retry_after(make_local_server: Any) -> None:
    server = faulty(make_local_server, rate_limit_rate=1.0, retry_after_s=7)
    r = httpx.get(f"{server.url}/api/cli/benchmark-runs", headers=server.auth())
    assert r.status_code == 429 and r.headers["Retry-After"] == "7"
    assert r.json()["error"]
    posted = httpx.post(f"{server.url}/api/cli/benchmark-runs", headers=server.auth(), json=BODY)
    assert posted.status_code == 429
    assert server.platform.submit_count() == 0
    assert server.platform.fault_counts["rate_limit"] == 2


def test_drop_rate_closes_the_connection_without_a_response(make_local_server: Any) -> None:
    server = faulty(make_local_server, drop_rate=1.0)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{server.url}/api/cli/benchmark-runs", headers=server.auth(), json=BODY)
    assert server.platform.fault_counts["drop"] == 1
    assert server.platform.submit_count() == 0  # dropped before anything was done


def test_drop_after_submit_commits_the_run_then_drops(make_local_server: Any) -> None:
    server = faulty(make_local_server, drop_after_submit_rate=1.0)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(f"{server.url}/api/cli/benchmark-runs", headers=server.auth(), json=BODY)
    assert server.platform.submit_count("default") == 1
    assert server.platform.fault_counts["drop_after_submit"] == 1
    listed = httpx.get(f"{server.url}/api/cli/benchmark-runs", headers=server.auth()).json()
    assert listed["total_count"] == 1 and listed["benchmark_runs"][0]["status"] == "pending"
    # Only successful submits are dropped: a rejected one answers normally.
    bad = httpx.post(
        f"{server.url}/api/cli/benchmark-runs",
        headers=server.auth(),
        json={**BODY, "experiment_config": {"benchmark": "nope"}},
    )
    assert bad.status_code == 404 and server.platform.submit_count() == 1


def test_in_process_transport_raises_the_same_protocol_error(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path / "p", faults=Faults(drop_after_submit_rate=1.0))
    platform.set_secret("default", "OPENAI_API_KEY", "sk-x")
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    with httpx.Client(
        transport=LocalTransport(platform), base_url="http://localhost", headers=headers
    ) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            c.post("/api/cli/benchmark-runs", json=BODY)
        assert c.get("/api/cli/benchmark-runs").json()["total_count"] == 1
    assert platform.submit_count() == 1


def test_latency_and_spikes(make_local_server: Any) -> None:
    server = faulty(
        make_local_server, latency_ms=60, latency_spike_ms=1, latency_spike_rate=0.5, seed=5
    )
    started = time.monotonic()
    for _ in range(10):
        assert (
            httpx.get(f"{server.url}/api/cli/benchmarks?limit=1", headers=server.auth()).status_code
            == 200
        )
    assert time.monotonic() - started >= 0.6  # a lower bound only: never flaky
    assert 0 < server.platform.fault_counts["latency_spike"] < 10


def test_after_submit_delay_happens_after_the_commit(tmp_path: Path) -> None:
    platform = LocalPlatform(tmp_path / "p", faults=Faults(after_submit_delay_ms=300))
    platform.set_secret("default", "OPENAI_API_KEY", "sk-x")
    observer = LocalPlatform(tmp_path / "p")
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    import threading

    answer: list[int] = []
    thread = threading.Thread(
        target=lambda: answer.append(
            platform.handle(
                "POST", "/api/cli/benchmark-runs", headers, json.dumps(BODY).encode()
            ).status
        )
    )
    thread.start()
    seen_during_delay = 0
    deadline = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < deadline:
        seen_during_delay = max(seen_during_delay, observer.submit_count())
        if answer:
            break
        time.sleep(0.01)
    thread.join()
    # The run was visible to another connection before the answer was sent.
    assert seen_during_delay == 1 and answer == [200]


def test_presigned_downloads_are_never_faulted(tmp_path: Path, make_local_server: Any) -> None:
    data = tmp_path / "shared"
    clock = FakeClock()
    clean = LocalPlatform(data, clock=clock)
    clean.set_secret("default", "OPENAI_API_KEY", "sk-x")
    broken = make_local_server(data_dir=data, faults=Faults(error_rate=1.0, drop_rate=0.0))
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    with httpx.Client(
        transport=LocalTransport(clean), base_url="http://localhost", headers=headers
    ) as c:
        run = c.post("/api/cli/benchmark-runs", json=BODY).json()
        clock.advance(10_000)
        assert c.get(f"/api/cli/benchmark-runs/{run['id']}").json()["benchmark_run"]["status"] in (
            "finished",
            "failed",
        )
        item = c.post(
            f"/api/cli/benchmark-runs/{run['id']}/outputs/download-urls",
            json={"items": [{"path": "summary.csv"}]},
        ).json()["items"][0]
    # Same data dir, same signing key: the faulty server serves the object.
    url = item["url"].replace("http://localhost", broken.url)
    assert httpx.get(url).status_code == 200
    assert httpx.get(f"{broken.url}/api/cli/benchmarks", headers=broken.auth()).status_code >= 500


def test_feature_gate_counts(make_local_server: Any) -> None:
    server = faulty(make_local_server, benchmarks_disabled=True)
    r = httpx.get(f"{server.url}/api/cli/benchmark-runs", headers=server.auth())
    assert r.status_code == 403 and server.platform.fault_counts["feature_gate"] == 1


# --------------------------------------------------------------------------- processes

WORKER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from reconciler.local_platform import LocalPlatform
    data, n, tag, body = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4].encode()
    platform = LocalPlatform(data, seed=0)
    platform.set_secret("default", "OPENAI_API_KEY", "sk-" + tag)
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    ids = []
    for _ in range(n):
        r = platform.handle("POST", "/api/cli/benchmark-runs", headers, body)
        assert r.status == 200, r.body
        ids.append(r.json()["id"])
    print(json.dumps(ids))
    """
)


def test_two_processes_submit_concurrently_into_one_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "shared"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(data), "15", tag, json.dumps(BODY)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("a", "b")
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    ids = [i for out, _ in outputs for i in json.loads(out)]
    assert len(ids) == len(set(ids)) == 30
    platform = LocalPlatform(data)
    assert platform.submit_count() == 30
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    names = [
        r["name"]
        for r in platform.handle("GET", "/api/cli/benchmark-runs?limit=50", headers).json()[
            "benchmark_runs"
        ]
    ]
    assert len(names) == len(set(names)) == 30


def test_opening_a_new_data_dir_waits_for_a_writer_of_the_fresh_database(tmp_path: Path) -> None:
    # A fresh database is in rollback-journal mode; while another process writes it (say,
    # creating the schema), the switch to WAL fails at once with "database is locked":
    # SQLite does not consult the busy handler there. Opening must wait, not crash.
    data = tmp_path / "fresh"
    data.mkdir()
    writer = sqlite3.connect(data / "platform.sqlite3", isolation_level=None)
    writer.execute("CREATE TABLE early (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO early VALUES (1)")
    opened: list[object] = []
    thread = threading.Thread(target=lambda: opened.append(LocalPlatform(data)))
    thread.start()
    time.sleep(0.3)
    assert opened == []  # still waiting for the writer
    writer.execute("COMMIT")
    writer.close()
    thread.join(timeout=30)
    assert len(opened) == 1
    mode = sqlite3.connect(data / "platform.sqlite3").execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal",)


def test_state_survives_a_restart(tmp_path: Path) -> None:
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    first = LocalPlatform(tmp_path / "d")
    first.set_secret("default", "OPENAI_API_KEY", "sk")
    run = first.handle("POST", "/api/cli/benchmark-runs", headers, json.dumps(BODY).encode()).json()
    first.store.close()
    second = LocalPlatform(tmp_path / "d")
    again = second.handle("GET", f"/api/cli/benchmark-runs/{run['name']}", headers).json()
    assert again["benchmark_run"]["id"] == run["id"]
    next_run = second.handle(
        "POST", "/api/cli/benchmark-runs", headers, json.dumps(BODY).encode()
    ).json()
    assert next_run["name"] != run["name"]


# --------------------------------------------------------------------------- the command


def test_serve_starts_and_answers_with_its_token(start_emulator: Any, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    started = time.monotonic()
    emu: EmulatorProcess = start_emulator(
        "--token", TEST_TOKEN, "--speed", "50", "--access-log", str(log)
    )
    startup = time.monotonic() - started
    auth = {"Authorization": f"Bearer {TEST_TOKEN}", "X-Osmosis-Workspace": "default"}
    ok = httpx.get(f"{emu.url}/api/cli/benchmarks", params={"limit": 2}, headers=auth)
    denied = httpx.get(f"{emu.url}/api/cli/benchmarks", headers={"X-Osmosis-Workspace": "default"})
    assert ok.status_code == 200 and len(ok.json()["benchmarks"]) == 2
    assert denied.status_code == 401
    emu.process.terminate()
    emu.process.wait(timeout=10)
    lines = log.read_text().splitlines()
    assert lines[0].startswith("GET /api/cli/benchmarks 200 ") and lines[0].endswith("ms")
    assert "limit" not in lines[0] and TEST_TOKEN not in log.read_text()
    assert lines[1].startswith("GET /api/cli/benchmarks 401 ")
    print(f"emulator start-up to 'listening' line: {startup:.3f}s")


def test_serve_fault_flags_and_strict_workspaces(start_emulator: Any) -> None:
    emu = start_emulator(
        "--strict-workspaces",
        "--workspace",
        "acme",
        "--benchmarks-disabled",
        "--rate-limit-rate",
        "0",
    )
    auth = {"Authorization": "Bearer any"}
    gated = httpx.get(
        f"{emu.url}/api/cli/benchmarks", headers={**auth, "X-Osmosis-Workspace": "acme"}
    )
    assert gated.status_code == 403
    unknown = httpx.get(
        f"{emu.url}/api/cli/environment-secrets", headers={**auth, "X-Osmosis-Workspace": "other"}
    )
    assert (
        unknown.status_code == 403
        and unknown.json()["code"] == "WORKSPACE_SCOPE_HEADER_ACCESS_DENIED"
    )


def test_secret_set_command_stores_through_the_route(tmp_path: Path) -> None:
    data = tmp_path / "d"
    value = "stdin-secret-5d2e"
    done = subprocess.run(
        [*emulator_command(), "secret", "set", "OPENAI_API_KEY", "--data", str(data), "--workspace", "acme",
         "--scope", "workspace"],
        input=value + "\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert value not in done.stdout + done.stderr
    env_done = subprocess.run(
        # No --scope: personal, the Platform's default (platform-api.md S2).
        [*emulator_command(), "secret", "set", "HF_TOKEN", "--data", str(data), "--workspace", "acme",
         "--from-env", "MY_HF"],
        env={"MY_HF": "hf-value", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert env_done.returncode == 0, env_done.stderr
    bad = subprocess.run(
        [*emulator_command(), "secret", "set", "lower", "--data", str(data)],
        input="v", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode != 0
    platform = LocalPlatform(data)
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "acme"}
    listed = platform.handle("GET", "/api/cli/environment-secrets?scope=all", headers).json()
    assert {(s["name"], s["scope"]) for s in listed["environment_secrets"]} == {
        ("OPENAI_API_KEY", "workspace"),
        ("HF_TOKEN", "user"),
    }
    platform.store.close()
    assert all(value.encode() not in p.read_bytes() for p in data.iterdir())


def test_benchmark_sync_command(tmp_path: Path) -> None:
    data = tmp_path / "d"
    done = subprocess.run(
        [*emulator_command(), "benchmark", "sync", "acme/custom@1.0", "--data", str(data), "--status", "ready"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    platform = LocalPlatform(data)
    spec = platform.resolve_benchmark("acme/custom")
    assert spec is not None and spec["sync_status"] == "ready" and spec["task_count"] == 120


def _emulator(*args: str, stdin: str = "", env: dict[str, str] | None = None):
    return subprocess.run(
        [*emulator_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


def test_benchmark_list_and_info_show_the_catalog(tmp_path: Path, local_server) -> None:
    data = tmp_path / "d"
    listed = _emulator("benchmark", "list", "--data", str(data))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["KEY", "NAME", "TASKS", "SYNC"]
    assert any(line.split()[:2] == ["terminal-bench-2-1", "Terminal-Bench"] for line in lines)
    assert any("acme/custom@1.0" in line and "syncing (45/120)" in line for line in lines)
    assert any("acme/broken-eval@0.3" in line and "unavailable" in line for line in lines)

    info = _emulator("benchmark", "info", "hle", "--data", str(data))
    assert info.returncode == 0, info.stderr
    assert "parity (249, recommended)" in info.stdout
    assert "Required Secrets  HF_TOKEN" in info.stdout
    assert "required (default: openai/gpt-5)" in info.stdout
    tickets = _emulator(
        "benchmark", "info", "acme/support-tickets@2.0", "--tasks", "--data", str(data)
    )
    assert "2 (Fixture files missing from the 2.0 release)" in tickets.stdout
    assert "acme/support-tickets/billing-00" in tickets.stdout
    missing = _emulator("benchmark", "info", "nope", "--data", str(data))
    assert missing.returncode == 1 and "was not found" in missing.stderr

    # The same over HTTP from a running server, with the server's token.
    env = {"OSMOSIS_TOKEN": local_server.token}
    remote = _emulator("benchmark", "list", "--json", "--platform", local_server.url, env=env)
    assert remote.returncode == 0, remote.stderr
    assert len(json.loads(remote.stdout)) == 9
    refused = _emulator(
        "benchmark", "list", "--platform", local_server.url, env={"OSMOSIS_TOKEN": "x"}
    )
    assert refused.returncode == 1 and "token" in refused.stderr.lower()


def test_secret_set_and_sync_reach_a_running_server(local_server) -> None:
    env = {"OSMOSIS_TOKEN": local_server.token}
    done = _emulator(
        "secret", "set", "GEMINI_API_KEY", "--scope", "workspace", "--git", "acme/evals",
        "--platform", local_server.url, stdin="gm-value-1\n", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "gm-value-1" not in done.stdout + done.stderr
    listed = local_server.platform.handle(
        "GET",
        "/api/cli/environment-secrets?scope=workspace",
        {"Authorization": f"Bearer {local_server.token}", "X-Osmosis-Git": "acme/evals"},
    ).json()["environment_secrets"]
    assert [(s["name"], s["scope"]) for s in listed] == [("GEMINI_API_KEY", "workspace")]

    synced = _emulator(
        "benchmark", "sync", "acme/custom@1.0", "--status", "ready", "--platform",
        local_server.url, env=env,
    )  # fmt: skip
    assert synced.returncode == 0, synced.stderr
    assert local_server.platform.resolve_benchmark("acme/custom@1.0")["sync_status"] == "ready"
    unknown = _emulator(
        "benchmark", "sync", "nope", "--status", "ready", "--platform", local_server.url, env=env
    )
    assert unknown.returncode == 1 and "not found" in unknown.stderr
