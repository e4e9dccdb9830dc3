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
