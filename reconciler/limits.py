"""One size cap for every answer the tool reads from a server (the Platform, GitHub).

httpx reads a whole answer into memory before the caller sees it, so a server (or a proxy,
or a hostile Platform URL) that answers a list call with 1 GB took the process to 3.9 GB
of memory, and 3 GB to 8.5 GB: enough to get a CI runner killed in the middle of an
apply. Nothing we call legitimately answers with more than a few megabytes (a page of 50
runs is about 100 kB), so every API answer is read up to a cap and the request ends with
a clear error past it:

* ``max_response_bytes()`` is the cap: ``DEFAULT_MAX_RESPONSE_BYTES`` (32 MiB), or the
  ``OSMOSIS_MAX_RESPONSE_BYTES`` environment variable (bytes, or with a ``K``/``M``/``G``
  suffix, binary units).
* ``read_capped(response, cap)`` reads a streamed ``httpx.Response`` chunk by chunk and
  raises ``AnswerTooLargeError`` as soon as the *decoded* body passes the cap (a gzip
  bomb is caught too), or at once when ``Content-Length`` says it will.
* ``CappedTransport(inner, cap)`` does the same below a client we do not drive ourselves
  (githubkit): the answer's stream raises once the cap is passed. It asks for
  uncompressed answers (``Accept-Encoding: identity``) and refuses a compressed one, so
  that the bytes it counts are the bytes httpx keeps.

Downloads are not API answers: each file may be exactly as large as its manifest says and
no larger (``reconciler.outputs.downloads``). ``AnswerTooLargeError`` is not a
``ReconcilerError``: each client translates it where it enters, with its own words (a
Platform error, a GitHub error, an unknown submit outcome).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping

import httpx

from reconciler import deadlines
from reconciler.errors import UsageError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_RESPONSE_ENV",
    "AnswerTooLargeError",
    "CappedTransport",
    "describe_bytes",
    "max_response_bytes",
    "read_capped",
]

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_RESPONSE_ENV = "OSMOSIS_MAX_RESPONSE_BYTES"
_SIZE_RE = re.compile(r"([0-9]{1,15})\s*([KMG]i?B?)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


class AnswerTooLargeError(Exception):
    """A server's answer is larger than the cap (``received`` bytes read so far)."""

    def __init__(
        self, cap: int, received: int, announced: int | None = None, *, why: str | None = None
    ) -> None:
        self.cap = cap
        self.received = received
        self.announced = announced
        if why is None and announced is not None:
            why = f"{describe_bytes(announced)} announced"
        if why is None:
            why = f"stopped reading after {describe_bytes(received)}"
        super().__init__(f"the answer is larger than the {describe_bytes(cap)} cap ({why})")


def describe_bytes(count: int) -> str:
    """``33554432`` -> ``32 MiB``; small counts in bytes."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= size:
            value = count / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{count} bytes"


def max_response_bytes(env: Mapping[str, str] | None = None) -> int:
    """The cap on one API answer: ``OSMOSIS_MAX_RESPONSE_BYTES`` or the default."""
    raw = (os.environ if env is None else env).get(MAX_RESPONSE_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_RESPONSE_BYTES
    match = _SIZE_RE.fullmatch(raw)
    value = 0
    if match:
        unit = (match.group(2) or "")[:1].upper()
        value = int(match.group(1)) * _UNITS[unit]
    if value < 1024:
        raise UsageError(
            f"{MAX_RESPONSE_ENV}={raw!r} is not a size of at least 1 KiB",
            f"set {MAX_RESPONSE_ENV} to a number of bytes, or with a unit: "
            f"{MAX_RESPONSE_ENV}=64M (the default is {describe_bytes(DEFAULT_MAX_RESPONSE_BYTES)})",
        )
    return value


def _announced(headers: httpx.Headers) -> int | None:
    raw = headers.get("Content-Length")
    if raw is None or not raw.strip().isdigit():
        return None
    return int(raw.strip())


def read_capped(response: httpx.Response, cap: int) -> bytes:
    """The body of a streamed ``response``, at most ``cap`` decoded bytes (then it raises).

    The response is closed when this returns or raises. Between chunks the calling
    thread's deadline budget is checked (a steady trickle of small chunks ends there).
    """
    try:
        announced = _announced(response.headers)
        encoded = response.headers.get("Content-Encoding", "identity").strip().lower()
        if announced is not None and announced > cap and encoded in ("", "identity"):
            raise AnswerTooLargeError(cap, 0, announced)
        chunks: list[bytes] = []
        received = 0
        budget = deadlines.current()
        for chunk in response.iter_bytes():
            received += len(chunk)
            if received > cap:
                raise AnswerTooLargeError(cap, received)
            chunks.append(chunk)
            if budget is not None:
                budget.check()
        return b"".join(chunks)
    finally:
        response.close()


class _CappedStream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        budget = deadlines.current()
        for chunk in self._inner:
            received += len(chunk)
            if received > self._cap:
                raise AnswerTooLargeError(self._cap, received)
            yield chunk
            if budget is not None:
                budget.check()

    def close(self) -> None:
        self._inner.close()


class CappedTransport(httpx.BaseTransport):
    """An httpx transport whose answers end with ``AnswerTooLargeError`` past ``cap`` bytes."""

    def __init__(self, inner: httpx.BaseTransport, cap: int) -> None:
        self.inner = inner
        self.cap = cap

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = self.inner.handle_request(request)
        announced = _announced(response.headers)
        encoded = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoded not in ("", "identity"):
            response.close()
            # Its decoded size cannot be capped here: a few MB of gzip can decode to GBs.
            raise AnswerTooLargeError(
                self.cap, 0, why=f"a {encoded}-compressed answer, whose size cannot be capped"
            )
        if announced is not None and announced > self.cap:
            response.close()
            raise AnswerTooLargeError(self.cap, 0, announced)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        response.stream = _CappedStream(stream, self.cap)
        return response

    def close(self) -> None:
        self.inner.close()
