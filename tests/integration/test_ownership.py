"""Issue 22 part A, over real git repositories and the local Platform on loopback: who owns
a run (evidence only), what the lock and state record guard (a Platform and workspace, not a
remote), how a try-out is kept apart, and the repository's identity (root commit + remote).

Each test names the numbered item of the issue it reproduces; each failed on main before.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from reconciler.cli.apply import main as apply_main
from reconciler.cli.plan import main as plan_main
from reconciler.local_platform import LocalPlatform
from reconciler.state.gitlock import LEGACY_STATE_REF, GuardedRefs
from reconciler.state.locking import hold_lock, machine_lock_path
from tests.support.osmosis import (
    SECRET_VALUE_PREFIX,
    WORKSPACE,
    Osmosis,
    Platform,
    Result,
    _check_clean,
    _environ,
    actions,
    cli_env,
    commit,
    git,
    init_repo,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
)

GIT_LOCK = '[tool.osmosis-reconciler]\nlock = "git"\n'


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's runtime directory, where machine-wide locks live, kept inside the test."""
    path = tmp_path / "runtime"
    path.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return path


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    served = start_platform(tmp_path / "platform")
    try:
        yield served
    finally:
        served.close()


class Osm(Osmosis):
    """``Osmosis`` with the runtime directory passed through (the helper's environment
    replaces the process's)."""

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        import os

        keep = {"XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "")}
        return super().env({**keep, **(extra or {})})


def seed_embedded(repo: Path) -> None:
    """The secret the smoke config references, stored in the clone's embedded Platform."""
    local = LocalPlatform(repo / ".osmosis" / "local-platform", auto_workspaces=True)
    local.set_secret("local", "OPENAI_API_KEY", SECRET_VALUE_PREFIX + "openai_api_key")


def embedded(repo: Path, main: Callable[[list[str]], int], *args: str) -> Result:
    """A command against the embedded Platform (``--platform local``), no token set."""
    seed_embedded(repo)
    env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
    out, err = io.StringIO(), io.StringIO()
    with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--dir", str(repo), "--platform", "local", "--no-color", *args])
    result = Result(code, out.getvalue(), err.getvalue())
    _check_clean(result)
    return result


def remote_refs(repo: Path) -> list[str]:
    listed = git(repo, "ls-remote", "origin", "refs/osmosis/*")
    return sorted(line.split("\t")[1] for line in listed.splitlines() if line.strip())


def bare_with_clone(tmp_path: Path, *, pyproject: str | None = None) -> tuple[Path, Path]:
    seed = init_repo(tmp_path / "seed", configs={"tb/a": smoke_config()}, pyproject=pyproject)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    return remote, clone


def lockfile_text(repo: Path) -> str:
    return (repo / "state" / "osmosis.lock").read_text()


# --------------------------------------------------------------------------- item 1


def test_item1_tryout_on_the_embedded_platform_needs_no_reachable_remote(tmp_path: Path) -> None:
    """A laptop offline, or an origin this machine cannot reach: the embedded Platform lives
    in the clone, so its own lock is all an apply takes (main: every apply failed)."""
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}, pyproject=GIT_LOCK)
    git(repo, "remote", "add", "origin", str(tmp_path / "unreachable.git"))
    done = embedded(repo, apply_main, "--auto-approve")
    assert done.code == 0, done
    assert "ok: submitted" in done.text


def test_item1_tryout_on_the_embedded_platform_writes_nothing_to_the_remote(
    tmp_path: Path,
) -> None:
    _remote, clone = bare_with_clone(tmp_path)
    done = embedded(clone, apply_main, "--auto-approve")
    assert done.code == 0, done
    assert remote_refs(clone) == []


def test_item1_loopback_platform_locks_the_machine_not_the_remote(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    """A loopback Platform lives on this machine: a lock in the runtime directory keyed by
    its URL and workspace excludes a second clone; nothing is written to the remote."""
    _remote, clone = bare_with_clone(tmp_path)
    osm = Osm(clone, platform)
    path = machine_lock_path(platform.url, WORKSPACE)
    assert path.parent.is_relative_to(runtime_dir)
    with hold_lock(path, command="another clone's osmosis-apply") as held:
        busy = osm.apply("--auto-approve")
    assert busy.code == 1, busy
    assert "another clone's osmosis-apply" in busy.err and held.lock_id in busy.err
    assert platform.submits() == 0
    done = osm.apply("--auto-approve")
    assert done.code == 0, done
    assert platform.submits() == 1
    assert remote_refs(clone) == []
    # Another workspace of the same Platform has its own lock.
    assert machine_lock_path(platform.url, "other") != path


def test_item1_git_lock_refs_are_named_by_platform_and_workspace(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    """``lock = "git"`` against a loopback Platform (how its tests run): the lock and the
    state record are the refs of this Platform and workspace, not ``refs/osmosis/state``."""
    _remote, clone = bare_with_clone(tmp_path, pyproject=GIT_LOCK)
    done = Osm(clone, platform).apply("--auto-approve")
    assert done.code == 0, done
    refs = GuardedRefs(platform.url, WORKSPACE)
    assert remote_refs(clone) == [refs.state]
    assert refs.state != GuardedRefs("local", WORKSPACE).state


def _push_legacy_record(clone: Path, lockfile: str) -> None:
    """What an older version left on the remote: ``refs/osmosis/state`` holding a lockfile."""
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=clone,
            input=lockfile.encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    applied = '{"lineage": "L-old", "serial": 9}\n'
    blob2 = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=clone,
            input=applied.encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    tree = (
        subprocess.run(
            ["git", "mktree"],
            cwd=clone,
            input=f"100644 blob {blob2}\tapplied.json\n100644 blob {blob}\tosmosis.lock\n".encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    commit_sha = git(clone, "commit-tree", tree, "-m", "legacy state")
    git(clone, "push", "-q", "origin", f"{commit_sha}:{LEGACY_STATE_REF}")


def test_item1_a_tryouts_legacy_record_never_refuses_the_real_platforms_apply(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    """main: a try-out pushed the local Platform's lockfile to ``refs/osmosis/state`` and
    the next apply against the real Platform was refused as "behind" it. A legacy record of
    another Platform is not this Platform's: ignored, and left alone."""
    _remote, clone = bare_with_clone(tmp_path, pyproject=GIT_LOCK)
    header = 'version = 1\nlineage = "L-old"\nserial = 9\nplatform = "local"\nworkspace = "local"\n'
    _push_legacy_record(clone, header)
    done = Osm(clone, platform).apply("--auto-approve")
    assert done.code == 0, done
    assert LEGACY_STATE_REF in remote_refs(clone)


def test_item1_a_legacy_record_of_this_platform_is_checked_then_migrated(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    _remote, clone = bare_with_clone(tmp_path, pyproject=GIT_LOCK)
    header = (
        f'version = 1\nlineage = "L-old"\nserial = 9\nplatform = "{platform.url}"\n'
        f'workspace = "{WORKSPACE}"\n'
    )
    _push_legacy_record(clone, header)
    osm = Osm(clone, platform)
    behind = osm.apply("--auto-approve")
    assert behind.code == 1 and "behind the one the last apply wrote" in behind.err, behind
    assert f"git fetch origin {LEGACY_STATE_REF}" in behind.err
    # Restored as the hint says, the apply passes and the record moves to its new name.
    (clone / "state").mkdir(exist_ok=True)
    (clone / "state" / "osmosis.lock").write_text(header)
    done = osm.apply("--auto-approve", "--allow-foreign-state")
    assert done.code == 0, done
    refs = GuardedRefs(platform.url, WORKSPACE)
    assert remote_refs(clone) == [refs.state]


# --------------------------------------------------------------------------- try-out


def test_tryout_keeps_its_state_apart_from_the_real_platforms_lockfile(tmp_path: Path) -> None:
    """A try-out against the embedded Platform in a repository whose committed lockfile is
    the real Platform's: state under ``.osmosis/try-out/`` (ignored by git), the team's
    lockfile untouched, nothing refused (main: refused, the lockfile names another Platform).
    """
    _remote, clone = bare_with_clone(tmp_path)
    team = (
        "# osmosis-reconciler state\nversion = 2\n"
        'lineage = "11111111-2222-3333-4444-555555555555"\nserial = 4\n'
        'platform = "https://platform.osmosis.ai"\nworkspace = "acme"\n'
    )
    (clone / "state").mkdir()
    (clone / "state" / "osmosis.lock").write_text(team)
    commit(clone, "The team's lockfile")
    done = embedded(clone, apply_main, "--auto-approve")
    assert done.code == 0, done
    assert "Try-out:" in done.err and ".osmosis/try-out/osmosis.lock" in done.err
    assert lockfile_text(clone) == team
    tryout = clone / ".osmosis" / "try-out" / "osmosis.lock"
    assert '[runs."tb/a"]' in tryout.read_text()
    assert git(clone, "status", "--porcelain") == ""
    assert remote_refs(clone) == []
    again = embedded(clone, plan_main, "--format", "json")
    assert again.code == 0 and actions(again) == {}, again


# --------------------------------------------------------------------------- item 2


def test_item2_a_repository_that_gains_its_remote_later_is_accepted_by_its_clone(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    repo = init_repo(tmp_path / "first", configs={"tb/a": smoke_config()})
    assert Osm(repo, platform).apply("--auto-approve").code == 0
    root = git(repo, "rev-list", "--max-parents=0", "HEAD")
    assert f'repository = "root:{root}"' in lockfile_text(repo)
    assert f'root_commit = "{root}"' in lockfile_text(repo)
    commit(repo, "Record the first apply")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    osm = Osm(clone, platform)
    planned = osm.plan("--format", "json")
    assert planned.code == 0, planned
    assert actions(planned) == {}
    # The clone's next write records its remote beside the root commit.
    (clone / "benchmarks" / "tb" / "a.toml").write_text(smoke_config(attempts=2))
    commit(clone, "Two attempts")
    assert osm.apply("--auto-approve").code == 0
    text = lockfile_text(clone)
    assert f'repository = "{remote}"' in text and f'root_commit = "{root}"' in text
    commit(clone, "Record the remote")
    git(clone, "push", "-q", "origin", "main")
    # A fork (same root commit, another remote) is another repository: refused unless said.
    fork_remote = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", str(remote), str(fork_remote))
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(fork_remote), str(fork))
    refused = Osm(fork, platform).plan()
    assert refused.code == 1 and "belongs to repository" in refused.err, refused
    assert "--allow-foreign-state" in refused.err
    assert Osm(fork, platform).plan("--allow-foreign-state").code == 0


# --------------------------------------------------------------------------- item 4


def test_item4_another_repositorys_identical_run_is_named_never_adopted_or_stopped(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    """Two repositories, one workspace, one token, the same config: B's config reached its
    branch first, then A submitted. main: B adopted A's run ("created after the config
    reached the branch", same creator) and B's next change stopped it. Since issue 34 the
    active twin also keeps B from paying again until a person decides."""
    b = init_repo(tmp_path / "b", configs={"tb/a": smoke_config()})
    a = init_repo(tmp_path / "a", configs={"tb/a": smoke_config()})
    assert Osm(a, platform).apply("--auto-approve").code == 0
    (a_run,) = platform.statuses()
    osm_b = Osm(b, platform)
    planned = osm_b.plan("--format", "json")
    assert planned.code == 4, planned  # newly blocked
    item = plan_items(planned)["tb/a"]
    # Named with both ways on, neither adopted nor paid for twice.
    assert (item["action"], item["reason"], item["run_id"]) == ("blocked", "twin_active", None)
    assert item["intended_action"] == "submit"
    assert f"({a_run}) is " in item["details"][0], item
    assert f"osmosis-state adopt tb/a {a_run}" in item["details"][1], item
    assert "--allow-duplicate tb/a" in item["details"][1], item
    assert osm_b.apply("--auto-approve").code == 0
    assert platform.submits() == 1 and "runs" not in read_lock(b), "B adopted or paid"
    # B's people decide to pay for B's own run.
    assert osm_b.apply("--auto-approve", "--allow-duplicate", "tb/a").code == 0
    assert read_lock(b)["runs"]["tb/a"]["run_id"] != a_run
    # B's next change replaces B's own run; A's keeps running.
    (b / "benchmarks" / "tb" / "a.toml").write_text(smoke_config(attempts=2))
    commit(b, "Two attempts")
    assert osm_b.apply("--auto-approve").code == 0
    statuses = platform.statuses()
    assert statuses[a_run] in ("pending", "queued", "running", "finished"), statuses
    assert platform.submits() == 3


def test_item4_a_run_only_the_remote_state_record_names_is_adopted(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    """The evidence for an apply whose lockfile commit never reached the branch is the
    remote state record, not timing: a fresh clone's plan adopts that run."""
    _remote, first = bare_with_clone(tmp_path, pyproject=GIT_LOCK)
    assert Osm(first, platform).apply("--auto-approve").code == 0  # lockfile never pushed
    (run_id,) = platform.statuses()
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(_remote), str(other))
    planned = Osm(other, platform).plan("--format", "json")
    assert planned.code == 0, planned
    item = plan_items(planned)["tb/a"]
    assert item["action"] == "adopt" and item["run_id"] == run_id, item
