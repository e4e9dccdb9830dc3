"""Run outputs on local disk: the osmosis CLI's download layout, done safely.

``download_run`` fetches a run's manifest (E8), checks every path against the fixed run
layout before anything is written, asks the Platform for presigned URLs (E9) in batches,
and streams each file into a sibling ``.<name>.<random>.partial`` file that atomically
replaces the destination only once its size matches the manifest. ``scan_outputs`` tells
the planner what is on disk now. The layout and messages follow platform-api.md §7::

    <root>/<run-dir>/
    ├── summary.csv                           summary
    ├── results.csv                           results
    ├── artifacts/<result-identity>/<path…>   artifacts (≥ 3 segments)
    └── logs.txt                              logs

Guarantees: a manifest path never causes a write outside the run directory (absolute,
``..``, encoded traversal, backslashes, NUL, symlinks are refused, each as a failure of
that one file), and neither does a symlinked ``.osmosis``, ``.osmosis/benchmarks`` or run
directory (checked from the repository root, written through descriptors); a final path
only ever holds a complete file; no ``.partial`` is left behind by a failure we live
through; presigned URLs never appear in error strings.

Deadlines: each file has an overall deadline for all its attempts, ``DEADLINE_BASE_S``
(60 s, ``OSMOSIS_DOWNLOAD_DEADLINE`` changes it) plus its size at ``DEADLINE_MIN_RATE``
(256 KiB/s), and no presigned GET stays silent longer than ``IDLE_TIMEOUT_S`` (30 s). They
are enforced at the socket (``reconciler.deadlines``), so a trickling or stalled object
store fails that one file at its deadline; on SIGTERM every transfer stops within a
fraction of a second and removes its ``.partial``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import queue
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import httpx

from reconciler import deadlines, shutdown
from reconciler.crashpoints import crash_point
from reconciler.errors import (
    AuthError,
    ConflictError,
    DownloadError,
    FeatureGateError,
    InvalidResponseError,
    NotFoundError,
    PlatformError,
    PlatformValidationError,
    RateLimitedError,
    ReconcilerError,
    ScopeError,
    ServerError,
    TransportError,
    UpgradeRequiredError,
)
from reconciler.outputs.layout import (  # noqa: F401  (re-exported)
    FIXED_FILES,
    MAX_NAME,
    SANITISE,
    WINDOWS_RESERVED,
    classify_path,
    guard_reserved,
    is_within,
    normalize_types,
    run_dir_name,
    sanitise,
    segment_is_unsafe,
    validate_path,
)
from reconciler.outputs.pace import TransferLimit
from reconciler.outputs.scan import (  # noqa: F401  (re-exported)
    hash_file,
    scan_files,
    scan_outputs,
)
from reconciler.outputs.seam import (  # noqa: F401  (re-exported)
    CHUNK_SIZE,
    MSG_BAD_SIZE,
    MSG_DUPLICATE,
    MSG_LAYOUT,
    MSG_NO_URL,
    MSG_NO_USABLE,
    MSG_NOTHING,
    MSG_SYMLINK,
    DownloadResult,
    DownloadUrlLike,
    FileFailed,
    ManifestEntry,
    ManifestLike,
    OutputSource,
)
from reconciler.outputs.sink import PIPELINE_MIN_BYTES, Sink
from reconciler.outputs.tree import (  # noqa: F401  (re-exported)
    DIR_FLAGS,
    NOFOLLOW,
    RunTree,
)
from reconciler.redact import redact

__all__ = [
    "CHUNK_SIZE",
    "DownloadInterrupted",
    "DownloadResult",
    "OutputSource",
    "classify_path",
    "download_run",
    "normalize_types",
    "run_dir_name",
    "scan_outputs",
    "validate_path",
]

E9_BATCH = 500
"""The Platform refuses a download-urls request with more items (platform-api.md E9)."""
ATTEMPTS = 3
BACKOFF_S = (0.5, 1.0)
MAX_REDIRECTS = 20
MAX_RETRY_AFTER_S = 30.0
ERROR_BODY_CHARS = 500
DEADLINE_BASE_S = 60.0
"""Overall deadline of one file, all attempts included: this many seconds plus the time the
file takes at ``DEADLINE_MIN_RATE`` (a 400-byte summary gets 60 s, 100 MB about 7 minutes)."""
DEADLINE_ENV = "OSMOSIS_DOWNLOAD_DEADLINE"
"""Environment variable that overrides ``DEADLINE_BASE_S``."""
DEADLINE_MIN_RATE = 256 * 1024
"""Bytes per second below which a transfer counts as stalled (see ``DEADLINE_BASE_S``)."""
IDLE_TIMEOUT_S = 30.0
"""Longest silence of a presigned GET before the attempt gives up."""
CONNECT_TIMEOUT_S = 10.0


_PARTIAL_TOKEN_HEX = 16
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


# --------------------------------------------------------------------------- the seam


# --------------------------------------------------------------------------- naming


# --------------------------------------------------------------------------- path checks


# --------------------------------------------------------------------------- URL hygiene


def _url_allowed(url: httpx.URL) -> bool:
    """Each hop must be HTTPS, or plain HTTP to a loopback address (the local Platform)."""
    if url.scheme == "https":
        return bool(url.host)
    if url.scheme != "http":
        return False
    host = url.host
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def _redact(text: str, urls: Iterable[str] = ()) -> str:
    """The tool's redaction rule, with the signatures (query strings) of the presigned URLs
    fetched for this file as secrets: a message keeps the URL's host and path."""
    return redact(text, also=[url.partition("?")[2] for url in urls])


def _is_fatal(exc: PlatformError) -> bool:
    """401 and 4xx other than 429 abort the download (§7.3 step 6); the rest is retried."""
    if isinstance(exc, RateLimitedError | ServerError | TransportError | InvalidResponseError):
        return False
    status = exc.status_code
    if status is not None:
        return 400 <= status < 500 and status != 429
    return isinstance(
        exc,
        AuthError
        | FeatureGateError
        | ScopeError
        | PlatformValidationError
        | NotFoundError
        | ConflictError
        | UpgradeRequiredError,
    )


class DownloadInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during ``download_run``; ``result`` holds what was completed."""

    def __init__(self, result: DownloadResult) -> None:
        super().__init__()
        self.result = result


class _Cancelled(Exception):
    """The caller is shutting down (Ctrl-C): abandon the transfer, clean up."""


# --------------------------------------------------------------------------- planning


@dataclass
class _Item:
    entry: Any
    path: str
    size: int
    token: str | None
    dest: Path
    url: str | None = None
    urls_seen: list[str] = field(default_factory=list)
    complete: bool = False


_temp_serial = itertools.count(secrets.randbits(4 * _PARTIAL_TOKEN_HEX))


def _temp_token() -> str:
    """The unique part of a temp file's name: a counter from a random start, so a
    file costs no call to the system's random source (the file is created with
    ``O_EXCL``, so a name that is taken fails the attempt instead of sharing the file)."""
    return f"{next(_temp_serial) % (1 << 4 * _PARTIAL_TOKEN_HEX):0{_PARTIAL_TOKEN_HEX}x}"


def _create_temp(base: str, dir_fd: int) -> tuple[str, int]:
    """Create ``<base>.<token>.partial`` in ``dir_fd``, never opening a file that is there
    (nor following a symlink): its name and descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for attempt in range(3):
        name = f"{base}.{_temp_token()}.partial"
        try:
            return name, os.open(name, flags, 0o644, dir_fd=dir_fd)
        except FileExistsError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _partial_base(name: str) -> str:
    # Keep ".<name>.<16 hex>.partial" within the 255-byte file-name limit.
    if len(name.encode("utf-8")) > 200:
        return "." + hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    return "." + name


# --------------------------------------------------------------------------- the engine


class _Downloader:
    def __init__(
        self,
        source: OutputSource,
        http: httpx.Client | Callable[[], httpx.Client],
        run_id: str,
        tree: RunTree,
        on_progress: Callable[[int], None] | None,
        sleep: Callable[[float], None],
        deadline_base: float = DEADLINE_BASE_S,
        limit: TransferLimit | None = None,
    ) -> None:
        self.deadline_base = deadline_base
        self.limit = limit
        self.source = source
        # A client, or what returns the calling thread's client (``client``).
        self.http = deadlines.guard(http) if isinstance(http, httpx.Client) else None
        self.make_http = http
        self.run_id = run_id
        self.tree = tree
        self.on_progress = on_progress
        self.sleep = sleep
        self.cancel = threading.Event()
        # The platform client is shared with the main thread; refreshes are rare, so
        # serialising them costs nothing and spares every client from being thread-safe.
        self.source_lock = threading.Lock()
        # Big transfers are CPU-bound on a fast link (parsing, hashing, copying under the
        # GIL); more of them at once than there are cores only adds contention, measured at
        # ~0.5 vs ~0.7 of a bare loop's throughput on 2 cores. Small files stay at
        # max_workers, where latency, not CPU, is the limit.
        self.large_slots = threading.BoundedSemaphore(max(2, os.cpu_count() or 2))
        # Directories already checked and created in this call, with the temp names found
        # in them: most runs put several files in one directory, and resolving paths was a
        # tenth of the CPU time of a download of small files.
        self.dirs_lock = threading.Lock()
        self.dirs: dict[str, tuple[int, list[str]]] = {}

    # ------------------------------------------------------------------ E9

    def fetch_urls(self, items: Sequence[_Item]) -> str | None:
        """Fill ``item.url`` for a batch; returns an error for the whole batch, or None."""
        entries = [it.entry for it in items]
        last_error = "download URL request failed"
        for attempt in range(ATTEMPTS):
            if self.cancel.is_set():
                return "cancelled"
            try:
                with self.source_lock:
                    returned = list(self.source.get_download_urls(self.run_id, entries))
            except PlatformError as exc:
                if _is_fatal(exc):
                    raise
                last_error = exc.message
                wait_s = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
                retry_after = getattr(exc, "retry_after", None)
                if isinstance(retry_after, int | float) and retry_after > wait_s:
                    wait_s = min(float(retry_after), MAX_RETRY_AFTER_S)
            except ReconcilerError as exc:
                last_error = exc.message
                wait_s = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
            except Exception as exc:  # noqa: BLE001 - any other failure is a retryable one
                last_error = f"{type(exc).__name__}: {exc}"
                wait_s = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
            else:
                self._match(items, returned)
                return None
            if attempt + 1 < ATTEMPTS:
                self.sleep(wait_s)
        return _redact(last_error)

    @staticmethod
    def _match(items: Sequence[_Item], returned: Sequence[DownloadUrlLike]) -> None:
        by_key: dict[tuple[str | None, str], str] = {}
        by_path: dict[str, list[str]] = {}
        for r in returned:
            path, url = getattr(r, "path", None), getattr(r, "url", None)
            if not isinstance(path, str) or not isinstance(url, str) or not url:
                continue
            by_key.setdefault((getattr(r, "token", None), path), url)
            by_path.setdefault(path, []).append(url)
        for it in items:
            url = by_key.get((it.token, it.path))
            if url is None and len(by_path.get(it.path, ())) == 1:
                url = by_path[it.path][0]
            it.url = url
            if url:
                it.urls_seen.append(url)

    # ------------------------------------------------------------------ one file

    def client(self) -> httpx.Client:
        """The client for a transfer on the calling thread (guarded: see ``deadlines``)."""
        if self.http is not None:
            return self.http
        assert callable(self.make_http)
        return deadlines.guard(self.make_http())

    def deadline(self, item: _Item) -> float:
        """Seconds for all attempts at ``item`` (see ``DEADLINE_BASE_S``)."""
        return self.deadline_base + item.size / DEADLINE_MIN_RATE

    def download(self, item: _Item) -> tuple[int, str]:
        """Fetch one file with retries within its deadline; returns (bytes, sha256) or
        raises FileFailed."""
        if self.limit is None:
            return self._within_deadline(item)
        if not self.limit.acquire(stop=self._stopping):
            raise FileFailed("cancelled", retry=False)
        try:
            return self._within_deadline(item)
        finally:
            self.limit.release()

    def _stopping(self) -> bool:
        return self.cancel.is_set() or shutdown.requested()

    def _within_deadline(self, item: _Item) -> tuple[int, str]:
        seconds = self.deadline(item)
        with deadlines.budget(seconds, cancelled=self.cancel.is_set) as budget:
            try:
                return self._download(item, budget)
            except FileFailed as exc:
                if budget.interrupted:
                    raise FileFailed("cancelled", retry=False) from None
                if budget.expired:
                    raise FileFailed(
                        f"Download did not complete within its {seconds:.0f} s deadline "
                        f"({exc.message}).",
                        retry=False,
                    ) from None
                raise

    def _download(self, item: _Item, budget: deadlines.Budget) -> tuple[int, str]:
        last: FileFailed | None = None
        for attempt in range(ATTEMPTS):
            if self.cancel.is_set() or shutdown.requested():
                raise FileFailed("cancelled", retry=False)
            if budget.remaining() <= 0:
                raise last or FileFailed("no time left", retry=False)
            if item.url is None or (last is not None and last.refresh):
                error = self.fetch_urls([item])
                if error is not None or item.url is None:
                    raise FileFailed(error or MSG_NO_URL, retry=False)
            try:
                if item.size >= PIPELINE_MIN_BYTES:
                    with self.large_slots:
                        return self._attempt(item, budget)
                return self._attempt(item, budget)
            except FileFailed as exc:
                last = exc
                if not exc.retry or attempt + 1 == ATTEMPTS:
                    break
                if not exc.refresh:
                    self.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
        assert last is not None
        raise last

    def _check_final(self, item: _Item, dir_fd: int) -> None:
        """Right before the rename: a symlink at the destination must lead inside the run."""
        try:
            is_link = stat.S_ISLNK(os.lstat(item.dest.name, dir_fd=dir_fd).st_mode)
        except OSError:
            return
        if is_link and not is_within(item.dest.resolve(strict=False), self.tree.root):
            raise FileFailed(MSG_SYMLINK, retry=False)

    def _prepare_dir(self, item: _Item) -> tuple[int, list[str]]:
        """Check, create and open the item's directory once per call.

        Returns the open directory and the temp file names found in it. Files are created
        and renamed relative to that descriptor, so a directory on the path swapped for a
        symlink after the check cannot redirect a write.
        """
        rel = item.path.rpartition("/")[0]
        with self.dirs_lock:
            known = self.dirs.get(rel)
            if known is not None:
                return known
            # open_dir checks each component as it opens it (a symlink must stay inside).
            try:
                dir_fd, created = self.tree.open_dir(rel)
            except OSError as exc:
                raise FileFailed(
                    f"Cannot create directory {item.dest.parent}: {exc.strerror or exc}",
                    retry=False,
                ) from exc
            names = []
            if not created:  # only a directory that was there can hold old temp files
                try:
                    names = [n for n in os.listdir(dir_fd) if n.endswith(".partial")]
                except OSError:
                    pass
            self.dirs[rel] = (dir_fd, names)
            return dir_fd, names

    def close(self) -> None:
        """Close the directories opened by ``_prepare_dir``; call once no worker runs."""
        with self.dirs_lock:
            for dir_fd, _names in self.dirs.values():
                os.close(dir_fd)
            self.dirs.clear()
            self.tree.close()

    def _attempt(self, item: _Item, budget: deadlines.Budget) -> tuple[int, str]:
        dest = item.dest
        # The destination itself is checked before the rename (which replaces a symlink
        # there, never writes through it) and was checked when the manifest was read.
        dir_fd, temp_names = self._prepare_dir(item)
        self._remove_stale_partials(dest.name, dir_fd, temp_names)
        tmp = ""
        created = replaced = False
        reported = 0
        started = time.monotonic()
        try:
            with _Stream(self.client(), item, budget) as response:
                if self.limit is not None:
                    self.limit.first_byte(time.monotonic() - started)
                tmp, fd = _create_temp(_partial_base(dest.name), dir_fd)
                created = True
                sink = Sink(fd, threaded=item.size >= PIPELINE_MIN_BYTES)
                received = 0
                try:
                    for chunk in response.iter_bytes(CHUNK_SIZE):
                        if self.cancel.is_set() or budget.remaining() <= 0:
                            raise _Cancelled()
                        received += len(chunk)
                        if received > item.size:
                            # Stop here: a lying or hostile server must not fill the disk.
                            break
                        sink.put(chunk)
                        crash_point("download.mid_file")
                        if self.on_progress is not None:
                            self.on_progress(len(chunk))
                            reported += len(chunk)
                    hexdigest = sink.finish()
                    if received != item.size:
                        raise FileFailed(
                            f"Downloaded size mismatch: expected {item.size}, received {received}"
                        )
                    os.fsync(fd)
                finally:
                    sink.close()
                    os.close(fd)
            self._check_final(item, dir_fd)
            crash_point("download.before_rename")
            os.replace(tmp, dest.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            replaced = True
            return received, hexdigest
        except _Cancelled:
            raise FileFailed("cancelled", retry=False) from None
        except FileFailed:
            raise
        except httpx.HTTPError as exc:
            raise FileFailed(_redact(f"{type(exc).__name__}: {exc}", item.urls_seen)) from None
        except OSError as exc:
            raise FileFailed(
                _redact(f"Cannot write file: {exc.strerror or exc}", item.urls_seen), retry=False
            ) from None
        except Exception as exc:  # noqa: BLE001 - e.g. httpx.InvalidURL from a malformed URL
            raise FileFailed(
                _redact(f"{type(exc).__name__}: {exc}", item.urls_seen), retry=False
            ) from None
        finally:
            if created and not replaced:
                try:
                    os.unlink(tmp, dir_fd=dir_fd)
                except OSError:
                    pass
            if reported and not replaced and self.on_progress is not None:
                # Undo progress of a failed attempt so a progress bar never runs past 100%.
                self.on_progress(-reported)

    @staticmethod
    def _remove_stale_partials(name: str, dir_fd: int, temp_names: Sequence[str]) -> None:
        # Left over by a process killed mid-transfer; only this file's own temp names match.
        if not temp_names:
            return
        pattern = re.compile(
            re.escape(_partial_base(name)) + rf"\.[0-9a-f]{{{_PARTIAL_TOKEN_HEX}}}\.partial"
        )
        for temp in temp_names:
            if pattern.fullmatch(temp):
                try:
                    os.unlink(temp, dir_fd=dir_fd)
                except OSError:
                    pass


def _read_prefix(response: httpx.Response, limit: int) -> str:
    """The start of an error body; never reads a hostile endless body to the end."""
    data = b""
    try:
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) >= limit:
                break
    except httpx.HTTPError:
        pass
    finally:
        response.close()
    return data[:limit].decode("utf-8", "replace")


class _Stream:
    """A GET of a presigned URL with redirects followed by hand (each hop checked)."""

    def __init__(self, http: httpx.Client, item: _Item, budget: deadlines.Budget) -> None:
        self.http = http
        self.item = item
        self.budget = budget
        self.response: httpx.Response | None = None

    def __enter__(self) -> httpx.Response:
        assert self.item.url is not None
        url = httpx.URL(self.item.url)
        for _hop in range(MAX_REDIRECTS + 1):
            if not _url_allowed(url):
                raise FileFailed(
                    "Refusing to download from a URL that is neither HTTPS nor loopback.",
                    retry=False,
                )
            left = self.budget.remaining()
            if left <= 0:
                raise httpx.ReadTimeout("deadline")
            timeout = httpx.Timeout(min(IDLE_TIMEOUT_S, left), connect=min(CONNECT_TIMEOUT_S, left))
            request = self.http.build_request("GET", url, timeout=timeout)
            # Presigned URLs carry their own authorisation; never leak ours to S3.
            request.headers.pop("Authorization", None)
            response = deadlines.send(self.http, request)
            if response.status_code in _REDIRECT_CODES:
                location = response.headers.get("Location")
                response.close()
                if not location:
                    raise FileFailed(f"HTTP {response.status_code}. Redirect without a Location.")
                url = url.join(location)
                self.item.urls_seen.append(str(url))
                continue
            if not 200 <= response.status_code < 300:
                body = _read_prefix(response, ERROR_BODY_CHARS * 4)
                text = _redact(
                    f"HTTP {response.status_code}. {body[:ERROR_BODY_CHARS]}".rstrip(),
                    self.item.urls_seen,
                )
                raise FileFailed(text, refresh=response.status_code == 403)
            self.response = response
            return response
        raise FileFailed(f"Too many redirects (more than {MAX_REDIRECTS}).", retry=False)

    def __exit__(self, *exc: object) -> None:
        if self.response is not None:
            self.response.close()


# --------------------------------------------------------------------------- public entry


def download_run(
    source: OutputSource,
    http: httpx.Client | Callable[[], httpx.Client],
    *,
    run_id: str,
    run_name: str | None,
    root: Path,
    types: Sequence[str],
    overwrite: bool = False,
    max_workers: int = 8,
    executor: Executor | None = None,
    on_progress: Callable[[int], None] | None = None,
    sleep: Callable[[float], None] = shutdown.sleep,
    repo_root: Path | None = None,
    deadline: float | None = None,
    gate: AbstractContextManager[Any] | None = None,
    limit: TransferLimit | None = None,
) -> DownloadResult:
    """Download one run's outputs into ``<root>/<run_dir_name(run_name, run_id)>``.

    ``http`` is a plain client for the presigned GETs (no Platform headers), or what
    returns the calling thread's client, asked by each thread as it starts a transfer (an
    apply builds the first meanwhile and gives each thread its own). Refusing a
    ``pending``/``queued`` run is the caller's job (it knows the status). Per-file problems
    are collected in ``failures``; Platform refusals that are not transient (401, 404, other
    4xx on E8/E9) raise ``PlatformError``; a manifest with no usable file raises
    ``DownloadError``. ``on_progress`` receives byte deltas from worker threads (negative
    when a failed attempt is rolled back).

    Files are fetched on ``executor`` when given (an apply shares one across all its runs,
    so threads are not started per run), else on a pool of ``max_workers`` of this call's
    own.

    ``repo_root`` is where the path checks start (see ``RunTree``): no component between it
    and the run directory may be a symlink. Without it they start at ``root``. A linked
    component raises ``DownloadError`` before any request.

    ``deadline`` is the fixed part of each file's deadline (default ``DEADLINE_BASE_S`` or
    ``OSMOSIS_DOWNLOAD_DEADLINE``); ``http`` is guarded so that it is enforced at the socket.

    ``gate`` is held from before the manifest request until every file is handed to the
    pool (the run's round trips to the Platform), and released before the transfers are
    waited for: an apply that downloads several runs bounds its Platform requests with one
    gate while other runs' files transfer, so no run's round trips wait on another's files.

    ``limit`` bounds the transfers in flight across every call that shares it (see
    ``reconciler.outputs.pace``); without it, the pool's size does.
    """
    held = ExitStack()
    if gate is not None:
        held.enter_context(gate)
    with held:
        selected = normalize_types(types)
        run_dir = Path(root) / run_dir_name(run_name, run_id)
        tree = RunTree(run_dir, Path(repo_root) if repo_root is not None else Path(root))
        tree.check_root()
        manifest = source.get_manifest(run_id, list(selected))
        fresh = tree.absent()  # a first download: no path below the run can be on disk
        tally = _Tally(run_dir, selected)
        entries = getattr(manifest, "files", None) or ()
        tally.items = _manifest_items(entries, selected, tree, fresh, tally.failures)
        if not tally.items:
            raise _nothing_usable(tally.failures, selected)
        base = (
            deadline
            if deadline is not None
            else deadlines.seconds_from_env(DEADLINE_ENV, DEADLINE_BASE_S)
        )
        engine = _Downloader(source, http, run_id, tree, on_progress, sleep, base, limit)
        transfers = _Transfers(engine, executor, max_workers, tally)
        try:
            transfers.start(tally.items, overwrite)
            held.close()  # the run's requests are made: its gate slot goes to the next run
            transfers.collect()
        except BaseException as exc:
            # Ctrl-C or a fatal Platform refusal: stop workers at their next chunk; each one
            # removes its own .partial on the way out.
            transfers.abandon()
            if isinstance(exc, KeyboardInterrupt):
                # The files that did arrive are complete on disk: hand them to the caller, which
                # records them before the interruption goes on.
                transfers.take_arrived()
                raise DownloadInterrupted(tally.result()) from None
            raise
        transfers.close()
        return tally.result()


def _manifest_items(
    entries: Iterable[Any],
    selected: tuple[str, ...],
    tree: RunTree,
    fresh: bool,
    failures: list[tuple[str, str]],
) -> list[_Item]:
    """The manifest's files that may be written, each checked against the run layout and
    the disk; a refused one goes to ``failures`` (path shown, message)."""
    items: list[_Item] = []
    seen: set[str] = set()
    for entry in entries:
        path = getattr(entry, "path", None)
        shown = path if isinstance(path, str) else repr(path)
        size = getattr(entry, "size", None)
        if not isinstance(path, str) or classify_path(path, selected) is None:
            failures.append((shown, MSG_LAYOUT))
            continue
        if path in seen:
            failures.append((shown, MSG_DUPLICATE))
            continue
        seen.add(path)
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            failures.append((shown, MSG_BAD_SIZE))
            continue
        dest = tree.run_dir.joinpath(*path.split("/"))
        safe, st = (True, None) if fresh else tree.file(path)
        if not safe:
            failures.append((shown, MSG_SYMLINK))
            continue
        item = _Item(entry, path, size, getattr(entry, "token", None), dest)
        # Complete on disk: a regular file of the manifest size (resume skips it).
        item.complete = st is not None and stat.S_ISREG(st.st_mode) and st.st_size == size
        items.append(item)
    return items


def _nothing_usable(failures: Sequence[tuple[str, str]], selected: Sequence[str]) -> DownloadError:
    """The error of a manifest that leaves nothing to download."""
    if failures:
        return DownloadError(
            MSG_NO_USABLE,
            f"{len(failures)} manifest path(s) were refused, e.g. {failures[0][0]!r}: "
            f"{failures[0][1]} Report it to the Platform operator.",
        )
    return DownloadError(
        MSG_NOTHING,
        f"the run has no {', '.join(selected)} outputs; choose other download types",
    )


@dataclass
class _Tally:
    """What one call achieved so far: ``result`` makes it a ``DownloadResult``."""

    run_dir: Path
    types: tuple[str, ...]
    items: list[_Item] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)
    sha: dict[str, str] = field(default_factory=dict)
    downloaded: int = 0
    skipped: int = 0
    bytes_downloaded: int = 0

    def take(self, kind: str, item: _Item, future: Future[Any]) -> None:
        """Count a finished transfer (``get``) or the hash of a file kept (``skip``)."""
        try:
            value = future.result()
        except FileFailed as exc:
            self.failures.append((item.path, _redact(exc.message, item.urls_seen)))
            return
        except OSError as exc:
            self.failures.append((item.path, f"Cannot read file: {exc.strerror or exc}"))
            return
        if kind == "skip":
            self.skipped += 1
            self.sha[item.path] = value
        else:
            n, hexdigest = value
            self.downloaded += 1
            self.bytes_downloaded += n
            self.sha[item.path] = hexdigest

    def result(self) -> DownloadResult:
        order = {it.path: i for i, it in enumerate(self.items)}
        self.failures.sort(key=lambda f: order.get(f[0], -1))
        return DownloadResult(
            directory=self.run_dir,
            types=self.types,
            files_downloaded=self.downloaded,
            files_skipped=self.skipped,
            bytes_downloaded=self.bytes_downloaded,
            total_files=len(self.items),
            total_bytes=sum(it.size for it in self.items),
            failures=tuple(self.failures),
            sha256=dict(sorted(self.sha.items())),
        )


class _Transfers:
    """One call's files on a pool (``executor``, else one of its own): hashes of the files
    kept, then the transfers, in batches of presigned URLs; each result goes to ``tally``."""

    def __init__(
        self, engine: _Downloader, executor: Executor | None, max_workers: int, tally: _Tally
    ) -> None:
        self.engine = engine
        self.tally = tally
        self.futures: dict[Future[Any], tuple[str, _Item]] = {}
        # Workers report completions here; cheaper than concurrent.futures.wait, which
        # re-installs a waiter on every outstanding future each time one finishes.
        self.finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
        self.own_pool = executor is None
        self.pool = executor or ThreadPoolExecutor(
            max_workers=max(1, max_workers), thread_name_prefix="osmosis-dl"
        )
        self.taken: set[Future[Any]] = set()

    def start(self, items: Sequence[_Item], overwrite: bool) -> None:
        """Hand every file to the pool (asking the Platform for its URL first)."""
        pending: list[_Item] = []
        for it in items:
            if not overwrite and it.complete:
                self._track(self.pool.submit(hash_file, it.dest), "skip", it)
            else:
                pending.append(it)
        for start in range(0, len(pending), E9_BATCH):
            batch = pending[start : start + E9_BATCH]
            error = self.engine.fetch_urls(batch)
            for it in batch:
                if error is not None:
                    self.tally.failures.append((it.path, error))
                elif it.url is None:
                    self.tally.failures.append((it.path, MSG_NO_URL))
                else:
                    self._track(self.pool.submit(self.engine.download, it), "get", it)

    def collect(self) -> None:
        """Wait for every file handed to the pool."""
        for _ in range(len(self.futures)):
            self._take(_next_done(self.finished, self.engine.cancel))

    def abandon(self) -> None:
        """Stop every transfer and wait until each has cleaned up."""
        self.engine.cancel.set()
        for fut in self.futures:
            fut.cancel()
        wait(self.futures)
        self.close()

    def take_arrived(self) -> None:
        """Count the files that finished and were not counted yet (after ``abandon``)."""
        for fut in self.futures:
            if fut not in self.taken and not fut.cancelled():
                self._take(fut)

    def close(self) -> None:
        if self.own_pool:
            self.pool.shutdown(wait=True)
        self.engine.close()

    def _track(self, future: Future[Any], kind: str, item: _Item) -> None:
        self.futures[future] = (kind, item)  # before the callback can fire: the reader looks it up
        future.add_done_callback(self.finished.put)

    def _take(self, future: Future[Any]) -> None:
        self.taken.add(future)
        kind, item = self.futures[future]
        self.tally.take(kind, item, future)


def _next_done(finished: queue.SimpleQueue[Future], cancel: threading.Event) -> Future:
    # A bounded wait keeps the main thread responsive to Ctrl-C on every platform; in a
    # worker thread (parallel apply), shutdown is seen here and stops the transfers at once.
    while True:
        try:
            return finished.get(timeout=0.2)
        except queue.Empty:
            if shutdown.requested():
                cancel.set()
            continue
