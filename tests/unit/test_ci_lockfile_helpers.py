"""osmosis-ci's lockfile side: commit messages from the plan JSON and the lockfile before and
after, the lockfile commit and its rebase, the results directory, and announcements (once;
updated rather than posted twice; old runs marked quietly) against the loopback fake GitHub.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reconciler.ci.announce import announce, announce_state, marker, status_description
from reconciler.ci.commit import commit_lockfile, commit_message, copy_results, lockfile_changes
from reconciler.ci.github import GitHubAPI
from reconciler.errors import GitError
from reconciler.model import Baseline, HistoryEntry, Intent, LockState, selection_digest
from reconciler.state.lockfile import parse, serialize, write_lockfile
from tests.support.git import AUTHOR, git, make_clones
from tests.support.github_fake import FakeGitHub
from tests.support.plan_fixtures import SHA, done, entry, lock
from tests.unit.test_results import agent, results

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


# --------------------------------------------------------------------------- commit message


def test_the_message_says_what_the_lockfile_shows_happened() -> None:
    before = lock(entry("tb/a", "r1"), entry("tb/b", "r2"), entry("tb/gone", "r3", "finished"))
    after = lock(
        entry("tb/a", "r1", "finished", downloads=done(), results=results(agent(0, 0.5))),
        entry("tb/b", "r9"),
        entry("tb/new", "r10"),
        entry("tb/lost", "x").model_copy(
            update={
                "run_id": None,
                "run_name": None,
                "intent": Intent(op="submit", started_at=NOW, body_digest="sha256:x"),
            }
        ),
        history=(
            HistoryEntry(
                address="tb/gone",
                run_id="r3",
                run_name="name-r3",
                spec_digest="sha256:0",
                status="finished",
                reason="forgotten",
            ),
        ),
    )
    plan = {
        "actions": [
            {"action": "download", "address": "tb/a"},
            {"action": "replace", "address": "tb/b"},
            {"action": "submit", "address": "tb/new"},
            {"action": "submit", "address": "tb/lost"},
            {"action": "forget", "address": "tb/gone"},
            {"action": "submit", "address": "tb/failed"},
            {"action": "blocked", "address": "tb/blocked", "details": ["secret X missing"]},
        ],
        "summary": {
            "submit": 3,
            "replace": 1,
            "stop": 0,
            "download": 1,
            "forget": 1,
            "attempts": 4,
        },
    }
    message = commit_message(
        title="osmosis-apply",
        before=before,
        after=after,
        plan=plan,
        exit_code=3,
        sha="abc",
        run_url="https://gh/run/1",
    )
    subject, _, body = message.partition("\n\n")
    assert subject == (
        "osmosis-apply: 1 submitted, 1 replaced, 1 forgotten, 1 downloaded, "
        "1 status update(s), 1 in flight (partial) [skip ci]"
    )
    assert "↓ tb/a: downloaded 1 file(s) of name-r1 (r1) and its scores" in body
    assert "~ tb/a: name-r1 (r1): running -> finished" in body
    assert "-/+ tb/b: replaced name-r9 (r9)" in body
    assert "+ tb/new: submitted name-r10 (r10)" in body
    assert "? tb/lost: a submit is in flight" in body
    assert ". tb/gone: forgotten name-r3 (r3)" in body
    assert "! tb/failed: submit not applied (see the job)" in body
    assert "! tb/blocked: blocked: secret X missing" in body
    assert (
        "Plan: 3 to submit, 1 to replace, 0 to stop, 1 to download, 1 to forget; 4 attempts."
        in body
    )
    assert body.rstrip().endswith("Workflow run: https://gh/run/1")


def test_nothing_planned_and_nothing_changed() -> None:
    state = lock(entry("tb/a", "r1"))
    assert lockfile_changes(state, state, {}) == []
    first = lockfile_changes(None, state, {"actions": [{"action": "adopt", "address": "tb/a"}]})
    assert [c.line() for c in first] == ["<= tb/a: adopted name-r1 (r1)"]


# --------------------------------------------------------------------------- commit + push


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_clones(tmp_path)


def test_commit_lockfile_replays_on_a_moved_branch_as_the_bot(
    clones: tuple[Path, Path, Path],
) -> None:
    remote, a, b = clones
    (b / "notes.md").write_text("meanwhile\n")
    git(b, "add", "-A")
    git(b, "commit", "-q", "-m", "meanwhile")
    git(b, "push", "-q", "origin", "main")
    write_lockfile(a / "state" / "osmosis.lock", lock(entry("tb/a", "r1")))
    naps: list[float] = []
    pushed = commit_lockfile(
        a,
        ["state/osmosis.lock", "results"],
        "osmosis-apply: x [skip ci]\n",
        branch="main",
        sleep=naps.append,
    )
    assert pushed.sha is not None and pushed.attempts == 2 and naps == [2.0]
    log = git(remote, "log", "--format=%s|%ae", "main")
    assert log.splitlines() == [
        "osmosis-apply: x [skip ci]|41898282+github-actions[bot]@users.noreply.github.com",
        f"meanwhile|{AUTHOR[1]}",
        f"init|{AUTHOR[1]}",
    ]
    again = commit_lockfile(a, ["state/osmosis.lock"], "unused\n", branch="main")
    assert again.sha is None


def test_commit_lockfile_conflict_is_a_git_error(clones: tuple[Path, Path, Path]) -> None:
    _remote, a, b = clones
    for repo, serial in ((b, 1), (a, 2)):
        (repo / "state").mkdir(exist_ok=True)
        (repo / "state" / "osmosis.lock").write_text(f"serial = {serial}\n")
    git(b, "add", "-A")
    git(b, "commit", "-q", "-m", "hand edit")
    git(b, "push", "-q", "origin", "main")
    with pytest.raises(GitError, match="conflicts with origin/main"):
        commit_lockfile(a, ["state/osmosis.lock"], "m\n", branch="main", sleep=lambda s: None)
    assert git(a, "status", "--porcelain").count("rebase") == 0


def test_results_directory_gets_digest_checked_summary_and_results(tmp_path: Path) -> None:
    run_dir = tmp_path / ".osmosis" / "benchmarks" / "run"
    (run_dir / "artifacts" / "x" / "y").mkdir(parents=True)
    files = {"summary.csv": b"a,b\n1,2\n", "results.csv": b"task,pass\nt,1\n", "logs.txt": b"l"}
    for name, data in files.items():
        (run_dir / name).write_bytes(data)
    (run_dir / "artifacts" / "x" / "y" / "z.json").write_bytes(b"{}")
    sha = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
    sha["artifacts/x/y/z.json"] = hashlib.sha256(b"{}").hexdigest()
    sha["results.csv"] = "0" * 64  # changed on disk since: never committed
    state = lock(entry("tb/a", "r1", "finished", downloads=done(sha)))
    assert copy_results(tmp_path, state, "results") == ["results/tb/a/summary.csv"]
    assert (tmp_path / "results" / "tb" / "a" / "summary.csv").read_bytes() == files["summary.csv"]
    assert copy_results(tmp_path, state, "results") == []  # unchanged: nothing rewritten
    with pytest.raises(Exception, match="inside the repository"):
        copy_results(tmp_path, state, "../elsewhere")


# --------------------------------------------------------------------------- announce


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repo="o/r").start()
    yield fake
    fake.close()


def finished(address: str = "tb/a", run_id: str = "r1", **update: object):
    fields: dict[str, object] = {
        "downloads": done(),
        "results": results(agent(0, 0.75, cost_per_task=0.12)),
        "platform_url": f"https://platform.osmosis.ai/runs/{run_id}",
        **update,
    }
    return entry(address, run_id, "finished", **fields)


def test_a_finished_run_is_announced_once_on_its_pull_request_and_commit(
    github: FakeGitHub,
) -> None:
    github.add_pull(7, SHA, merge_commit_sha="d" * 40)
    github.add_pull(8, SHA, merged=False)  # also holds the commit, not merged: not told
    state = lock(finished(), entry("tb/running", "r2"))
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        updated, report = announce_state(api, state, now=NOW, run_url="https://gh/run/9")
        assert report.failed == [] and len(report.posted) == 1
        assert updated.runs["tb/a"].announced_at == NOW
        assert updated.runs["tb/running"].announced_at is None
        (body,) = github.bodies(7)
        assert body.startswith(marker("r1"))
        assert "| `tb/a` |" in body and "75.0% [70.0–80.0]" in body and "$0.12" in body
        assert github.bodies(8) == []
        (status,) = github.statuses[SHA]
        assert status["state"] == "success" and status["context"] == "osmosis/tb/a"
        assert status["target_url"] == "https://platform.osmosis.ai/runs/r1"
        assert status["description"].startswith("pass@1 75.0% (70–80) $0.12/task")
        # Announced: nothing more, ever (the lockfile says so).
        writes = list(github.writes())
        again, report = announce_state(api, updated, now=NOW)
        assert again is updated and github.writes() == writes


def test_a_job_that_died_before_committing_updates_its_comment_instead_of_posting_twice(
    github: FakeGitHub,
) -> None:
    github.add_pull(7, SHA)
    state = lock(finished())
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        announce_state(api, state, now=NOW)  # the lockfile with announced_at is lost
        announce_state(api, state, now=NOW)
    assert len(github.bodies(7)) == 1


def test_old_runs_and_runs_without_a_commit_are_marked_without_posting(
    github: FakeGitHub,
) -> None:
    old = finished("tb/old", "r5", observed_at=NOW - timedelta(days=40))
    orphan = finished("tb/orphan", "r6", requested_by=None)
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        updated, report = announce_state(api, lock(old, orphan), now=NOW)
    assert sorted(report.skipped) == [
        "tb/old r5 (older than max age)",
        "tb/orphan r6 (no requesting commit)",
    ]
    assert all(e.announced_at == NOW for e in updated.runs.values())
    assert github.writes() == [] and github.requests == []


def test_a_github_failure_leaves_the_run_for_the_next_time(
    github: FakeGitHub, tmp_path: Path
) -> None:
    github.add_pull(7, SHA)
    github.fail[("POST", r"/repos/o/r/statuses/.*")] = 403
    path = tmp_path / "state" / "osmosis.lock"
    write_lockfile(path, lock(finished()))
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        report = announce(api, path, now=lambda: NOW)
    assert len(report.failed) == 1 and "HTTP 403" in report.failed[0]
    assert parse(path.read_text(), "x").runs["tb/a"].announced_at is None
    github.fail.clear()
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        report = announce(api, path, now=lambda: NOW)
    assert report.failed == [] and len(github.bodies(7)) == 1  # updated, not posted again
    announced = parse(path.read_text(), "x").runs["tb/a"]
    assert announced.announced_at == NOW
    assert "announced_at = 2026-09-01T12:00:00Z" in serialize(lock(announced))


def test_status_description_fits_githubs_140_characters() -> None:
    many = results(*(agent(i, 0.5, model="m" * 60) for i in range(5)))
    assert status_description(finished(results=many), []) == "run name-r1 finished"
    from reconciler.plan import result_rows

    rows = result_rows(lock(finished(results=many)))
    assert len(status_description(finished(results=many), rows)) <= 140


# --------------------------------------------------------------------------- announce: verdicts


def _gone(run_id: str, p1: float, status: str = "finished") -> HistoryEntry:
    base = finished("tb/a", run_id)
    return HistoryEntry(
        address="tb/a",
        run_id=run_id,
        run_name=f"name-{run_id}",
        spec_digest=base.spec_digest,
        status=status,
        reason="rerun",
        requested_by=SHA,
        results=results(agent(0, p1)),
        benchmark_id=base.benchmark_id,
        task_count=base.task_count,
        selection=selection_digest(base.spec),
    )


def _announced(github: FakeGitHub, state: LockState, **kw: object) -> str:
    github.add_pull(7, SHA)
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        _updated, report = announce_state(api, state, now=NOW, **kw)  # type: ignore[arg-type]
    assert report.failed == [], report.failed
    (body,) = github.bodies(7)
    return body


def test_the_announcement_compares_with_the_previous_comparable_run_and_draws_a_trend(
    github: FakeGitHub,
) -> None:
    current = finished(results=results(agent(0, 0.75, n=200)))
    state = lock(current, history=(_gone("r0", 0.70),))
    body = _announced(github, state)
    table = body.index("| `tb/a` |")
    against = body.index("#### Against the previous comparable run `tb/a@name-r0`")
    assert table < against  # the table stays the primary content
    assert "For reading: the regression gate compares with an accepted baseline" in body
    assert "**tb/a@name-r1** vs **tb/a@name-r0**: **" in body
    assert "| normal (unpaired), p = " in body
    assert "_note: unpaired comparison of the Platform summaries (name-r0: results.csv not" in body
    assert "```mermaid\nxychart-beta\n" in body
    assert '  x-axis ["name-r0", "name-r1"]' in body
    assert "  line [70.0, 75.0]" in body


def test_the_announcement_compares_with_the_accepted_baseline_when_there_is_one(
    github: FakeGitHub,
) -> None:
    baseline = Baseline(run_id="rb", run_name="name-rb", accepted_at=NOW)
    state = lock(finished(), history=(_gone("r0", 0.74), _gone("rb", 0.2))).model_copy(
        update={"baselines": {"tb/a": baseline}}
    )
    body = _announced(github, state)
    assert "#### Against the accepted baseline `tb/a@name-rb`" in body
    assert "previous comparable run" not in body
    assert "**tb/a@name-r1** vs **tb/a@name-rb**: **better**" in body
    assert "  line [20.0, 74.0, 75.0]" in body  # oldest first


def test_a_partial_or_lone_run_gets_no_comparison_and_no_trend(github: FakeGitHub) -> None:
    # The only older run failed: partial, so never the previous one, nor a trend point.
    state = lock(finished(), history=(_gone("r0", 0.9, status="failed"),))
    body = _announced(github, state)
    assert (
        "_No earlier comparable run of `tb/a` to compare with (name-r0 is partial (failed))._"
        in body
    )
    assert "mermaid" not in body and "Against" not in body


def test_the_announcement_pairs_on_the_runs_files_in_the_repository(
    github: FakeGitHub, tmp_path: Path
) -> None:
    # Per-task files of both runs kept in the repository: the comparison is paired, with the
    # tasks that flipped; the verdict on 40 tasks, 30 of them down, is "worse".
    def csv(passed: int) -> str:
        rows = [f"t{i:02d},{'passed' if i < passed else 'failed'}" for i in range(40)]
        return "task,outcome\n" + "\n".join(rows) + "\n"

    for run_id, passed in (("r0", 36), ("r1", 6)):
        kept = tmp_path / "results" / "tb" / "a" / f"name-{run_id}"
        kept.mkdir(parents=True)
        (kept / "results.csv").write_text(csv(passed))
    path = tmp_path / "state" / "osmosis.lock"
    current = finished(results=results(agent(0, 0.15, n=40)))
    write_lockfile(path, lock(current, history=(_gone("r0", 0.9),)))
    github.add_pull(7, SHA)
    with GitHubAPI("o/r", token=github.token, api_url=github.url) as api:
        report = announce(api, path, now=lambda: NOW, repo_root=tmp_path)
    assert report.failed == []
    (body,) = github.bodies(7)
    assert "**tb/a@name-r1** vs **tb/a@name-r0**: **worse beyond the margin**" in body
    assert "| mcnemar exact, p = &lt; 0.001 | worse beyond the margin |" in body
    assert "_note: unpaired" not in body
    assert "down in RIGHT (30): t06, t07" in body
