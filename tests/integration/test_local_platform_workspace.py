"""The local Platform as a shared workspace (issue 21), over real loopback HTTP: users and
their runs and personal secrets, the workspace catalog, one clock for every process that
opens a data dir, history seeding, and the emulator command's data (``--json``,
``secret list``, ``--version``, unique names per data dir)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from reconciler.local_platform import LocalPlatform, LocalTransport, users_from_specs
from reconciler.model import RunStatus
from tests.support.clock import FakeClock
from tests.support.emulator import emulator_command

from .conftest import LocalServer

TB = "terminal-bench-2-1"
USERS = ["alice-token=Alice Ng:alice@acme.example", "bob-token=Bob Roy", "ci-token=CI Bot"]


def tb_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "experiment_config": {"benchmark": TB},
        "tasks_config": {"task_names": ["terminal-bench/git-multibranch"]},
        "agents": [
            {
                "harness": "codex",
                "model": {"type": "provider", "model": "openai/gpt-5.2", "api_key_secret": "KEY"},
                "env": {},
            }
        ],
    }
    body.update(overrides)
    return body


def emulator(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [*emulator_command(), *args],
        input=stdin, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    return done


def call(srv: LocalServer, method: str, path: str, token: str, ws: str = "default", **kw: Any):
    return httpx.request(method, srv.url + path, headers=srv.auth(ws, token), timeout=30, **kw)


# --------------------------------------------------------------------------- users


def test_each_token_is_its_user_and_runs_record_their_creator(make_local_server: Any) -> None:
    srv = make_local_server(users=users_from_specs(USERS))
    srv.platform.set_secret("default", "KEY", "shared-value")
    alice = call(srv, "POST", "/api/cli/benchmark-runs", "alice-token", json=tb_body()).json()
    bob = call(srv, "POST", "/api/cli/benchmark-runs", "bob-token", json=tb_body()).json()
    listed = call(srv, "GET", "/api/cli/benchmark-runs", "ci-token").json()["benchmark_runs"]
    creators = {r["id"]: (r["creator_name"], r["creator_email"]) for r in listed}
    assert creators[alice["id"]] == ("Alice Ng", "alice@acme.example")
    assert creators[bob["id"]] == ("Bob Roy", "bob.roy@osmosis.local")
    detail = call(srv, "GET", f"/api/cli/benchmark-runs/{bob['name']}", "alice-token").json()
    assert detail["benchmark_run"]["creator_name"] == "Bob Roy"
    me = call(srv, "GET", "/api/cli/verify", "ci-token").json()["user"]
    assert me["name"] == "CI Bot" and me["id"].startswith("usr_")
    assert call(srv, "GET", "/api/cli/verify", "stranger-token").status_code == 401


def test_a_personal_secret_is_invisible_to_another_users_token(make_local_server: Any) -> None:
    srv = make_local_server(users=users_from_specs(USERS))
    stored = call(
        srv, "POST", "/api/cli/environment-secrets", "alice-token",
        json={"name": "KEY", "value": "alice-only-value", "scope": "user"},
    )  # fmt: skip
    assert stored.status_code == 200 and stored.json()["creator_name"] == "Alice Ng"
    mine = call(srv, "GET", "/api/cli/environment-secrets", "alice-token").json()
    theirs = call(srv, "GET", "/api/cli/environment-secrets", "ci-token").json()
    assert [(s["name"], s["scope"]) for s in mine["environment_secrets"]] == [("KEY", "user")]
    assert theirs["environment_secrets"] == [] and theirs["total_count"] == 0
    # CI cannot submit with Alice's record; Alice can, and it resolves as hers.
    refused = call(srv, "POST", "/api/cli/benchmark-runs", "ci-token", json=tb_body())
    assert refused.status_code == 404 and refused.json()["error"] == "Secret(s) not found: KEY"
    run = call(srv, "POST", "/api/cli/benchmark-runs", "alice-token", json=tb_body()).json()
    detail = call(srv, "GET", f"/api/cli/benchmark-runs/{run['id']}", "bob-token").json()
    assert detail["configuration"]["resolved_secret_scopes"] == {"KEY": "user"}
    # A workspace record serves everyone; Alice's own still overrides it for her.
    srv.platform.set_secret("default", "KEY", "team-value", scope="workspace")
    ci_run = call(srv, "POST", "/api/cli/benchmark-runs", "ci-token", json=tb_body()).json()
    alice_run = call(srv, "POST", "/api/cli/benchmark-runs", "alice-token", json=tb_body()).json()
    scopes = {
        r["id"]: call(srv, "GET", f"/api/cli/benchmark-runs/{r['id']}", "ci-token").json()[
            "configuration"
        ]["resolved_secret_scopes"]
        for r in (ci_run, alice_run)
    }
    assert scopes == {ci_run["id"]: {"KEY": "workspace"}, alice_run["id"]: {"KEY": "user_override"}}
    # Bob cannot delete Alice's personal record: it is not his.
    gone = call(
        srv, "DELETE", "/api/cli/environment-secrets", "bob-token",
        json={"name": "KEY", "scope": "user"},
    )  # fmt: skip
    assert gone.status_code == 404
    srv.platform.store.close()
    for path in srv.data_dir.iterdir():
        assert b"alice-only-value" not in path.read_bytes(), path


def test_serve_user_flag_over_http(start_emulator: Any) -> None:
    emu = start_emulator("--user", "dana-token=Dana:dana@acme.example", "--user", "eve-token=Eve")
    verify = httpx.get(
        f"{emu.url}/api/cli/verify", headers={"Authorization": "Bearer dana-token"}, timeout=30
    )
    assert verify.json()["user"]["email"] == "dana@acme.example"
    other = httpx.get(
        f"{emu.url}/api/cli/verify", headers={"Authorization": "Bearer nobody"}, timeout=30
    )
    assert other.status_code == 401
    bad = emulator("serve", "--port", "0", "--user", "no-equals-sign")
    assert bad.returncode == 2 and "TOKEN=NAME" in bad.stderr and "no-equals-sign" not in bad.stderr


# --------------------------------------------------------------------------- catalog


def test_a_benchmark_is_refused_in_a_strict_workspace_until_added(make_local_server: Any) -> None:
    srv = make_local_server(auto_workspaces=False, workspaces=("acme", "beta"))
    token = srv.token
    srv.platform.set_secret("acme", "KEY", "v")
    listed = call(srv, "GET", "/api/cli/benchmarks", token, "acme").json()
    assert listed["benchmarks"] == [] and listed["total_count"] == 0
    info = call(srv, "GET", f"/api/cli/benchmarks/{TB}", token, "acme")
    assert info.status_code == 404 and "add Harbor registry benchmarks" in info.json()["error"]
    refused = call(srv, "POST", "/api/cli/benchmark-runs", token, "acme", json=tb_body())
    assert (refused.status_code, refused.json()["code"]) == (404, "BENCHMARK_NOT_FOUND")
    assert srv.platform.submit_count("acme") == 0

    added = emulator(
        "benchmark", "add", TB, "--workspace", "acme", "--platform", srv.url, "--json",
        env={"OSMOSIS_TOKEN": token, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout) == {"benchmark": TB, "workspace": "acme"}
    keys = [
        b["source_ref"]
        for b in call(srv, "GET", "/api/cli/benchmarks", token, "acme").json()["benchmarks"]
    ]
    assert keys == [TB]
    ok = call(srv, "POST", "/api/cli/benchmark-runs", token, "acme", json=tb_body())
    assert ok.status_code == 200, ok.text
    # Only where it was added: workspace beta still has an empty catalog.
    assert call(srv, "GET", "/api/cli/benchmarks", token, "beta").json()["total_count"] == 0


def test_sync_state_belongs_to_the_workspace_entry(make_local_server: Any) -> None:
    srv = make_local_server()
    token = srv.token
    for ws in ("one", "two"):
        srv.platform.set_secret(ws, "KEY", "v")
    body = tb_body(experiment_config={"benchmark": "acme/broken-eval@0.3"})
    body.pop("tasks_config")
    srv.platform.set_benchmark_sync("acme/broken-eval@0.3", "ready", workspace="one")
    ref = "acme%2Fbroken-eval%400.3"
    one = call(srv, "GET", f"/api/cli/benchmarks/{ref}", token, "one").json()["benchmark"]
    two = call(srv, "GET", f"/api/cli/benchmarks/{ref}", token, "two").json()["benchmark"]
    assert (one["sync_status"], one["task_count"]) == ("ready", 12)
    assert (two["sync_status"], two["task_count"]) == ("failed", 12)
    assert call(srv, "POST", "/api/cli/benchmark-runs", token, "one", json=body).status_code == 200
    assert call(srv, "POST", "/api/cli/benchmark-runs", token, "two", json=body).status_code == 409
    # A failed sync moved back to syncing counts the tasks it has listed of the 12.
    srv.platform.set_benchmark_sync("acme/broken-eval@0.3", "syncing", synced_task_count=3)
    two = call(srv, "POST", "/api/cli/benchmark-runs", token, "two", json=body).json()
    assert "(3 of 12 tasks)" in two["error"]


# --------------------------------------------------------------------------- one clock


def statuses(client: httpx.Client) -> dict[str, str]:
    page = client.get("/api/cli/benchmark-runs?limit=50").json()["benchmark_runs"]
    return {r["id"]: r["status"] for r in page}


def test_served_and_embedded_views_of_one_data_dir_agree(
    tmp_path: Path, start_emulator: Any
) -> None:
    data = tmp_path / "shared"
    seeder = LocalPlatform(data, speed=0.05)  # slow: active runs stay active while read
    seeder.set_secret("default", "KEY", "v")
    seeder.seed_runs(
        "default",
        40,
        status_mix={
            RunStatus.PENDING: 1,
            RunStatus.QUEUED: 1,
            RunStatus.RUNNING: 2,
            RunStatus.FINISHED: 2,
        },
    )
    emu = start_emulator("--data", str(data))  # no --speed: the stored one
    headers = {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"}
    embedded = LocalPlatform(data)  # as the reconciler's embedded Platform opens it
    with (
        httpx.Client(base_url=emu.url, headers=headers, timeout=30) as served,
        httpx.Client(base_url="http://localhost", headers=headers,
                     transport=LocalTransport(embedded)) as local,
    ):  # fmt: skip
        for _ in range(3):
            a, b = statuses(served), statuses(local)
            c = statuses(served)
            # Every run the two views agree on, or the clock moved it between the reads.
            assert {k for k in a if a[k] != b[k] and b[k] != c[k]} == set(), (a, b, c)
            assert len(set(a.values())) >= 3
        # A new speed asked for by one process re-bases times: no status jumps, and the
        # other process (already running) uses it from its next request.
        before = statuses(local)
        LocalPlatform(data, speed=4000.0)
        after = statuses(local)
        order = ["pending", "queued", "running", "finished", "failed", "stopped"]
        moved_back = [k for k in before if order.index(after[k]) < order.index(before[k])]
        assert moved_back == []
        assert embedded.speed == 4000.0
        time.sleep(0.2)  # 800 simulated seconds: every pending run has started by now
        later = statuses(served)
        assert "pending" not in later.values() and "queued" not in later.values(), later


def test_clock_state_is_stored_in_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "d"
    clock = FakeClock()
    first = LocalPlatform(data, speed=10.0, clock=clock)
    first.set_secret("default", "KEY", "v")
    http = httpx.Client(
        base_url="http://localhost", transport=LocalTransport(first),
        headers={"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"},
    )  # fmt: skip
    run = http.post("/api/cli/benchmark-runs", json=tb_body()).json()
    clock.advance(1.0)  # 10 simulated seconds: past pending (2-6 s)
    seen = http.get(f"/api/cli/benchmark-runs/{run['id']}").json()["benchmark_run"]["status"]
    second = LocalPlatform(data, clock=clock)  # no speed: the stored one, not 1
    assert second.speed == 10.0
    other = httpx.Client(
        base_url="http://localhost", transport=LocalTransport(second),
        headers={"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"},
    )  # fmt: skip
    assert (
        other.get(f"/api/cli/benchmark-runs/{run['id']}").json()["benchmark_run"]["status"] == seen
    )
    created = http.get(f"/api/cli/benchmark-runs/{run['id']}").json()["benchmark_run"]["created_at"]
    second.set_speed(1000.0)
    again = other.get(f"/api/cli/benchmark-runs/{run['id']}").json()["benchmark_run"]
    assert again["status"] == seen and again["created_at"] == created


# --------------------------------------------------------------------------- history


def test_runs_seed_makes_thousands_of_runs_over_weeks_in_seconds(
    tmp_path: Path, make_local_server: Any
) -> None:
    data = tmp_path / "busy"
    config = tmp_path / "smoke.toml"
    config.write_text(
        '[experiment]\nbenchmark = "terminal-bench-2-1"\n\n[tasks]\ncategories = ["games"]\n\n'
        '[[agents]]\nharness = "terminus-2"\n\n[agents.model]\ntype = "provider"\n'
        'model = "anthropic/claude-sonnet-4"\napi_key_secret = "ANTHROPIC_API_KEY"\n',
        encoding="utf-8",
    )
    started = time.monotonic()
    done = emulator(
        "runs", "seed", "--data", str(data), "--workspace", "team", "--count", "5000",
        "--days", "60", "--like", str(config), "--status-mix", "finished=8,failed=1,stopped=1",
        "--json",
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    print(f"runs seed --count 5000 (process included): {took:.2f}s")
    result = json.loads(done.stdout)
    assert result["count"] == 5000 and result["benchmark"] == TB
    assert result["creators"] == ["Ada Park", "Bruno Diaz", "Chen Wei", "CI Service Account"]
    srv = make_local_server(data_dir=data)
    first = call(srv, "GET", "/api/cli/benchmark-runs?limit=50", srv.token, "team").json()
    assert first["total_count"] == 5000
    last = call(
        srv, "GET", "/api/cli/benchmark-runs?limit=50&offset=4950", srv.token, "team"
    ).json()["benchmark_runs"]
    newest = first["benchmark_runs"][0]["created_at"]
    oldest = last[-1]["created_at"]
    from datetime import datetime

    span = datetime.fromisoformat(newest) - datetime.fromisoformat(oldest)
    assert span.days >= 50
    seen = first["benchmark_runs"] + last
    assert {r["status"] for r in seen} <= {"finished", "failed", "stopped"}
    assert len({r["creator_name"] for r in seen}) >= 3
    ended = next(r for r in last if r["status"] == "finished")
    detail = call(srv, "GET", f"/api/cli/benchmark-runs/{ended['id']}", srv.token, "team").json()
    assert detail["agents"][0]["model"] == "anthropic/claude-sonnet-4"
    assert detail["configuration"]["task_filters"] == {"categories": ["games"]}
    manifest = call(
        srv, "GET", f"/api/cli/benchmark-runs/{ended['id']}/outputs/manifest", srv.token, "team"
    ).json()
    assert {f["path"] for f in manifest["files"]} >= {"summary.csv", "results.csv"}


def test_runs_seed_refuses_bad_input_before_writing(tmp_path: Path) -> None:
    data = tmp_path / "d"
    bad_mix = emulator(
        "runs", "seed", "--data", str(data), "--count", "5", "--status-mix", "done=1"
    )
    assert bad_mix.returncode == 2 and "unknown status 'done'" in bad_mix.stderr
    config = tmp_path / "broken.toml"
    config.write_text('[experiment]\nbenchmark = "terminal-bench-2-1"\n', encoding="utf-8")
    bad_like = emulator("runs", "seed", "--data", str(data), "--count", "5", "--like", str(config))
    assert bad_like.returncode == 2 and "broken.toml" in bad_like.stderr
    assert not (data / "platform.sqlite3").exists() or LocalPlatform(data).submit_count() == 0


# --------------------------------------------------------------------------- CLI and data


def test_version_secret_list_and_json(tmp_path: Path) -> None:
    data = tmp_path / "d"
    version = emulator("--version")
    assert version.returncode == 0 and version.stdout.startswith("osmosis-platform-emulator ")
    value = "never-print-this-value"
    assert emulator("secret", "set", "HF_TOKEN", "--data", str(data), stdin=value).returncode == 0
    shared = emulator(
        "secret", "set", "OPENAI_API_KEY", "--scope", "workspace", "--data", str(data), "--json",
        stdin=value,
    )  # fmt: skip
    assert json.loads(shared.stdout)["scope"] == "workspace"
    listed = emulator("secret", "list", "--data", str(data))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "SCOPE", "UPDATED", "BY", "UPDATED"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["HF_TOKEN", "personal"],
        ["OPENAI_API_KEY", "workspace"],
    ]
    as_json = json.loads(emulator("secret", "list", "--data", str(data), "--json").stdout)
    assert [(s["name"], s["scope"]) for s in as_json] == [
        ("HF_TOKEN", "user"),
        ("OPENAI_API_KEY", "workspace"),
    ]
    for out in (listed, shared, as_json):
        assert value not in str(getattr(out, "stdout", out)) + str(getattr(out, "stderr", ""))
    synced = emulator(
        "benchmark", "sync", "acme/custom@1.0", "--status", "ready", "--data", str(data), "--json"
    )
    assert json.loads(synced.stdout)["sync_status"] == "ready"


def test_names_and_ids_differ_per_data_dir_unless_seeded(tmp_path: Path) -> None:
    def first_run(directory: Path, seed: int | None) -> tuple[str, str]:
        platform = LocalPlatform(directory, seed=seed)
        run_id = platform.seed_runs("default", 1)[0]
        row = platform.store.read().execute("SELECT name FROM runs WHERE id = ?", (run_id,))
        return run_id, row.fetchone()[0]

    a, b = first_run(tmp_path / "a", None), first_run(tmp_path / "b", None)
    assert a[0] != b[0]
    assert first_run(tmp_path / "c", 7) == first_run(tmp_path / "d", 7)
    # A data dir keeps its own seed: a second process names its runs from the same walk.
    assert LocalPlatform(tmp_path / "a").seed == LocalPlatform(tmp_path / "a").seed


def test_types_all_is_refused(make_local_server: Any) -> None:
    srv = make_local_server(clock=FakeClock(), speed=1000.0)
    srv.platform.set_secret("default", "KEY", "v")
    run = call(srv, "POST", "/api/cli/benchmark-runs", srv.token, json=tb_body()).json()
    srv.clock.advance(60)
    r = call(
        srv, "GET", f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest?types=all", srv.token
    )
    assert r.status_code == 400 and "all" in r.json()["error"]


def test_plan_blocks_a_config_whose_benchmark_is_not_added_and_says_how(tmp_path: Path) -> None:
    from reconciler.local_platform import start_server
    from tests.support.osmosis import SECRET_NAMES, TEAM, Osmosis, Platform, init_repo, smoke_config

    platform = LocalPlatform(
        tmp_path / "p", users=TEAM, auto_workspaces=False, workspaces=("strict",)
    )
    for name in SECRET_NAMES:
        platform.set_secret("strict", name, "value")
    handle = start_server(platform, "127.0.0.1", 0)
    try:
        osm = Osmosis(
            init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}),
            Platform(handle, platform, "strict"),
        )
        blocked = osm.plan()
        assert "! tb/a" in blocked.out and "1 blocked" in blocked.out, blocked.text
        command = f"osmosis-platform-emulator benchmark add {TB} --workspace strict --platform {handle.url}"
        assert command in blocked.text, blocked.text
        assert platform.submit_count("strict") == 0
        platform.add_to_workspace("strict", TB)
        ready = osm.plan()
        assert command not in ready.text and "+ tb/a" in ready.out, ready.text
    finally:
        handle.close()


def test_the_docs_history_commands_run(tmp_path: Path) -> None:
    """docs/local-platform.md "History": its console block, run as shown on a fresh data dir."""
    import shlex

    doc = (Path(__file__).parents[2] / "docs" / "local-platform.md").read_text(encoding="utf-8")
    section = doc.split("## History", 1)[1].split("\n## ", 1)[0]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    commands = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    assert len(commands) == 4 and all(c.startswith("osmosis-platform-emulator ") for c in commands)
    outputs = []
    for command in commands:
        words = shlex.split(command)[1:]
        done = emulator(*words, "--data", str(tmp_path / "d"))
        assert done.returncode == 0, (command, done.stderr)
        outputs.append(done.stdout)
    assert "seeded 2,000 runs" in outputs[0] and "(by CI Service Account)" in outputs[1]
    assert "no secrets" in outputs[2]
    assert json.loads(outputs[3])[0]["run_count"] == 2040 or any(
        b["run_count"] == 2040 for b in json.loads(outputs[3])
    )


def test_seeded_active_runs_stay_active_for_a_while_whatever_the_seed(tmp_path: Path) -> None:
    """Data dirs have random seeds now: every schedule, not seed 0's, must leave a seeded
    running run running (and pending/queued ones not yet further) one second later."""
    clock = FakeClock()
    order = ["pending", "queued", "running", "finished", "failed", "stopped"]
    for seed in range(12):
        platform = LocalPlatform(tmp_path / f"s{seed}", seed=seed, clock=clock, speed=1.0)
        mix = {RunStatus.PENDING: 1.0, RunStatus.QUEUED: 1.0, RunStatus.RUNNING: 2.0}
        platform.seed_runs("default", 60, status_mix=mix)
        rows = platform.store.read().execute("SELECT * FROM runs").fetchall()
        now = [platform._row_status(r, clock.now) for r in rows]
        later = [platform._row_status(r, clock.now + 1.0) for r in rows]
        assert set(now) == set(mix), (seed, now)
        moved = [(a, b) for a, b in zip(now, later, strict=True) if a != b]
        assert all(order.index(b) <= order.index("running") for _, b in moved), (seed, moved)
