"""Snapshots as values, the lockfile read once per command (issue 20).

The engine is driven exactly as ``osmosis-plan`` / ``osmosis-apply`` drive it
(``engine.load.open_command`` with an ``Invocation``, ``engine.plan.make_plan``,
``engine.apply.apply``), against the local Platform over loopback HTTP, with the lockfile
read through the operations' ``lockfile`` seam so every read is counted.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.cli.output import ApplyReport, Output
from reconciler.engine.apply import Applied, ApplyRequest, apply
from reconciler.engine.context import Invocation
from reconciler.engine.load import open_command
from reconciler.engine.plan import make_plan
from reconciler.engine.saved_plan import save_plan
from reconciler.engine.snapshots import Snapshots
from reconciler.exit_codes import Ending
from reconciler.log import configure_logging
from reconciler.model import Action, Plan
from reconciler.state.lockfile import read_lockfile, read_lockfile_bytes
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


def command(repo: Path, platform: Platform, **overrides: object):
    invocation = Invocation(
        repo_root=repo, platform=platform.url, workspace=platform.workspace, overrides=overrides
    )
    output = Output("osmosis-apply", out=io.StringIO(), err=io.StringIO())
    return open_command(invocation, output), output


def apply_with(
    ctx, output: Output, reader: CountingReader, planfile: Path | None = None
) -> Applied:
    planned: list[Plan] = []
    applied = apply(
        ctx,
        output,
        ApplyRequest(command="test", planfile=planfile, lock_timeout=10),
        progress=ApplyReport(output),
        on_plan=lambda plan, _saved: planned.append(plan),
        approve=None,
        lockfile=reader,
    )
    assert planned == [applied.plan]
    return applied


def test_a_plan_and_its_apply_read_the_lockfile_once(repo: Path, platform: Platform) -> None:
    reader = CountingReader()
    opened, output = command(repo, platform)
    with opened as ctx:
        applied = apply_with(ctx, output, reader)
    assert [i.action for i in applied.plan.items] == [Action.SUBMIT]
    assert applied.ending is Ending.DONE
    assert applied.result is not None and not applied.result.failures
    assert reader.reads == [repo / STATE]
    assert platform.submits() == 3
    # The state the apply returns is the one it wrote: nothing reads the lockfile again.
    on_disk = read_lockfile(repo / STATE, platform=None, workspace=None)
    assert applied.state.serial == on_disk.serial
    assert {a: (e.run_id, e.status) for a, e in applied.state.runs.items()} == {
        a: (e.run_id, e.status) for a, e in on_disk.runs.items()
    }


def test_a_target_that_names_a_recorded_run_still_reads_it_once(
    repo: Path, platform: Platform
) -> None:
    # --target matching no config makes the plan look at the recorded runs before the
    # Platform is asked anything: the same read serves the plan afterwards.
    (repo / "benchmarks/tb/r1.toml").unlink()
    commit(repo, "Delete tb/r1")
    reader = CountingReader()
    opened, output = command(repo, platform, targets=("tb/r1",))
    with opened as ctx:
        plan, _snapshots = make_plan(ctx, output, lockfile=reader)
    # The Platform's clock stands still: the run is active, so its deleted config stops it.
    assert [(i.address, i.action) for i in plan.items] == [("tb/r1", Action.STOP)]
    assert reader.reads == [repo / STATE]


def test_a_saved_plan_is_applied_with_one_read(repo: Path, platform: Platform) -> None:
    saved = repo.parent / "tb.plan.json"
    planning = CountingReader()
    opened, output = command(repo, platform)
    with opened as ctx:
        plan, _snapshots = make_plan(ctx, output, lockfile=planning)
        save_plan(plan, saved)
    assert planning.reads == [repo / STATE]

    applying = CountingReader()
    opened, output = command(repo, platform)
    with opened as ctx:
        applied = apply_with(ctx, output, applying, planfile=saved)
    assert applied.result is not None and not applied.result.failures
    assert applying.reads == [repo / STATE]
    assert platform.submits() == 3


def test_snapshots_and_what_an_apply_returns_are_frozen_values(
    repo: Path, platform: Platform
) -> None:
    opened, output = command(repo, platform)
    with opened as ctx:
        _plan, snapshots = make_plan(ctx, output)
        applied = apply_with(ctx, output, CountingReader())
    assert isinstance(snapshots, Snapshots)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshots.state = snapshots.state  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        applied.state = snapshots.state  # type: ignore[misc]
