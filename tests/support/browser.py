"""A real headless browser for tests that look at a page: Debian's ``chromium`` driven by
Playwright's client library, never a browser download.

On a laptop without chromium the browser tests are skipped; in CI (``CI`` set) a missing
browser fails them, since ``.ci/run`` installs it and a skip there would hide a broken page.
Chromium is started cut off from everything but loopback: the background-networking flags
keep it from dialling out at start, and every request a page makes is recorded so a test can
assert that a self-contained page made none.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    """The system chromium, or None when this machine has none."""
    configured = os.environ.get("OSMOSIS_TEST_CHROMIUM")
    for candidate in (configured, *CHROMIUM_CANDIDATES):
        if candidate and Path(candidate).is_file():
            return candidate
    found = shutil.which("chromium")
    return found


def require_chromium() -> str:
    """The chromium path; skips the test on a laptop without it, fails in CI."""
    path = chromium_path()
    if path is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it, so CI must have it")
        pytest.skip(message)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the playwright client library is missing (pip install -e '.[dev]')")
        pytest.skip("the playwright client library is not installed")
    return path


@dataclass
class PageVisit:
    """What a page did while a test looked at it."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def goto(self, url: str) -> None:
        self.page.goto(url, wait_until="load", timeout=30_000)

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def browser_page() -> Iterator[PageVisit]:
    """A fresh page in a fresh headless chromium profile, with its requests and errors kept."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="osmosis-chromium-")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=executable, args=CHROMIUM_ARGS, timeout=60_000
            )
            try:
                page = browser.new_page()
                visit = PageVisit(page=page)
                page.on("request", lambda request: visit.requests.append(request.url))
                page.on(
                    "console",
                    lambda message: (
                        visit.console_errors.append(message.text)
                        if message.type == "error"
                        else None
                    ),
                )
                page.on("pageerror", lambda error: visit.page_errors.append(str(error)))
                yield visit
            finally:
                browser.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
