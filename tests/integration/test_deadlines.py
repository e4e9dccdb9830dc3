"""Overall deadlines and shutdown, over real loopback HTTP to a misbehaving local Platform.

The trickling, silent and stalled-download faults of the local Platform's server are the
seam; deadlines are set to a second or two so the tests are quick, and no test asserts a
duration (the timed figures are in tests/reliability/test_stalls.py): each asserts which
error ends the request, and that it ends at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reconciler import deadlines, shutdown
from reconciler.errors import OutcomeUnknownError, TransportError, UsageError
from reconciler.local_platform import Faults, LocalPlatform, LocalTransport
from reconciler.local_platform.faults import FaultInjector
from reconciler.local_platform.server import ServerHandle
from reconciler.outputs.downloads import download_run
from reconciler.platform import PlatformClient
from reconciler.platform.client import RetryPolicy
from tests.support.emulator import serve

WORKSPACE = "deadlines"
QUICK = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=False)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[LocalPlatform, ServerHandle]]:
    platform = LocalPlatform(tmp_path / "platform", speed=5000, workspaces=(WORKSPACE,))
    handle = serve(platform, quiet=True)
    try:
        yield platform, handle
    finally:
        shutdown.clear()
        handle.close()


def _faults(platform: LocalPlatform, faults: Faults) -> None:
    platform.faults = faults
    platform.injector = FaultInjector(faults)


def _client(url: str, deadline: float) -> PlatformClient:
    return PlatformClient(url, token="t", workspace=WORKSPACE, retry=QUICK, deadline=deadline)


def test_guard_reaches_the_sockets_of_the_platform_and_download_clients() -> None:
    client = PlatformClient("http://127.0.0.1:9", token="t", workspace=WORKSPACE)
    assert deadlines.is_guarded(client._http)
    plain = deadlines.guard(httpx.Client())
    assert deadlines.is_guarded(plain)
    assert deadlines.guard(plain) is plain and deadlines.is_guarded(plain)  # idempotent
    # An in-process transport has no socket to guard; it is left as it is.
    local = httpx.Client(
        transport=LocalTransport(LocalPlatform(Path("/nonexistent-unused"), workspaces=()))
    )
    assert not deadlines.is_guarded(deadlines.guard(local))


def test_send_goes_to_the_transport_for_the_url_and_keeps_no_cookies() -> None:
    seen: list[str] = []

    def answer(name: str) -> httpx.MockTransport:
        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(f"{name} {request.url.host} cookie={request.headers.get('Cookie')}")
            return httpx.Response(200, headers={"Set-Cookie": "session=abc"}, content=b"ok")

        return httpx.MockTransport(handler)

    # A mount stands for a proxy from the environment: send must pick it, as Client.send does.
    client = httpx.Client(
        transport=answer("direct"), mounts={"http://proxied.test": answer("proxy")}
    )
    assert hasattr(client, "_transport_for_url")  # else send falls back to Client.send
    for url in ("http://store.test/a", "http://store.test/b", "http://proxied.test/c"):
        response = deadlines.send(client, client.build_request("GET", url))
        assert response.read() == b"ok" and response.request.url == httpx.URL(url)
        response.close()
    assert seen == [
        "direct store.test cookie=None",
        "direct store.test cookie=None",  # the first answer's cookie is not sent back
        "proxy proxied.test cookie=None",
    ]
    assert not client.cookies


def test_send_names_the_request_in_a_transport_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    client = httpx.Client(transport=httpx.MockTransport(refuse))
    request = client.build_request("GET", "http://store.test/a")
    with pytest.raises(httpx.ConnectError) as caught:
        deadlines.send(client, request)
    assert caught.value.request is request
    client.close()
    with pytest.raises(RuntimeError, match="closed"):  # a closed client refuses, as before
        deadlines.send(client, request)


@pytest.mark.parametrize(
    "fault", [Faults(trickle_ms=200), Faults(silent=True)], ids=["trickle", "silent"]
)
def test_a_trickling_or_silent_platform_ends_a_request_at_its_deadline(served, fault) -> None:
    platform, handle = served
    _faults(platform, fault)
    with _client(handle.url, deadline=1.0) as client, pytest.raises(TransportError) as info:
        client.list_runs()
    assert info.value.message == (
        f"The Platform at {handle.url} did not complete GET /benchmark-runs within the 1 s "
        "deadline (it answers too slowly, or not at all)."
    )
    assert "OSMOSIS_PLATFORM_DEADLINE" in (info.value.hint or "")


def test_a_submit_that_meets_a_silent_platform_is_outcome_unknown(served) -> None:
    platform, handle = served
    _faults(platform, Faults(silent=True))
    with _client(handle.url, deadline=1.0) as client, pytest.raises(OutcomeUnknownError) as info:
        client.submit_run({"experiment_config": {"benchmark": "hle"}, "agents": []})
    assert "no answer within the 1 s deadline" in info.value.message


def test_a_server_that_answers_slowly_but_in_time_is_not_cut(served) -> None:
    platform, handle = served
    _faults(platform, Faults(trickle_ms=1))
    with _client(handle.url, deadline=30.0) as client:
        assert client.list_runs() == []


def test_shutdown_ends_a_request_blocked_in_another_thread(served) -> None:
    platform, handle = served
    _faults(platform, Faults(silent=True))
    errors: list[BaseException] = []

    def blocked() -> None:
        with _client(handle.url, deadline=600.0) as client:
            try:
                client.list_runs()
            except BaseException as exc:  # noqa: BLE001 - inspected below
                errors.append(exc)

    thread = threading.Thread(target=blocked, daemon=True)
    thread.start()
    for _ in range(3000):  # until the request is on the wire (or the thread gave up)
        if platform.fault_counts.get("silent", 0) or not thread.is_alive():
            break
        time.sleep(0.02)
    assert platform.fault_counts.get("silent", 0), errors
    shutdown.begin()
    thread.join(60)  # a liveness bound, not a figure: without shutdown this waits 600 s
    assert not thread.is_alive()
    (error,) = errors
    assert isinstance(error, TransportError)
    assert error.message == (
        "The request to the Platform (GET /benchmark-runs) was interrupted: the command is "
        "shutting down."
    )


def test_a_stalled_presigned_download_fails_that_file_at_its_deadline(served, tmp_path) -> None:
    platform, handle = served
    platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-deadlines-suite-value")
    (run_id,) = platform.seed_runs(WORKSPACE, 1, status_mix={"finished": 1})
    _faults(platform, Faults(stall_downloads_after=1))
    with _client(handle.url, deadline=30.0) as client, httpx.Client() as http:
        result = download_run(
            client,
            http,
            run_id=run_id,
            run_name="stalled",
            root=tmp_path / "downloads",
            types=("summary", "results"),
            deadline=1.0,
        )
    assert platform.fault_counts.get("stalled_download", 0) >= 1
    assert result.files_downloaded == 1
    ((path, error),) = result.failures
    assert error.startswith("Download did not complete within its 1 s deadline"), error
    run_dir = tmp_path / "downloads" / "stalled"
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(result.sha256)  # no .partial


def test_budgets_nest_and_the_inner_one_never_outlives_the_outer() -> None:
    with deadlines.budget(1.0) as outer:
        with deadlines.budget(100.0) as inner:
            now = time.monotonic()
            assert inner.remaining(now) == outer.remaining(now) <= 1.0
            assert deadlines.current() is inner
        assert deadlines.current() is outer
    assert deadlines.current() is None


@pytest.mark.parametrize("raw", ["abc", "0", "-5", "nan", "inf"])
def test_a_deadline_from_the_environment_must_be_a_positive_number(raw: str) -> None:
    with pytest.raises(UsageError) as info:
        deadlines.seconds_from_env(
            "OSMOSIS_PLATFORM_DEADLINE", 60.0, {"OSMOSIS_PLATFORM_DEADLINE": raw}
        )
    assert info.value.message == f"OSMOSIS_PLATFORM_DEADLINE={raw!r} is not a number of seconds"
    assert deadlines.seconds_from_env("X", 60.0, {"X": " 2.5 "}) == 2.5
    assert deadlines.seconds_from_env("X", 60.0, {}) == 60.0
