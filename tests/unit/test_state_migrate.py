"""``osmosis-state migrate``'s rules (engine/migrate.py) on real lockfiles in ``tmp_path``.

The target's answer to "which local Platform are you?" is the ``probe`` argument (the seam:
``platform.identity`` asks over HTTP, and tests never leave loopback); the integration tests
(tests/integration/test_state_migrate.py) ask a served local Platform for real.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.engine.migrate import Migration, migrate_lockfile, migrated_state
from reconciler.errors import UsageError
from reconciler.model import Baseline, Intent, LockState, RecordedRun, Settings
from reconciler.state.lockfile import read_lockfile, write_lockfile

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SERVED = "http://127.0.0.1:8765"


def entry(address: str, status: str | None = "finished", **extra: object) -> RecordedRun:
    return RecordedRun(
        address=address,
        spec_digest="sha256:" + "a" * 64,
        run_id=f"bmr_{address.replace('/', '_')}",
        run_name=f"{address.split('/')[-1]}-run",
        status=status,
        **extra,  # type: ignore[arg-type]
    )


def state(platform: str = "local", *runs: RecordedRun, **extra: object) -> LockState:
    return LockState(
        lineage="11111111-2222-3333-4444-555555555555",
        serial=4,
        platform=platform,
        workspace="local",
        platform_instance="lp_mine" if platform == "local" else None,
        runs={run.address: run for run in runs},
        **extra,  # type: ignore[arg-type]
    )


def migrate(
    repo: Path, target: str, *, probe: dict[str, str] | None = None, dry_run: bool = False
) -> Migration:
    answers = probe or {}
    return migrate_lockfile(
        repo,
        Settings(),
        target=target,
        workspace_flag=None,
        env={},
        now=NOW,
        dry_run=dry_run,
        timeout=0.0,
        command="osmosis-state migrate",
        probe=answers.get,
    )


def written(repo: Path, recorded: LockState) -> bytes:
    path = repo / "state" / "osmosis.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_lockfile(path, recorded)
    return path.read_bytes()


def refusal(repo: Path, target: str, probe: dict[str, str] | None = None) -> str:
    before = (repo / "state" / "osmosis.lock").read_bytes()
    with pytest.raises(UsageError) as caught:
        migrate(repo, target, probe=probe)
    assert (repo / "state" / "osmosis.lock").read_bytes() == before, "a refusal wrote"
    return str(caught.value) + "\n" + (caught.value.hint or "")


def test_runs_move_to_history_with_nothing_left_to_fetch_there() -> None:
    pending = entry("tb/b", "failed")
    recorded = state(
        "local",
        entry("tb/a"),
        pending,
        baselines={"tb/a": Baseline(run_id="bmr_tb_a", accepted_at=NOW)},
        observed_until=NOW,
    )
    after, forgotten, dropped = migrated_state(
        recorded, platform=SERVED, workspace="team", kept=False, now=NOW
    )
    assert [e.address for e in forgotten] == ["tb/a", "tb/b"]
    assert (after.platform, after.workspace, after.platform_instance) == (SERVED, "team", None)
    assert after.runs == {} and after.baselines == {} and after.observed_until is None
    assert {(h.address, h.reason, h.outputs_pending) for h in after.history} == {
        ("tb/a", "forgotten", None),
        ("tb/b", "forgotten", None),  # ended, never downloaded: not fetchable from SERVED
    }
    assert dropped == ("tb/a",)
    assert after.lineage == recorded.lineage


def test_an_intent_is_refused_even_where_the_runs_are_kept(tmp_path: Path) -> None:
    intent = Intent(op="submit", started_at=NOW, body_digest="sha256:" + "b" * 64)
    written(tmp_path, state("local", entry("tb/a", None, intent=intent)))
    text = refusal(tmp_path, SERVED, probe={SERVED: "lp_mine"})
    assert "tb/a (a-run): a submit whose outcome is not known yet" in text
    assert "osmosis-state resolve" in text


def test_an_active_run_is_kept_on_the_same_local_platform(tmp_path: Path) -> None:
    written(tmp_path, state("local", entry("tb/a", "running")))
    assert "tb/a (a-run): running" in refusal(tmp_path, SERVED, probe={SERVED: "lp_other"})
    done = migrate(tmp_path, SERVED, probe={SERVED: "lp_mine"})
    assert done.kept and done.forgotten == ()
    on_disk = read_lockfile(tmp_path / "state" / "osmosis.lock", platform=SERVED, workspace="local")
    assert on_disk.runs["tb/a"].status == "running"
    assert on_disk.serial == done.before.serial + 1


def test_a_real_platforms_lockfile_and_the_same_platform_are_refused(tmp_path: Path) -> None:
    written(tmp_path, state("https://platform.osmosis.ai", entry("tb/a")))
    text = refusal(tmp_path, SERVED)
    assert "records runs of the Platform at https://platform.osmosis.ai" in text
    assert "never a real Platform's" in text
    written(tmp_path, state(SERVED, entry("tb/a")))
    assert f"already records {SERVED} (workspace local)" in refusal(tmp_path, SERVED + "/")


def test_plain_http_beyond_loopback_only_to_a_local_platform_that_says_so(
    tmp_path: Path,
) -> None:
    written(tmp_path, state("local", entry("tb/a")))
    remote = "http://laptop.example:8765"
    text = refusal(tmp_path, remote)
    assert f"Refusing plain-http Platform URL {remote}" in text
    assert "does not identify itself as a local Platform" in text
    done = migrate(tmp_path, remote, probe={remote: "lp_laptop"}, dry_run=True)
    assert done.warnings == (
        f"{remote} is a local Platform (instance lp_laptop) served over plain http beyond this "
        "machine: tokens travel in plaintext; use it for a try-out only",
    )
    assert done.after.platform == remote and not done.kept


def test_the_embedded_platform_is_not_a_target(tmp_path: Path) -> None:
    written(tmp_path, state(SERVED, entry("tb/a")))
    assert "not onto the embedded one" in refusal(tmp_path, "local")


def test_a_real_platform_needs_a_workspace(tmp_path: Path) -> None:
    written(tmp_path, state("local", entry("tb/a")))
    text = refusal(tmp_path, "https://platform.osmosis.ai")
    assert "no workspace selected for the new Platform" in text
