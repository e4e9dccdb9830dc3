"""Issue 23, finding 1: ``osmosis-ci commit-lockfile --results-dir`` stays in the repository.

Each case is the real command in a clone of a bare remote: a directory or file symlink
under ``results/``, a ``..`` in a lockfile address, a download directory outside the
repository. Each must end with a clear error (exit 1, the path named), leave the victim
file outside untouched, and push nothing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.state.lockfile import serialize
from tests.support.git import make_clones
from tests.support.plan_fixtures import done, entry, lock

BIN = Path(sys.executable).parent
SUMMARY = b"agent,score\na,0.5\n"
VICTIM = b"precious data outside the repository\n"


def _lockfile(address: str = "tb/a", directory: str = ".osmosis/benchmarks/run") -> str:
    digest = hashlib.sha256(SUMMARY).hexdigest()
    downloads = done({"summary.csv": digest}).model_copy(update={"directory": "PLACEHOLDER_DIR"})
    text = serialize(lock(entry("tb/a", "r1", "finished", downloads=downloads)))
    # Written as a hand-edit or a hostile pull request would: straight into the TOML.
    return text.replace('"PLACEHOLDER_DIR"', f'"{directory}"').replace(
        '[runs."tb/a"]', f'[runs."{address}"]'
    )


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote, repo, _other = make_clones(tmp_path)
    run_dir = repo / ".osmosis" / "benchmarks" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.csv").write_bytes(SUMMARY)
    (repo / "message.txt").write_text("osmosis-apply: results [skip ci]\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    return remote, repo, outside


def _commit(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [
            str(BIN / "osmosis-ci"),
            "--dir",
            str(repo),
            "commit-lockfile",
            "--message-file",
            str(repo / "message.txt"),
            "--branch",
            "main",
            "--results-dir",
            "results",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _remote_log(remote: Path) -> str:
    return subprocess.run(
        ["git", "log", "--format=%s", "main"], cwd=remote, capture_output=True, text=True
    ).stdout


def _refused(done: subprocess.CompletedProcess[str], remote: Path, *needles: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in done.stderr, done.stderr
    assert "osmosis-apply: results" not in _remote_log(remote)


def test_the_plain_case_copies_and_pushes(setup: tuple[Path, Path, Path]) -> None:
    # Without this the refusals below could pass by never copying anything.
    remote, repo, _outside = setup
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(_lockfile())
    done = _commit(repo)
    assert done.returncode == 0, done.stderr
    assert (repo / "results" / "tb" / "a" / "summary.csv").read_bytes() == SUMMARY
    assert "osmosis-apply: results" in _remote_log(remote)


def test_a_directory_symlink_under_results_is_refused(setup: tuple[Path, Path, Path]) -> None:
    remote, repo, outside = setup
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(_lockfile())
    (repo / "results" / "tb").mkdir(parents=True)
    os.symlink(outside, repo / "results" / "tb" / "a")
    done = _commit(repo)
    _refused(done, remote, "results/tb/a is a symlink")
    assert list(outside.iterdir()) == []


def test_a_file_symlink_under_results_is_refused(setup: tuple[Path, Path, Path]) -> None:
    remote, repo, outside = setup
    victim = outside / "victim.txt"
    victim.write_bytes(VICTIM)
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(_lockfile())
    (repo / "results" / "tb" / "a").mkdir(parents=True)
    os.symlink(victim, repo / "results" / "tb" / "a" / "summary.csv")
    done = _commit(repo)
    _refused(done, remote, "results/tb/a/summary.csv is a symlink")
    assert victim.read_bytes() == VICTIM


def test_a_dotdot_address_in_the_lockfile_is_refused(setup: tuple[Path, Path, Path]) -> None:
    remote, repo, outside = setup
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(_lockfile(address="../../outside/x"))
    done = _commit(repo)
    _refused(done, remote, "state/osmosis.lock:", "'../../outside/x'", "'..' component")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("where", ["absolute", "dotdot"])
def test_a_download_directory_outside_the_repository_is_refused(
    setup: tuple[Path, Path, Path], where: str
) -> None:
    remote, repo, outside = setup
    (outside / "summary.csv").write_bytes(SUMMARY)  # the "secret" a hostile lockfile targets
    directory = str(outside) if where == "absolute" else "../outside"
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(_lockfile(directory=directory))
    done = _commit(repo)
    _refused(done, remote, "downloads.directory")
    assert not (repo / "results").exists()


def test_a_symlinked_download_directory_is_not_read(setup: tuple[Path, Path, Path]) -> None:
    remote, repo, outside = setup
    (outside / "summary.csv").write_bytes(SUMMARY)
    os.symlink(outside, repo / ".osmosis" / "benchmarks" / "elsewhere")
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(
        _lockfile(directory=".osmosis/benchmarks/elsewhere")
    )
    done = _commit(repo)
    _refused(done, remote, ".osmosis/benchmarks/elsewhere is a symlink")
    assert not (repo / "results").exists()
