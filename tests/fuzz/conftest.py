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
10,000), in Hypothesis runs of at most ``FUZZ_CHUNK`` examples (default 1,000), each with
its own fixed seed (``fuzz_target``). Hypothesis keeps every ``str`` a strategy drew, for
every example of a run, until the run ends (its cache of up to 10,000 results holds each
draw's value): one run of 10,000 examples grew the results-files process past 1 GiB, while
runs of 1,000 give the memory back to the next run. ``make fuzz`` (``tests/fuzz/run.py``)
runs each target in its own process and prints the table of examples, clear errors,
successes, internal errors, seconds and memory per target.

Bounded in memory (issue 36): every example runs under an address-space limit
(``RLIMIT_AS``), so an input that makes a reader build something huge (a generator of 2^36
cells) fails its example with ``MemoryError``, an internal error, instead of taking the
machine. ``make fuzz`` (``FUZZ_MEMORY_LIMIT_MB``, default 300) limits each target's whole
process to that, from its start, and prints the limit and each process's peak resident
memory; in ``make test``, whose workers run other suites too, each fuzz test may use that
much more than its worker held when it started.
"""

from __future__ import annotations

import functools
import json
import math
import os
import resource
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, seed, settings

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
CHUNK = int(os.environ.get("FUZZ_CHUNK", "1000"))
RUNS = max(1, math.ceil(EXAMPLES / CHUNK))
"""Hypothesis runs per target: ``FUZZ_EXAMPLES`` in runs of at most ``FUZZ_CHUNK``."""
HANG_S = 20.0
MEMORY_LIMIT = int(os.environ.get("FUZZ_MEMORY_LIMIT_MB", "300")) * 1024 * 1024
WHOLE_PROCESS = bool(os.environ.get("FUZZ_TALLY_DIR"))
"""``make fuzz``: the limit is on the whole fuzzing process, not on top of what it holds."""

FUZZ = settings(
    max_examples=math.ceil(EXAMPLES / RUNS),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)
"""The settings of every fuzz target's Hypothesis run (see ``fuzz_target``)."""

Test = TypeVar("Test", bound=Callable[[], None])


def fuzz_target(test: Test) -> Test:
    """``@fuzz_target`` above ``@given``: the ``FUZZ`` settings, and ``RUNS`` Hypothesis runs
    of the test, the second and later each seeded by the test's name and its index (so
    they draw other examples than the first, reproducibly). One run (``make test``'s 150
    examples) is the plain derandomized test. Why runs: the module doc."""
    configured = FUZZ(test)
    if RUNS == 1:
        return configured

    @functools.wraps(configured, updated=())
    def in_runs() -> None:
        configured()
        try:
            for index in range(1, RUNS):
                seed(f"{configured.__qualname__}:{index}")(configured)()
        finally:
            seed(None)(configured)

    return in_runs  # type: ignore[return-value]


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
    errors: dict[str, int] = field(default_factory=dict)
    """Internal errors by exception type (``MemoryError``: 2)."""
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
    target: str,
    outcome: str,
    reached: bool | None = None,
    means: str | None = None,
    error: BaseException | None = None,
) -> None:
    """Count one example of ``target``: ``clear_error``, ``success`` or ``internal_error``
    (``error``); ``reached``: whether it got to the target's deepest stage (``means``)."""
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
        kind = type(error).__name__ if error is not None else "unknown"
        tally.errors[kind] = tally.errors.get(kind, 0) + 1
    tally.seconds = time.monotonic() - tally.started
    tally.cpu_seconds = time.process_time() - tally.cpu_started
    _save_tallies(every_s=2.0)


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
    except BaseException as exc:
        record(target, "internal_error", False if reached else None, reached_means, exc)
        raise
    deep = reached(result) if reached is not None else None
    record(target, "clear_error" if refused(result) else "success", deep, reached_means)
    return result


def _reached(t: Tally) -> str:
    if t.reached is None:
        return "–"
    return f"{t.reached:,} ({100 * t.reached / t.examples:.0f}%)" if t.examples else "0"


@dataclass
class Row:
    """One line of the fuzz table: a target's counts (``None``: its process left none) and
    how its process ended."""

    name: str
    tally: Tally | None
    peak_rss: int | None = None
    status: str = "ok"


def table(rows: list[Row]) -> str:
    """The fuzz table: one line per target, then what ``reached`` means for each."""
    mib = 1024 * 1024
    lines = [
        f"{'target':<18} {'examples':>9} {'clear errors':>13} {'successes':>10} "
        f"{'internal errors':>16} {'reached':>13} {'seconds':>8} {'CPU s':>7} "
        f"{'peak MiB':>8}  status"
    ]
    for row in sorted(rows, key=lambda r: r.name):
        t = row.tally or Tally(seconds=math.nan, cpu_seconds=math.nan)
        peak = f"{row.peak_rss / mib:.0f}" if row.peak_rss else "–"
        lines.append(
            f"{row.name:<18} {t.examples:>9,} {t.clear_errors:>13,} {t.successes:>10,} "
            f"{t.internal_errors:>16,} {_reached(t):>13} {t.seconds:>8.1f} {t.cpu_seconds:>7.1f} "
            f"{peak:>8}  {row.status}"
        )
    means = [f"{row.name}: {row.tally.reached_means}" for row in sorted(rows, key=lambda r: r.name)
             if row.tally and row.tally.reached is not None and row.tally.reached_means]  # fmt: skip
    if means:
        lines.append(
            "reached: examples that got to the target's deepest stage (" + "; ".join(means) + ")"
        )
    return "\n".join(lines)


def status(tally: Tally | None) -> str:
    """``ok``, or the internal errors of a target by type."""
    if tally is None or not tally.internal_errors:
        return "ok"
    kinds = ", ".join(f"{kind} × {n}" for kind, n in sorted(tally.errors.items()))
    return f"FAILED: {kinds or 'internal errors'}"


def peak_rss() -> int:
    """This process's peak resident memory, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


_last_save = [0.0]


def _save_tallies(every_s: float = 0.0) -> None:
    """With ``FUZZ_TALLY_DIR`` (``make fuzz``: ``tests/fuzz/run.py``), leave this process's
    counts there as ``tally-PID.json``; during the run at most every ``every_s`` seconds,
    so a process that dies (a signal, the memory limit) still shows how far it got."""
    directory = os.environ.get("FUZZ_TALLY_DIR")
    now = time.monotonic()
    if not directory or not TALLIES or now - _last_save[0] < every_s:
        return
    _last_save[0] = now
    path = os.path.join(directory, f"tally-{os.getpid()}.json")
    tallies = {name: vars(t) for name, t in TALLIES.items()}
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump({"tallies": tallies}, handle)
    os.replace(path + ".tmp", path)


def memory_line(where: str) -> str:
    """The memory bound the examples ran under."""
    return f"memory limit: {MEMORY_LIMIT // (1024 * 1024)} MiB of address space (RLIMIT_AS) for {where}"


def pytest_sessionfinish(session: Any) -> None:
    _save_tallies()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A fuzz run in this process (not under xdist) prints its table."""
    if not TALLIES:
        return
    rows = [Row(name, t, peak_rss(), status(t)) for name, t in TALLIES.items()]
    terminalreporter.write_sep("=", f"fuzz: {EXAMPLES:,} examples per target asked")
    terminalreporter.write_line(table(rows))
    where = (
        "this fuzzing process"
        if WHOLE_PROCESS
        else "each fuzz test, above what its process held before it"
    )
    terminalreporter.write_line(memory_line(where))
