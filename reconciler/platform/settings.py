"""Which Platform to talk to, with which token, and how to name the repository scope.

Pure functions over strings and an environment mapping: no I/O, no ``os.environ`` reads
(the CLI passes the environment in), so every rule is testable with plain values.

Rules (design.md §4, platform-api.md §1.1, §1.2, §1.4):

* ``--platform`` > ``OSMOSIS_PLATFORM_URL`` > ``https://platform.osmosis.ai`` when
  ``OSMOSIS_TOKEN`` is set > the embedded local Platform (``local``).
* URLs are normalised exactly like the osmosis CLI does, so the lockfile's ``platform``
  header is stable however the user spells the URL.
* A non-https URL whose host is not loopback is refused, since the bearer token would
  travel in plaintext, unless the server there identifies itself as a local Platform
  (``osmosis-platform-emulator serve``, asked without a token through the ``identify``
  the caller passes in: ``platform.identity``), which is allowed with a one-line warning,
  or ``OSMOSIS_ALLOW_INSECURE_PLATFORM_URL=1``. The real Platform is only ever https, so
  nothing changes for it and it is never asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from reconciler.errors import UsageError
from reconciler.loopback import is_loopback_host, is_loopback_url

DEFAULT_PLATFORM_URL = "https://platform.osmosis.ai"
LOCAL_PLATFORM = "local"
LOCAL_TOKEN = "local"
"""Bearer token sent to a loopback URL when ``OSMOSIS_TOKEN`` is unset: the local Platform
accepts any non-empty token unless it was started with ``--token``."""

ENV_PLATFORM_URL = "OSMOSIS_PLATFORM_URL"
ENV_TOKEN = "OSMOSIS_TOKEN"
ENV_TOKEN_PLATFORM_URL = "OSMOSIS_TOKEN_PLATFORM_URL"
ENV_ALLOW_INSECURE = "OSMOSIS_ALLOW_INSECURE_PLATFORM_URL"

Identify = Callable[[str], str | None]
"""Asks the server at a URL, without a token, which local Platform instance it serves; None
when it is not one (``platform.identity.local_platform_instance``)."""
IsLoopback = Callable[[str], bool]
"""Whether a URL points at this machine (``reconciler.loopback.is_loopback_url``; tests pass
another to treat a loopback server as a remote one)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_GIT_IDENTITY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
_SCP_LIKE_RE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>[^/].*)$")
_USERINFO_RE = re.compile(r"(//)[^/@\s]*@")


def _without_userinfo(raw: str) -> str:
    # Messages echo what the user typed; credentials embedded in a URL must not be echoed.
    return _USERINFO_RE.sub(r"\1***@", raw)


def _invalid_url(raw: str) -> UsageError:
    return UsageError(
        f"Invalid platform URL '{_without_userinfo(raw)}'",
        "use a URL such as https://platform.osmosis.ai or http://127.0.0.1:8000, "
        "or `--platform local` for the embedded local Platform",
    )


def normalize_platform_url(raw: str | None) -> str:
    """Normalise a Platform base URL the way the osmosis CLI does (platform-api.md §1.1).

    Trimmed; empty means the default; no scheme means ``http`` for loopback hosts and
    ``https`` otherwise; scheme and host lower-cased; default ports dropped; IPv6 hosts
    bracketed; the path kept without its trailing ``/``; query, fragment and any
    credentials dropped. Raises ``UsageError`` when the URL cannot be parsed.
    """
    text = (raw or "").strip()
    if not text:
        return DEFAULT_PLATFORM_URL
    if "://" not in text:
        text = text.rstrip("/")
        try:
            bare_host = urlsplit("//" + text).hostname or ""
        except ValueError as exc:
            raise _invalid_url(text) from exc
        text = ("http://" if is_loopback_host(bare_host) else "https://") + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _invalid_url(raw or "") from exc
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or any(c.isspace() for c in text):
        raise _invalid_url(raw or "")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def ensure_secure_platform_url(
    url: str,
    env: Mapping[str, str],
    *,
    local_instance: str | None = None,
    is_loopback: IsLoopback = is_loopback_url,
) -> str | None:
    """Refuse plain HTTP to a non-loopback host unless it is a local Platform that identified
    itself (``local_instance``, asked before any token is sent) or the user opted in
    explicitly. Returns the one-line warning to show when plain http is allowed because the
    server is a local Platform, else None."""
    if urlsplit(url).scheme == "https" or is_loopback(url):
        return None
    if local_instance is not None:
        return (
            f"{url} is a local Platform (instance {local_instance}) served over plain http "
            "beyond this machine: its tokens travel in plaintext; use it for a try-out only"
        )
    if env.get(ENV_ALLOW_INSECURE, "").strip() == "1":
        return None
    raise UsageError(
        f"Refusing non-HTTPS platform URL {url}: the token would be sent in plaintext.",
        f"use an https:// URL, or the URL of a local Platform (osmosis-platform-emulator "
        f"serve), which identifies itself; or set {ENV_ALLOW_INSECURE}=1 to override",
    )


def needs_identity(url: str, is_loopback: IsLoopback = is_loopback_url) -> bool:
    """Whether plain http to ``url`` is allowed only if the server identifies itself as a
    local Platform (a non-https URL beyond this machine)."""
    return url != LOCAL_PLATFORM and urlsplit(url).scheme != "https" and not is_loopback(url)


@dataclass(frozen=True)
class PlatformSelection:
    """The Platform one invocation talks to.

    ``url`` is a normalised base URL, or ``"local"`` for the embedded local Platform
    (driven in-process through an httpx transport). ``token`` is never shown in the repr.
    """

    url: str
    token: str | None = field(repr=False)
    source: str
    """Where the choice came from: ``--platform``, ``OSMOSIS_PLATFORM_URL``,
    ``OSMOSIS_TOKEN`` or ``default``."""
    announcement: str
    """One line for the user saying which Platform is used and why (never the token)."""

    local_instance: str | None = None
    """The instance of the local Platform served at ``url``, when it was asked and identified
    itself (only a plain-http URL beyond this machine is asked here)."""
    warning: str | None = None
    """One line to show on stderr: plain http beyond this machine to a local Platform."""

    @property
    def is_local(self) -> bool:
        return self.url == LOCAL_PLATFORM


def _env(env: Mapping[str, str], name: str) -> str | None:
    # Empty values count as unset, like the osmosis CLI (it deletes them before .env loading).
    value = env.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def select_platform(
    flag: str | None,
    env: Mapping[str, str],
    *,
    identify: Identify | None = None,
    is_loopback: IsLoopback = is_loopback_url,
) -> PlatformSelection:
    """Choose the Platform and token for one invocation (design.md §4).

    Precedence: ``--platform`` (a URL or ``local``) > ``OSMOSIS_PLATFORM_URL`` (a URL or
    ``local``) > ``https://platform.osmosis.ai`` when ``OSMOSIS_TOKEN`` is set > the
    embedded local Platform.

    Token rules: the token only ever comes from ``OSMOSIS_TOKEN``. A non-loopback URL
    without it is refused. A loopback URL without it gets the placeholder ``"local"``
    (the local Platform server accepts any non-empty bearer token unless started with
    ``--token``). The embedded local Platform always gets ``"local"`` so a real token is
    never handed to it. If ``OSMOSIS_TOKEN_PLATFORM_URL`` is set it must normalise to the
    selected URL, else the token is not sent anywhere (the osmosis CLI's binding rule).

    A plain-http URL beyond this machine is asked ``identify(url)`` (no token) before
    anything else: a local Platform is allowed, with ``warning`` set, and without
    ``OSMOSIS_TOKEN`` gets the placeholder as on loopback; anything else is refused unless
    ``OSMOSIS_ALLOW_INSECURE_PLATFORM_URL=1``. Without ``identify`` nothing is asked and no
    such URL identifies itself.
    """
    token = _env(env, ENV_TOKEN)
    flag_value = flag.strip() if flag is not None else None
    if flag is not None and not flag_value:
        raise UsageError(
            "--platform requires a URL or `local`.", "pass --platform URL or --platform local"
        )
    if flag_value:
        raw, source = flag_value, "--platform"
    elif _env(env, ENV_PLATFORM_URL):
        raw, source = _env(env, ENV_PLATFORM_URL) or "", ENV_PLATFORM_URL
    elif token:
        raw, source = DEFAULT_PLATFORM_URL, ENV_TOKEN
    else:
        return PlatformSelection(
            url=LOCAL_PLATFORM,
            token=LOCAL_TOKEN,
            source="default",
            announcement=(
                "Platform: local (embedded, data in .osmosis/local-platform/); "
                f"set {ENV_TOKEN} to use {DEFAULT_PLATFORM_URL}"
            ),
        )
    if raw.lower() == LOCAL_PLATFORM:
        return PlatformSelection(
            url=LOCAL_PLATFORM,
            token=LOCAL_TOKEN,
            source=source,
            announcement=f"Platform: local (embedded, from {source})",
        )

    url = normalize_platform_url(raw)
    # Asked before the token is looked at, and without it: a server that is not a local
    # Platform never sees it over plain http.
    instance = identify(url) if identify is not None and needs_identity(url, is_loopback) else None
    warning = ensure_secure_platform_url(url, env, local_instance=instance, is_loopback=is_loopback)
    if token is None:
        if not (is_loopback(url) or instance is not None):
            raise UsageError(
                f"No token for the Platform at {url}.",
                f"set {ENV_TOKEN} to a personal access token for {url}, "
                "or use `--platform local` for the embedded local Platform",
            )
        token = LOCAL_TOKEN
    bound = _env(env, ENV_TOKEN_PLATFORM_URL)
    if bound is not None and _env(env, ENV_TOKEN) is not None:
        bound_url = normalize_platform_url(bound)
        if bound_url != url:
            raise UsageError(
                f"{ENV_TOKEN} is bound to {bound_url}, but the selected platform is {url}. "
                "Refusing to send the token to a different platform.",
                f"point --platform / {ENV_PLATFORM_URL} at {bound_url}, or change "
                f"{ENV_TOKEN_PLATFORM_URL}",
            )
    return PlatformSelection(
        url=url,
        token=token,
        source=source,
        announcement=f"Platform: {url} (from {source})",
        local_instance=instance,
        warning=warning,
    )


def _bad_remote(remote: str, why: str) -> UsageError:
    # A UsageError, not a GitError: git worked; the remote just cannot name a Platform
    # scope, and the fix is a flag (--workspace) or a different origin.
    return UsageError(
        f"origin remote '{_without_userinfo(remote)}' cannot be used as a Platform repository "
        f"scope: {why}",
        "point origin at the Platform-connected GitHub repository "
        "(https://github.com/OWNER/REPO.git or git@github.com:OWNER/REPO.git), "
        "or pass --workspace NAME",
    )


def git_identity_from_remote(remote: str) -> str:
    """The ``X-Osmosis-Git`` value (lower-case ``owner/repo``) of a GitHub ``origin`` URL.

    Accepts ``https://github.com/o/r(.git)``, ``ssh://git@github.com[:port]/o/r(.git)`` and
    scp-like ``git@github.com:o/r(.git)``; credentials in the URL are ignored. Anything
    else (another host, more or fewer path segments, encoded separators, whitespace or
    control characters) raises ``UsageError`` with a hint.
    """
    text = remote.strip()
    if not text:
        raise _bad_remote(remote, "it is empty")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise _bad_remote(remote, "it contains whitespace or control characters")
    lowered = text.lower()
    if "%2f" in lowered or "%5c" in lowered or "\\" in text:
        raise _bad_remote(remote, "it contains an encoded or backslash path separator")
    if "://" in text:
        try:
            parts = urlsplit(text)
            host = (parts.hostname or "").lower()
            _ = parts.port
        except ValueError as exc:
            raise _bad_remote(remote, "it is not a valid URL") from exc
        if parts.scheme.lower() not in ("https", "ssh"):
            raise _bad_remote(remote, f"scheme '{parts.scheme}' is not https or ssh")
        if parts.query or parts.fragment:
            raise _bad_remote(remote, "it has a query or fragment")
        path = parts.path
    else:
        match = _SCP_LIKE_RE.match(text)
        if match is None:
            raise _bad_remote(remote, "it is not a GitHub https, ssh or scp-like URL")
        host, path = match.group("host").lower(), match.group("path")
    if host != "github.com":
        raise _bad_remote(remote, f"it is hosted on '{host}', not github.com")
    path = path.strip("/")
    if path.lower().endswith(".git"):
        path = path[: -len(".git")]
    segments = path.split("/")
    if len(segments) != 2 or not all(segments):
        raise _bad_remote(remote, "it must name exactly OWNER/REPO")
    identity = path.lower()
    if not _GIT_IDENTITY_RE.match(identity):
        raise _bad_remote(remote, f"'{identity}' is not a valid OWNER/REPO name")
    return identity
