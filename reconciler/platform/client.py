"""The Osmosis Platform's ``/api/cli/`` routes (platform-api.md §1-§8), typed.

The only place that speaks HTTP to the Platform (the local Platform included: it is
reached through the same client, over loopback or an in-process transport). Each route is
one method of ``PlatformClient``; the answers become frozen models from
``reconciler.platform.models``. How a request is sent (deadlines, size caps, retries,
redaction) is ``reconciler.platform.transport``; how a refusal becomes an error is
``reconciler.platform.error_table``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import quote

import msgspec

from reconciler.errors import InvalidResponseError, OutcomeUnknownError, UsageError
from reconciler.escaping import escape_text
from reconciler.model import DOWNLOAD_TYPES
from reconciler.platform.error_table import platform_error
from reconciler.platform.models import (
    Benchmark,
    BenchmarkDetail,
    DownloadUrl,
    LogPage,
    Manifest,
    ManifestFile,
    RunDetail,
    RunSummary,
    SecretRecord,
    SubmittedRun,
    Workspace,
)
from reconciler.platform.transport import (
    API_PREFIX,
    CLI_COMPAT_VERSION,
    DEADLINE_ENV,
    DEFAULT_DEADLINE_S,
    USER_AGENT,
    PlatformConnection,
    RequestMode,
    RetryPolicy,
    parse_retry_after,
)

__all__ = [
    "API_PREFIX",
    "CLI_COMPAT_VERSION",
    "DEADLINE_ENV",
    "DEFAULT_DEADLINE_S",
    "PAGE_LIMIT",
    "USER_AGENT",
    "PlatformClient",
    "RetryPolicy",
    "RunPage",
    "parse_retry_after",
    "platform_error",
]

PAGE_LIMIT = 50
LOGS_MAX_LIMIT = 200
DOWNLOAD_URL_BATCH = 500
SECRET_SCOPES = ("workspace", "user")
SECRET_LIST_SCOPES = ("all", "workspace", "user")
_SECRET_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")

T = TypeVar("T")


class RunPage(msgspec.Struct, frozen=True):
    """One page of the run list (E4)."""

    runs: list[RunSummary]
    next_offset: int | None
    """None at the end of the list."""
    total_count: int | None


MAX_NAME_LENGTH = 1024
"""Longest run / benchmark name or id put into a URL: ids are 36 characters, names short;
a 70,000-character one (from a command line or a hand-edited lockfile) made httpx fail
with "URL too long" as an internal error."""


def _seg(value: str) -> str:
    """A path segment, percent-encoded with no safe characters (``/`` → ``%2F``)."""
    text = str(value)
    if not text or len(text) > MAX_NAME_LENGTH or "\0" in text:
        shown = escape_text(text[:40]) + ("..." if len(text) > 40 else "")
        raise UsageError(
            f"{shown!r} ({len(text):,} characters) cannot be a run or benchmark name or id",
            f"names and ids are 1 to {MAX_NAME_LENGTH} characters; check the value you gave "
            "(or the lockfile entry it came from)",
        )
    return quote(text, safe="")


def _valid_offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class PlatformClient(PlatformConnection):
    """Typed access to one Osmosis Platform (real, or the local one over loopback HTTP).

    See ``PlatformConnection`` for the constructor: ``workspace`` or ``git_identity`` select
    the workspace, ``transport`` is the seam for tests and the in-process local Platform.
    Thread-safe: the apply engine shares one client between its workers.
    """

    def _page(
        self,
        path: str,
        key: str,
        offset: int,
        extra: Mapping[str, str] | None,
        workspace: str | None = None,
    ) -> tuple[list[Any], Any, Any]:
        """One page: (items, next_offset, total_count); ``workspace``: of that workspace
        instead of the client's own."""
        body = self._request(
            "GET",
            path,
            query={"limit": PAGE_LIMIT, "offset": offset, **(extra or {})},
            workspace=workspace,
        )
        items = body.get(key)
        if not isinstance(items, list):
            raise InvalidResponseError(
                f"The Platform's {path} response has no '{key}' list.",
                "check that the platform URL points at an Osmosis Platform",
            )
        return items, body.get("next_offset"), body.get("total_count")

    def _pages(
        self,
        path: str,
        key: str,
        extra: Mapping[str, str] | None = None,
        *,
        start: int = 0,
        ahead: int = 1,
        workspace: str | None = None,
    ) -> Iterator[list[Any]]:
        """Walk an offset-paged list: limit 50, follow ``next_offset``, stop on null or empty.

        With ``ahead`` > 1, the offsets that the first page's ``total_count`` announces are
        fetched that many at a time. The walk still follows ``next_offset``: a page whose
        ``next_offset`` is not the offset fetched next (a server with shorter pages, or a
        list that changed meanwhile) ends the read-ahead and the walk goes on one page at a
        time from there, so no item is skipped (duplicates are dropped by ``_unique``).
        """
        offset = start
        seen: set[int] = set()
        while True:
            seen.add(offset)
            items, next_offset, total = self._page(path, key, offset, extra, workspace)
            yield items
            if not _valid_offset(next_offset) or not items or next_offset in seen:
                # A server that points back at a page already read would loop forever.
                return
            if (
                ahead > 1
                and workspace is None
                and isinstance(total, int)
                and not isinstance(total, bool)
            ):
                planned = [o for o in range(next_offset, total, PAGE_LIMIT) if o not in seen]
                if len(planned) > 1:
                    followed = yield from self._read_ahead(path, key, extra, planned, ahead, seen)
                    if followed is None:
                        return
                    next_offset = followed
                    if next_offset in seen:
                        return
            offset = next_offset

    def _read_ahead(
        self,
        path: str,
        key: str,
        extra: Mapping[str, str] | None,
        offsets: list[int],
        workers: int,
        seen: set[int],
    ) -> Generator[list[Any], None, int | None]:
        """Fetch ``offsets`` concurrently, yield them in order; return where to go on."""
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="osmosis-pages") as pool:
            pages = pool.map(lambda o: (o, self._page(path, key, o, extra)), offsets)
            for index, (offset, (items, next_offset, _total)) in enumerate(pages):
                seen.add(offset)
                yield items
                if not items or not _valid_offset(next_offset):
                    return None
                expected = offsets[index + 1] if index + 1 < len(offsets) else None
                if next_offset != expected:
                    return next_offset
        return None

    @staticmethod
    def _unique(items: Sequence[T], key: Callable[[T], str]) -> list[T]:
        # New runs created while paging (newest first) shift offsets, so the same item
        # can appear on two pages; keep its first occurrence.
        seen: set[str] = set()
        unique = []
        for item in items:
            if key(item) not in seen:
                seen.add(key(item))
                unique.append(item)
        return unique

    # ------------------------------------------------------------------ benchmarks

    def list_benchmarks(self) -> list[Benchmark]:
        """E1, every page."""
        found = [
            self._build(Benchmark.from_api, raw, "benchmark")
            for page in self._pages("/benchmarks", "benchmarks")
            for raw in page
        ]
        return self._unique(found, lambda b: b.id)

    def get_benchmark(self, name_or_id: str) -> BenchmarkDetail:
        """E2: a benchmark by key, name or id."""
        body = self._request("GET", f"/benchmarks/{_seg(name_or_id)}")
        return self._build(BenchmarkDetail.from_api, body, "benchmark detail")

    # ------------------------------------------------------------------ runs

    def iter_run_pages(
        self, *, benchmark_id: str | None = None, ahead: int = 1, start: int = 0
    ) -> Iterator[list[RunSummary]]:
        """E4 one page at a time (limit 50) from offset ``start``, optionally filtered by
        benchmark id; ``ahead`` pages are requested at a time. A caller that keeps only part
        of each run (``engine.observe.RunWalk``) never holds the whole list as models; a run
        listed on two pages (offsets shift while runs are created) comes twice."""
        extra = {"benchmark": benchmark_id} if benchmark_id else None
        for page in self._pages(
            "/benchmark-runs", "benchmark_runs", extra, start=start, ahead=ahead
        ):
            yield [self._build(RunSummary.from_api, raw, "benchmark run") for raw in page]

    def list_runs(
        self, *, benchmark_id: str | None = None, ahead: int = 1, start: int = 0
    ) -> list[RunSummary]:
        """E4, every page from offset ``start``, each run once; ``ahead`` pages at a time."""
        extra = {"benchmark": benchmark_id} if benchmark_id else None
        runs = [
            self._build(RunSummary.from_api, raw, "benchmark run")
            for page in self._pages(
                "/benchmark-runs", "benchmark_runs", extra, start=start, ahead=ahead
            )
            for raw in page
        ]
        return self._unique(runs, lambda r: r.id)

    def run_page(self, offset: int, *, benchmark_id: str | None = None) -> RunPage:
        """One E4 page (limit 50) at ``offset``, with what the Platform says comes next."""
        extra = {"benchmark": benchmark_id} if benchmark_id else None
        items, next_offset, total = self._page("/benchmark-runs", "benchmark_runs", offset, extra)
        return RunPage(
            runs=[self._build(RunSummary.from_api, raw, "benchmark run") for raw in items],
            next_offset=next_offset if _valid_offset(next_offset) and items else None,
            total_count=total if isinstance(total, int) and not isinstance(total, bool) else None,
        )

    def get_run(self, name_or_id: str) -> RunDetail:
        """E5: a run by name or id."""
        body = self._request("GET", f"/benchmark-runs/{_seg(name_or_id)}")
        return self._build(RunDetail.from_api, body, "benchmark run detail")

    def submit_run(self, body: Mapping[str, Any]) -> SubmittedRun:
        """E3: submit a paid run. Never retried once the request may have been sent.

        Raises ``OutcomeUnknownError`` when the Platform may have created the run but the
        answer was lost or unusable; the caller must keep its intent and adopt later.
        """
        provided = (body.get("secrets") or {}).get("provided") or {}
        secret_values = (
            [str(v) for v in provided.values() if v] if isinstance(provided, Mapping) else []
        )
        try:
            response = self._request(
                "POST",
                "/benchmark-runs",
                body=dict(body),
                mode=RequestMode.SUBMIT,
                secrets=secret_values,
            )
            return SubmittedRun.from_api(response)
        except (InvalidResponseError, ValueError) as exc:
            # A 2xx came back, so the run was most likely created, but without a usable id
            # it cannot be recorded: the same recovery as a lost response.
            raise OutcomeUnknownError(
                f"The Platform accepted the submit but its response was unusable ({exc}); "
                "the run may exist.",
                "do not resubmit by hand: run osmosis-plan, which adopts the run if the "
                "Platform created it",
            ) from None

    def stop_run(self, run_id: str) -> None:
        """E7: stop a run by id (body ``{}``; the response is ignored)."""
        self._request("POST", f"/benchmark-runs/{_seg(run_id)}/stop", body={})

    def get_logs(
        self,
        name_or_id: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        direction: str = "older",
    ) -> LogPage:
        """E6: one page of a run's logs (oldest first within the page)."""
        if isinstance(limit, bool) or not 1 <= limit <= LOGS_MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {LOGS_MAX_LIMIT}")
        if direction not in ("older", "newer"):
            raise ValueError("direction must be 'older' or 'newer'")
        query: dict[str, Any] = {"limit": limit, "direction": direction}
        if cursor:
            query["cursor"] = cursor
        body = self._request("GET", f"/benchmark-runs/{_seg(name_or_id)}/logs", query=query)
        return self._build(LogPage.from_api, body, "log page")

    # ------------------------------------------------------------------ outputs

    def get_manifest(self, run_id: str, types: Sequence[str]) -> Manifest:
        """E8: the files of the selected output types (``summary``, ``results``, ...)."""
        selected = list(dict.fromkeys(types))
        unknown = [t for t in selected if t not in DOWNLOAD_TYPES]
        if not selected or unknown:
            raise ValueError(f"types must be a non-empty subset of {DOWNLOAD_TYPES}")
        body = self._request(
            "GET",
            f"/benchmark-runs/{_seg(run_id)}/outputs/manifest",
            query={"types": ",".join(selected)},
        )
        return self._build(Manifest.from_api, body, "output manifest")

    def get_download_urls(self, run_id: str, files: Sequence[ManifestFile]) -> list[DownloadUrl]:
        """E9 in batches of at most 500; one URL per matched file, in request order.

        Files the Platform returned no URL for are left out (the caller reports them).
        """
        urls: list[DownloadUrl] = []
        for start in range(0, len(files), DOWNLOAD_URL_BATCH):
            batch = files[start : start + DOWNLOAD_URL_BATCH]
            items = [
                {"path": f.path, **({"token": f.token} if f.token is not None else {})}
                for f in batch
            ]
            body = self._request(
                "POST",
                f"/benchmark-runs/{_seg(run_id)}/outputs/download-urls",
                body={"items": items},
            )
            urls.extend(self._match_urls(body, batch))
        return urls

    @staticmethod
    def _match_urls(body: Mapping[str, Any], batch: Sequence[ManifestFile]) -> list[DownloadUrl]:
        entries: Any = None
        for key in ("items", "files", "urls"):
            if isinstance(body.get(key), list):
                entries = body[key]
                break
        if entries is None:
            raise InvalidResponseError(
                "The Platform's download-urls response has no list of URLs.",
                "check that the platform URL points at an Osmosis Platform",
            )
        expires = body.get("expires_in")
        expires_in = expires if isinstance(expires, int) and not isinstance(expires, bool) else None
        by_pair: dict[tuple[str | None, str], str] = {}
        by_path: dict[str, list[str]] = {}
        for entry in entries:
            if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
                continue
            url = next(
                (
                    entry[k]
                    for k in ("url", "presignedUrl", "presigned_url")
                    if isinstance(entry.get(k), str) and entry[k]
                ),
                None,
            )
            if url is None:
                continue
            token = entry.get("token") if isinstance(entry.get("token"), str) else None
            by_pair.setdefault((token, entry["path"]), url)
            by_path.setdefault(entry["path"], []).append(url)
        matched = []
        for file in batch:
            url = by_pair.get((file.token, file.path))
            if url is None and len(by_path.get(file.path, [])) == 1:
                url = by_path[file.path][0]
            if url is not None:
                matched.append(
                    DownloadUrl(path=file.path, token=file.token, url=url, expires_in=expires_in)
                )
        return matched

    # ------------------------------------------------------------------ secrets

    def list_secrets(
        self, scope: str = "all", *, workspace: str | None = None
    ) -> list[SecretRecord]:
        """S1, every page. Records carry names and scopes, never values. ``workspace``: the
        records of that workspace (by name) instead of the client's own."""
        if scope not in SECRET_LIST_SCOPES:
            raise ValueError(f"scope must be one of {SECRET_LIST_SCOPES}")
        pages = self._pages(
            "/environment-secrets", "environment_secrets", {"scope": scope}, workspace=workspace
        )
        found = [
            self._build(SecretRecord.from_api, raw, "secret record")
            for page in pages
            for raw in page
        ]
        return self._unique(found, lambda s: s.id)

    def set_secret(self, name: str, value: str, scope: str = "user") -> SecretRecord:
        """S2: create or replace a secret record (personal scope by default)."""
        self._check_secret_args(name, scope)
        body = self._request(
            "POST",
            "/environment-secrets",
            body={"name": name, "value": value, "scope": scope},
            secrets=[value],
        )
        return self._build(SecretRecord.from_api, body, "secret record")

    def delete_secret(self, name: str, scope: str = "user") -> None:
        """S3: delete a secret record (DELETE with a JSON body)."""
        self._check_secret_args(name, scope)
        self._request("DELETE", "/environment-secrets", body={"name": name, "scope": scope})

    @staticmethod
    def _check_secret_args(name: str, scope: str) -> None:
        if not _SECRET_NAME_RE.match(name):
            raise UsageError(
                f"Invalid secret name '{name}'.",
                "secret names are 1-255 characters of A-Z, 0-9 and _, starting with a letter",
            )
        if scope not in SECRET_SCOPES:
            raise UsageError(
                f"Invalid secret scope '{scope}'.", "use scope 'user' (personal) or 'workspace'"
            )

    # ------------------------------------------------------------------ account

    def list_workspaces(self) -> list[Workspace]:
        """W1: the workspaces the token can see (no scope header)."""
        body = self._request("GET", "/workspaces", scoped=False)
        raw = body.get("workspaces")
        if not isinstance(raw, list):
            raise InvalidResponseError(
                "The Platform's workspaces response has no 'workspaces' list.",
                "check that the platform URL points at an Osmosis Platform",
            )
        return [self._build(Workspace.from_api, item, "workspace") for item in raw]

    def verify(self) -> dict[str, Any]:
        """``GET /api/cli/verify``: who the token belongs to (optional ``X-Osmosis-Git`` only)."""
        return self._request("GET", "/verify", scoped=False, git_only=True)
