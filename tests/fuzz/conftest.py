"""The fuzz suite (issues 23, 36): Hypothesis-driven hostile inputs for every parser.

Targets: the config parser, the settings parser, the lockfile reader, the saved-plan
reader and its renders, the command lines of osmosis-plan/state/ci, and (issue 36) run
generators, policy rules, smoke rules, results files and the front door's argv, each
structure-aware. Each example must end in success or a clear, known error:
never an internal error (any other exception), never a hang (``HANG_S`` per example, by
``SIGALRM``), never a write outside the repository (a victim file and a directory beside
the repository are checked after every example).

Bounded and seeded: ``derandomize=True`` (the seed is derived from each test, so a run
is reproducible and a failure is found again), no example database, ``FUZZ_EXAMPLES``
examples per target (default 150: the short run of ``make test``; ``make fuzz`` sets
10,000). ``make fuzz`` prints the table of examples, clear errors, successes, internal
errors and seconds per target (``FUZZ_REPORT`` names a file to write it to as well).

Bounded in memory (issue 36): every example runs under an address-space limit
(``RLIMIT_AS``), so an input that makes a reader build something huge (a generator of 2^36
cells) fails its example with ``MemoryError``, an internal error, instead of taking the
machine. ``make fuzz`` (``FUZZ_MEMORY_LIMIT_MB``, default 300) limits each whole fuzzing
process to that, and prints the limit and each process's peak resident memory; in
``make test``, whose workers run other suites too, each fuzz test may use that much more
than its worker held when it started.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
HANG_S = 20.0
MEMORY_LIMIT = int(os.environ.get("FUZZ_MEMORY_LIMIT_MB", "300")) * 1024 * 1024
WHOLE_PROCESS = bool(os.environ.get("FUZZ_TALLY_DIR"))
"""``make fuzz``: the limit is on the whole fuzzing process, not on top of what it holds."""

FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
"""The settings of every fuzz target (``@FUZZ`` under ``@given``)."""


@dataclass
class Tally:
    examples: int = 0
    clear_errors: int = 0
    successes: int = 0
    internal_errors: int = 0
    reached: int | None = None
    """Examples that reached the target's deepest stage (``reached_means``), where the
    target counts it: a strategy whose examples all stop at the first check tests little."""
    reached_means: str | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """This process's CPU time over the target: the figure that does not depend on how
    many other jobs share the machine."""
    started: float = field(default_factory=time.monotonic)
    cpu_started: float = field(default_factory=time.process_time)


TALLIES: dict[str, Tally] = {}


def _address_space() -> int:
    """This process's current address space (``VmSize``), in bytes."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(autouse=True)
def memory_limit() -> Iterator[int]:
    """Every example of the test runs under ``RLIMIT_AS`` (see the module doc)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT if WHOLE_PROCESS else _address_space() + MEMORY_LIMIT
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class Hang(Exception):
    """An example ran longer than ``HANG_S``."""


@contextmanager
def no_hang() -> Iterator[None]:
    def ring(_signum: int, _frame: Any) -> None:
        raise Hang(f"no answer within {HANG_S:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def record(
    target: str, outcome: str, reached: bool | None = None, means: str | None = None
) -> None:
    """Count one example of ``target``: ``clear_error``, ``success`` or ``internal_error``;
    ``reached``: whether it got to the target's deepest stage (``means``), when counted."""
    tally = TALLIES.setdefault(target, Tally())
    tally.examples += 1
    if reached is not None:
        tally.reached = (tally.reached or 0) + int(reached)
        tally.reached_means = means
    if outcome == "clear_error":
        tally.clear_errors += 1
    elif outcome == "success":
        tally.successes += 1
    else:
        tally.internal_errors += 1
    tally.seconds = time.monotonic() - tally.started
    tally.cpu_seconds = time.process_time() - tally.cpu_started


def exercise(
    target: str,
    call: Callable[[], object],
    clear: tuple[type[BaseException], ...],
    refused: Callable[[Any], bool] = lambda _result: False,
    reached: Callable[[Any], bool] | None = None,
    reached_means: str | None = None,
) -> object:
    """Run one example: success and ``clear`` errors are counted, anything else fails it.
    ``refused`` tells a result that is itself a clear error (a config with issues);
    ``reached`` whether a result got to the target's deepest stage (``reached_means``, for
    the table's "reached" column)."""
    try:
        with no_hang():
            result = call()
    except clear:
        record(target, "clear_error", False if reached else None, reached_means)
        return None
    except BaseException:
        record(target, "internal_error", False if reached else None, reached_means)
        raise
    deep = reached(result) if reached is not None else None
    record(target, "clear_error" if refused(result) else "success", deep, reached_means)
    return result


def _reached(t: Tally) -> str:
    if t.reached is None:
        return "–"
    return f"{t.reached:,} ({100 * t.reached / t.examples:.0f}%)" if t.examples else "0"


def table() -> str:
    rows = [
        f"{'target':<14} {'examples':>9} {'clear errors':>13} {'successes':>10} "
        f"{'internal errors':>16} {'reached':>13} {'seconds':>8} {'CPU s':>7}"
    ]
    for name, t in sorted(TALLIES.items()):
        rows.append(
            f"{name:<14} {t.examples:>9,} {t.clear_errors:>13,} {t.successes:>10,} "
            f"{t.internal_errors:>16,} {_reached(t):>13} {t.seconds:>8.1f} {t.cpu_seconds:>7.1f}"
        )
    means = [f"{name}: {t.reached_means}" for name, t in sorted(TALLIES.items())
             if t.reached is not None and t.reached_means]  # fmt: skip
    if means:
        rows.append(
            "reached: examples that got to the target's deepest stage (" + "; ".join(means) + ")"
        )
    return "\n".join(rows)


PEAKS: dict[str, int] = {}
"""Peak resident memory (bytes) of each fuzzing process that ran targets, by pid."""


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _save_tallies() -> None:
    """With ``FUZZ_TALLY_DIR`` (``make fuzz``, whose targets run in two processes), each
    process leaves its counts (and its peak memory) there for the summary."""
    directory = os.environ.get("FUZZ_TALLY_DIR")
    if directory and TALLIES:
        path = os.path.join(directory, f"tally-{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as handle:
            tallies = {name: vars(t) for name, t in TALLIES.items()}
            json.dump({"tallies": tallies, "peak_rss": _peak_rss()}, handle)


def _load_tallies() -> None:
    if TALLIES:
        PEAKS[str(os.getpid())] = _peak_rss()
    directory = os.environ.get("FUZZ_TALLY_DIR")
    if not directory or not os.path.isdir(directory):
        return
    for name in sorted(os.listdir(directory)):
        if name.startswith("tally-") and not name.endswith(f"-{os.getpid()}.json"):
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                saved = json.load(handle)
                for target, counts in saved["tallies"].items():
                    TALLIES[target] = Tally(**counts)
                PEAKS[name[len("tally-") : -len(".json")]] = saved["peak_rss"]


def memory_line() -> str:
    """The memory bound the examples ran under, and what each process used at most."""
    mib = 1024 * 1024
    where = (
        "each fuzzing process"
        if WHOLE_PROCESS
        else "each fuzz test, above what its process held before it"
    )
    peaks = ", ".join(f"{peak / mib:.0f} MiB" for _pid, peak in sorted(PEAKS.items()))
    return (
        f"memory limit: {MEMORY_LIMIT // mib} MiB of address space (RLIMIT_AS) for {where}; "
        f"peak resident memory per process: {peaks or 'not measured'}"
    )


def pytest_sessionfinish(session: Any) -> None:
    _save_tallies()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    _load_tallies()
    if not TALLIES:
        return
    terminalreporter.write_sep("=", f"fuzz: {EXAMPLES:,} examples per target asked")
    terminalreporter.write_line(table())
    terminalreporter.write_line(memory_line())
    report = os.environ.get("FUZZ_REPORT")
    if report:
        with open(report, "w", encoding="utf-8") as handle:
            handle.write(table() + "\n" + memory_line() + "\n")
