"""reconciler.results is pure (its one edge, the kept outputs, is ``outputs.kept``): its modules never load an edge library
(the rule of tests/unit/test_import_direction.py, applied to the new package)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PURE = ["build", "compare", "data", "html", "report", "runs", "stats", "summary", "svg", "table"]
EDGES = ["httpx", "tomlkit", "structlog", "watchfiles"]
PROBE = """
import importlib, sys
importlib.import_module({module!r})
loaded = sorted(name for name in {edges!r} if name in sys.modules)
if loaded:
    raise SystemExit("{module} loaded edge libraries: " + ", ".join(loaded))
"""


@pytest.mark.parametrize("name", PURE)
def test_results_module_loads_no_edge_library(name: str) -> None:
    module = f"reconciler.results.{name}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, edges=EDGES)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr or done.stdout


def test_the_edge_module_is_caught() -> None:
    # outputs.kept downloads through httpx: the probe must see it, or the test above proves nothing.
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module="reconciler.outputs.kept", edges=EDGES)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "httpx" in done.stderr
