"""PlatformClient request shapes, pagination, error mapping, retries and redaction.

Driven through ``httpx.MockTransport``: every request the client sends is recorded and
answered by a small handler, and ``sleep`` is injected so retries never wait.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from reconciler.errors import (
    AuthError,
    ConflictError,
    FeatureGateError,
    InvalidResponseError,
    MissingSecretsError,
    NotFoundError,
    OutcomeUnknownError,
    PlatformError,
    PlatformValidationError,
    RateLimitedError,
    ScopeError,
    ServerError,
    TransportError,
    UpgradeRequiredError,
    UsageError,
)
from reconciler.log import configure_logging, reset_logging
from reconciler.platform import (
    PlatformClient,
    RetryPolicy,
    parse_retry_after,
)
from reconciler.platform.models import ManifestFile

BASE = "https://platform.example.test/prefix"
TOKEN = "tok-SENTINEL-9f8e7d6c5b4a"

Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport handler that records requests and replays scripted responses."""

    def __init__(self, *responses: httpx.Response | Exception | Handler) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, Exception):
            raise item
        if callable(item) and not isinstance(item, httpx.Response):
            return item(request)
        return item

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


def ok(body: Any, status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


def make_client(handler: Handler, **kwargs: Any) -> tuple[PlatformClient, list[float]]:
    delays: list[float] = []
    kwargs.setdefault("token", TOKEN)
    if "git_identity" not in kwargs:
        kwargs.setdefault("workspace", "Acme Team")
    kwargs.setdefault("retry", RetryPolicy(jitter=False))
    client = PlatformClient(
        BASE, transport=httpx.MockTransport(handler), sleep=delays.append, **kwargs
    )
    return client, delays


def body_of(request: httpx.Request) -> Any:
    return json.loads(request.content) if request.content else None


RUN = {"id": "run-1", "name": "bright-otter", "status": "running"}
RUN_DETAIL = {"benchmark_run": RUN, "configuration": {}, "agents": []}


# --------------------------------------------------------------------------- request shapes


def test_common_headers_and_workspace_scope() -> None:
    rec = Recorder(ok({"benchmark_runs": [], "next_offset": None}))
    client, _ = make_client(rec)
    client.list_runs()
    request = rec.last
    assert request.method == "GET"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["X-Osmosis-CLI-Version"] == "0.3.8"
    assert request.headers["User-Agent"].startswith("osmosis-reconciler/")
    assert "osmosis-cli" in request.headers["User-Agent"]
    assert request.headers["X-Osmosis-Workspace"] == "Acme Team"
    assert "X-Osmosis-Git" not in request.headers
    assert request.content == b""


def test_git_scope_header_when_no_workspace() -> None:
    rec = Recorder(ok({"benchmark_runs": []}))
    client, _ = make_client(rec, git_identity="Acme/Bench")
    client.list_runs()
    assert rec.last.headers["X-Osmosis-Git"] == "acme/bench"
    assert "X-Osmosis-Workspace" not in rec.last.headers


def test_workspace_wins_when_both_scopes_are_given() -> None:
    rec = Recorder(ok({"benchmark_runs": []}))
    client, _ = make_client(rec, workspace="ws", git_identity="acme/bench")
    client.list_runs()
    assert rec.last.headers["X-Osmosis-Workspace"] == "ws"
    assert "X-Osmosis-Git" not in rec.last.headers


def test_scoped_route_without_scope_fails_before_any_request() -> None:
    rec = Recorder(ok({}))
    client = PlatformClient(BASE, token=TOKEN, transport=httpx.MockTransport(rec))
    with pytest.raises(ScopeError) as info:
        client.get_run("x")
    assert info.value.hint and "--workspace" in info.value.hint
    assert rec.requests == [] and client.request_count == 0


def test_no_authorization_header_without_token() -> None:
    rec = Recorder(ok({"benchmark_runs": []}))
    client, _ = make_client(rec, token=None)
    client.list_runs()
    assert "Authorization" not in rec.last.headers


@pytest.mark.parametrize(
    ("call", "method", "raw_path"),
    [
        (
            lambda c: c.get_benchmark("Terminal-Bench 2.1"),
            "GET",
            "/benchmarks/Terminal-Bench%202.1",
        ),
        (lambda c: c.get_benchmark("acme/custom@3"), "GET", "/benchmarks/acme%2Fcustom%403"),
        (lambda c: c.get_run("hle smoke/1"), "GET", "/benchmark-runs/hle%20smoke%2F1"),
        (lambda c: c.stop_run("run/1"), "POST", "/benchmark-runs/run%2F1/stop"),
    ],
)
def test_path_segments_are_percent_encoded_with_no_safe_chars(
    call: Callable[[PlatformClient], Any], method: str, raw_path: str
) -> None:
    rec = Recorder(ok({"benchmark": {"id": "b"}, **RUN_DETAIL}))
    client, _ = make_client(rec)
    call(client)
    assert rec.last.method == method
    assert rec.last.url.raw_path.decode() == "/prefix/api/cli" + raw_path


def test_list_benchmarks_query() -> None:
    rec = Recorder(ok({"benchmarks": [{"id": "b1", "name": "HLE", "source_ref": "hle"}]}))
    client, _ = make_client(rec)
    benchmarks = client.list_benchmarks()
    assert [b.key for b in benchmarks] == ["hle"]
    assert rec.last.url.raw_path == b"/prefix/api/cli/benchmarks?limit=50&offset=0"


def test_list_runs_with_benchmark_filter_query_order() -> None:
    rec = Recorder(ok({"benchmark_runs": [RUN], "next_offset": None}))
    client, _ = make_client(rec)
    runs = client.list_runs(benchmark_id="bench id/1")
    assert [r.id for r in runs] == ["run-1"]
    assert rec.last.url.raw_path == (
        b"/prefix/api/cli/benchmark-runs?limit=50&offset=0&benchmark=bench+id%2F1"
    )


def test_submit_run_posts_body_and_parses_response() -> None:
    response = {
        "id": "benchmark-run-1",
        "name": "bright-otter",
        "status": "pending",
        "workflow_id": "benchmark-run/benchmark-run-1",
        "task_count": 12,
        "created_at": "2026-07-25T00:00:00Z",
        "platform_url": "https://platform.osmosis.ai/acme/benchmarks/benchmark-run-1",
    }
    rec = Recorder(ok(response, 201))
    client, _ = make_client(rec)
    spec = {"experiment_config": {"benchmark": "hle"}, "agents": [{"model": {}, "env": {}}]}
    submitted = client.submit_run(spec)
    assert rec.last.method == "POST"
    assert rec.last.url.raw_path == b"/prefix/api/cli/benchmark-runs"
    assert body_of(rec.last) == spec
    assert submitted.id == "benchmark-run-1"
    assert submitted.name == "bright-otter"
    assert submitted.workflow_id == "benchmark-run/benchmark-run-1"
    assert submitted.task_count == 12
    assert submitted.created_at == datetime(2026, 7, 25, tzinfo=UTC)
    assert submitted.platform_url and submitted.platform_url.endswith("benchmark-run-1")


def test_stop_run_posts_empty_object() -> None:
    rec = Recorder(ok({"status": "stopped"}))
    client, _ = make_client(rec)
    client.stop_run("run-1")
    assert rec.last.method == "POST"
    assert rec.last.content == b"{}"


def test_stop_run_accepts_204() -> None:
    rec = Recorder(httpx.Response(204))
    client, _ = make_client(rec)
    client.stop_run("run-1")
    assert client.request_count == 1


def test_get_logs_query_and_parsing() -> None:
    rec = Recorder(
        ok(
            {
                "logs": [
                    {"timestamp": "t1", "level": "info", "step": "setup", "message": "a"},
                    {"message": "b", "details": {"k": 1}},
                ],
                "next_cursor": "c 2",
            }
        )
    )
    client, _ = make_client(rec)
    page = client.get_logs("hle-smoke", limit=20, cursor="abc/=", direction="older")
    assert rec.last.url.raw_path == (
        b"/prefix/api/cli/benchmark-runs/hle-smoke/logs?limit=20&direction=older&cursor=abc%2F%3D"
    )
    assert [e.message for e in page.entries] == ["a", "b"]
    assert page.entries[1].level == "" and page.entries[1].details == {"k": 1}
    assert page.next_cursor == "c 2" and page.has_more


def test_get_logs_without_cursor_and_end_of_logs() -> None:
    rec = Recorder(ok({"logs": [], "next_cursor": None}))
    client, _ = make_client(rec)
    page = client.get_logs("r")
    assert rec.last.url.raw_path.endswith(b"/logs?limit=50&direction=older")
    assert not page.has_more


@pytest.mark.parametrize("limit", [0, 201])
def test_get_logs_rejects_out_of_range_limit(limit: int) -> None:
    client, _ = make_client(Recorder(ok({})))
    with pytest.raises(ValueError):
        client.get_logs("r", limit=limit)


def test_get_manifest_query_and_parsing() -> None:
    rec = Recorder(
        ok(
            {
                "files": [
                    {"path": "summary.csv", "size": 10, "token": "export-1"},
                    {
                        "path": "artifacts/result_01/logs/agent.log",
                        "size": 30,
                        "token": "result-01",
                    },
                    {"path": "logs.txt", "size": 40},
                ],
                "totals": {"files": 3, "bytes": 80},
            }
        )
    )
    client, _ = make_client(rec)
    manifest = client.get_manifest("run 1", ["summary", "results"])
    assert rec.last.url.raw_path == (
        b"/prefix/api/cli/benchmark-runs/run%201/outputs/manifest?types=summary%2Cresults"
    )
    assert [(f.path, f.size, f.token) for f in manifest.files] == [
        ("summary.csv", 10, "export-1"),
        ("artifacts/result_01/logs/agent.log", 30, "result-01"),
        ("logs.txt", 40, None),
    ]
    assert manifest.totals == {"files": 3, "bytes": 80}


@pytest.mark.parametrize(
    "files",
    [
        "nope",
        [{"path": "", "size": 1}],
        [{"path": "a", "size": -1}],
        [{"path": "a", "size": True}],
        [{"path": "a", "size": 1.5}],
        [{"path": "a", "size": 1, "token": 5}],
        ["a"],
    ],
)
def test_get_manifest_rejects_malformed_files(files: Any) -> None:
    client, _ = make_client(Recorder(ok({"files": files})))
    with pytest.raises(InvalidResponseError):
        client.get_manifest("r", ["summary"])


def test_get_manifest_rejects_unknown_type() -> None:
    client, _ = make_client(Recorder(ok({})))
    with pytest.raises(ValueError):
        client.get_manifest("r", ["all"])


def test_download_urls_body_matching_and_fallback_keys() -> None:
    files = [
        ManifestFile(path="summary.csv", size=1, token="export-1"),
        ManifestFile(path="logs.txt", size=2),
        ManifestFile(path="results.csv", size=3, token="export-2"),
        ManifestFile(path="missing.csv", size=4),
    ]
    rec = Recorder(
        ok(
            {
                "files": [
                    {"path": "logs.txt", "presignedUrl": "https://s3/logs"},
                    {"path": "summary.csv", "token": "export-1", "url": "https://s3/summary"},
                    # token differs, but only one item has this path: matched by path
                    {
                        "path": "results.csv",
                        "token": "other",
                        "presigned_url": "https://s3/results",
                    },
                ],
                "expires_in": 900,
            }
        )
    )
    client, _ = make_client(rec)
    urls = client.get_download_urls("run-1", files)
    assert rec.last.url.raw_path == b"/prefix/api/cli/benchmark-runs/run-1/outputs/download-urls"
    assert body_of(rec.last) == {
        "items": [
            {"path": "summary.csv", "token": "export-1"},
            {"path": "logs.txt"},
            {"path": "results.csv", "token": "export-2"},
            {"path": "missing.csv"},
        ]
    }
    assert [(u.path, u.token, u.url, u.expires_in) for u in urls] == [
        ("summary.csv", "export-1", "https://s3/summary", 900),
        ("logs.txt", None, "https://s3/logs", 900),
        ("results.csv", "export-2", "https://s3/results", 900),
    ]


def test_download_urls_ambiguous_path_without_exact_match_is_left_out() -> None:
    files = [ManifestFile(path="a.csv", size=1, token="t")]
    rec = Recorder(
        ok(
            {
                "items": [
                    {"path": "a.csv", "token": "x", "url": "https://s3/1"},
                    {"path": "a.csv", "token": "y", "url": "https://s3/2"},
                ]
            }
        )
    )
    client, _ = make_client(rec)
    assert client.get_download_urls("r", files) == []


def test_download_urls_are_requested_in_batches_of_500() -> None:
    files = [ManifestFile(path=f"artifacts/r/{i}.txt", size=1, token=f"t{i}") for i in range(1201)]

    def answer(request: httpx.Request) -> httpx.Response:
        items = body_of(request)["items"]
        return ok({"urls": [{**item, "url": f"https://s3/{item['path']}"} for item in items]})

    rec = Recorder(answer)
    client, _ = make_client(rec)
    urls = client.get_download_urls("r", files)
    assert [len(body_of(r)["items"]) for r in rec.requests] == [500, 500, 201]
    assert [u.path for u in urls] == [f.path for f in files]
    assert urls[0].expires_in is None


def test_download_urls_without_files_sends_nothing() -> None:
    rec = Recorder(ok({}))
    client, _ = make_client(rec)
    assert client.get_download_urls("r", []) == []
    assert rec.requests == []


def test_list_secrets_query_and_pages() -> None:
    page1 = {
        "environment_secrets": [
            {"id": "s1", "name": "OPENAI_API_KEY", "scope": "user"},
            {"id": "s2", "name": "HF_TOKEN", "scope": "workspace"},
        ],
        "next_offset": 2,
        "has_more": True,
    }
    page2 = {"environment_secrets": [{"id": "s3", "name": "X", "scope": None}], "next_offset": None}
    rec = Recorder(ok(page1), ok(page2))
    client, _ = make_client(rec)
    secrets = client.list_secrets()
    assert [(s.name, s.scope) for s in secrets] == [
        ("OPENAI_API_KEY", "user"),
        ("HF_TOKEN", "workspace"),
        ("X", None),
    ]
    assert [r.url.raw_path for r in rec.requests] == [
        b"/prefix/api/cli/environment-secrets?limit=50&offset=0&scope=all",
        b"/prefix/api/cli/environment-secrets?limit=50&offset=2&scope=all",
    ]


def test_set_secret_body() -> None:
    rec = Recorder(ok({"id": "s1", "name": "OPENAI_API_KEY", "scope": "workspace"}))
    client, _ = make_client(rec)
    record = client.set_secret("OPENAI_API_KEY", "sk-value", scope="workspace")
    assert rec.last.method == "POST"
    assert rec.last.url.raw_path == b"/prefix/api/cli/environment-secrets"
    assert body_of(rec.last) == {
        "name": "OPENAI_API_KEY",
        "value": "sk-value",
        "scope": "workspace",
    }
    assert record.name == "OPENAI_API_KEY" and record.scope == "workspace"
    assert "sk-value" not in repr(record)


def test_delete_secret_sends_json_body_on_delete() -> None:
    rec = Recorder(httpx.Response(204))
    client, _ = make_client(rec)
    client.delete_secret("OPENAI_API_KEY")
    assert rec.last.method == "DELETE"
    assert rec.last.url.raw_path == b"/prefix/api/cli/environment-secrets"
    assert body_of(rec.last) == {"name": "OPENAI_API_KEY", "scope": "user"}


@pytest.mark.parametrize(("name", "scope"), [("lower", "user"), ("1ABC", "user"), ("OK", "team")])
def test_secret_arguments_are_checked_before_sending(name: str, scope: str) -> None:
    rec = Recorder(ok({}))
    client, _ = make_client(rec)
    with pytest.raises(UsageError):
        client.set_secret(name, "v", scope=scope)
    assert rec.requests == []


def test_list_workspaces_sends_no_scope_header() -> None:
    rec = Recorder(
        ok(
            {
                "workspaces": [
                    {
                        "id": "w1",
                        "name": "Acme Team",
                        "role": "owner",
                        "has_billing_setup": True,
                        "connected_repo": {"id": "r", "repo_full_name": "acme/bench"},
                    },
                    {"id": "w2", "name": "Solo", "connected_repo": None},
                ]
            }
        )
    )
    client, _ = make_client(rec, git_identity="acme/bench")
    workspaces = client.list_workspaces()
    assert rec.last.url.raw_path == b"/prefix/api/cli/workspaces"
    assert "X-Osmosis-Workspace" not in rec.last.headers
    assert "X-Osmosis-Git" not in rec.last.headers
    assert [(w.name, w.connected_repo) for w in workspaces] == [
        ("Acme Team", "acme/bench"),
        ("Solo", None),
    ]


def test_verify_sends_git_identity_but_never_workspace() -> None:
    rec = Recorder(ok({"user": {"id": "u", "email": "a@b"}}))
    client, _ = make_client(rec, workspace="ws", git_identity="acme/bench")
    assert client.verify() == {"user": {"id": "u", "email": "a@b"}}
    assert rec.last.url.raw_path == b"/prefix/api/cli/verify"
    assert rec.last.headers["X-Osmosis-Git"] == "acme/bench"
    assert "X-Osmosis-Workspace" not in rec.last.headers


def test_version_warning_is_kept() -> None:
    rec = Recorder(
        ok({"benchmark_runs": []}),
        ok(
            {"benchmark_runs": []},
            200,
            **{
                "X-Osmosis-Version-Status": "deprecated",
                "X-Osmosis-Version-Message": "Please upgrade soon.",
            },
        ),
    )
    client, _ = make_client(rec)
    client.list_runs()
    assert client.version_warning is None
    client.list_runs()
    assert client.version_status == "deprecated"
    assert client.version_warning == "Please upgrade soon."


def test_current_version_status_sets_no_warning() -> None:
    rec = Recorder(ok({"benchmark_runs": []}, 200, **{"X-Osmosis-Version-Status": "current"}))
    client, _ = make_client(rec)
    client.list_runs()
    assert client.version_status == "current" and client.version_warning is None


# --------------------------------------------------------------------------- pagination


def _runs_page(start: int, count: int, next_offset: int | None) -> httpx.Response:
    runs = [
        {"id": f"run-{i}", "name": f"n{i}", "status": "finished"}
        for i in range(start, start + count)
    ]
    return ok({"benchmark_runs": runs, "total_count": 120, "next_offset": next_offset})


def test_list_runs_follows_next_offset_until_null() -> None:
    rec = Recorder(_runs_page(0, 50, 50), _runs_page(50, 50, 100), _runs_page(100, 20, None))
    client, _ = make_client(rec)
    runs = client.list_runs()
    assert [r.id for r in runs] == [f"run-{i}" for i in range(120)]
    offsets = [r.url.params["offset"] for r in rec.requests]
    assert offsets == ["0", "50", "100"]
    assert all(r.url.params["limit"] == "50" for r in rec.requests)
    assert client.request_count == 3


def test_list_runs_stops_on_empty_page_even_with_next_offset() -> None:
    rec = Recorder(_runs_page(0, 50, 50), _runs_page(50, 0, 100), _runs_page(100, 5, None))
    client, _ = make_client(rec)
    assert len(client.list_runs()) == 50
    assert len(rec.requests) == 2


def test_list_runs_deduplicates_runs_seen_on_two_pages() -> None:
    rec = Recorder(_runs_page(0, 50, 50), _runs_page(49, 3, None))
    client, _ = make_client(rec)
    assert [r.id for r in client.list_runs()][-3:] == ["run-49", "run-50", "run-51"]
    assert len(rec.requests) == 2


def test_pagination_never_revisits_an_offset() -> None:
    rec = Recorder(_runs_page(0, 2, 2), _runs_page(2, 2, 0))
    client, _ = make_client(rec)
    assert len(client.list_runs()) == 4
    assert len(rec.requests) == 2


def test_iter_run_pages_yields_one_list_per_page() -> None:
    rec = Recorder(_runs_page(0, 50, 50), _runs_page(50, 7, None))
    client, _ = make_client(rec)
    assert [len(page) for page in client.iter_run_pages()] == [50, 7]


def test_list_without_expected_key_is_invalid() -> None:
    client, _ = make_client(Recorder(ok({"runs": []})))
    with pytest.raises(InvalidResponseError):
        client.list_runs()


def test_run_without_id_is_invalid() -> None:
    client, _ = make_client(Recorder(ok({"benchmark_runs": [{"name": "x"}]})))
    with pytest.raises(InvalidResponseError):
        client.list_runs()


@pytest.mark.parametrize("content", [b"[1, 2]", b"not json", b'"text"', b"null"])
def test_non_object_success_body_is_invalid(content: bytes) -> None:
    client, _ = make_client(Recorder(httpx.Response(200, content=content)))
    with pytest.raises(InvalidResponseError) as info:
        client.get_run("r")
    assert info.value.status_code == 200


# --------------------------------------------------------------------------- error mapping


def err(status: int, body: Any = None, text: str | None = None, **headers: str) -> httpx.Response:
    if text is not None:
        return httpx.Response(status, text=text, headers=headers)
    return httpx.Response(status, json=body, headers=headers)


def raised(
    response: httpx.Response, call: Callable[[PlatformClient], Any] | None = None
) -> PlatformError:
    client, _ = make_client(Recorder(response), retry=RetryPolicy(max_attempts=1, jitter=False))
    with pytest.raises(PlatformError) as info:
        (call or (lambda c: c.get_run("r")))(client)
    return info.value


def test_401_token_expired() -> None:
    error = raised(err(401, {"error": "expired", "code": "TOKEN_EXPIRED"}))
    assert type(error) is AuthError
    assert "expired" in error.message
    assert error.status_code == 401 and error.code == "TOKEN_EXPIRED"
    assert "unset OSMOSIS_TOKEN" in (error.hint or "")
    assert "new personal access token" in (error.hint or "")


def test_401_token_revoked() -> None:
    error = raised(err(401, {"error": "revoked", "code": "TOKEN_REVOKED"}))
    assert type(error) is AuthError and "revoked" in error.message
    assert "unset OSMOSIS_TOKEN" in (error.hint or "")


def test_401_other_code_keeps_server_text() -> None:
    error = raised(err(401, {"error": "Invalid token", "code": "TOKEN_INVALID"}))
    assert type(error) is AuthError and "Invalid token" in error.message


def test_feature_gate() -> None:
    error = raised(err(403, {"error": "Benchmarks is not available for your account"}))
    assert type(error) is FeatureGateError
    assert error.message == "Benchmarks is not available for your account."
    assert error.status_code == 403
    assert "--platform local" in (error.hint or "")


def test_subscription_required_is_a_feature_gate() -> None:
    error = raised(
        err(403, {"error": "Active subscription required", "code": "SUBSCRIPTION_REQUIRED"})
    )
    assert type(error) is FeatureGateError


def test_other_403_is_a_plain_platform_error() -> None:
    error = raised(err(403, {"error": "Forbidden"}))
    assert type(error) is PlatformError and error.message == "Forbidden"


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "GIT_SCOPE_HEADER_REQUIRED", "requires an Osmosis workspace"),
        (404, "GIT_REPOSITORY_NOT_CONNECTED", "not connected"),
        (403, "GIT_REPOSITORY_ACCESS_DENIED", "does not have access"),
        (400, "WORKSPACE_SCOPE_HEADER_CONFLICT", "not both"),
        (403, "WORKSPACE_SCOPE_HEADER_ACCESS_DENIED", "selected workspace"),
    ],
)
def test_scope_codes(status: int, code: str, expected: str) -> None:
    error = raised(err(status, {"error": "server text", "code": code}))
    assert type(error) is ScopeError
    assert expected in error.message and error.code == code and error.status_code == status
    assert "--workspace" in (error.hint or "")


def test_400_renders_issues_with_did_you_mean() -> None:
    body = {
        "error": "Invalid benchmark config",
        "issues": [
            {
                "key": "rollout_bach_size",
                "message": "Unrecognized key",
                "key_correction": "rollout_batch_size",
            },
            {"key": "agents", "message": "Too many agents"},
            "plain issue",
        ],
    }
    error = raised(err(400, body))
    assert type(error) is PlatformValidationError
    assert error.message.splitlines() == [
        "Invalid benchmark config",
        "  - rollout_bach_size: Unrecognized key (did you mean 'rollout_batch_size'?)",
        "  - agents: Too many agents",
        "  - plain issue",
    ]


def test_message_wins_over_error_and_is_trimmed() -> None:
    error = raised(err(400, {"message": "  shown  ", "error": "hidden"}))
    assert error.message == "shown"


def test_blank_message_falls_back_to_error() -> None:
    error = raised(err(400, {"message": "   ", "error": "used"}))
    assert error.message == "used"


def test_no_message_gives_status_and_truncated_body() -> None:
    error = raised(err(400, text="x" * 300))
    assert error.message == "API error: HTTP 400. Response: " + "x" * 200 + "...(truncated)"
    error = raised(err(400, text=""))
    assert error.message == "API error: HTTP 400."
    error = raised(err(400, {"code": "WHATEVER"}))
    assert error.message.startswith("API error: HTTP 400. Response: {")
    assert error.code == "WHATEVER"


def test_404_not_found() -> None:
    error = raised(err(404, {"error": "Benchmark run not found"}))
    assert type(error) is NotFoundError and error.message == "Benchmark run not found"


def test_404_missing_secrets() -> None:
    body = {
        "error": "Secret(s) not found: OPENAI_API_KEY, HF_TOKEN",
        "platform_url": "https://platform.osmosis.ai/acme/secrets",
    }
    error = raised(err(404, body), lambda c: c.submit_run({"agents": []}))
    assert isinstance(error, MissingSecretsError) and isinstance(error, NotFoundError)
    assert error.names == ("OPENAI_API_KEY", "HF_TOKEN")
    assert error.message == "Secret(s) not found: OPENAI_API_KEY, HF_TOKEN"
    hint_lines = (error.hint or "").splitlines()
    assert "  osmosis secret set OPENAI_API_KEY" in hint_lines
    assert "  osmosis secret set HF_TOKEN" in hint_lines
    assert hint_lines[-1] == "Or add them in the UI: https://platform.osmosis.ai/acme/secrets"


def test_missing_secrets_found_in_error_when_message_is_generic() -> None:
    body = {"message": "Submit failed", "error": "Secret(s) not found: JUDGE_KEY"}
    error = raised(err(404, body))
    assert isinstance(error, MissingSecretsError) and error.names == ("JUDGE_KEY",)


def test_409_conflict_and_deployment_conflict() -> None:
    error = raised(err(409, {"error": "Benchmark is still syncing"}))
    assert type(error) is ConflictError and error.message == "Benchmark is still syncing"
    error = raised(err(409, {"error": "deployment_conflict"}))
    assert type(error) is ConflictError
    assert error.code == "deployment_conflict"
    assert "deployment or release transition" in error.message


def test_426_upgrade_required() -> None:
    error = raised(err(426, {"status": "unsupported", "message": "Too old", "latest": "0.4.0"}))
    assert type(error) is UpgradeRequiredError and error.message == "Too old"
    error = raised(err(426, text=""))
    assert type(error) is UpgradeRequiredError and "no longer supported" in error.message


def test_422_is_a_plain_platform_error() -> None:
    error = raised(err(422, {"error": "Unprocessable"}))
    assert type(error) is PlatformError and error.status_code == 422


def test_429_after_retries_is_rate_limited_with_retry_after() -> None:
    error = raised(err(429, {"error": "Too many requests"}, **{"Retry-After": "7"}))
    assert type(error) is RateLimitedError and error.retry_after == 7.0


def test_5xx_after_retries_is_server_error() -> None:
    error = raised(err(502, text="<html>bad gateway</html>"))
    assert type(error) is ServerError and error.status_code == 502
    assert "bad gateway" in error.message


def test_connection_refused_is_transport_error() -> None:
    client, delays = make_client(Recorder(httpx.ConnectError("Connection refused")))
    with pytest.raises(TransportError) as info:
        client.get_run("r")
    assert type(info.value) is TransportError
    assert "Could not connect" in info.value.message and "Connection refused" in info.value.message
    assert client.request_count == 5 and len(delays) == 4


def test_read_timeout_on_a_read_is_transport_error() -> None:
    client, _ = make_client(Recorder(httpx.ReadTimeout("timed out")))
    with pytest.raises(TransportError) as info:
        client.list_runs()
    assert type(info.value) is TransportError and "timed out" in info.value.message


# --------------------------------------------------------------------------- retries


def test_reads_retry_5xx_then_succeed_with_exponential_backoff() -> None:
    rec = Recorder(err(500, {}), err(503, {}), err(502, {}), ok(RUN_DETAIL))
    client, delays = make_client(rec)
    assert client.get_run("r").summary.id == "run-1"
    assert delays == [0.25, 0.5, 1.0]
    assert client.request_count == 4


def test_backoff_is_capped_and_bounded() -> None:
    rec = Recorder(err(500, {}))
    client, delays = make_client(
        rec, retry=RetryPolicy(max_attempts=7, base_delay=1.0, max_delay=4.0, jitter=False)
    )
    with pytest.raises(ServerError):
        client.get_run("r")
    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert len(rec.requests) == 7


def test_full_jitter_stays_within_the_exponential_ceiling() -> None:
    rec = Recorder(err(500, {}))
    client, delays = make_client(
        rec, retry=RetryPolicy(max_attempts=5, base_delay=0.5, max_delay=8.0)
    )
    with pytest.raises(ServerError):
        client.get_run("r")
    ceilings = [0.5, 1.0, 2.0, 4.0]
    assert len(delays) == 4
    assert all(0.0 <= d <= c for d, c in zip(delays, ceilings, strict=True))


def test_429_honours_retry_after_seconds_and_caps_it() -> None:
    rec = Recorder(
        err(429, {}, **{"Retry-After": "3"}),
        err(429, {}, **{"Retry-After": "3600"}),
        err(429, {}),
        ok(RUN_DETAIL),
    )
    client, delays = make_client(rec, retry=RetryPolicy(jitter=False, max_retry_after=30.0))
    client.get_run("r")
    assert delays == [3.0, 30.0, 1.0]


def test_429_honours_retry_after_http_date() -> None:
    future = format_datetime(datetime.now(UTC) + timedelta(hours=2), usegmt=True)
    past = format_datetime(datetime.now(UTC) - timedelta(hours=2), usegmt=True)
    rec = Recorder(
        err(429, {}, **{"Retry-After": future}),
        err(429, {}, **{"Retry-After": past}),
        ok(RUN_DETAIL),
    )
    client, delays = make_client(rec, retry=RetryPolicy(jitter=False, max_retry_after=12.0))
    client.get_run("r")
    assert delays == [12.0, 0.0]


def test_parse_retry_after() -> None:
    assert parse_retry_after("5") == 5.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0


def test_4xx_is_never_retried() -> None:
    rec = Recorder(err(404, {"error": "nope"}))
    client, delays = make_client(rec)
    with pytest.raises(NotFoundError):
        client.get_run("r")
    assert len(rec.requests) == 1 and delays == []


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ReadError("Connection reset by peer"),
        httpx.WriteTimeout("write timed out"),
    ],
)
def test_reads_and_stops_retry_after_send_failures(failure: Exception) -> None:
    rec = Recorder(failure, failure, ok({"status": "stopped"}))
    client, delays = make_client(rec)
    client.stop_run("run-1")
    assert len(rec.requests) == 3 and len(delays) == 2


def test_download_urls_retry_on_5xx() -> None:
    rec = Recorder(err(503, {}), ok({"items": [{"path": "a", "url": "https://s3/a"}]}))
    client, delays = make_client(rec)
    urls = client.get_download_urls("r", [ManifestFile(path="a", size=1)])
    assert [u.url for u in urls] == ["https://s3/a"] and delays == [0.25]


def test_a_retried_post_sends_its_own_body_again() -> None:
    # The answer to a failed attempt (here a 503's body) must never become the body of the
    # next attempt: the retry of E9 asks for the same items.
    rec = Recorder(
        err(503, {"error": "busy"}), ok({"items": [{"path": "a", "url": "https://s3/a"}]})
    )
    client, _delays = make_client(rec)
    client.get_download_urls("r", [ManifestFile(path="a", size=1, token="t")])
    sent = [json.loads(r.content) for r in rec.requests]
    assert sent == [{"items": [{"path": "a", "token": "t"}]}] * 2


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ReadTimeout("read timed out"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.ReadError("Connection reset by peer"),
        httpx.WriteError("Broken pipe"),
    ],
)
def test_submit_is_never_retried_after_send(failure: Exception) -> None:
    rec = Recorder(failure, ok({"id": "would-be-duplicate"}))
    client, delays = make_client(rec)
    with pytest.raises(OutcomeUnknownError) as info:
        client.submit_run({"agents": []})
    assert len(rec.requests) == 1 and delays == []
    assert "may have created the run" in info.value.message
    assert "osmosis-plan" in (info.value.hint or "")


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_submit_5xx_is_outcome_unknown_and_not_retried(status: int) -> None:
    rec = Recorder(err(status, {"error": "upstream"}), ok({"id": "dup"}))
    client, delays = make_client(rec)
    with pytest.raises(OutcomeUnknownError) as info:
        client.submit_run({"agents": []})
    assert info.value.status_code == status
    assert len(rec.requests) == 1 and delays == []


def test_submit_retries_connect_phase_failures() -> None:
    rec = Recorder(
        httpx.ConnectError("Connection refused"),
        httpx.ConnectTimeout("connect timed out"),
        ok(SUBMITTED),
    )
    client, delays = make_client(rec)
    assert client.submit_run({"agents": []}).id == "run-9"
    assert len(rec.requests) == 3 and delays == [0.25, 0.5]


def test_submit_connect_failures_exhausted_is_plain_transport_error() -> None:
    rec = Recorder(httpx.ConnectError("Connection refused"))
    client, _ = make_client(rec)
    with pytest.raises(TransportError) as info:
        client.submit_run({"agents": []})
    assert type(info.value) is TransportError
    assert len(rec.requests) == 5


SUBMITTED = {
    "id": "run-9",
    "name": "calm-yak",
    "status": "pending",
    "workflow_id": "benchmark-run/run-9",
    "task_count": 1,
    "created_at": "2026-07-25T00:00:00Z",
}


def test_submit_429_is_not_retried_blindly() -> None:
    # A limiter may answer 429 after the run was committed: the applier looks for the run
    # before it submits again, so the client must not retry on its own.
    rec = Recorder(err(429, {}, **{"Retry-After": "2"}), ok(SUBMITTED))
    client, delays = make_client(rec)
    with pytest.raises(RateLimitedError) as info:
        client.submit_run({"agents": []})
    assert info.value.retry_after == 2.0
    assert len(rec.requests) == 1 and delays == []


@pytest.mark.parametrize(
    "body",
    [
        {**SUBMITTED, "id": 5},
        {**SUBMITTED, "name": None},
        {**SUBMITTED, "created_at": "yesterday"},
        {**SUBMITTED, "task_count": "many"},
        {"id": "run-9"},
    ],
)
def test_submit_reply_of_the_wrong_shape_is_outcome_unknown(body: dict) -> None:
    client, _ = make_client(Recorder(ok(body)))
    with pytest.raises(OutcomeUnknownError) as info:
        client.submit_run({"agents": []})
    assert "unusable" in info.value.message


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, content=b"<html>ok</html>"),
        httpx.Response(201, json={"name": "no-id"}),
        httpx.Response(200, json=[{"id": "x"}]),
    ],
)
def test_submit_with_unusable_success_body_is_outcome_unknown(response: httpx.Response) -> None:
    client, _ = make_client(Recorder(response))
    with pytest.raises(OutcomeUnknownError):
        client.submit_run({"agents": []})


def test_submit_4xx_is_not_retried_and_maps_normally() -> None:
    rec = Recorder(err(409, {"error": "Benchmark acme/custom@1.0 is still syncing"}))
    client, delays = make_client(rec)
    with pytest.raises(ConflictError):
        client.submit_run({"agents": []})
    assert len(rec.requests) == 1 and delays == []


def test_request_count_is_thread_safe() -> None:
    from concurrent.futures import ThreadPoolExecutor

    rec = Recorder(ok({"benchmark_runs": []}))
    client, _ = make_client(rec)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: client.list_runs(), range(200)))
    assert client.request_count == 200


# --------------------------------------------------------------------------- redaction


def _all_text(error: BaseException) -> str:
    parts = [str(error), repr(error), getattr(error, "hint", "") or "", str(error.args)]
    parts += [str(getattr(error, "code", ""))]
    cause = error.__cause__ or error.__context__
    if cause is not None and not error.__suppress_context__:
        parts.append(_all_text(cause))
    return "\n".join(parts)


ECHOING_FAILURES: list[httpx.Response | Exception] = [
    err(400, {"error": f"bad token {TOKEN}", "issues": [{"key": TOKEN, "message": TOKEN}]}),
    err(401, {"error": f"token {TOKEN} expired", "code": "TOKEN_EXPIRED"}),
    err(401, {"error": f"Authorization: Bearer {TOKEN}"}),
    err(403, {"error": f"{TOKEN} Benchmarks is not available for your account"}),
    err(403, {"error": f"forbidden {TOKEN}", "code": TOKEN}),
    err(404, {"error": f"Secret(s) not found: {TOKEN}", "platform_url": f"https://x/{TOKEN}"}),
    err(409, {"error": f"conflict {TOKEN}"}),
    err(426, {"message": f"upgrade {TOKEN}"}),
    err(429, {"error": f"slow down {TOKEN}"}, **{"Retry-After": "0"}),
    err(500, text=f"Traceback: Authorization: Bearer {TOKEN}"),
    err(418, text=f"teapot {TOKEN}"),
    httpx.ConnectError(f"connect failed; headers={{'authorization': 'Bearer {TOKEN}'}}"),
    httpx.ReadTimeout(f"timeout for https://x/?token={TOKEN}"),
    httpx.ReadError(f"reset {TOKEN}"),
    httpx.RemoteProtocolError(f"protocol {TOKEN}"),
    httpx.LocalProtocolError(f"Illegal header value b'Bearer {TOKEN}'"),
    httpx.UnsupportedProtocol(f"bad url https://{TOKEN}@x"),
]


@pytest.mark.parametrize("failure", ECHOING_FAILURES)
@pytest.mark.parametrize("operation", ["read", "submit"])
def test_token_never_appears_in_any_error(
    failure: httpx.Response | Exception, operation: str
) -> None:
    client, _ = make_client(Recorder(failure), retry=RetryPolicy(max_attempts=2, jitter=False))
    call = (lambda: client.get_run("r")) if operation == "read" else (lambda: client.submit_run({}))
    with pytest.raises(PlatformError) as info:
        call()
    text = _all_text(info.value)
    assert TOKEN not in text
    assert info.value.message and info.value.hint
    assert TOKEN not in repr(client)


def test_secret_values_are_redacted_from_submit_and_set_errors() -> None:
    value = "sk-provided-VALUE-123"
    client, _ = make_client(Recorder(err(400, {"error": f"bad value {value}"})))
    with pytest.raises(PlatformValidationError) as info:
        client.submit_run({"secrets": {"required": ["X"], "provided": {"X": value}}})
    assert value not in _all_text(info.value)
    with pytest.raises(PlatformValidationError) as info:
        client.set_secret("X", value)
    assert value not in _all_text(info.value)


def test_token_not_in_log_output() -> None:
    # Logging is process-global: an in-process command run earlier leaves its own stream and
    # level configured, so this test sets up its own (as `-v` does: a retry is an info line)
    # and resets it.
    stream = io.StringIO()
    configure_logging(fmt="json", verbosity=1, command="osmosis-plan", stream=stream)
    try:
        rec = Recorder(httpx.ReadError(f"reset {TOKEN}"), ok(RUN_DETAIL))
        client, _ = make_client(rec)
        client.get_run("r")
    finally:
        reset_logging()
    assert "platform.retry" in stream.getvalue()
    assert TOKEN not in stream.getvalue()


def test_token_with_control_characters_is_refused_without_echo() -> None:
    with pytest.raises(UsageError) as info:
        PlatformClient(BASE, token="abc\ndef", workspace="w")
    assert "abc" not in _all_text(info.value)


def test_client_repr_and_context_manager() -> None:
    rec = Recorder(ok({"benchmark_runs": []}))
    with PlatformClient(
        BASE, token=TOKEN, workspace="w", transport=httpx.MockTransport(rec)
    ) as client:
        client.list_runs()
        assert TOKEN not in repr(client) and "platform.example.test" in repr(client)


def test_a_short_placeholder_token_is_not_a_secret_and_a_real_one_is() -> None:
    # The embedded Platform's placeholder token is "local", like the workspace: redacting
    # it would erase the workspace and the --platform value from every message.
    rec = Recorder(err(404, {"error": "No run in workspace local; pass --platform local"}))
    client, _ = make_client(rec, token="local", retry=RetryPolicy(max_attempts=1))
    with pytest.raises(NotFoundError) as info:
        client.get_run("r")
    assert info.value.message == "No run in workspace local; pass --platform local"
    rec = Recorder(err(404, {"error": f"token {TOKEN} unknown at https://x/?q={TOKEN}"}))
    client, _ = make_client(rec, retry=RetryPolicy(max_attempts=1))
    with pytest.raises(NotFoundError) as info:
        client.get_run("r")
    assert info.value.message == "token [REDACTED] unknown at https://x/?q=[REDACTED]"


def test_undecodable_response_is_retried_for_reads_and_unknown_for_submit() -> None:
    failure = httpx.DecodingError("bad gzip")
    rec = Recorder(failure, ok(RUN_DETAIL))
    client, delays = make_client(rec)
    assert client.get_run("r").summary.id == "run-1" and delays == [0.25]
    client, _ = make_client(Recorder(failure))
    with pytest.raises(OutcomeUnknownError):
        client.submit_run({})


def test_submit_retries_pool_timeout_because_nothing_was_sent() -> None:
    rec = Recorder(httpx.PoolTimeout("no free connection"), ok(SUBMITTED))
    client, _ = make_client(rec)
    assert client.submit_run({}).id == "run-9"
    assert len(rec.requests) == 2


def test_iter_run_pages_starts_at_the_given_offset() -> None:
    rec = Recorder(_runs_page(50, 50, 100), _runs_page(100, 20, None))
    client, _ = make_client(rec)
    pages = list(client.iter_run_pages(start=50))
    assert [page[0].id for page in pages] == ["run-50", "run-100"]
    assert [r.url.params["offset"] for r in rec.requests] == ["50", "100"]


def test_run_walk_keeps_each_listed_run_as_an_observed_run_once() -> None:
    from reconciler.engine.observe import RunWalk
    from reconciler.model import ObservedRun

    # The second page repeats the first page's last run (a run created meanwhile).
    rec = Recorder(_runs_page(0, 50, 50), _runs_page(49, 3, None))
    client, _ = make_client(rec)
    walk = RunWalk(client)
    walk.all()
    assert walk.complete and walk.pages == 2
    assert list(walk.runs) == [f"run-{i}" for i in range(52)]
    assert all(type(run) is ObservedRun for run in walk.runs.values())
    assert walk.runs["run-7"] == ObservedRun(id="run-7", name="n7", status="finished")
