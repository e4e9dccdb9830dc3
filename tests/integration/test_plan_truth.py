"""The plan is a promise (issue 13), end to end against the local Platform over loopback:
references to one benchmark by key, name or id are the same request; a refusal by the
Platform is remembered and never POSTed again until something changes; a plan with blocked
items fails where apply would; ``--target``/``--replace`` that match nothing are usage
errors.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import (
    ManualClock,
    Osmosis,
    Platform,
    RequestLog,
    commit,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def platform(tmp_path: Path, clock: ManualClock) -> Iterator[Platform]:
    server = start_platform(tmp_path / "platform", clock=clock, access_log=RequestLog())
    yield server
    server.close()


def test_key_name_and_id_of_one_benchmark_plan_as_no_changes(
    tmp_path: Path, platform: Platform
) -> None:
    config = smoke_config()
    osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": config}), platform)
    assert osm.apply("--auto-approve").code == 0
    commit(osm.repo, "Record the run")
    with contextlib.closing(platform.client()) as client:
        info = client.get_benchmark("terminal-bench-2-1")
    for reference in (info.name, info.id, "terminal-bench-2-1"):
        edited = config.replace('"terminal-bench-2-1"', f'"{reference}"')
        write_config(osm.repo, "tb/a", edited)
        commit(osm.repo, f"Name the benchmark as {reference}")
        plan = osm.plan("--detailed-exitcode")
        assert plan.code == 0, (reference, plan)
        assert "No changes." in plan.out
    assert platform.submits() == 1
    assert read_lock(osm.repo)["runs"]["tb/a"]["benchmark_id"] == info.id
