"""PlatformClient against the local Platform over real loopback HTTP.

Every client method, pagination across pages, the error tree, and the retry behaviour
under the local Platform's fault knobs. ``sleep`` is injected so retries never wait; the
servers listen on 127.0.0.1 with a free port and are closed by their fixtures.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.errors import (
    AuthError,
    ConflictError,
    FeatureGateError,
    MissingSecretsError,
    NotFoundError,
    OutcomeUnknownError,
    PlatformValidationError,
    RateLimitedError,
    ScopeError,
    ServerError,
    TransportError,
)
from reconciler.local_platform import Faults, LocalPlatform
from reconciler.model import RunStatus, spec_fingerprint
from reconciler.platform import PlatformClient, RetryPolicy
from tests.support.bodies import agent, hle_body, tb_body
from tests.support.emulator import serve as serve_platform

TOKEN = "integration-TOKEN-5c1d2e3f4a"
WORKSPACE = "default"

TB_BODY = tb_body(agents=[agent(env={"LOG_LEVEL": "debug"})], env_config={"REGION": "eu"})
HLE_BODY = hle_body(execution_config={"judge_api_key_secret": "JUDGE_KEY"})


@dataclass
class Env:
    """One local Platform served on loopback, one workspace in it, and a client factory."""

    platform: LocalPlatform
    url: str
    workspace: str = WORKSPACE
    delays: list[float] = field(default_factory=list)
    clients: list[PlatformClient] = field(default_factory=list)

    def client(self, **kwargs: Any) -> PlatformClient:
        kwargs.setdefault("token", TOKEN)
        if "git_identity" not in kwargs:
            kwargs.setdefault("workspace", self.workspace)
        kwargs.setdefault("retry", RetryPolicy(jitter=False))
        client = PlatformClient(self.url, sleep=self.delays.append, timeout=10.0, **kwargs)
        self.clients.append(client)
        return client

    def close_clients(self) -> None:
        for client in self.clients:
            client.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """``serve(**platform_kwargs) -> Env``: a server of its own, for fault knobs."""
    envs: list[Any] = []

    def start(**kwargs: Any) -> Env:
        platform = LocalPlatform(tmp_path / f"platform-{len(envs)}", **kwargs)
        handle = serve_platform(platform)
        env = Env(platform, handle.url)
        envs.append((env, handle))
        return env

    yield start
    for env, handle in envs:
        env.close_clients()
        handle.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalPlatform, str]]:
    """One fault-free server for the module; tests isolate themselves by workspace."""
    platform = LocalPlatform(tmp_path_factory.mktemp("shared-platform"))
    handle = serve_platform(platform)
    yield platform, handle.url
    handle.close()


@pytest.fixture
def env(shared: tuple[LocalPlatform, str], request: pytest.FixtureRequest) -> Iterator[Env]:
    platform, url = shared
    # A workspace of its own per test: runs, secrets and repos never leak between tests.
    env = Env(platform, url, workspace=f"ws-{request.node.name}")
    yield env
    env.close_clients()


# --------------------------------------------------------------------------- benchmarks


def test_list_benchmarks_and_info_by_key_name_and_id(env: Env) -> None:
    client = env.client()
    benchmarks = {b.key: b for b in client.list_benchmarks()}
    assert {"hle", "terminal-bench-2-1", "gdpval"} <= benchmarks.keys()
    assert {b.sync_status for b in benchmarks.values()} >= {"ready", "syncing", "failed"}
    failed = next(b for b in benchmarks.values() if b.sync_status == "failed")
    assert failed.sync_error

    by_key = client.get_benchmark("terminal-bench-2-1")
    by_name = client.get_benchmark("Terminal-Bench 2.1")  # the space travels as %20
    by_id = client.get_benchmark(by_key.id)
    assert by_key == by_name == by_id
    info = by_key.to_info()
    assert info.task_count == 89 == len(info.task_names)
    assert info.requires_harness and info.default_harness == "terminus-2"
    assert "terminal-bench/git-multibranch" in info.task_names
    assert sum(info.categories.values()) == 89
    assert {t.difficulty for t in by_key.tasks} <= {"easy", "medium", "hard", None}

    hle = client.get_benchmark("hle").to_info()
    assert hle.required_secret_names == ("HF_TOKEN",)
    assert hle.task_sets["parity"] == 249
    assert hle.requires_judge_api_key or hle.requires_judge_model


def test_keyed_benchmark_with_slash_is_encoded(env: Env) -> None:
    client = env.client()
    syncing = next(b for b in client.list_benchmarks() if b.sync_status == "syncing")
    assert "/" in syncing.key
    assert client.get_benchmark(syncing.key).id == syncing.id


def test_unknown_benchmark_is_not_found(env: Env) -> None:
    with pytest.raises(NotFoundError):
        env.client().get_benchmark("no-such-benchmark")


# --------------------------------------------------------------------------- secrets


def test_secret_set_list_delete(env: Env) -> None:
    client = env.client()
    personal = client.set_secret("OPENAI_API_KEY", "sk-personal-value-1")
    shared = client.set_secret("HF_TOKEN", "hf-shared-value-2", scope="workspace")
    assert (personal.name, personal.scope) == ("OPENAI_API_KEY", "user")
    assert (shared.name, shared.scope) == ("HF_TOKEN", "workspace")

    everything = {(s.name, s.scope) for s in client.list_secrets()}
    assert everything == {("OPENAI_API_KEY", "user"), ("HF_TOKEN", "workspace")}
    assert [s.name for s in client.list_secrets("workspace")] == ["HF_TOKEN"]
    assert "sk-personal-value-1" not in repr(client.list_secrets())

    client.delete_secret("HF_TOKEN", scope="workspace")
    assert [s.name for s in client.list_secrets()] == ["OPENAI_API_KEY"]
    with pytest.raises(NotFoundError):
        client.delete_secret("HF_TOKEN", scope="workspace")


def test_secrets_pagination_over_50(env: Env) -> None:
    for i in range(61):
        env.platform.set_secret(env.workspace, f"SECRET_{i:03d}", f"value-{i}")
    client = env.client()
    names = [s.name for s in client.list_secrets()]
    assert sorted(names) == [f"SECRET_{i:03d}" for i in range(61)]
    assert client.request_count == 2


# --------------------------------------------------------------------------- runs


def test_submit_with_missing_secrets_names_every_record(env: Env) -> None:
    client = env.client()
    with pytest.raises(MissingSecretsError) as info:
        client.submit_run(HLE_BODY)
    assert set(info.value.names) == {"OPENAI_API_KEY", "JUDGE_KEY", "HF_TOKEN"}
    for name in info.value.names:
        assert f"osmosis secret set {name}" in (info.value.hint or "")
    assert env.platform.submit_count(env.workspace) == 0


def test_submit_against_syncing_benchmark_conflicts(env: Env) -> None:
    client = env.client()
    client.set_secret("OPENAI_API_KEY", "sk-1")
    syncing = next(b for b in client.list_benchmarks() if b.sync_status == "syncing")
    body = {**TB_BODY, "experiment_config": {"benchmark": syncing.key}}
    body.pop("tasks_config")
    with pytest.raises(ConflictError):
        client.submit_run(body)


def test_submit_invalid_body_is_a_validation_error(env: Env) -> None:
    with pytest.raises(PlatformValidationError) as info:
        env.client().submit_run({"experiment_config": {"benchmark": "hle"}, "agents": []})
    assert info.value.status_code == 400


def test_submit_info_logs_stop(env: Env) -> None:
    client = env.client()
    client.set_secret("OPENAI_API_KEY", "sk-1")
    submitted = client.submit_run(TB_BODY)
    assert submitted.status == "pending" and submitted.task_count == 1
    assert submitted.name and submitted.created_at is not None
    assert submitted.workflow_id

    by_name = client.get_run(submitted.name)
    by_id = client.get_run(submitted.id)
    assert by_name.summary.id == by_id.summary.id == submitted.id
    assert by_name.summary.benchmark_name == "Terminal-Bench 2.1"
    assert by_name.summary.agent_count == 1 and by_name.summary.expected_results == 1
    benchmark_id = client.get_benchmark("terminal-bench-2-1").id
    # What adoption relies on: the run's detail fingerprints like the body that created it.
    assert by_name.fingerprint() == spec_fingerprint(TB_BODY, benchmark_id)
    assert by_name.to_observed().fingerprint == by_name.fingerprint()

    listed = client.list_runs()
    assert [r.id for r in listed] == [submitted.id]
    assert [r.id for r in client.list_runs(benchmark_id=benchmark_id)] == [submitted.id]
    assert client.list_runs(benchmark_id=client.get_benchmark("hle").id) == []

    page = client.get_logs(submitted.name)
    assert page.entries and all(e.message for e in page.entries)

    client.stop_run(submitted.id)
    assert client.get_run(submitted.id).summary.status == "stopped"
    with pytest.raises(NotFoundError):
        client.get_run("no-such-run")


def test_stop_of_a_terminal_run_conflicts(env: Env) -> None:
    run_id = env.platform.seed_runs(env.workspace, 1, status_mix={RunStatus.FINISHED: 1.0})[0]
    client = env.client(retry=RetryPolicy(max_attempts=1))
    # The local Platform's documented choice for stopping a terminal run: 409.
    with pytest.raises(ConflictError) as info:
        client.stop_run(run_id)
    assert "already" in info.value.message


def test_logs_cursor_pages_further_back(env: Env) -> None:
    run_id = env.platform.seed_runs(env.workspace, 1, status_mix={RunStatus.FINISHED: 1.0})[0]
    client = env.client()
    newest = client.get_logs(run_id, limit=2)
    assert len(newest.entries) == 2 and newest.next_cursor
    older = client.get_logs(run_id, limit=2, cursor=newest.next_cursor)
    assert older.entries and older.entries[-1].timestamp <= newest.entries[0].timestamp
    everything = client.get_logs(run_id, limit=200)
    assert len(everything.entries) >= len(newest.entries) + len(older.entries)


def test_list_runs_pagination_over_50(env: Env) -> None:
    ids = env.platform.seed_runs(
        env.workspace, 123, status_mix={RunStatus.FINISHED: 0.5, RunStatus.RUNNING: 0.5}
    )
    client = env.client()
    runs = client.list_runs()
    assert sorted(r.id for r in runs) == sorted(ids)
    assert len({r.id for r in runs}) == 123
    assert client.request_count == 3  # 50 + 50 + 23, then next_offset null
    observed = [r.to_observed() for r in runs]
    assert {o.status for o in observed} <= {"finished", "running", "pending", "queued"}


def test_outputs_manifest_and_download_urls(env: Env) -> None:
    run_id = env.platform.seed_runs(env.workspace, 1, status_mix={RunStatus.FINISHED: 1.0})[0]
    client = env.client()
    manifest = client.get_manifest(run_id, ["summary", "results", "logs", "artifacts"])
    paths = [f.path for f in manifest.files]
    assert {"summary.csv", "results.csv", "logs.txt"} <= set(paths)
    assert any(p.startswith("artifacts/") for p in paths)
    assert manifest.totals == {"files": len(paths), "bytes": sum(f.size for f in manifest.files)}

    urls = client.get_download_urls(run_id, manifest.files)
    assert [u.path for u in urls] == paths
    assert all(u.expires_in == 900 for u in urls)
    sizes = {f.path: f.size for f in manifest.files}
    # Presigned URLs are fetched with no Osmosis headers and no token. Fetch the fixed
    # files and a few artifacts: enough to prove the URLs match the manifest sizes.
    fetched = [u for u in urls if not u.path.startswith("artifacts/")]
    fetched += [u for u in urls if u.path.startswith("artifacts/")][:4]
    with httpx.Client() as plain:
        for url in fetched:
            response = plain.get(url.url)
            assert response.status_code == 200
            assert len(response.content) == sizes[url.path]


def test_outputs_of_a_pending_run_conflict(env: Env) -> None:
    client = env.client()
    client.set_secret("OPENAI_API_KEY", "sk-1")
    submitted = client.submit_run(TB_BODY)
    with pytest.raises(ConflictError):
        client.get_manifest(submitted.id, ["summary"])


# --------------------------------------------------------------------------- scope, auth, gate


def test_git_scope_workspaces_and_verify(env: Env) -> None:
    env.platform.connect_repo(env.workspace, "Acme/Bench-Git-Scope")
    client = env.client(git_identity="acme/bench-git-scope")
    assert client.list_runs() == []
    workspaces = {w.name: w.connected_repo for w in client.list_workspaces()}
    assert workspaces[env.workspace] == "acme/bench-git-scope"
    verified = client.verify()
    assert verified["user"]["id"] and verified["workspace"]["name"] == env.workspace


def test_scope_errors_with_strict_workspaces(serve: Any) -> None:
    env = serve(auto_workspaces=False)
    with pytest.raises(ScopeError) as info:
        env.client(workspace="nobody").list_runs()
    assert info.value.code == "WORKSPACE_SCOPE_HEADER_ACCESS_DENIED"
    with pytest.raises(ScopeError) as info:
        env.client(git_identity="acme/unknown").list_runs()
    assert info.value.code == "GIT_REPOSITORY_NOT_CONNECTED"


def test_wrong_token_is_auth_error_without_the_token(serve: Any) -> None:
    env = serve(token="the-only-valid-token-123")
    client = env.client(token=TOKEN)
    with pytest.raises(AuthError) as info:
        client.list_benchmarks()
    assert info.value.status_code == 401
    assert TOKEN not in f"{info.value.message} {info.value.hint} {info.value!r}"
    assert env.client(token="the-only-valid-token-123").list_benchmarks()


def test_feature_gate(serve: Any) -> None:
    env = serve(faults=Faults(benchmarks_disabled=True))
    client = env.client()
    with pytest.raises(FeatureGateError):
        client.list_benchmarks()
    with pytest.raises(FeatureGateError):
        client.list_runs()
    assert client.list_secrets() == []


# --------------------------------------------------------------------------- faults and retries


def test_reads_survive_injected_server_errors(serve: Any) -> None:
    env = serve(faults=Faults(error_rate=0.4, seed=7))
    client = env.client(retry=RetryPolicy(max_attempts=12, jitter=False))
    for _ in range(15):
        assert len(client.list_benchmarks()) >= 8
    injected = env.platform.fault_counts.get("error", 0)
    assert injected > 0
    assert client.request_count == 15 + injected
    assert len(env.delays) == injected
    assert set(env.delays) <= {0.25, 0.5, 1.0, 2.0, 4.0, 8.0}


def test_persistent_server_errors_end_in_server_error(serve: Any) -> None:
    env = serve(faults=Faults(error_rate=1.0))
    client = env.client(retry=RetryPolicy(max_attempts=3, jitter=False))
    with pytest.raises(ServerError):
        client.get_run("anything")
    assert client.request_count == 3 and env.delays == [0.25, 0.5]


def test_rate_limit_honours_retry_after(serve: Any) -> None:
    env = serve(faults=Faults(rate_limit_rate=0.5, retry_after_s=3, seed=3))
    client = env.client(retry=RetryPolicy(max_attempts=12, jitter=False))
    for _ in range(10):
        client.list_runs()
    limited = env.platform.fault_counts.get("rate_limit", 0)
    assert limited > 0
    assert env.delays == [3.0] * limited


def test_rate_limit_exhausted_is_rate_limited_error(serve: Any) -> None:
    env = serve(faults=Faults(rate_limit_rate=1.0, retry_after_s=2))
    client = env.client(retry=RetryPolicy(max_attempts=2, jitter=False))
    with pytest.raises(RateLimitedError) as info:
        client.list_runs()
    assert info.value.retry_after == 2.0 and client.request_count == 2


def test_reads_survive_dropped_connections(serve: Any) -> None:
    env = serve(faults=Faults(drop_rate=0.3, seed=11))
    client = env.client(retry=RetryPolicy(max_attempts=12, jitter=False))
    for _ in range(10):
        client.list_runs()
    dropped = env.platform.fault_counts.get("drop", 0)
    assert dropped > 0 and client.request_count == 10 + dropped


def test_drop_after_submit_is_outcome_unknown_and_the_run_exists(serve: Any) -> None:
    env = serve(faults=Faults(drop_after_submit_rate=1.0))
    env.platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-1")
    client = env.client()
    with pytest.raises(OutcomeUnknownError) as info:
        client.submit_run(TB_BODY)
    assert TOKEN not in f"{info.value.message} {info.value.hint}"
    # Sent once, never retried, and the Platform did create the run: adoption finds it.
    assert client.request_count == 1
    assert env.platform.submit_count(WORKSPACE) == 1
    (run,) = client.list_runs()
    benchmark_id = client.get_benchmark("terminal-bench-2-1").id
    assert client.get_run(run.id).fingerprint() == spec_fingerprint(TB_BODY, benchmark_id)


def test_submit_answered_5xx_is_outcome_unknown_and_not_retried(serve: Any) -> None:
    env = serve(faults=Faults(error_rate=1.0))
    env.platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-1")
    client = env.client()
    with pytest.raises(OutcomeUnknownError) as info:
        client.submit_run(TB_BODY)
    assert info.value.status_code in (500, 502, 503)
    assert client.request_count == 1 and env.delays == []


def test_submit_rate_limited_is_left_to_the_caller(serve: Any) -> None:
    # A 429 may come after the run was committed: the client never resubmits on its own
    # (the applier looks for the run first).
    env = serve(faults=Faults(rate_limit_rate=1.0, retry_after_s=1))
    env.platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-1")
    client = env.client(retry=RetryPolicy(max_attempts=3, jitter=False))
    with pytest.raises(RateLimitedError) as info:
        client.submit_run(TB_BODY)
    assert client.request_count == 1 and env.delays == []
    assert info.value.retry_after == 1
    assert env.platform.submit_count() == 0


def test_submit_succeeds_through_rate_limits(serve: Any) -> None:
    env = serve(faults=Faults(rate_limit_rate=0.6, retry_after_s=1, seed=5))
    env.platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-1")
    client = env.client(retry=RetryPolicy(max_attempts=20, jitter=False))
    submitted = client.submit_run(TB_BODY)
    assert env.platform.submit_count() == 1
    assert client.request_count == 1 + env.platform.fault_counts.get("rate_limit", 0)
    assert submitted.id


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_refused_is_retried_then_transport_error() -> None:
    delays: list[float] = []
    client = PlatformClient(
        f"http://127.0.0.1:{_closed_port()}",
        token=TOKEN,
        workspace=WORKSPACE,
        retry=RetryPolicy(max_attempts=3, jitter=False),
        sleep=delays.append,
    )
    with client:
        with pytest.raises(TransportError) as info:
            client.list_runs()
        assert type(info.value) is TransportError
        # A submit that never connected is safe to retry and is not "outcome unknown".
        with pytest.raises(TransportError) as info:
            client.submit_run(TB_BODY)
        assert type(info.value) is TransportError
    assert client.request_count == 6 and delays == [0.25, 0.5, 0.25, 0.5]
    assert TOKEN not in info.value.message


def test_in_process_transport_sees_the_same_platform(env: Env) -> None:
    from reconciler.local_platform import LocalTransport

    run_id = env.platform.seed_runs(env.workspace, 1)[0]
    with PlatformClient(
        "http://localhost",
        token="local",
        workspace=env.workspace,
        transport=LocalTransport(env.platform),
    ) as in_process:
        assert in_process.list_benchmarks() == env.client().list_benchmarks()
        assert [r.id for r in in_process.list_runs()] == [run_id]
