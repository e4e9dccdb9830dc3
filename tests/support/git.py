"""The one ``git()`` helper of the suite: real git in a real repository, hermetic.

The environment is the session's (tests/conftest.py puts HOME in a temp dir with a test
identity) without any ``GIT_*`` variable from outside (a test run from a git hook would
otherwise act on the hook's repository), with the author and committer given, so commits
are reproducible and name who made them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

AUTHOR = ("Osmosis Tests", "tests@osmosis-reconciler.invalid")


def git_env(
    author: tuple[str, str] = AUTHOR, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a git call: no outside ``GIT_*``, ``author`` as author and committer."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    name, email = author
    env.update(
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME=name,
        GIT_COMMITTER_EMAIL=email,
        GIT_CONFIG_NOSYSTEM="1",
    )
    env.update(extra or {})
    return env


def git_run(
    repo: Path,
    *args: str,
    author: tuple[str, str] = AUTHOR,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``repo``; the finished process, whatever its exit code."""
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env=git_env(author, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def git(
    repo: Path,
    *args: str,
    check: bool = True,
    author: tuple[str, str] = AUTHOR,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> str:
    """Run ``git args`` in ``repo``; its stdout, stripped. Fails the test (naming the command
    and git's message) when git fails, unless ``check=False``."""
    done = git_run(repo, *args, author=author, env=env, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout.strip()


def commit(repo: Path, message: str, *paragraphs: str, allow_empty: bool = False) -> str:
    """Stage everything (unless ``allow_empty``: a commit of nothing, as a request-only commit
    is made) and commit; ``paragraphs`` are further ``-m`` paragraphs (trailers). The sha."""
    if not allow_empty:
        git(repo, "add", "-A")
    args = ["commit", "-q", "-m", message]
    for paragraph in paragraphs:
        args += ["-m", paragraph]
    if allow_empty:
        args.append("--allow-empty")
    git(repo, *args)
    return git(repo, "rev-parse", "HEAD")


def make_clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare ``main`` remote with one commit and two clones of it: (remote, a, b)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(a))
    git(a, "checkout", "-q", "-b", "main")
    (a / "README.md").write_text("x\n")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "init")
    git(a, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(remote), str(b))
    return remote, a, b
