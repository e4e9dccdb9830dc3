"""Platform selection, URL normalisation, the insecure-URL rule and git identities.

Whether a server identifies itself as a local Platform is the ``identify`` argument of
``select_platform`` (the seam: a dict's ``get``, recorded), and the probe itself runs over
an ``httpx.MockTransport``; nothing here opens a socket.
"""

from __future__ import annotations

import httpx
import pytest

from reconciler.errors import UsageError
from reconciler.platform import (
    DEFAULT_PLATFORM_URL,
    git_identity_from_remote,
    is_loopback_host,
    normalize_platform_url,
    select_platform,
)
from reconciler.platform.identity import LOCAL_PLATFORM_HEADER, local_platform_instance

TOKEN = "tok-SENTINEL-settings-42"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", DEFAULT_PLATFORM_URL),
        ("   ", DEFAULT_PLATFORM_URL),
        (None, DEFAULT_PLATFORM_URL),
        ("https://platform.osmosis.ai/", "https://platform.osmosis.ai"),
        ("HTTPS://Platform.Osmosis.AI:443", "https://platform.osmosis.ai"),
        ("http://example.com:80/", "http://example.com"),
        ("https://example.com:8443/api//", "https://example.com:8443/api"),
        ("https://example.com/Base/Path?x=1#frag", "https://example.com/Base/Path"),
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost:9000/", "http://localhost:9000"),
        ("127.5.6.7", "http://127.5.6.7"),
        ("[::1]:8080", "http://[::1]:8080"),
        ("example.com", "https://example.com"),
        ("http://[2001:DB8::1]:80", "http://[2001:db8::1]"),
        ("https://user:pw@example.com", "https://example.com"),
        ("  https://example.com  ", "https://example.com"),
    ],
)
def test_normalize_platform_url(raw: str | None, expected: str) -> None:
    assert normalize_platform_url(raw) == expected


@pytest.mark.parametrize(
    "raw", ["ftp://example.com", "https://", "http://exa mple.com", "https://host:99999", "/"]
)
def test_invalid_urls_are_usage_errors(raw: str) -> None:
    with pytest.raises(UsageError) as info:
        normalize_platform_url(raw)
    assert "Invalid platform URL" in info.value.message and info.value.hint


def test_invalid_url_message_hides_credentials() -> None:
    with pytest.raises(UsageError) as info:
        normalize_platform_url(f"ftp://me:{TOKEN}@example.com")
    assert TOKEN not in info.value.message


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("[::1]", True),
        ("::1", True),
        ("10.0.0.1", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


# --------------------------------------------------------------------------- selection


def test_default_is_local_without_token() -> None:
    selection = select_platform(None, {})
    assert selection.url == "local" and selection.is_local
    assert selection.source == "default"
    assert "local" in selection.announcement and "OSMOSIS_TOKEN" in selection.announcement
    assert "\n" not in selection.announcement


def test_token_selects_the_production_platform() -> None:
    selection = select_platform(None, {"OSMOSIS_TOKEN": TOKEN})
    assert selection.url == DEFAULT_PLATFORM_URL
    assert selection.token == TOKEN
    assert selection.source == "OSMOSIS_TOKEN"
    assert TOKEN not in selection.announcement and TOKEN not in repr(selection)


def test_env_url_beats_default_and_flag_beats_env() -> None:
    env = {"OSMOSIS_TOKEN": TOKEN, "OSMOSIS_PLATFORM_URL": "https://staging.example.com/"}
    selection = select_platform(None, env)
    assert (selection.url, selection.source) == (
        "https://staging.example.com",
        "OSMOSIS_PLATFORM_URL",
    )
    selection = select_platform("https://other.example.com", env)
    assert (selection.url, selection.source) == ("https://other.example.com", "--platform")
    assert selection.url in selection.announcement


def test_flag_local_selects_embedded_platform_and_never_hands_it_the_token() -> None:
    selection = select_platform("local", {"OSMOSIS_TOKEN": TOKEN})
    assert selection.is_local and selection.source == "--platform"
    assert selection.token != TOKEN


def test_env_url_local() -> None:
    assert select_platform(None, {"OSMOSIS_PLATFORM_URL": "LOCAL"}).is_local


def test_empty_env_values_count_as_unset() -> None:
    assert select_platform(None, {"OSMOSIS_TOKEN": " ", "OSMOSIS_PLATFORM_URL": ""}).is_local


def test_blank_flag_is_refused() -> None:
    with pytest.raises(UsageError):
        select_platform("  ", {})


def test_remote_url_without_token_is_refused() -> None:
    with pytest.raises(UsageError) as info:
        select_platform("https://platform.example.com", {})
    assert "OSMOSIS_TOKEN" in (info.value.hint or "")


def test_loopback_url_without_token_gets_a_placeholder_token() -> None:
    selection = select_platform("http://127.0.0.1:8765", {})
    assert selection.url == "http://127.0.0.1:8765"
    assert selection.token == "local"


def test_loopback_url_uses_the_real_token_when_set() -> None:
    assert select_platform("127.0.0.1:8765", {"OSMOSIS_TOKEN": TOKEN}).token == TOKEN


def test_insecure_remote_url_is_refused_unless_allowed() -> None:
    env = {"OSMOSIS_TOKEN": TOKEN}
    with pytest.raises(UsageError) as info:
        select_platform("http://platform.example.com", env)
    assert "Refusing non-HTTPS" in info.value.message
    assert "OSMOSIS_ALLOW_INSECURE_PLATFORM_URL=1" in (info.value.hint or "")
    with pytest.raises(UsageError):
        select_platform(
            "http://platform.example.com", {**env, "OSMOSIS_ALLOW_INSECURE_PLATFORM_URL": "true"}
        )
    allowed = select_platform(
        "http://platform.example.com", {**env, "OSMOSIS_ALLOW_INSECURE_PLATFORM_URL": "1"}
    )
    assert allowed.url == "http://platform.example.com"


def test_plain_http_to_loopback_needs_no_override() -> None:
    assert (
        select_platform("http://localhost:9000", {"OSMOSIS_TOKEN": TOKEN}).url
        == "http://localhost:9000"
    )


def test_token_bound_to_another_platform_is_not_sent() -> None:
    env = {"OSMOSIS_TOKEN": TOKEN, "OSMOSIS_TOKEN_PLATFORM_URL": "https://platform.osmosis.ai/"}
    assert select_platform(None, env).url == DEFAULT_PLATFORM_URL
    with pytest.raises(UsageError) as info:
        select_platform("https://staging.example.com", env)
    assert "Refusing to send the token" in info.value.message
    assert TOKEN not in info.value.message + (info.value.hint or "")


# --------------------------------------------------------------------------- git identity


@pytest.mark.parametrize(
    ("remote", "identity"),
    [
        ("https://github.com/Acme/Bench.git", "acme/bench"),
        ("https://github.com/acme/bench", "acme/bench"),
        ("https://github.com/acme/bench/", "acme/bench"),
        ("https://user:secret@github.com/acme/bench.git", "acme/bench"),
        ("HTTPS://GitHub.com/acme/my.repo_1", "acme/my.repo_1"),
        ("git@github.com:Acme/Bench.git", "acme/bench"),
        ("github.com:acme/bench", "acme/bench"),
        ("ssh://git@github.com/acme/bench.git", "acme/bench"),
        ("ssh://git@github.com:22/acme/bench", "acme/bench"),
    ],
)
def test_git_identity_from_remote(remote: str, identity: str) -> None:
    assert git_identity_from_remote(remote) == identity


@pytest.mark.parametrize(
    "remote",
    [
        "",
        "https://gitlab.com/acme/bench.git",
        "git@gitlab.com:acme/bench.git",
        "https://github.com/acme",
        "https://github.com/acme/bench/extra",
        "https://github.com/acme%2Fbench/x",
        "https://github.com/acme/be nch",
        "http://github.com/acme/bench",
        "file:///tmp/repo",
        "/tmp/repo",
        "https://github.com/-acme/bench",
        "https://github.com/acme/bench?x=1",
        "https://www.github.com/acme/bench",
    ],
)
def test_git_identity_rejects_other_remotes(remote: str) -> None:
    with pytest.raises(UsageError) as info:
        git_identity_from_remote(remote)
    assert "--workspace" in (info.value.hint or "")


def test_git_identity_error_hides_credentials() -> None:
    with pytest.raises(UsageError) as info:
        git_identity_from_remote(f"https://user:{TOKEN}@gitlab.com/acme/bench.git")
    assert TOKEN not in info.value.message


# --------------------------------------------------------------------------- plain http beyond loopback

TEAM_URL = "http://192.0.2.7:8765"
"""A teammate's served local Platform (TEST-NET-1: never connected to; the probe is a dict)."""


class Identities:
    """``identify`` for ``select_platform``: the instance each URL answers with, and the URLs
    asked, in order."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, url: str) -> str | None:
        self.asked.append(url)
        return self.answers.get(url)


def test_plain_http_beyond_loopback_to_a_local_platform_is_allowed_with_one_warning() -> None:
    identify = Identities({TEAM_URL: "lp_team"})
    selection = select_platform("http://192.0.2.7:8765/", {}, identify=identify)
    assert identify.asked == [TEAM_URL]
    assert (selection.url, selection.local_instance) == (TEAM_URL, "lp_team")
    assert selection.token == "local"  # no OSMOSIS_TOKEN: the placeholder, as on loopback
    assert selection.warning == (
        f"{TEAM_URL} is a local Platform (instance lp_team) served over plain http beyond "
        "this machine: its tokens travel in plaintext; use it for a try-out only"
    )
    assert "\n" not in selection.warning
    with_token = select_platform(TEAM_URL, {"OSMOSIS_TOKEN": "ada-token"}, identify=identify)
    assert with_token.token == "ada-token" and with_token.warning == selection.warning


def test_plain_http_beyond_loopback_to_anything_else_is_refused_after_asking() -> None:
    identify = Identities({})
    with pytest.raises(UsageError) as info:
        select_platform(TEAM_URL, {"OSMOSIS_TOKEN": TOKEN}, identify=identify)
    assert identify.asked == [TEAM_URL]
    assert info.value.message == (
        f"Refusing non-HTTPS platform URL {TEAM_URL}: the token would be sent in plaintext."
    )
    assert "osmosis-platform-emulator serve" in (info.value.hint or "")
    assert TOKEN not in info.value.message + (info.value.hint or "")
    # The explicit opt-in still holds, and says nothing more.
    allowed = select_platform(
        TEAM_URL,
        {"OSMOSIS_TOKEN": TOKEN, "OSMOSIS_ALLOW_INSECURE_PLATFORM_URL": "1"},
        identify=identify,
    )
    assert (allowed.url, allowed.warning, allowed.local_instance) == (TEAM_URL, None, None)


def test_no_token_beyond_loopback_unless_the_server_is_a_local_platform() -> None:
    with pytest.raises(UsageError) as info:
        select_platform(
            TEAM_URL, {"OSMOSIS_ALLOW_INSECURE_PLATFORM_URL": "1"}, identify=Identities({})
        )
    assert info.value.message == f"No token for the Platform at {TEAM_URL}."


def test_https_and_loopback_urls_are_never_asked() -> None:
    identify = Identities({})
    for url in ("https://platform.osmosis.ai", "http://127.0.0.1:8765", "http://localhost:9"):
        selection = select_platform(url, {"OSMOSIS_TOKEN": TOKEN}, identify=identify)
        assert selection.warning is None and selection.local_instance is None
    assert select_platform(None, {}, identify=identify).url == "local"
    assert identify.asked == []


def test_the_loopback_rule_is_a_parameter() -> None:
    """The seam the integration tests use to treat a loopback server as a remote one."""
    identify = Identities({"http://127.0.0.1:8765": "lp_here"})
    selection = select_platform(
        "http://127.0.0.1:8765", {}, identify=identify, is_loopback=lambda url: False
    )
    assert identify.asked == ["http://127.0.0.1:8765"] and selection.local_instance == "lp_here"
    assert selection.warning is not None


def probe_transport(seen: list[httpx.Request], headers: dict[str, str]) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers=headers, text="<html>a page</html>")

    return httpx.MockTransport(answer)


def test_the_probe_asks_one_page_without_a_token() -> None:
    seen: list[httpx.Request] = []
    transport = probe_transport(seen, {LOCAL_PLATFORM_HEADER: " lp_team "})
    assert local_platform_instance(TEAM_URL + "/", transport=transport) == "lp_team"
    (request,) = seen
    assert (request.method, str(request.url)) == ("GET", TEAM_URL + "/")
    assert "authorization" not in request.headers
    assert all(v != TOKEN and "Bearer" not in v for v in request.headers.values())


def test_the_probe_says_none_for_another_server_or_none_at_all() -> None:
    seen: list[httpx.Request] = []
    assert local_platform_instance(TEAM_URL, transport=probe_transport(seen, {})) is None
    blank = probe_transport(seen, {LOCAL_PLATFORM_HEADER: "  "})
    assert local_platform_instance(TEAM_URL, transport=blank) is None
    assert len(seen) == 2

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("no route to host", request=request)

    assert local_platform_instance(TEAM_URL, transport=httpx.MockTransport(unreachable)) is None
