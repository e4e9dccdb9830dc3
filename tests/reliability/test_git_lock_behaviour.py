"""The apply lock on the git remote (issue 15): a real bare repository and real clones.

The lock itself is driven through ``GitLock`` with injected clocks (no sleeping on expiry);
the race of two ``osmosis-apply`` processes from two clones, and a holder SIGKILLed under
another host name, are the smoke versions of ``tests/reliability/test_git_lock.py``.
"""

from __future__ import annotations

import shutil
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.errors import LockHeldError, StateError, UsageError
from reconciler.state.gitlock import GitLock, GuardedRefs
from reconciler.state.gitlock import read_git_holder as read_holder_of
from reconciler.state.locking import LockKind, choose_lock
from tests.reliability.gitrace import GitTally, killed_holder_elsewhere, race, two_clones
from tests.support.clock import FakeClock
from tests.support.git import git
from tests.support.osmosis import Osmosis, init_repo, smoke_config, start_platform

REFS = GuardedRefs("https://platform.example.test", "acme")
LOCK_REF = REFS.lock
STATE_REF = REFS.state


def read_git_holder(repo: Path) -> tuple[str, dict[str, object]] | None:
    return read_holder_of(repo, LOCK_REF)


def ls_remote(repo: Path, ref: str) -> str:
    return git(repo, "ls-remote", "origin", ref)


START = datetime(2026, 9, 1, 12, 0, tzinfo=UTC).timestamp()


def lock_for(repo: Path, clock: FakeClock | None = None, **kw: object) -> GitLock:
    clock = clock or FakeClock(START)
    kw.setdefault("host", "host-" + repo.name)
    return GitLock(
        repo,
        refs=REFS,
        lock_id=f"id-{repo.name}-{kw.pop('tag', 0)}",
        command="osmosis-apply --auto-approve",
        ci_url=kw.pop("ci_url", None),  # type: ignore[arg-type]
        ttl=float(kw.pop("ttl", 30)),  # type: ignore[arg-type]
        state_path=repo / "state" / "osmosis.lock",
        now=clock.utcnow,
        monotonic=clock.monotonic,
        sleep=clock.sleep,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    _remote, a, b = two_clones(tmp_path, 1)
    return a, b


def test_a_held_lock_refuses_the_other_clone_naming_its_holder(clones: tuple[Path, Path]) -> None:
    a, b = clones
    held = lock_for(a, ci_url="https://github.com/acme/bench/actions/runs/7").acquire(0)
    try:
        assert ls_remote(b, LOCK_REF)
        with pytest.raises(LockHeldError) as info:
            lock_for(b).acquire(0)
        message = info.value.message
        assert f"pid {held.pid} on host-a" in message
        assert "running `osmosis-apply --auto-approve`" in message
        assert "CI run: https://github.com/acme/bench/actions/runs/7" in message
        assert "osmosis-apply --force-unlock id-a-0" in (info.value.hint or "")
        # A waiter gives up at its deadline (its clock), not before.
        clock = FakeClock(START)
        with pytest.raises(LockHeldError, match="after waiting 5s"):
            lock_for(b, clock).acquire(5)
        assert clock.monotonic() >= 1005.0
    finally:
        held.release()
    assert not ls_remote(b, LOCK_REF)
    lock_for(b).acquire(0).release()


def test_release_records_the_lockfile_and_a_clone_behind_it_is_refused(
    clones: tuple[Path, Path],
) -> None:
    a, b = clones
    held = lock_for(a).acquire(0)
    state = a / "state" / "osmosis.lock"
    state.parent.mkdir(parents=True)
    state.write_text('version = 1\nlineage = "L1"\nserial = 4\nplatform = "x"\n')
    held.release()
    assert ls_remote(a, STATE_REF)
    # b has no lockfile: applying from it could pay again for what a recorded.
    with pytest.raises(StateError) as info:
        lock_for(b).acquire(0)
    assert "left serial 4, this checkout has no lockfile" in info.value.message
    assert f"git fetch origin {STATE_REF}" in (info.value.hint or "")
    assert not ls_remote(b, LOCK_REF), "a refused acquirer must not keep the lock"
    # Restored as the hint says, the same lineage and serial pass.
    (b / "state").mkdir()
    git(b, "fetch", "-q", "origin", STATE_REF)
    (b / "state" / "osmosis.lock").write_text(git(b, "show", "FETCH_HEAD:osmosis.lock") + "\n")
    lock_for(b).acquire(0).release()


def test_an_expired_lock_of_another_host_is_taken_over(clones: tuple[Path, Path]) -> None:
    a, b = clones
    old = FakeClock(START)
    lock_for(a, old, ttl=30).acquire(0)  # never released, never renewed (no thread runs long)
    late = FakeClock(old.now + 30 + 11)
    taker = lock_for(b, late).acquire(0)
    try:
        _commit, holder = read_git_holder(b) or ("", {})
        assert holder["lock_id"] == "id-b-0"
    finally:
        taker.release()


def test_a_lock_not_renewed_for_its_ttl_is_taken_over_by_a_waiter(
    clones: tuple[Path, Path],
) -> None:
    a, b = clones
    clock = FakeClock(START)
    # The holder's clock is far behind (skew): its expiry alone would look valid for hours.
    behind = FakeClock(clock.now + 3 * 3600)
    lock_for(a, behind, ttl=20).acquire(0)
    with pytest.raises(LockHeldError):
        lock_for(b, clock, ttl=20).acquire(10)  # watched unchanged for 10 s only
    taker = lock_for(b, clock, ttl=20, tag=1).acquire(60)
    try:
        assert read_git_holder(b)[1]["lock_id"] == "id-b-1"  # type: ignore[index]
        assert 1020.0 < clock.monotonic() < 1060.0
    finally:
        taker.release()


def test_the_holder_renews_and_notices_when_its_lock_is_taken(clones: tuple[Path, Path]) -> None:
    a, b = clones
    held = GitLock(
        a,
        refs=REFS,
        lock_id="renewer",
        command="osmosis-apply",
        ci_url=None,
        ttl=0.9,
        state_path=a / "state" / "osmosis.lock",
    ).acquire(0)
    try:
        first = held.commit
        deadline = time.monotonic() + 30
        while held.commit == first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held.commit != first, "the holder never renewed its lock"
        # Someone force-takes the ref: the next renewal is refused and the holder knows.
        thief = lock_for(b, ttl=30)
        assert thief.git.push([(thief._new_commit(), LOCK_REF, None)]) is False
        # The holder renews every ttl/3: a renewal between the thief's read and its push
        # makes the compare-and-swap fail, so the thief reads again, as a real one would.
        stolen = False
        while not stolen and time.monotonic() < deadline:
            current = read_git_holder(b)
            assert current is not None
            stolen = thief.git.push([(thief._new_commit(), LOCK_REF, current[0])])
        assert stolen, "the thief never took the ref"
        assert held.lost.wait(30), "the holder did not notice it lost the lock"
    finally:
        held.release()
    assert read_git_holder(b)[1]["lock_id"] == "id-b-0"  # type: ignore[index]


def test_force_unlock_releases_the_git_lock_of_a_dead_holder(
    tmp_path: Path, clones: tuple[Path, Path]
) -> None:
    a, b = clones
    lock_for(a, host="elsewhere").acquire(0)
    platform = start_platform(tmp_path / "platform")
    try:
        osm = Osmosis(b, platform)
        wrong = osm.apply("--force-unlock", "nope")
        assert wrong.code == 1 and "does not match the holder" in wrong.err
        done = osm.apply("--force-unlock", "id-a-0")
        assert done.code == 0, done
        assert f"({LOCK_REF} on origin)" in done.err
        assert not ls_remote(b, LOCK_REF)
    finally:
        platform.close()


def test_lock_setting_and_a_repository_without_a_remote(tmp_path: Path) -> None:
    real = "https://platform.osmosis.ai"
    assert choose_lock(None, real, has_origin=True) is LockKind.GIT
    assert choose_lock(None, real, has_origin=False) is LockKind.CLONE
    assert choose_lock("local", real, has_origin=True) is LockKind.CLONE
    with pytest.raises(UsageError, match='lock = "git".*no origin remote'):
        choose_lock("git", real, has_origin=False)
    platform = start_platform(tmp_path / "platform")
    try:
        repo = init_repo(
            tmp_path / "repo",
            configs={"tb/a": smoke_config()},
            pyproject='[tool.osmosis-reconciler]\nlock = "git"\n',
        )
        refused = Osmosis(repo, platform).apply("--auto-approve")
        assert refused.code == 1 and "has no origin remote" in refused.err
        assert platform.submits() == 0
    finally:
        platform.close()


def test_two_clones_race_once_and_exactly_one_submits(tmp_path: Path) -> None:
    tally = GitTally()
    race(tmp_path / "race", tally, configs=4)
    assert tally.races_without_single_applier == 0, tally.notes
    assert tally.losers_naming_holder + tally.losers_behind == 1, tally.notes
    assert tally.duplicates == 0 and tally.never_submitted == 0, tally.notes


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_holder_killed_on_another_host_is_taken_over_with_no_duplicate(tmp_path: Path) -> None:
    tally = GitTally()
    killed_holder_elsewhere(tmp_path / "kill", tally, configs=4)
    assert tally.holders_killed == 1 and tally.taken_over == 1, tally.notes
    assert tally.duplicates == 0 and tally.never_submitted == 0, tally.notes


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_holder_killed_between_an_intent_and_its_post_leaves_an_unknown_outcome(
    tmp_path: Path,
) -> None:
    # Killed at its 4th submit's POST: that intent is written, the POST never sent. The
    # taker must show it as `?` and not pay it; settled by a person, it is paid once.
    tally = GitTally()
    killed_holder_elsewhere(tmp_path / "kill", tally, configs=4, crash_at="submit.before_post:4")
    assert tally.holders_killed == 1 and tally.taken_over == 1, tally.notes
    assert tally.unknown_outcomes_settled >= 1, tally.notes
    assert tally.duplicates == 0 and tally.never_submitted == 0, tally.notes


def test_concurrent_acquires_in_threads_one_wins(clones: tuple[Path, Path]) -> None:
    a, b = clones
    results: list[str] = []

    def attempt(repo: Path, tag: int) -> None:
        try:
            lock_for(repo, tag=tag).acquire(0)
            results.append("won")
        except LockHeldError:
            results.append("held")

    threads = [threading.Thread(target=attempt, args=(r, i)) for i, r in enumerate((a, b, a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == ["held", "held", "held", "won"]


def test_hold_git_lock_is_told_of_a_lost_lock_by_its_renewal_thread(
    clones: tuple[Path, Path],
) -> None:
    """Found by the lifecycle suite's profile: a watcher thread polling ``lost`` every half
    second made every release (every apply with the git lock) wait for its next poll. The
    renewal thread says so itself, and no other thread runs beside it."""
    from reconciler.state.gitlock import hold_git_lock

    a, b = clones
    told: list[str] = []
    noticed = threading.Event()

    def on_lost() -> None:
        told.append(threading.current_thread().name)
        noticed.set()

    before = set(threading.enumerate())
    with hold_git_lock(
        a,
        refs=REFS,
        lock_id="held",
        command="osmosis-apply",
        ci_url=None,
        ttl=0.9,
        state_path=a / "state" / "osmosis.lock",
        timeout=0,
        on_lost=on_lost,
    ):
        started = [t.name for t in set(threading.enumerate()) - before]
        assert started == ["git-lock"], started
        thief = lock_for(b, ttl=30)
        current = read_git_holder(b)
        assert current is not None
        assert thief.git.push([(thief._new_commit(), LOCK_REF, current[0])]) is True
        assert noticed.wait(30), "the holder was not told it lost the lock"
    assert told == ["git-lock"]
