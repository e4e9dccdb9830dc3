"""One file-access rule for every command (issue 36, findings 2 and 3).

On main (35dc349) the plan refused a config committed as a symlink to a file outside the
repository, but ``osmosis-reconciler fmt`` (and the ``osmosis-fmt`` pre-commit hook) read
the target and wrote its content into the repository in place of the link, and rewrote a
file outside the repository named by path; ``osmosis-reconciler show /dev/zero`` read
until memory ran out. Here every command of the front door runs against the same hostile
tree (a real applied repository with a config, a generator, the lockfile and an output
directory each committed as a link to the outside) under the probe of
``tests/support/hostile_tree.py``: each refuses, naming the link, and none reads or writes
a byte outside. ``make reliability`` runs every command against every single hazard
(``tests/reliability/test_hostile_trees.py``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.local_platform import LocalPlatform
from tests.support.emulator import serve
from tests.support.hostile_tree import (
    MARKER,
    Layout,
    build_template,
    cli_env,
    commands,
    outside_config,
    prepare,
    probe,
)

WORKSPACE = "file-access"
FRONT = str(Path(sys.executable).parent / "osmosis-reconciler")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Layout, str]]:
    root = tmp_path_factory.mktemp("file-access")
    platform = LocalPlatform(root / "platform", speed=5000, seed=0, workspaces=(WORKSPACE,))
    platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-file-access-suite-value")
    handle = serve(platform, quiet=True)
    try:
        yield root / "template", build_template(root, handle.url, WORKSPACE), handle.url
    finally:
        handle.close()


def test_every_command_refuses_the_same_hostile_tree(
    template: tuple[Path, Layout, str], tmp_path: Path
) -> None:
    source, layout, url = template
    failures = []
    for name, argv in commands(layout, url, WORKSPACE).items():
        repo, outside = prepare(source, layout, None, tmp_path / "case")
        outcome = probe(name, "every link", repo, outside, argv, env=cli_env())
        named = "symlink" in outcome.text or "through a link" in outcome.text
        if outcome.reads or outcome.writes or outcome.internal_error:
            failures.append(f"{name}: reads {outcome.reads}, writes {outcome.writes}")
        if not outcome.refused or not named:
            failures.append(f"{name}: exit {outcome.code}, the link not named")
        if failures and failures[-1].startswith(name):
            failures[-1] += f"\n    {outcome.text[-800:]}"
    assert not failures, "\n".join(failures)


def _front(repo: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FRONT, *argv], cwd=repo, env=cli_env(), capture_output=True, text=True, timeout=120
    )


def test_fmt_never_copies_a_linked_file_into_the_repository(
    template: tuple[Path, Layout, str], tmp_path: Path
) -> None:
    source, layout, _url = template
    repo, outside = prepare(source, layout, "config link", tmp_path / "case")
    link = repo / "benchmarks" / "tb" / "creds.toml"
    before = (outside / "creds.toml").read_bytes()
    for argv in (["fmt"], ["fmt", "benchmarks/tb/creds.toml"], ["fmt", "--check"]):
        done = _front(repo, *argv)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "benchmarks/tb/creds.toml: is a symlink (to " in done.stderr, done.stderr
        assert MARKER not in done.stdout + done.stderr
    assert link.is_symlink() and (outside / "creds.toml").read_bytes() == before
    # A link that stays in the benchmarks directory is skipped, not an error.
    (repo / "benchmarks" / "tb" / "creds.toml").unlink()
    (repo / "benchmarks" / "tb" / "same.toml").symlink_to("c00.toml")
    done = _front(repo, "fmt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "benchmarks" / "tb" / "same.toml").is_symlink()


def test_fmt_rewrites_no_file_outside_the_repository(
    template: tuple[Path, Layout, str], tmp_path: Path
) -> None:
    source, layout, _url = template
    repo, outside = prepare(source, layout, "results link", tmp_path / "case")
    elsewhere = tmp_path / "elsewhere.toml"
    text = outside_config(layout, repo).replace("\n\n", "\n\n\n")  # not in the layout
    elsewhere.write_text(text, encoding="utf-8")
    done = _front(repo, "fmt", str(elsewhere))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "is outside the repository; fmt rewrites the repository's files only" in done.stderr
    assert elsewhere.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("path", ["/dev/zero", "fifo"])
def test_show_reads_only_a_regular_file(
    template: tuple[Path, Layout, str], tmp_path: Path, path: str
) -> None:
    source, layout, _url = template
    repo, _outside = prepare(source, layout, "results link", tmp_path / "case")
    if path == "fifo":
        import os

        os.mkfifo(repo / "plan.fifo")
        path = "plan.fifo"
    done = _front(repo, "show", path)
    kind = "a device" if path == "/dev/zero" else "a FIFO"
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"saved plan {path}: is {kind}, not a regular file" in done.stderr, done.stderr


def test_fmt_never_walks_a_linked_directory(
    template: tuple[Path, Layout, str], tmp_path: Path
) -> None:
    source, layout, _url = template
    repo, outside = prepare(source, layout, "benchmarks link", tmp_path / "case")
    for argv in (["fmt"], ["fmt", "benchmarks/tb"], ["fmt", "--check", "benchmarks"]):
        outcome = probe("fmt", "benchmarks link", repo, outside, argv, env=cli_env())
        assert outcome.code == 1 and not outcome.reads and not outcome.writes, outcome
        assert "benchmarks is a symlink (to " in outcome.text or (
            "benchmarks: is a symlink (to " in outcome.text
        ), outcome.text
