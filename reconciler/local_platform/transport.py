"""``LocalTransport``: the local Platform as an httpx transport, for in-process use.

The request goes through ``LocalPlatform.handle`` exactly as a loopback HTTP request would;
a "drop" fault (no response at all) becomes ``httpx.RemoteProtocolError``, which is what
httpx raises when a real server closes the connection without answering; a silent or
stalled answer becomes ``httpx.ReadTimeout`` at once, and a trickled one arrives whole.
"""

from __future__ import annotations

import httpx

from reconciler.local_platform.app import LocalPlatform


class LocalTransport(httpx.BaseTransport):
    """An ``httpx.BaseTransport`` that answers every request from a ``LocalPlatform``.

    The host part of the URL is ignored, so presigned URLs on ``http://localhost`` resolve
    through the same transport.
    """

    def __init__(self, platform: LocalPlatform) -> None:
        self.platform = platform

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        target = request.url.raw_path.decode("ascii")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw}
        answer = self.platform.handle(request.method, target, headers, body)
        if answer.drop:
            raise httpx.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        if answer.silent or answer.stall_after is not None:
            # In process there is no socket to hold open: the client sees its read timeout.
            raise httpx.ReadTimeout("The local Platform did not answer.", request=request)
        return httpx.Response(
            answer.status, headers=answer.headers, content=answer.body, request=request
        )
