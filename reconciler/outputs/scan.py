"""What is on disk for a recorded run: present files and recorded files whose sha256 changed."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from reconciler.model import LocalOutputs
from reconciler.outputs.seam import (
    CHUNK_SIZE,
)
from reconciler.paths import check_inside


def hash_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(CHUNK_SIZE)
        view = memoryview(buf)
        while True:
            n = f.readinto(buf)
            if not n:
                break
            digest.update(view[:n])
    return digest.hexdigest()


def scan_outputs(
    directory: Path,
    recorded_sha256: Mapping[str, str],
    *,
    verify: bool = True,
    anchor: Path | None = None,
) -> LocalOutputs:
    """What is on disk in a run directory: regular files present and recorded files changed.

    ``present`` lists every regular file below ``directory`` (POSIX relative paths; temp
    ``.partial`` files and symlinks excluded). With ``verify``, each recorded file that is
    present is hashed and listed in ``changed`` when its sha256 differs. A run directory
    reached through a symlink (checked from ``anchor``, the repository root, when given)
    holds nothing: its files are not ours, and the download that follows refuses it.
    """
    directory = Path(directory)
    empty = LocalOutputs(present=frozenset(), changed=frozenset())
    if anchor is not None:
        if check_inside(anchor, os.path.relpath(directory, anchor)) is not None:
            return empty
    elif os.path.islink(directory):
        return empty
    present: set[str] = set()
    # Plain strings and scandir's cached entry types: a plan scans one directory per
    # recorded run, and per-file pathlib objects and lstat calls dominated its cost.
    scan_files(str(directory), "", present)
    changed: set[str] = set()
    if verify:
        top = str(directory)
        for path, expected in recorded_sha256.items():
            if path not in present:
                continue
            try:
                actual = hash_file(os.path.join(top, *path.split("/")))
            except OSError:
                continue
            if actual.lower() != str(expected).lower():
                changed.add(path)
    return LocalOutputs(present=frozenset(present), changed=frozenset(changed))


def scan_files(top: str, prefix: str, present: set[str]) -> None:
    """Add every regular file below ``top`` to ``present`` as ``prefix`` + POSIX path.

    Symlinks (to files or directories) are neither listed nor followed; temp ``.partial``
    files are skipped; unreadable directories are skipped.
    """
    try:
        with os.scandir(top) as it:
            entries = list(it)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                scan_files(entry.path, prefix + name + "/", present)
            elif entry.is_file(follow_symlinks=False):
                if not (name.startswith(".") and name.endswith(".partial")):
                    present.add(prefix + name)
        except OSError:
            continue
