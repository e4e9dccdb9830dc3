"""``make fuzz``'s runner (tests/fuzz/run.py): a target's process that dies is a failed row
of the table, with what it counted before, never a missing one (issue 36: a worker that
segfaulted left no counts and the run wrote no report)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.fuzz.conftest import EXAMPLES, Row, Tally, table
from tests.fuzz.run import Job, finish


def _ended(tmp_path: Path, node: str, code: str) -> Row:
    """Run ``code`` as a target's process would run, reap it with ``wait4``, make its row."""
    log = tmp_path / "target.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", code], stdout=out, stderr=out)
    job = Job(node, log, process, time.monotonic())
    _pid, status, usage = os.wait4(process.pid, 0)
    return finish(job, status, usage, tmp_path)


def test_a_process_killed_by_a_signal_is_a_failed_row(tmp_path: Path) -> None:
    row = _ended(
        tmp_path,
        "tests/fuzz/x.py::test_x",
        "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
    )
    assert row.name == "test_x"
    assert row.status == "FAILED; killed by SIGSEGV"
    assert row.peak_rss and row.peak_rss > 0
    assert "FAILED; killed by SIGSEGV" in table([row])


def _saving(tmp_path: Path, target: str, counts: Tally, then: str = "") -> str:
    """A process that saves ``counts`` as a fuzz target's process does, then runs ``then``."""
    saved = tmp_path / "counts.json"
    saved.write_text(json.dumps({"tallies": {target: vars(counts)}}), encoding="utf-8")
    return (
        "import os, shutil, sys\n"
        f"shutil.copy({str(saved)!r}, os.path.join({str(tmp_path)!r}, f'tally-{{os.getpid()}}.json'))\n"
        + then
    )


def test_a_process_that_counted_then_died_keeps_its_counts(tmp_path: Path) -> None:
    """The counts a process saved before it ran out of memory are its row."""
    counts = Tally(examples=173, successes=172, internal_errors=1, errors={"MemoryError": 1})
    code = _saving(tmp_path, "results files", counts, "sys.exit(1)\n")
    row = _ended(tmp_path, "tests/fuzz/test_fuzz_results.py::test_results_files", code)
    assert row.name == "results files"
    assert row.tally is not None and row.tally.examples == 173
    assert row.status == "FAILED: MemoryError × 1; exit 1"


def test_a_clean_process_is_an_ok_row(tmp_path: Path) -> None:
    code = _saving(tmp_path, "config", Tally(examples=10, successes=10))
    row = _ended(tmp_path, "tests/fuzz/test_fuzz_readers.py::test_config_parser", code)
    assert row.name == "config"
    assert row.status == f"ok (10 of {EXAMPLES:,}: Hypothesis ran out of inputs)"
