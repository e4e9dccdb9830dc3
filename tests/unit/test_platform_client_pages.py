"""Read-ahead paging of the run list: every run once, whatever the server's page size."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from reconciler.platform import PlatformClient


def run_server(total: int, page: int, *, grow_after: int | None = None):
    """A run list of ``total`` runs served ``page`` at a time, newest first by offset."""
    seen: list[int] = []
    lock = threading.Lock()
    state = {"total": total}

    def handler(request: httpx.Request) -> httpx.Response:
        query = parse_qs(urlparse(str(request.url)).query)
        offset, limit = int(query["offset"][0]), int(query["limit"][0])
        assert limit == 50
        with lock:
            seen.append(offset)
            if grow_after is not None and len(seen) == grow_after:
                state["total"] += 7  # new runs arrive at the end of the walk
            count = state["total"]
        size = min(page, limit)
        ids = [f"run-{i}" for i in range(offset, min(offset + size, count))]
        nxt = offset + len(ids) if offset + len(ids) < count else None
        return httpx.Response(
            200,
            json={
                "benchmark_runs": [{"id": i, "name": i, "status": "finished"} for i in ids],
                "total_count": count,
                "has_more": nxt is not None,
                "next_offset": nxt,
            },
        )

    return handler, seen


def client_for(handler) -> PlatformClient:
    return PlatformClient(
        "https://platform.osmosis.ai",
        token="t",
        workspace="w",
        transport=httpx.MockTransport(handler),
    )


@pytest.mark.parametrize("ahead", [1, 4])
@pytest.mark.parametrize(
    ("total", "page"), [(0, 50), (49, 50), (50, 50), (123, 50), (100, 30), (233, 17)]
)
def test_every_run_once_in_order(total: int, page: int, ahead: int) -> None:
    handler, seen = run_server(total, page)
    with client_for(handler) as client:
        runs = client.list_runs(ahead=ahead)
    assert [r.id for r in runs] == [f"run-{i}" for i in range(total)]
    if page == 50:
        # Full pages: exactly one request per page, read ahead or not.
        assert sorted(seen) == list(range(0, max(total, 1), 50))


def test_read_ahead_overlaps_requests() -> None:
    handler, seen = run_server(400, 50)
    barrier = threading.Barrier(4, timeout=5)
    arrived = []

    def slow(request: httpx.Request) -> httpx.Response:
        offset = int(parse_qs(urlparse(str(request.url)).query)["offset"][0])
        if offset in (50, 100, 150, 200):
            arrived.append(offset)
            barrier.wait()  # only passes when four pages are in flight at once
        return handler(request)

    with client_for(slow) as client:
        runs = client.list_runs(ahead=4)
    assert len(runs) == 400
    assert sorted(arrived) == [50, 100, 150, 200]


def test_a_list_that_grows_while_paging_loses_nothing() -> None:
    handler, _seen = run_server(120, 50, grow_after=2)
    with client_for(handler) as client:
        runs = client.list_runs(ahead=4)
    assert [r.id for r in runs] == [f"run-{i}" for i in range(127)]
