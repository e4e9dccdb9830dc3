"""Where a run's outputs go: the run directory's name and the fixed layout a manifest path must fit."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote

from reconciler.errors import (
    DownloadError,
    UnsafePathError,
)
from reconciler.model import DOWNLOAD_TYPES
from reconciler.outputs.seam import (
    MSG_LAYOUT,
)

FIXED_FILES = {"summary.csv": "summary", "results.csv": "results", "logs.txt": "logs"}


SANITISE = re.compile(r"[^A-Za-z0-9_-]")


WINDOWS_RESERVED = frozenset(
    {"aux", "con", "nul", "prn"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)


MAX_NAME = 255


def sanitise(text: str) -> str:
    return SANITISE.sub("_", text).strip("_")


def run_dir_name(run_name: str | None, run_id: str) -> str:
    """The run directory name the osmosis CLI uses (platform-api.md §7.2).

    The name keeps only ``[A-Za-z0-9_-]`` (others become ``_``, outer ``_`` stripped); when
    that changed anything, left upper-case letters, or gives a Windows reserved device name,
    ``--<sanitised run id>`` is appended so two runs can never share a directory. The result
    is at most 255 characters and never empty.
    """
    sanitised_id = sanitise(run_id) or "run"
    if not run_name:
        return guard_reserved(sanitised_id[:MAX_NAME])
    base = sanitise(run_name)
    needs_suffix = (
        base != run_name
        or any(c.isupper() for c in base)
        or base.lower() in WINDOWS_RESERVED
        or len(base) > MAX_NAME
    )
    if not needs_suffix:
        return base
    if not base:
        return guard_reserved(sanitised_id[:MAX_NAME])
    suffix = "--" + sanitised_id
    if len(suffix) > MAX_NAME - 1:
        suffix = suffix[: MAX_NAME - 1]
    return base[: MAX_NAME - len(suffix)] + suffix


def guard_reserved(name: str) -> str:
    # A run id like "con" would otherwise name a device on Windows.
    return name + "--run" if name.lower() in WINDOWS_RESERVED else name


def normalize_types(types: Iterable[str]) -> tuple[str, ...]:
    """Lower-case, trim and de-duplicate in order; ``all`` alone means all four types."""
    out: list[str] = []
    for raw in types:
        value = raw.strip().lower()
        if value and value not in out:
            out.append(value)
    if "all" in out:
        if len(out) > 1:
            raise DownloadError(
                "--type all cannot be combined with other output types.",
                "use either `all` or a list of summary, results, artifacts, logs",
            )
        return DOWNLOAD_TYPES
    unknown = [t for t in out if t not in DOWNLOAD_TYPES]
    if unknown or not out:
        shown = ", ".join(unknown) if unknown else "(none)"
        raise DownloadError(
            f"Unknown --type value(s): {shown}. Choose from: summary, results, artifacts, logs, all.",
            "fix download_types in [tool.osmosis-reconciler] or the --download-types flag",
        )
    return tuple(out)


def segment_is_unsafe(segment: str) -> bool:
    if segment in ("", ".", ".."):
        return True
    # Undo percent-encoding until stable so %2e%2e, %252e%252e and %2f cannot smuggle a
    # traversal past a later consumer that decodes.
    decoded = segment
    for _ in range(8):
        nxt = unquote(decoded)
        if nxt == decoded:
            break
        decoded = nxt
    if decoded != segment:
        if decoded in (".", "..") or "/" in decoded or "\\" in decoded or "\x00" in decoded:
            return True
    return False


def classify_path(path: str, selected_types: Iterable[str] | None = None) -> str | None:
    """The output type of a manifest path, or None when it is unsafe or outside the layout.

    With ``selected_types``, a path of an unselected type is also None. Pure: looks at the
    string only (symlinks are checked by ``download_run`` against the real directory).
    """
    if not isinstance(path, str) or not path:
        return None
    if path.startswith("/") or "\\" in path or "\x00" in path:
        return None
    segments = path.split("/")
    if any(segment_is_unsafe(s) for s in segments):
        return None
    if len(segments) == 1:
        category = FIXED_FILES.get(segments[0])
    elif segments[0] == "artifacts" and len(segments) >= 3:
        category = "artifacts"
    else:
        category = None
    if category is None:
        return None
    if selected_types is not None and category not in set(selected_types):
        return None
    return category


def validate_path(path: str, selected_types: Iterable[str] | None = None) -> str:
    """``classify_path`` that raises ``UnsafePathError`` with the CLI's message instead of None."""
    category = classify_path(path, selected_types)
    if category is None:
        raise UnsafePathError(
            MSG_LAYOUT,
            "the Platform sent a path this tool will not write; report it to the Platform "
            "operator (the other files were still downloaded)",
        )
    return category


def is_within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)
