"""The local Platform over real loopback HTTP: routes, errors, pagination, lifecycle, outputs.

These talk to the server with plain httpx (not our client) so they check the wire contract
of platform-api.md itself.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from reconciler.local_platform import Faults, LocalPlatform
from reconciler.model import RunStatus, adoption_fingerprint, spec_fingerprint
from tests.support.bodies import tb_body
from tests.support.clock import FakeClock

from .conftest import LocalServer

TB = "terminal-bench-2-1"


@pytest.fixture
def srv(make_local_server: Any) -> LocalServer:
    """A server on a fake clock with OPENAI_API_KEY stored in workspace ``default``."""
    server = make_local_server(clock=FakeClock(), speed=1.0)
    server.platform.set_secret("default", "OPENAI_API_KEY", "sk-value-one")
    return server


@pytest.fixture
def http(srv: LocalServer) -> Any:
    with httpx.Client(base_url=srv.url, headers=srv.auth(), timeout=30) as client:
        yield client


def submit(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = http.post("/api/cli/benchmark-runs", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def advance_to(
    srv: LocalServer, http: httpx.Client, name: str, wanted: set[str], step: float = 5.0
) -> dict[str, Any]:
    for _ in range(2000):
        detail = http.get(f"/api/cli/benchmark-runs/{name}").json()
        if detail["benchmark_run"]["status"] in wanted:
            return detail
        srv.clock.advance(step)
    raise AssertionError(f"run {name} never reached {wanted}")


# --------------------------------------------------------------------------- auth, scope


def test_bearer_token_is_required_and_checked(srv: LocalServer) -> None:
    url = f"{srv.url}/api/cli/benchmarks"
    missing = httpx.get(url, headers={"X-Osmosis-Workspace": "default"})
    wrong = httpx.get(
        url, headers={"X-Osmosis-Workspace": "default", "Authorization": "Bearer nope"}
    )
    empty = httpx.get(url, headers={"X-Osmosis-Workspace": "default", "Authorization": "Basic abc"})
    ok = httpx.get(url, headers=srv.auth())
    for r in (missing, wrong, empty):
        assert r.status_code == 401
        assert r.json()["code"] == "TOKEN_INVALID"
        assert srv.token not in r.text
    assert ok.status_code == 200


def test_any_nonempty_token_is_accepted_without_a_configured_token(make_local_server: Any) -> None:
    server = make_local_server(token=None)
    r = httpx.get(
        f"{server.url}/api/cli/benchmarks",
        headers={"Authorization": "Bearer whatever", "X-Osmosis-Workspace": "w"},
    )
    assert r.status_code == 200


def test_scope_header_errors(make_local_server: Any) -> None:
    server = make_local_server(auto_workspaces=False, workspaces=("acme",))
    server.platform.connect_repo("acme", "acme/bench")
    auth = {"Authorization": f"Bearer {server.token}"}
    url = f"{server.url}/api/cli/benchmark-runs"
    neither = httpx.get(url, headers=auth)
    both = httpx.get(
        url, headers={**auth, "X-Osmosis-Workspace": "acme", "X-Osmosis-Git": "acme/bench"}
    )
    unknown_ws = httpx.get(url, headers={**auth, "X-Osmosis-Workspace": "ACME"})
    unknown_repo = httpx.get(url, headers={**auth, "X-Osmosis-Git": "acme/other"})
    invalid_repo = httpx.get(url, headers={**auth, "X-Osmosis-Git": "not a repo"})
    by_name = httpx.get(url, headers={**auth, "X-Osmosis-Workspace": "acme"})
    by_git = httpx.get(url, headers={**auth, "X-Osmosis-Git": "Acme/Bench"})
    assert (neither.status_code, neither.json()["code"]) == (400, "GIT_SCOPE_HEADER_REQUIRED")
    assert (both.status_code, both.json()["code"]) == (400, "WORKSPACE_SCOPE_HEADER_CONFLICT")
    assert (unknown_ws.status_code, unknown_ws.json()["code"]) == (
        403,
        "WORKSPACE_SCOPE_HEADER_ACCESS_DENIED",
    )
    assert (unknown_repo.status_code, unknown_repo.json()["code"]) == (
        404,
        "GIT_REPOSITORY_NOT_CONNECTED",
    )
    assert (invalid_repo.status_code, invalid_repo.json()["code"]) == (
        400,
        "GIT_SCOPE_HEADER_INVALID",
    )
    assert by_name.status_code == 200 and by_git.status_code == 200


def test_auto_workspaces_create_workspaces_and_git_identities(srv: LocalServer) -> None:
    auth = {"Authorization": f"Bearer {srv.token}"}
    r = httpx.get(
        f"{srv.url}/api/cli/benchmark-runs", headers={**auth, "X-Osmosis-Git": "octo/repo"}
    )
    assert r.status_code == 200
    workspaces = httpx.get(f"{srv.url}/api/cli/workspaces", headers=auth).json()["workspaces"]
    by_name = {w["name"]: w for w in workspaces}
    assert by_name["octo/repo"]["connected_repo"]["repo_full_name"] == "octo/repo"
    assert by_name["local"]["connected_repo"] is None
    assert set(by_name["local"]) == {"id", "name", "role", "has_billing_setup", "connected_repo"}


def test_verify_reports_user_and_connected_workspace(srv: LocalServer) -> None:
    srv.platform.connect_repo("default", "acme/bench")
    r = httpx.get(
        f"{srv.url}/api/cli/verify",
        headers={"Authorization": f"Bearer {srv.token}", "X-Osmosis-Git": "acme/bench"},
    )
    body = r.json()
    assert r.status_code == 200
    assert body["user"]["id"] and body["user"]["email"]
    assert body["expires_at"].endswith("Z") and body["token_id"]
    assert srv.token not in r.text
    assert body["workspace"]["name"] == "default"


def test_unknown_route_and_wrong_method(http: httpx.Client) -> None:
    assert http.get("/api/cli/nothing-here").status_code == 404
    assert http.delete("/api/cli/benchmarks").status_code == 405


# --------------------------------------------------------------------------- benchmarks


def test_benchmark_list_pages_cover_the_catalog(http: httpx.Client) -> None:
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = http.get("/api/cli/benchmarks", params={"limit": 3, "offset": offset}).json()
        pages += 1
        seen.extend(b["source_ref"] for b in page["benchmarks"])
        assert page["has_more"] == (page["next_offset"] is not None)
        offset = page["next_offset"]
    assert pages == 3 and len(seen) == page["total_count"] == len(set(seen)) == 9
    everything = http.get("/api/cli/benchmarks").json()["benchmarks"]
    assert [b["source_ref"] for b in everything] == seen
    entry = everything[0]
    for key in (
        "id", "name", "description", "source_type", "source_ref", "source_url", "task_count",
        "category_count", "task_sets", "sync_status", "synced_task_count", "sync_error",
        "platform_url", "run_count", "running_count", "last_run_at", "last_run_status",
        "last_run_name", "creator_name",
    ):  # fmt: skip
        assert key in entry


@pytest.mark.parametrize("limit", ["51", "0", "abc"])
def test_list_limit_out_of_range_is_400(http: httpx.Client, limit: str) -> None:
    for path in ("/api/cli/benchmarks", "/api/cli/benchmark-runs", "/api/cli/environment-secrets"):
        r = http.get(path, params={"limit": limit})
        assert r.status_code == 400, path
        assert r.json()["error"]


def test_benchmarks_resolve_by_key_exact_name_or_id(http: httpx.Client) -> None:
    by_key = http.get(f"/api/cli/benchmarks/{TB}").json()["benchmark"]
    by_name = http.get("/api/cli/benchmarks/" + quote("Terminal-Bench 2.1", safe="")).json()[
        "benchmark"
    ]
    by_id = http.get(f"/api/cli/benchmarks/{by_key['id']}").json()["benchmark"]
    slashed = http.get("/api/cli/benchmarks/" + quote("acme/custom@1.0", safe=""))
    assert by_key == by_name == by_id
    assert slashed.status_code == 200 and slashed.json()["benchmark"]["sync_status"] == "syncing"
    wrong_case = http.get("/api/cli/benchmarks/" + quote("terminal-bench 2.1", safe=""))
    assert wrong_case.status_code == 404 and wrong_case.json()["error"]


def test_catalog_exercises_every_rule(http: httpx.Client) -> None:
    def info(ref: str) -> dict[str, Any]:
        return http.get("/api/cli/benchmarks/" + quote(ref, safe="")).json()

    hle = info("hle")
    assert hle["benchmark"]["required_secret_names"] == ["HF_TOKEN"]
    assert (
        hle["benchmark"]["requires_judge_api_key"]
        and hle["benchmark"]["judge_model_default"] == "openai/gpt-5"
    )
    assert {"name": "parity", "task_count": 249, "recommended": True}.items() <= hle["benchmark"][
        "task_sets"
    ][0].items()
    tb = info(TB)["benchmark"]
    names = [t["name"] for t in tb["tasks"]]
    assert len(names) == len(set(names)) == tb["task_count"] == 89
    assert "terminal-bench/git-multibranch" in names
    assert tb["default_harness"] == "terminus-2" and tb["requires_harness"]
    assert (
        sum(c["task_count"] for c in tb["categories"])
        == 89
        == sum(1 for t in tb["tasks"] if t["category"])
    )
    assert {t["difficulty"] for t in tb["tasks"]} == {"easy", "medium", "hard", None}
    assert info("gdpval")["benchmark"]["requires_judge_api_key"]
    assert info("swe-bench-verified")["benchmark"]["requires_harness"] is False
    tool = info("toolathlon-verified")["benchmark"]
    assert tool["runner_family"] == "toolathlon" and tool["supports_harness"] is False
    syncing = info("acme/custom@1.0")["benchmark"]
    assert syncing["synced_task_count"] < syncing["task_count"]
    failed = info("acme/broken-eval@0.3")["benchmark"]
    assert failed["sync_status"] == "failed" and failed["sync_error"]
    board = info(TB)["leaderboard"]
    assert board and all(e["pass_at_1"]["method"] == "wilson" for e in board)
    assert all(
        e["pass_at_1"]["ci_low"] <= e["pass_at_1"]["value"] <= e["pass_at_1"]["ci_high"]
        for e in board
    )


# --------------------------------------------------------------------------- submit


def test_submit_response_shape_and_generated_unique_names(
    srv: LocalServer, http: httpx.Client
) -> None:
    first = submit(http, tb_body())
    second = submit(http, tb_body())
    assert set(first) == {
        "id",
        "name",
        "status",
        "workflow_id",
        "task_count",
        "created_at",
        "platform_url",
    }
    assert first["status"] == "pending" and first["task_count"] == 1
    assert first["workflow_id"] == f"benchmark-run/{first['id']}"
    assert first["created_at"].endswith("Z")
    assert first["name"] != second["name"] and first["id"] != second["id"]
    assert first["name"].count("-") == 1
    assert srv.platform.submit_count() == 2 and srv.platform.submit_count("default") == 2
    assert srv.platform.submit_count("elsewhere") == 0


def test_run_names_are_deterministic_from_the_seed(tmp_path: Any) -> None:
    def names(directory: str, seed: int) -> list[str]:
        platform = LocalPlatform(tmp_path / directory, seed=seed)
        platform.set_secret("default", "OPENAI_API_KEY", "v")
        out = []
        for _ in range(3):
            r = platform.handle(
                "POST", "/api/cli/benchmark-runs",
                {"Authorization": "Bearer t", "X-Osmosis-Workspace": "default"},
                __import__("json").dumps(tb_body()).encode(),
            )  # fmt: skip
            out.append(r.json()["name"])
        return out

    assert names("a", 7) == names("b", 7)
    assert names("c", 7) != names("d", 8)


@pytest.mark.parametrize(
    ("tasks_config", "expected"),
    [
        (None, 89),
        ({"task_set": "no-such-set"}, 89),
        ({"task_names": ["terminal-bench/git-multibranch"]}, 1),
        ({"categories": ["security", "games"]}, 14),
    ],
)
def test_task_selection_sets_task_count(
    http: httpx.Client, tasks_config: Any, expected: int
) -> None:
    body = tb_body()
    body.pop("tasks_config")
    if tasks_config is not None:
        body["tasks_config"] = tasks_config
    assert submit(http, body)["task_count"] == expected


def test_hle_parity_selects_249(srv: LocalServer, http: httpx.Client) -> None:
    srv.platform.set_secret("default", "HF_TOKEN", "hf-value", scope="user")
    body = tb_body(experiment_config={"benchmark": "HLE"}, tasks_config={"task_set": "parity"})
    body["execution_config"] = {"judge_api_key_secret": "OPENAI_API_KEY"}
    assert submit(http, body)["task_count"] == 249


def _issue_keys(r: httpx.Response) -> list[str]:
    assert r.status_code == 400, r.text
    return [i["key"] for i in r.json()["issues"]]


def test_submit_shape_errors_are_400_with_issues(http: httpx.Client) -> None:
    r = http.post(
        "/api/cli/benchmark-runs", json={"experiment_config": {}, "agents": [], "extra": 1}
    )
    assert set(_issue_keys(r)) >= {"extra", "experiment_config.benchmark", "agents"}
    bad_model = tb_body(agents=[{"model": {"type": "provider", "model": "x"}, "env": {}}])
    assert "agents.0.model.provider.api_key_secret" in _issue_keys(
        http.post("/api/cli/benchmark-runs", json=bad_model)
    )
    not_json = http.post("/api/cli/benchmark-runs", content=b"{nope")
    assert not_json.status_code == 400
    nine = tb_body(agents=tb_body()["agents"] * 9)
    assert "agents" in _issue_keys(http.post("/api/cli/benchmark-runs", json=nine))


def test_submit_unknown_or_unready_benchmark(http: httpx.Client) -> None:
    unknown = http.post(
        "/api/cli/benchmark-runs",
        json=tb_body(experiment_config={"benchmark": "terminal-bench 2.1"}),
    )
    assert unknown.status_code == 404 and "terminal-bench 2.1" in unknown.json()["error"]
    body = tb_body(experiment_config={"benchmark": "acme/custom@1.0"})
    body.pop("tasks_config")
    syncing = http.post("/api/cli/benchmark-runs", json=body)
    assert syncing.status_code == 409 and "45 of 120" in syncing.json()["error"]
    body["experiment_config"] = {"benchmark": "acme/broken-eval"}
    failed = http.post("/api/cli/benchmark-runs", json=body)
    assert failed.status_code == 409 and "tag not found" in failed.json()["error"]


def test_benchmark_becomes_submittable_once_synced(srv: LocalServer, http: httpx.Client) -> None:
    body = tb_body(experiment_config={"benchmark": "acme/custom@1.0"})
    body.pop("tasks_config")
    assert http.post("/api/cli/benchmark-runs", json=body).status_code == 409
    srv.platform.set_benchmark_sync("acme/custom@1.0", "ready")
    assert submit(http, body)["task_count"] == 120  # the 75 still paging in joined


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda b: b.update(env_config={"HF_TOKEN": "x"}), "env_config"),
        (lambda b: b["agents"][0]["env"].update(_OSMOSIS_X="1"), "agents.0.env"),
        (
            lambda b: b["agents"][0]["model"].update(api_key_secret="DAYTONA_API_KEY"),
            "agents.0.model.api_key_secret",
        ),
        (lambda b: b["agents"][0].update(harness="cursor-cli"), "agents.0.harness_api_key_secret"),
        (
            lambda b: b["agents"][0].update(
                harness="mini-swe-agent", harness_api_key_secret="OTHER_KEY"
            ),
            "agents.0.harness_api_key_secret",
        ),
        (
            lambda b: b["agents"][0].update(harness_api_key_secret="CURSOR_API_KEY"),
            "agents.0.harness_api_key_secret",
        ),
        (lambda b: b["agents"][0].pop("harness"), "agents.0.harness"),
        (
            lambda b: b.update(tasks_config={"task_names": ["terminal-bench/nope"]}),
            "tasks_config.task_names",
        ),
        (
            lambda b: b.update(execution_config={"attempts_per_task": 0}),
            "execution_config.attempts_per_task",
        ),
        (lambda b: b.update(tasks_config={"task_names": []}), "tasks_config"),
    ],
)
def test_page_rules_reject_configs(http: httpx.Client, mutate: Any, key: str) -> None:
    body = tb_body()
    mutate(body)
    assert key in _issue_keys(http.post("/api/cli/benchmark-runs", json=body))


def test_judge_and_scaffold_rules(srv: LocalServer, http: httpx.Client) -> None:
    srv.platform.set_secret("default", "HF_TOKEN", "hf")
    hle = tb_body(experiment_config={"benchmark": "hle"}, tasks_config={"task_set": "parity"})
    assert "execution_config.judge_api_key_secret" in _issue_keys(
        http.post("/api/cli/benchmark-runs", json=hle)
    )
    tool = tb_body(experiment_config={"benchmark": "toolathlon-verified"})
    tool.pop("tasks_config")
    assert "agents.0.harness" in _issue_keys(http.post("/api/cli/benchmark-runs", json=tool))
    tool["agents"][0].pop("harness")
    assert submit(http, tool)["task_count"] == 108


def test_missing_secrets_are_404_with_exact_names(srv: LocalServer, http: httpx.Client) -> None:
    body = tb_body(experiment_config={"benchmark": "hle"}, tasks_config={"task_set": "parity"})
    body["agents"][0]["model"]["api_key_secret"] = "ANTHROPIC_API_KEY"
    body["execution_config"] = {"judge_api_key_secret": "JUDGE_KEY"}
    body["secrets"] = {"required": ["RUN_ONLY"], "provided": {}}
    r = http.post("/api/cli/benchmark-runs", json=body)
    assert r.status_code == 404
    assert (
        r.json()["error"] == "Secret(s) not found: ANTHROPIC_API_KEY, JUDGE_KEY, RUN_ONLY, HF_TOKEN"
    )
    assert r.json()["platform_url"].endswith("/secrets")


def test_provided_secret_values_satisfy_but_are_never_stored(
    srv: LocalServer, http: httpx.Client
) -> None:
    value = "per-run-value-3f9a1c"
    body = tb_body(secrets={"required": ["RUN_TOKEN"], "provided": {"RUN_TOKEN": value}})
    run = submit(http, body)
    detail = http.get(f"/api/cli/benchmark-runs/{run['id']}")
    assert value not in detail.text
    assert detail.json()["configuration"]["resolved_secret_scopes"] == {
        "OPENAI_API_KEY": "workspace",
        "RUN_TOKEN": "user",  # the page's scopes only: a value sent with the run is the caller's
    }
    srv.platform.store.close()
    for path in srv.data_dir.iterdir():
        assert value.encode() not in path.read_bytes(), path
        assert b"sk-value-one" not in path.read_bytes(), path


def test_personal_secret_overriding_workspace_scope(srv: LocalServer, http: httpx.Client) -> None:
    srv.platform.set_secret("default", "OPENAI_API_KEY", "mine", scope="user")
    run = submit(http, tb_body())
    scopes = http.get(f"/api/cli/benchmark-runs/{run['name']}").json()["configuration"][
        "resolved_secret_scopes"
    ]
    assert scopes == {"OPENAI_API_KEY": "user_override"}


# --------------------------------------------------------------------------- runs


def test_runs_resolve_by_name_or_id_within_the_workspace(
    srv: LocalServer, http: httpx.Client
) -> None:
    run = submit(http, tb_body())
    by_id = http.get(f"/api/cli/benchmark-runs/{run['id']}").json()
    by_name = http.get(f"/api/cli/benchmark-runs/{run['name']}").json()
    assert by_id == by_name and by_id["benchmark_run"]["id"] == run["id"]
    other = httpx.get(f"{srv.url}/api/cli/benchmark-runs/{run['name']}", headers=srv.auth("other"))
    assert other.status_code == 404


def test_lifecycle_progresses_on_the_clock(srv: LocalServer, http: httpx.Client) -> None:
    body = tb_body(execution_config={"attempts_per_task": 3})
    body["tasks_config"] = {"categories": ["security"]}
    run = submit(http, body)
    seen: list[str] = []
    progress: list[int] = []
    for _ in range(400):
        detail = http.get(f"/api/cli/benchmark-runs/{run['name']}").json()
        status = detail["benchmark_run"]["status"]
        if not seen or seen[-1] != status:
            seen.append(status)
        progress.append(detail["progress"]["ingested"])
        if status in ("finished", "failed"):
            break
        srv.clock.advance(1.0)
    assert seen[:3] == ["pending", "queued", "running"] and seen[-1] in ("finished", "failed")
    assert progress == sorted(progress) and detail["progress"]["expected"] == 30
    summary = detail["benchmark_run"]
    assert summary["started_at"] and summary["completed_at"]
    metrics = detail["agent_metrics"][0]
    p1 = metrics["pass_at_1"]
    assert p1["method"] == "wilson" and p1["ci_low"] <= p1["value"] <= p1["ci_high"]
    assert metrics["pass_at_k"][-1]["k"] == 3 and metrics["pass_at_k"][-1]["value"] >= p1["value"]
    assert summary["best_pass_at_1"] == p1["value"]
    totals = detail["totals"]
    assert totals["passed"] + totals["failed"] + totals["errored"] == detail["progress"]["ingested"]


def test_speed_factor_scales_the_clock(make_local_server: Any) -> None:
    clock = FakeClock()
    slow = make_local_server(clock=clock, speed=1.0)
    fast = make_local_server(clock=clock, speed=1000.0)
    for server in (slow, fast):
        server.platform.set_secret("default", "OPENAI_API_KEY", "v")
    runs = []
    for server in (slow, fast):
        with httpx.Client(base_url=server.url, headers=server.auth()) as c:
            runs.append((server, submit(c, tb_body())))
    clock.advance(30)
    statuses = [
        httpx.get(f"{s.url}/api/cli/benchmark-runs/{r['id']}", headers=s.auth()).json()[
            "benchmark_run"
        ]["status"]
        for s, r in runs
    ]
    assert statuses[0] in ("queued", "running") and statuses[1] in ("finished", "failed")


def test_stop_active_run_then_conflict(srv: LocalServer, http: httpx.Client) -> None:
    run = submit(http, tb_body())
    r = http.post(f"/api/cli/benchmark-runs/{run['id']}/stop", json={})
    assert r.status_code == 200 and r.json()["status"] == "stopped"
    srv.clock.advance(10_000)
    detail = http.get(f"/api/cli/benchmark-runs/{run['name']}").json()
    assert (
        detail["benchmark_run"]["status"] == "stopped" and detail["benchmark_run"]["completed_at"]
    )
    again = http.post(f"/api/cli/benchmark-runs/{run['name']}/stop", json={})
    assert again.status_code == 409 and "already stopped" in again.json()["error"]
    missing = http.post("/api/cli/benchmark-runs/no-such-run/stop", json={})
    assert missing.status_code == 404


def test_stop_of_a_finished_run_is_409(srv: LocalServer, http: httpx.Client) -> None:
    run = submit(http, tb_body())
    final = advance_to(srv, http, run["name"], {"finished", "failed"}, step=50)
    r = http.post(f"/api/cli/benchmark-runs/{run['id']}/stop", json={})
    assert r.status_code == 409 and final["benchmark_run"]["status"] in r.json()["error"]


def test_runs_list_pagination_order_and_filter(srv: LocalServer, http: httpx.Client) -> None:
    srv.platform.seed_runs("default", 120)
    mine = submit(http, tb_body(experiment_config={"benchmark": "Terminal-Bench 2.1"}))
    ids: list[str] = []
    offset: int | None = 0
    sizes = []
    while offset is not None:
        page = http.get("/api/cli/benchmark-runs", params={"limit": 50, "offset": offset}).json()
        sizes.append(len(page["benchmark_runs"]))
        ids.extend(r["id"] for r in page["benchmark_runs"])
        offset = page["next_offset"]
    assert sizes == [50, 50, 21] and len(set(ids)) == 121 == page["total_count"]
    assert ids[0] == mine["id"]  # newest first
    first = http.get("/api/cli/benchmark-runs", params={"limit": 50}).json()["benchmark_runs"]
    created = [r["created_at"] for r in first]
    assert created == sorted(created, reverse=True)
    hle_id = http.get("/api/cli/benchmarks/hle").json()["benchmark"]["id"]
    assert (
        http.get("/api/cli/benchmark-runs", params={"benchmark": hle_id}).json()["total_count"] == 0
    )
    tb_id = http.get(f"/api/cli/benchmarks/{TB}").json()["benchmark"]["id"]
    assert (
        http.get("/api/cli/benchmark-runs", params={"benchmark": tb_id}).json()["total_count"]
        == 121
    )
    statuses = {r["status"] for r in first}
    assert statuses <= {"pending", "queued", "running", "finished", "failed", "stopped"}
    listed = http.get("/api/cli/benchmarks").json()["benchmarks"]
    tb_entry = next(b for b in listed if b["source_ref"] == TB)
    assert tb_entry["run_count"] == 121 and tb_entry["last_run_name"] == mine["name"]


def test_seed_runs_honours_the_status_mix(srv: LocalServer, http: httpx.Client) -> None:
    srv.platform.seed_runs("mixed", 40, status_mix={RunStatus.FINISHED: 1, RunStatus.RUNNING: 1})
    page = httpx.get(
        f"{srv.url}/api/cli/benchmark-runs", headers=srv.auth("mixed"), params={"limit": 50}
    ).json()
    statuses = [r["status"] for r in page["benchmark_runs"]]
    assert set(statuses) == {"finished", "running"} and len(statuses) == 40


def test_e5_fingerprint_equals_spec_fingerprint(srv: LocalServer, http: httpx.Client) -> None:
    spec = {
        "experiment_config": {"benchmark": "Terminal-Bench 2.1"},
        "tasks_config": {"categories": ["games"], "task_names": ["terminal-bench/git-multibranch"]},
        "agents": [
            {"harness": "codex", "model": {"type": "provider", "model": "openai/gpt-5", "api_key_secret": "OPENAI_API_KEY"}, "env": {"A": "agent", "B": "b"}},
            {"harness": "terminus-2", "model": {"type": "hosted", "base_model": "Qwen/Qwen3-8B", "lora_model_name": "my-lora"}, "env": {}},
        ],
        "execution_config": {"attempts_per_task": 2, "max_concurrent_attempts": 2, "timeout_multiplier": 1.5},
        "env_config": {"A": "global", "LOG_LEVEL": "info"},
    }  # fmt: skip
    run = submit(http, spec)
    detail = http.get(f"/api/cli/benchmark-runs/{run['id']}").json()
    conf = detail["configuration"]
    observed = adoption_fingerprint(
        conf["benchmark_id"],
        conf["task_filters"],
        conf["config"],
        [(a["harness"], a["model"], a["environment_variables"]) for a in detail["agents"]],
    )
    assert observed == spec_fingerprint(spec, conf["benchmark_id"])
    assert detail["agents"][1]["model"] == "Qwen/Qwen3-8B:my-lora"
    assert detail["agents"][0]["environment_variables"] == {
        "A": "agent",
        "B": "b",
        "LOG_LEVEL": "info",
    }
    other = dict(spec, env_config={"A": "global"})
    assert observed != spec_fingerprint(other, conf["benchmark_id"])


# --------------------------------------------------------------------------- logs


def test_logs_page_backwards_with_cursors(srv: LocalServer, http: httpx.Client) -> None:
    body = tb_body()
    body["tasks_config"] = {"categories": ["security"]}
    run = submit(http, body)
    advance_to(srv, http, run["name"], {"finished", "failed"}, step=50)
    pages = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 4, "direction": "older"}
        if cursor:
            params["cursor"] = cursor
        page = http.get(f"/api/cli/benchmark-runs/{run['name']}/logs", params=params).json()
        pages.append(page["logs"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    older = [e for p in reversed(pages) for e in p]
    newer = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/logs", params={"limit": 200, "direction": "newer"}
    ).json()
    assert older == newer["logs"] and newer["next_cursor"] is None
    assert older[0]["step"] == "submit" and older[-1]["step"] == "complete"
    for page in pages:
        stamps = [e["timestamp"] for e in page]
        assert stamps == sorted(stamps) and len(page) <= 4
    assert all({"timestamp", "level", "step", "message"} <= set(e) for e in older)
    assert (
        http.get(f"/api/cli/benchmark-runs/{run['id']}/logs", params={"limit": 201}).status_code
        == 400
    )
    bad = http.get(f"/api/cli/benchmark-runs/{run['id']}/logs", params={"cursor": "garbage"})
    assert bad.status_code == 400


# --------------------------------------------------------------------------- outputs


def download_all(http: httpx.Client, run_id: str, files: list[dict[str, Any]]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for start in range(0, len(files), 500):
        batch = files[start : start + 500]
        r = http.post(
            f"/api/cli/benchmark-runs/{run_id}/outputs/download-urls",
            json={"items": [{"path": f["path"], "token": f["token"]} for f in batch]},
        )
        assert r.status_code == 200, r.text
        assert r.json()["expires_in"] == 900
        for item in r.json()["items"]:
            # A plain GET without any Osmosis header or Authorization, like the SDK.
            got = httpx.get(item["url"])
            assert got.status_code == 200, got.text
            out[item["path"]] = got.content
    return out


def test_outputs_unavailable_while_pending(http: httpx.Client) -> None:
    run = submit(http, tb_body())
    r = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest", params={"types": "summary"}
    )
    assert r.status_code == 409
    assert (
        r.json()["error"] == "Outputs are not yet available for pending or queued benchmark runs."
    )


def test_manifest_sizes_are_exact_for_every_file(srv: LocalServer, http: httpx.Client) -> None:
    body = tb_body(execution_config={"attempts_per_task": 2})
    body["tasks_config"] = {"categories": ["security", "games"]}
    run = submit(http, body)
    advance_to(srv, http, run["name"], {"finished", "failed"}, step=50)
    r = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest",
        params={"types": "summary,results,artifacts,logs"},
    )
    manifest = r.json()
    files = manifest["files"]
    paths = [f["path"] for f in files]
    assert {"summary.csv", "results.csv", "logs.txt"} <= set(paths) and len(paths) == len(
        set(paths)
    )
    assert all(
        p in ("summary.csv", "results.csv", "logs.txt")
        or (p.startswith("artifacts/") and p.count("/") >= 2)
        for p in paths
    )
    assert manifest["totals"] == {"files": len(files), "bytes": sum(f["size"] for f in files)}
    contents = download_all(http, run["id"], files)
    for f in files:
        assert len(contents[f["path"]]) == f["size"], f["path"]
    results = contents["results.csv"].decode().splitlines()
    detail = http.get(f"/api/cli/benchmark-runs/{run['id']}").json()
    assert len(results) - 1 == detail["progress"]["ingested"]
    only = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest", params={"types": "summary"}
    ).json()
    assert [f["path"] for f in only["files"]] == ["summary.csv"]
    bad = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest", params={"types": "summary,bogus"}
    )
    assert bad.status_code == 400 and "bogus" in bad.json()["error"]


def test_running_run_serves_a_consistent_snapshot(srv: LocalServer, http: httpx.Client) -> None:
    body = tb_body()
    body["tasks_config"] = {"categories": ["software-engineering"]}
    run = submit(http, body)
    detail = advance_to(srv, http, run["name"], {"running"}, step=2)
    srv.clock.advance(15)
    files = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest",
        params={"types": "summary,results,logs"},
    ).json()["files"]
    srv.clock.advance(10)  # the run moves on between manifest and download
    contents = download_all(http, run["id"], files)
    assert all(len(contents[f["path"]]) == f["size"] for f in files)
    later = http.get(
        f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest", params={"types": "results"}
    ).json()["files"]
    assert detail["benchmark_run"]["status"] == "running"
    assert later[0]["size"] > next(f for f in files if f["path"] == "results.csv")["size"]


def test_presigned_urls_expire_and_refresh(make_local_server: Any) -> None:
    clock = FakeClock()
    server = make_local_server(clock=clock, faults=Faults(presign_ttl_s=60))
    server.platform.set_secret("default", "OPENAI_API_KEY", "v")
    with httpx.Client(base_url=server.url, headers=server.auth()) as http:
        run = submit(http, tb_body())
        clock.advance(400)
        files = http.get(
            f"/api/cli/benchmark-runs/{run['id']}/outputs/manifest", params={"types": "summary"}
        ).json()["files"]
        urls = http.post(
            f"/api/cli/benchmark-runs/{run['id']}/outputs/download-urls",
            json={"items": [{"path": "summary.csv", "token": files[0]["token"]}]},
        ).json()
        assert urls["expires_in"] == 60
        url = urls["items"][0]["url"]
        assert url.startswith(server.url + "/_presigned/")
        assert httpx.get(url).status_code == 200
        clock.advance(61)
        expired = httpx.get(url)
        assert expired.status_code == 403
        fresh = http.post(
            f"/api/cli/benchmark-runs/{run['id']}/outputs/download-urls",
            json={"items": [{"path": "summary.csv", "token": files[0]["token"]}]},
        ).json()["items"][0]["url"]
        again = httpx.get(fresh)
        assert again.status_code == 200 and len(again.content) == files[0]["size"]
        forged = url.replace("/_presigned/", "/_presigned/x")
        assert httpx.get(forged).status_code == 403
        unknown = http.post(
            f"/api/cli/benchmark-runs/{run['id']}/outputs/download-urls",
            json={"items": [{"path": "artifacts/nope/logs/agent.log"}]},
        )
        assert unknown.status_code == 404
        too_many = http.post(
            f"/api/cli/benchmark-runs/{run['id']}/outputs/download-urls",
            json={"items": [{"path": "summary.csv"}] * 501},
        )
        assert too_many.status_code == 400


# --------------------------------------------------------------------------- secrets


def test_secret_routes(srv: LocalServer, http: httpx.Client) -> None:
    bad = http.post(
        "/api/cli/environment-secrets", json={"name": "lower_case", "value": "v", "scope": "user"}
    )
    assert bad.status_code == 400
    too_long = http.post("/api/cli/environment-secrets", json={"name": "A" * 256, "value": "v"})
    assert too_long.status_code == 400
    value = "secret-value-7c1e"
    for i in range(60):
        r = http.post(
            "/api/cli/environment-secrets",
            json={"name": f"KEY_{i:02d}", "value": value, "scope": "user"},
        )
        assert r.status_code == 200 and value not in r.text
    created = r.json()
    assert {"id", "name", "scope", "created_at", "updated_at"} <= set(created) and created[
        "scope"
    ] == "user"
    all_names: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = http.get(
            "/api/cli/environment-secrets", params={"scope": "all", "limit": 50, "offset": offset}
        ).json()
        assert value not in str(page)
        all_names.extend(s["name"] for s in page["environment_secrets"])
        offset = page["next_offset"]
    assert len(all_names) == 61 and page["platform_url"].endswith("/secrets")
    ws_only = http.get("/api/cli/environment-secrets", params={"scope": "workspace"}).json()
    assert [s["name"] for s in ws_only["environment_secrets"]] == ["OPENAI_API_KEY"]
    assert http.get("/api/cli/environment-secrets", params={"scope": "bogus"}).status_code == 400
    deleted = http.request(
        "DELETE", "/api/cli/environment-secrets", json={"name": "KEY_00", "scope": "user"}
    )
    assert deleted.status_code == 200
    gone = http.request(
        "DELETE", "/api/cli/environment-secrets", json={"name": "KEY_00", "scope": "user"}
    )
    assert gone.status_code == 404
    wrong_scope = http.request(
        "DELETE", "/api/cli/environment-secrets", json={"name": "KEY_01", "scope": "workspace"}
    )
    assert wrong_scope.status_code == 404
    assert (
        http.get("/api/cli/environment-secrets", params={"scope": "user"}).json()["total_count"]
        == 59
    )
    srv.platform.store.close()
    db = sqlite3.connect(srv.data_dir / "platform.sqlite3")
    assert all(value not in str(row) for row in db.execute("SELECT * FROM secrets"))
    db.close()


# --------------------------------------------------------------------------- feature gate


def test_feature_gate_blocks_benchmark_and_run_routes(make_local_server: Any) -> None:
    server = make_local_server(faults=Faults(benchmarks_disabled=True))
    for path in (
        "/api/cli/benchmarks",
        "/api/cli/benchmarks/hle",
        "/api/cli/benchmark-runs",
        "/api/cli/benchmark-runs/x/logs",
    ):
        r = httpx.get(server.url + path, headers=server.auth())
        assert (
            r.status_code == 403
            and r.json()["error"] == "Benchmarks is not available for your account"
        )
    post = httpx.post(server.url + "/api/cli/benchmark-runs", headers=server.auth(), json=tb_body())
    assert post.status_code == 403
    assert (
        httpx.get(server.url + "/api/cli/environment-secrets", headers=server.auth()).status_code
        == 200
    )
    assert server.platform.submit_count() == 0
