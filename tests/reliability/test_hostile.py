"""Hostile input (issue 7, suite 4), through the real commands against a loopback Platform.

Manifests whose paths try to escape the run directory or whose sizes lie, Platform answers
that are malformed, oversized or nested without end, configs that are huge, nested or not
UTF-8, lockfiles edited by hand or left with merge conflicts. Each case: a clear error (no
"internal error"), nothing written outside where it belongs, and nothing lost: the
lockfile is byte-for-byte unchanged when the command refuses, and no run is paid twice.

Fast: part of ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.platform.local import LocalPlatform, Response, start_server

from .harness import (
    APPLY_ARGS,
    SECRET_NAME,
    STATE,
    WORKSPACE,
    Server,
    make_repo,
    read_lockfile,
    run,
)

Transform = Callable[[list[dict[str, Any]], Path], list[dict[str, Any]]]


class HostilePlatform(LocalPlatform):
    """The local Platform with a man in the middle: rewritten manifests, canned answers."""

    manifest: Transform | None = None
    outside: Path = Path("/nonexistent")
    canned: dict[tuple[str, str], Response]

    def handle(self, method: str, target: str, headers: Any, body: bytes = b"") -> Response:
        path = target.split("?", 1)[0]
        for (m, route), answer in getattr(self, "canned", {}).items():
            if method == m and path == route:
                return answer
        answer = super().handle(method, target, headers, body)
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
    platform = HostilePlatform(tmp_path / "platform", speed=5000, workspaces=(WORKSPACE,))
    platform.canned = {}
    platform.outside = outside
    platform.set_secret(WORKSPACE, SECRET_NAME, "sk-hostile-suite")
    handle = start_server(platform, "127.0.0.1", 0)
    handle.server.handle_error = lambda request, address: None  # type: ignore[method-assign]
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
    handle = start_server(platform, "127.0.0.1", 0)
    handle.server.handle_error = lambda request, address: None  # type: ignore[method-assign]
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


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-c", "user.email=rel@example.invalid", "-c", "user.name=rel", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_merge_conflicted_lockfile(applied: Applied) -> None:
    setup = applied
    paid = setup.platform.submit_count()
    assert _git(setup.repo, "add", "-A").returncode == 0
    assert _git(setup.repo, "commit", "-qm", "apply").returncode == 0
    # Two branches each record something different in the same lines, as two applies would.
    _git(setup.repo, "checkout", "-qb", "other")
    setup.lockfile.write_text(_replace_line(setup.lockfile.read_text(), "serial = ", "serial = 7"))
    _git(setup.repo, "commit", "-qam", "other apply")
    _git(setup.repo, "checkout", "-q", "main")
    setup.lockfile.write_text(_replace_line(setup.lockfile.read_text(), "serial = ", "serial = 9"))
    _git(setup.repo, "commit", "-qam", "main apply")
    merged = _git(setup.repo, "merge", "other")
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
