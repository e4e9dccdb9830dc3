"""The apply lock, exercised with real processes holding it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reconciler.errors import LockHeldError, UsageError
from reconciler.state.locking import ci_run_url, force_unlock, hold_lock, read_holder

REPO_ROOT = Path(__file__).resolve().parents[2]

# A holder process: takes the lock, reports its holder JSON on stdout, then holds the lock
# until its stdin is closed (or it is killed).
HOLDER = """
import json, sys
from pathlib import Path
from reconciler.state.locking import hold_lock
with hold_lock(Path(sys.argv[1]), command="osmosis-apply --auto-approve", ci_url=None) as info:
    print(json.dumps(info.to_dict()), flush=True)
    sys.stdin.read()
print("released", flush=True)
"""


class Holder:
    def __init__(self, lock_path: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(lock_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        line = self.stdout.readline()
        assert line, "holder process failed to take the lock"
        self.info = json.loads(line)

    def release(self) -> None:
        self.stdin.close()
        assert self.stdout.readline().strip() == "released"
        self.stdout.close()
        self.process.wait(timeout=10)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.stdin.close()
        self.stdout.close()


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / ".osmosis.lock.held"


@pytest.fixture
def holders():
    started: list[Holder] = []
    yield started
    for holder in started:
        if holder.process.poll() is None:
            holder.kill()


def test_holder_json_written_and_file_removed_on_release(lock_path: Path) -> None:
    with hold_lock(lock_path, command="osmosis-apply", ci_url="https://ci/run/1") as info:
        holder = read_holder(lock_path)
        assert holder == info.to_dict()
        assert holder["pid"] == os.getpid()
        assert holder["host"] == socket.gethostname()
        assert holder["command"] == "osmosis-apply"
        assert holder["ci_url"] == "https://ci/run/1"
        assert holder["started_at"].endswith("Z")
        assert len(holder["lock_id"]) == 36
    assert not lock_path.exists()
    assert read_holder(lock_path) is None


def test_ci_url_from_github_actions_environment() -> None:
    env = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/evals",
        "GITHUB_RUN_ID": "42",
    }
    assert ci_run_url(env) == "https://github.com/acme/evals/actions/runs/42"
    assert ci_run_url({"GITHUB_REPOSITORY": "acme/evals"}) is None


def test_second_holder_fails_fast_naming_the_holder(lock_path: Path, holders) -> None:
    holders.append(holder := Holder(lock_path))
    with pytest.raises(LockHeldError) as info:
        with hold_lock(lock_path, command="second"):
            pytest.fail("took a lock that another process holds")
    error = info.value
    pid, lock_id = holder.info["pid"], holder.info["lock_id"]
    assert error.holder == holder.info
    assert error.message == (
        f"the apply lock {lock_path} is held by pid {pid} on {socket.gethostname()} running "
        f"`osmosis-apply --auto-approve` since {holder.info['started_at']} (lock id {lock_id})"
    )
    assert error.hint is not None and error.hint.endswith(
        f"if you are sure no apply is running: osmosis-apply --force-unlock {lock_id}"
    )
    holder.release()


def test_second_holder_times_out_after_waiting(lock_path: Path, holders) -> None:
    holders.append(holder := Holder(lock_path))
    waits: list[dict] = []
    with pytest.raises(LockHeldError) as info:
        with hold_lock(lock_path, command="second", timeout=0.3, on_wait=waits.append):
            pass
    assert waits == [holder.info]  # told once, with who we are waiting for
    assert info.value.message.endswith("after waiting 0.3s")
    assert str(holder.info["pid"]) in info.value.message
    holder.release()


def test_waiter_succeeds_when_the_holder_releases_within_the_timeout(
    lock_path: Path, holders
) -> None:
    holders.append(holder := Holder(lock_path))
    waiting = threading.Event()

    def on_wait(details: dict) -> None:
        waiting.set()

    def release_once_waited() -> None:
        waiting.wait(10)
        holder.release()

    releaser = threading.Thread(target=release_once_waited)
    releaser.start()
    try:
        with hold_lock(lock_path, command="waiter", timeout=30, on_wait=on_wait) as info:
            assert waiting.is_set()
            assert (read_holder(lock_path) or {}).get("lock_id") == info.lock_id
            assert info.lock_id != holder.info["lock_id"]
    finally:
        releaser.join(10)
    assert holder.process.returncode == 0


def test_sigkilled_holder_does_not_block(lock_path: Path, holders) -> None:
    holders.append(holder := Holder(lock_path))
    holder.kill()
    stale = read_holder(lock_path)
    assert stale is not None and stale["lock_id"] == holder.info["lock_id"]  # JSON left behind
    with hold_lock(lock_path, command="next apply") as info:
        assert (read_holder(lock_path) or {}).get("lock_id") == info.lock_id


def test_force_unlock_refuses_wrong_id(lock_path: Path, holders) -> None:
    holders.append(holder := Holder(lock_path))
    with pytest.raises(UsageError) as info:
        force_unlock(lock_path, "not-the-id")
    assert info.value.message == (
        f"lock id not-the-id does not match the holder of {lock_path} "
        f"(lock id {holder.info['lock_id']})"
    )
    assert read_holder(lock_path) == holder.info
    holder.release()


def test_force_unlock_refuses_a_live_holder(lock_path: Path, holders) -> None:
    holders.append(holder := Holder(lock_path))
    with pytest.raises(LockHeldError) as info:
        force_unlock(lock_path, holder.info["lock_id"])
    assert info.value.message.endswith("that process is still running")
    assert info.value.hint == (
        f"let it finish or stop it (kill {holder.info['pid']}), then run osmosis-apply again"
    )
    assert read_holder(lock_path) == holder.info
    holder.release()


def test_force_unlock_removes_a_dead_holders_lock(lock_path: Path, holders) -> None:
    holders.append(holder := Holder(lock_path))
    holder.kill()
    force_unlock(lock_path, holder.info["lock_id"])
    assert not lock_path.exists()
    with pytest.raises(UsageError) as info:
        force_unlock(lock_path, holder.info["lock_id"])
    assert info.value.message == f"no apply lock is held at {lock_path}"


def test_concurrent_processes_never_hold_the_lock_together(tmp_path: Path) -> None:
    """Four processes each take the lock 15 times and append begin/end markers to a log;
    with mutual exclusion the markers never interleave."""
    log = tmp_path / "log.txt"
    script = """
import os, sys
from pathlib import Path
from reconciler.state.locking import hold_lock
lock, log = Path(sys.argv[1]), Path(sys.argv[2])
for _ in range(15):
    with hold_lock(lock, command="worker", timeout=60):
        with open(log, "a") as f:
            f.write(f"begin {os.getpid()}\\n"); f.flush()
        with open(log, "a") as f:
            f.write(f"end {os.getpid()}\\n")
"""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / "l.held"), str(log)], env=env
        )
        for _ in range(4)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    lines = log.read_text().splitlines()
    assert len(lines) == 4 * 15 * 2
    for begin, end in zip(lines[::2], lines[1::2], strict=True):
        assert begin.startswith("begin ") and end == "end " + begin.split()[1]
