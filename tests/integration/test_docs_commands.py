"""Every command the README and the docs/ pages show is run by a test.

``RUN_BY`` says which test runs the ``sh`` blocks of which page and section; a block under
no listed section fails ``test_every_shown_command_is_run_by_a_test``, so a new page (or a
new block in an old one) comes with its test. The blocks no other test runs are run here.
"""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
from pathlib import Path

from reconciler.config.project import load_project_settings
from tests.support import docs
from tests.support.emulator import spawn_emulator, stop_process
from tests.support.git import git
from tests.support.osmosis import BIN_DIR, EXAMPLES, cli_env

README, DOCS = docs.README, docs.DOCS
# (page, the heading a block sits under) -> the test that runs that section's sh blocks.
RUN_BY: dict[tuple[Path, str], str] = {
    (README, "## Walkthrough"): "test_readme_walkthrough.py",
    (DOCS / "import-and-state.md", "# Bring existing runs under management: osmosis-import "
     "and osmosis-state"): "test_readme_import.py",
    (README, "## Quick start"): "this file: quick start",
    (README, "## Install in another repository"): "test_pinned_install.py",
    (README, "## Try it as a team"): "test_new_team.py",
    (DOCS / "plan-and-apply.md", "## The local Platform"): "this file: the emulator",
    (DOCS / "development.md", "## The checks"): "this file: make targets",
    (DOCS / "development.md", "## The lifecycle suite"): "tests/lifecycle/test_lifecycle_doc.py",
    (DOCS / "generators.md", "# Generators: many runs from one file"): "test_docs_authoring.py",
    (DOCS / "authoring.md", "# Authoring: the front door, fmt, show, policy rules, "
     "installing"): "test_docs_authoring.py",
    (DOCS / "limits.md", "## Deadlines"): "test_limits_doc.py",
    (DOCS / "limits.md", "## Size caps"): "test_limits_doc.py",
    (DOCS / "limits.md", "## Numbers"): "test_limits_doc.py",
    (DOCS / "limits.md", "## Files and paths"): "test_limits_doc.py",
    (DOCS / "local-platform.md", "## History"): "test_local_platform_workspace.py",
    (DOCS / "ownership.md", "## A try-out is kept apart"): "test_docs_ownership.py",
    (DOCS / "smoke.md", "## Trying it on the local Platform"): "test_smoke_doc.py",
    (DOCS / "projects.md", "## Trying it on the local Platform"): "test_projects.py",
    (DOCS / "deciding.md", "## Trying it on the local Platform"): "test_decide_batches.py",
    (DOCS / "deciding.md", "## Reading a decision"): "test_decide_batches.py",
    (DOCS / "smoke.md", "## When the smoke run did not end well"): "test_smoke_doc.py",
    (DOCS / "paying-once.md", "## An unknown outcome (`?`)"): "test_docs_paying_once.py",
    (DOCS / "paying-once.md", "## Never a twin without a decision"):
        "test_docs_paying_once_three.py",
    (DOCS / "paying-once.md", "## A run that went missing is no reason to pay"):
        "test_docs_paying_once_three.py",
    (DOCS / "paying-once.md", "## A smoke stage that cannot be made is blocked"):
        "test_docs_paying_once_three.py",
    (DOCS / "paying-once.md", "## A re-run request waits for the apply that carries it out"):
        "test_docs_paying_once_three.py",
    (DOCS / "paying-once.md", "## Guards read what the Platform resolves"):
        "test_docs_paying_once_three.py",
    (DOCS / "paying-once.md", "## Red means something new"): "test_docs_paying_once_three.py",
    (DOCS / "results.md", "## Two runs of one config"): "test_docs_results.py",
    (DOCS / "results.md", "## Every recorded run"): "test_docs_results.py",
    (DOCS / "results.md", "## Comparing two runs"): "test_docs_results.py",
    (DOCS / "results.md", "## A baseline and the regression gate"): "test_docs_results.py",
    (DOCS / "results.md", "## A generator's grid"): "test_docs_results.py",
    (DOCS / "results.md", "## The report"): "test_docs_results.py",
    (DOCS / "results.md", "## Logs"): "test_docs_results.py",
}  # fmt: skip
SHELL_LANGS = ("sh", "bash", "shell", "console")
# The secret records the example configs and their benchmarks need: the ones `make demo`
# seeds (scripts/demo.py, read without running its main).
DEMO_SECRETS: tuple[str, ...] = runpy.run_path(str(docs.PROJECT_ROOT / "scripts" / "demo.py"))[
    "SECRETS"
]


def shown_commands() -> list[docs.Block]:
    return [b for page in docs.pages() for b in docs.blocks(page) if b.lang in SHELL_LANGS]


def run_by(block: docs.Block) -> str | None:
    for heading in block.headings:
        if (block.page, heading) in RUN_BY:
            return RUN_BY[(block.page, heading)]
    return None


def blocks_of(page: Path, heading: str) -> list[str]:
    return [b.body for b in shown_commands() if b.page == page and heading in b.headings]


def test_every_shown_command_is_run_by_a_test() -> None:
    blocks = shown_commands()
    assert len(blocks) >= 15
    orphans = [f"{b.where}: {b.body.splitlines()[0]}" for b in blocks if run_by(b) is None]
    assert orphans == [], "commands shown but run by no test (add them to RUN_BY)"
    # Every listed section still shows commands (a moved section moves its entry here too).
    for (page, heading), test in RUN_BY.items():
        assert blocks_of(page, heading), f"{test}: {page.name} § {heading} shows no command"


def test_the_checker_finds_an_unlisted_block(tmp_path: Path) -> None:
    page = tmp_path / "new-feature.md"
    page.write_text("# New feature\n\n## Try it\n\n```sh\nosmosis-plan --new\n```\n")
    (block,) = docs.blocks(page)
    assert block.headings == ("# New feature", "## Try it") and run_by(block) is None


def test_the_quick_start_commands_run(tmp_path: Path) -> None:
    (commands,) = [body for body in blocks_of(README, "## Quick start") if ".venv/bin" in body]
    repo = tmp_path / "quick-start"
    shutil.copytree(EXAMPLES, repo / "benchmarks")
    (repo / ".gitignore").write_text(".osmosis/\n.venv\n*.json\n", encoding="utf-8")
    (repo / ".venv").symlink_to(BIN_DIR.parent)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Add benchmark run configs")
    env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
    env["OSMOSIS_LOCAL_PLATFORM_SPEED"] = "100000"  # every run ends within the wait
    for name in DEMO_SECRETS:
        done = subprocess.run(
            [str(BIN_DIR / "osmosis-platform-emulator"), "secret", "set", name, "--scope",
             "workspace", "--workspace", "local", "--data", ".osmosis/local-platform"],
            cwd=repo, env=env, input="value-not-shown\n", text=True, capture_output=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        ["bash", "-c", "set -e\n" + commands],
        cwd=repo,
        env=env,
        text=True,
        capture_output=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Apply complete" in done.stdout + done.stderr
    assert (repo / "plan.json").is_file() and (repo / "state" / "osmosis.lock").is_file()
    assert "value-not-shown" not in done.stdout + done.stderr


def test_the_emulator_serve_command_listens(tmp_path: Path) -> None:
    (block,) = blocks_of(DOCS / "plan-and-apply.md", "## The local Platform")
    command = block.strip().split()
    assert command[:2] == [".venv/bin/osmosis-platform-emulator", "serve"], command
    emulator = spawn_emulator(tmp_path / "data", *command[2:])
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", emulator.url)
    finally:
        stop_process(emulator.process)


def test_the_make_targets_shown_exist() -> None:
    # `make test` and `make lint` are what CI runs (.ci/run); the suite cannot run make
    # inside itself, so it checks that every target a page shows is one the Makefile has.
    targets = set(re.findall(r"^([\w-]+):", (docs.PROJECT_ROOT / "Makefile").read_text(), re.M))
    shown = {
        target
        for body in blocks_of(DOCS / "development.md", "## The checks")
        + blocks_of(README, "## Quick start")
        for target in re.findall(r"^make (\w+)", body, re.M)
    }
    assert shown >= {"demo", "test", "lint", "perf", "reliability"}
    assert shown <= targets, shown - targets


def test_the_documented_settings_are_accepted(tmp_path: Path) -> None:
    pyproject, osmosis = [b.body for b in docs.blocks(DOCS / "configs.md") if b.lang == "toml"]
    for name, text in (("pyproject.toml", pyproject), ("osmosis.toml", osmosis)):
        (tmp_path / name).mkdir()
        (tmp_path / name / name).write_text(text, encoding="utf-8")
    assert load_project_settings(tmp_path / "pyproject.toml")["max_cost_usd"] == 500.0
    assert load_project_settings(tmp_path / "osmosis.toml")["max_attempts"] == 5000
