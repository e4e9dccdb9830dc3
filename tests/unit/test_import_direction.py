"""The pure core never loads an edge library (style.md, "Import direction")."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE_MODULES = [
    "reconciler.errors",
    "reconciler.escaping",
    "reconciler.loopback",
    "reconciler.model",
    "reconciler.plan.submit_rules",
    "reconciler.plan",
    "reconciler.render",
    "reconciler.plan.restrict",
]
EDGE_LIBRARIES = ["httpx", "tomlkit", "structlog", "watchfiles"]

PROBE = """
import importlib, sys
importlib.import_module({module!r})
loaded = sorted(name for name in {edges!r} if name in sys.modules)
if loaded:
    raise SystemExit("{module} loaded edge libraries: " + ", ".join(loaded))
"""


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_loads_no_edge_library(module: str) -> None:
    # A fresh interpreter: in this one, other tests may already have imported the edges.
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, edges=EDGE_LIBRARIES)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr or result.stdout


def test_the_probe_detects_an_edge_library() -> None:
    # The probe itself must be able to fail, or the test above proves nothing.
    probe = PROBE.format(module="json", edges=EDGE_LIBRARIES).replace(
        "importlib.import_module('json')", "importlib.import_module('json'); import httpx"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "httpx" in result.stderr
