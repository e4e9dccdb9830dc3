"""Generated pairs of concurrent ``osmosis-apply`` processes at a root of many projects
(issue 38): disjoint projects in one workspace never wait on each other, overlapping ones
always exclude each other, and the Platform counts no duplicate submit.

Each pair is two real ``osmosis-apply --project ...`` processes at one root against one
loopback local Platform, in a workspace of its own. The Platform holds every committed
submit unanswered while a gate file exists (``Faults.hold_submits_while``), so an apply
that submitted is still inside its project's locks; no timing is guessed:

1. the first apply starts; the Platform counts one submit per project it selected (each
   of its projects holds its locks);
2. the second starts with ``--lock-timeout 0``: a project it must wait for fails at once
   naming the holder, a project it need not wait for submits. Disjoint: the Platform
   counts the second apply's submits while the first's are still held, so both held their
   locks at once and none waited. Overlapping: every shared project is refused;
3. the gate opens, both finish; the Platform's runs are exactly one per selected project,
   each recorded in its project's lockfile.

Half the pairs run the second apply in a clone of its own: then the clones' own locks never
meet, and only the machine-wide lock keyed by (Platform, workspace, project id) decides.
``make test`` runs a few pairs (tests/integration/test_projects.py), ``make reliability``
the 100 (tests/reliability/test_project_pairs.py) and prints the table.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.git import git
from tests.support.osmosis import LineReader, Osmosis, Platform, read_lock
from tests.support.projects import projects_repo

PROJECTS = ("a", "b", "c", "d")
SEED = 38
WAIT_S = 180.0
"""How long a step may take under load before the pair counts as stuck (never a figure)."""


@dataclass(frozen=True)
class Pair:
    """Two applies' selections, and whether the second runs in a clone of its own."""

    index: int
    first: tuple[str, ...]
    second: tuple[str, ...]
    clones: bool

    @property
    def shared(self) -> tuple[str, ...]:
        return tuple(p for p in self.second if p in self.first)

    @property
    def kind(self) -> str:
        return "overlapping" if self.shared else "disjoint"


def generate(count: int, seed: int = SEED) -> list[Pair]:
    """``count`` pairs drawn from ``seed``; kinds and checkouts cycle, so any four
    consecutive pairs hold each (kind, checkout) once."""
    rng = random.Random(seed)
    pairs = []
    for index in range(count):
        overlapping = index % 2 == 1
        clones = (index // 2) % 2 == 1
        first = rng.sample(PROJECTS, rng.randint(1, 2))
        rest = [p for p in PROJECTS if p not in first]
        if overlapping:
            second = rng.sample(first, rng.randint(1, len(first)))
            second += rng.sample(rest, rng.randint(0, 1))
        else:
            second = rng.sample(rest, rng.randint(1, 2))
        pairs.append(Pair(index, tuple(sorted(first)), tuple(sorted(second)), clones))
    return pairs


@dataclass
class Tally:
    """What the pairs showed; the ``must be 0`` counts are the guarantee."""

    pairs: int = 0
    disjoint: int = 0
    overlapping: int = 0
    clones: int = 0
    processes: int = 0
    held_together: int = 0
    """Disjoint pairs whose two applies held their projects' locks at the same time."""
    refused_naming_holder: int = 0
    """Shared projects the second apply was refused, the holder named."""
    disjoint_waited: int = 0
    overlapping_not_excluded: int = 0
    duplicate_submits: int = 0
    runs_not_in_lockfiles: int = 0
    unexpected: int = 0
    notes: list[str] = field(default_factory=list)

    def failures(self) -> int:
        return (
            self.disjoint_waited
            + self.overlapping_not_excluded
            + self.duplicate_submits
            + self.runs_not_in_lockfiles
            + self.unexpected
        )


def template(work: Path) -> Path:
    """The root every pair copies: four projects, one config each."""
    return projects_repo(work, dict.fromkeys(PROJECTS, ""), name="template")


def run_pair(pair: Pair, platform: Platform, repo: Path, gate: Path, tally: Tally) -> None:
    """Run ``pair`` (see the module docstring) and count what it showed in ``tally``.
    ``platform`` holds submits while ``gate`` exists; ``repo`` is the pair's own copy of
    ``template``."""
    workspace = platform.in_workspace(f"pair-{pair.index}")
    other = repo
    if pair.clones:
        other = repo.with_name(repo.name + "-clone")
        git(repo.parent, "clone", "-q", str(repo), str(other))
    env = {"XDG_RUNTIME_DIR": str(repo.parent / "run")}
    tally.pairs += 1
    tally.clones += pair.clones
    setattr(tally, pair.kind, getattr(tally, pair.kind) + 1)
    tally.processes += 2
    union = set(pair.first) | set(pair.second)
    gate.write_text("held\n", encoding="utf-8")
    procs: list[tuple[subprocess.Popen[str], LineReader, LineReader]] = []
    try:
        # --lock-timeout 0 on both: an apply that would have to wait fails at once.
        procs.append(_start(Osmosis(repo, workspace), pair.first, env, "--lock-timeout", "0"))
        out = procs[0][2]

        def first_in() -> bool:
            ended = sum(f"{p}: " in out.text for p in pair.first)
            return workspace.submits() + ended >= len(pair.first)

        if not _until(first_in):
            _stuck(tally, pair, "the first apply never submitted", procs)
            return
        procs.append(_start(Osmosis(other, workspace), pair.second, env, "--lock-timeout", "0"))
        second, err = procs[1][0], procs[1][2]

        def second_in() -> bool:
            if second.poll() is not None:  # it ended: the checks below say how
                return True
            refused = all(f"{p}: " in err.text for p in pair.shared)
            return refused and workspace.submits() >= len(union)

        if not _until(second_in):
            _stuck(tally, pair, "the second apply never got in", procs)
            return
        if pair.kind == "disjoint" and workspace.submits() >= len(union):
            tally.held_together += 1
    finally:
        gate.unlink(missing_ok=True)
        documents = [_finish(proc, out, err) for proc, out, err in procs]
    first_ended, second_ended = (_entries(d) for d in documents)
    for project in pair.first:
        found = first_ended.get(project, {})
        if found.get("status") != "done":
            tally.unexpected += 1
            tally.notes.append(f"pair {pair.index}: first apply, {project}: {found}")
    for project in pair.second:
        entry = second_ended.get(project, {})
        errors = " ".join(entry.get("errors", []))
        if project in pair.shared:
            if entry.get("status") == "failed" and "apply lock" in errors:
                tally.refused_naming_holder += "held by pid" in errors
            else:
                tally.overlapping_not_excluded += 1
                tally.notes.append(f"pair {pair.index}: {project} not excluded: {entry}")
        elif entry.get("status") != "done":
            tally.disjoint_waited += "lock" in errors
            tally.unexpected += "lock" not in errors
            tally.notes.append(f"pair {pair.index}: second apply, {project}: {entry}")
    submits = workspace.submits()
    tally.duplicate_submits += max(0, submits - len(union))
    if submits < len(union):
        tally.unexpected += 1
        tally.notes.append(f"pair {pair.index}: {submits} submits for {sorted(union)}")
    recorded = {_run_id(repo if p in pair.first else other, p) for p in union}
    if recorded != set(workspace.statuses()):
        tally.runs_not_in_lockfiles += len(set(workspace.statuses()) - recorded) or 1
        tally.notes.append(
            f"pair {pair.index}: lockfiles {recorded}, Platform {workspace.statuses()}"
        )


def _start(
    osm: Osmosis, projects: tuple[str, ...], env: dict[str, str], *flags: str
) -> tuple[subprocess.Popen[str], LineReader, LineReader]:
    selection = [arg for p in projects for arg in ("--project", p)]
    proc = osm.popen(
        "osmosis-apply", *selection, "--auto-approve", "--format", "json", *flags, env=env
    )
    return proc, LineReader(proc.stdout), LineReader(proc.stderr)


def _finish(proc: subprocess.Popen[str], out: LineReader, err: LineReader) -> dict[str, Any] | None:
    try:
        proc.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = out.finish()
    err.finish()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _entries(document: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    if document is None or document.get("type") != "projects":
        return {}
    return {p["id"]: p for p in document["projects"]}


def _run_id(repo: Path, project: str) -> str | None:
    try:
        runs = read_lock(repo / "teams" / project).get("runs", {})
    except FileNotFoundError:
        return None
    entry = runs.get("tb/r0", {})
    return entry.get("run_id") if isinstance(entry, dict) else None


def _until(predicate: Any) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def _stuck(
    tally: Tally,
    pair: Pair,
    what: str,
    procs: list[tuple[subprocess.Popen[str], LineReader, LineReader]],
) -> None:
    tally.unexpected += 1
    logs = " | ".join(err.text[-600:] for _p, _o, err in procs)
    tally.notes.append(f"pair {pair.index} ({pair}): {what}; {logs}")


def copy_template(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target
