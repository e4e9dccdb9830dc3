"""An apply's downloads of many runs over loopback: ``parallelism`` bounds the runs making
Platform requests (manifest, download URLs) at once, while other runs' files transfer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from reconciler.local_platform import Faults
from reconciler.local_platform.outputs import PRESIGNED_PREFIX
from reconciler.outputs import pace
from reconciler.platform import PlatformClient
from reconciler.platform.settings import normalize_platform_url
from tests.perf import driver
from tests.perf.workload import WORKSPACE, build_plan_repo, config_body, seed_platform
from tests.support.emulator import start_local_platform

RUNS = 12
METADATA = ("/outputs/manifest", "/outputs/download-urls")


class Served:
    """The local Platform in this process, counting runs in their metadata requests."""

    def __init__(self, data: Path, file_delay: float = 0.0, latency_ms: int = 20) -> None:
        self.handle = start_local_platform(
            data, workspaces=(WORKSPACE,), faults=Faults(latency_ms=latency_ms), quiet=True
        )
        self.url = normalize_platform_url(self.handle.url)
        self.lock = threading.Lock()
        self.in_flight = self.most = self.metadata = 0
        self.files_in_flight = self.manifests_beside_files = 0
        """Presigned GETs being answered; manifest requests that arrived during one."""
        handle = self.handle.platform.handle

        def file(method, target, headers, body=b""):
            with self.lock:
                self.files_in_flight += 1
            try:
                time.sleep(file_delay)  # an object store that takes its time
                return handle(method, target, headers, body)
            finally:
                with self.lock:
                    self.files_in_flight -= 1

        def counted(method, target, headers, body=b""):
            path = target.partition("?")[0]
            if path.startswith(PRESIGNED_PREFIX):
                return file(method, target, headers, body)
            if not path.endswith(METADATA):
                return handle(method, target, headers, body)
            with self.lock:
                self.in_flight += 1
                self.metadata += 1
                self.most = max(self.most, self.in_flight)
                if path.endswith(METADATA[0]) and self.files_in_flight:
                    self.manifests_beside_files += 1
            try:
                return handle(method, target, headers, body)
            finally:
                with self.lock:
                    self.in_flight -= 1

        self.handle.platform.handle = counted  # type: ignore[method-assign]

    def client(self) -> PlatformClient:
        return PlatformClient(self.url, token="local", workspace=WORKSPACE)


@pytest.mark.parametrize("parallelism", [1, 3])
def test_parallel_downloads_keep_metadata_requests_within_the_parallelism(
    tmp_path: Path, parallelism: int
) -> None:
    data = tmp_path / "platform"
    seed_platform(data, RUNS, 0, mix={"finished": 1.0}, body=config_body(1))
    served = Served(data)
    try:
        repo = build_plan_repo(tmp_path, served, RUNS, RUNS, churn=False, outputs=False)
        result = driver._download(repo.root, served.url, str(parallelism))
    finally:
        served.handle.close()
    assert result["runs"] == RUNS and result["failed"] == 0, result["errors"]
    assert result["files"] > RUNS and result["bytes"] > 0
    assert result["resume_bytes"] == 0 and result["replan_downloads"] == 0
    # Each run asks once for its manifest and once for its URLs (then once more each in
    # the driver's resume pass, one run at a time, which asks for the manifest alone).
    assert served.metadata == 3 * RUNS
    assert 1 <= served.most <= parallelism
    downloads = repo.root / ".osmosis" / "benchmarks"
    assert not list(downloads.rglob("*.partial"))
    assert len([d for d in downloads.iterdir() if d.is_dir()]) == RUNS


def test_parallelism_1_asks_for_the_next_run_while_the_last_ones_files_transfer(
    tmp_path: Path,
) -> None:
    """One run at a time makes its requests, but the next run's manifest does not wait for
    the last run's files: with a store that takes 50 ms a file, most manifests are asked
    for while files are in flight, and never two runs' metadata requests at once."""
    data = tmp_path / "platform"
    seed_platform(data, RUNS, 0, mix={"finished": 1.0}, body=config_body(1))
    served = Served(data, file_delay=0.05)
    try:
        repo = build_plan_repo(tmp_path, served, RUNS, RUNS, churn=False, outputs=False)
        result = driver._download(repo.root, served.url, "1")
    finally:
        served.handle.close()
    assert result["runs"] == RUNS and result["failed"] == 0, result["errors"]
    assert served.most == 1
    assert served.manifests_beside_files >= RUNS // 2, served.manifests_beside_files


@pytest.mark.parametrize(("latency_ms", "far_s", "far"), [(0, 1.0, False), (40, 0.02, True)])
def test_runs_make_their_requests_side_by_side_only_when_the_platform_is_far(
    tmp_path: Path, latency_ms: int, far_s: float, far: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Near (loopback), runs side by side would only contend for the CPU: one run at a time
    makes its requests whatever the parallelism. Far, they overlap their round trips."""
    # What each classification does, with margins no load can cross: the far case's answers
    # come 40 ms late, against a 20 ms threshold; the near case's threshold is a second (this
    # in-process server answers in about a millisecond, 22 ms seen under `make coverage`'s
    # tracer on a loaded machine). Where the threshold lies is test_pace's subject.
    monkeypatch.setattr(pace, "FAR_S", far_s)
    data = tmp_path / "platform"
    seed_platform(data, RUNS, 0, mix={"finished": 1.0}, body=config_body(1))
    served = Served(data, latency_ms=latency_ms)
    try:
        with served.client() as client:
            assert client.round_trip_s is None
            client.list_workspaces()
            round_trip = client.round_trip_s
        assert round_trip is not None and (round_trip >= pace.FAR_S) is far, round_trip
        repo = build_plan_repo(tmp_path, served, RUNS, RUNS, churn=False, outputs=False)
        result = driver._download(repo.root, served.url, "4")
    finally:
        served.handle.close()
    assert result["runs"] == RUNS and result["failed"] == 0, result["errors"]
    assert result["resume_bytes"] == 0 and result["replan_downloads"] == 0
    if far:
        assert 2 <= served.most <= 4
    else:
        assert served.most == 1
