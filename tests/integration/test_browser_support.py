"""The browser the page tests use is real: it renders a loopback page and reports what it
fetched and what went wrong on it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from tests.support.browser import PageVisit

PAGE = b"""<!doctype html><html><head><title>probe</title></head>
<body><h1 id="h">rendered by script?</h1>
<script>document.getElementById('h').textContent = 'rendered by script'; console.error('planted');</script>
</body></html>"""


@pytest.fixture
def loopback_page() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_browser_runs_scripts_and_records_requests_and_console_errors(
    browser_page: PageVisit, loopback_page: str, tmp_path
) -> None:
    browser_page.goto(loopback_page)
    assert browser_page.page.text_content("#h") == "rendered by script"
    assert browser_page.requests == [loopback_page]
    assert browser_page.console_errors == ["planted"]
    shot = browser_page.screenshot(tmp_path / "probe.png")
    assert shot.stat().st_size > 1000
