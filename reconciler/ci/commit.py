"""``osmosis-ci commit-message`` and ``osmosis-ci commit-lockfile``: the lockfile commit an
apply or collect job pushes back to its branch.

The message is derived from data, never from what ``osmosis-apply`` printed: the saved
plan JSON (``osmosis-plan --format json``) says what was planned and why, and the lockfile
before and after the job says what happened (a new run id is a submit, a complete
download is a download, a changed status is a refresh). A planned item that left no trace
in the lockfile is listed as not applied.

The push rules are the apply workflow's: the commit is authored by the workflow bot and
says ``[skip ci]`` (a push with ``GITHUB_TOKEN`` starts no workflow anyway; the marker
also stops workflows pushed with other tokens), and when the branch moved meanwhile the
lockfile commit is replayed on top (``git pull --rebase``) up to five times. Only applies
write the lockfile and they hold the apply lock, so the replay is clean unless the lockfile
was edited by hand in between; then the job fails and says so.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.errors import GitError, StateError, UsageError
from reconciler.escaping import escape_text
from reconciler.exit_codes import OK, PARTIAL
from reconciler.model import LockState, RecordedRun, RunStatus
from reconciler.paths import (
    check_inside,
    read_named,
    read_regular,
    relative_path_problem,
    write_inside,
)
from reconciler.state.lockfile import parse

SKIP_CI = "[skip ci]"
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
MAX_LINES = 40
PUSH_ATTEMPTS = 5
RESULT_FILE_LIMIT = 10 * 1024 * 1024
"""A summary or results file larger than this is not copied into the results directory."""

_VERBS = {
    "submit": "submitted",
    "replace": "replaced",
    "adopt": "adopted",
    "move": "moved",
}
_SYMBOLS = {
    "submitted": "+",
    "replaced": "-/+",
    "adopted": "<=",
    "moved": ">",
    "recorded": "+",
    "stopped": "-",
    "forgotten": ".",
    "downloaded": "↓",
    "in flight": "?",
    "not applied": "!",
    "blocked": "!",
}


@dataclass(frozen=True)
class Change:
    """One thing the job did (or failed to do) to one address."""

    address: str
    kind: str
    """``submitted``, ``replaced``, ``adopted``, ``moved``, ``recorded``, ``stopped``,
    ``forgotten``, ``downloaded``, ``status``, ``in flight``, ``not applied``, ``blocked``."""
    text: str

    def line(self) -> str:
        return f"{_SYMBOLS.get(self.kind, '~')} {self.address}: {self.text}"


# --------------------------------------------------------------------------- reading


def read_plan_json(path: Path | None) -> dict[str, Any]:
    """The plan of ``osmosis-plan --format json`` or of a saved plan; ``{}`` when absent."""
    if path is None or not path.exists():
        return {}
    try:
        payload = json.loads(read_named(path, what="plan JSON"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: cannot read the plan JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise UsageError(f"{path}: the plan JSON is not an object")
    plan = payload.get("plan")
    return plan if isinstance(plan, dict) else payload


def read_state(text: str | None, filename: str) -> LockState | None:
    return parse(text, filename) if text else None


def lockfile_at(repo: Path, rev: str, path: str) -> str | None:
    """The lockfile text at ``rev`` (None when it did not exist there)."""
    done = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=repo, capture_output=True, check=False
    )
    return done.stdout.decode("utf-8") if done.returncode == 0 else None


# --------------------------------------------------------------------------- changes


def _label(entry: RecordedRun) -> str:
    if entry.run_name and entry.run_id:
        return f"{entry.run_name} ({entry.run_id})"
    return entry.run_name or entry.run_id or "no run"


def lockfile_changes(
    before: LockState | None, after: LockState, plan: Mapping[str, Any]
) -> list[Change]:
    """What changed per address between two lockfiles, with the plan's verbs; planned
    items that changed nothing are listed as ``not applied`` (``blocked`` for blocked)."""
    planned: dict[str, dict[str, Any]] = {}
    for action in plan.get("actions") or []:
        if isinstance(action, dict) and isinstance(action.get("address"), str):
            planned.setdefault(action["address"], action)
    old_runs = before.runs if before else {}
    changes: list[Change] = []
    touched: set[str] = set()
    for address in sorted(set(old_runs) | set(after.runs)):
        old, new = old_runs.get(address), after.runs.get(address)
        action = str((planned.get(address) or {}).get("action") or "")
        found: list[Change] = []
        if new is not None and new.run_id and (old is None or old.run_id != new.run_id):
            verb = _VERBS.get(action, "recorded")
            found.append(Change(address, verb, f"{verb} {_label(new)}"))
        if new is not None and new.intent is not None and (old is None or old.intent != new.intent):
            found.append(
                Change(
                    address,
                    "in flight",
                    f"a {new.intent.op} is in flight (its outcome is unknown; the next plan "
                    "adopts the run or resubmits)",
                )
            )
        if old is not None and new is None:
            gone = next(
                (h for h in after.history if h.address == address and h.run_id == old.run_id),
                None,
            )
            kind = {"stopped": "stopped", "moved": "moved"}.get(gone.reason if gone else "", "")
            kind = kind or "forgotten"
            found.append(Change(address, kind, f"{kind} {_label(old)}"))
        if new is not None and old is not None and old.run_id == new.run_id:
            if new.status != old.status and new.status:
                found.append(
                    Change(address, "status", f"{_label(new)}: {old.status} -> {new.status}")
                )
            done = new.downloads is not None and new.downloads.complete
            was = old.downloads is not None and old.downloads.complete
            if done and (not was or old.downloads != new.downloads):
                assert new.downloads is not None
                scores = " and its scores" if new.results and not old.results else ""
                found.append(
                    Change(
                        address,
                        "downloaded",
                        f"downloaded {new.downloads.files} file(s) of {_label(new)}{scores}",
                    )
                )
        if found:
            touched.add(address)
        changes.extend(found)
    for address, action in sorted(planned.items()):
        if action.get("action") == "blocked":
            details = "; ".join(str(d) for d in action.get("details") or [])[:300]
            changes.append(Change(address, "blocked", f"blocked: {details or 'see the plan'}"))
        elif address not in touched and action.get("action") != "download":
            changes.append(
                Change(address, "not applied", f"{action.get('action')} not applied (see the job)")
            )
        elif address not in touched:
            changes.append(Change(address, "not applied", "download not completed (see the job)"))
    return changes


def _count(changes: Sequence[Change]) -> str:
    order = [
        "submitted",
        "replaced",
        "adopted",
        "recorded",
        "stopped",
        "forgotten",
        "moved",
        "downloaded",
        "status",
        "in flight",
        "not applied",
        "blocked",
    ]
    counts = {k: sum(1 for c in changes if c.kind == k) for k in order}
    words = {"status": "status update(s)", "in flight": "in flight"}
    parts = [f"{n} {words.get(k, k)}" for k, n in counts.items() if n]
    return ", ".join(parts)


def summary_line(plan: Mapping[str, Any]) -> str | None:
    """``Plan: 1 to submit, ...`` from the plan JSON's summary, as the text render words it."""
    s = plan.get("summary")
    if not isinstance(s, dict):
        return None
    keys = ("submit", "replace", "stop", "download", "forget")
    if not all(isinstance(s.get(k), int) for k in keys):
        return None
    attempts = s.get("attempts") or 0
    noun = "attempt" if attempts == 1 else "attempts"
    retry = s.get("retry")
    retried = f", {retry} to retry" if isinstance(retry, int) and retry else ""
    return (
        f"Plan: {s['submit']} to submit, {s['replace']} to replace, {s['stop']} to stop, "
        f"{s['download']} to download, {s['forget']} to forget{retried}; {attempts:,} {noun}."
    )


def commit_message(
    *,
    title: str,
    before: LockState | None,
    after: LockState,
    plan: Mapping[str, Any],
    exit_code: int,
    sha: str | None = None,
    run_url: str | None = None,
) -> str:
    """The commit message of the lockfile commit (subject with ``[skip ci]``, then one
    line per change, the plan summary, the commit applied and the workflow run)."""
    changes = lockfile_changes(before, after, plan)
    done = [c for c in changes if c.kind not in ("not applied", "blocked")]
    partial = {OK: "", PARTIAL: " (partial)"}.get(exit_code, f" (exit code {exit_code})")
    subject = f"{title}: {_count(done) or 'lockfile updated'}{partial} {SKIP_CI}"
    body = [c.line() for c in changes[:MAX_LINES]]
    if len(changes) > MAX_LINES:
        body.append(f"... and {len(changes) - MAX_LINES} more")
    line = summary_line(plan)
    if line:
        body += ["", line]
    body.append("")
    if sha:
        body.append(f"Applied at commit {sha}.")
    if run_url:
        body.append(f"Workflow run: {run_url}")
    return subject + "\n\n" + "\n".join(body).strip("\n") + "\n"


# --------------------------------------------------------------------------- results dir


def copy_results(repo: Path, state: LockState, results_dir: str) -> list[str]:
    """Copy the summary and results files of every ended run with a complete download
    into ``<results_dir>/<address>/`` (the newest run of each address; git keeps the
    older ones). Only files whose sha256 matches the lockfile are copied. Returns the
    repository-relative paths written.

    Everything goes through the path-safety layer (``reconciler.paths``): the results
    directory, each address, each download directory and file name must be relative paths
    without ``..``; sources are read and targets written with every component checked from
    the repository root down, so a symlink under ``results/`` or in a download directory is
    refused instead of followed (a victim file outside was overwritten, then pushed), and
    a lockfile pointing at a directory outside the repository is refused, not copied.
    """
    root = repo.resolve()
    cleaned = results_dir.rstrip("/") or results_dir
    problem = relative_path_problem(cleaned)
    if problem is not None:
        raise UsageError(
            f"--results-dir {escape_text(results_dir)}: must be a directory inside the "
            f"repository (it {problem})",
            "pass a relative path such as results",
        )
    results_dir = cleaned
    found = check_inside(root, results_dir)
    if found is not None:
        raise UsageError(
            f"--results-dir {results_dir}: {found.path} {found.message}",
            f"replace {found.path} with a real directory in the repository",
        )
    written: list[str] = []
    for address, entry in sorted(state.runs.items()):
        downloads = entry.downloads
        if (
            downloads is None
            or not downloads.complete
            or not RunStatus.of(entry.status).is_terminal
        ):
            continue
        for value, what in ((address, "address"), (downloads.directory, "download directory")):
            bad = relative_path_problem(value)
            if bad is not None:
                raise StateError(
                    f"lockfile {what} {escape_text(value)!r} {bad}",
                    "restore the lockfile from git; it must only name paths in the repository",
                )
        for rel, recorded in sorted(downloads.sha256.items()):
            if "/" in rel or rel == "logs.txt" or relative_path_problem(rel) is not None:
                continue  # artifacts and logs are too big to commit; summary and results only
            source = f"{downloads.directory}/{rel}"
            try:
                data = read_regular(
                    root / source,
                    what="downloaded file",
                    max_bytes=RESULT_FILE_LIMIT,
                    repo_root=root,
                    error=StateError,
                )
            except FileNotFoundError:
                continue
            except StateError as exc:
                if "more than the" in exc.message:
                    continue  # too large to commit: left out, as before
                raise
            if hashlib.sha256(data).hexdigest() != recorded.removeprefix("sha256:"):
                continue
            target = f"{results_dir}/{address}/{rel}"
            try:
                current = read_regular(
                    root / target, what="results file", max_bytes=RESULT_FILE_LIMIT, repo_root=root
                )
            except FileNotFoundError:
                current = None
            if current == data:
                continue
            write_inside(root, target, data)
            written.append(target)
    return written


# --------------------------------------------------------------------------- commit + push


def _git(repo: Path, *args: str, data: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        input=data,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _must(done: subprocess.CompletedProcess[str], what: str) -> str:
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise GitError(f"git {what} failed: {tail}", "see the job log for the full git output")
    return done.stdout.strip()


@dataclass(frozen=True)
class Pushed:
    """What ``commit_lockfile`` did: ``sha`` None when nothing changed."""

    sha: str | None
    subject: str = ""
    attempts: int = 0


def commit_lockfile(
    repo: Path,
    paths: Sequence[str],
    message: str,
    *,
    branch: str,
    remote: str = "origin",
    author: tuple[str, str] = (BOT_NAME, BOT_EMAIL),
    sleep: Callable[[float], None] = time.sleep,
) -> Pushed:
    """Commit ``paths`` (the lockfile, the results directory) as the bot and push to
    ``branch``, replaying the commit on top when the branch moved meanwhile."""
    paths = [p for p in paths if (repo / p).exists()]
    if not paths:
        return Pushed(None)
    status = _must(_git(repo, "status", "--porcelain", "--", *paths), "status")
    if not status:
        return Pushed(None)
    identity = ["-c", f"user.name={author[0]}", "-c", f"user.email={author[1]}"]
    _must(_git(repo, "add", "-A", "--", *paths), "add")
    _must(
        _git(repo, *identity, "commit", "--quiet", "--no-verify", "-F", "-", data=message), "commit"
    )
    subject = message.splitlines()[0]
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        if _git(repo, "push", "--quiet", remote, f"HEAD:{branch}").returncode == 0:
            return Pushed(_must(_git(repo, "rev-parse", "HEAD"), "rev-parse"), subject, attempt)
        rebased = _git(repo, *identity, "pull", "--rebase", "--quiet", remote, branch)
        if rebased.returncode != 0:
            _git(repo, "rebase", "--abort")
            raise GitError(
                f"the lockfile commit conflicts with {remote}/{branch} (edited by hand meanwhile?)",
                "the updated lockfile is kept in this job's workspace; merge it by hand",
            )
        sleep(attempt * 2.0)
    raise GitError(
        f"could not push the lockfile commit to {remote}/{branch} after {PUSH_ATTEMPTS} attempts",
        "re-run the job; the lockfile on the runner holds what was applied",
    )


def state_text(path: Path, repo: Path | None = None) -> str:
    """The lockfile's text: a regular file of bounded size, inside ``repo`` when given."""
    try:
        data = (
            read_regular(path, what="lockfile", repo_root=repo, error=StateError)
            if repo is not None
            else read_named(path, what="lockfile", error=StateError)
        )
    except FileNotFoundError as exc:
        raise StateError(f"{path}: no lockfile", "run osmosis-apply first") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateError(f"{path}: not UTF-8 text ({exc.reason})", "restore it from git") from None
