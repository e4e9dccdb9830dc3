"""Wiring for one CLI invocation: repository, settings, platform, workspace, git.

``cli`` parses flags, finds the repository root (``project.find_root``), builds an
``Invocation`` and calls ``open_context``; everything else receives the pieces it drives as arguments.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from reconciler.config.project import load_project_settings, settings_source
from reconciler.errors import UsageError
from reconciler.gitinfo import GitRepo
from reconciler.loopback import is_loopback_url
from reconciler.model import Settings
from reconciler.paths import check_inside
from reconciler.platform import PlatformClient, PlatformSelection, select_platform
from reconciler.platform.identity import local_platform_instance
from reconciler.platform.settings import Identify, IsLoopback, git_identity_from_remote
from reconciler.redact import register_secret
from reconciler.state.door import LockScope, held_path
from reconciler.state.lockfile import peek_platform

LOCAL_DATA_DIR = ".osmosis/local-platform"
TRYOUT_STATE = ".osmosis/try-out/osmosis.lock"
"""A try-out's lockfile (``Context.tryout``): beside the embedded Platform's data, never
committed."""
DOWNLOAD_ROOT = ".osmosis/benchmarks"
LOCAL_SPEED_ENV = "OSMOSIS_LOCAL_PLATFORM_SPEED"
LOCAL_SEED_ENV = "OSMOSIS_LOCAL_PLATFORM_SEED"


class Invocation(msgspec.Struct, frozen=True):
    """What the command line asks of one command, as values: the CLI builds it from its
    flags, and nothing below the CLI sees ``argparse``."""

    repo_root: Path
    """The repository root (``--dir``, or found from the current directory)."""
    platform: str | None = None
    """``--platform URL|local``; None: from the environment (``select_platform``)."""
    workspace: str | None = None
    """``--workspace NAME``; None: from the environment or the git origin."""
    overrides: Mapping[str, Any] = msgspec.field(default_factory=dict)
    """Settings given as flags (only the ones set); they win over the settings file."""


@dataclass
class Context:
    """Everything one command works with; ``close()`` releases the HTTP clients."""

    repo_root: Path
    settings: Settings
    platform_id: str
    """Normalised platform URL, or ``local`` for the embedded Platform."""
    workspace: str
    """Workspace label recorded in the lockfile: a name, or ``git:owner/repo``."""
    client: PlatformClient
    make_http: Callable[[], httpx.Client]
    """Builds the plain client for presigned download URLs (no Osmosis headers, no token)
    when a command first downloads: its TLS set-up is 20 ms that a plan never needs."""
    git: GitRepo | None
    announcement: str | None = None
    warning: str | None = None
    """One line the command shows on stderr as a warning: plain http beyond this machine to
    a served local Platform (``PlatformSelection.warning``)."""
    local: Any = None
    env: Mapping[str, str] = field(default_factory=dict)
    tryout: bool = False
    """A try-out against the embedded Platform in a repository whose lockfile belongs to a
    real Platform: its state lives in ``TRYOUT_STATE`` and the team's lockfile is untouched."""

    @property
    def platform_instance(self) -> str | None:
        """The embedded Platform's instance (its data dir's id); None for any other."""
        return getattr(self.local, "instance", None) if self.local is not None else None

    _http: httpx.Client | None = field(default=None, init=False, repr=False)
    _http_build: threading.Thread | None = field(default=None, init=False, repr=False)
    _http_error: BaseException | None = field(default=None, init=False, repr=False)
    _http_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _http_taken: bool = field(default=False, init=False, repr=False)
    _http_more: list[httpx.Client] = field(default_factory=list, init=False, repr=False)
    _http_local: threading.local = field(default_factory=threading.local, init=False, repr=False)

    def prepare_http(self) -> None:
        """Start building the download client on a thread: loading the CA bundle took
        90-170 ms on a busy 2-core machine, which an apply's first round trips to the
        Platform (manifest, download URLs) can hide. ``http`` waits for it."""
        if self._http is not None or self._http_build is not None:
            return

        def build() -> None:
            try:
                self._http = self.make_http()
            except BaseException as exc:  # re-raised by ``http``, in the caller's thread
                self._http_error = exc

        self._http_build = threading.Thread(target=build, name="osmosis-http", daemon=True)
        self._http_build.start()

    @property
    def http(self) -> httpx.Client:
        with self._http_lock:  # download workers ask at once: one client for them all
            if self._http_build is not None:
                self._http_build.join()
                self._http_build = None
                if self._http_error is not None:
                    error, self._http_error = self._http_error, None
                    raise error
            if self._http is None:
                self._http = self.make_http()
            return self._http

    def thread_http(self) -> httpx.Client:
        """The calling thread's own download client: the prepared one (``http``) for the
        first thread that asks, a new one from ``make_http`` for each other.

        A transfer thread makes one request at a time, so its own client holds one
        connection. httpcore looks at every connection of a client on each request, and
        its keep-alive check is quadratic: one client shared by the 32 transfer threads of
        a parallel apply cost 0.59 ms of CPU per request with 20 idle connections against
        0.42 ms with 1 (this machine, loopback). ``make_http`` shares one TLS context, so
        the clients after the first do not load the CA bundle again.
        """
        client: httpx.Client | None = getattr(self._http_local, "client", None)
        if client is None:
            first = self.http  # waits for the prepared client
            with self._http_lock:
                if self._http_taken:
                    client = self.make_http()
                    self._http_more.append(client)
                else:
                    self._http_taken, client = True, first
            self._http_local.client = client
        return client

    @property
    def benchmarks_dir(self) -> str:
        return self.settings.benchmarks

    @property
    def state_path(self) -> Path:
        return self.repo_root / (TRYOUT_STATE if self.tryout else self.settings.state)

    @property
    def lock_path(self) -> Path:
        """The clone's apply lock (``state.door.held_path``)."""
        return held_path(self.state_path)

    def lock_scope(self) -> LockScope:
        """What this command writes the lockfile for: the locks the door takes follow from
        it (``state.door``)."""
        return LockScope(
            state_path=self.state_path,
            display=self.settings.state,
            platform=self.platform_id,
            workspace=self.workspace,
            repo_root=self.repo_root,
            git=self.git,
            mode=self.settings.lock,
            ttl=self.settings.lock_ttl,
            env=self.env,
            project=self.settings.id,
        )

    @property
    def download_root(self) -> Path:
        return self.repo_root / DOWNLOAD_ROOT

    def close(self) -> None:
        self.client.close()
        if self._http_build is not None:
            self._http_build.join()
            self._http_build = None
        if self._http is not None:
            self._http.close()
        for client in self._http_more:
            client.close()
        self._http_more.clear()


def resolve_settings(repo_root: Path, overrides: Mapping[str, Any]) -> Settings:
    """Defaults < the settings file (``project``) < flags (``overrides`` holds only set flags)."""
    values = load_project_settings(repo_root)
    source = settings_source(repo_root)
    if source is not None and not source.prefix:
        # Hints ("raise max_stops in ...") name the file the settings live in.
        values["settings_where"] = source.name
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**values)


def open_context(
    *,
    repo_root: Path,
    platform_flag: str | None,
    workspace_flag: str | None,
    overrides: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    identify: Identify = local_platform_instance,
    is_loopback: IsLoopback = is_loopback_url,
) -> Context:
    """The ``Context`` of one command. ``identify`` asks a plain-http URL, without a token,
    whether it serves a local Platform (``platform.identity``): beyond this machine, before
    anything is sent there (``select_platform``); on loopback, only when the workspace is
    left to its default. ``is_loopback`` is the seam a test uses to treat a loopback server
    as a remote one."""
    env = dict(os.environ if env is None else env)
    settings = resolve_settings(repo_root, overrides)
    git = GitRepo.discover(repo_root)

    selection = select_platform(platform_flag, env, identify=identify, is_loopback=is_loopback)
    # The real token is secret even when the embedded Platform is used instead; the
    # embedded Platform's placeholder ("local") is not a secret and is never registered.
    register_secret(selection.token)
    local = None
    token: str | None
    if selection.url == "local":
        from reconciler.local_platform import LocalPlatform, LocalTransport

        data_dir = repo_root / LOCAL_DATA_DIR
        problem = check_inside(repo_root, LOCAL_DATA_DIR)
        if problem is not None:  # its SQLite file must not be written elsewhere
            raise UsageError(
                f"{problem.path} {problem.message}: the embedded Platform keeps its data "
                "inside the repository",
                f"replace {problem.path} with a real directory, or pass --platform URL",
            )
        local = LocalPlatform(
            data_dir, speed=_local_speed(env), seed=_local_seed(env), auto_workspaces=True
        )
        transport: httpx.BaseTransport | None = LocalTransport(local)
        base_url, token = "http://localhost", "local"

        def make_http() -> httpx.Client:
            return httpx.Client(transport=LocalTransport(local), timeout=600.0)

    else:
        transport = None
        base_url, token = selection.url, selection.token
        make_http = _remote_http()

    workspace_name, git_identity, label = _workspace_scope(
        workspace_flag or settings.workspace or env.get("OSMOSIS_WORKSPACE") or None,
        git,
        local=_is_local_platform(selection, identify, embedded=local is not None),
    )
    client = PlatformClient(
        base_url,
        token=token,
        workspace=workspace_name,
        git_identity=git_identity,
        transport=transport,
    )
    tryout = local is not None and _belongs_elsewhere(repo_root / settings.state)
    announcement = selection.announcement
    if tryout:
        _keep_out_of_git(repo_root / TRYOUT_STATE)
        announcement = (
            f"{announcement}\nTry-out: {settings.state} belongs to another Platform, so this "
            f"try-out keeps its state in {TRYOUT_STATE} (never committed, never pushed)"
        )
    return Context(
        repo_root=repo_root,
        settings=settings,
        platform_id=selection.url if local is None else "local",
        workspace=label,
        client=client,
        make_http=make_http,
        git=git,
        announcement=announcement,
        warning=selection.warning,
        local=local,
        env=env,
        tryout=tryout,
    )


def _remote_http() -> Callable[[], httpx.Client]:
    """What builds a download client for a remote Platform (one per thread)."""
    tls: list[Any] = []
    tls_lock = threading.Lock()

    def make_http() -> httpx.Client:
        # One TLS context for every download client of the command (``thread_http``):
        # loading the CA bundle is what building the first one costs (20-170 ms).
        with tls_lock:
            if not tls:
                tls.append(httpx.create_ssl_context())
        return httpx.Client(verify=tls[0], timeout=httpx.Timeout(600.0, connect=30.0))

    return make_http


def _is_local_platform(
    selection: PlatformSelection, identify: Identify, *, embedded: bool
) -> Callable[[], bool]:
    """Whether the selected Platform is a local one, asked only when the workspace needs it:
    the embedded Platform; a served one that identified itself beyond this machine; a
    plain-http URL that identifies itself when asked now (on loopback, where nothing was
    asked yet). The real Platform is https and never asked."""

    @functools.cache  # asked once however often the workspace rules look
    def local() -> bool:
        if embedded or selection.local_instance is not None:
            return True
        if urlsplit(selection.url).scheme != "http":
            return False
        return identify(selection.url) is not None

    return local


def _workspace_scope(
    workspace_name: str | None, git: GitRepo | None, *, local: Callable[[], bool]
) -> tuple[str | None, str | None, str]:
    """How requests name the workspace: (workspace name, git identity, label shown). A name
    given wins; else the clone's GitHub origin; else, on a local Platform (embedded or
    served), "local", the workspace ``osmosis-platform-emulator`` uses by default."""
    git_identity = None
    if workspace_name:
        workspace_name = workspace_name.strip()
        if not workspace_name:
            raise UsageError("--workspace requires a non-empty name")
        return workspace_name, None, workspace_name
    origin = git.origin_url() if git else None
    if origin:
        try:
            git_identity = git_identity_from_remote(origin)
        except UsageError:
            if not local():
                raise
    if git_identity:
        return None, git_identity, f"git:{git_identity}"
    if local():
        return "local", None, "local"
    raise UsageError(
        "no workspace selected",
        "pass --workspace NAME or set OSMOSIS_WORKSPACE, or run inside a clone of the "
        "GitHub repository connected to your Platform workspace",
    )


def _belongs_elsewhere(state_path: Path) -> bool:
    """Whether the lockfile there records a Platform other than the embedded one."""
    recorded = peek_platform(state_path)
    return recorded is not None and recorded != "local"


def _keep_out_of_git(path: Path) -> None:
    """A try-out's directory ignores itself, whatever the repository's .gitignore says."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")


def _local_speed(env: Mapping[str, str]) -> float | None:
    """The speed the environment asks the embedded Platform for (None: the one stored in
    its data directory, which every process opening it shares; see
    docs/local-platform.md "Time"). Asking for another re-bases the stored run times."""
    if env.get(LOCAL_SPEED_ENV):
        return _float_env(env, LOCAL_SPEED_ENV, 1.0)
    return None


def _local_seed(env: Mapping[str, str]) -> int | None:
    """``OSMOSIS_LOCAL_PLATFORM_SEED``: fixed run names and ids (None: the data dir's own)."""
    raw = env.get(LOCAL_SEED_ENV, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise UsageError(
            f"{LOCAL_SEED_ENV}={raw!r} is not an integer", f"unset {LOCAL_SEED_ENV} or fix it"
        ) from None


def _float_env(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise UsageError(f"{name}={raw!r} is not a number") from exc
    if value <= 0:
        raise UsageError(f"{name} must be positive")
    return value
