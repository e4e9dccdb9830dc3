"""``make demo`` installs only what the demo runs (issue 37, finding 8).

Its first run installed every development extra (a browser driver, scipy, mypy: most of
its time). ``make -n`` shows what a first run on a fresh machine would do: the package
alone, no extra; ``make install`` (the test set-up) still installs the dev extra.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if "pip install" in line]


def test_a_first_demo_installs_the_package_and_no_extra(tmp_path: Path) -> None:
    installs = dry_run("demo", tmp_path / "fresh-venv")
    assert installs == [f"{tmp_path / 'fresh-venv'}/bin/python -m pip install -q -e ."]


def test_the_test_set_up_still_installs_the_dev_extra(tmp_path: Path) -> None:
    installs = dry_run("install", tmp_path / "fresh-venv")
    assert any("-e '.[dev]'" in line for line in installs), installs
