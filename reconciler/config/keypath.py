"""A config key's path as messages print it (``agents[1].model.api_key_secret``).

Its own module so that ``config.decide`` and ``config.load`` can both use it without
importing each other.
"""

from __future__ import annotations

import json
import re

from reconciler.config.validate import looks_like_credential
from reconciler.redact import REDACTED

__all__ = ["format_path"]

_BARE = re.compile(r"^[A-Za-z0-9_\-]+$")


def format_path(path: tuple[str | int, ...]) -> str:
    """``("agents", 1, "model", "api_key_secret")`` -> ``agents[1].model.api_key_secret``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        if looks_like_credential(part):
            text = REDACTED
        elif _BARE.match(part):
            text = part
        else:
            text = json.dumps(part, ensure_ascii=False)
        out += f".{text}" if out else text
    return out
