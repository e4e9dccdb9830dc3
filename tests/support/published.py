"""This repository as a consumer sees it: published, offline, and every pin its documents show.

``publish(tmp)`` makes a bare repository whose ``main`` is this checkout's ``HEAD`` (what a
merge would publish) and a git config that sends the documented GitHub URL there
(``url.<file://...>.insteadOf``), so ``git ls-remote``, ``pip install git+https://...`` and
an action checkout run exactly as the documents say, with no network.

``pins()`` finds every version or ref the README, the ``docs/`` pages and ``action.yml``
pin: a ``git+https://github.com/osmosis-ai/osmosis-reconciler@REF`` install, a ``uses:
osmosis-ai/osmosis-reconciler@REF`` action; a ``$ref`` pin is resolved by the assignment the
same block shows (``ref=$(git ls-remote ...)``).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support import docs
from tests.support.git import git, git_env

PROJECT_ROOT = docs.PROJECT_ROOT
GITHUB_URL = "https://github.com/osmosis-ai/osmosis-reconciler"
ACTION = "osmosis-ai/osmosis-reconciler"
_GIT_PIN = re.compile(r"git\+" + re.escape(GITHUB_URL) + r"@([^\"'\s`]+)")
_ACTION_PIN = re.compile(r"(?<![\w/.:+<>-])([\w<>.-]+/osmosis-reconciler)@([^\"'\s`,;)]+)")
_ASSIGNMENT = re.compile(r"^(\w+)=(\$\(.*\))\s*$", re.M)
FULL_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Pin:
    """One pinned ref in a document."""

    page: Path
    line: int
    kind: str
    """``install`` (a pip/pipx git URL) or ``action`` (a ``uses:`` reference)."""
    ref: str
    """As written: a tag, a commit, or ``$name`` set by a command of the same block."""
    text: str
    """The whole line, for the message of a failing check."""
    block: str
    """The fenced block (or, outside any block, the paragraph's line) holding it."""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(PROJECT_ROOT)}:{self.line}"


def documents() -> list[Path]:
    """Every file a consumer reads a pin from."""
    return [*docs.pages(), PROJECT_ROOT / "action.yml"]


def pins() -> list[Pin]:
    """Every pin of every document, in document order."""
    found: list[Pin] = []
    for page in documents():
        text = page.read_text(encoding="utf-8")
        block_spans = [(m.start(), m.end(), m.group(2)) for m in docs.FENCE.finditer(text)]
        offset = 0
        for number, line in enumerate(text.splitlines(keepends=True), start=1):
            block = next((b for s, e, b in block_spans if s <= offset < e), line)
            offset += len(line)
            for match in _GIT_PIN.finditer(line):
                found.append(Pin(page, number, "install", match.group(1), line.strip(), block))
            for match in _ACTION_PIN.finditer(line):
                found.append(Pin(page, number, "action", match.group(2), line.strip(), block))
    return found


@dataclass(frozen=True)
class Published:
    """This checkout published: ``remote`` (bare, ``main`` = ``HEAD``) and ``gitconfig``
    (the GitHub URL sent to it); ``env`` carries both to git and pip."""

    remote: Path
    gitconfig: Path
    head: str

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = git_env(extra=base)
        env["GIT_CONFIG_GLOBAL"] = str(self.gitconfig)
        return env

    def resolve(self, ref: str) -> str | None:
        """The commit ``ref`` names on the published repository, or None."""
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
            cwd=self.remote,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() if done.returncode == 0 else None

    def evaluate(self, pin: Pin) -> str:
        """A ``$name`` pin's value: its block's ``name=$(...)`` run in a shell, as a reader
        would run it; any other pin as written."""
        if not pin.ref.startswith("$"):
            return pin.ref
        name = pin.ref.strip("${}")
        commands = {m.group(1): m.group(2) for m in _ASSIGNMENT.finditer(pin.block)}
        assert name in commands, f"{pin.where}: {pin.ref} is set by no line of its block"
        done = subprocess.run(
            ["bash", "-c", f'{name}={commands[name]}; printf %s "${name}"'],
            cwd=self.remote.parent,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{pin.where}: {done.stderr}"
        return done.stdout.strip()


def publish(tmp: Path) -> Published:
    """Publish this checkout's ``HEAD`` as ``main`` of a bare repository under ``tmp``."""
    head = git(PROJECT_ROOT, "rev-parse", "HEAD")
    remote = tmp / "osmosis-reconciler.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    git(remote, "fetch", "-q", "--no-tags", str(PROJECT_ROOT), f"{head}:refs/heads/main")
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text(
        f'[url "file://{remote}"]\n\tinsteadOf = {GITHUB_URL}\n'
        "[user]\n\tname = Consumer\n\temail = consumer@example.com\n"
        "[init]\n\tdefaultBranch = main\n",
        encoding="utf-8",
    )
    return Published(remote, gitconfig, head)
