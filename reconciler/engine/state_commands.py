"""The recorded state, inspected and edited by hand (``osmosis-state``), without the Platform.

``list`` and ``show`` only read the lockfile: it is replaced atomically, so a reader never
sees half a write, and they work while a long ``osmosis-apply --wait`` holds the lock.
``forget``, ``mv`` and ``resolve`` change it through the lockfile's door (``state.door``): under
the apply lock, re-read after the lock is taken, one write with ``serial + 1``. Neither ever calls the Platform: ``forget``
moves an entry to the history (reason ``forgotten``, like the plan's forget) and leaves the
run alone; ``mv`` re-keys an entry like the plan's move (``lockfile.rekey_run``);
``resolve`` settles a submit whose outcome is unknown (a person knows what the Platform did):
``--submitted RUN`` records that run as the address's, ``--not-submitted`` drops the intent so
the next plan submits the config.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from reconciler.errors import UsageError
from reconciler.model import HistoryEntry, LockState, RecordedRun, Settings, glob_match
from reconciler.state.door import LockScope, open_door
from reconciler.state.lockfile import put_run, read_lockfile, rekey_run, retire_run

__all__ = [
    "check_address",
    "config_path",
    "entries",
    "forget_entry",
    "history_of",
    "move_entry",
    "resolve_entry",
    "read_state",
    "write_state",
]

_ADDRESS_SEGMENT = re.compile(r"[^\x00-\x1f\x7f\\]+")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def check_address(text: str, what: str) -> str:
    """``text`` when it can be a config's address (``terminal-bench/smoke``), else a
    ``UsageError`` naming ``what`` (the argument)."""
    hint = (
        "an address is a config's path under benchmarks/ without .toml, e.g. terminal-bench/smoke"
    )
    segments = text.split("/")
    if (
        not text
        or text.endswith(".toml")
        or any(not s or s in (".", "..") or s.startswith(".") for s in segments)
        or not all(_ADDRESS_SEGMENT.fullmatch(s) for s in segments)
    ):
        raise UsageError(f"{what} {text!r} is not an address", hint)
    return text


def read_state(
    path: Path, display: str, *, platform: str | None = None, workspace: str | None = None
) -> LockState | None:
    """The lockfile, or None when there is none. ``platform``/``workspace`` (from flags),
    when given, must be the ones the lockfile records."""
    if not path.exists():
        return None
    return read_lockfile(path, platform=platform, workspace=workspace, display_path=display)


def entries(state: LockState, patterns: Sequence[str] = ()) -> list[RecordedRun]:
    """Recorded entries in address order, only those matching ``patterns`` when given."""
    return [
        state.runs[address]
        for address in sorted(state.runs)
        if not patterns or glob_match(address, tuple(patterns))
    ]


def history_of(state: LockState, address: str) -> list[HistoryEntry]:
    """The address's previous runs, newest first."""
    return [entry for entry in state.history if entry.address == address]


def _missing(address: str, state: LockState | None, display: str) -> UsageError:
    if state is None:
        return UsageError(
            f"no run is recorded at {address}: {display} does not exist",
            "nothing has been applied or imported in this repository yet",
        )
    return UsageError(
        f"no run is recorded at {address} in {display}",
        "list the recorded addresses with `osmosis-state list`",
    )


def require_entry(state: LockState | None, address: str, display: str) -> RecordedRun:
    if state is None or address not in state.runs:
        raise _missing(address, state, display)
    return state.runs[address]


def forget_entry(
    state: LockState | None, address: str, display: str, now: datetime
) -> tuple[LockState, RecordedRun]:
    """The state without ``address`` (its run moved to history as ``forgotten``)."""
    entry = require_entry(state, address, display)
    assert state is not None
    if entry.intent is not None:
        raise UsageError(
            f"{address} has a pending {entry.intent.op} in {display} (started "
            f"{entry.intent.started_at:%Y-%m-%dT%H:%M:%SZ}): its outcome is not known yet",
            "run `osmosis-plan` and `osmosis-apply` first, so the pending action is resolved "
            "(forgetting it could lose track of a run that was paid for)",
        )
    return retire_run(state, address, "forgotten", ended_at=now), entry


def move_entry(
    state: LockState | None, old: str, new: str, display: str, now: datetime
) -> tuple[LockState, RecordedRun]:
    """The state with the entry of ``old`` re-keyed to ``new`` (``new`` must be free)."""
    entry = require_entry(state, old, display)
    assert state is not None
    if old == new:
        raise UsageError(f"{old} and {new} are the same address", "name a new address")
    if new in state.runs:
        taken = state.runs[new]
        raise UsageError(
            f"{new} is already recorded in {display} (run "
            f"{taken.run_name or taken.run_id or 'with a pending submit'}); mv does not overwrite",
            f"forget it first (`osmosis-state forget {new}`) or choose another address",
        )
    return rekey_run(state, old, new, ended_at=now), entry


def write_state(
    repo_root: Path,
    settings: Settings,
    *,
    timeout: float,
    command: str,
    err: TextIO | None,
    edit: Callable[[LockState | None], tuple[LockState, RecordedRun]],
    platform: str | None = None,
    workspace: str | None = None,
) -> tuple[LockState, LockState, RecordedRun]:
    """Through the lockfile's door: re-read the lockfile under the apply lock (the locks of
    the Platform and workspace it records), apply ``edit``, write it (serial + 1). Returns
    (state before, state written, the entry edited).
    """
    path = repo_root / settings.state
    scope = LockScope.recorded(path, settings.state, repo_root=repo_root, settings=settings)

    def note(line: str) -> None:
        if err is not None:
            err.write(line + "\n")

    with open_door(scope, timeout=timeout, command=command, say=note) as door:
        before = door.read(platform=platform, workspace=workspace)
        after, entry = edit(before)
        assert before is not None  # edit raised otherwise
        written = door.write(after)
    return before, written, entry


def config_path(repo_root: Path, settings: Settings, address: str) -> Path:
    """The config file an address stands for."""
    return repo_root / settings.benchmarks / f"{address}.toml"


def resolve_entry(
    state: LockState | None, address: str, display: str, *, submitted: str | None
) -> tuple[LockState, RecordedRun]:
    """The state with the pending submit of ``address`` settled by a person: its run is
    ``submitted`` (recorded without a Platform call; the next plan reads its status), or,
    with None, there is none (the entry goes, so the next plan submits the config)."""
    entry = require_entry(state, address, display)
    assert state is not None
    intent = entry.intent
    if intent is None or intent.op != "submit":
        raise UsageError(
            f"{address} has no submit with an unknown outcome in {display}",
            "`osmosis-state resolve` settles only a pending submit (the plan shows it as ?)",
        )
    if submitted is None:
        runs = {k: v for k, v in state.runs.items() if k != address}
        if entry.run_id is not None:
            runs[address] = entry.model_copy(update={"intent": None})
        return state.model_copy(update={"runs": runs}), entry
    known = {e.run_id for e in state.runs.values() if e.run_id}
    known.update(h.run_id for h in state.history if h.run_id)
    if submitted in known:
        raise UsageError(
            f"run {submitted} is already recorded in {display}",
            "name the run the interrupted submit created (see `osmosis benchmark runs list`)",
        )
    resolved = entry.model_copy(
        update={
            "intent": None,
            "run_id": submitted,
            "run_name": None,
            "status": None,
            "observed_at": None,
            "submitted_at": None,
            "spec": intent.spec or entry.spec,
            "spec_digest": entry.spec_digest,
        }
    )
    return put_run(state, resolved), entry
