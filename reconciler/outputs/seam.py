"""The seam between downloads and the Platform client: what a manifest and a download URL look like, what a download returns, and the messages a file fails with."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

CHUNK_SIZE = 1024 * 1024
"""Streaming and hashing chunk: large, so per-chunk Python overhead stays negligible."""


MSG_LAYOUT = "Manifest path is outside the fixed run layout."


MSG_DUPLICATE = "Manifest contains a duplicate path."


MSG_SYMLINK = "Manifest path crosses a local symlink outside the run root."


MSG_NO_USABLE = "The download manifest contained no usable run-scoped paths."


MSG_NOTHING = "No downloadable files matched the requested selection."


MSG_BAD_SIZE = "Manifest entry has an invalid size."


MSG_NO_URL = "The Platform returned no download URL for this path."


class ManifestEntry(Protocol):
    """One manifest file as the platform client returns it (``ManifestFile``)."""

    path: str
    size: int
    token: str | None


class ManifestLike(Protocol):
    """The E8 response as the platform client returns it (``Manifest``); read only."""

    @property
    def files(self) -> Sequence[Any]: ...

    @property
    def totals(self) -> Any: ...


class DownloadUrlLike(Protocol):
    """One E9 item as the platform client returns it (``DownloadUrl``, read-only)."""

    @property
    def path(self) -> str: ...
    @property
    def token(self) -> str | None: ...
    @property
    def url(self) -> str: ...


class OutputSource(Protocol):
    """The two Platform calls downloads need; ``PlatformClient`` satisfies it.

    Implementations raise the ``PlatformError`` tree. ``get_download_urls`` receives at most
    500 files per call.
    """

    def get_manifest(self, run_id: str, types: Sequence[str]) -> ManifestLike: ...

    def get_download_urls(self, run_id: str, files: Sequence[Any]) -> Sequence[DownloadUrlLike]: ...


class DownloadResult(msgspec.Struct, frozen=True):
    """What one ``download_run`` call achieved; ``apply`` turns it into ``model.Downloads``."""

    directory: Path
    """The run directory, ``<root>/<run-dir>``."""
    types: tuple[str, ...]
    """The selected output types, normalised."""
    files_downloaded: int
    files_skipped: int
    """Files already complete on disk (regular file with the manifest size)."""
    bytes_downloaded: int
    total_files: int
    """Usable manifest files (rejected paths are not counted)."""
    total_bytes: int
    failures: tuple[tuple[str, str], ...]
    """``(manifest path, error)`` for every rejected path and failed file; no URLs inside."""
    sha256: dict[str, str] = msgspec.field(default_factory=dict)
    """Manifest path -> hex sha256 of every file now complete on disk."""

    @property
    def complete(self) -> bool:
        """True when every usable file is on disk and nothing was rejected."""
        return not self.failures


class FileFailed(Exception):
    """One attempt at one file failed; ``retry`` says whether another attempt may help."""

    def __init__(self, message: str, *, retry: bool = True, refresh: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retry = retry
        self.refresh = refresh
