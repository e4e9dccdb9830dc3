"""``make lifecycle``: the long lifecycle suite, with its seed, the failing sequence shrunk
to a script that replays it (printed, and written to ``.lifecycle-failure.py`` for
``python -m tests.lifecycle.replay``), and tables of invariant violations and checks and of
how often each rule, fault and outcome was exercised.

Settings (environment): ``LIFECYCLE_EXAMPLES`` sequences (default 400), ``LIFECYCLE_STEPS``
steps each (default 15), ``LIFECYCLE_SEED`` (default: random, printed),
``LIFECYCLE_JOBS`` processes (default 2, one per core; each runs its share of the
sequences with its own seed), ``LIFECYCLE_MIN_COVERAGE`` (default 20: the run fails when a
rule or fault ran fewer times), ``LIFECYCLE_PLANT=lost-record`` plants the harness bug
described in ``machine.py``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from .machine import (
    CHECKS,
    DETAILS,
    EXPECTED_FAULTS,
    EXPECTED_RULES,
    FAULTS,
    INVARIANTS,
    OUTCOMES,
    PLANT,
    RULES,
    VIOLATIONS,
    machine_for,
    world,
)

MIN_COVERAGE = int(os.environ.get("LIFECYCLE_MIN_COVERAGE", "20"))
"""Every rule and fault must be exercised this often in a run, or the run fails."""


SCRIPT = Path(".lifecycle-failure.py")
"""Where the shrunk failing sequence is written, for ``tests.lifecycle.replay``."""


def _script(notes: list[str]) -> str:
    """The replayable lines of Hypothesis's notes on a failure (the script it printed)."""
    lines = [str(line) for line in notes]
    # Hypothesis writes the invariant checks between the steps; the replay makes them
    # after every step itself, so the script keeps the steps only.
    checks = tuple(f"state.{name}()" for name in INVARIANTS)
    keep = [
        line
        for line in lines
        if line.startswith(("state = ", "state.")) and line.strip() not in checks
    ]
    return "\n".join(keep).strip() + "\n" if keep else "\n".join(lines) + "\n"


def _table(title: str, rows: dict[str, int]) -> str:
    width = max([len(k) for k in rows] + [len(title)])
    lines = [f"{title:<{width}}  count", f"{'-' * width}  -----"]
    lines += [f"{name:<{width}}  {count:>5}" for name, count in sorted(rows.items())]
    return "\n".join(lines)


def run_sequences(examples: int, steps: int, chosen: int) -> BaseException | None:
    """Run ``examples`` sequences in this process; the failure (shrunk), if any."""
    with tempfile.TemporaryDirectory(prefix="lifecycle-") as tmp, world(Path(tmp)):
        machine = machine_for(Path(tmp))

        def sequences() -> None:
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=examples,
                    stateful_step_count=steps,
                    deadline=None,
                    database=None,
                    phases=(Phase.generate, Phase.shrink),
                    # One failure shrunk and printed as one script (two at once came back as
                    # an exception group with no script to replay).
                    report_multiple_bugs=False,
                    suppress_health_check=list(HealthCheck),
                ),
            )

        try:
            seed(chosen)(sequences)()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller, exit 1
            while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
                exc = exc.exceptions[0]
            return exc
    return None


def worker(examples: int, steps: int, chosen: int, out: Path) -> int:
    failed = run_sequences(examples, steps, chosen)
    report = {
        "rules": dict(RULES),
        "faults": dict(FAULTS),
        "checks": dict(CHECKS),
        "violations": dict(VIOLATIONS),
        "outcomes": dict(OUTCOMES),
        "details": DETAILS,
        "failure": None
        if failed is None
        else {"error": str(failed), "script": list(getattr(failed, "__notes__", []))},
    }
    out.write_text(json.dumps(report))
    return 0 if failed is None else 1


def main() -> int:
    examples = int(os.environ.get("LIFECYCLE_EXAMPLES", "400"))
    steps = int(os.environ.get("LIFECYCLE_STEPS", "15"))
    jobs = max(1, int(os.environ.get("LIFECYCLE_JOBS", "2")))
    chosen = int(os.environ.get("LIFECYCLE_SEED") or random.randrange(2**32))
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        return worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), Path(sys.argv[5]))
    print(
        f"lifecycle: seed {chosen} (replay: LIFECYCLE_SEED={chosen} make lifecycle), "
        f"{examples} sequences x {steps} steps in {jobs} processes (seeds {chosen}.."
        f"{chosen + jobs - 1}), plant={PLANT or 'none'}",
        flush=True,
    )
    started = time.monotonic()
    totals: dict[str, Counter[str]] = {
        k: Counter() for k in ("rules", "faults", "checks", "violations", "outcomes")
    }
    failures: list[tuple[int, dict[str, Any]]] = []
    details: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lifecycle-reports-") as tmp:
        share = [examples // jobs + (1 if i < examples % jobs else 0) for i in range(jobs)]
        procs = []
        for index, count in enumerate(share):
            out = Path(tmp) / f"worker-{index}.json"
            argv = [sys.executable, "-m", "tests.lifecycle.run", "--worker", str(count)]
            argv += [str(steps), str(chosen + index), str(out)]
            procs.append((index, out, subprocess.Popen(argv)))
        for index, out, proc in procs:
            proc.wait()
            if not out.exists():
                failures.append(
                    (index, {"error": f"worker exited {proc.returncode}", "script": []})
                )
                continue
            report = json.loads(out.read_text())
            for key in totals:
                totals[key].update(report.get(key, {}))
            details += report.get("details", [])
            if report["failure"] is not None:
                failures.append((index, report["failure"]))
    elapsed = time.monotonic() - started
    print()
    print(_table("invariant (violations)", {n: totals["violations"][n] for n in INVARIANTS}))
    print()
    print(_table("invariant (checks)", {n: totals["checks"][n] for n in INVARIANTS}))
    print()
    rules = {name: totals["rules"][name] for name in EXPECTED_RULES} | dict(totals["rules"])
    faults = {name: totals["faults"][name] for name in EXPECTED_FAULTS} | dict(totals["faults"])
    print(_table("rule (times run)", rules))
    print()
    print(_table("fault (times injected)", faults))
    print()
    print(_table("outcome (times seen)", dict(totals["outcomes"])))
    print(
        f"\nlifecycle: {examples} sequences x {steps} steps in {elapsed:.0f}s "
        f"(load average {os.getloadavg()[0]:.1f}), seed {chosen}"
    )
    thin = sorted(name for name, count in (rules | faults).items() if count < MIN_COVERAGE)
    if thin and not failures:
        print(
            f"\nFAILED: exercised fewer than {MIN_COVERAGE} times: {', '.join(thin)} "
            "(more sequences or steps: LIFECYCLE_EXAMPLES, LIFECYCLE_STEPS)"
        )
    replayable = all(_script(f["script"]).startswith("state = ") for _i, f in failures)
    if details and (not failures or not replayable):
        # Counted but not replayed as a script by Hypothesis (a sequence it could not
        # reproduce): the first violations' messages, with the apply before each.
        print("\nViolations without a replayable script:\n" + "\n---\n".join(details))
    for index, failure in failures:
        script = _script(failure["script"])
        SCRIPT.write_text(script)
        print(
            f"\nFAILED (seed {chosen + index}): {failure['error']}\n\n"
            f"The shrunk sequence (written to {SCRIPT.name}; replay it with "
            f"`.venv/bin/python -m tests.lifecycle.replay {SCRIPT.name}`):\n{script}"
        )
    return 1 if failures or thin or sum(totals["violations"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
