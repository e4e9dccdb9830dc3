"""The lockfile's one door (``state/door.py``), over the local Platform on loopback and real
git repositories: the commands that write the lockfile without applying (``osmosis-state``,
``osmosis-import``, ``osmosis-results accept``, ``osmosis-ci announce``) take the locks an
apply of the same Platform and workspace takes, wait for them or refuse naming the holder,
and, under the git lock, record what they wrote in the state record as an apply does.

Each test failed before the door: those commands took the clone's lock only, so an apply
from another clone (machine lock) or another machine (git lock) did not hold them off, and
the state record never heard of their writes.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.ci.announce import announce
from reconciler.ci.github import GitHubAPI
from reconciler.cli.results import main as results_main
from reconciler.errors import LockHeldError
from reconciler.model import Downloads, Settings
from reconciler.state.gitlock import GitLock, GuardedRefs
from reconciler.state.lockfile import read_lockfile, write_lockfile
from reconciler.state.locking import LockInfo, hold_lock, machine_lock_path
from tests.support.emulator import stop_process
from tests.support.github_fake import FakeGitHub
from tests.support.osmosis import (
    BIN_DIR,
    WORKSPACE,
    LineReader,
    Osmosis,
    Platform,
    Result,
    cli_env,
    git,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
)

GIT_LOCK = '[tool.osmosis-reconciler]\nlock = "git"\n'


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    served = start_platform(tmp_path / "platform")
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repo="acme/bench").start()
    yield fake
    fake.close()


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Machine-wide locks in the test's own directory: this process's environment, and the
    one each command is given (the helpers replace the environment)."""
    path = tmp_path / "runtime"
    path.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return {"XDG_RUNTIME_DIR": str(path)}


def applied(repo: Path, platform: Platform, env: dict[str, str]) -> Osmosis:
    """``repo`` with ``tb/a`` applied (its run recorded in the lockfile)."""
    osm = Osmosis(repo, platform)
    done = osm.apply("--auto-approve", env=env)
    assert done.code == 0, done
    return osm


def accept(osm: Osmosis, ref: str, env: dict[str, str]) -> Result:
    return osm._call(results_main, ["accept", ref], env)


def lockfile(repo: Path) -> Path:
    return repo / "state" / "osmosis.lock"


def mark_ended(repo: Path) -> None:
    """Record ``tb/a``'s run as finished and downloaded: ``osmosis-ci announce`` is due."""
    state = read_lockfile(lockfile(repo), platform=None, workspace=None)
    done = Downloads(
        types=("summary",),
        files=1,
        bytes=10,
        sha256={"summary.csv": "ab" * 32},
        directory=".osmosis/benchmarks/run",
    )
    entry = state.runs["tb/a"].model_copy(update={"status": "finished", "downloads": done})
    write_lockfile(lockfile(repo), state.model_copy(update={"runs": {"tb/a": entry}}))


def held_message(path: Path, held: LockInfo) -> str:
    return (
        f"Error: the apply lock {path} is held by pid {held.pid} on {held.host} "
        f"running `another clone's osmosis-apply --wait` since {held.started_at} "
        f"(lock id {held.lock_id})"
    )


def ci_env(runtime: dict[str, str], github: FakeGitHub) -> dict[str, str]:
    """The environment of an ``osmosis-ci`` job talking to the fake GitHub."""
    return cli_env(
        {
            **runtime,
            "GITHUB_REPOSITORY": github.repo,
            "GITHUB_TOKEN": github.token,
            "GITHUB_API_URL": github.url,
        }
    )


# --------------------------------------------------------------------------- machine lock


def test_an_apply_from_another_clone_holds_off_state_edits_import_and_accept(
    tmp_path: Path, platform: Platform, runtime: dict[str, str]
) -> None:
    """A loopback Platform: another clone's apply holds the machine-wide lock of this
    Platform and workspace, and every writer of this clone's lockfile is refused naming it
    (before: they took this clone's lock only and went through)."""
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = applied(repo, platform, runtime)
    run_name = read_lock(repo)["runs"]["tb/a"]["run_name"]
    before = lockfile(repo).read_bytes()
    path = machine_lock_path(platform.url, WORKSPACE, runtime)
    with hold_lock(path, command="another clone's osmosis-apply --wait") as held:
        refused = {
            "forget": osm.state("forget", "tb/a", env=runtime),
            "mv": osm.state("mv", "tb/a", "tb/b", env=runtime),
            "accept": accept(osm, f"tb/a@{run_name}", runtime),
        }
        for name, result in refused.items():
            assert result.code == 1, (name, result)
            assert result.err.startswith(held_message(path, held)), (name, result.err)
            assert f"osmosis-apply --force-unlock {held.lock_id}" in result.err, name
    assert lockfile(repo).read_bytes() == before
    # Released: the same edit goes through, and the run is no longer recorded ...
    assert osm.state("forget", "tb/a", env=runtime).code == 0
    forgotten = lockfile(repo).read_bytes()
    # ... so an import of it is refused for the held lock, not for the run.
    with hold_lock(path, command="another clone's osmosis-apply --wait") as held:
        imported = osm.import_(
            run_name, "--model-type", "provider", "--to", "benchmarks/tb/c.toml", env=runtime
        )
    assert imported.code == 1, imported
    assert f"\n{held_message(path, held)}" in imported.err, imported.err  # after the banner
    assert lockfile(repo).read_bytes() == forgotten
    assert not (repo / "benchmarks" / "tb" / "c.toml").exists()


def test_osmosis_state_waits_for_the_apply_of_another_clone(
    tmp_path: Path, platform: Platform, runtime: dict[str, str]
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = applied(repo, platform, runtime)
    path = machine_lock_path(platform.url, WORKSPACE, runtime)
    with hold_lock(path, command="another clone's osmosis-apply --wait") as held:
        proc = osm.popen("osmosis-state", "forget", "tb/a", "--lock-timeout", "300", env=runtime)
        err = LineReader(proc.stderr)
        try:
            said = err.wait_for("Waiting for the apply lock", timeout=120)
            assert f"Waiting for the apply lock held by pid {held.pid} on {held.host}" in said
            assert "tb/a" in read_lock(repo)["runs"], "nothing is written while it waits"
        except BaseException:
            stop_process(proc)
            raise
    try:
        assert proc.wait(timeout=120) == 0, err.finish()
        err.finish()  # the reader reaches the end of stderr before its pipe is closed
    finally:
        stop_process(proc)
    assert "tb/a" not in read_lock(repo).get("runs", {})


def test_osmosis_ci_announce_waits_for_an_apply_and_refuses_without_waiting(
    tmp_path: Path, platform: Platform, runtime: dict[str, str], github: FakeGitHub
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    applied(repo, platform, runtime)
    mark_ended(repo)
    sha = read_lock(repo)["runs"]["tb/a"]["requested_by"]
    github.add_pull(7, sha)
    before = lockfile(repo).read_bytes()
    path = machine_lock_path(platform.url, WORKSPACE, runtime)
    with hold_lock(path, command="another clone's osmosis-apply --wait") as held:
        # Refused at once when told not to wait, naming the apply; GitHub is not asked.
        with GitHubAPI("acme/bench", token=github.token, api_url=github.url) as api:
            with pytest.raises(LockHeldError) as info:
                announce(api, lockfile(repo), settings=Settings(), lock_timeout=0)
        assert f"osmosis-apply --force-unlock {held.lock_id}" in (info.value.hint or "")
        assert "another clone's osmosis-apply --wait" in info.value.message
        # The job's command waits for it (up to a minute), saying so.
        proc = subprocess.Popen(
            [str(BIN_DIR / "osmosis-ci"), "--dir", str(repo), "announce"],
            env=ci_env(runtime, github),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        out = LineReader(proc.stdout)
        try:
            out.wait_for(f"Waiting for the apply lock held by pid {held.pid}", timeout=60)
            assert github.writes() == [] and lockfile(repo).read_bytes() == before
        except BaseException:
            stop_process(proc)
            raise
    try:
        assert proc.wait(timeout=120) == 0, out.finish() + proc.stderr.read()  # type: ignore[union-attr]
        out.finish()  # the reader reaches the end of stdout before its pipe is closed
    finally:
        stop_process(proc)
    assert len(github.bodies(7)) == 1
    assert read_lock(repo)["runs"]["tb/a"]["announced_at"] is not None


# --------------------------------------------------------------------------- git lock


def clones(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones of one bare remote whose settings ask for the git lock."""
    seed = init_repo(tmp_path / "seed", configs={"tb/a": smoke_config()}, pyproject=GIT_LOCK)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        git(tmp_path, "clone", "-q", str(remote), str(clone))
    return a, b


def state_record(repo: Path, refs: GuardedRefs) -> dict[str, object]:
    git(repo, "fetch", "-q", "origin", refs.state)
    return json.loads(git(repo, "show", "FETCH_HEAD:applied.json"))


def test_under_the_git_lock_a_state_edit_is_recorded_and_a_checkout_behind_it_refused(
    tmp_path: Path, platform: Platform, runtime: dict[str, str]
) -> None:
    a, b = clones(tmp_path)
    refs = GuardedRefs(platform.url, WORKSPACE)
    osm_a = applied(a, platform, runtime)
    git(a, "add", "state/osmosis.lock")
    git(a, "commit", "-q", "-m", "osmosis-apply")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "origin", "main")
    applied_serial = read_lock(a)["serial"]
    assert state_record(a, refs)["serial"] == applied_serial
    # A forget in a, not pushed: the state record has it (before: it stayed at the apply's).
    assert osm_a.state("forget", "tb/a", env=runtime).code == 0
    assert state_record(a, refs)["serial"] == applied_serial + 1
    # b is behind it now: its edit is refused as its apply would be, with the way out.
    before = lockfile(b).read_bytes()
    refused = Osmosis(b, platform).state("mv", "tb/a", "tb/b", env=runtime)
    assert refused.code == 1, refused
    assert "the lockfile here is behind the one the last apply wrote: that apply by " in refused.err
    assert f"left serial {applied_serial + 1}, this checkout has serial {applied_serial}" in (
        refused.err
    )
    assert lockfile(b).read_bytes() == before


def test_an_apply_on_another_machine_holds_off_accept_and_announce(
    tmp_path: Path, platform: Platform, runtime: dict[str, str], github: FakeGitHub
) -> None:
    a, b = clones(tmp_path)
    osm = applied(a, platform, runtime)
    run_name = read_lock(a)["runs"]["tb/a"]["run_name"]
    before = lockfile(a).read_bytes()
    elsewhere = GitLock(
        b,
        refs=GuardedRefs(platform.url, WORKSPACE),
        lock_id="ci-lock-1",
        command="osmosis-apply --auto-approve",
        ci_url="https://github.com/acme/bench/actions/runs/7",
        ttl=600,
        state_path=lockfile(a),  # a's record: b, not pulled, is behind it
        host="ci-runner",
        pid=4242,
    ).acquire(0)
    try:
        refused = accept(osm, f"tb/a@{run_name}", runtime)
        assert refused.code == 1, refused
        assert "pid 4242 on ci-runner" in refused.err
        assert "CI run: https://github.com/acme/bench/actions/runs/7" in refused.err
        assert "osmosis-apply --force-unlock ci-lock-1" in refused.err
        mark_ended(a)
        marked = lockfile(a).read_bytes()
        with GitHubAPI("acme/bench", token=github.token, api_url=github.url) as api:
            with pytest.raises(LockHeldError, match="pid 4242 on ci-runner"):
                announce(api, lockfile(a), settings=Settings(lock="git"), lock_timeout=0)
        assert github.requests == [] and lockfile(a).read_bytes() == marked
    finally:
        elsewhere.release()
    assert marked != before
