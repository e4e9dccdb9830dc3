"""The one redaction rule of the tool: secret values never leave the process.

The rule: a *secret value* is replaced by ``[REDACTED]`` wherever it occurs exactly, in
every form it travels in (as typed, URL-encoded, JSON-escaped, and base64, alone or inside
a longer base64 string such as the ``Basic`` credentials of ``user:token``). Nothing else is
ever replaced: URLs, workspace names, addresses and ordinary words stay, so a message keeps
the facts it is about.

Secret values are the Platform token, the GitHub token and every other token the process
holds in its environment (``register_environment_secrets``, called first by every command),
every secret value this process sends to the Platform (all registered for the whole process
with ``register_secret``), and values a
caller knows to be secret for one message only (``also=``: the signature of a presigned
URL, a credential found inlined in a config file).

A value shorter than ``MIN_SECRET_LENGTH`` is never treated as secret: no issued token or
API key is that short, and replacing it would eat ordinary words. The embedded Platform's
placeholder token (``local``) is not a secret at all and is never registered.

Every path out goes through here: log events (``log.redact_event``), error messages and
crash logs (``cli``), Platform errors (``platform.client``), download failures
(``downloads``) and config messages (``config.load``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 8

_lock = threading.Lock()
_registered: set[str] = set()
_forms: frozenset[str] = frozenset()
_pattern: re.Pattern[str] | None = None


def secret_forms(value: str) -> set[str]:
    """Every string ``value`` can appear as in text this tool writes or quotes.

    The base64 forms are the parts of an encoding that do not depend on the bytes around
    the value: for each of the three alignments a value can have inside a longer blob,
    the 4-character groups made only of the value's own bytes.
    """
    if len(value) < MIN_SECRET_LENGTH:
        return set()
    forms = {value, quote(value, safe=""), quote_plus(value, safe="")}
    forms.add(json.dumps(value)[1:-1])
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    raw = value.encode("utf-8")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        start = 4 if offset else 0
        end = 4 * ((offset + len(raw)) // 3)
        middle = encoded[start:end]
        if len(middle) >= MIN_SECRET_LENGTH:
            forms.add(middle)
            forms.add(middle.replace("+", "-").replace("/", "_"))
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


def register_secret(value: str | None) -> None:
    """Treat ``value`` as secret in everything this process prints, logs or raises."""
    global _forms, _pattern
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    with _lock:
        if value in _registered:
            return
        _registered.add(value)
        _forms = frozenset(_forms | secret_forms(value))
        _pattern = _compile(_forms)


SECRET_ENVIRONMENT = ("OSMOSIS_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN")
"""Environment variables whose values are secret wherever they show up."""


def register_environment_secrets(env: Mapping[str, str] | None = None) -> None:
    """Register every secret the process holds in its environment (``SECRET_ENVIRONMENT``).

    Called first thing by every command, so that a token quoted back by a server (GitHub
    echoing an ``Authorization`` header in an error) is redacted like the Platform token.
    """
    env = os.environ if env is None else env
    for name in SECRET_ENVIRONMENT:
        value = (env.get(name) or "").strip()
        register_secret(value)


def _compile(forms: Iterable[str]) -> re.Pattern[str] | None:
    # Longest first, so a value that contains another is replaced whole.
    ordered = sorted(set(forms), key=lambda f: (-len(f), f))
    return re.compile("|".join(re.escape(f) for f in ordered)) if ordered else None


def redact(text: str, *, also: Iterable[str | None] = ()) -> str:
    """``text`` with every registered secret (and every value in ``also``) replaced."""
    extra = set()
    for value in also:
        if value:
            extra |= secret_forms(value)
    with _lock:
        pattern = _pattern
        if extra:
            pattern = _compile(_forms | extra)
    if pattern is None or not text:
        return text
    return pattern.sub(REDACTED, text)


def redact_optional(text: str | None, *, also: Iterable[str | None] = ()) -> str | None:
    """``redact`` for optional text (hints, bodies): None stays None."""
    return None if text is None else redact(text, also=also)


def redact_value(value: Any) -> Any:
    """``redact`` applied to every string inside ``value`` (dicts, lists, exceptions)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(v) for v in value)
    if isinstance(value, BaseException):
        return redact(repr(value))
    return value
