"""The one door to the lockfile: every command that writes ``state/osmosis.lock`` opens it here.

A command says what it writes for (a ``LockScope``: the lockfile, the Platform and workspace
whose runs it records, the ``lock`` setting), opens the door with ``open_door`` and, inside
the ``with`` block, reads the lockfile and writes it. Opening does, in order:

1. refuses a lockfile path that leaves the repository (``lockfile.check_state_path``);
2. takes the locks the scope needs (``LockScope.kind``, decided by ``locking.choose_lock``):
   the clone's OS lock beside the lockfile (``HELD_NAME``) always, then the machine-wide OS
   lock of a loopback Platform, or the git lock on ``origin`` (``gitlock``). A busy lock is
   said once through ``say`` (``waiting_line``) and waited for up to ``timeout`` seconds; then
   a ``LockHeldError`` names its holder and the ``--force-unlock`` id;
3. under the locks, deletes the temp files a killed writer left (every writer holds the
   clone's lock, so they can only be a dead one's).

Inside, ``Door.read`` reads the lockfile (after the locks are taken: what a command read
before may be stale) and checks that it records the Platform and workspace whose locks are
held; ``Door.write`` writes a state atomically with ``serial + 1``; ``Door.store`` hands out
the ``StateStore`` an apply writes through (group commit). The state record (the git lock's
state ref) gets the lockfile when the door closes (the git lock's release), and after every
write of a store opened with ``publish=True`` (an apply: each intent is on the remote before
its POST). ``osmosis-apply``, ``--refresh-only``, ``osmosis-state``, ``osmosis-import``,
``osmosis-results accept`` and ``osmosis-ci announce`` all come in here, so they exclude one
another the same way; nothing outside ``state/`` writes the lockfile (a test says so:
``tests/unit/test_lockfile_door.py``).

A command that never asks the Platform locks what the lockfile records
(``LockScope.recorded``); one with a Platform locks that one (``engine.context.Context``
builds its scope)::

    scope = LockScope.recorded(path, "state/osmosis.lock", repo_root=root, settings=settings)
    with open_door(scope, timeout=0.0, command="osmosis-state forget tb/a", say=note) as door:
        state = door.read()               # None: there is no lockfile
        written = door.write(forget(state))

    with open_door(ctx.lock_scope(), timeout=t, command=line, say=output.info,
                   on_lost=cancel.set) as door:
        store = door.store(state, publish=True)   # osmosis-apply: Applier(store=store)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.errors import StateError
from reconciler.gitinfo import GitRepo
from reconciler.model import LockState, Settings
from reconciler.state.lockfile import (
    check_state_path,
    load_lockfile,
    peek_guarded,
    read_lockfile_bytes,
    remove_stale_temps,
    write_lockfile,
)
from reconciler.state.locking import (
    LockKind,
    choose_lock,
    ci_run_url,
    hold_lock,
    machine_lock_dir,
    machine_lock_path,
)
from reconciler.state.store import StateStore

if TYPE_CHECKING:
    from reconciler.state.gitlock import GitLock, GuardedRefs

__all__ = [
    "HELD_NAME",
    "Door",
    "LockScope",
    "force_unlock",
    "held_path",
    "open_door",
    "waiting_line",
]

HELD_NAME = ".osmosis.lock.held"
"""The clone's apply lock, beside the lockfile (design.md §7): OS lock plus holder JSON."""


def held_path(state_path: Path) -> Path:
    """The clone's apply lock of the lockfile at ``state_path``."""
    return state_path.parent / HELD_NAME


def waiting_line(holder: Mapping[str, Any]) -> str:
    """What a command says when a lock it needs is busy and it waits for it."""
    return (
        f"Waiting for the apply lock held by pid {holder.get('pid')} on "
        f"{holder.get('host')} since {holder.get('started_at')} ..."
    )


@dataclass(frozen=True)
class LockScope:
    """What a command writes the lockfile for: the locks it needs follow from it."""

    state_path: Path
    """The lockfile."""
    display: str
    """The lockfile as messages name it (``state/osmosis.lock``)."""
    platform: str | None
    """The Platform whose runs it records (``Context.platform_id``); None: no lockfile
    records one yet, so nothing beyond the clone is guarded."""
    workspace: str | None
    """The workspace label recorded in the lockfile."""
    repo_root: Path | None = None
    """The repository; when given, ``display`` is checked to stay inside it."""
    git: GitRepo | None = None
    """The clone's git repository (its ``origin`` carries the git lock); None: looked for
    from ``git_from``."""
    git_from: Path | None = None
    """Where the repository is looked for when ``git`` is not given, only once the lock
    choice depends on an ``origin`` (two git calls a loopback Platform does not need)."""
    mode: str | None = None
    """The ``lock`` setting: None (by where the Platform lives), ``local`` or ``git``."""
    ttl: float = Settings().lock_ttl
    """The ``lock_ttl`` setting: seconds a git lock stays valid without a renewal."""
    env: Mapping[str, str] | None = None
    """Where the machine-wide lock directory and the CI run URL come from (None: os.environ)."""
    project: str | None = None
    """The project's id (``Settings.id``) in a repository of many projects: the machine and
    git locks are keyed by (Platform, workspace, project), so disjoint projects in one
    workspace never wait for each other; None keeps today's (Platform, workspace) key."""

    @classmethod
    def recorded(
        cls,
        state_path: Path,
        display: str,
        *,
        repo_root: Path | None = None,
        settings: Settings | None = None,
    ) -> LockScope:
        """The scope of a command that never asks the Platform (``osmosis-state``,
        ``osmosis-results accept``, ``osmosis-ci announce``): the Platform and workspace the
        lockfile records (read from its header; ``Door.read`` checks it again under the
        locks)."""
        guarded = peek_guarded(state_path)
        platform, workspace = guarded if guarded is not None else (None, None)
        return cls(
            state_path=state_path,
            display=display,
            platform=platform,
            workspace=workspace,
            repo_root=repo_root,
            git_from=repo_root or state_path.parent,
            mode=settings.lock if settings is not None else None,
            ttl=settings.lock_ttl if settings is not None else Settings().lock_ttl,
            project=settings.id if settings is not None else None,
        )

    @cached_property
    def repository(self) -> GitRepo | None:
        """The clone's git repository (``git``, else found from ``git_from``)."""
        if self.git is not None or self.git_from is None:
            return self.git
        return GitRepo.discover(self.git_from)

    @cached_property
    def _has_origin(self) -> bool:
        return bool(self.repository and self.repository.origin_url())

    def kind(self) -> LockKind:
        """Which lock guards this Platform and workspace (``locking.choose_lock``)."""
        if self.platform is None:
            return LockKind.CLONE  # nothing records a Platform: nothing beyond the clone
        return choose_lock(self.mode, self.platform, has_origin=lambda: self._has_origin)

    @property
    def refs(self) -> GuardedRefs:
        """The git lock and state refs of this Platform and workspace."""
        from reconciler.state.gitlock import GuardedRefs  # the git lock only

        assert self.platform is not None and self.workspace is not None
        return GuardedRefs(self.platform, self.workspace, self.project)

    def _guards(self, platform: str, workspace: str) -> bool:
        """Whether the locks of this scope are those of ``platform`` and ``workspace``."""
        if (self.platform or "").rstrip("/") == platform.rstrip("/") and (
            self.workspace or ""
        ).strip() == workspace.strip():
            return True
        other = replace(self, platform=platform, workspace=workspace)
        return self.kind() is LockKind.CLONE and other.kind() is LockKind.CLONE


class Door:
    """The lockfile of one command, opened by ``open_door`` under the locks of its scope."""

    def __init__(
        self, scope: LockScope, kind: LockKind, lock_id: str, git_lock: GitLock | None
    ) -> None:
        self.scope = scope
        self.kind = kind
        """The locks held (``LockKind``)."""
        self.lock_id = lock_id
        """The id of every lock held (``osmosis-apply --force-unlock`` takes it)."""
        self.git_lock = git_lock
        """The git lock, when one is held."""
        self.waited = False
        """Whether this command waited for a lock another command held: what it observes
        next may hold runs that command made meanwhile."""
        self._open = True

    @property
    def path(self) -> Path:
        return self.scope.state_path

    def read(
        self, *, platform: str | None = None, workspace: str | None = None
    ) -> LockState | None:
        """The lockfile (None: there is none), refused when it records another Platform or
        workspace than ``platform``/``workspace`` (None: its own is accepted) or than the
        scope's locks guard (it changed while this command waited for them)."""
        name = self.scope.display
        data = read_lockfile_bytes(self.path, name)
        if data is None:
            return None
        state = load_lockfile(data, name=name, platform=platform, workspace=workspace)
        if not self.scope._guards(state.platform, state.workspace):
            raise StateError(
                f"{name} changed while this command waited for the apply lock: it records "
                f"{state.platform} workspace {state.workspace} now, not "
                f"{self.scope.platform or 'no Platform'}",
                "run the command again",
            )
        return state

    def write(self, state: LockState) -> LockState:
        """Write ``state`` atomically with ``serial + 1``; returns the state as written. The
        state record gets it when the door closes."""
        self._check_open()
        return write_lockfile(self.path, state)

    def store(self, state: LockState, *, publish: bool, lazy_interval: float = 1.0) -> StateStore:
        """The one writer of a command that writes many times (an apply's actions, an
        import's runs), starting from ``state``. ``publish``: every write reaches the state
        record before ``update`` returns (an apply: the intent of a paid call is on the
        remote before its POST; a failed push fails the write)."""
        self._check_open()
        on_write = self.publish if publish and self.git_lock is not None else None
        return StateStore(self.path, state, lazy_interval=lazy_interval, on_write=on_write)

    def publish(self, _state: object = None) -> None:
        """Record the lockfile on disk in the state record now (the git lock's state ref;
        nothing without a git lock)."""
        if self.git_lock is not None:
            self.git_lock.publish()

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError(f"the lockfile door of {self.path} is closed: its locks are gone")


@contextmanager
def open_door(
    scope: LockScope,
    *,
    timeout: float,
    command: str,
    say: Callable[[str], object] | None = None,
    on_lost: Callable[[], None] | None = None,
) -> Iterator[Door]:
    """Hold the locks ``scope`` needs for the ``with`` block and hand out its ``Door``.

    ``command`` is the holder's command line (shown to whoever waits). ``say`` is told each
    busy lock once before waiting for it (``waiting_line``). ``on_lost`` is called, from
    the git lock's renewal thread, if the git lock is taken away while held.
    """
    if scope.repo_root is not None:
        check_state_path(scope.repo_root, scope.display)
    scope.state_path.parent.mkdir(parents=True, exist_ok=True)
    kind = scope.kind()

    waited = False

    def waiting(holder: Mapping[str, object]) -> None:
        nonlocal waited
        waited = True
        if say is not None:
            say(waiting_line(holder))

    with ExitStack() as stack:
        # The clone's lock always, then the one that guards the Platform and workspace
        # beyond this clone, if any; every writer takes them in this order.
        info = stack.enter_context(
            hold_lock(
                held_path(scope.state_path),
                timeout=timeout,
                command=command,
                on_wait=waiting,
                ci_url=ci_run_url(scope.env),
            )
        )
        git_lock = None
        if kind is LockKind.MACHINE:
            # A loopback Platform lives on this machine: two clones exclude each other.
            assert scope.platform is not None and scope.workspace is not None
            stack.enter_context(
                hold_lock(
                    machine_lock_path(scope.platform, scope.workspace, scope.env, scope.project),
                    timeout=timeout,
                    command=command,
                    on_wait=waiting,
                    ci_url=info.ci_url,
                )
            )
        if kind is LockKind.GIT:
            from reconciler.state.gitlock import hold_git_lock

            repository = scope.repository
            assert repository is not None  # an origin was found in it
            # Across machines too (laptop and CI): see gitlock.py.
            git_lock = stack.enter_context(
                hold_git_lock(
                    repository.root,
                    refs=scope.refs,
                    lock_id=info.lock_id,
                    command=command,
                    ci_url=info.ci_url,
                    ttl=scope.ttl,
                    state_path=scope.state_path,
                    timeout=timeout,
                    on_wait=waiting,
                    on_lost=on_lost,
                )
            )
        # Under the lock, temp files of the lockfile can only be a killed writer's.
        remove_stale_temps(scope.state_path)
        door = Door(scope, kind, info.lock_id, git_lock)
        door.waited = waited
        try:
            yield door
        finally:
            door._open = False


def force_unlock(repo_root: Path, state_path: Path, lock_id: str) -> str:
    """``osmosis-apply --force-unlock ID``: release whichever apply lock ``ID`` names: the
    clone's (beside ``state_path``), a machine-wide one, the git one on ``origin``, or both
    of one apply. Returns where it was released (``gitlock.force_unlock_any``)."""
    from reconciler.state.gitlock import force_unlock_any

    machine_locks = sorted(machine_lock_dir(os.environ).glob("*.held"))
    return force_unlock_any(repo_root, [held_path(state_path), *machine_locks], lock_id)


def restore_copy(path: Path, data: bytes) -> None:
    """A lockfile's bytes as git history holds them, written to a scratch copy outside the
    project (a removed project's last lockfile, planned from ``.osmosis/removed/``): no lock,
    since nothing else writes there, and never the project's own lockfile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
