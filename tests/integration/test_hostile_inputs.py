"""Issue 23, finding 5: the inputs nobody types on purpose. Each is the real command as a
process in a git repository in ``tmp_path``; each must end with a clear error naming what
to fix (exit 1), never an internal error, a hang or a raw escape sequence on the terminal.
(The 307 redirect is in ``test_hostile_servers.py``.)
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reconciler.state.lockfile import serialize
from tests.support.osmosis import BIN_DIR, Platform, cli_env, init_repo, smoke_config
from tests.support.plan_fixtures import desired, lock, recorded_run

from .test_cli_import import empty_repo, submit_example

ESCAPE = "\x1b]0;pwned\x07\x1b[2J"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()})


def run(repo: Path, tool: str, *args: str, env: dict[str, str] | None = None, timeout: float = 60):
    """(exit code, stdout + stderr) of ``tool`` in ``repo``, stdin closed."""
    done = subprocess.run(
        [str(BIN_DIR / tool), *args],
        cwd=repo,
        env=cli_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    text = done.stdout + done.stderr
    assert "internal error" not in text and "Traceback" not in text, text
    return done.returncode, text


def test_a_non_ascii_token_is_a_clear_error(repo: Path) -> None:
    code, text = run(
        repo,
        "osmosis-plan",
        "--platform",
        "http://127.0.0.1:9",
        "--workspace",
        "w",
        env={"OSMOSIS_TOKEN": "tök-ën-0123456789abcdef"},
    )
    assert code == 1 and "non-ASCII" in text and "OSMOSIS_TOKEN" in text, text
    assert "tök-ën" not in text


def test_state_list_escapes_names_and_refuses_escaped_addresses(repo: Path) -> None:
    entry = recorded_run(desired("tb/smoke"), "r1", status="finished", run_name=f"x{ESCAPE}y")
    (repo / "state").mkdir()
    lockfile = repo / "state" / "osmosis.lock"
    lockfile.write_text(serialize(lock(entry)))
    code, text = run(repo, "osmosis-state", "list")
    assert code == 0, text
    assert "\x1b" not in text and "\x07" not in text
    assert "x\\x1b]0;pwned\\x07\\x1b[2Jy" in text, text
    # An address is a config file's path; a lockfile may record one with an escape
    # sequence from before the plan refused such names (issue 36): the lockfile reads it
    # back, and it is printed escaped, never raw.
    lockfile.write_text(
        serialize(lock(entry)).replace('runs."tb/smoke"', 'runs."tb/\\u001b[2Jsmoke"')
    )
    code, text = run(repo, "osmosis-state", "list")
    assert code == 0 and "\x1b" not in text, text
    assert "tb/\\x1b[2Jsmoke" in text, text
    # A '..' in an address is still refused when the lockfile is read.
    lockfile.write_text(serialize(lock(entry)).replace('runs."tb/smoke"', 'runs."tb/../x"'))
    code, text = run(repo, "osmosis-state", "list")
    assert code == 1 and "state/osmosis.lock:" in text, text


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_saved_plan_that_is_not_a_regular_file_is_refused(repo: Path, kind: str) -> None:
    path = "/dev/zero"
    if kind == "fifo":
        path = str(repo / "plan.fifo")
        os.mkfifo(path)
    code, text = run(repo, "osmosis-apply", path, "--platform", "local", timeout=60)
    assert code == 1, text
    assert f"saved plan {path}: is a {'device' if kind == 'device' else 'FIFO'}" in text, text


def test_a_settings_file_symlinked_outside_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.toml"
    outside.write_text('state = "state/other.lock"\nmax_stops = 1000\n')
    os.symlink(outside, repo / "osmosis.toml")
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "osmosis.toml is a symlink" in text, text


def test_a_fifo_settings_file_is_refused_not_ignored(repo: Path) -> None:
    os.mkfifo(repo / "osmosis.toml")
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "osmosis.toml is a FIFO, not a regular file" in text, text


def test_a_nul_in_a_settings_path_is_a_clear_error(repo: Path) -> None:
    (repo / "osmosis.toml").write_text('state = "state/a\\u0000b.lock"\n')
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "osmosis.toml:1: state: contains a NUL" in text, text


@pytest.mark.parametrize(
    "flags",
    [
        ("--lock-timeout", "nan"),
        ("--wait", "--wait-timeout", "nan"),
        ("--wait", "--wait-timeout", "-5"),
        ("--wait", "--wait-timeout", "inf"),
    ],
)
def test_timeouts_must_be_finite_and_in_range(repo: Path, flags: tuple[str, ...]) -> None:
    code, text = run(repo, "osmosis-apply", "--auto-approve", *flags, timeout=30)
    assert code == 1, text
    assert f"argument {[f for f in flags if 'timeout' in f][0]}:" in text, text


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_max_cost_usd_must_be_finite(repo: Path, value: str) -> None:
    (repo / "osmosis.toml").write_text(f"max_cost_usd = {value}\n")
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "max_cost_usd: must be a finite number of dollars" in text, text


def test_a_70000_character_run_id_is_a_clear_error(repo: Path) -> None:
    code, text = run(repo, "osmosis-import", "r" * 70_000, "--platform", "local")
    assert code == 1 and "cannot be a run or benchmark name or id" in text, text
    assert len(text) < 2000


def test_integers_of_more_than_4300_digits(repo: Path) -> None:
    digits = "9" * 5000
    (repo / "benchmarks" / "tb" / "big.toml").write_text(
        smoke_config() + f"\n[extra]\nx = {digits}\n"
    )
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "benchmarks/tb/big.toml:" in text and "4,300 digits" in text, text
    # A hex literal has no digit limit in TOML parsing, but no JSON digest can write it
    # (found by `make fuzz`).
    (repo / "benchmarks" / "tb" / "big.toml").write_text(
        smoke_config().replace("attempts_per_task = 1", "attempts_per_task = 0x" + "f" * 4400)
    )
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "an integer out of range at execution.attempts_per_task" in text, text
    (repo / "benchmarks" / "tb" / "big.toml").unlink()
    (repo / "osmosis.toml").write_text(f"max_stops = {digits}\n")
    code, text = run(repo, "osmosis-plan", "--validate-only")
    assert code == 1 and "osmosis.toml: cannot read the settings" in text, text
    (repo / "osmosis.toml").unlink()
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(f"version = 1\nserial = {digits}\n")
    code, text = run(repo, "osmosis-state", "list")
    assert code == 1 and "state/osmosis.lock:2: an integer with more than 4,300 digits" in text


def test_a_refused_import_in_json_is_an_error_diagnostic_and_says_so_on_stderr(
    tmp_path: Path, platform: Platform
) -> None:
    run_id, name = submit_example(platform, "gdpval/claude-sonnet")
    osm = empty_repo(tmp_path / "importing", platform)
    result = osm.import_(name, "--model-type", "provider", "--format", "json")
    assert result.code == 1, result
    doc = result.json()
    assert doc["errored"] is True
    assert [d["kind"] for d in doc["diagnostics"]] == ["ImportRefusedError"], doc
    assert f"cannot import run {name} ({run_id})" in doc["diagnostics"][0]["message"]
    assert doc["diagnostics"][0]["hint"] == "pass --secret 1=NAME"
    assert f"Error: cannot import run {name} ({run_id})" in result.err, result.err
