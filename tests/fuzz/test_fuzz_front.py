"""Fuzz target (issue 36): the front door's argv, ``osmosis-reconciler VERB ...``.

Each example runs ``reconciler.cli.front.main`` in this process with a verb (or something
that is not one) and tokens drawn from that verb's own flags, its positionals and hostile
values: paths to ``/dev/zero``, to a victim outside the repository, through a committed
symlink to the outside (``sym``), addresses with escapes, numbers that are not. The
repository holds a config, a generator, a lockfile and the link; the Platform and GitHub
are closed ports on loopback. Each command must exit 0-2 without an internal error, and
nothing outside the repository may change (a victim file and the outside directory are
compared after every example). Flags that wait without end by design (``--watch``,
``logs --follow``) and ``--dir`` (which would make the outside directory the repository)
are left out; the ``emulator`` verb (the local Platform's server) is not run.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from reconciler.cli.front import main as front_main
from reconciler.state.lockfile import serialize
from tests.support.plan_fixtures import desired, lock, recorded_run

from .conftest import exercise, fuzz_target
from .test_fuzz_commands import HOSTILE

ROOT = Path(__file__).resolve().parents[2]
BASE = Path(
    tempfile.mkdtemp(
        prefix="osmosis-fuzz-front-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    )
)
atexit.register(shutil.rmtree, BASE, ignore_errors=True)
REPO = BASE / "repo"
OUTSIDE = BASE / "outside"
VICTIM = OUTSIDE / "victim.lock"
LOCKFILE = serialize(
    lock(
        recorded_run(desired("tb/a"), "r1", status="finished", run_name="a-1"),
        recorded_run(desired("g/m/x"), "r2", status="running", run_name="g-2"),
    )
)
CONFIG = (ROOT / "benchmarks" / "terminal-bench" / "smoke.toml").read_text(encoding="utf-8")
GENERATOR_TEXT = """\
[generate]
version = 1
address = "{model}"

[base.experiment]
benchmark = "terminal-bench-2-1"

[base.agent]
harness = "codex"

[[axis.model]]
key = "x"
agent.model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }
"""
ENV = {
    "OSMOSIS_PLATFORM_URL": "http://127.0.0.1:9",
    "OSMOSIS_WORKSPACE": "fuzz",
    "GITHUB_TOKEN": "ghs_fuzz_token_0123456789",
    "GITHUB_API_URL": "http://127.0.0.1:9",
    "GITHUB_REPOSITORY": "acme/bench",
    "OSMOSIS_CI_DEADLINE": "2",
    "OSMOSIS_PLATFORM_DEADLINE": "1",
    "OSMOSIS_CRASH_LOG": str(REPO / ".osmosis" / "crash.log"),
    "NO_COLOR": "1",
}
COMMON = ["--benchmarks", "--state", "--platform", "--workspace", "--format", "--no-color",
          "--log-format", "-q", "-v", "--version", "-h"]  # fmt: skip
FLAGS: dict[str, list[str]] = {
    "plan": [*COMMON, "--out", "--detailed-exitcode", "--validate-only", "--refresh-only",
             "--target", "--replace", "--skip-smoke", "--allow-mass-stop", "--changed-since",
             "--show-unmanaged", "--download-running"],
    "apply": [*COMMON, "--auto-approve", "--parallelism", "--lock-timeout", "--force-unlock",
              "--wait", "--wait-timeout", "--download-types", "--only", "--target"],
    "import": [*COMMON, "--to", "--all", "--benchmark", "--status", "--created-since",
               "--dry-run", "--update", "--force", "--model-type", "--secret", "--header"],
    "state": [*COMMON, "list", "show", "forget", "mv", "resolve", "--lock-timeout",
              "--submitted", "--not-submitted"],
    "results": [*COMMON, "compare", "accept", "--html", "--fail-on-regression", "--margin",
                "--seed", "--no-fetch", "--width"],
    "logs": [*COMMON, "--limit", "--cursor", "--level"],
    "fmt": [*COMMON, "--check"],
    "show": COMMON,
    "expand": [*COMMON, "--cell", "--write"],
    "ci": ["commit-message", "comment", "drift-issue", "--plan", "--plan-json", "--body-file",
           "--print", "--exit-code", "--before", "--state", "--format", "--repo", "--pr"],
    "completion": ["bash", "zsh", "fish", "tcsh"],
}  # fmt: skip
OUTPUT_FLAGS = {"--out", "--html", "--write"}
OUTPUTS = ["out/plan.json", "sym/plan.json", "sym", "sym/deep/x", "/dev/null", "out", "."]
PATHS = [
    "/dev/zero",
    "sym/victim.lock",
    "sym",
    "benchmarks/tb/a.toml",
    "benchmarks/g/m.matrix.toml",
    "benchmarks/link.matrix.toml",
    "state/osmosis.lock",
    "saved.json",
    "missing.json",
    "tb/a",
    "g/m/x",
    "tb/*",
    "tb/\\x1b[2Ja",
    "r1",
    "a-1",
]
VERBS = [*FLAGS, "", "-h", "--version", "nope", "PLAN", "plan\x00", "emulatorx"]


def _setup() -> None:
    if not REPO.exists():
        (REPO / "benchmarks" / "tb").mkdir(parents=True)
        (REPO / "benchmarks" / "g").mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=REPO, check=True)
        OUTSIDE.mkdir()
        (REPO / "sym").symlink_to(OUTSIDE, target_is_directory=True)
        (OUTSIDE / "link.matrix.toml").write_text(GENERATOR_TEXT)
        (REPO / "benchmarks" / "link.matrix.toml").symlink_to(OUTSIDE / "link.matrix.toml")
    (REPO / "benchmarks" / "tb" / "a.toml").write_text(CONFIG)
    (REPO / "benchmarks" / "g" / "m.matrix.toml").write_text(GENERATOR_TEXT)
    (REPO / "state").mkdir(exist_ok=True)
    (REPO / "state" / "osmosis.lock").write_text(LOCKFILE)
    VICTIM.write_text(LOCKFILE)
    for extra in OUTSIDE.iterdir():
        if extra.name not in ("victim.lock", "link.matrix.toml"):
            extra.unlink() if not extra.is_dir() else shutil.rmtree(extra)


def _outside_unchanged() -> None:
    assert VICTIM.read_text() == LOCKFILE, "the victim outside the repository was written"
    assert (OUTSIDE / "link.matrix.toml").read_text() == GENERATOR_TEXT
    assert sorted(p.name for p in OUTSIDE.iterdir()) == ["link.matrix.toml", "victim.lock"]
    assert sorted(p.name for p in BASE.iterdir()) == ["outside", "repo"], list(BASE.iterdir())
    assert Path("/dev/null").is_char_device()


@st.composite
def front_lines(draw: st.DrawFn) -> list[str]:
    verb = draw(st.sampled_from(VERBS))
    if verb == "" and draw(st.booleans()):
        return []
    flags = FLAGS.get(verb, FLAGS["plan"])
    tokens: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        pick = draw(st.integers(0, 3))
        if pick == 0:
            tokens.append(draw(st.sampled_from(HOSTILE)))
        elif pick == 1:
            tokens.append(draw(st.sampled_from(PATHS)))
        else:
            flag = draw(st.sampled_from(flags))
            tokens.append(flag)
            if flag in OUTPUT_FLAGS:
                tokens.append(draw(st.sampled_from(OUTPUTS)))
    # An output flag from the hostile pool (``--out`` after a value) gets a safe value too.
    for index, token in enumerate(tokens):
        if token in OUTPUT_FLAGS and (index + 1 == len(tokens) or tokens[index + 1] not in OUTPUTS):
            tokens.insert(index + 1, draw(st.sampled_from(OUTPUTS)))
    if verb == "ci":
        return [verb, "--dir", str(REPO), *tokens]
    if verb in FLAGS and verb != "completion":
        return [verb, *tokens, "--dir", str(REPO)]
    return [verb, *tokens]


@fuzz_target
@given(front_lines())
def test_front_door(argv: list[str]) -> None:
    _setup()
    err = io.StringIO()
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    cwd = os.getcwd()
    os.chdir(REPO)
    try:

        def call() -> int:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                try:
                    return front_main(argv)
                except SystemExit as exc:  # argparse's --help/--version at the door
                    return exc.code if isinstance(exc.code, int) else 1

        code = exercise("front door", call, (), refused=lambda code: code != 0)
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
