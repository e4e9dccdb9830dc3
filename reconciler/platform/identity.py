"""Whether a Platform URL is a served local Platform, asked without a token.

``osmosis-platform-emulator serve`` answers every page with ``X-Osmosis-Local-Platform:
<instance>``; the real Platform sends no such
header. The question is one ``GET <url>/`` with no ``Authorization`` header, so a URL that
turns out not to be a local Platform never saw a token: this is what lets plain http beyond
loopback be allowed for a local Platform only (a token over plain http to a real Platform
would travel in plaintext).
"""

from __future__ import annotations

import httpx

__all__ = ["local_platform_instance"]

LOCAL_PLATFORM_HEADER = "X-Osmosis-Local-Platform"
"""What a served local Platform answers its pages with (``local_platform.app`` spells it
too: the client never imports the emulator)."""
PROBE_TIMEOUT_S = 5.0
"""A local Platform answers a page in milliseconds; one that does not answer in this long is
treated as no local Platform."""


def local_platform_instance(
    url: str, *, transport: httpx.BaseTransport | None = None
) -> str | None:
    """The instance of the local Platform served at ``url`` (a normalised base URL), or None
    when ``url`` does not answer as one (another server, or nothing reachable)."""
    try:
        with httpx.Client(
            transport=transport, timeout=PROBE_TIMEOUT_S, follow_redirects=False
        ) as client:
            answer = client.get(url.rstrip("/") + "/")
    except httpx.HTTPError:
        return None
    instance = answer.headers.get(LOCAL_PLATFORM_HEADER, "").strip()
    return instance or None
