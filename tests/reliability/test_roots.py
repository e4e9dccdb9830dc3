"""Symlinked roots (issue 17): every top of a tree the tool reads or writes, linked elsewhere.

On main, ``benchmarks`` as a link to a directory outside the repository planned clean and
apply submitted the outside config as a paid run, and a linked ``.osmosis/benchmarks/<run>``
(or ``.osmosis/benchmarks``) received summary, results and artifacts outside, exit 0: the
checks resolved the top directory before comparing. Here each case links one root to a
directory outside the repository (or to itself) and runs ``osmosis-plan`` and
``osmosis-apply --wait``: nothing may be written outside, no run may be paid for from an
outside config, and each refusal must name the link.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reconciler.local_platform.server import ServerHandle
from tests.support.emulator import serve

from . import report
from .harness import APPLY_ARGS, SECRET_NAME, WORKSPACE, Server, make_repo, run
from .test_hostile import (
    CONFIG_ROOTS,
    DOWNLOAD_ROOTS,
    Applied,
    HostilePlatform,
    Setup,
    _snapshot,
)

pytestmark = pytest.mark.reliability


@dataclass
class _Tally:
    cases: int = 0
    commands: int = 0
    outside_writes: int = 0
    outside_submits: int = 0
    unclear: int = 0
    internal_errors: int = 0
    details: list[str] = field(default_factory=list)


_tally = _Tally()


CASES: dict[str, tuple[Callable[[Setup], None], str]] = CONFIG_ROOTS


def _serve(root: Path) -> tuple[HostilePlatform, ServerHandle]:
    platform = HostilePlatform(root / "platform", speed=5000, workspaces=(WORKSPACE,))
    platform.canned = {}
    platform.set_secret(WORKSPACE, SECRET_NAME, "sk-roots-suite")
    handle = serve(platform, quiet=True)
    return platform, handle


def _check(case: str, commands: list, outside: Path, before: dict, message: str) -> None:
    _tally.cases += 1
    for tool, done in commands:
        _tally.commands += 1
        text = done.stdout + done.stderr
        if "internal error" in text or "Traceback" in text:
            _tally.internal_errors += 1
            _tally.details.append(f"{case}: {tool}: internal error")
        if message not in text or done.returncode == 0:
            _tally.unclear += 1
            _tally.details.append(f"{case}: {tool}: rc {done.returncode}, no {message!r}")
    if _snapshot(outside) != before:
        _tally.outside_writes += 1
        _tally.details.append(f"{case}: something was written outside the repository")


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_and_state_roots(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    outside = tmp_path / "outside"
    outside.mkdir()
    platform, handle = _serve(tmp_path)
    try:
        setup = Setup(
            tmp_path, make_repo(tmp_path / "repo", 1), outside, Server(platform, handle), platform
        )
        make(setup)
        before = _snapshot(outside)
        commands = [
            (tool, run(tool, setup.repo, handle.url, *args))
            for tool, args in (("osmosis-plan", ()), ("osmosis-apply", APPLY_ARGS))
        ]
        _check(case, commands, outside, before, message)
        if platform.submit_count() != 0:
            _tally.outside_submits += platform.submit_count()
            _tally.details.append(f"{case}: {platform.submit_count()} run(s) submitted")
    finally:
        handle.close()
    _publish()
    assert not [d for d in _tally.details if d.startswith(f"{case}:")], _tally.details


@pytest.mark.parametrize("case", sorted(DOWNLOAD_ROOTS))
def test_download_roots(tmp_path: Path, case: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    platform, handle = _serve(tmp_path)
    try:
        repo = make_repo(tmp_path / "repo", 1)
        first = run("osmosis-apply", repo, handle.url, "--auto-approve")
        assert first.returncode == 0, first.stderr
        applied = Applied(tmp_path, repo, Server(platform, handle), platform, outside)
        message = DOWNLOAD_ROOTS[case](applied)
        before = _snapshot(outside)
        paid = platform.submit_count()
        commands = [
            (tool, run(tool, repo, handle.url, *args))
            for tool, args in (("osmosis-apply", APPLY_ARGS), ("osmosis-apply", APPLY_ARGS))
        ]
        _check(case, commands, outside, before, message)
        if platform.submit_count() != paid:
            _tally.outside_submits += platform.submit_count() - paid
            _tally.details.append(f"{case}: runs paid again")
    finally:
        handle.close()
    _publish()
    assert not [d for d in _tally.details if d.startswith(f"{case}:")], _tally.details


def _publish() -> None:
    t, r = _tally, report.record
    r("roots", "symlinked roots (cases)", t.cases)
    r("roots", "  commands run against them", t.commands)
    r("roots", "  writes outside the repository", t.outside_writes, must_be_zero=True)
    r("roots", "  runs paid from outside configs", t.outside_submits, must_be_zero=True)
    r("roots", "  refusals without the link named", t.unclear, must_be_zero=True)
    r("roots", "  internal errors", t.internal_errors, must_be_zero=True)
