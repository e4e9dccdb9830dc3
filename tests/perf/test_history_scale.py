"""A converged repository in a long-lived shared workspace (issue 14, "Done when"): 20,000
runs, 500 of them this repository's (all ended, outputs on disk), the rest made elsewhere.
The plan prints a handful of lines, exits 0 with ``--detailed-exitcode`` and costs at most
10 requests, however long the workspace's history. (``make perf`` measures its time.)
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from reconciler.local_platform import LocalPlatform
from reconciler.local_platform.history import HISTORY_TEAM
from reconciler.platform import PlatformClient
from reconciler.state.lockfile import read_lockfile, write_lockfile
from tests.perf.workload import OTHER_BENCHMARK, SECRETS, TERMINAL_MIX, build_plan_repo
from tests.support.emulator import serve
from tests.support.osmosis import TEAM, TOKEN, Osmosis, Platform, RequestLog

WORKSPACE = "perf"
MANAGED = 500
WORKSPACE_RUNS = 20_000


@dataclasses.dataclass
class _Server:
    """What ``build_plan_repo`` needs of a server: its URL and a client."""

    url: str

    def client(self) -> PlatformClient:
        return PlatformClient(self.url, token=TOKEN, workspace=WORKSPACE)


def test_converged_plan_in_a_workspace_of_20000_runs(tmp_path: Path) -> None:
    data = tmp_path / "platform"
    seeder = LocalPlatform(data, workspaces=(WORKSPACE,))
    for name in SECRETS:
        seeder.set_secret(WORKSPACE, name, f"value-of-{name.lower()}")
    # Months of ended runs made elsewhere, and this repository's 500, all ended.
    seeder.seed_runs(
        WORKSPACE,
        WORKSPACE_RUNS - MANAGED,
        benchmark_key=OTHER_BENCHMARK,
        status_mix=TERMINAL_MIX,
        creators=HISTORY_TEAM,
    )
    seeder.seed_runs(WORKSPACE, MANAGED, status_mix=TERMINAL_MIX, creators=[TEAM[TOKEN]])
    benchmark = seeder.resolve_benchmark("terminal-bench-2-1")
    assert benchmark is not None
    ours = benchmark["id"]
    seeder.store.close()

    log = RequestLog()
    local = LocalPlatform(data, users=TEAM, workspaces=(WORKSPACE,))
    handle = serve(local, access_log=log)
    try:
        with contextlib.closing(_Server(handle.url).client()) as client:
            recorded = client.list_runs(benchmark_id=ours)
            first = client.run_page(0)
        assert first.total_count == WORKSPACE_RUNS and len(recorded) == MANAGED
        repo = build_plan_repo(
            tmp_path, _Server(handle.url), MANAGED, MANAGED, churn=False, listed=recorded
        )
        # The watermark an apply of this state would have recorded: the newest run it saw.
        newest = max(r.created_at for r in first.runs if r.created_at)
        state = read_lockfile(repo.lockfile, platform=handle.url, workspace=WORKSPACE)
        write_lockfile(repo.lockfile, state.model_copy(update={"observed_until": newest}))

        osm = Osmosis(repo.root, Platform(handle, local, WORKSPACE, log))
        log.reset()
        plan = osm.plan("--detailed-exitcode")
        assert plan.code == 0, plan
        assert "No changes." in plan.out
        assert f"{WORKSPACE_RUNS - MANAGED:,} other runs in workspace perf" in plan.out
        assert len(plan.out.splitlines()) <= 40, plan.out
        assert len(log.lines) <= 10, log.lines
    finally:
        handle.close()
