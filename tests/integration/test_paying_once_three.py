"""Paying once, round three (issue 34), over real git repositories and the local Platform on
loopback: each test reproduces a numbered item of the issue and failed on main (35dc349).

Ground truth is the Platform's own count of runs (``Platform.submits``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from reconciler.cli.apply import main as apply_main
from reconciler.cli.plan import main as plan_main
from reconciler.cli.results import main as results_main
from reconciler.config.spec import build_spec
from reconciler.local_platform import Faults, LocalPlatform
from reconciler.local_platform.faults import FaultInjector
from tests.support.clock import FakeClock
from tests.support.git import commit
from tests.support.osmosis import (
    COLLEAGUE_TOKEN,
    SECRET_VALUE_PREFIX,
    Osmosis,
    Platform,
    Result,
    _environ,
    cli_env,
    git,
    init_repo,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

THREE = {f"tb/c{i}": smoke_config(f"openai/gpt-5.{i}", comment=f"config {i}") for i in range(3)}


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's runtime directory, where machine-wide locks live, kept inside the test."""
    path = tmp_path / "runtime"
    path.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return path


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    served = start_platform(tmp_path / "platform")
    try:
        yield served
    finally:
        served.close()


class Osm(Osmosis):
    """``Osmosis`` with the runtime directory passed through: two clones on one machine
    share its machine-wide lock, the default for a loopback Platform."""

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        keep = {"XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "")}
        return super().env({**keep, **(extra or {})})


def two_clones(tmp_path: Path, configs: Mapping[str, str], pyproject: str | None = None):
    seed = init_repo(tmp_path / "seed", configs=configs, pyproject=pyproject)
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    clones = []
    for name in ("a", "b"):
        git(tmp_path, "clone", "-q", str(remote), name)
        clones.append(tmp_path / name)
    return clones


def lockfile(repo: Path) -> Path:
    return repo / "state" / "osmosis.lock"


# --------------------------------------------------------------------------- item 1


def test_item1_the_second_clone_on_one_machine_pays_for_no_twin(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    """Two clones, one loopback Platform, the machine-wide lock: the second apply has no
    evidence the first's runs are its own, so it must not pay for them again (main: 9
    duplicate runs in 3 rounds of 3 configs)."""
    a, b = two_clones(tmp_path, THREE)
    first = Osm(a, platform).apply("--auto-approve")
    assert first.code == 0, first
    assert platform.submits() == 3

    osm = Osm(b, platform)
    planned = plan_items(osm.plan("--format", "json"))
    assert {address: item["reason"] for address, item in planned.items()} == {
        address: "twin_active" for address in THREE
    }
    item = planned["tb/c0"]
    assert item["action"] == "blocked" and item["intended_action"] == "submit"
    assert "created by E2E Runner on " in item["details"][0]
    assert "osmosis-state adopt tb/c0 " in item["details"][1]
    assert "--allow-duplicate tb/c0" in item["details"][1]

    osm.apply("--auto-approve")
    assert platform.submits() == 3, "the second clone paid for a twin"


# --------------------------------------------------------------------------- item 2


def test_item2_a_hand_edited_run_id_pays_nothing_while_the_original_runs(
    tmp_path: Path, platform: Platform
) -> None:
    """A ``run_id`` edited to point at no run: the plan said "run missing" and the next
    apply submitted a second run while the original was still running."""
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve").code == 0
    text = lockfile(repo).read_text()
    (real,) = re.findall(r'^run_id = "([^"]+)"$', text, flags=re.M)
    lockfile(repo).write_text(text.replace(real, "bmr_00000000000000000000"))

    item = plan_items(osm.plan("--format", "json"))["tb/a"]
    assert item["action"] == "blocked" and item["reason"] == "run_missing_undecided"
    assert f"({real}) is " in item["details"][1]
    assert f"osmosis-state adopt tb/a {real}" in item["details"][2]

    osm.apply("--auto-approve")
    assert platform.submits() == 1, "the hand edit paid for a second run"


# --------------------------------------------------------------------------- item 4

HLE_SMOKE = """\
[tool.osmosis-reconciler]

[[tool.osmosis-reconciler.smoke]]
addresses = ["**"]
above = 100
"""


def hle_config(model: str) -> str:
    return (
        "[experiment]\n"
        'benchmark = "hle"\n\n'
        "[tasks]\n"
        'task_set = "parity"\n\n'
        "[[agents]]\n"
        'harness = "codex"\n\n'
        "[agents.model]\n"
        'type = "provider"\n'
        f'model = "{model}"\n'
        'api_key_secret = "OPENAI_API_KEY"\n\n'
        "[execution]\n"
        "attempts_per_task = 5\n"
        'judge_model = "openai/gpt-5.2"\n'
        'judge_api_key_secret = "OPENAI_API_KEY"\n'
    )


def test_item4_a_smoke_stage_that_cannot_be_made_fails_closed(
    tmp_path: Path, platform: Platform
) -> None:
    """HLE with ``task_set = "parity"`` (the docs' example): the catalog does not list the
    set's tasks, so no smoke run can be chosen (main: all 1,245 attempts submitted at once,
    with a warning, exit 0)."""
    repo = init_repo(
        tmp_path / "repo", configs={"hle/parity": hle_config("openai/gpt-5.2")}, pyproject=HLE_SMOKE
    )
    osm = Osmosis(repo, platform)
    plan = osm.plan("--format", "json")
    item = plan_items(plan)["hle/parity"]
    assert item["action"] == "blocked" and item["reason"] == "smoke_not_possible"
    assert "--skip-smoke hle/parity" in item["details"][1]
    assert plan.json()["summary"]["attempts"] == 0

    osm.apply("--auto-approve")
    assert platform.submits() == 0, "the full run was paid without its smoke run"

    # Going on, as the plan says: the full run straight away, on request.
    skipped = plan_items(osm.plan("--format", "json", "--skip-smoke", "hle/parity"))
    assert skipped["hle/parity"]["action"] == "submit"
    assert skipped["hle/parity"]["attempts"] == 1245


def test_item4_the_summary_says_what_the_smoke_runs_defer(
    tmp_path: Path, platform: Platform
) -> None:
    """The plan's total counted this apply's smoke attempts and left out the full runs the
    smoke runs release; now it says both, in the text plan and the PR comment."""
    every_task = '[tasks]\ntask_names = ["terminal-bench/git-multibranch"]\n\n'
    configs = {
        f"tb/m{i}": smoke_config(f"openai/gpt-5.{i}", attempts=2).replace(every_task, "")
        for i in range(4)
    }
    repo = init_repo(tmp_path / "repo", configs=configs, pyproject=HLE_SMOKE)
    osm = Osmosis(repo, platform)
    summary = osm.plan("--format", "json").json()["summary"]
    assert summary["attempts"] == 4 and summary["deferred"] == 4
    each = summary["deferred_each"]
    assert each is not None and each > 100
    line = f"4 attempts, dollars unknown; then 4 × {each:,} attempts after their smoke runs."
    assert line in osm.plan().out
    assert line in osm.plan("--format", "markdown").out


# --------------------------------------------------------------------------- item 5


class WithResults(Osmosis):
    def results(self, *args: str) -> Result:
        return self._call(results_main, list(args), None)


def test_item5_a_rerun_request_is_consumed_only_by_the_apply_that_carries_it_out(
    tmp_path: Path,
) -> None:
    """``osmosis-results accept`` plus the lockfile commit it asks for consumed two pending
    re-run requests, and nothing was printed (main: the trailers were read only since the
    lockfile's last commit)."""
    server = start_platform(tmp_path / "platform", speed=2000.0)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
        osm = WithResults(repo, server)
        done = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
        assert done.code == 0, done
        commit(repo, "Record tb/a")
        asked = commit(repo, "Re-run tb/a", "Osmosis-Rerun: tb/a", allow_empty=True)
        run = read_lock(repo)["runs"]["tb/a"]["run_name"]
        accepted = osm.results("accept", f"tb/a@{run}")
        assert accepted.code == 0, accepted
        commit(repo, "Accept the baseline of tb/a")

        planned = osm.plan("--format", "json")
        item = plan_items(planned)["tb/a"]
        assert item["action"] == "submit" and item["reason"] == "replace_requested"
        assert item["requested_by"] == asked
        assert any(
            f"pending re-run requests (Osmosis-Rerun): tb/a ({asked[:7]})" in w
            for w in planned.json()["warnings"]
        )
        applied = osm.apply("--auto-approve")
        assert applied.code == 0, applied
        assert server.submits() == 2
        assert read_lock(repo)["reruns"] == {"tb/a": [asked]}
        commit(repo, "Record the re-run")
        again = plan_items(osm.plan("--format", "json"))
        assert again.get("tb/a", {}).get("action") != "submit"
    finally:
        server.close()


def test_item5_a_lost_submit_adopted_later_consumes_no_request_made_since(
    tmp_path: Path, platform: Platform
) -> None:
    """A submit whose answer was lost, a re-run request committed, then the apply that
    adopts the lost submit's run: the adoption recorded its own commit as the run's, so the
    request counted as carried out and vanished (found by the lifecycle suite)."""
    faults = Faults(drop_after_submit_rate=1.0)
    platform.platform.faults = faults
    platform.platform.injector = FaultInjector(faults)
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    osm = Osmosis(repo, platform)
    lost = osm.apply("--auto-approve")  # the answer is dropped: the outcome is unknown
    assert lost.code != 0 and "intent" in read_lock(repo)["runs"]["tb/a"], lost
    commit(repo, "Record the lost submit")
    asked = commit(repo, "Re-run tb/a", "Osmosis-Rerun: tb/a", allow_empty=True)
    platform.platform.faults = Faults()
    platform.platform.injector = FaultInjector(Faults())

    adopted = osm.apply("--auto-approve")
    assert adopted.code == 0 and "<= tb/a: adopt" in adopted.out, adopted
    assert platform.submits() == 1
    commit(repo, "Record the adoption")
    planned = osm.plan("--format", "json")
    assert plan_items(planned)["tb/a"]["reason"] == "replace_requested", planned
    assert any(
        f"pending re-run requests (Osmosis-Rerun): tb/a ({asked[:7]})" in w
        for w in planned.json()["warnings"]
    ), planned
    rerun = osm.apply("--auto-approve")
    assert rerun.code == 0, rerun
    assert platform.submits() == 2
    assert read_lock(repo)["reruns"] == {"tb/a": [asked]}


# --------------------------------------------------------------------------- the way on


def test_allow_duplicate_pays_for_another_run_on_request(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    a, b = two_clones(tmp_path, {"tb/c0": THREE["tb/c0"]})
    assert Osm(a, platform).apply("--auto-approve").code == 0
    osm = Osm(b, platform)
    osm.apply("--auto-approve")
    assert platform.submits() == 1
    done = osm.apply("--auto-approve", "--allow-duplicate", "tb/*")
    assert done.code == 0, done
    assert platform.submits() == 2


# --------------------------------------------------------------------------- item 8

SMOKE_TB = """\
[tool.osmosis-reconciler]

[[tool.osmosis-reconciler.smoke]]
addresses = ["tb/full"]
above = 10
"""
FINISHED = 4000.0
"""Seconds after which every run of these tests has ended on the local Platform."""


def failing_full_config() -> str:
    """Every Terminal-Bench task, twice, against an endpoint that fails every attempt."""
    return (
        "[experiment]\n"
        'benchmark = "terminal-bench-2-1"\n\n'
        "[[agents]]\n"
        'harness = "terminus-2"\n\n'
        "[agents.model]\n"
        'type = "endpoint"\n'
        'model = "my-org/model"\n'
        'base_url = "https://always-errors.example.invalid/v1"\n'
        'api_key_secret = "MY_ENDPOINT_KEY"\n\n'
        "[execution]\n"
        "attempts_per_task = 2\n"
        "max_concurrent_attempts = 4\n"
    )


def test_item8_a_standing_block_turns_neither_applies_nor_plans_red(tmp_path: Path) -> None:
    """A full run blocked after its smoke run failed made every later apply exit 3 ("1
    failed"), an unrelated stop included, until someone edited the config."""
    clock = FakeClock()
    server = start_platform(tmp_path / "platform", clock=clock)
    try:
        repo = init_repo(
            tmp_path / "repo", configs={"tb/full": failing_full_config()}, pyproject=SMOKE_TB
        )
        osm = Osmosis(repo, server)
        assert osm.apply("--auto-approve").code == 0
        clock.advance(FINISHED)

        # New: the plan that first sees the smoke run fail fails the check (exit 4).
        first = osm.plan("--format", "json")
        assert first.code == 4, first
        item = plan_items(first)["tb/full"]
        assert item["reason"] == "smoke_failed" and item["standing"] is False

        # The apply reports the block, attempts nothing for it, and is not red.
        applied = osm.apply("--auto-approve")
        assert applied.code == 0, applied
        assert "1 blocked (not attempted)" in applied.text
        assert read_lock(repo)["runs"]["tb/full"]["status"] == "failed"
        commit(repo, "Record the smoke run's end")

        # Standing now: listed in every plan and PR comment, but the check stays green.
        again = osm.plan("--format", "json")
        assert again.code == 0, again
        assert plan_items(again)["tb/full"]["standing"] is True
        assert "standing: this block is recorded in the lockfile" in osm.plan().out
        assert "standing: this block is recorded" in osm.plan("--format", "markdown").out

        # An unrelated submit and then its stop apply green beside the standing block.
        write_config(repo, "tb/late", smoke_config("openai/gpt-5.9"))
        commit(repo, "Add tb/late")
        assert osm.apply("--auto-approve").code == 0
        (repo / "benchmarks" / "tb" / "late.toml").unlink()
        commit(repo, "Drop tb/late")
        stopped = osm.apply("--auto-approve")
        assert stopped.code == 0, stopped
        assert "stop" in stopped.text
        assert server.submits() == 2
    finally:
        server.close()


# --------------------------------------------------------------------------- item 3


def on_embedded(repo: Path, main: Callable[[list[str]], int], *args: str) -> Result:
    """A command against the clone's embedded Platform (``--platform local``), no token,
    with the secret the configs reference stored there."""
    local = LocalPlatform(repo / ".osmosis" / "local-platform", auto_workspaces=True)
    local.set_secret("local", "OPENAI_API_KEY", SECRET_VALUE_PREFIX + "openai_api_key")
    env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
    out, err = io.StringIO(), io.StringIO()
    with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--dir", str(repo), "--platform", "local", "--no-color", *args])
    return Result(code, out.getvalue(), err.getvalue())


def test_item3_a_clone_of_another_machines_try_out_pays_for_nothing(tmp_path: Path) -> None:
    """A teammate's clone of a repository whose lockfile was written against the embedded
    Platform planned every recorded run as missing and, once their secrets were set, 12
    submits ($437); nothing said the lockfile was another machine's."""
    configs = {f"tb/m{i}": smoke_config(f"openai/gpt-5.{i}") for i in range(3)}
    mine = init_repo(tmp_path / "mine", configs=configs)
    applied = on_embedded(mine, apply_main, "--auto-approve")
    assert applied.code == 0, applied
    assert read_lock(mine)["platform_instance"].startswith("lp_")
    commit(mine, "Record the try-out")
    git(tmp_path, "clone", "-q", str(mine), "theirs")
    theirs = tmp_path / "theirs"

    plan = on_embedded(theirs, plan_main, "--format", "json")
    assert plan.code == 0, plan
    document = json.loads(plan.out)
    assert document["actions"] == [] and document["summary"]["attempts"] == 0
    (message,) = [w for w in document["warnings"] if "another machine" in w]
    assert "none of its 3 recorded run(s) exist here" in message
    assert "docs/local-platform.md" in message
    on_embedded(theirs, apply_main, "--auto-approve")
    local = LocalPlatform(theirs / ".osmosis" / "local-platform", auto_workspaces=True)
    assert local.submit_count("local") == 0


# --------------------------------------------------------------------------- item 7


def body_of(config: str) -> dict:
    """The submit body a config asks for (what a person submitting it by hand sends)."""
    return build_spec(tomllib.loads(config))


def test_item7_resolve_accepts_only_the_run_the_lost_submit_created(tmp_path: Path) -> None:
    """``resolve --submitted RUN`` believed any id: after an ordinary edit of the config,
    the next apply stopped another user's running run as a replace."""
    clock = FakeClock()
    platform = start_platform(tmp_path / "p", clock=clock)
    try:
        with contextlib.closing(platform.client(COLLEAGUE_TOKEN)) as colleague:
            theirs = colleague.submit_run(body_of(smoke_config("openai/gpt-5-mini")))
            now = clock.now
            clock.now = now - 7200  # an identical run made two hours before the submit
            early = colleague.submit_run(body_of(smoke_config()))
            clock.now = now
        faults = Faults(drop_after_submit_rate=1.0, list_omit_rate=1.0)
        platform.platform.faults = faults
        platform.platform.injector = FaultInjector(faults)
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()}), platform)
        osm.apply("--auto-approve")  # the answer is dropped: the outcome is unknown
        assert "? tb/a" in osm.plan().out
        rows = platform.platform.store.read().execute("SELECT id FROM runs").fetchall()
        (ours,) = {str(row[0]) for row in rows} - {theirs.id, early.id}

        other = osm.state("resolve", "tb/a", "--submitted", theirs.id)
        assert other.code == 1, other
        assert "cannot be the run the lost submit of tb/a created" in other.err
        assert "the run differs from the body that was sent" in other.err
        assert "openai/gpt-5-mini" in other.err
        before = osm.state("resolve", "tb/a", "--submitted", early.id)
        assert before.code == 1, before
        assert "before the submit started" in before.err
        assert "intent" in read_lock(osm.repo)["runs"]["tb/a"]

        done = osm.state("resolve", "tb/a", "--submitted", ours)
        assert done.code == 0, done
        assert read_lock(osm.repo)["runs"]["tb/a"]["run_id"] == ours
        assert platform.submits() == 3
    finally:
        platform.close()


# --------------------------------------------------------------------------- adopt


def test_adopt_records_the_twin_the_plan_names_checked_against_the_config(
    tmp_path: Path, platform: Platform, runtime_dir: Path
) -> None:
    a, b = two_clones(tmp_path, THREE)
    assert Osm(a, platform).apply("--auto-approve").code == 0
    theirs = read_lock(a)["runs"]
    osm = Osm(b, platform)

    wrong = osm.state("adopt", "tb/c0", theirs["tb/c1"]["run_id"])
    assert wrong.code == 1, wrong
    assert "does not do what benchmarks/tb/c0.toml asks" in wrong.err
    assert "agents[0].model" in wrong.err

    for address in THREE:
        done = osm.state("adopt", address, theirs[address]["run_id"])
        assert done.code == 0, done
        assert "nothing was paid" in done.out
    assert {a: e["run_id"] for a, e in read_lock(b)["runs"].items()} == {
        a: e["run_id"] for a, e in theirs.items()
    }
    assert plan_items(osm.plan("--format", "json")) == {}
    assert osm.apply("--auto-approve").code == 0
    assert platform.submits() == 3


# --------------------------------------------------------------------------- item 6

HLE_POLICY = """\
[tool.osmosis-reconciler]

[[tool.osmosis-reconciler.policy]]
name = "hle on anthropic only"
benchmark = "hle"
models = ["anthropic/*"]
"""


def test_item6_a_deny_rule_holds_however_the_config_spells_its_benchmark(
    tmp_path: Path, platform: Platform
) -> None:
    """A rule on ``benchmark = "hle"`` matched the text: ``benchmark = "HLE"`` (the catalog's
    name for the same benchmark, which the Platform accepts) escaped it, and a run was
    paid."""
    spelled = hle_config("openai/gpt-5.2").replace('benchmark = "hle"', 'benchmark = "HLE"')
    repo = init_repo(tmp_path / "repo", configs={"hle/parity": spelled}, pyproject=HLE_POLICY)
    osm = Osmosis(repo, platform)
    plan = osm.plan()
    assert plan.code == 1, plan
    assert 'policy "hle on anthropic only"' in plan.text
    assert 'model "openai/gpt-5.2" is not allowed' in plan.text
    osm.apply("--auto-approve")
    assert platform.submits() == 0
