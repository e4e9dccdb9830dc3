"""Hostile input (issue 7, suite 4), through the real commands against a loopback Platform.

Manifests whose paths try to escape the run directory or whose sizes lie, Platform answers
that are malformed, oversized or nested without end, configs that are huge, nested or not
UTF-8, lockfiles edited by hand or left with merge conflicts. Each case: a clear error (no
"internal error"), nothing written outside where it belongs, and nothing lost: the
lockfile is byte-for-byte unchanged when the command refuses, and no run is paid twice.

Issue 17 adds: symlinked roots (``benchmarks``, ``state``, ``.osmosis``, its ``benchmarks``
and a run directory as links elsewhere, a ``benchmarks -> benchmarks`` loop), a FIFO under
``benchmarks/``, file names that are not UTF-8 or carry newlines and ANSI/OSC escapes (and
run names from the Platform that do), 50,000 unknown keys, wrong ``[execution]`` types,
keys nested 40,000 levels deep, a read-only ``state/``, a disk that fills after a run was
paid for, a trickling and a silent Platform, and SIGTERM during a stalled download.

Fast: part of ``make test`` (the timed versions are in ``test_stalls.py``).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.local_platform import Faults, LocalPlatform, Response
from reconciler.local_platform.faults import FaultInjector
from tests.support.emulator import serve
from tests.support.git import git_run
from tests.support.guards import without_coverage

from .harness import (
    APPLY_ARGS,
    CONFIG,
    DOWNLOADS,
    SECRET_NAME,
    STATE,
    WORKSPACE,
    Server,
    cli_env,
    command,
    finish,
    make_repo,
    read_lockfile,
    run,
    spawn,
    wait_until,
)

Transform = Callable[[list[dict[str, Any]], Path], list[dict[str, Any]]]


class HostilePlatform(LocalPlatform):
    """The local Platform with a man in the middle: rewritten manifests, canned answers,
    renamed runs."""

    manifest: Transform | None = None
    outside: Path = Path("/nonexistent")
    canned: dict[tuple[str, str], Response]
    rename: Callable[[str], str] | None = None

    def handle(self, method: str, target: str, headers: Any, body: bytes = b"") -> Response:
        path = target.split("?", 1)[0]
        for (m, route), answer in getattr(self, "canned", {}).items():
            if method == m and path == route:
                return answer
        answer = super().handle(method, target, headers, body)
        if self.rename is not None and path.startswith(RUNS) and answer.status == 200:
            data = _renamed(answer.json(), self.rename)
            return Response(200, {"Content-Type": "application/json"}, json.dumps(data).encode())
        if (
            self.manifest is not None
            and path.endswith("/outputs/manifest")
            and (answer.status == 200)
        ):
            data = answer.json()
            data["files"] = self.manifest(list(data["files"]), self.outside)
            return Response(200, {"Content-Type": "application/json"}, json.dumps(data).encode())
        return answer


@dataclass
class Setup:
    root: Path
    repo: Path
    outside: Path
    server: Server
    platform: HostilePlatform

    @property
    def lockfile(self) -> Path:
        return self.repo / STATE


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo", 1)
    # seed 0: the suite reads its schedules (a data dir's own seed is random: a run could
    # end failed, and a failed run has no artifacts to write through a symlink).
    platform = HostilePlatform(tmp_path / "platform", speed=5000, seed=0, workspaces=(WORKSPACE,))
    platform.canned = {}
    platform.outside = outside
    platform.set_secret(WORKSPACE, SECRET_NAME, "sk-hostile-suite")
    handle = serve(platform, quiet=True)
    try:
        yield Setup(tmp_path, repo, outside, Server(platform, handle), platform)
    finally:
        handle.close()


@dataclass
class Applied:
    """A repository after one successful apply, and the Platform that holds its run."""

    root: Path
    repo: Path
    server: Server
    platform: HostilePlatform
    outside: Path

    @property
    def lockfile(self) -> Path:
        return self.repo / STATE


@pytest.fixture(scope="module")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Server]]:
    root = tmp_path_factory.mktemp("hostile-template")
    repo = make_repo(root / "repo", 1)
    platform = HostilePlatform(root / "platform", speed=5000, workspaces=(WORKSPACE,))
    platform.canned = {}
    platform.set_secret(WORKSPACE, SECRET_NAME, "sk-hostile-suite")
    handle = serve(platform, quiet=True)
    try:
        server = Server(platform, handle)
        first = run("osmosis-apply", repo, server.url, "--auto-approve")
        assert first.returncode == 0, first.stderr
        yield repo, server
    finally:
        handle.close()


@pytest.fixture
def applied(_template: tuple[Path, Server], tmp_path: Path) -> Iterator[Applied]:
    """A private copy of the applied repository; canned answers are reset afterwards."""
    template, server = _template
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    platform = server.platform
    assert isinstance(platform, HostilePlatform)
    try:
        yield Applied(tmp_path, repo, server, platform, outside)
    finally:
        platform.canned = {}


def _renamed(data: Any, rename: Callable[[str], str]) -> Any:
    """Every run's ``name`` in a Platform answer passed through ``rename``."""
    if isinstance(data, list):
        return [_renamed(item, rename) for item in data]
    if not isinstance(data, dict):
        return data
    out = {key: _renamed(value, rename) for key, value in data.items()}
    if isinstance(out.get("name"), str) and str(out.get("id", "")).startswith("bmr_"):
        out["name"] = rename(out["name"])
    return out


def _clean_exit(done: subprocess.CompletedProcess[str]) -> str:
    text = done.stdout + done.stderr
    assert "internal error" not in text and "Traceback" not in text, text[-2000:]
    # No token and no secret value is in play here, so nothing may be redacted: a
    # "[REDACTED]" would be a fact (a URL, a path, a name) lost from the message.
    assert "[REDACTED]" not in text, text[-2000:]
    return text


def _nothing_outside(s: Setup) -> None:
    assert list(s.outside.iterdir()) == []
    strays = [p for p in s.root.rglob("pwned*")]
    assert strays == []


# --------------------------------------------------------------------------- manifests


def _add(path: str, size: int = 5) -> Transform:
    return lambda files, _outside: [*files, {"path": path, "size": size}]


def _with_size(name: str, delta: int) -> Transform:
    def change(files: list[dict[str, Any]], _outside: Path) -> list[dict[str, Any]]:
        return [{**f, "size": f["size"] + delta} if f["path"] == name else f for f in files]

    return change


def _duplicate(name: str) -> Transform:
    def change(files: list[dict[str, Any]], _outside: Path) -> list[dict[str, Any]]:
        extra = [{**f, "size": f["size"] + 7} for f in files if f["path"] == name]
        return [*files, *extra]

    return change


def _absolute(files: list[dict[str, Any]], outside: Path) -> list[dict[str, Any]]:
    return [*files, {"path": str(outside / "pwned.csv"), "size": 5}]


MANIFESTS: dict[str, tuple[Transform, str]] = {
    "absolute": (_absolute, "outside the fixed run layout"),
    "dotdot": (_add("../../../../outside/pwned.csv"), "outside the fixed run layout"),
    "dotdot-in-artifacts": (
        _add("artifacts/x/../../../../../outside/pwned.csv"),
        "outside the fixed run layout",
    ),
    "encoded-traversal": (
        _add("artifacts/%2e%2e/%252e%252e/..%2f..%2foutside%2fpwned.csv"),
        "outside the fixed run layout",
    ),
    "backslashes": (_add("..\\..\\..\\..\\outside\\pwned.csv"), "outside the fixed run layout"),
    "nul": (_add("summary.csv\x00/../../pwned.csv"), "outside the fixed run layout"),
    "duplicate": (_duplicate("summary.csv"), "duplicate path"),
    "size-too-small": (_with_size("results.csv", -10), "size mismatch"),
    "size-too-large": (_with_size("results.csv", +1000), "size mismatch"),
    "negative-size": (_with_size("summary.csv", -10_000_000), "invalid size"),
}


def _served(s: Setup, run_id: str) -> dict[str, bytes]:
    """The true outputs, read with the man in the middle switched off."""
    saved, s.platform.manifest = s.platform.manifest, None
    try:
        return s.server.expected_outputs(run_id) or {}
    finally:
        s.platform.manifest = saved


@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_hostile_manifest(setup: Setup, case: str) -> None:
    transform, message = MANIFESTS[case]
    setup.platform.manifest = transform
    done = run("osmosis-apply", setup.repo, setup.server.url, *APPLY_ARGS)
    text = _clean_exit(done)
    assert done.returncode == 3, text[-2000:]  # the submit succeeded, the download did not
    assert message.lower() in text.lower(), text[-2000:]
    _nothing_outside(setup)
    state = read_lockfile(setup.lockfile, platform=setup.server.url, workspace=WORKSPACE)
    (entry,) = state.runs.values()
    assert entry.run_id and setup.platform.submit_count() == 1
    # Every file at a final path in the run directory is exactly what the Platform serves.
    served = _served(setup, entry.run_id)
    run_dir = setup.repo / ".osmosis" / "benchmarks"
    for path in run_dir.rglob("*"):
        if path.is_file():
            rel = "/".join(path.relative_to(run_dir).parts[1:])
            assert not path.name.endswith(".partial"), path
            assert path.read_bytes() == served[rel], rel
    # The refusal is not a reason to pay again: the next plan only retries the download.
    again = run("osmosis-plan", setup.repo, setup.server.url)
    assert "0 to submit" in _clean_exit(again)


def test_symlinked_directory_in_run_dir(setup: Setup) -> None:
    first = run("osmosis-apply", setup.repo, setup.server.url, "--auto-approve")
    assert first.returncode == 0, first.stderr
    state = read_lockfile(setup.lockfile, platform=setup.server.url, workspace=WORKSPACE)
    (entry,) = state.runs.values()
    run_dir = setup.repo / ".osmosis" / "benchmarks" / str(entry.run_name)
    run_dir.mkdir(parents=True)
    (run_dir / "artifacts").symlink_to(setup.outside, target_is_directory=True)
    done = run(
        "osmosis-apply",
        setup.repo,
        setup.server.url,
        *APPLY_ARGS,
        "--download-types",
        "summary,results,artifacts",
    )
    text = _clean_exit(done)
    assert done.returncode in (1, 3), text[-2000:]
    assert "symlink" in text.lower(), text[-2000:]
    assert list(setup.outside.iterdir()) == []
    assert setup.platform.submit_count() == 1


# --------------------------------------------------------------------------- Platform JSON


RUNS = "/api/cli/benchmark-runs"


def _json_answer(body: bytes, status: int = 200) -> Response:
    return Response(status, {"Content-Type": "application/json"}, body)


ANSWERS: dict[str, Response] = {
    "html-page": Response(200, {"Content-Type": "text/html"}, b"<html>Sign in</html>"),
    "truncated": _json_answer(b'{"items": [{"id": "bmr_1", "name": '),
    "wrong-shape": _json_answer(b'{"items": "not a list", "total": "many"}'),
    "items-not-objects": _json_answer(b'{"items": [1, "two", null], "total": 3}'),
    "deeply-nested": _json_answer(b'{"items": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"),
    "oversized": _json_answer(b'{"items": [' + b",".join([b'"x"'] * 4_000_000) + b"]}"),
    "not-utf8": _json_answer(b'{"items": [], "note": "\xff\xfe"}'),
    "error-not-json": Response(400, {"Content-Type": "text/plain"}, b"\xff" * 100_000),
    "error-deeply-nested": _json_answer(
        b'{"error": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", 400
    ),
}


@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_malformed_platform_json(applied: Applied, case: str) -> None:
    setup = applied
    paid = setup.platform.submit_count()
    before = setup.lockfile.read_bytes()
    setup.platform.canned[("GET", RUNS)] = ANSWERS[case]
    for tool, args in (("osmosis-plan", ()), ("osmosis-apply", ("--auto-approve",))):
        done = run(tool, setup.repo, setup.server.url, *args)
        text = _clean_exit(done)
        assert done.returncode == 1, (tool, text[-2000:])
        assert "Error:" in done.stderr, done.stderr[-2000:]
        assert len(done.stderr) < 5000, "the error must not dump the answer"
        assert setup.lockfile.read_bytes() == before
    assert setup.platform.submit_count() == paid


PLANFILES: dict[str, bytes] = {
    "garbage": b"\x00\xff not a plan",
    "deeply-nested": b"[" * 200_000 + b"]" * 200_000,
    "wrong-kind": b'{"kind": "something-else", "plan": {}}',
    "plan-wrong-shape": b'{"kind": "osmosis-reconciler/saved-plan", "plan": {"items": 5}}',
}


@pytest.mark.parametrize("case", sorted(PLANFILES))
def test_hostile_saved_plan(applied: Applied, case: str) -> None:
    setup = applied
    paid = setup.platform.submit_count()
    before = setup.lockfile.read_bytes()
    planfile = setup.root / "plan.json"
    planfile.write_bytes(PLANFILES[case])
    done = run("osmosis-apply", setup.repo, setup.server.url, str(planfile))
    _clean_exit(done)
    assert done.returncode == 1
    assert "saved" in done.stderr and "osmosis-plan --out" in done.stderr, done.stderr
    assert len(done.stderr) < 5000
    assert setup.lockfile.read_bytes() == before
    assert setup.platform.submit_count() == paid


# --------------------------------------------------------------------------- configs


def _deep_toml(depth: int) -> str:
    return '[experiment]\nbenchmark = "terminal-bench-2-1"\nx = ' + "[" * depth + "]" * depth + "\n"


CONFIG_FILES: dict[str, bytes] = {
    "huge": b"# " + b"x" * (3 * 1024 * 1024) + b"\n",
    "huge-valid-toml": (
        '[experiment]\nbenchmark = "terminal-bench-2-1"\n'
        + "".join(f"k{i} = {i}\n" for i in range(200_000))
    ).encode(),
    "deeply-nested-arrays": _deep_toml(50_000).encode(),
    "deeply-nested-tables": ("[" + ".".join(f"t{i}" for i in range(5_000)) + "]\n").encode(),
    "deeply-nested-inline": ("x = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n").encode(),
    "not-utf8": b'[experiment]\nbenchmark = "terminal-bench-2-1\xff\xfe"\n',
    "binary": bytes(range(256)) * 64,
    "utf16": '[experiment]\nbenchmark = "hle"\n'.encode("utf-16"),
    # Issue 17: 35 s and over 6 GB on main, then "internal error".
    "header-40000-levels": ("[" + ".".join(f"t{i}" for i in range(40_000)) + "]\n").encode(),
    # The deepest header the 1 MiB size limit allows.
    "header-deepest-allowed": ("[" + ".".join(["a"] * 524_286) + "]\n").encode(),
    "dotted-key-deepest-allowed": (".".join(["a"] * 524_285) + " = 1\n").encode(),
    # 8.3 MB of errors on main.
    "unknown-keys-50000": (
        '[experiment]\nbenchmark = "hle"\n' + "".join(f"k{i} = {i}\n" for i in range(50_000))
    ).encode(),
}


@pytest.mark.parametrize("case", sorted(CONFIG_FILES))
def test_hostile_config(applied: Applied, case: str) -> None:
    setup = applied
    paid = setup.platform.submit_count()
    before = setup.lockfile.read_bytes()
    bad = setup.repo / "benchmarks" / "tb" / f"{case}.toml"
    bad.write_bytes(CONFIG_FILES[case])
    # plan validates first; apply must refuse before taking any action.
    for tool, args in (("osmosis-plan", ()), ("osmosis-apply", ("--auto-approve",))):
        done = run(tool, setup.repo, setup.server.url, *args)
        text = _clean_exit(done)
        assert done.returncode == 1, (tool, text[-2000:])
        assert f"{case}.toml" in done.stderr, done.stderr[-2000:]
        assert len(done.stderr) < 20_000, "the error must not echo the file"
        assert setup.lockfile.read_bytes() == before
    assert setup.platform.submit_count() == paid


# --------------------------------------------------------------------------- lockfiles


def _edit(pattern: str, replacement: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert pattern in text, pattern
        return text.replace(pattern, replacement, 1)

    return edit


LOCKFILE_EDITS: dict[str, tuple[Callable[[str], str], str]] = {
    "run-id-not-a-string": (lambda t: t.replace('run_id = "', 'run_id = 42 # "', 1), "run_id"),
    "serial-negative": (lambda t: _replace_line(t, "serial = ", "serial = -3"), "serial"),
    "lineage-missing": (lambda t: _replace_line(t, "lineage = ", ""), "lineage"),
    "runs-not-a-table": (lambda t: t.split("\n[runs.")[0] + "\nruns = 5\n", "runs"),
    "unknown-key": (
        lambda t: t.replace("workspace = ", 'colour = "red"\nworkspace = ', 1),
        "colour",
    ),
    "not-toml": (lambda t: t + "\n[runs.\n", "not valid TOML"),
    "future-version": (lambda t: _replace_line(t, "version = ", "version = 99"), "newer"),
    "other-workspace": (
        lambda t: _replace_line(t, "workspace = ", 'workspace = "someone-else"'),
        "someone-else",
    ),
    "not-utf8": (lambda t: t + "# \udcff\n", "not UTF-8"),
}


def _replace_line(text: str, prefix: str, new: str) -> str:
    lines = text.split("\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(prefix))
    lines[index] = new
    return "\n".join(lines)


@pytest.mark.parametrize("case", sorted(LOCKFILE_EDITS))
def test_hand_edited_lockfile(applied: Applied, case: str) -> None:
    setup = applied
    paid = setup.platform.submit_count()
    edit, needle = LOCKFILE_EDITS[case]
    text = setup.lockfile.read_text()
    setup.lockfile.write_bytes(edit(text).encode("utf-8", "surrogateescape"))
    before = setup.lockfile.read_bytes()
    # The two ways to write the lockfile, and a refresh-only plan (which reads it the same way).
    for tool, args in (
        ("osmosis-apply", ("--auto-approve",)),
        ("osmosis-apply", ("--refresh-only",)),
        ("osmosis-plan", ("--refresh-only",)),
    ):
        done = run(tool, setup.repo, setup.server.url, *args)
        out = _clean_exit(done)
        assert done.returncode == 1, (tool, out[-2000:])
        assert "osmosis.lock" in done.stderr and needle in done.stderr, done.stderr[-2000:]
        assert setup.lockfile.read_bytes() == before
    # A lockfile that cannot be read is never mistaken for an empty one: nothing resubmitted.
    assert setup.platform.submit_count() == paid


def test_merge_conflicted_lockfile(applied: Applied) -> None:
    setup = applied
    paid = setup.platform.submit_count()
    assert git_run(setup.repo, "add", "-A").returncode == 0
    assert git_run(setup.repo, "commit", "-qm", "apply").returncode == 0
    # Two branches each record something different in the same lines, as two applies would.
    git_run(setup.repo, "checkout", "-qb", "other")
    setup.lockfile.write_text(_replace_line(setup.lockfile.read_text(), "serial = ", "serial = 7"))
    git_run(setup.repo, "commit", "-qam", "other apply")
    git_run(setup.repo, "checkout", "-q", "main")
    setup.lockfile.write_text(_replace_line(setup.lockfile.read_text(), "serial = ", "serial = 9"))
    git_run(setup.repo, "commit", "-qam", "main apply")
    merged = git_run(setup.repo, "merge", "other")
    assert merged.returncode != 0 and "CONFLICT" in merged.stdout, merged.stdout
    before = setup.lockfile.read_bytes()
    assert b"<<<<<<<" in before
    for tool, args in (("osmosis-plan", ()), ("osmosis-apply", ("--auto-approve",))):
        done = run(tool, setup.repo, setup.server.url, *args)
        _clean_exit(done)
        assert done.returncode == 1
        err = done.stderr
        assert "merge conflict" in err and "osmosis.lock" in err, err
        assert "git checkout --theirs" in err and "--refresh-only" in err, err
        assert setup.lockfile.read_bytes() == before
    assert setup.platform.submit_count() == paid
    assert os.listdir(setup.outside) == []


# --------------------------------------------------------------------------- issue 17


def _no_escapes(text: str) -> None:
    """No terminal escape sequence (ESC, a C1 CSI, BEL) reached the output."""
    for char in ("\x1b", "\x9b", "\x07"):
        assert char not in text, repr(text[max(0, text.find(char) - 200) : text.find(char) + 200])


def _snapshot(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): (p.read_bytes() if p.is_file() else b"<dir>")
        for p in sorted(path.rglob("*"))
    }


def _config(index: int) -> str:
    return CONFIG.format(index=index, secret=SECRET_NAME)


def _commit(repo: Path, message: str) -> None:
    assert git_run(repo, "add", "-A").returncode == 0
    assert git_run(repo, "commit", "-qm", message).returncode == 0


def test_unknown_keys_are_capped_with_a_count(setup: Setup) -> None:
    bad = setup.repo / "benchmarks" / "tb" / "many.toml"
    bad.write_bytes(CONFIG_FILES["unknown-keys-50000"])
    done = run("osmosis-plan", setup.repo, setup.server.url, "--validate-only")
    _clean_exit(done)
    assert done.returncode == 1
    assert len(done.stderr) < 20_000, len(done.stderr)
    lines = [line for line in done.stderr.splitlines() if "many.toml" in line]
    assert len(lines) == 21, lines[-3:]  # 20 listed and the count of the rest
    # 50,000 unknown keys, the missing [[agents]] and HLE's task_set warning: 20 listed.
    assert "49,982 more problem(s) in this file are not listed" in lines[-1], lines[-1]


def test_deepest_config_fails_clearly_with_its_position(setup: Setup) -> None:
    bad = setup.repo / "benchmarks" / "tb" / "deep.toml"
    bad.write_bytes(CONFIG_FILES["header-deepest-allowed"])
    done = run("osmosis-plan", setup.repo, setup.server.url, "--validate-only")
    _clean_exit(done)
    assert done.returncode == 1
    assert (
        "benchmarks/tb/deep.toml:1:2: Invalid TOML for a benchmark config: a key or table header "
        "with more than 32 dotted parts"
    ) in done.stderr, done.stderr


def test_a_wrong_execution_type_fails_validate_only_with_line_key_and_hint(setup: Setup) -> None:
    path = setup.repo / "benchmarks" / "tb" / "c00.toml"
    text = path.read_text().replace("attempts_per_task = 1", 'attempts_per_task = "three"')
    path.write_text(text)
    line = text.splitlines().index('attempts_per_task = "three"') + 1
    done = run("osmosis-plan", setup.repo, setup.server.url, "--validate-only")
    _clean_exit(done)
    assert done.returncode == 1
    assert (
        f"benchmarks/tb/c00.toml:{line}:21: execution.attempts_per_task: must be an integer, got "
        "a string (write a whole number without quotes, e.g. attempts_per_task = 3)"
    ) in done.stderr, done.stderr
    assert setup.platform.submit_count() == 0


def test_a_fifo_under_benchmarks_is_reported_not_skipped(setup: Setup) -> None:
    os.mkfifo(setup.repo / "benchmarks" / "tb" / "pipe.toml")
    os.mkfifo(setup.repo / "benchmarks" / "tb" / "pipe")
    for tool, args in (
        ("osmosis-plan", ("--validate-only",)),
        ("osmosis-apply", ("--auto-approve",)),
    ):
        done = run(tool, setup.repo, setup.server.url, *args, timeout=60)
        _clean_exit(done)
        assert done.returncode == 1, (tool, done.stderr)
        for name in ("pipe.toml", "pipe"):
            assert (
                f"benchmarks/tb/{name}: is a FIFO (named pipe), not a regular file" in done.stderr
            )
    assert setup.platform.submit_count() == 0


def test_a_file_name_that_is_not_utf8_is_a_config_error_at_plan_time(setup: Setup) -> None:
    bench = os.fsencode(setup.repo / "benchmarks" / "tb")
    with open(os.path.join(bench, b"b\xffd.toml"), "w") as handle:
        handle.write(_config(7))
    for tool, args in (("osmosis-plan", ()), ("osmosis-apply", ("--auto-approve",))):
        done = run(tool, setup.repo, setup.server.url, *args)
        _clean_exit(done)
        assert done.returncode == 1, (tool, done.stdout + done.stderr)
        assert (
            "benchmarks/tb/b\\xffd.toml: file name is not valid UTF-8 (byte 0xff)" in done.stderr
        ), done.stderr
    assert setup.platform.submit_count() == 0
    assert not setup.lockfile.exists()


HOSTILE_NAME = "evil\x1b]0;pwned\x07\x1b[2J\nPlan: 0 to submit\u202e"


def test_names_with_newlines_and_escapes_are_escaped_wherever_printed(setup: Setup) -> None:
    hostile = setup.repo / "benchmarks" / "tb" / f"{HOSTILE_NAME}.toml"
    hostile.write_text(_config(9))
    _commit(setup.repo, "a config with a hostile name")
    shown = "tb/evil\\x1b]0;pwned\\x07\\x1b[2J\\nPlan: 0 to submit\\u202e"
    # Its address could not be named to osmosis-state once recorded (issue 36): the plan
    # refuses the file, naming it escaped, and nothing is paid for it.
    for fmt in ("text", "markdown"):
        done = run("osmosis-plan", setup.repo, setup.server.url, "--format", fmt)
        text = _clean_exit(done)
        assert done.returncode == 1, text[-2000:]
        _no_escapes(text)
        assert "\nPlan: 0 to submit" not in text.replace(shown, "")
        assert f"{shown}.toml: the path holds a control character" in text, text
    hostile.unlink()
    _commit(setup.repo, "the hostile name removed")
    # Run names come from the Platform: they are escaped wherever printed.
    setup.platform.rename = lambda name: name + "\x1b[31m\n~ forged drift"
    try:
        applied = run("osmosis-apply", setup.repo, setup.server.url, *APPLY_ARGS)
        text = _clean_exit(applied)
        assert applied.returncode == 0, text[-2000:]
        _no_escapes(text)
        assert "\\x1b[31m\\n~ forged drift: ok: submitted" in applied.stdout, applied.stdout
        assert "\n~ forged drift" not in text
        again = run("osmosis-plan", setup.repo, setup.server.url, "--format", "markdown")
        _no_escapes(_clean_exit(again))
    finally:
        setup.platform.rename = None
    assert setup.platform.submit_count() == 1


# -- symlinked roots


def _link_benchmarks_outside(s: Setup) -> None:
    shutil.move(s.repo / "benchmarks", s.outside / "benchmarks")
    (s.repo / "benchmarks").symlink_to(s.outside / "benchmarks", target_is_directory=True)


def _benchmarks_loop(s: Setup) -> None:
    shutil.rmtree(s.repo / "benchmarks")
    (s.repo / "benchmarks").symlink_to("benchmarks")


def _state_outside(s: Setup) -> None:
    (s.outside / "state").mkdir()
    (s.repo / "state").symlink_to(s.outside / "state", target_is_directory=True)


def _lockfile_outside(s: Setup) -> None:
    target = s.outside / "osmosis.lock"
    target.write_text("# someone else's state\n")
    (s.repo / "state").mkdir()
    (s.repo / "state" / "osmosis.lock").symlink_to(target)


CONFIG_ROOTS: dict[str, tuple[Callable[[Setup], None], str]] = {
    "lockfile-outside": (_lockfile_outside, "state/osmosis.lock is a symlink (to "),
    "benchmarks-outside": (
        _link_benchmarks_outside,
        "benchmarks directory 'benchmarks' is a symlink (to ",
    ),
    "benchmarks-loop": (_benchmarks_loop, "benchmarks directory 'benchmarks' is a symlink loop"),
    "state-outside": (_state_outside, "state is a symlink (to "),
}


@pytest.mark.parametrize("case", sorted(CONFIG_ROOTS))
def test_symlinked_config_and_state_roots_are_refused(setup: Setup, case: str) -> None:
    make, message = CONFIG_ROOTS[case]
    make(setup)
    before = _snapshot(setup.outside)
    for tool, args in (("osmosis-plan", ()), ("osmosis-apply", ("--auto-approve",))):
        done = run(tool, setup.repo, setup.server.url, *args)
        _clean_exit(done)
        assert done.returncode == 1, (tool, done.stdout[-2000:], done.stderr[-2000:])
        assert message in done.stderr, done.stderr
    assert setup.platform.submit_count() == 0
    assert _snapshot(setup.outside) == before


def _run_dir(a: Applied) -> Path:
    state = read_lockfile(a.lockfile, platform=a.server.url, workspace=WORKSPACE)
    (entry,) = state.runs.values()
    return a.repo / DOWNLOADS / str(entry.run_name)


def _osmosis_outside(a: Applied) -> str:
    (a.repo / ".osmosis").symlink_to(a.outside, target_is_directory=True)
    return ".osmosis is a symlink"


def _downloads_outside(a: Applied) -> str:
    (a.repo / ".osmosis").mkdir()
    (a.repo / DOWNLOADS).symlink_to(a.outside, target_is_directory=True)
    return ".osmosis/benchmarks is a symlink"


def _run_dir_outside(a: Applied) -> str:
    run_dir = _run_dir(a)
    run_dir.parent.mkdir(parents=True)
    run_dir.symlink_to(a.outside, target_is_directory=True)
    return f".osmosis/benchmarks/{run_dir.name} is a symlink"


DOWNLOAD_ROOTS: dict[str, Callable[[Applied], str]] = {
    ".osmosis": _osmosis_outside,
    ".osmosis-benchmarks": _downloads_outside,
    "run-dir": _run_dir_outside,
}


@pytest.mark.parametrize("case", sorted(DOWNLOAD_ROOTS))
def test_symlinked_download_roots_write_nothing_outside(applied: Applied, case: str) -> None:
    message = DOWNLOAD_ROOTS[case](applied)
    paid = applied.platform.submit_count()
    done = run("osmosis-apply", applied.repo, applied.server.url, *APPLY_ARGS)
    text = _clean_exit(done)
    assert done.returncode == 1, text[-2000:]  # only the download was planned, and it failed
    assert message in text, text[-2000:]
    assert list(applied.outside.iterdir()) == []
    assert applied.platform.submit_count() == paid
    state = read_lockfile(applied.lockfile, platform=applied.server.url, workspace=WORKSPACE)
    assert all(entry.downloads is None for entry in state.runs.values())


# -- OS errors on our own files


def _without_root_powers() -> list[str]:
    """A command prefix under which permission bits apply (root ignores them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only directory stays writable")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


def test_a_read_only_state_directory_is_a_clear_error_naming_the_path(applied: Applied) -> None:
    before = applied.lockfile.read_bytes()
    state_dir = applied.lockfile.parent
    state_dir.chmod(0o555)
    try:
        done = subprocess.run(
            [
                *_without_root_powers(),
                *command("osmosis-apply", applied.repo, applied.server.url, "--auto-approve"),
            ],
            env=cli_env(),
            cwd=applied.repo,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        state_dir.chmod(0o755)
    _clean_exit(done)
    assert done.returncode == 1, done.stderr
    assert f"Error: {state_dir}/.osmosis.lock.held: Permission denied" in done.stderr, done.stderr
    assert applied.lockfile.read_bytes() == before


def test_a_disk_that_fills_after_a_paid_submit_is_a_partial_apply(setup: Setup) -> None:
    # Every lockfile write rewrites the whole file. The Platform's run links are made long,
    # so the file with the recorded run no longer fits under the file-size limit while the
    # one with the intent still does: the run is paid for, then its record fails.
    original_url = setup.platform.public_url
    setup.platform.public_url = original_url + "/" + "x" * 3000
    limit = 2500

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    try:
        done = subprocess.run(
            command("osmosis-apply", setup.repo, setup.server.url, "--auto-approve"),
            # Coverage could not write its data under the file-size limit either.
            env=without_coverage(cli_env()),
            cwd=setup.repo,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=small_disk,
        )
    finally:
        setup.platform.public_url = original_url
    text = _clean_exit(done)
    assert setup.platform.submit_count() == 1, text[-2000:]
    assert done.returncode == 3, text[-2000:]
    assert "the run was created" in done.stdout and "File too large" in done.stdout, done.stdout
    assert "Partial apply: 1 failed action(s) did reach the Platform" in done.stdout
    # The intent is on disk: the next apply records the run instead of paying again.
    again = run("osmosis-apply", setup.repo, setup.server.url, "--auto-approve")
    assert again.returncode == 0, _clean_exit(again)[-2000:]
    assert setup.platform.submit_count() == 1
    state = read_lockfile(setup.lockfile, platform=setup.server.url, workspace=WORKSPACE)
    assert [e.run_id for e in state.runs.values()] == [setup.server.runs()[0]["id"]]


# -- a Platform that trickles, stays silent, or stalls a download


def _faults(platform: LocalPlatform, faults: Faults) -> None:
    platform.faults = faults
    platform.injector = FaultInjector(faults)


@pytest.mark.parametrize("fault", ["trickle", "silent"])
def test_a_trickling_or_silent_platform_ends_the_plan_at_its_deadline(
    setup: Setup, fault: str
) -> None:
    _faults(setup.platform, Faults(trickle_ms=1000) if fault == "trickle" else Faults(silent=True))
    try:
        done = run(
            "osmosis-plan",
            setup.repo,
            setup.server.url,
            env={"OSMOSIS_PLATFORM_DEADLINE": "2"},
            timeout=60,
        )
    finally:
        _faults(setup.platform, Faults())
    _clean_exit(done)
    assert done.returncode == 1
    assert "did not complete GET /benchmark-runs within the 2 s deadline" in done.stderr, (
        done.stderr
    )


def _finished_downloads(repo: Path) -> list[Path]:
    """Downloaded files in place under the repository (no ``.partial`` temporaries)."""
    top = repo / ".osmosis" / "benchmarks"
    return [p for p in top.rglob("*") if p.is_file() and not p.name.startswith(".")]


def test_sigterm_during_a_stalled_download_exits_130_with_the_lockfile_flushed(
    setup: Setup,
) -> None:
    first = run("osmosis-apply", setup.repo, setup.server.url, "--auto-approve")
    assert first.returncode == 0, first.stderr
    # The run's first file arrives, the second stalls halfway through its body.
    _faults(setup.platform, Faults(stall_downloads_after=1))
    proc = spawn(
        "osmosis-apply", setup.repo, setup.server.url, "--auto-approve", "--parallelism", "1"
    )
    try:
        stalled = wait_until(lambda: setup.platform.fault_counts.get("stalled_download", 0) > 0, 60)
        assert stalled
        # The two GETs run side by side: on a slow machine the first may still be in flight
        # when the second stalls. Interrupt only once it is whole on disk.
        arrived = wait_until(lambda: _finished_downloads(setup.repo), 60)
        assert arrived
        proc.send_signal(signal.SIGTERM)
        out, err = finish(proc, timeout=60)
    finally:
        _faults(setup.platform, Faults())
    assert proc.returncode == 130, (out[-2000:], err[-2000:])
    assert "interrupted" in err
    state = read_lockfile(setup.lockfile, platform=setup.server.url, workspace=WORKSPACE)
    (entry,) = state.runs.values()
    # The file that arrived is recorded (download records are written lazily, then flushed).
    assert entry.downloads is not None and entry.downloads.files == 1, entry.downloads
    run_dir = setup.repo / entry.downloads.directory
    (name,) = entry.downloads.sha256
    assert sorted(p.name for p in run_dir.iterdir()) == [name]  # no .partial left behind
