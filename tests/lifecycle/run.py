"""``make lifecycle``: the long lifecycle suite, with its seed, the failing sequence shrunk
to a script that replays it, and tables of invariant violations and of coverage.

Settings (environment): ``LIFECYCLE_EXAMPLES`` sequences (default 200), ``LIFECYCLE_STEPS``
steps each (default 15), ``LIFECYCLE_SEED`` (default: random, printed),
``LIFECYCLE_PLANT=lost-record`` plants the harness bug described in ``machine.py``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from .machine import CHECKS, FAULTS, INVARIANTS, PLANT, RULES, VIOLATIONS, machine_for, world


def _table(title: str, rows: dict[str, int]) -> str:
    width = max([len(k) for k in rows] + [len(title)])
    lines = [f"{title:<{width}}  count", f"{'-' * width}  -----"]
    lines += [f"{name:<{width}}  {count:>5}" for name, count in sorted(rows.items())]
    return "\n".join(lines)


def main() -> int:
    examples = int(os.environ.get("LIFECYCLE_EXAMPLES", "200"))
    steps = int(os.environ.get("LIFECYCLE_STEPS", "15"))
    chosen = int(os.environ.get("LIFECYCLE_SEED") or random.randrange(2**32))
    print(
        f"lifecycle: seed {chosen} (replay: LIFECYCLE_SEED={chosen} make lifecycle), "
        f"{examples} sequences x {steps} steps, plant={PLANT or 'none'}",
        flush=True,
    )
    started = time.monotonic()
    failed: BaseException | None = None
    with tempfile.TemporaryDirectory(prefix="lifecycle-") as tmp, world(Path(tmp)):
        machine = machine_for(Path(tmp))
        test = seed(chosen)(
            lambda: run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=examples,
                    stateful_step_count=steps,
                    deadline=None,
                    database=None,
                    print_blob=True,
                    phases=(Phase.generate, Phase.shrink),
                    suppress_health_check=list(HealthCheck),
                ),
            )
        )
        try:
            test()
        except BaseException as exc:  # noqa: BLE001 - reported below, exit 1
            failed = exc
    elapsed = time.monotonic() - started
    print()
    print(_table("invariant (violations)", {name: VIOLATIONS[name] for name in INVARIANTS}))
    print()
    print(_table("invariant (checks)", {name: CHECKS[name] for name in INVARIANTS}))
    print()
    print(_table("rule (times run)", dict(RULES)))
    print()
    print(_table("fault (times injected)", dict(FAULTS)))
    print(f"\nlifecycle: {elapsed:.0f}s, seed {chosen}")
    if failed is not None:
        print(
            f"\nFAILED: {failed}\nThe shrunk sequence is printed above as a script "
            "(state = LifecycleMachine(); state.<rule>(...); ...).",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
