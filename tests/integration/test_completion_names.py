"""Shell completion knows the repository's addresses and runs (issue 37, finding 8).

The bash script ``osmosis-reconciler completion bash`` prints is sourced in a real bash, in
a repository with configs and a lockfile, and asked what completes ``--target tb/``,
``state show`` and ``results tb/smoke@``: the configs' and the lockfile's addresses, and
the recorded runs of an address.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.git import git
from tests.support.osmosis import BIN_DIR, PROJECT_ROOT, smoke_config

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "bench"
    for address in ("tb/smoke", "tb/security", "hle/parity"):
        path = repo / "benchmarks" / f"{address}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(smoke_config())
    (repo / "state").mkdir()
    # A lockfile as the tool writes it (the golden one): runs and history.
    shutil.copy(
        PROJECT_ROOT / "tests" / "golden" / "lockfile_full.toml", repo / "state" / "osmosis.lock"
    )
    git(repo, "init", "-q", "-b", "main")
    return repo


def complete(repo: Path, line: str) -> list[str]:
    """What bash completion offers at the end of ``line``."""
    script = subprocess.run(
        [str(BIN_DIR / "osmosis-reconciler"), "completion", "bash"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    words = line.split(" ")
    probe = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        f"COMP_LINE={line!r}\nCOMP_POINT=${{#COMP_LINE}}\n"
        "_shtab_osmosis_reconciler\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    env = {**os.environ, "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-c", probe], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return sorted(line for line in done.stdout.splitlines() if line)


def test_an_address_flag_completes_the_configs_and_recorded_addresses(repo: Path) -> None:
    assert complete(repo, "osmosis-reconciler plan --target tb/") == [
        "tb/security",
        "tb/smoke",
    ]
    # gdpval is recorded in the lockfile only (its config is gone): still an address.
    assert "gdpval" in complete(repo, "osmosis-reconciler state show ")
    assert complete(repo, "osmosis-reconciler apply --replace hle") == ["hle/parity"]


def test_a_run_argument_completes_the_recorded_runs(repo: Path) -> None:
    offered = complete(repo, "osmosis-reconciler results terminal-bench/smoke@")
    assert offered and all(o.startswith("terminal-bench/smoke@") for o in offered)
    assert "terminal-bench/smoke@smoke-a1b2" in offered
    assert "terminal-bench/smoke@smoke-a1b2" in complete(repo, "osmosis-reconciler logs term")


def test_outside_a_repository_nothing_is_offered_and_nothing_fails(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(BIN_DIR / "osmosis-reconciler"), "__complete", "refs"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
