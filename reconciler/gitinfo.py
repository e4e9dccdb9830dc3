"""What git knows about the repository: provenance, trailers, changed files.

Everything goes through the real ``git`` binary (``subprocess``, no library), with a fixed
environment: ``LC_ALL=C`` so messages are parseable, no pager, no prompts, no colour, and
none of the ``GIT_DIR``-style variables a calling hook may have set, so commands always act
on the repository we were constructed on.

Shallow clones (the CI default) are normal here, not errors: history beyond the boundary
is simply absent. ``last_commits`` omits paths whose last change cannot be seen, and
``is_shallow`` lets callers say why.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

import msgspec

from reconciler.errors import GitError

__all__ = ["CommitRef", "GitRepo", "Trailer", "redact_url"]

_TIMEOUT = 120.0
DEEPEN_HINT = (
    "fetch more history: `git fetch --unshallow` (or `git fetch --deepen=N`); "
    "on GitHub Actions set `fetch-depth: 0` on actions/checkout"
)
# Variables that would point git at another repository, index or work tree.
_SCRUBBED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)


class CommitRef(msgspec.Struct, frozen=True):
    """A commit, as provenance: the full sha and its subject line."""

    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]


class Trailer(msgspec.Struct, frozen=True):
    """One ``Key: value`` commit trailer (``Osmosis-Rerun: terminal-bench/*``)."""

    key: str
    """The key as requested (canonical spelling), whatever case the commit used."""
    value: str
    commit: str
    subject: str


def normalize_remote(url: str) -> str | None:
    """``https://github.com/Acme/Bench.git``, ``git@github.com:acme/bench`` and
    ``ssh://git@github.com/acme/bench.git`` all become ``github.com/acme/bench``; a local
    path is kept as given. None when nothing usable is left."""
    text = url.strip()
    if not text:
        return None
    scp = re.match(r"^(?:[^@/:]+@)?([^/:]+):(?!//)(.+)$", text)
    if "://" in text:
        parts = urlsplit(text)
        host, path = (parts.hostname or "").lower(), parts.path
    elif scp and not os.path.exists(text):
        host, path = scp.group(1).lower(), scp.group(2)
    else:
        return text.rstrip("/") or None
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    return f"{host}/{path.lower()}" if host else (path.lower() or None)


def redact_url(url: str) -> str:
    """``url`` without user info, so a token embedded in a remote URL never leaks."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.scheme and parts.netloc and "@" in parts.netloc:
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env.update(
        LC_ALL="C", LANGUAGE="C", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_OPTIONAL_LOCKS="0"
    )
    return env


# -c options for every call: stable, machine-readable output whatever the user's config.
BASE = [
    "git",
    "-c",
    "color.ui=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.renames=false",
]


def _run(
    cwd: Path, args: Sequence[str], *, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    try:
        result = subprocess.run(
            [*BASE, *args],
            cwd=cwd,
            env=git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        if not Path(cwd).is_dir():
            raise GitError(f"{cwd} is not a directory", "check the --dir path") from None
        raise GitError(
            "git is not installed (or not on PATH)", "install git, or run outside a git repository"
        ) from None
    except subprocess.TimeoutExpired:
        raise GitError(
            f"`git {' '.join(args)}` did not finish within {_TIMEOUT:g}s",
            "check the repository (a huge history or a stuck filesystem)",
        ) from None
    if check and result.returncode != 0:
        raise _error(cwd, args, result.stderr)
    return result


def _error(cwd: Path, args: Sequence[str], stderr: bytes) -> GitError:
    text = stderr.decode("utf-8", "replace").strip()
    first = text.splitlines()[0] if text else "no error output"
    first = first.removeprefix("fatal: ").removeprefix("error: ")
    if "dubious ownership" in text:
        return GitError(
            f"git refuses to use {cwd}: {first}",
            f"mark it safe: `git config --global --add safe.directory {cwd}`",
        )
    if "unknown revision" in text or "bad revision" in text or "Not a valid" in text:
        return GitError(
            f"`git {' '.join(args)}` failed: {first}",
            "check the revision name; in a shallow clone " + DEEPEN_HINT,
        )
    return GitError(
        f"`git {' '.join(args)}` failed: {first}", f"run the command in {cwd} to see the full error"
    )


class GitRepo:
    """A git work tree, queried through the ``git`` binary. Methods raise ``GitError``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"GitRepo({str(self.root)!r})"

    @classmethod
    def discover(cls, path: Path) -> GitRepo | None:
        """The work tree containing ``path``; None when there is none or git is missing."""
        path = Path(path)
        start = path if path.is_dir() else path.parent
        try:
            result = _run(start, ["rev-parse", "--show-toplevel"], check=False)
        except GitError:
            return None
        if result.returncode != 0:
            if b"dubious ownership" in result.stderr:
                raise _error(start, ["rev-parse"], result.stderr)
            return None
        top = result.stdout.decode("utf-8", "surrogateescape").strip()
        return cls(Path(top)) if top else None

    def _git(self, *args: str) -> bytes:
        return _run(self.root, args).stdout

    def _text(self, *args: str) -> str:
        return self._git(*args).decode("utf-8", "replace").strip()

    # ------------------------------------------------------------------ commits

    def head(self) -> str | None:
        """The HEAD commit sha; None for a repository with no commits yet."""
        result = _run(self.root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"], check=False)
        if result.returncode != 0:
            return None
        return result.stdout.decode().strip() or None

    def is_shallow(self) -> bool:
        """True in a shallow clone: history beyond the boundary is not available."""
        return self._text("rev-parse", "--is-shallow-repository") == "true"

    def _shallow_boundary(self) -> set[str]:
        """Commits at the shallow boundary; their parents are missing."""
        name = self._text("rev-parse", "--git-path", "shallow")
        shallow_file = Path(name) if os.path.isabs(name) else self.root / name
        try:
            return set(shallow_file.read_text().split())
        except FileNotFoundError:
            return set()

    def commit_exists(self, rev: str) -> bool:
        """Whether ``rev`` names a commit present in this clone."""
        if not rev or rev.startswith("-"):
            return False
        result = _run(self.root, ["rev-parse", "--verify", "-q", f"{rev}^{{commit}}"], check=False)
        return result.returncode == 0

    def subject(self, rev: str) -> str | None:
        """The subject line of ``rev``; None when the commit is not present."""
        if not self.commit_exists(rev):
            return None
        return self._text("log", "-1", "--format=%s", f"{rev}^{{commit}}", "--")

    def last_commit_touching(self, path: str) -> str | None:
        """The newest commit that changed ``path`` (relative to the root); None if never."""
        if self.head() is None:
            return None
        sha = self._text("log", "-1", "--format=%H", "HEAD", "--", path)
        return sha or None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is ``descendant`` or one of its ancestors (False if unknown)."""
        if not (self.commit_exists(ancestor) and self.commit_exists(descendant)):
            return False
        result = _run(self.root, ["merge-base", "--is-ancestor", ancestor, descendant], check=False)
        return result.returncode == 0

    def merge_base(self, revs: Sequence[str]) -> str | None:
        """The newest commit every one of ``revs`` descends from (``git merge-base
        --octopus``); None when there is none or a rev is not in this clone."""
        if not revs or any(rev.startswith("-") for rev in revs):
            return None
        result = _run(self.root, ["merge-base", "--octopus", *revs], check=False)
        sha = result.stdout.decode("utf-8", "replace").strip()
        return sha if result.returncode == 0 and sha else None

    def origin_url(self) -> str | None:
        """The ``origin`` remote URL with any credentials removed; None when unset."""
        result = _run(self.root, ["config", "--get", "remote.origin.url"], check=False)
        url = result.stdout.decode("utf-8", "replace").strip()
        return redact_url(url) if result.returncode == 0 and url else None

    def _resolve(self, rev: str) -> str:
        if rev.startswith("-"):
            raise GitError(f"invalid revision {rev!r}", "pass a commit, branch or tag name")
        if not self.commit_exists(rev):
            shallow = " (this is a shallow clone)" if self.is_shallow() else ""
            raise GitError(
                f"unknown revision {rev!r}{shallow}",
                "check the name, or fetch it first (`git fetch origin <branch>`); " + DEEPEN_HINT,
            )
        return self._text("rev-parse", "--verify", f"{rev}^{{commit}}")

    # ------------------------------------------------------------------ provenance

    def last_commits(self, paths: Sequence[str]) -> dict[str, CommitRef]:
        """For each path (relative to the root, ``/``-separated), the last commit that
        changed it, from one ``git log`` pass that stops once every path is found.

        Paths with no visible history are omitted: untracked files, and in a shallow clone
        files whose last change is beyond the boundary (the boundary commit appears to add
        every file, so it is never credited).
        """
        return {
            path: CommitRef(sha, subject)
            for path, (sha, subject, _) in self._last_touches(paths, first_parent=False).items()
        }

    def arrivals(self, paths: Sequence[str]) -> dict[str, datetime]:
        """For each path, when its current content reached this branch: the committer time
        of the newest commit on HEAD's first-parent line that changed it (for a pull request
        merged with a merge commit, the merge, not the branch's own commit). Omitted like in
        ``last_commits`` when not visible."""
        return {
            path: datetime.fromtimestamp(when, UTC)
            for path, (_, _, when) in self._last_touches(paths, first_parent=True).items()
        }

    def _last_touches(
        self, paths: Sequence[str], *, first_parent: bool
    ) -> dict[str, tuple[str, str, int]]:
        """Path -> (sha, subject, committer unix time) of the newest commit changing it."""
        wanted = {str(PurePosixPath(p)) for p in paths}
        if not wanted or self.head() is None:
            return {}
        boundary = self._shallow_boundary()
        # Limit the walk to the directories involved; passing thousands of paths would
        # overflow the command line.
        dirs = sorted({str(PurePosixPath(p).parent) for p in wanted})
        pathspecs = [f":(top,literal){d}" if d != "." else ":(top)." for d in dirs]
        args = [
            *BASE,
            "log",
            "--no-renames",
            *(["--first-parent", "-m"] if first_parent else []),
            "--format=%x1e%H%x1f%ct%x1f%s",
            "--name-only",
            "-z",
            "HEAD",
            "--",
            *pathspecs,
        ]
        found: dict[str, tuple[str, str, int]] = {}
        unknown: set[str] = set()
        try:
            process = subprocess.Popen(
                args,
                cwd=self.root,
                env=git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except FileNotFoundError:
            raise GitError("git is not installed (or not on PATH)", "install git") from None
        assert process.stdout is not None
        buffer = b""
        stopped_early = False
        try:
            while True:
                chunk = process.stdout.read(65536)
                buffer += chunk
                records = buffer.split(b"\x1e")
                # Keep a possibly incomplete last record until more output (or EOF) arrives.
                buffer = records.pop() if chunk else b""
                for record in records:
                    if not record:
                        continue
                    header, _, files = record.partition(b"\x00")
                    sha, _, rest = header.decode("utf-8", "replace").partition("\x1f")
                    when, _, subject = rest.partition("\x1f")
                    touch = (sha, subject, int(when) if when.isdigit() else 0)
                    for raw in files.lstrip(b"\n").split(b"\x00"):
                        name = raw.decode("utf-8", "surrogateescape")
                        if name in wanted and name not in found and name not in unknown:
                            if sha in boundary:
                                unknown.add(name)  # its real last change may be older
                            else:
                                found[name] = touch
                if len(found) + len(unknown) == len(wanted):
                    stopped_early = bool(chunk)
                    break
                if not chunk:
                    break
        finally:
            if stopped_early:
                process.kill()
            _, stderr = process.communicate()
        if not stopped_early and process.returncode != 0:
            raise _error(self.root, ["log"], stderr)
        return found

    def identity(self) -> str | None:
        """What names this repository, for the lockfile: the ``origin`` remote (host and
        path, no scheme, no credentials, no ``.git``, lower-cased), else the root commit of
        HEAD's history; None before the first commit."""
        origin = self.origin_url()
        if origin:
            normalised = normalize_remote(origin)
            if normalised:
                return normalised
        root = self.root_commit()
        return f"root:{root}" if root else None

    def root_commit(self) -> str | None:
        """The root commit of HEAD's history (the first of several, sorted); None before
        the first commit. A remote can be added or renamed; this never changes."""
        if self.head() is None:
            return None
        if not hasattr(self, "_root_commit"):
            roots = self._text("rev-list", "--max-parents=0", "HEAD").split()
            self._root_commit = sorted(roots)[0] if roots else None
        return self._root_commit

    def committed_file(
        self, path: str, rev: str = "HEAD", *, limit: int | None = None
    ) -> bytes | None:
        """The content of ``path`` (relative to the root) at ``rev``, or its first ``limit``
        bytes (a lockfile's header, without piping megabytes); None when absent."""
        if self.head() is None:
            return None
        if limit is None:
            result = _run(self.root, ["show", f"{rev}:{path}"], check=False)
            return result.stdout if result.returncode == 0 else None
        try:
            process = subprocess.Popen(
                [*BASE, "show", f"{rev}:{path}"],
                cwd=self.root,
                env=git_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise GitError("git is not installed (or not on PATH)", "install git") from None
        assert process.stdout is not None
        data = process.stdout.read(limit)
        if len(data) >= limit:
            process.kill()
        process.communicate()
        return data if data or process.returncode == 0 else None

    def changed_since(self, rev: str) -> set[str]:
        """Files that differ between ``rev`` and the working tree, relative to the root:
        committed, staged, unstaged and untracked changes, deletions included.

        Compared from the merge base of ``rev`` and HEAD when there is one, so on a pull
        request branch ``--changed-since origin/main`` means "what this branch touched",
        not what main gained since the branch was cut.
        """
        base = self._resolve(rev)
        if self.head() is not None:
            result = _run(self.root, ["merge-base", base, "HEAD"], check=False)
            if result.returncode == 0 and result.stdout.strip():
                base = result.stdout.decode().strip()
        diff = self._git("diff", "--name-only", "--no-renames", "-z", base, "--")
        untracked = self._git(
            "ls-files", "--others", "--exclude-standard", "-z", "--full-name", "--", ":(top)"
        )
        names: set[str] = set()
        for blob in (diff, untracked):
            names.update(n.decode("utf-8", "surrogateescape") for n in blob.split(b"\x00") if n)
        return names

    _TRAILER_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)\s*:\s*(.*)$")

    def trailers_since(
        self, rev: str | None, keys: Sequence[str] = ("Osmosis-Rerun", "Osmosis-Skip")
    ) -> list[Trailer]:
        """Trailers with one of ``keys`` (case-insensitive) in the commits ``rev..HEAD``
        (all of HEAD's history when ``rev`` is None), oldest commit first.

        An unknown ``rev`` is an error, never "all history": trailers already acted on
        would be acted on again.
        """
        if self.head() is None:
            return []
        revision = "HEAD" if rev is None else f"{self._resolve(rev)}..HEAD"
        wanted = {k.lower(): k for k in keys}
        out = self._git(
            "log",
            "--reverse",
            "--format=%H%x1f%s%x1f%(trailers:only=true,unfold=true)%x1e",
            revision,
            "--",
        )
        trailers: list[Trailer] = []
        for record in out.decode("utf-8", "replace").split("\x1e"):
            record = record.strip("\n")
            if not record:
                continue
            sha, _, rest = record.partition("\x1f")
            subject, _, block = rest.partition("\x1f")
            for line in block.splitlines():
                match = self._TRAILER_LINE.match(line.strip())
                if match and match.group(1).lower() in wanted:
                    value = match.group(2).strip()
                    if value:
                        trailers.append(
                            Trailer(wanted[match.group(1).lower()], value, sha.strip(), subject)
                        )
        return trailers
