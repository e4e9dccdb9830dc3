"""The results table end to end over loopback: ``osmosis-apply --wait`` downloads an ended
run and records its scores (E5) in the lockfile; after a config change and a second apply,
``osmosis-plan`` compares the new run with the previous run of the same address."""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    Platform,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

ADDRESS = "tb/smoke"


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def test_apply_wait_records_scores_and_plan_compares_with_the_previous_run(
    tmp_path: Path,
) -> None:
    server = start_platform(tmp_path / "fast-platform", speed=1000.0)
    try:
        repo = init_repo(tmp_path / "repo", configs={ADDRESS: smoke_config(attempts=2)})
        osm = Osmosis(repo, server)

        first = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert first.code in (0, 3), first
        entry = read_lock(repo)["runs"][ADDRESS]
        assert entry["status"] in ("finished", "failed", "stopped"), entry
        first_run = entry["run_id"]
        recorded = entry["results"]
        # What the lockfile holds is what the Platform's run detail says.
        with contextlib.closing(server.client()) as client:
            detail = client.get_run(first_run)
        (metrics,) = detail.agent_metrics
        (agent,) = recorded["agents"]
        assert agent["agent_index"] == 0
        assert agent["model"] == detail.agents[0].model_display_name == "gpt-5.2"
        assert agent["harness"] == "terminus-2"
        assert metrics.pass_at_1 is not None
        assert agent["pass_at_1"] == metrics.pass_at_1.value
        assert agent["rank"] == metrics.rank
        assert recorded["passed"] == detail.totals.passed
        cost = detail.agents[0].aggregates.reported_cost_usd
        assert cost is not None and metrics.n_tasks
        assert agent["cost_per_task"] == cost / metrics.n_tasks
        before = agent["pass_at_1"]

        # More attempts of the same agent on the same task: a comparable run. The first run
        # moves to history with its scores. (A new model would not be comparable: the table
        # would say "not comparable: agents changed"; osmosis-results compare compares it.)
        write_config(repo, ADDRESS, smoke_config(attempts=3))
        commit(repo, "Three attempts on the smoke task")
        second = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert second.code in (0, 3), second
        lock = read_lock(repo)
        entry = lock["runs"][ADDRESS]
        assert entry["run_id"] != first_run
        (old,) = [h for h in lock["history"] if h["run_id"] == first_run]
        assert old["results"] == recorded
        (now,) = entry["results"]["agents"]
        after = now["pass_at_1"]

        md = osm.plan("--format", "markdown")
        assert md.code == 0, md
        assert "**Results** of 1 ended run" in md.out
        (row,) = [line for line in md.out.splitlines() if line.startswith(f"| `{ADDRESS}` |")]
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        (header,) = [line for line in md.out.splitlines() if line.startswith("| address | run |")]
        columns = [cell.strip() for cell in header.strip("|").split(" | ")]
        assert len(columns) == len(cells), (header, row)
        assert cells[1].startswith(entry["run_name"])
        assert cells[2] == f"{now['model']} · terminus-2"
        assert now["model"] == "gpt-5.2"
        assert cells[3].startswith(_pct(after))
        points = round((after - before) * 100, 1)
        delta = "±0.0" if points == 0 else f"{points:+.1f}"
        assert cells[columns.index("vs previous")] == f"{delta} pts (prev {_pct(before)})"

        plan = osm.plan("--format", "json").json()
        (result,) = plan["results"]
        assert result["run_id"] == entry["run_id"]
        assert result["previous_run_id"] == first_run
        assert result["previous"]["pass_at_1"] == before

        text = osm.plan("--results")  # nothing to do: the table only when asked
        (line,) = [row for row in text.out.splitlines() if row.startswith(f"  {ADDRESS}  ")]
        # The text table fits 100 columns: the run by name (the id is in markdown and json),
        # the change wrapped at a space, nothing cut.
        assert f"  {entry['run_name']}  " in line
        assert all(len(row) <= 100 for row in text.out.splitlines()), text.out
        # The change is the last column, wrapped over the row's lines: read it back whole.
        rows = text.out.splitlines()
        (header,) = [r for r in rows if r.startswith("  address ") and r.endswith("vs previous")]
        at, start = header.index("vs previous"), rows.index(line)
        change = [line[at:].strip()]
        for more in rows[start + 1 :]:
            if more[:3] != "   ":  # the next row or the note under the table
                break
            change.append(more[at:].strip())
        assert " ".join(change) == f"{delta} pts (prev {_pct(before)})", text.out
    finally:
        server.close()


def test_downloading_an_ended_run_again_keeps_its_scores_without_asking_again(
    tmp_path: Path, platform: Platform, clock: FakeClock
) -> None:
    repo = init_repo(tmp_path / "repo", configs={ADDRESS: smoke_config()})
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    commit(repo, "Record the smoke run")
    clock.advance(86400)  # the run has ended
    assert osm.apply("--auto-approve").code == 0  # downloads it, records its scores (E5)
    entry = read_lock(repo)["runs"][ADDRESS]
    recorded, run_id = entry["results"], entry["run_id"]
    assert recorded and entry["downloads"]["complete"], entry

    # A downloaded file changed on disk: the run's files are downloaded again, and its
    # scores, which an ended run never changes, are kept instead of asked for again.
    (repo / entry["downloads"]["directory"] / "summary.csv").write_text("edited\n")
    assert platform.requests is not None
    platform.requests.reset()
    again = osm.apply("--auto-approve")
    assert again.code == 0, again
    lines = platform.requests.lines
    assert any(f"/{run_id}/outputs/download-urls" in line for line in lines), lines
    assert not any(f"GET /api/cli/benchmark-runs/{run_id} " in line for line in lines), lines
    assert read_lock(repo)["runs"][ADDRESS]["results"] == recorded
