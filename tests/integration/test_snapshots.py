"""Snapshots as values, the lockfile read once per command (issue 20).

The engine is driven exactly as ``osmosis-plan`` / ``osmosis-apply`` drive it (``Session.open``
with an ``Invocation``, ``make_plan``, ``apply``), against the local Platform over loopback
HTTP, with the lockfile read through the ``Session``'s seam so every read is counted.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.cli.output import ApplyReport, Output
from reconciler.engine.context import Invocation
from reconciler.engine.session import Session
from reconciler.engine.snapshots import Snapshots
from reconciler.log import configure_logging
from reconciler.model import Action
from reconciler.state.lockfile import read_lockfile_bytes
from tests.support.git import commit
from tests.support.osmosis import TOKEN, Osmosis, Platform, init_repo, smoke_config, write_config

STATE = Path("state/osmosis.lock")


class CountingReader:
    """The lockfile reader the command uses, counting each read."""

    def __init__(self) -> None:
        self.reads: list[Path] = []

    def __call__(self, path: Path, name: str) -> bytes | None:
        self.reads.append(path)
        return read_lockfile_bytes(path, name)


@pytest.fixture
def repo(tmp_path: Path, platform: Platform, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A repository whose two configs were applied once (a lockfile with runs and a
    watermark), and a third config committed since: the next apply has work to do."""
    osm = Osmosis(
        init_repo(tmp_path / "repo", configs={f"tb/r{i}": smoke_config() for i in range(2)}),
        platform,
    )
    first = osm.apply("--auto-approve")
    assert first.code == 0, first
    commit(osm.repo, "Record the first apply")
    write_config(osm.repo, "tb/new", smoke_config(attempts=2))
    commit(osm.repo, "Add tb/new")
    for name in ("OSMOSIS_PLATFORM_URL", "OSMOSIS_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OSMOSIS_TOKEN", TOKEN)
    configure_logging(fmt="json", verbosity=0, command="osmosis-apply", stream=io.StringIO())
    yield osm.repo


def session(repo: Path, platform: Platform, reader: CountingReader, **overrides: object):
    invocation = Invocation(
        repo_root=repo, platform=platform.url, workspace=platform.workspace, overrides=overrides
    )
    output = Output("osmosis-apply", out=io.StringIO(), err=io.StringIO())
    return Session.open(invocation, output, lockfile=reader), output


def test_a_plan_and_its_apply_read_the_lockfile_once(repo: Path, platform: Platform) -> None:
    reader = CountingReader()
    opened, output = session(repo, platform, reader)
    with opened as s, s.hold_lock(timeout=10, command="test"):
        plan, snapshots = s.make_plan()
        assert [i.action for i in plan.items] == [Action.SUBMIT]
        result = s.apply(plan, snapshots, report=ApplyReport(output), wait=False, wait_timeout=0)
    assert not result.failures
    assert reader.reads == [repo / STATE]
    assert platform.submits() == 3


def test_a_target_that_names_a_recorded_run_still_reads_it_once(
    repo: Path, platform: Platform
) -> None:
    # --target matching no config makes the plan look at the recorded runs before the
    # Platform is asked anything: the same read serves the plan afterwards.
    (repo / "benchmarks/tb/r1.toml").unlink()
    commit(repo, "Delete tb/r1")
    reader = CountingReader()
    opened, _output = session(repo, platform, reader, targets=("tb/r1",))
    with opened as s:
        plan, _snapshots = s.make_plan()
    # The Platform's clock stands still: the run is active, so its deleted config stops it.
    assert [(i.address, i.action) for i in plan.items] == [("tb/r1", Action.STOP)]
    assert reader.reads == [repo / STATE]


def test_a_saved_plan_is_applied_with_one_read(repo: Path, platform: Platform) -> None:
    saved = repo.parent / "tb.plan.json"
    planning = CountingReader()
    opened, _output = session(repo, platform, planning)
    with opened as s:
        plan, _snapshots = s.make_plan()
        s.save_plan(plan, saved)
    assert planning.reads == [repo / STATE]

    applying = CountingReader()
    opened, output = session(repo, platform, applying)
    with opened as s, s.hold_lock(timeout=10, command="test"):
        loaded, snapshots = s.load_saved_plan(saved)
        result = s.apply(loaded, snapshots, report=ApplyReport(output), wait=False, wait_timeout=0)
    assert not result.failures
    assert applying.reads == [repo / STATE]
    assert platform.submits() == 3


def test_snapshots_are_frozen_values(repo: Path, platform: Platform) -> None:
    opened, _output = session(repo, platform, CountingReader())
    with opened as s:
        _plan, snapshots = s.make_plan()
    assert isinstance(snapshots, Snapshots)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshots.state = snapshots.state  # type: ignore[misc]
    # The session holds the context, never a snapshot.
    assert not {"desired", "state", "observation"} & set(vars(s))
