"""The front door ``osmosis-reconciler`` and its authoring verbs (issue 25, "Done when"):
one --help listing every verb, shell completion generated from the parser and run in bash,
``fmt`` (--check fails, fmt fixes keeping comments, same digest), ``show`` (the saved plan's
text byte for byte), ``expand`` (files that load as plain configs with the cell's digest).

The console scripts run as real processes where the test is about the installed command.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reconciler.config import load_configs
from tests.support.git import commit
from tests.support.osmosis import BIN_DIR, Osmosis, Platform, init_repo, smoke_config

from .test_generators import GENERATOR, generator, write_generator

FRONT = str(BIN_DIR / "osmosis-reconciler")
SCHEMA = json.loads(
    (Path(__file__).parents[2] / "reconciler/schema/output.schema.json").read_text()
)


def valid(document: dict[str, Any]) -> dict[str, Any]:
    errors = [e.message for e in Draft202012Validator(SCHEMA).iter_errors(document)]
    assert not errors, errors[:3]
    return document


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FRONT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_help_lists_every_verb_including_installed_scripts() -> None:
    done = run("--help")
    assert done.returncode == 0, done.stderr
    verbs = ["plan", "apply", "import", "state", "ci", "emulator", "fmt", "show", "expand"]
    for verb in [*verbs, "completion"]:
        assert f"\n    {verb} " in done.stdout or f"\n    {verb}\n" in done.stdout, verb
    # Verbs of commands another package version adds appear once their script exists.
    for verb in ("results", "logs"):
        installed = bool(metadata.entry_points(group="console_scripts", name=f"osmosis-{verb}"))
        assert (f"\n    {verb} " in done.stdout) is installed


def test_a_verb_runs_the_command_with_its_flags_and_exit_code(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    done = run("plan", "--validate-only", "--dir", str(repo))
    assert done.returncode == 0, done.stderr
    assert "All 1 config file(s) are valid." in done.stdout
    unknown = run("plna")
    assert unknown.returncode == 1
    assert "unknown verb 'plna'" in unknown.stderr and "plan" in unknown.stderr


def test_completion_scripts_are_generated_and_complete_verbs_and_flags_in_bash(
    tmp_path: Path,
) -> None:
    for shell in ("zsh", "fish"):
        done = run("completion", shell)
        assert done.returncode == 0 and "osmosis-reconciler" in done.stdout, done.stderr
    script = run("completion", "bash")
    assert script.returncode == 0, script.stderr
    path = tmp_path / "completion.bash"
    path.write_text(script.stdout, encoding="utf-8")
    bash = shutil.which("bash")
    assert bash is not None
    probe = (
        f"source {path}\n"
        'complete_line() { COMP_WORDS=($1); COMP_CWORD=$2; COMP_LINE="$1"; '
        'COMP_POINT=${#COMP_LINE}; _shtab_osmosis_reconciler; echo "${COMPREPLY[*]}"; }\n'
        'complete_line "osmosis-reconciler ex" 1\n'
        'complete_line "osmosis-reconciler plan --detailed" 2\n'
        'complete_line "osmosis-reconciler fmt --ch" 2\n'
        "complete -p osmosis-reconciler\n"
    )
    done = subprocess.run([bash, "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "expand"
    assert lines[1] == "--detailed-exitcode"
    assert lines[2] == "--check"
    assert "osmosis-reconciler" in lines[3]


UNFORMATTED = """\
# Smoke run: one task.

[execution]
max_concurrent_attempts=1
attempts_per_task   =   1   # one attempt

# which agent
[[agents]]
harness = 'terminus-2'

[agents.model]
api_key_secret='OPENAI_API_KEY'
type = "provider"
model = "openai/gpt-5.2"

[experiment]
benchmark = "terminal-bench-2-1"


[tasks]
# the one task
task_names = ["terminal-bench/git-multibranch"]
"""

FORMATTED = """\
# Smoke run: one task.

[experiment]
benchmark = "terminal-bench-2-1"

[tasks]
# the one task
task_names = ["terminal-bench/git-multibranch"]

# which agent
[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[execution]
attempts_per_task = 1  # one attempt
max_concurrent_attempts = 1
"""


def test_fmt_check_fails_on_an_unformatted_file_and_fmt_fixes_it_keeping_comments(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": UNFORMATTED, "tb/b": FORMATTED})
    before = {r.address: r.spec_digest for r in load_configs(repo, "benchmarks").runs}
    target = repo / "benchmarks" / "tb" / "a.toml"

    check = run("fmt", "--check", cwd=repo)
    assert check.returncode == 1, check
    assert "would reformat benchmarks/tb/a.toml" in check.stderr
    assert "tb/b.toml" not in check.stderr
    assert target.read_text() == UNFORMATTED

    fixed = run("fmt", cwd=repo)
    assert fixed.returncode == 0, fixed.stderr
    assert target.read_text() == FORMATTED
    after = {r.address: r.spec_digest for r in load_configs(repo, "benchmarks").runs}
    assert after == before
    assert run("fmt", "--check", cwd=repo).returncode == 0

    as_json = run("fmt", "--check", "--format", "json", cwd=repo)
    assert valid(json.loads(as_json.stdout))["changed"] == []


def test_fmt_formats_a_generator_and_its_expansion_is_unchanged(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    text = generator().replace('key = "gpt-5"\n', 'key   =  "gpt-5"\n')
    text = text.replace("[base.agent]\nharness", "[base.agent]\nharness  ")
    write_generator(repo, text)
    before = {r.address: r.spec_digest for r in load_configs(repo, "benchmarks").runs}
    assert run("fmt", "--check", cwd=repo).returncode == 1
    assert run("fmt", GENERATOR, cwd=repo).returncode == 0
    formatted = (repo / GENERATOR).read_text()
    assert 'key = "gpt-5"\n' in formatted
    assert formatted.startswith("# Run generator: one run per benchmark × model.\n")
    assert {r.address: r.spec_digest for r in load_configs(repo, "benchmarks").runs} == before


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_show_reproduces_the_saved_plan_byte_for_byte(
    tmp_path: Path, platform: Platform, fmt: str
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    write_generator(repo, generator(["tb-smoke"], ["gpt-5-2", "gpt-5"], exclude=""))
    commit(repo, "Add a generator")
    osm = Osmosis(repo, platform)
    planfile = tmp_path / "saved.plan.json"
    planned = osm.plan("--format", fmt, "--out", str(planfile))
    assert planned.code == 0, planned

    shown = run("show", str(planfile), "--format", fmt, "--no-color", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    if fmt == "json":
        # json is the document (with its envelope) either way; the plan body is the same.
        body = {k: v for k, v in json.loads(planned.out).items() if k != "diagnostics"}
        again = {k: v for k, v in json.loads(shown.stdout).items() if k != "diagnostics"}
        assert again["actions"] == body["actions"] and again["generators"] == body["generators"]
    else:
        assert shown.stdout == planned.out


def test_show_refuses_a_file_that_is_not_a_saved_plan(tmp_path: Path) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text("{}", encoding="utf-8")
    done = run("show", str(bogus), cwd=tmp_path)
    assert done.returncode == 1
    assert "cannot read the saved plan" in done.stderr
    assert "osmosis-plan --out PLANFILE" in done.stderr


def test_expand_writes_plain_configs_with_the_cells_digests(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write_generator(repo, generator())
    planned = {r.address: r.spec_digest for r in load_configs(repo, "benchmarks").runs}

    out = tmp_path / "expanded"
    done = run("expand", GENERATOR, "--write", str(out / "benchmarks"), cwd=repo)
    assert done.returncode == 0, done.stderr
    written = load_configs(out, "benchmarks")
    assert written.ok, written.issues
    assert {r.address: r.spec_digest for r in written.runs} == planned
    one = (out / "benchmarks" / "compare/frontier/hle-parity/gpt-5-2.toml").read_text()
    assert one.startswith(
        f"# generated by osmosis-reconciler from {GENERATOR}\n"
        "# cell: benchmark=hle-parity model=gpt-5-2 ; address: compare/frontier/hle-parity/gpt-5-2\n"
    )

    single = run(
        "expand", GENERATOR, "--cell", "compare/frontier/gdpval/*", "--format", "json", cwd=repo
    )
    document = valid(json.loads(single.stdout))
    assert document["type"] == "expand"
    assert [c["address"] for c in document["cells"]] == [
        f"compare/frontier/gdpval/{m}" for m in ("gpt-5", "gpt-5-2", "gpt-5-mini", "sonnet-4")
    ]
    assert document["product"] == "benchmark(3) × model(4) − 1 excluded = 11 runs"


def test_expand_of_a_broken_generator_names_file_line_and_key(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    write_generator(repo, generator().replace("max_runs = 40", "max_runs = 4"))
    done = run("expand", GENERATOR, cwd=repo)
    assert done.returncode == 1
    assert f"{GENERATOR}:5" in done.stderr
    assert "expands to 11 runs (benchmark 3 × model 4); max_runs = 4" in done.stderr
    assert done.stdout == ""
