"""Whether a host or URL is this machine: core code (the planner's hints) and the Platform
settings share it, so it lives outside ``reconciler.platform`` (whose package loads httpx)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback_host(host: str) -> bool:
    """``localhost`` or any loopback IP (``127.0.0.0/8``, ``::1``), brackets allowed."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_url(url: str) -> bool:
    """Whether a (normalised) URL points at this machine."""
    try:
        return is_loopback_host(urlsplit(url).hostname or "")
    except ValueError:
        return False
