"""A served local Platform reached by its URL (issue 37, finding 3), over real loopback HTTP.

* Plain http beyond loopback only for a Platform that identifies itself as a local one, with
  one warning line; the token is never sent before the server has said so. The machine may
  only reach loopback, so the servers here are on 127.0.0.1 and ``open_context`` is told to
  treat their URL as a remote one (its ``is_loopback`` parameter: the seam), while the
  identity question itself goes over the socket.
* The default workspace of a local Platform is ``local``, served or embedded:
  ``osmosis-platform-emulator secret set`` without ``--workspace``, then ``osmosis-plan``
  without one, find the same record. Any other Platform still needs a workspace.
"""

from __future__ import annotations

import functools
import io
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from reconciler.cli.output import Output
from reconciler.engine.context import Invocation, open_context
from reconciler.engine.load import open_command
from reconciler.errors import UsageError
from reconciler.platform.identity import local_platform_instance
from tests.support.emulator import EmulatorProcess, emulator_command
from tests.support.http_server import LoopbackServer
from tests.support.osmosis import BIN_DIR, TOKEN, cli_env, init_repo, smoke_config, start_platform


def remote(url: str) -> bool:
    """``is_loopback`` for these tests: every URL is beyond this machine."""
    return False


class Recorder:
    """A server that is not a local Platform: answers 404, keeps each request's headers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.server = LoopbackServer(self.handle)

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        self.requests.append((method, handler.path, dict(handler.headers.items())))
        handler.send_response(404)
        handler.send_header("Content-Length", "0")
        handler.end_headers()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    served = Recorder()
    yield served
    served.server.close()


def test_a_local_platform_beyond_loopback_is_used_with_one_warning(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    served = start_platform(tmp_path / "served")
    try:
        ctx = open_context(
            repo_root=repo,
            platform_flag=served.url,
            workspace_flag="e2e",
            overrides={},
            env=cli_env(),
            is_loopback=remote,
        )
        try:
            instance = served.platform.instance
            assert ctx.platform_id == served.url
            assert ctx.warning == (
                f"{served.url} is a local Platform (instance {instance}) served over plain "
                "http beyond this machine: its tokens travel in plaintext; use it for a "
                "try-out only"
            )
            assert TOKEN not in ctx.warning and ctx.announcement is not None
            # The token it then sends is the user's: the Platform answers as that user.
            assert {s.name for s in ctx.client.list_secrets()} >= {"OPENAI_API_KEY"}
        finally:
            ctx.close()
    finally:
        served.close()


def test_plain_http_to_anything_else_is_refused_and_never_sees_the_token(
    tmp_path: Path, recorder: Recorder
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    with pytest.raises(UsageError) as info:
        open_context(
            repo_root=repo,
            platform_flag=recorder.server.url,
            workspace_flag="e2e",
            overrides={},
            env=cli_env(),
            is_loopback=remote,
        )
    assert info.value.message == (
        f"Refusing non-HTTPS platform URL {recorder.server.url}: the token would be sent in "
        "plaintext."
    )
    ((method, path, headers),) = recorder.requests  # the identity question, and nothing else
    assert (method, path) == ("GET", "/")
    assert "authorization" not in {name.lower() for name in headers}
    assert all(TOKEN not in value for value in headers.values())


def test_the_identity_question_has_a_deadline(tmp_path: Path) -> None:
    """A server that accepts the connection and never answers is no local Platform."""
    release = threading.Event()

    def silent(handler: BaseHTTPRequestHandler, method: str) -> None:
        release.wait(60)

    server = LoopbackServer(silent)
    try:
        assert local_platform_instance(server.url, deadline=0.3) is None
    finally:
        release.set()
        server.close()


# --------------------------------------------------------------------------- workspace local


def emulator(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [*emulator_command(), *args], input=stdin, env=env, capture_output=True, text=True
    )


def plan(repo: Path, url: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``osmosis-plan --platform URL`` and no workspace anywhere (flag, settings, env, origin)."""
    return subprocess.run(
        [str(BIN_DIR / "osmosis-plan"), "--dir", str(repo), "--platform", url, "--no-color"],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_a_served_local_platform_defaults_to_workspace_local(
    tmp_path: Path, start_emulator: Any
) -> None:
    served: EmulatorProcess = start_emulator("--speed", "2000")
    env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
    stored = emulator(
        "secret", "set", "OPENAI_API_KEY", "--platform", served.url,
        env=env, stdin="sk-test-not-printed\n",
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout == "secret OPENAI_API_KEY set (user scope, workspace local)\n"

    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    planned = plan(repo, served.url, env)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert planned.stdout.startswith("Osmosis plan · workspace local · platform ")
    assert "+ tb/smoke" in planned.stdout and "Plan: 1 to submit" in planned.stdout
    # Found where `secret set` put it (personal scope, the emulator's default too).
    assert "secret OPENAI_API_KEY exists only at personal scope (yours)" in planned.stdout
    assert "not found" not in planned.stdout + planned.stderr
    assert "warning" not in planned.stderr  # loopback: nothing to warn about
    assert "sk-test-not-printed" not in planned.stdout + planned.stderr


def test_any_other_platform_still_needs_a_workspace(tmp_path: Path, recorder: Recorder) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    planned = plan(repo, recorder.server.url, cli_env())
    assert planned.returncode == 1, planned.stdout + planned.stderr
    assert "no workspace selected" in planned.stderr
    ((method, path, headers),) = recorder.requests
    assert (method, path) == ("GET", "/") and "Authorization" not in headers


def test_a_command_shows_the_warning_in_one_line_on_stderr(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
    served = start_platform(tmp_path / "served")
    out, err = io.StringIO(), io.StringIO()
    output = Output("osmosis-plan", "text", out=out, err=err)
    invocation = Invocation(repo_root=repo, platform=served.url, workspace="e2e")
    try:
        with open_command(
            invocation,
            output,
            opener=functools.partial(open_context, env=cli_env(), is_loopback=remote),
        ) as ctx:
            assert ctx.client.list_secrets()
    finally:
        served.close()
    lines = err.getvalue().splitlines()
    assert lines[0] == f"Platform: {served.url} (from --platform)"
    assert lines[1:] == [
        f"warning: {served.url} is a local Platform (instance {served.platform.instance}) "
        "served over plain http beyond this machine: its tokens travel in plaintext; use it "
        "for a try-out only"
    ]
    assert out.getvalue() == ""
