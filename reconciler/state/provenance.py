"""Whose lockfile this is: the header fields read cheaply, and the refusal of another repository's or lineage's state."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from reconciler.errors import StateError
from reconciler.model import (
    LockState,
)
from reconciler.state.toml_fast import utc

PEEK_BYTES = 4096


PEEK_LINEAGE = re.compile(r'^lineage = "([^"\\]+)"$', re.M)


PEEK_SERIAL = re.compile(r"^serial = (\d+)$", re.M)


PEEK_REPOSITORY = re.compile(r'^repository = "([^"\\]*)"$', re.M)


FOREIGN_STATE_FLAG = "--allow-foreign-state"


def peek_header(data: bytes) -> tuple[str | None, int | None, str | None]:
    """(lineage, serial, repository) from a lockfile's first lines (e.g. HEAD's committed
    version), without parsing the whole file; None where absent."""
    head = data[:PEEK_BYTES].decode("utf-8", "replace").partition("\n[")[0]
    lineage = PEEK_LINEAGE.search(head)
    serial = PEEK_SERIAL.search(head)
    repository = PEEK_REPOSITORY.search(head)
    return (
        lineage.group(1) if lineage else None,
        int(serial.group(1)) if serial else None,
        repository.group(1) if repository else None,
    )


def check_provenance(
    state: LockState,
    *,
    name: str,
    repository: str | None,
    committed: bytes | None,
    allow_foreign: bool = False,
    root_commit: str | None = None,
) -> None:
    """Refuse a lockfile that is not this repository's own history.

    * It names another repository (copied from another repository in the same
      workspace, its entries would stop that repository's runs). Identity is the remote
      and the root commit (``same_repository``): a lockfile written before the repository
      had a remote is this repository's in a clone with the same root commit; a clone
      whose remote differs from the recorded one is a fork.
    * Its lineage differs from the lockfile committed at HEAD (replaced or deleted).
    * Its serial is lower than HEAD's with the same lineage (an older copy, edited back).

    ``allow_foreign`` (``--allow-foreign-state``) accepts the first two after a real rename
    or a deliberate replacement; an older copy is never accepted (restore it from git).
    """
    restore = f"`git checkout HEAD -- {name}`"
    if committed is not None:
        head_lineage, head_serial, _ = peek_header(committed)
        if head_lineage is not None and head_lineage == state.lineage:
            if head_serial is not None and state.serial < head_serial:
                raise StateError(
                    f"{name} has serial {state.serial}, older than the version committed at "
                    f"HEAD (serial {head_serial}): it was edited back or replaced by an older "
                    "copy, and would record runs that were already replaced",
                    f"restore it with {restore}",
                )
        elif head_lineage is not None and not allow_foreign:
            what = (
                "is missing"
                if state.serial == 0 and not state.runs
                else f"has lineage {state.lineage}"
            )
            raise StateError(
                f"{name} {what}, but the lockfile committed at HEAD has lineage "
                f"{head_lineage}: it was replaced (copied from elsewhere?) or deleted, and a "
                "replaced lockfile must never drive stops or submits",
                f"restore it with {restore}, or pass {FOREIGN_STATE_FLAG} if the "
                "replacement is deliberate",
            )
    if (
        repository is not None
        and not allow_foreign
        and not same_repository(state, repository, root_commit)
    ):
        raise StateError(
            f"{name} belongs to repository {state.repository}, not to this one "
            f"({repository}): a lockfile copied from another repository would stop or "
            "replace that repository's runs",
            f"use this repository's own lockfile; if the repository was renamed or moved, "
            f"pass {FOREIGN_STATE_FLAG} once (the next apply records the new name)",
        )


def same_repository(state: LockState, repository: str, root_commit: str | None) -> bool:
    """Whether ``state`` is the lockfile of the repository ``repository`` (its identity:
    the remote, else ``root:SHA``) whose history starts at ``root_commit``.

    The recorded remote decides when both sides have one (another remote is a fork, even
    with the same root commit). When either side has none (written before ``origin`` was
    added, or read in a copy without a remote) the root commit decides.
    """
    recorded = state.repository
    if recorded is None or recorded == repository:
        return True
    recorded_remote = None if recorded.startswith("root:") else recorded
    remote = None if repository.startswith("root:") else repository
    if recorded_remote is not None and remote is not None:
        return False
    recorded_root = state.root_commit or (
        recorded.removeprefix("root:") if recorded.startswith("root:") else None
    )
    ours = root_commit or (repository.removeprefix("root:") if remote is None else None)
    return recorded_root is not None and recorded_root == ours


PEEK_WATERMARK = re.compile(
    r"^observed_until = (\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$", re.M
)


def peek_watermark(path: Path) -> tuple[bool, datetime | None]:
    """(known, watermark) from the lockfile's first lines, without reading the whole file:
    lets the run list start (on a thread) before the lockfile is parsed. ``known`` is False
    when the header cannot be read this way (the full parse decides then)."""
    try:
        with open(path, "rb") as handle:
            return peek_watermark_in(handle.read(PEEK_BYTES))
    except FileNotFoundError:
        return True, None
    except OSError:
        return False, None


def peek_watermark_in(data: bytes | None) -> tuple[bool, datetime | None]:
    """``peek_watermark`` of lockfile bytes already read (None: no lockfile)."""
    if data is None:
        return True, None
    head = data[:PEEK_BYTES].decode("utf-8", "replace")
    body, _, _ = head.partition("\n[")
    match = PEEK_WATERMARK.search(body)
    if match:
        try:
            return True, utc(match.groups())
        except ValueError:
            return False, None
    return ("\n[" in head or len(head) < PEEK_BYTES), None
