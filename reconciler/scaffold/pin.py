"""The ref init pins the workflows' action to: the release or commit that is running.

GitHub accepts a tag or a full 40-digit commit in ``uses: owner/name@ref`` (a short sha is
refused), so the pin is, in order:

1. ``v<version>`` when the installed version is a release (``0.2.0``: a ``v0.2.0`` tag);
2. the commit pip installed from (``pip install "... @ git+URL@ref"`` records it in the
   distribution's ``direct_url.json``, PEP 610);
3. ``HEAD`` of the checkout the package is imported from (an editable install of a clone);
4. none: the caller says how to give one (``--ref``).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

RELEASE = re.compile(r"\d+\.\d+\.\d+")
FULL_SHA = re.compile(r"[0-9a-f]{40}")
DISTRIBUTION = "osmosis-reconciler"


@dataclass(frozen=True)
class Pin:
    """A ref and where it came from (said once, so a reader knows what was pinned)."""

    ref: str
    source: str


def _direct_url() -> dict[str, object] | None:
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _checkout_head(package_dir: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            cwd=package_dir,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except OSError:
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None
    top, head = Path(lines[0]), lines[1]
    # Only the checkout the package itself belongs to (not a repository it was copied into).
    if (top / "reconciler" / "__init__.py").resolve() != (package_dir / "__init__.py").resolve():
        return None
    return head if FULL_SHA.fullmatch(head) else None


def running_pin(version: str, package_dir: Path) -> Pin | None:
    """The ref of the running installation, or None when it cannot be told."""
    if RELEASE.fullmatch(version):
        return Pin(f"v{version}", f"release {version}")
    direct = _direct_url()
    vcs = direct.get("vcs_info") if direct else None
    if isinstance(vcs, dict) and FULL_SHA.fullmatch(str(vcs.get("commit_id", ""))):
        return Pin(str(vcs["commit_id"]), "the commit this installation was installed from")
    head = _checkout_head(package_dir)
    if head is not None:
        return Pin(head, f"HEAD of the checkout at {package_dir.parent}")
    return None
