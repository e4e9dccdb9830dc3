"""What the local Platform answers: ``Response``, the §6.1 error (``ApiError``) and the
JSON and HTML bodies every route family builds its answers with."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Response:
    """What the platform answers. ``drop`` = close the connection without any response.

    The misbehaving-server faults (``Faults``): ``silent`` = never answer, keep the
    connection open; ``trickle_s`` = write the answer one byte per that many seconds;
    ``stall_after`` = send the headers and that many body bytes, then nothing more.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    drop: bool = False
    silent: bool = False
    trickle_s: float = 0.0
    stall_after: int | None = None

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class ApiError(Exception):
    """An error answer: the §6.1 body shape ``{"error", "code"?, ...}``."""

    def __init__(
        self,
        status: int,
        error: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        /,
        **extra: Any,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.body: dict[str, Any] = {"error": error}
        if code:
            self.body["code"] = code
        self.body.update(extra)
        self.headers = headers or {}


def json_response(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Response:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    out = {"Content-Type": "application/json"}
    out.update(headers or {})
    return Response(status, out, body)


def html_response(status: int, html: str, headers: Mapping[str, str] | None = None) -> Response:
    out = {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"}
    out.update(headers or {})
    return Response(status, out, html.encode("utf-8"))


def parse_json(body: bytes) -> Any:
    if not body:
        return {}
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ApiError(400, "Request body is not valid JSON.", "VALIDATION") from None
