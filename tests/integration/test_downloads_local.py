"""Downloads end to end: the real PlatformClient and the local Platform over loopback HTTP."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest

from reconciler.errors import ConflictError
from reconciler.local_platform import Faults
from reconciler.model import RunStatus
from reconciler.outputs.downloads import download_run, run_dir_name, scan_outputs
from reconciler.platform import PlatformClient
from tests.support.bodies import hle_body
from tests.support.clock import FakeClock
from tests.support.emulator import start_local_platform

TOKEN = "osm-test-token-7f3a"
SUBMIT = hle_body(experiment_config={"benchmark": "Terminal-Bench 2.1"})


def start(tmp_path: Path, *, speed: float = 100_000.0, faults: Faults = Faults()):  # noqa: B008
    clock = FakeClock()
    handle = start_local_platform(
        tmp_path / "local-platform",
        secrets={"default": {"OPENAI_API_KEY": "sk-test-value-0a9b"}},
        speed=speed,
        token=TOKEN,
        faults=faults,
        clock=clock,
    )
    platform = handle.platform
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


def submit_and_finish(client: PlatformClient, clock: FakeClock):
    """Submit, then move the Platform's clock a day on: the run has ended."""
    submitted = client.submit_run(SUBMIT)
    clock.advance(86400)
    summary = client.get_run(submitted.id).summary
    assert RunStatus.of(summary.status).is_terminal, summary.status
    return summary


def test_download_finished_run_then_resume(env, tmp_path):
    platform, client, http, clock = env
    run = submit_and_finish(client, clock)
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
        run = submit_and_finish(client, clock)

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
