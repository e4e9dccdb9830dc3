"""Commit trailers as requests and permissions (docs/plan-and-apply.md, "Commit trailers").

Two kinds, with two lifetimes:

* **holds and permissions** (``Osmosis-Skip``, ``Osmosis-Skip-Smoke``,
  ``Osmosis-Allow-Duplicate``) are in force for the commits since the lockfile was last
  committed: the apply that follows them records its work, and the commit of that record
  ends them;
* **requests** (``Osmosis-Rerun``) are pending until an apply carries them out. The
  lockfile records, per address, the commits whose request an apply acted on
  (``LockState.reruns``); a request is also settled by a run of the address submitted at or
  after its commit (the entry's ``applied_at_commit``), or by the Platform refusing the
  retry since (``Rejection.at_commit``). Nothing else settles one: a commit of the lockfile
  by ``osmosis-results accept``, a refresh or an apply of other addresses consumes nothing
  (issue 34: ``accept`` and the commit it asks for consumed two pending requests, and
  nothing was printed).

Requests are read back to the newest commit every recorded entry's run was applied after
(the merge base of their ``applied_at_commit``): an older request is settled for every
address. Every pending request is listed in the plan's notes, and one whose address is gone
is named, never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.engine.snapshots import TrailerRequests
from reconciler.errors import closest
from reconciler.gitinfo import GitRepo, Trailer
from reconciler.model import RERUNS_KEPT, DesiredRun, LockState, glob_match

RERUN = "Osmosis-Rerun"
RETRY_ERRORED = "Osmosis-Retry-Errored"
SKIP = "Osmosis-Skip"
SKIP_SMOKE = "Osmosis-Skip-Smoke"
ALLOW_DUPLICATE = "Osmosis-Allow-Duplicate"

__all__ = [
    "ALLOW_DUPLICATE",
    "RERUN",
    "RETRY_ERRORED",
    "SKIP",
    "SKIP_SMOKE",
    "read_requests",
    "rerun_horizon",
    "with_reruns",
]


def read_requests(
    git: GitRepo | None, state_file: str, desired: Sequence[DesiredRun], state: LockState
) -> TrailerRequests:
    """What the commit trailers ask of this plan (``state_file``: the lockfile's path in
    the repository, as the settings name it)."""
    if git is None or git.head() is None:
        return TrailerRequests()
    held = git.trailers_since(
        git.last_commit_touching(state_file), (SKIP, SKIP_SMOKE, ALLOW_DUPLICATE)
    )
    requests = git.trailers_since(rerun_horizon(git, state), (RERUN, RETRY_ERRORED))
    if not held and not requests:
        return TrailerRequests()
    addresses = sorted(d.address for d in desired)
    notes: list[str] = []
    by_key: dict[str, list[str]] = {SKIP: [], SKIP_SMOKE: [], ALLOW_DUPLICATE: []}
    for trailer in held:
        if not _matches(trailer, addresses):
            notes.append(_matches_nothing(trailer, addresses))
        by_key[trailer.key].append(trailer.value)
    replace: list[str] = []
    requested: dict[str, tuple[str, str]] = {}
    pending: dict[str, list[str]] = {}
    retries: dict[str, list[str]] = {}
    for trailer in requests:
        matches = _matches(trailer, addresses)
        if not matches and not _settled_elsewhere(state, trailer):
            notes.append(_matches_nothing(trailer, addresses))
        for address in matches:
            if _settled(git, state, address, trailer.commit):
                continue
            if trailer.key == RETRY_ERRORED:
                if trailer.commit not in retries.setdefault(address, []):
                    retries[address].append(trailer.commit)
                continue
            if address not in replace:
                replace.append(address)
            requested[address] = (trailer.commit, trailer.subject)
            if trailer.commit not in pending.setdefault(address, []):
                pending[address].append(trailer.commit)
    if pending:
        listed = ", ".join(
            f"{address} ({', '.join(commit[:7] for commit in pending[address])})"
            for address in sorted(pending)
        )
        notes.append(
            f"pending re-run requests ({RERUN}): {listed}; each is consumed only by the apply "
            "that carries it out"
        )
    if retries:
        listed = ", ".join(
            f"{address} ({', '.join(commit[:7] for commit in retries[address])})"
            for address in sorted(retries)
        )
        notes.append(
            f"pending retry requests ({RETRY_ERRORED}): {listed}; each is consumed only by the "
            "apply that submits the retry"
        )
    return TrailerRequests(
        replace=tuple(replace),
        skip=tuple(by_key[SKIP]),
        requested=requested,
        notes=tuple(notes),
        skip_smoke=tuple(by_key[SKIP_SMOKE]),
        allow_duplicate=tuple(by_key[ALLOW_DUPLICATE]),
        reruns={address: tuple(commits) for address, commits in pending.items()},
        retry_errored=tuple(retries),
        retries={address: tuple(commits) for address, commits in retries.items()},
    )


def rerun_horizon(git: GitRepo, state: LockState) -> str | None:
    """The commit back to which re-run requests are read: the newest one every recorded
    entry's run was applied after. None (every commit) when an entry records no applied
    commit or one this clone does not have (a shallow clone, a rewritten history)."""
    applied = {entry.applied_at_commit for entry in state.runs.values()}
    if not applied or None in applied:
        return None
    return git.merge_base(sorted(a for a in applied if a))


def _matches(trailer: Trailer, addresses: Sequence[str]) -> list[str]:
    return [a for a in addresses if glob_match(a, (trailer.value,))]


def _matches_nothing(trailer: Trailer, addresses: Sequence[str]) -> str:
    close = closest(trailer.value, list(addresses))
    return (
        f"{trailer.key}: {trailer.value} (commit {trailer.commit[:7]}) matches no config, so it "
        "does nothing" + (f"; did you mean {close}?" if close else "")
    )


def _settled(git: GitRepo, state: LockState, address: str, commit: str) -> bool:
    """Whether the re-run ``commit`` asked of ``address`` was carried out: an apply acted on
    it (recorded), a run of the address was submitted at or after that commit, or the
    Platform refused the retry since."""
    if commit in state.reruns.get(address, ()):
        return True
    entry = state.runs.get(address)
    applied = entry.applied_at_commit if entry else None
    if applied and git.is_ancestor(commit, applied):
        return True
    refused = state.rejections.get(address)
    return bool(refused and refused.at_commit and git.is_ancestor(commit, refused.at_commit))


def _settled_elsewhere(state: LockState, trailer: Trailer) -> bool:
    """A request for an address that is gone now, which an apply carried out before it went
    (its history says so): nothing to name."""
    return any(trailer.commit in commits for commits in state.reruns.values())


def with_reruns(state: LockState, address: str, commits: Sequence[str]) -> LockState:
    """``state`` recording that an apply acted on the re-run requests of ``commits`` for
    ``address`` (written with the submit's intent, before its POST: the request is spent
    whatever the Platform answers; a refusal is remembered on its own)."""
    if not commits:
        return state
    kept = state.reruns.get(address, ())
    merged = (*kept, *(c for c in commits if c not in kept))[-RERUNS_KEPT:]
    return state.model_copy(update={"reruns": {**state.reruns, address: merged}})
