"""Whether a Platform URL is a served local Platform, asked without a token.

``osmosis-platform-emulator serve`` answers every page with ``X-Osmosis-Local-Platform:
<instance>``; the real Platform sends no such header. The question is one ``GET <url>/``
with no ``Authorization`` header, so a URL that turns out not to be a local Platform never
saw a token: this is what lets plain http beyond loopback be allowed for a local Platform
only (a token over plain http to a real Platform would travel in plaintext). The answer's
headers are all that is read (the page itself is never downloaded), under an overall
deadline (``reconciler.deadlines``): a host that accepts the connection and then trickles
or says nothing costs ``PROBE_DEADLINE_S`` at most, and counts as no local Platform.
"""

from __future__ import annotations

import httpx

from reconciler import deadlines

__all__ = ["LOCAL_PLATFORM_HEADER", "PROBE_DEADLINE_S", "local_platform_instance"]

LOCAL_PLATFORM_HEADER = "X-Osmosis-Local-Platform"
"""What a served local Platform answers its pages with (``local_platform.app`` spells it
too: the client never imports the emulator)."""
PROBE_DEADLINE_S = 3.0
"""A local Platform answers a page in milliseconds (on a team's network, tens of them); one
that has not answered in this long, connection included, is treated as no local Platform."""


def local_platform_instance(
    url: str,
    *,
    transport: httpx.BaseTransport | None = None,
    deadline: float = PROBE_DEADLINE_S,
) -> str | None:
    """The instance of the local Platform served at ``url`` (a normalised base URL), or None
    when ``url`` does not answer as one (another server, or nothing reachable in
    ``deadline`` seconds)."""
    try:
        with (
            deadlines.budget(deadline),
            deadlines.guard(
                httpx.Client(transport=transport, timeout=deadline, follow_redirects=False)
            ) as client,
            client.stream("GET", url.rstrip("/") + "/") as answer,
        ):
            instance = answer.headers.get(LOCAL_PLATFORM_HEADER, "").strip()
    except httpx.HTTPError:
        return None
    return instance or None
