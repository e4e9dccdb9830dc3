"""The download client of a command: built once, on a thread when an apply asks early."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from reconciler.engine.context import Context
from reconciler.model import Settings
from reconciler.platform import PlatformClient


def context(make_http) -> Context:
    client = PlatformClient("http://127.0.0.1:9", token="t", workspace="w")
    return Context(
        repo_root=Path("."),
        settings=Settings(),
        platform_id="http://127.0.0.1:9",
        workspace="w",
        client=client,
        make_http=make_http,
        git=None,
    )


def test_prepared_client_is_built_once_on_a_thread_and_shared():
    built: list[str] = []
    go = threading.Event()

    def make() -> httpx.Client:
        go.wait(10)
        built.append(threading.current_thread().name)
        return httpx.Client()

    ctx = context(make)
    ctx.prepare_http()
    ctx.prepare_http()  # a second call starts nothing
    with ThreadPoolExecutor(4) as pool:
        asked = [pool.submit(lambda: ctx.http) for _ in range(8)]
        go.set()
        clients = {id(f.result()) for f in asked}
    assert len(clients) == 1 and built == ["osmosis-http"]
    ctx.close()


def test_an_error_building_the_prepared_client_reaches_the_caller():
    def make() -> httpx.Client:
        raise OSError("no CA bundle")

    ctx = context(make)
    ctx.prepare_http()
    with pytest.raises(OSError, match="no CA bundle"):
        _ = ctx.http
    ctx.close()


def test_without_preparing_the_client_is_built_on_first_use():
    built: list[str] = []

    def make() -> httpx.Client:
        built.append(threading.current_thread().name)
        return httpx.Client()

    ctx = context(make)
    assert built == []
    assert ctx.http is ctx.http
    assert built == [threading.current_thread().name]
    ctx.close()


def test_each_thread_gets_its_own_download_client_the_first_the_prepared_one():
    built: list[httpx.Client] = []

    def make() -> httpx.Client:
        built.append(httpx.Client())
        return built[-1]

    ctx = context(make)
    ctx.prepare_http()
    start = threading.Barrier(4)

    def ask() -> tuple[int, int]:
        start.wait(10)  # four threads at once, each asking twice
        return id(ctx.thread_http()), id(ctx.thread_http())

    with ThreadPoolExecutor(4) as pool:
        pairs = list(pool.map(lambda _: ask(), range(4)))
    assert all(a == b for a, b in pairs)  # a thread keeps its client
    assert {a for a, _ in pairs} == {id(c) for c in built} and len(built) == 4
    assert id(ctx.http) in {a for a, _ in pairs}  # the prepared client is one of them
    ctx.close()
    assert all(c.is_closed for c in built)


def test_the_download_clients_of_a_command_share_one_tls_context(tmp_path, monkeypatch):
    import ssl

    from reconciler.engine.context import open_context

    loads: list[int] = []
    real = ssl.create_default_context

    def counting(*args, **kwargs):  # what loads the CA bundle
        loads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    ctx = open_context(
        repo_root=tmp_path,
        platform_flag="https://platform.example",
        workspace_flag="w",
        overrides={},
        env={"OSMOSIS_TOKEN": "t"},
    )
    loads.clear()  # the Platform client's own
    clients = [ctx.make_http() for _ in range(3)]
    assert loads == [1]
    for client in clients:
        client.close()
    ctx.close()
