"""``state/door.py`` on real files in ``tmp_path``: what opening the lockfile's door does
around a command's read and write (the locks themselves: ``test_locking.py``, the git lock:
``tests/integration/test_git_lock.py``, the commands: ``tests/integration/test_lockfile_door.py``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reconciler.errors import LockHeldError, StateError
from reconciler.model import Settings
from reconciler.state.door import HELD_NAME, LockScope, held_path, open_door
from reconciler.state.lockfile import new_state, read_lockfile, write_lockfile
from reconciler.state.locking import LockKind, hold_lock, machine_lock_path

DISPLAY = "state/osmosis.lock"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def lockfile(repo: Path) -> Path:
    return repo / "state" / "osmosis.lock"


def recorded(repo: Path, lock: str | None = None) -> LockScope:
    return LockScope.recorded(lockfile(repo), DISPLAY, repo_root=repo, settings=Settings(lock=lock))  # type: ignore[arg-type]


def test_a_command_without_a_platform_locks_what_the_lockfile_records(repo: Path) -> None:
    assert recorded(repo).kind() is LockKind.CLONE  # no lockfile: nothing beyond the clone
    write_lockfile(lockfile(repo), new_state("local", "local"))
    assert recorded(repo).kind() is LockKind.CLONE
    write_lockfile(lockfile(repo), new_state("http://127.0.0.1:8080", "w"))
    scope = recorded(repo)
    assert (scope.platform, scope.workspace) == ("http://127.0.0.1:8080", "w")
    assert scope.kind() is LockKind.MACHINE
    assert "repository" not in scope.__dict__, "a loopback Platform needs no git call"
    assert recorded(repo, lock="local").kind() is LockKind.CLONE
    write_lockfile(lockfile(repo), new_state("https://platform.example", "w"))
    assert recorded(repo).kind() is LockKind.CLONE  # no origin
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "/x.git"], check=True)
    assert recorded(repo).kind() is LockKind.GIT


def test_opening_takes_the_machine_lock_of_the_recorded_platform(repo: Path) -> None:
    write_lockfile(lockfile(repo), new_state("http://127.0.0.1:8080", "w"))
    with hold_lock(machine_lock_path("http://127.0.0.1:8080", "w"), command="other clone"):
        with pytest.raises(LockHeldError, match="running `other clone`"):
            with open_door(recorded(repo), timeout=0, command="osmosis-state forget x"):
                pytest.fail("the door opened while the machine lock was held")
    # The clone's lock was released on the way out: the next command gets in.
    assert not held_path(lockfile(repo)).exists()
    with open_door(recorded(repo), timeout=0, command="osmosis-state forget x") as door:
        assert door.kind is LockKind.MACHINE and door.git_lock is None


def test_read_write_and_the_temp_files_of_a_killed_writer(repo: Path) -> None:
    path = lockfile(repo)
    write_lockfile(path, new_state("local", "local"))
    stale = path.parent / f".{path.name}.k1ll3d.tmp"
    stale.write_text("half a lockfile")
    with open_door(recorded(repo), timeout=0, command="t") as door:
        assert not stale.exists(), "a temp file seen under the lock is a dead writer's"
        assert held_path(path) == path.parent / HELD_NAME and held_path(path).exists()
        state = door.read()
        assert state is not None and state.serial == 1
        written = door.write(state.model_copy(update={"observed_until": None}))
        assert written.serial == 2
    assert read_lockfile(path, platform=None, workspace=None).serial == 2
    with pytest.raises(RuntimeError, match="closed"):
        door.write(state)  # after the with block: its locks are gone
    assert read_lockfile(path, platform=None, workspace=None).serial == 2


def test_no_lockfile_reads_as_none_and_a_store_writes_it(repo: Path) -> None:
    with open_door(recorded(repo), timeout=0, command="t") as door:
        assert door.read() is None
        store = door.store(new_state("local", "local"), publish=True)
        store.update(lambda s: s)
    assert read_lockfile(lockfile(repo), platform=None, workspace=None).serial == 1


def test_a_lockfile_that_changed_platform_while_waiting_is_refused(repo: Path) -> None:
    """The locks follow from the lockfile's header, read before they are taken: a lockfile
    that records another Platform under the locks was guarded by the wrong ones."""
    path = lockfile(repo)
    write_lockfile(path, new_state("local", "local"))
    scope = recorded(repo)  # the clone's lock only
    write_lockfile(path, new_state("http://127.0.0.1:8080", "w"))  # a machine lock's now
    with open_door(scope, timeout=0, command="t") as door:
        with pytest.raises(StateError, match="changed while this command waited") as info:
            door.read()
    assert info.value.hint == "run the command again"
    # Another Platform that needs no more than the clone's lock either is read as it is.
    write_lockfile(path, new_state("local", "other"))
    with open_door(scope, timeout=0, command="t") as door:
        state = door.read()
        assert state is not None and state.workspace == "other"
