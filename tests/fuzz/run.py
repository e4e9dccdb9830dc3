"""``make fuzz``: every fuzz target in its own process, ``FUZZ_JOBS`` at a time (default 2,
one per core), each under ``FUZZ_MEMORY_LIMIT_MB`` of address space from its start; then
one table of all targets (``conftest.table``), printed and written to ``FUZZ_REPORT``.

Why one process per target: Hypothesis's memory grows with the examples of a run, and
Python rarely gives freed memory back to the system, so in a shared process a target
started where the last one's growth left off (the results target ran out of memory at its
173rd example after 30,000 examples of three others). A process of its own starts each
target from the same floor, and one target's growth or crash cannot take another down.

A target's process that dies (a signal: a C extension failing an allocation under the
limit; ``MemoryError``; a failed example) is a row of the table marked ``FAILED``, with
what it counted until then (each process saves its counts every few seconds), its peak
memory (from ``wait4``), its exit and the tail of its log (``.fuzz-tallies/*.log``); the
run then exits 1.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .conftest import EXAMPLES, MEMORY_LIMIT, Row, Tally, memory_line, status, table

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Job:
    node: str
    log: Path
    process: subprocess.Popen[bytes]
    started: float


def targets() -> list[str]:
    """The fuzz targets' pytest node ids, as pytest collects them: the tests of the
    ``test_fuzz_*.py`` files (the runner's own tests, ``test_runner.py``, are not targets)."""
    found = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "--collect-only", "-q", "tests/fuzz"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    nodes = [line for line in found.stdout.splitlines() if "::test_" in line]
    return [
        node for node in nodes if node.split("::")[0].rsplit("/", 1)[-1].startswith("test_fuzz_")
    ]


def _limit_memory() -> None:
    """In the child, before pytest starts: the address-space limit on the whole process."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, hard))


def start(node: str, tallies: Path) -> Job:
    log = tallies / (re.sub(r"[^A-Za-z0-9_.-]+", "_", node) + ".log")
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider"]
            + ["-q", node],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_limit_memory,
        )
    return Job(node, log, process, time.monotonic())


def _ended(code: int) -> str:
    if os.WIFSIGNALED(code):
        return f"killed by {signal.Signals(os.WTERMSIG(code)).name}"
    return f"exit {os.WEXITSTATUS(code)}"


def finish(job: Job, code: int, usage: resource.struct_rusage, tallies: Path) -> Row:
    """The table row of a target whose process ended with wait status ``code``."""
    job.process.returncode = code  # reaped by wait4: Popen must not wait for it again
    saved = tallies / f"tally-{job.process.pid}.json"
    counts = json.loads(saved.read_text(encoding="utf-8"))["tallies"] if saved.exists() else {}
    name, tally = next(iter(counts.items()), (job.node.split("::")[-1], None))
    row = Row(name, Tally(**tally) if tally else None, usage.ru_maxrss * 1024, "ok")
    if row.tally is None:
        row.tally = Tally(seconds=time.monotonic() - job.started)
    row.tally.cpu_seconds = row.tally.cpu_seconds or usage.ru_utime + usage.ru_stime
    failed = status(row.tally) if row.tally.internal_errors else ""
    if code != 0 or failed:
        row.status = "; ".join(x for x in (failed or "FAILED", _ended(code)) if x)
        tail = job.log.read_text(encoding="utf-8", errors="replace").splitlines()[-25:]
        print(f"--- {job.node}: {row.status}; last lines of {job.log.name}:", flush=True)
        print("\n".join(tail), flush=True)
    elif row.tally.examples < EXAMPLES:
        row.status = f"ok ({row.tally.examples:,} of {EXAMPLES:,}: Hypothesis ran out of inputs)"
    return row


def main() -> int:
    tallies = Path(os.environ.get("FUZZ_TALLY_DIR", ROOT / ".fuzz-tallies"))
    tallies.mkdir(parents=True, exist_ok=True)
    os.environ["FUZZ_TALLY_DIR"] = str(tallies)
    jobs = int(os.environ.get("FUZZ_JOBS", "2"))
    started = time.monotonic()
    pending = targets()
    print(
        f"fuzz: {len(pending)} targets, {EXAMPLES:,} examples each, {jobs} at a time, "
        f"{MEMORY_LIMIT // (1024 * 1024)} MiB each",
        flush=True,
    )
    running: dict[int, Job] = {}
    rows: list[Row] = []
    while pending or running:
        while pending and len(running) < jobs:
            job = start(pending.pop(0), tallies)
            running[job.process.pid] = job
        pid, code, usage = os.wait4(-1, 0)
        if pid in running:
            row = finish(running.pop(pid), code, usage, tallies)
            rows.append(row)
            print(f"{row.name}: {row.status} ({time.monotonic() - started:.0f} s)", flush=True)
    where = "each target's process (its peak: 'peak MiB')"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    report = "\n".join(
        [
            table(rows),
            memory_line(where),
            f"wall time: {time.monotonic() - started:.0f} s; load average at the end: {load}",
        ]
    )
    print(f"{'=' * 30} fuzz: {EXAMPLES:,} examples per target asked {'=' * 30}")
    print(report, flush=True)
    out = os.environ.get("FUZZ_REPORT")
    if out:
        Path(out).write_text(report + "\n", encoding="utf-8")
    return 0 if all(row.status.startswith("ok") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
