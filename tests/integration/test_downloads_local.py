"""Downloads end to end: the real PlatformClient and the local Platform over loopback HTTP."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import httpx
import pytest

from reconciler.errors import ConflictError
from reconciler.model import RunStatus
from reconciler.outputs.downloads import download_run, run_dir_name, scan_outputs
from reconciler.platform import PlatformClient
from reconciler.platform.local import Faults, LocalPlatform, start_server

TOKEN = "osm-test-token-7f3a"
SUBMIT = {
    "experiment_config": {"benchmark": "Terminal-Bench 2.1"},
    "tasks_config": {"task_set": "parity"},
    "agents": [
        {
            "harness": "codex",
            "model": {
                "type": "provider",
                "model": "openai/gpt-5",
                "api_key_secret": "OPENAI_API_KEY",
            },
            "env": {},
        }
    ],
}


class Clock:
    """Wall time plus an offset the test can move forward (the Platform's only clock)."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.offset += seconds


def start(tmp_path: Path, *, speed: float = 100_000.0, faults: Faults = Faults()):  # noqa: B008
    clock = Clock()
    platform = LocalPlatform(
        tmp_path / "local-platform", speed=speed, token=TOKEN, faults=faults, clock=clock
    )
    platform.set_secret("default", "OPENAI_API_KEY", "sk-test-value-0a9b")
    handle = start_server(platform)
    client = PlatformClient(handle.url, token=TOKEN, workspace="default", sleep=lambda s: None)
    http = httpx.Client(timeout=10.0)
    return platform, handle, client, http, clock


@pytest.fixture
def env(tmp_path):
    platform, handle, client, http, clock = start(tmp_path)
    yield platform, client, http, clock
    http.close()
    client.close()
    handle.close()


def submit_and_wait(client: PlatformClient, *, terminal: bool = True, timeout_s: float = 15.0):
    """Submit, then poll E5 until the run is terminal (or merely downloadable)."""
    submitted = client.submit_run(SUBMIT)
    deadline = time.monotonic() + timeout_s
    while True:
        summary = client.get_run(submitted.id).summary
        status = RunStatus.of(summary.status)
        if status.is_terminal or (not terminal and status.may_have_outputs):
            return summary
        assert time.monotonic() < deadline, f"run still {summary.status!r} after {timeout_s}s"
        time.sleep(0.05)


def test_download_finished_run_then_resume(env, tmp_path):
    platform, client, http, clock = env
    run = submit_and_wait(client)
    assert run.status in ("finished", "failed")
    root = tmp_path / "repo" / ".osmosis" / "benchmarks"
    types = ["summary", "results", "artifacts"]
    progress: list[int] = []

    first = download_run(
        client, http, run_id=run.id, run_name=run.name, root=root, types=types,
        on_progress=progress.append,
    )  # fmt: skip

    manifest = client.get_manifest(run.id, types)
    assert first.directory == root / run_dir_name(run.name, run.id)
    assert first.complete, first.failures
    assert first.total_files == len(manifest.files) == first.files_downloaded
    assert first.total_bytes == sum(f.size for f in manifest.files) == first.bytes_downloaded
    assert sum(progress) == first.bytes_downloaded
    assert any(f.path.startswith("artifacts/") for f in manifest.files)
    for f in manifest.files:
        on_disk = first.directory.joinpath(*f.path.split("/"))
        assert on_disk.stat().st_size == f.size, f.path
        assert first.sha256[f.path] == hashlib.sha256(on_disk.read_bytes()).hexdigest()
    assert not (first.directory / "logs.txt").exists()
    assert not [p for p in first.directory.rglob("*") if p.name.endswith(".partial")]

    before = client.request_count
    second = download_run(
        client, http, run_id=run.id, run_name=run.name, root=root, types=types
    )  # fmt: skip
    assert second.files_downloaded == 0 and second.bytes_downloaded == 0
    assert second.files_skipped == first.total_files
    assert second.sha256 == first.sha256
    assert client.request_count == before + 1  # the manifest only, no download-urls

    scanned = scan_outputs(first.directory, first.sha256)
    assert scanned.present == frozenset(first.sha256)
    assert scanned.changed == frozenset()


def test_expired_presigned_urls_are_refreshed(tmp_path):
    platform, handle, client, http, clock = start(tmp_path, faults=Faults(presign_ttl_s=2))
    try:
        run = submit_and_wait(client, terminal=False)

        class ExpiringSource:
            """The real client; the Platform's clock jumps past the TTL after each batch."""

            def __init__(self) -> None:
                self.calls: list[int] = []

            def get_manifest(self, run_id, types):
                return client.get_manifest(run_id, types)

            def get_download_urls(self, run_id, files):
                urls = client.get_download_urls(run_id, files)
                self.calls.append(len(files))
                if len(self.calls) == 1:
                    clock.advance(60)
                return urls

        source = ExpiringSource()
        result = download_run(
            source, http, run_id=run.id, run_name=run.name, root=tmp_path / "out",
            types=["summary", "results"], sleep=lambda s: None,
        )  # fmt: skip
        assert result.complete, result.failures
        assert result.files_downloaded == 2
        # One batch call, then one single-item refresh per file whose URL had expired.
        assert source.calls == [2, 1, 1]
        for path, digest in result.sha256.items():
            assert hashlib.sha256((result.directory / path).read_bytes()).hexdigest() == digest
    finally:
        http.close()
        client.close()
        handle.close()


def test_pending_run_is_refused_before_anything_is_written(tmp_path):
    platform, handle, client, http, clock = start(tmp_path, speed=0.001)
    try:
        submitted = client.submit_run(SUBMIT)
        with pytest.raises(ConflictError):
            download_run(
                client, http, run_id=submitted.id, run_name=submitted.name,
                root=tmp_path / "out", types=["summary"],
            )  # fmt: skip
        assert not (tmp_path / "out").exists()
    finally:
        http.close()
        client.close()
        handle.close()
