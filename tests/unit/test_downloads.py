"""Downloads edge: layout, hostile manifests, atomic writes, resume, URL refresh, redirects.

The Platform side is a small in-test ``OutputSource`` (the interface seam) and the presigned
GETs go through ``httpx.MockTransport``; every file is real, in ``tmp_path``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from reconciler.errors import AuthError, DownloadError, ServerError, UnsafePathError
from reconciler.outputs.downloads import (
    DownloadResult,
    classify_path,
    download_run,
    normalize_types,
    run_dir_name,
    scan_outputs,
    validate_path,
)

RUN_ID = "run_0123abcd"
LAYOUT = "Manifest path is outside the fixed run layout."
DUPLICATE = "Manifest contains a duplicate path."
SYMLINK = "Manifest path crosses a local symlink outside the run root."


# --------------------------------------------------------------------------- fixtures


@dataclass(frozen=True)
class MFile:
    path: str
    size: int
    token: str | None = None


@dataclass(frozen=True)
class Manifest:
    files: tuple[MFile, ...]
    totals: dict


@dataclass(frozen=True)
class Url:
    path: str
    token: str | None
    url: str


class Source:
    """A Platform holding one run's manifest; presigned URLs carry a generation counter."""

    def __init__(self, files: list[MFile], *, base: str = "https://s3.test/bucket/") -> None:
        self.files = files
        self.base = base
        self.url_calls: list[list[str]] = []
        self.generation: dict[str, int] = {}
        self.fail_url_calls: list[Exception] = []
        self.manifest_types: list[list[str]] = []
        self.lock = threading.Lock()

    def get_manifest(self, run_id: str, types):
        assert run_id == RUN_ID
        self.manifest_types.append(list(types))
        return Manifest(tuple(self.files), {"files": len(self.files)})

    def get_download_urls(self, run_id: str, files):
        assert run_id == RUN_ID
        assert 1 <= len(files) <= 500
        with self.lock:
            self.url_calls.append([f.path for f in files])
            if self.fail_url_calls:
                raise self.fail_url_calls.pop(0)
            out = []
            for f in files:
                gen = self.generation.get(f.path, 0) + 1
                self.generation[f.path] = gen
                out.append(Url(f.path, f.token, f"{self.base}{f.path}?sig=secret{gen}"))
            return out


class Server:
    """Serves file bodies for presigned URLs and records every request."""

    def __init__(self, bodies: dict[str, bytes]) -> None:
        self.bodies = bodies
        self.requests: list[httpx.Request] = []
        self.lock = threading.Lock()
        self.override: dict[str, object] = {}

    def key(self, request: httpx.Request) -> str:
        return request.url.path.removeprefix("/bucket/")

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.requests.append(request)
        key = self.key(request)
        rule = self.override.get(key)
        if callable(rule):
            response = rule(request)
            if response is not None:
                return response
        if key not in self.bodies:
            return httpx.Response(404, text="NoSuchKey")
        return httpx.Response(200, content=self.bodies[key])

    def gets(self) -> int:
        return len(self.requests)


def make_http(server: Server, **kwargs) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(server), **kwargs)


def run(
    source, server_or_http, root: Path, types=("summary", "results", "artifacts", "logs"), **kw
):
    http = server_or_http if isinstance(server_or_http, httpx.Client) else make_http(server_or_http)
    sleeps: list[float] = kw.pop("sleeps", [])
    return download_run(
        source,
        http,
        run_id=RUN_ID,
        run_name=kw.pop("run_name", "hle-smoke"),
        root=root,
        types=types,
        sleep=sleeps.append,
        **kw,
    )


def body(n: int, seed: int = 0) -> bytes:
    return bytes((i * 31 + seed) % 251 for i in range(n))


def standard_files() -> tuple[list[MFile], dict[str, bytes]]:
    bodies = {
        "summary.csv": b"agent,pass@1\na,0.5\n",
        "results.csv": body(3000, 1),
        "artifacts/result_01/logs/agent.log": body(70_000, 2),
        "artifacts/row_1_run_2/manifest.json": b"{}",
        "logs.txt": b"",
    }
    files = [MFile(p, len(b), f"tok-{i}") for i, (p, b) in enumerate(bodies.items())]
    return files, bodies


def all_files(root: Path) -> list[Path]:
    """Every non-directory entry (files and symlinks) below root."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            out.append(Path(dirpath) / name)
    return sorted(out)


def partials(root: Path) -> list[Path]:
    return [p for p in all_files(root) if p.name.endswith(".partial")]


# --------------------------------------------------------------------------- naming


@pytest.mark.parametrize(
    ("name", "run_id", "expected"),
    [
        ("hle-smoke", "r1", "hle-smoke"),
        ("HLE smoke", "r1", "HLE_smoke--r1"),
        ("hle_smoke_2", "r1", "hle_smoke_2"),
        ("brave-otter", "6f1e-22/ab", "brave-otter"),
        ("a.b", "6f1e-22/ab", "a_b--6f1e-22_ab"),
        ("__x__", "r1", "x--r1"),
        ("Brave", "r1", "Brave--r1"),
        ("con", "r1", "con--r1"),
        ("lpt9", "r1", "lpt9--r1"),
        ("com0", "r1", "com0"),
        (None, "r1", "r1"),
        ("", "r1", "r1"),
        ("!!!", "r-9", "r-9"),
        ("run/../../etc", "r1", "run_______etc--r1"),
        (None, "con", "con--run"),
    ],
)
def test_run_dir_name(name, run_id, expected):
    assert run_dir_name(name, run_id) == expected


def test_run_dir_name_is_capped_at_255_and_keeps_the_id():
    name = run_dir_name("X" * 400, "abc123")
    assert len(name) == 255
    assert name.endswith("--abc123")
    plain = run_dir_name("x" * 300, "abc123")
    assert len(plain) == 255 and plain.endswith("--abc123")
    assert len(run_dir_name(None, "i" * 300)) == 255


def test_normalize_types():
    assert normalize_types([" Summary", "results", "summary"]) == ("summary", "results")
    assert normalize_types(["all"]) == ("summary", "results", "artifacts", "logs")
    with pytest.raises(DownloadError, match="cannot be combined"):
        normalize_types(["all", "logs"])
    with pytest.raises(DownloadError, match=r"Unknown --type value\(s\): bogus\."):
        normalize_types(["summary", "bogus"])


# --------------------------------------------------------------------------- classification


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("summary.csv", "summary"),
        ("results.csv", "results"),
        ("logs.txt", "logs"),
        ("artifacts/result_01/logs/agent.log", "artifacts"),
        ("artifacts/row_1_run_2/manifest.json", "artifacts"),
        ("artifacts/r/a%20b.txt", "artifacts"),
        ("artifacts/r/..hidden", "artifacts"),
    ],
)
def test_classify_accepts_the_layout(path, category):
    assert classify_path(path) == category
    assert validate_path(path) == category


HOSTILE = [
    "",
    "/etc/passwd",
    "/summary.csv",
    "..",
    "../summary.csv",
    "artifacts/../../x",
    "artifacts/r/../../../x",
    "artifacts/r/./x",
    "artifacts//x/y",
    "artifacts/r/x/",
    "artifacts\\r\\x",
    "artifacts/r/..\\x",
    "artifacts/%2e%2e/%2e%2e/x",
    "artifacts/r/%2E%2E/y",
    "artifacts/r/%252e%252e/y",
    "artifacts/r/a%2f..%2f..%2fx",
    "artifacts/r/a%00b",
    "summary.csv\x00.txt",
    "artifacts/r\x00/x",
    "artifacts/only-two",
    "artifacts",
    "other.csv",
    "Summary.csv",
    "logs/agent.log",
    "summary.csv/x",
    "./summary.csv",
]


@pytest.mark.parametrize("path", HOSTILE)
def test_classify_refuses_hostile_paths(path):
    assert classify_path(path) is None
    with pytest.raises(UnsafePathError) as info:
        validate_path(path)
    assert info.value.message == LAYOUT
    assert info.value.hint


def test_classify_respects_selected_types():
    assert classify_path("logs.txt", ["summary", "results"]) is None
    assert classify_path("results.csv", ["summary", "results"]) == "results"
    assert classify_path("artifacts/a/b", ["artifacts"]) == "artifacts"


# --------------------------------------------------------------------------- the happy path


def test_downloads_layout_sizes_and_sha256(tmp_path):
    files, bodies = standard_files()
    source, server = Source(files), Server(bodies)
    progress: list[int] = []
    result = run(source, server, tmp_path, on_progress=progress.append, max_workers=3)

    assert isinstance(result, DownloadResult)
    run_dir = tmp_path / "hle-smoke"
    assert result.directory == run_dir
    assert result.complete and result.failures == ()
    assert result.files_downloaded == 5 and result.files_skipped == 0
    assert result.total_files == 5
    assert result.total_bytes == result.bytes_downloaded == sum(map(len, bodies.values()))
    assert sum(progress) == result.bytes_downloaded
    for path, data in bodies.items():
        assert (run_dir / path).read_bytes() == data
        assert result.sha256[path] == hashlib.sha256(data).hexdigest()
    assert set(result.sha256) == set(bodies)
    assert partials(tmp_path) == []
    assert source.manifest_types == [["summary", "results", "artifacts", "logs"]]


def test_presigned_get_carries_no_platform_headers(tmp_path):
    files, bodies = standard_files()
    server = Server(bodies)
    http = make_http(
        server, headers={"Authorization": "Bearer osm-SECRET", "X-Osmosis-Workspace": "w"}
    )
    # The caller is expected to pass a plain client; even so, Authorization never leaves.
    result = run(Source(files), http, tmp_path)
    assert result.complete
    assert server.gets() == 5
    for request in server.requests:
        assert "authorization" not in request.headers


def test_only_selected_types_are_requested_and_others_refused(tmp_path):
    files, bodies = standard_files()
    source = Source(files)  # a Platform that ignores the filter and sends everything
    result = run(source, Server(bodies), tmp_path, types=["summary", "results"])
    assert result.types == ("summary", "results")
    assert result.files_downloaded == 2
    refused = dict(result.failures)
    assert set(refused) == {
        "artifacts/result_01/logs/agent.log",
        "artifacts/row_1_run_2/manifest.json",
        "logs.txt",
    }
    assert set(refused.values()) == {LAYOUT}
    assert not (tmp_path / "hle-smoke" / "logs.txt").exists()
    assert not (tmp_path / "hle-smoke" / "artifacts").exists()
    assert sorted(p for call in source.url_calls for p in call) == ["results.csv", "summary.csv"]


# --------------------------------------------------------------------------- hostile manifests


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in all_files(root) if p.is_file()}


def test_every_hostile_path_is_a_failure_and_nothing_escapes(tmp_path):
    root = tmp_path / "repo" / ".osmosis" / "benchmarks"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_bytes(b"precious")
    before = snapshot(outside)

    good = MFile("summary.csv", 3, "t")
    hostile = [MFile(p, 4, "t") for p in HOSTILE]
    source = Source([good, *hostile, MFile("summary.csv", 3, "t2")])
    bodies = {"summary.csv": b"a,b"}
    # Anything requested for a hostile path would be served, so a write would show up.
    server = Server(bodies)
    server.override = {p: (lambda r: httpx.Response(200, content=b"evil")) for p in HOSTILE}

    result = run(source, server, root)

    failures = result.failures
    assert [f[0] for f in failures] == [*HOSTILE, "summary.csv"]
    assert [f[1] for f in failures] == [LAYOUT] * len(HOSTILE) + [DUPLICATE]
    assert not result.complete
    assert result.files_downloaded == 1 and result.total_files == 1
    assert source.url_calls == [["summary.csv"]]
    assert server.gets() == 1
    # The only file written anywhere is the good one, inside the run directory.
    written = [p for p in all_files(tmp_path) if not p.is_relative_to(outside)]
    assert written == [root / "hle-smoke" / "summary.csv"]
    assert snapshot(outside) == before


@pytest.mark.parametrize(
    "link",
    [
        "artifacts",  # the type directory itself
        "artifacts/result_01",  # a result directory
        "artifacts/result_01/logs",  # a nested directory
    ],
)
def test_symlinked_directory_inside_run_dir_is_refused(tmp_path, link):
    root = tmp_path / "root"
    run_dir = root / "hle-smoke"
    outside = tmp_path / "outside"
    outside.mkdir()
    link_path = run_dir / link
    link_path.parent.mkdir(parents=True)
    link_path.symlink_to(outside, target_is_directory=True)

    files, bodies = standard_files()
    result = run(Source(files), Server(bodies), root)

    assert ("artifacts/result_01/logs/agent.log", SYMLINK) in result.failures
    assert list(outside.iterdir()) == []
    assert (run_dir / "summary.csv").read_bytes() == bodies["summary.csv"]


def test_symlinked_final_file_pointing_outside_is_refused(tmp_path):
    root = tmp_path / "root"
    run_dir = root / "hle-smoke"
    run_dir.mkdir(parents=True)
    target = tmp_path / "victim.txt"
    target.write_bytes(b"do not touch")
    (run_dir / "summary.csv").symlink_to(target)

    files, bodies = standard_files()
    result = run(Source(files), Server(bodies), root)

    assert dict(result.failures) == {"summary.csv": SYMLINK}
    assert target.read_bytes() == b"do not touch"
    assert (run_dir / "summary.csv").is_symlink()
    assert "summary.csv" not in result.sha256
    assert result.files_downloaded == 4


def test_symlink_inside_the_run_dir_is_allowed(tmp_path):
    root = tmp_path / "root"
    run_dir = root / "hle-smoke"
    (run_dir / "elsewhere").mkdir(parents=True)
    (run_dir / "artifacts").symlink_to(run_dir / "elsewhere", target_is_directory=True)
    files, bodies = standard_files()
    result = run(Source(files), Server(bodies), root)
    assert result.complete
    path = "artifacts/result_01/logs/agent.log"
    assert (run_dir / "elsewhere" / "result_01" / "logs" / "agent.log").read_bytes() == bodies[path]


def test_manifest_with_only_hostile_paths_raises(tmp_path):
    source = Source([MFile("../x", 1), MFile("/abs", 1)])
    with pytest.raises(DownloadError) as info:
        run(source, Server({}), tmp_path)
    assert info.value.message == "The download manifest contained no usable run-scoped paths."
    assert "2 manifest path(s)" in info.value.hint
    assert list(tmp_path.iterdir()) == []


def test_empty_manifest_raises(tmp_path):
    with pytest.raises(DownloadError) as info:
        run(Source([]), Server({}), tmp_path)
    assert info.value.message == "No downloadable files matched the requested selection."


def test_invalid_sizes_are_refused(tmp_path):
    source = Source([MFile("summary.csv", -1), MFile("results.csv", True), MFile("logs.txt", 2)])
    result = run(source, Server({"logs.txt": b"ok"}), tmp_path)
    assert dict(result.failures) == {
        "summary.csv": "Manifest entry has an invalid size.",
        "results.csv": "Manifest entry has an invalid size.",
    }
    assert result.files_downloaded == 1


# --------------------------------------------------------------------------- size lies


@pytest.mark.parametrize(("sent", "received"), [(b"12345", 5), (b"12345678901", 11)])
def test_size_lie_fails_without_final_or_partial_file(tmp_path, sent, received):
    source = Source([MFile("summary.csv", 10), MFile("results.csv", 2)])
    server = Server({"summary.csv": sent, "results.csv": b"ok"})
    progress: list[int] = []
    result = run(source, server, tmp_path, on_progress=progress.append)

    reason = dict(result.failures)["summary.csv"]
    # A longer body is cut off just past the promised size, so the count is where we stopped.
    assert reason == f"Downloaded size mismatch: expected 10, received {received}"
    assert not (tmp_path / "hle-smoke" / "summary.csv").exists()
    assert partials(tmp_path) == []
    assert "summary.csv" not in result.sha256
    assert result.files_downloaded == 1 and result.bytes_downloaded == 2
    assert sum(progress) == 2
    # Three attempts per file, with the documented backoff between them.
    assert sum(1 for r in server.requests if r.url.path.endswith("summary.csv")) == 3


def test_size_lie_keeps_previous_complete_file_untouched(tmp_path):
    run_dir = tmp_path / "hle-smoke"
    run_dir.mkdir()
    (run_dir / "summary.csv").write_bytes(b"old-old-ol")  # 10 bytes, the manifest size
    source = Source([MFile("summary.csv", 10)])
    result = run(source, Server({"summary.csv": b"short"}), tmp_path, overwrite=True)
    assert not result.complete
    assert (run_dir / "summary.csv").read_bytes() == b"old-old-ol"
    assert partials(tmp_path) == []


# --------------------------------------------------------------------------- resume / overwrite


def test_second_download_transfers_nothing(tmp_path):
    files, bodies = standard_files()
    source, server = Source(files), Server(bodies)
    first = run(source, server, tmp_path)
    gets, url_calls = server.gets(), len(source.url_calls)

    second = run(source, server, tmp_path)
    assert second.files_downloaded == 0 and second.bytes_downloaded == 0
    assert second.files_skipped == 5
    assert second.complete
    assert server.gets() == gets and len(source.url_calls) == url_calls
    assert second.sha256 == first.sha256


def test_wrong_size_or_missing_files_are_fetched_again(tmp_path):
    files, bodies = standard_files()
    source, server = Source(files), Server(bodies)
    run(source, server, tmp_path)
    run_dir = tmp_path / "hle-smoke"
    (run_dir / "results.csv").write_bytes(b"truncated")
    (run_dir / "summary.csv").unlink()
    gets = server.gets()

    result = run(source, server, tmp_path)
    assert result.files_downloaded == 2 and result.files_skipped == 3
    assert server.gets() == gets + 2
    assert (run_dir / "results.csv").read_bytes() == bodies["results.csv"]
    assert result.sha256["results.csv"] == hashlib.sha256(bodies["results.csv"]).hexdigest()


def test_skipped_file_sha256_is_hashed_from_disk(tmp_path):
    run_dir = tmp_path / "hle-smoke"
    run_dir.mkdir()
    (run_dir / "summary.csv").write_bytes(b"local!")  # same size as the Platform's copy
    result = run(Source([MFile("summary.csv", 6)]), Server({"summary.csv": b"remote"}), tmp_path)
    assert result.files_skipped == 1
    assert result.sha256 == {"summary.csv": hashlib.sha256(b"local!").hexdigest()}


def test_overwrite_refetches_same_size_files(tmp_path):
    run_dir = tmp_path / "hle-smoke"
    run_dir.mkdir()
    (run_dir / "summary.csv").write_bytes(b"local!")
    (run_dir / "unrelated.txt").write_bytes(b"kept")
    server = Server({"summary.csv": b"remote"})
    result = run(Source([MFile("summary.csv", 6)]), server, tmp_path, overwrite=True)
    assert result.files_downloaded == 1 and result.files_skipped == 0
    assert (run_dir / "summary.csv").read_bytes() == b"remote"
    assert (run_dir / "unrelated.txt").read_bytes() == b"kept"


def test_stale_partial_from_a_killed_process_is_removed(tmp_path):
    run_dir = tmp_path / "hle-smoke"
    run_dir.mkdir()
    stale = run_dir / ".summary.csv.0123456789abcdef.partial"
    stale.write_bytes(b"half")
    other = run_dir / ".summary.csv.x.0123456789abcdef.partial"  # another file's temp name
    other.write_bytes(b"x")
    result = run(Source([MFile("summary.csv", 3)]), Server({"summary.csv": b"abc"}), tmp_path)
    assert result.complete
    assert not stale.exists()
    assert other.exists()


# --------------------------------------------------------------------------- failures and retries


def test_transport_error_mid_stream_leaves_no_partial(tmp_path):
    class Broken(httpx.SyncByteStream):
        def __iter__(self):
            yield b"x" * 1000
            raise httpx.ReadError("connection reset by peer")

    server = Server({"summary.csv": b"x" * 5000, "results.csv": b"ok"})
    server.override["summary.csv"] = lambda r: httpx.Response(200, stream=Broken())
    sleeps: list[float] = []
    result = run(
        Source([MFile("summary.csv", 5000), MFile("results.csv", 2)]),
        server,
        tmp_path,
        sleeps=sleeps,
        max_workers=1,
    )
    assert dict(result.failures) == {"summary.csv": "ReadError: connection reset by peer"}
    assert sleeps == [0.5, 1.0]
    assert partials(tmp_path) == []
    assert not (tmp_path / "hle-smoke" / "summary.csv").exists()
    assert (tmp_path / "hle-smoke" / "results.csv").read_bytes() == b"ok"


def test_file_succeeds_on_third_attempt(tmp_path):
    server = Server({"summary.csv": b"abc"})
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        return httpx.Response(503, text="SlowDown") if calls["n"] < 3 else None

    server.override["summary.csv"] = flaky
    sleeps: list[float] = []
    result = run(Source([MFile("summary.csv", 3)]), server, tmp_path, sleeps=sleeps)
    assert result.complete and calls["n"] == 3
    assert sleeps == [0.5, 1.0]


def test_error_body_is_reported_and_url_signatures_are_redacted(tmp_path):
    server = Server({})

    def leaky(request):
        return httpx.Response(
            500,
            text=f"boom while fetching {request.url} sig={request.url.query.decode()}" + "z" * 900,
        )

    server.override["summary.csv"] = leaky
    result = run(Source([MFile("summary.csv", 3)]), server, tmp_path)
    ((path, error),) = result.failures
    # The URL stays (a message must say what failed); its signature does not.
    assert error.startswith(
        "HTTP 500. boom while fetching https://s3.test/bucket/summary.csv?[REDACTED] sig=[REDACTED]"
    ), error
    assert "secret" not in error
    assert len(error) <= len("HTTP 500. ") + 500


def test_expired_url_is_refreshed_with_a_single_item_call(tmp_path):
    files, bodies = standard_files()
    source, server = Source(files), Server(bodies)

    def expire_first(request):
        if request.url.params.get("sig") == "secret1":
            return httpx.Response(
                403, text="<Error><Code>AccessDenied</Code>Request has expired</Error>"
            )
        return None

    server.override["results.csv"] = expire_first
    sleeps: list[float] = []
    result = run(source, server, tmp_path, sleeps=sleeps)
    assert result.complete
    assert source.url_calls[-1] == ["results.csv"]
    assert len(source.url_calls) == 2
    assert (tmp_path / "hle-smoke" / "results.csv").read_bytes() == bodies["results.csv"]
    assert sleeps == []  # a refresh is not a backoff


def test_url_that_stays_forbidden_fails_after_three_attempts(tmp_path):
    source = Source([MFile("summary.csv", 3)])
    server = Server({"summary.csv": b"abc"})
    server.override["summary.csv"] = lambda r: httpx.Response(403, text="AccessDenied")
    result = run(source, server, tmp_path)
    assert dict(result.failures) == {"summary.csv": "HTTP 403. AccessDenied"}
    assert server.gets() == 3
    assert len(source.url_calls) == 3  # the batch call, then two refreshes


def test_e9_batches_of_at_most_500(tmp_path):
    files = [MFile(f"artifacts/r{i // 100}/f{i}.txt", 1) for i in range(1001)]
    bodies = {f.path: b"x" for f in files}
    source = Source(files)
    result = run(source, Server(bodies), tmp_path, types=["artifacts"])
    assert result.complete and result.files_downloaded == 1001
    assert [len(c) for c in source.url_calls] == [500, 500, 1]


def test_e9_is_retried_on_server_errors(tmp_path):
    source = Source([MFile("summary.csv", 3)])
    source.fail_url_calls = [
        ServerError("HTTP 502", status_code=502),
        ServerError("HTTP 503", status_code=503),
    ]
    sleeps: list[float] = []
    result = run(source, Server({"summary.csv": b"abc"}), tmp_path, sleeps=sleeps)
    assert result.complete
    assert sleeps == [0.5, 1.0]


def test_e9_failing_three_times_fails_the_batch(tmp_path):
    source = Source([MFile("summary.csv", 3), MFile("results.csv", 2)])
    source.fail_url_calls = [ServerError("Platform unavailable (HTTP 503)", status_code=503)] * 3
    server = Server({"summary.csv": b"abc", "results.csv": b"ok"})
    result = run(source, server, tmp_path)
    assert dict(result.failures) == {
        "summary.csv": "Platform unavailable (HTTP 503)",
        "results.csv": "Platform unavailable (HTTP 503)",
    }
    assert server.gets() == 0
    assert not (tmp_path / "hle-smoke").exists() or all_files(tmp_path / "hle-smoke") == []


def test_e9_auth_error_aborts(tmp_path):
    source = Source([MFile("summary.csv", 3)])
    source.fail_url_calls = [
        AuthError("Token expired", "run `osmosis auth login`", status_code=401)
    ]
    with pytest.raises(AuthError):
        run(source, Server({"summary.csv": b"abc"}), tmp_path)
    assert len(source.url_calls) == 1


def test_missing_url_in_e9_response_is_a_failure(tmp_path):
    class Forgetful(Source):
        def get_download_urls(self, run_id, files):
            return [u for u in super().get_download_urls(run_id, files) if u.path != "results.csv"]

    source = Forgetful([MFile("summary.csv", 3), MFile("results.csv", 2)])
    result = run(source, Server({"summary.csv": b"abc", "results.csv": b"ok"}), tmp_path)
    assert dict(result.failures) == {
        "results.csv": "The Platform returned no download URL for this path."
    }


def test_urls_are_matched_by_token_then_path(tmp_path):
    class Swapped(Source):
        def get_download_urls(self, run_id, files):
            return list(reversed(super().get_download_urls(run_id, files)))

    files = [MFile("summary.csv", 3, "a"), MFile("results.csv", 2, None)]
    result = run(Swapped(files), Server({"summary.csv": b"abc", "results.csv": b"ok"}), tmp_path)
    assert result.complete
    assert (tmp_path / "hle-smoke" / "results.csv").read_bytes() == b"ok"


# --------------------------------------------------------------------------- redirects


def redirect_to(location: str, status: int = 302):
    return lambda r: httpx.Response(status, headers={"Location": location})


def test_redirects_are_followed_over_https_and_loopback(tmp_path):
    server = Server({"summary.csv": b"abc", "moved/summary.csv": b"abc"})
    server.override["summary.csv"] = redirect_to("http://127.0.0.1:9/bucket/hop1", 307)
    server.override["hop1"] = redirect_to("https://cdn.test/bucket/moved/summary.csv", 301)
    result = run(Source([MFile("summary.csv", 3)]), server, tmp_path)
    assert result.complete
    assert [str(r.url.host) for r in server.requests] == ["s3.test", "127.0.0.1", "cdn.test"]


@pytest.mark.parametrize(
    "location",
    ["http://evil.test/bucket/x", "ftp://s3.test/x", "file:///etc/passwd", "http://10.0.0.1/x"],
)
def test_redirect_to_insecure_url_is_refused(tmp_path, location):
    server = Server({"summary.csv": b"abc", "x": b"abc"})
    server.override["summary.csv"] = redirect_to(location)
    result = run(Source([MFile("summary.csv", 3)]), server, tmp_path)
    ((path, error),) = result.failures
    assert error == "Refusing to download from a URL that is neither HTTPS nor loopback."
    assert [r.url.host for r in server.requests] == ["s3.test"]
    assert all_files(tmp_path) == []


def test_insecure_presigned_url_is_refused(tmp_path):
    source = Source([MFile("summary.csv", 3)], base="http://s3.test/bucket/")
    server = Server({"summary.csv": b"abc"})
    result = run(source, server, tmp_path)
    assert not result.complete and server.gets() == 0


def test_redirect_loop_stops_after_20_hops(tmp_path):
    server = Server({})
    server.override["summary.csv"] = redirect_to("/bucket/summary.csv")
    result = run(Source([MFile("summary.csv", 3)]), server, tmp_path)
    assert dict(result.failures) == {"summary.csv": "Too many redirects (more than 20)."}
    assert server.gets() == 21


# --------------------------------------------------------------------------- concurrency, scan


def test_many_files_with_many_workers(tmp_path):
    files = [MFile(f"artifacts/r{i % 7}/sub/f{i}.bin", 1000 + i) for i in range(60)]
    bodies = {f.path: body(f.size, i) for i, f in enumerate(files)}
    result = run(Source(files), Server(bodies), tmp_path, types=["artifacts"], max_workers=8)
    assert result.complete and result.files_downloaded == 60
    for f in files:
        assert result.sha256[f.path] == hashlib.sha256(bodies[f.path]).hexdigest()
    assert partials(tmp_path) == []


def test_runs_can_share_one_executor_which_outlives_them(tmp_path):
    files, bodies = standard_files()
    with ThreadPoolExecutor(max_workers=3) as pool:
        first = run(Source(files), Server(bodies), tmp_path, run_name="one", executor=pool)
        second = run(Source(files), Server(bodies), tmp_path, run_name="two", executor=pool)
        assert pool.submit(lambda: "still open").result() == "still open"
    assert first.complete and second.complete
    assert first.sha256 == second.sha256
    assert (tmp_path / "two" / "artifacts/result_01/logs/agent.log").read_bytes() == bodies[
        "artifacts/result_01/logs/agent.log"
    ]


def test_interrupt_with_a_shared_executor_leaves_it_usable_and_no_partials(tmp_path):
    data = body(6 * 1024 * 1024)
    files = [MFile("logs.txt", len(data)), MFile("results.csv", len(data))]

    def interrupt(n: int) -> None:
        raise KeyboardInterrupt

    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(KeyboardInterrupt):
            run(
                Source(files),
                Server({"logs.txt": data, "results.csv": data}),
                tmp_path,
                on_progress=interrupt,
                executor=pool,
            )
        assert pool.submit(lambda: 1).result() == 1
    assert partials(tmp_path) == []
    assert not (tmp_path / "hle-smoke" / "logs.txt").exists()


def test_directory_swapped_for_an_outside_symlink_during_the_download_is_refused(tmp_path):
    # The artifacts directory does not exist when the manifest is checked; it appears as a
    # symlink to elsewhere while the first file transfers. Nothing may land there.
    root = tmp_path / "root"
    run_dir = root / "hle-smoke"
    outside = tmp_path / "outside"
    outside.mkdir()
    files = [MFile("summary.csv", 3), MFile("artifacts/result_01/logs/agent.log", 4)]
    server = Server({"summary.csv": b"abc", "artifacts/result_01/logs/agent.log": b"evil"})

    def plant(request: httpx.Request) -> None:
        (run_dir / "artifacts").symlink_to(outside, target_is_directory=True)

    server.override["summary.csv"] = plant
    result = run(Source(files), server, root, max_workers=1)

    assert dict(result.failures) == {"artifacts/result_01/logs/agent.log": SYMLINK}
    assert list(outside.iterdir()) == []
    assert (run_dir / "summary.csv").read_bytes() == b"abc"


def test_directory_swapped_after_its_first_file_cannot_redirect_the_next(tmp_path):
    # The run's directory is checked and opened once; writes go through that descriptor,
    # so a swap of the path for a symlink to elsewhere afterwards redirects nothing.
    root = tmp_path / "root"
    nested = root / "hle-smoke" / "artifacts" / "r1"
    outside = tmp_path / "outside"
    outside.mkdir()
    files = [MFile("artifacts/r1/a.bin", 1), MFile("artifacts/r1/b.bin", 1)]
    server = Server({"artifacts/r1/a.bin": b"a", "artifacts/r1/b.bin": b"b"})

    def swap(request: httpx.Request) -> None:
        nested.rename(nested.with_name("moved"))
        nested.symlink_to(outside, target_is_directory=True)

    server.override["artifacts/r1/a.bin"] = swap
    result = run(Source(files), server, root, types=["artifacts"], max_workers=1)

    assert list(outside.iterdir()) == []
    moved = nested.with_name("moved")
    assert sorted(p.name for p in moved.iterdir()) == ["a.bin", "b.bin"]
    assert result.complete


def test_no_file_descriptor_is_left_open(tmp_path):
    files, bodies = standard_files()
    before = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    result = run(Source(files), Server(bodies), tmp_path)
    assert result.complete
    if before is not None:
        assert set(os.listdir("/proc/self/fd")) <= before


def test_stale_partial_in_a_nested_directory_is_removed(tmp_path):
    nested = tmp_path / "hle-smoke" / "artifacts" / "r1"
    nested.mkdir(parents=True)
    stale = nested / ".f.bin.0123456789abcdef.partial"
    stale.write_bytes(b"half")
    files = [MFile("artifacts/r1/f.bin", 2)]
    result = run(Source(files), Server({"artifacts/r1/f.bin": b"ok"}), tmp_path)
    assert result.complete and not stale.exists()
    assert (nested / "f.bin").read_bytes() == b"ok"


def test_scan_outputs_reports_present_and_changed(tmp_path):
    files, bodies = standard_files()
    result = run(Source(files), Server(bodies), tmp_path)
    run_dir = result.directory
    (run_dir / "results.csv").write_bytes(b"edited by hand")
    (run_dir / "artifacts/result_01/logs/agent.log").unlink()
    (run_dir / ".summary.csv.0123456789abcdef.partial").write_bytes(b"x")
    (run_dir / "link.csv").symlink_to(run_dir / "summary.csv")

    scanned = scan_outputs(run_dir, result.sha256)
    assert scanned.present == {
        "summary.csv",
        "results.csv",
        "artifacts/row_1_run_2/manifest.json",
        "logs.txt",
    }
    assert scanned.changed == {"results.csv"}
    unverified = scan_outputs(run_dir, result.sha256, verify=False)
    assert unverified.present == scanned.present and unverified.changed == frozenset()


def test_scan_outputs_of_missing_directory_is_empty(tmp_path):
    scanned = scan_outputs(tmp_path / "nope", {"summary.csv": "00"})
    assert scanned.present == frozenset() and scanned.changed == frozenset()


# --------------------------------------------------------------------------- large files


def sink_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "osmosis-dl-sink"]


def test_large_file_is_hashed_on_a_helper_thread_correctly(tmp_path):
    data = body(5 * 1024 * 1024 + 17, 3)
    progress: list[int] = []
    result = run(
        Source([MFile("logs.txt", len(data))]),
        Server({"logs.txt": data}),
        tmp_path,
        on_progress=progress.append,
    )
    assert result.complete
    assert result.sha256["logs.txt"] == hashlib.sha256(data).hexdigest()
    assert (tmp_path / "hle-smoke" / "logs.txt").read_bytes() == data
    assert sum(progress) == len(data)
    assert sink_threads() == []


def test_large_file_broken_mid_stream_cleans_up(tmp_path):
    class Broken(httpx.SyncByteStream):
        def __iter__(self):
            for _ in range(5):
                yield b"y" * (1024 * 1024)
            raise httpx.RemoteProtocolError("peer closed connection")

    size = 8 * 1024 * 1024
    server = Server({})
    server.override["logs.txt"] = lambda r: httpx.Response(200, stream=Broken())
    progress: list[int] = []
    result = run(Source([MFile("logs.txt", size)]), server, tmp_path, on_progress=progress.append)
    assert dict(result.failures) == {"logs.txt": "RemoteProtocolError: peer closed connection"}
    assert partials(tmp_path) == [] and not (tmp_path / "hle-smoke" / "logs.txt").exists()
    assert sum(progress) == 0  # failed attempts are rolled back
    assert sink_threads() == []


def test_large_file_size_lie(tmp_path):
    data = body(6 * 1024 * 1024)
    result = run(Source([MFile("logs.txt", len(data) + 1)]), Server({"logs.txt": data}), tmp_path)
    assert dict(result.failures) == {
        "logs.txt": f"Downloaded size mismatch: expected {len(data) + 1}, received {len(data)}"
    }
    assert all_files(tmp_path) == []


# --------------------------------------------------------------------------- odd cases


def test_malformed_presigned_url_fails_only_that_file(tmp_path):
    class Malformed(Source):
        def get_download_urls(self, run_id, files):
            out = super().get_download_urls(run_id, files)
            return [
                Url(u.path, u.token, "https://[::1") if u.path == "summary.csv" else u for u in out
            ]

    source = Malformed([MFile("summary.csv", 3), MFile("results.csv", 2)])
    result = run(source, Server({"summary.csv": b"abc", "results.csv": b"ok"}), tmp_path)
    failures = dict(result.failures)
    assert set(failures) == {"summary.csv"}
    assert "[::1" not in failures["summary.csv"]
    assert result.files_downloaded == 1


def test_interrupt_mid_download_cleans_up_and_propagates(tmp_path):
    data = body(6 * 1024 * 1024)
    files = [MFile("logs.txt", len(data)), MFile("results.csv", len(data))]

    def interrupt(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(
            Source(files),
            Server({"logs.txt": data, "results.csv": data}),
            tmp_path,
            on_progress=interrupt,
        )
    assert partials(tmp_path) == []
    assert not (tmp_path / "hle-smoke" / "logs.txt").exists()
    assert not (tmp_path / "hle-smoke" / "results.csv").exists()
    assert sink_threads() == []


def test_e9_rate_limit_honours_retry_after(tmp_path):
    from reconciler.errors import RateLimitedError

    source = Source([MFile("summary.csv", 3)])
    source.fail_url_calls = [RateLimitedError("Too many requests", retry_after=4)]
    sleeps: list[float] = []
    result = run(source, Server({"summary.csv": b"abc"}), tmp_path, sleeps=sleeps)
    assert result.complete
    assert sleeps == [4.0]


# --------------------------------------------------------------------------- the gate


class Gate:
    """A context manager that records when it is held; ``released`` is set on exit."""

    def __init__(self) -> None:
        self.held = False
        self.entered = 0
        self.released = threading.Event()

    def __enter__(self) -> None:
        self.entered += 1
        self.held = True

    def __exit__(self, *exc: object) -> None:
        self.held = False
        self.released.set()


class GatedSource(Source):
    """Records whether the gate was held during each Platform request."""

    def __init__(self, files: list[MFile], gate: Gate) -> None:
        super().__init__(files)
        self.gate = gate
        self.held_during: list[tuple[str, bool]] = []

    def get_manifest(self, run_id: str, types):
        self.held_during.append(("manifest", self.gate.held))
        return super().get_manifest(run_id, types)

    def get_download_urls(self, run_id: str, files):
        self.held_during.append(("urls", self.gate.held))
        return super().get_download_urls(run_id, files)


def test_gate_is_held_for_the_platform_requests_and_released_before_the_files_arrive(tmp_path):
    files, bodies = standard_files()
    gate = Gate()
    source = GatedSource(files, gate)
    server = Server(bodies)
    seen_released: list[bool] = []

    def after_release(request: httpx.Request) -> None:
        # The file is not answered until the run gave its slot back (or 10 s passed, which
        # fails the assertion below): another run's requests never wait on these files.
        seen_released.append(gate.released.wait(10))

    server.override["results.csv"] = after_release
    result = run(source, server, tmp_path, gate=gate)
    assert result.complete and result.files_downloaded == len(files)
    assert source.held_during == [("manifest", True), ("urls", True)]
    assert seen_released == [True]
    assert gate.entered == 1 and not gate.held


@pytest.mark.parametrize("files", [[], [MFile("../escape", 1)]])
def test_gate_is_released_when_the_run_fails_before_any_transfer(tmp_path, files):
    gate = Gate()
    with pytest.raises(DownloadError):
        run(GatedSource(files, gate), Server({}), tmp_path, gate=gate)
    assert gate.entered == 1 and not gate.held


def test_gate_is_released_when_the_platform_refuses_the_urls(tmp_path):
    gate = Gate()
    source = GatedSource([MFile("summary.csv", 3)], gate)
    source.fail_url_calls = [AuthError("Invalid token")]
    with pytest.raises(AuthError):
        run(source, Server({"summary.csv": b"abc"}), tmp_path, gate=gate)
    assert gate.entered == 1 and not gate.held
    assert partials(tmp_path) == []


TYPES_ALL = ("summary", "results", "artifacts", "logs")


def test_a_client_factory_is_asked_by_each_transfer_once_the_manifest_is_read(tmp_path):
    files, bodies = standard_files()
    source = Source(files)
    asked: list[int] = []

    def factory() -> httpx.Client:  # an apply's hands each thread its own client
        asked.append(len(source.manifest_types))
        return make_http(Server(bodies))

    def fetch() -> DownloadResult:
        return download_run(
            source, factory, run_id=RUN_ID, run_name="hle-smoke", root=tmp_path, types=TYPES_ALL
        )

    result = fetch()
    assert result.complete and asked == [1] * result.files_downloaded
    # Resume: every file is on disk, so no transfer asks for a client.
    asked.clear()
    assert fetch().files_skipped == result.total_files and asked == []
