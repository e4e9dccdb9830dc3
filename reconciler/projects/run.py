"""The pool: one command per selected project, each in its own process.

A project's command is today's command run inside its directory (``--dir DIR``), so a
project behaves at the root exactly as it does alone: its own settings, lockfile and lock
(keyed by its id, ``state.door``). Plans are read-only and run side by side. Applies run in
a bounded pool in ``after`` order: a project starts once every selected project it comes
after has applied successfully; when one of them did not, it is skipped (nothing is
submitted for it) and the rest go on. The pool's ``parallelism`` is shared with each
project's own actions: ``N`` projects at once each get ``parallelism // N`` actions.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.exit_codes import ERROR
from reconciler.projects.discover import OSMOSIS_DIR, Root
from reconciler.projects.select import Selected

LAST_APPLY = f"{OSMOSIS_DIR}/projects-last-apply.json"
"""What the last apply at the root left undone (``--failed`` reads it)."""

_CHILD = (
    "import sys\nsys.argv[0] = 'osmosis-{0}'\n"
    "from reconciler.cli.{0} import main\nsys.exit(main(sys.argv[1:]))"
)
"""A project's process. ``python -c`` leaves ``-c`` in ``argv[0]``, and the command line a
lock holder records (``cli.common.command_line``) starts there: a contender must read
``osmosis-apply --dir ...``, the command it would rerun."""


@dataclass
class Outcome:
    """One project's part of a run at the root."""

    selected: Selected
    status: str = "skipped"
    """``done``, ``failed`` (its command exited non-zero, or 2 for a plan is still done)
    or ``skipped`` (a project it comes after did not apply)."""
    exit_code: int | None = None
    document: dict[str, Any] = field(default_factory=dict)
    """Its command's JSON document (``--format json``)."""
    stderr: str = ""
    skipped_because: str | None = None


def run_projects(
    root: Root,
    selected: Sequence[Selected],
    *,
    command: str,
    flags: Sequence[str],
    parallelism: int,
    env: Mapping[str, str] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run ``command`` (``plan`` or ``apply``) for every selected project; outcomes in the
    order of ``selected``."""
    outcomes = {s.project.id: Outcome(s) for s in selected}
    if not selected:
        return []
    workers = max(1, min(parallelism, len(selected)))
    each = max(1, parallelism // workers)
    lock = threading.Lock()

    def start(item: Selected) -> Outcome:
        outcome = outcomes[item.project.id]
        argv = ["--dir", str(root.path / item.project.dir), "--format", "json", *flags]
        if command == "apply":
            argv += ["--parallelism", str(each)]
        done = subprocess.run(
            [sys.executable, "-c", _CHILD.format(command), *argv],
            env=dict(os.environ if env is None else env),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        outcome.exit_code = done.returncode
        outcome.stderr = done.stderr
        try:
            document = json.loads(done.stdout) if done.stdout.strip() else {}
        except ValueError:
            document = {}
        outcome.document = document if isinstance(document, dict) else {}
        ok = done.returncode == 0 or (command == "plan" and done.returncode == 2)
        outcome.status = "done" if ok else "failed"
        if on_done is not None:
            with lock:
                on_done(outcome)
        return outcome

    selected_ids = {s.project.id for s in selected}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="osmosis-project") as pool:
        if command == "plan":
            for future in [pool.submit(start, s) for s in selected]:
                future.result()
        else:
            _apply_in_order(root, list(selected), outcomes, selected_ids, pool, start, on_done)
    return [outcomes[s.project.id] for s in selected]


def _apply_in_order(
    root: Root,
    pending: list[Selected],
    outcomes: dict[str, Outcome],
    selected_ids: set[str],
    pool: ThreadPoolExecutor,
    start: Callable[[Selected], Outcome],
    on_done: Callable[[Outcome], None] | None,
) -> None:
    """Start each project once the selected projects it comes after are done; skip it when
    one of them failed or was skipped."""
    running: dict[Future[Outcome], str] = {}
    finished: set[str] = set()
    while pending or running:
        for item in list(pending):
            before = [a for a in item.project.after if a in selected_ids]
            blocked = [a for a in before if a in finished and outcomes[a].status != "done"]
            if blocked:
                outcome = outcomes[item.project.id]
                outcome.status = "skipped"
                outcome.skipped_because = f"{blocked[0]} did not apply"
                pending.remove(item)
                finished.add(item.project.id)
                if on_done is not None:
                    on_done(outcome)
                continue
            if all(a in finished for a in before):
                pending.remove(item)
                running[pool.submit(start, item)] = item.project.id
        if not running:
            if pending:  # cannot happen: ``order`` refused cycles
                raise RuntimeError("projects wait for each other")
            break
        done, _ = wait(list(running), return_when=FIRST_COMPLETED)
        for future in done:
            future.result()
            finished.add(running.pop(future))


def most_severe(codes: Sequence[int]) -> int:
    """The root's exit code: the most severe project code, in the order 1, 3, 4, 2, 0
    (any other code, 130 for one, counts as 1: the project did not complete)."""
    rank = {1: 0, 3: 1, 4: 2, 2: 3, 0: 4}
    if not codes:
        return 0
    return min(codes, key=lambda c: rank.get(c, -1)) if all(c in rank for c in codes) else ERROR


def record_outcomes(root: Path, outcomes: Sequence[Outcome]) -> None:
    """Merge ``outcomes`` into ``.osmosis/projects-last-apply.json``: a project that did
    not apply is recorded as failed or skipped, one that applied is cleared, and every
    other project keeps what an earlier apply recorded for it.

    Two applies at one root run at once (two terminals, a re-run beside a CI job): each
    records a project when it ends, read-merge-write under an exclusive ``flock`` of a file
    beside the record, written to a temporary file and renamed over it. A whole-file write
    at the end of each apply lost the other apply's failures (the last writer won), and
    ``--failed`` then skipped them. A project's latest ending wins: a failure that a later
    apply of the same project repaired is no longer undone."""
    path = root / LAST_APPLY
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a", encoding="utf-8") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # released when ``guard`` is closed
        undone = _read_record(path)
        for outcome in outcomes:
            undone.pop(outcome.selected.project.id, None)
            if outcome.status != "done":
                undone[outcome.selected.project.id] = outcome.status
        body = {
            "failed": sorted(i for i, status in undone.items() if status == "failed"),
            "skipped": sorted(i for i, status in undone.items() if status == "skipped"),
            "undone": sorted(undone),
        }
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(temp, "w", encoding="utf-8") as out:
            out.write(json.dumps(body, indent=2) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)


def _read_record(path: Path) -> dict[str, str]:
    """Project id -> ``failed`` or ``skipped``, as recorded (empty when unreadable: the
    record only narrows ``--failed``, and the next ending rewrites it whole)."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(body, dict):
        return {}
    found: dict[str, str] = {}
    for status in ("failed", "skipped"):
        ids = body.get(status)
        if isinstance(ids, list):
            found.update((str(i), status) for i in ids)
    ids = body.get("undone")
    if isinstance(ids, list):
        found.update((str(i), "failed") for i in ids if str(i) not in found)
    return found


def last_undone(root: Path) -> tuple[str, ...] | None:
    """The projects the last apply at ``root`` left undone (failed or skipped); None when
    no apply at the root was recorded."""
    path = root / LAST_APPLY
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError:
        return None
    undone = body.get("undone") if isinstance(body, dict) else None
    return tuple(str(i) for i in undone) if isinstance(undone, list) else None
