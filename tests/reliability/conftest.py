"""Reliability suites: print the figures table at the end of the session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not report.ROWS:
        return
    terminalreporter.section("reliability figures")
    terminalreporter.write(report.render())
    target = os.environ.get("OSMOSIS_RELIABILITY_FIGURES")
    if target:
        report.save(Path(target))
        terminalreporter.write(f"(saved to {target})\n")
