"""Fuzz target: the command lines of osmosis-plan, osmosis-state and osmosis-ci.

Each example runs a real command in this process (its ``main``: the one error handler, the
output layer) with an argv drawn from the command's own flags and hostile values, in a
repository with one config and a lockfile. The command must end with exit 0-2 and no
internal error; nothing outside the repository may be written (a victim file and a
directory beside it are checked after every example). The Platform and GitHub are closed
ports on loopback with short deadlines, so nothing leaves the machine and nothing waits.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from reconciler.ci.main import main as ci_main
from reconciler.cli.plan import main as plan_main
from reconciler.cli.state import main as state_main
from reconciler.state.lockfile import serialize
from tests.support.plan_fixtures import desired, lock, recorded_run

from .conftest import exercise, fuzz_target

ROOT = Path(__file__).resolve().parents[2]
BASE = Path(
    tempfile.mkdtemp(
        prefix="osmosis-fuzz-cli-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    )
)
REPO = BASE / "repo"
OUTSIDE = BASE / "outside"
VICTIM = OUTSIDE / "victim.lock"
LOCKFILE = serialize(lock(recorded_run(desired("tb/a"), "r1", status="finished", run_name="a-1")))
VICTIM_TEXT = LOCKFILE  # a valid lockfile: a command that wrongly takes it would write it

HOSTILE = [
    "nan",
    "inf",
    "-5",
    "0",
    "1e999",
    "9" * 5000,
    "",
    "-",
    "--",
    ".",
    "..",
    "../outside/victim.lock",
    str(VICTIM),
    "../outside/new.lock",
    "/dev/zero",
    "/dev/null",
    "state/osmosis.lock",
    "benchmarks",
    "tb/a",
    "tb/*",
    "**",
    "tb/../../x",
    "\x1b]0;pwned\x07",
    "a\u202eb",
    "r" * 70_000,
    "HEAD",
    "HEAD~99999",
    "json",
    "text",
    "markdown",
    "é/ü",
]
FLAGS: dict[str, list[str]] = {
    "plan": [
        "--target",
        "--replace",
        "--changed-since",
        "--benchmarks",
        "--state",
        "--workspace",
        "--format",
        "--log-format",
        "--refresh",
        "-q",
        "-v",
        "--no-color",
        "--detailed-exitcode",
        "--show-unmanaged",
    ],
    "state": ["list", "show", "forget", "mv", "--state", "--format", "--lock-timeout", "-q"],
    "ci": [
        "commit-message",
        "drift-issue",
        "comment",
        "announce",
        "--plan",
        "--before",
        "--before-rev",
        "--state",
        "--exit-code",
        "--sha",
        "--title",
        "--plan-json",
        "--label",
        "--pr",
        "--body-file",
        "--max-age-days",
        "--format",
        "--repo",
        "--run-url",
    ],
}
MAINS: dict[str, tuple[Callable[[Sequence[str] | None], int], list[str]]] = {
    # --validate-only keeps osmosis-plan off the Platform; --dir pins the repository.
    "plan": (plan_main, ["--validate-only", "--platform", "http://127.0.0.1:9"]),
    "state": (state_main, []),
    "ci": (ci_main, []),
}
ENV = {
    "GITHUB_TOKEN": "ghs_fuzz_token_0123456789",
    "GITHUB_API_URL": "http://127.0.0.1:9",
    "GITHUB_REPOSITORY": "acme/bench",
    "OSMOSIS_CI_DEADLINE": "2",
    "OSMOSIS_PLATFORM_DEADLINE": "1",
    "OSMOSIS_CRASH_LOG": str(BASE / "repo" / ".osmosis" / "crash.log"),
}


def _setup() -> None:
    if not REPO.exists():
        (REPO / "benchmarks" / "tb").mkdir(parents=True)
        shutil.copy(
            ROOT / "benchmarks" / "terminal-bench" / "smoke.toml",
            REPO / "benchmarks" / "tb" / "a.toml",
        )
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=REPO, check=True)
        OUTSIDE.mkdir()
    (REPO / "state").mkdir(exist_ok=True)
    (REPO / "state" / "osmosis.lock").write_text(LOCKFILE)
    VICTIM.write_text(VICTIM_TEXT)
    for extra in OUTSIDE.iterdir():
        if extra != VICTIM:
            extra.unlink() if not extra.is_dir() else shutil.rmtree(extra)


def _outside_unchanged() -> None:
    assert VICTIM.read_text() == VICTIM_TEXT, "the victim outside the repository was written"
    assert sorted(p.name for p in OUTSIDE.iterdir()) == ["victim.lock"], list(OUTSIDE.iterdir())
    assert sorted(p.name for p in BASE.iterdir()) == ["outside", "repo"], list(BASE.iterdir())


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, list[str]]:
    command = draw(st.sampled_from(sorted(MAINS)))
    tokens = draw(st.lists(st.sampled_from(FLAGS[command]) | st.sampled_from(HOSTILE), max_size=6))
    return command, tokens


@fuzz_target
@given(command_lines())
def test_command_lines(line: tuple[str, list[str]]) -> None:
    command, tokens = line
    main, fixed = MAINS[command]
    _setup()
    argv = [*tokens, *fixed, "--dir", str(REPO)]
    if command == "ci":
        argv = ["--dir", str(REPO), *tokens]  # top-level flags before the subcommand
    err = io.StringIO()
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    cwd = os.getcwd()
    os.chdir(REPO)
    try:

        def call() -> int:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                return main(argv)

        code = exercise("command lines", call, (), refused=lambda code: code != 0)
    finally:
        os.chdir(cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    text = err.getvalue()
    assert "internal error" not in text and "Traceback" not in text, (argv, text[-3000:])
    assert code in (0, 1, 2), (argv, code, text[-2000:])
    _outside_unchanged()
