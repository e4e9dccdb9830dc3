"""Installable as documented (issue 25): the wheel and sdist build, the wheel installs into a
fresh virtualenv, and the installed commands work in a new repository.

Needs the package index: ``python -m build`` fetches the build dependencies (setuptools,
setuptools-scm) into its isolated environment and pip fetches the runtime ones. It runs in
``make test`` (CI reaches the index).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.support.git import git
from tests.support.osmosis import PROJECT_ROOT, smoke_config

pytestmark = [pytest.mark.needs_index, pytest.mark.slow]


def _run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done


def test_the_built_wheel_installs_in_a_fresh_venv_and_validates_a_new_repository(
    tmp_path: Path,
) -> None:
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(PROJECT_ROOT)], tmp_path)
    wheels = sorted(dist.glob("osmosis_reconciler-*.whl"))
    sdists = sorted(dist.glob("osmosis_reconciler-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(dist.iterdir())

    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=True)
    python = fresh / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "--quiet", str(wheels[0])], tmp_path)

    repo = tmp_path / "new-repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "smoke.toml").write_text(smoke_config(), encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    done = _run([str(fresh / "bin" / "osmosis-plan"), "--validate-only"], repo)
    assert "All 1 config file(s) are valid." in done.stdout

    version = _run([str(fresh / "bin" / "osmosis-reconciler"), "--version"], repo).stdout
    wheel_version = wheels[0].name.split("-")[1]
    assert version.strip() == f"osmosis-reconciler {wheel_version}"
    # The published schema ships in the wheel (the JSON documents' contract).
    schema = _run(
        [
            str(python),
            "-c",
            "import importlib.resources as r; "
            "print(r.files('reconciler').joinpath('schema/output.schema.json').is_file())",
        ],
        repo,
    )
    assert schema.stdout.strip() == "True"
