"""Another repository adopts the tool exactly as docs/ci.md's set-up says (issue 15).

A consumer repository (real git, a bare remote) holds one config and the four workflow
files copied from docs/ci.md; its workflows run step by step through
``actions_runner.Runner`` (the action's own ``run:`` steps, inputs, outputs, GITHUB_OUTPUT),
against ``osmosis-platform-emulator serve`` on loopback and a fake GitHub on loopback:

1. a pull request gets its sticky plan comment;
2. the merge apply submits the run and commits the lockfile as the bot, ``[skip ci]``;
3. a later collect downloads the finished run, commits its results, posts one results
   comment on that pull request and a status on the requesting commit;
4. a second collect posts nothing new and commits nothing;
5. a fresh clone plans "No changes" (exit 0 with --detailed-exitcode) and downloads nothing.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.platform import PlatformClient
from tests.support import docs
from tests.support.emulator import EmulatorProcess
from tests.support.git import git, git_run
from tests.support.github_fake import FakeGitHub
from tests.support.osmosis import PROJECT_ROOT, smoke_config

from .actions_runner import Runner, find_environment

ACTION_REF = docs.action_ref()
WORKSPACE = "acme-bench"
TOKEN = "osm-consumer-token-not-printed"
DEV = ("Dev", "dev@example.com")
BIN = Path(sys.executable).parent


@pytest.fixture
def platform(tmp_path: Path, start_emulator) -> Iterator[EmulatorProcess]:
    data = tmp_path / "platform-data"
    subprocess.run(
        [
            str(BIN / "osmosis-platform-emulator"),
            "secret",
            "set",
            "OPENAI_API_KEY",
            "--workspace",
            WORKSPACE,
            "--data",
            str(data),
        ],
        input="sk-consumer-secret-value\n",
        text=True,
        check=True,
        capture_output=True,
    )
    yield start_emulator("--speed", "2000", "--workspace", WORKSPACE, data_dir=data)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(repo="acme/bench").start()
    yield fake
    fake.close()


def run_status(platform: EmulatorProcess, run_id: str) -> str:
    with contextlib.closing(PlatformClient(platform.url, token=TOKEN, workspace=WORKSPACE)) as c:
        return c.get_run(run_id).summary.status


def remote_file(remote: Path, path: str, ref: str = "main") -> str:
    return git_run(remote, "show", f"{ref}:{path}").stdout


def test_the_documented_set_up_plans_applies_collects_and_announces_once(
    tmp_path: Path, platform: EmulatorProcess, github: FakeGitHub
) -> None:
    workflows = docs.workflow_files()
    assert sorted(workflows) == [
        "osmosis-apply.yml",
        "osmosis-collect.yml",
        "osmosis-drift.yml",
        "osmosis-plan.yml",
    ]
    # -- the consumer repository: the set-up's workflows, nothing else copied ---------------
    remote = tmp_path / "bench.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(remote), str(dev))
    git(dev, "checkout", "-q", "-b", "main")
    (dev / ".github" / "workflows").mkdir(parents=True)
    for name, text in workflows.items():
        (dev / ".github" / "workflows" / name).write_text(text, encoding="utf-8")
    (dev / ".gitignore").write_text(".osmosis/\n", encoding="utf-8")
    (dev / "README.md").write_text("Our benchmark runs.\n", encoding="utf-8")
    git(dev, "add", "-A")
    git(dev, "commit", "-q", "-m", "Adopt osmosis-reconciler", author=DEV)
    git(dev, "push", "-q", "origin", "main")

    runner = Runner(
        remote=remote,
        work=tmp_path / "runner",
        repository=github.repo,
        actions={ACTION_REF: PROJECT_ROOT},
        secrets={"OSMOSIS_TOKEN": TOKEN},
        variables={"OSMOSIS_WORKSPACE": WORKSPACE, "OSMOSIS_PLATFORM_URL": platform.url},
        env={
            **find_environment(BIN),
            "GITHUB_API_URL": github.url,
            "HOME": str(tmp_path),
            "GIT_CONFIG_NOSYSTEM": "1",
        },
        github_token=github.token,
    )
    workflow_dir = dev / ".github" / "workflows"

    # -- 1. a pull request adds a config: one sticky plan comment ---------------------------
    git(dev, "checkout", "-q", "-b", "add-smoke")
    (dev / "benchmarks" / "terminal-bench").mkdir(parents=True)
    (dev / "benchmarks" / "terminal-bench" / "smoke.toml").write_text(smoke_config())
    git(dev, "add", "-A")
    git(dev, "commit", "-q", "-m", "Add the Terminal-Bench smoke run", author=DEV)
    requested = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "add-smoke")
    pull = github.add_pull(7, requested, merged=False, commits=(requested,))
    pr_event = {"pull_request": {"number": 7, "head": {"sha": requested}}}
    for _push in range(2):  # a second push to the pull request updates the same comment
        plan = runner.run_job(
            workflow_dir / "osmosis-plan.yml",
            "plan",
            "pull_request",
            pr_event,
            sha=requested,
            base_ref="main",
            ref="refs/pull/7/merge",
            ref_name="7/merge",
        )
        assert plan.ok, plan.log
    comments = github.bodies(7)
    assert len(comments) == 1, comments
    assert comments[0].startswith("<!-- osmosis-reconciler:plan")
    assert "terminal-bench/smoke" in comments[0] and "1 to submit" in comments[0]
    with contextlib.closing(PlatformClient(platform.url, token=TOKEN, workspace=WORKSPACE)) as c:
        assert c.list_runs() == [], "planning a pull request must not submit"

    # -- 2. merged: the apply submits and commits the lockfile ------------------------------
    git(dev, "checkout", "-q", "main")
    git(dev, "merge", "-q", "--no-ff", "add-smoke", "-m", "Merge pull request #7", author=DEV)
    merge = git(dev, "rev-parse", "HEAD")
    git(dev, "push", "-q", "origin", "main")
    pull.merged, pull.merge_commit_sha = True, merge
    push_event = {
        "head_commit": {"id": merge, "author": {"email": DEV[1]}},
        "repository": {"default_branch": "main"},
    }
    apply = runner.run_job(
        workflow_dir / "osmosis-apply.yml", "apply", "push", push_event, sha=merge
    )
    assert apply.ok, apply.log
    assert "osmosis-apply: 1 submitted [skip ci]" in git(remote, "log", "-1", "--format=%B")
    assert (
        git(remote, "log", "-1", "--format=%ae")
        == "41898282+github-actions[bot]@users.noreply.github.com"
    )
    lock = remote_file(remote, "state/osmosis.lock")
    run_id = re.search(r'^run_id = "([^"]+)"', lock, re.M).group(1)  # type: ignore[union-attr]
    assert f'requested_by = "{requested}"' in lock
    # The bot's own push would be refused by the job's `if` (a PAT push starts workflows).
    bot_event = {
        **push_event,
        "head_commit": {
            "author": {"email": "41898282+github-actions[bot]@users.noreply.github.com"}
        },
    }
    assert not runner.run_job(workflow_dir / "osmosis-apply.yml", "apply", "push", bot_event).ran

    # -- 3. the run ends; the hourly collect downloads, commits and announces ---------------
    deadline = time.monotonic() + 60
    while run_status(platform, run_id) not in ("finished", "failed"):
        assert time.monotonic() < deadline, "the run never ended"
        time.sleep(0.2)
    status = run_status(platform, run_id)
    schedule = {"repository": {"default_branch": "main"}}
    head_before_collect = git(remote, "rev-parse", "main")
    collect = runner.run_job(workflow_dir / "osmosis-collect.yml", "collect", "schedule", schedule)
    assert collect.ok, collect.log
    assert git(remote, "rev-parse", "main^") == head_before_collect
    message = git(remote, "log", "-1", "--format=%B")
    assert message.startswith("osmosis-collect: ") and "[skip ci]" in message
    assert "downloaded" in message
    lock = remote_file(remote, "state/osmosis.lock")
    assert f'status = "{status}"' in lock
    assert "announced_at = " in lock
    assert '[runs."terminal-bench/smoke".results]' in lock
    committed = git(remote, "ls-tree", "-r", "--name-only", "main", "results/")
    assert "results/terminal-bench/smoke/summary.csv" in committed.splitlines()
    bodies = github.bodies(7)
    assert len(bodies) == 2, bodies
    results = bodies[1]
    assert results.startswith(f"<!-- osmosis-reconciler:results run={run_id} -->")
    assert "| pass@1 [95% CI] · errored |" in results and "`terminal-bench/smoke`" in results
    statuses = github.statuses[requested]
    assert len(statuses) == 1
    assert statuses[0]["context"] == "osmosis/terminal-bench/smoke"
    assert statuses[0]["state"] == {"finished": "success", "failed": "failure"}[status]

    # -- 4. the next collect finds nothing to do: no comment, no status, no commit ---------
    writes = list(github.writes())
    head = git(remote, "rev-parse", "main")
    again = runner.run_job(workflow_dir / "osmosis-collect.yml", "collect", "schedule", schedule)
    assert again.ok, again.log
    assert github.writes() == writes, github.writes()[len(writes) :]
    assert git(remote, "rev-parse", "main") == head, git(remote, "show", "--stat", "main")
    assert "did not change; nothing to commit" in again.log

    # -- 5. a fresh clone converges: No changes, and nothing downloaded ----------------------
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(remote), str(fresh))
    env = {
        **runner.env,
        "OSMOSIS_TOKEN": TOKEN,
        "OSMOSIS_WORKSPACE": WORKSPACE,
        "OSMOSIS_PLATFORM_URL": platform.url,
    }
    planned = subprocess.run(
        [str(BIN / "osmosis-plan"), "--detailed-exitcode", "--no-color"],
        cwd=fresh,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "No changes." in planned.stdout
    applied = subprocess.run(
        [str(BIN / "osmosis-apply"), "--auto-approve", "--no-color", "--lock-timeout", "30"],
        cwd=fresh,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert not (fresh / ".osmosis" / "benchmarks").exists(), "nothing may be fetched again"
    # Neither token ever reached a log, a comment or a commit.
    logs = [plan.log, apply.log, collect.log, again.log, message, *github.bodies(7)]
    for text in logs + [remote_file(remote, "state/osmosis.lock")]:
        assert TOKEN not in text and github.token not in text
    assert json.loads(json.dumps(github.statuses))  # the fake's state stays JSON
