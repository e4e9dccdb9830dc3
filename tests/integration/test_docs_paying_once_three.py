"""docs/paying-once.md's rules of issue 34 run as written: each section's ``sh`` blocks in one
bash process, in a repository set up as the section says, against a loopback local Platform
(or the embedded one); each ``text`` block that follows an ``sh`` block matches its output
line by line (``...`` stands for an id, a name or a time)."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import tomllib
from collections.abc import Mapping
from pathlib import Path

from reconciler.cli.apply import main as apply_main
from reconciler.config.spec import build_spec
from reconciler.local_platform import Faults, LocalPlatform
from tests.support.clock import FakeClock
from tests.support.docs import DOCS, blocks
from tests.support.git import commit, git
from tests.support.osmosis import (
    COLLEAGUE_TOKEN,
    SECRET_VALUE_PREFIX,
    Osmosis,
    Platform,
    _environ,
    cli_env,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
)

PAGE = DOCS / "paying-once.md"


def matches(expected: str, actual: str) -> bool:
    """Every line of ``expected`` appears in ``actual`` (``...`` matching anything)."""
    for line in expected.strip("\n").splitlines():
        pattern = ".*".join(re.escape(part) for part in line.split("..."))
        if not re.search(f"^{pattern}$", actual, re.M):
            return False
    return True


def run_section(heading: str, repo: Path, env: Mapping[str, str]) -> None:
    """Run the ``sh`` blocks right under ``heading`` (not its subsections') in ``repo`` and
    check each following ``text`` block."""
    found = [(b.lang, b.body) for b in blocks(PAGE) if b.headings and b.headings[-1] == heading]
    commands = [body for lang, body in found if lang == "sh"]
    expected = [
        body
        for (lang, body), (before, _) in zip(found[1:], found, strict=False)
        if lang == "text" and before == "sh"
    ]
    assert commands and len(expected) == len(commands), heading
    script = ["set -e", "exec 2>&1"]
    for index, body in enumerate(commands):
        script += [f"echo '@@block {index}@@'", body.rstrip("\n")]
    script.append("echo '@@end@@'")
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=repo,
        env=dict(env),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == 0 and "@@end@@" in done.stdout, done.stdout
    outputs = re.split(r"^@@block \d+@@\n", done.stdout.split("@@end@@")[0], flags=re.M)[1:]
    for want, got in zip(expected, outputs, strict=True):
        assert matches(want, got), f"{heading}:\n--- expected\n{want}\n--- got\n{got}"


def loopback_env(platform: Platform, **extra: str) -> dict[str, str]:
    return cli_env(
        {"OSMOSIS_PLATFORM_URL": platform.url, "OSMOSIS_WORKSPACE": platform.workspace, **extra}
    )


def test_never_a_twin_without_a_decision(tmp_path: Path, clock: FakeClock) -> None:
    platform = start_platform(tmp_path / "p", clock=clock)
    try:
        with contextlib.closing(platform.client(COLLEAGUE_TOKEN)) as colleague:
            twin = colleague.submit_run(build_spec(tomllib.loads(smoke_config())))
        repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
        run_section(
            "## Never a twin without a decision", repo, loopback_env(platform, TWIN=twin.id)
        )
        assert read_lock(repo)["runs"]["tb/smoke"]["run_id"] == twin.id
        assert platform.submits() == 1
    finally:
        platform.close()


def test_a_run_that_went_missing_is_no_reason_to_pay(tmp_path: Path, clock: FakeClock) -> None:
    platform = start_platform(tmp_path / "p", clock=clock)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
        assert Osmosis(repo, platform).apply("--auto-approve").code == 0
        commit(repo, "Record tb/smoke")
        run_id = read_lock(repo)["runs"]["tb/smoke"]["run_id"]
        run_section(
            "## A run that went missing is no reason to pay",
            repo,
            loopback_env(platform, RUN_ID=run_id),
        )
        assert platform.submits() == 1
    finally:
        platform.close()


def test_a_try_out_lockfile_from_another_machine(tmp_path: Path) -> None:
    configs = {f"tb/m{i}": smoke_config(f"openai/gpt-5.{i}") for i in range(2)}
    mine = init_repo(tmp_path / "mine", configs=configs)
    local = LocalPlatform(mine / ".osmosis" / "local-platform", auto_workspaces=True)
    local.set_secret("local", "OPENAI_API_KEY", SECRET_VALUE_PREFIX + "openai_api_key")
    embedded = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
    out = io.StringIO()
    with _environ(embedded), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = apply_main(["--dir", str(mine), "--platform", "local", "--auto-approve"])
    assert code == 0
    commit(mine, "Record the try-out")
    git(tmp_path, "clone", "-q", str(mine), "theirs")
    run_section("### A try-out lockfile from another machine", tmp_path / "theirs", embedded)


HLE_SMOKE = """\
[tool.osmosis-reconciler]

[[tool.osmosis-reconciler.smoke]]
addresses = ["**"]
above = 1000
"""


def hle_config(benchmark: str = "hle") -> str:
    return (
        "[experiment]\n"
        f'benchmark = "{benchmark}"\n\n'
        "[tasks]\n"
        'task_set = "parity"\n\n'
        "[[agents]]\n"
        'harness = "codex"\n\n'
        "[agents.model]\n"
        'type = "provider"\n'
        'model = "openai/gpt-5.2"\n'
        'api_key_secret = "OPENAI_API_KEY"\n\n'
        "[execution]\n"
        "attempts_per_task = 5\n"
        'judge_model = "openai/gpt-5.2"\n'
        'judge_api_key_secret = "OPENAI_API_KEY"\n'
    )


def test_a_smoke_stage_that_cannot_be_made_is_blocked(tmp_path: Path, clock: FakeClock) -> None:
    platform = start_platform(tmp_path / "p", clock=clock)
    try:
        repo = init_repo(
            tmp_path / "repo", configs={"hle/parity": hle_config()}, pyproject=HLE_SMOKE
        )
        run_section("## A smoke stage that cannot be made is blocked", repo, loopback_env(platform))
        assert platform.submits() == 0
    finally:
        platform.close()


def test_a_rerun_request_waits_for_the_apply_that_carries_it_out(
    tmp_path: Path, clock: FakeClock
) -> None:
    platform = start_platform(tmp_path / "p", clock=clock)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})
        assert Osmosis(repo, platform).apply("--auto-approve").code == 0
        commit(repo, "Record tb/smoke")
        heading = "## A re-run request waits for the apply that carries it out"
        run_section(heading, repo, loopback_env(platform))
        assert platform.submits() == 2
    finally:
        platform.close()


HLE_POLICY = """\
[tool.osmosis-reconciler]

[[tool.osmosis-reconciler.policy]]
name = "hle on anthropic only"
benchmark = "hle"
models = ["anthropic/*"]
"""


def test_guards_read_what_the_platform_resolves(tmp_path: Path, clock: FakeClock) -> None:
    platform = start_platform(tmp_path / "p", clock=clock)
    try:
        repo = init_repo(
            tmp_path / "repo", configs={"hle/parity": hle_config("HLE")}, pyproject=HLE_POLICY
        )
        run_section("## Guards read what the Platform resolves", repo, loopback_env(platform))
        assert platform.submits() == 0
    finally:
        platform.close()


def test_red_means_something_new(tmp_path: Path, clock: FakeClock) -> None:
    faults = Faults(workspace_concurrency_limit=1)
    platform = start_platform(tmp_path / "p", clock=clock, faults=faults)
    try:
        wide = smoke_config().replace("max_concurrent_attempts = 1", "max_concurrent_attempts = 2")
        repo = init_repo(tmp_path / "repo", configs={"tb/smoke": wide})
        run_section("## Red means something new", repo, loopback_env(platform))
        assert platform.submits() == 0
    finally:
        platform.close()
