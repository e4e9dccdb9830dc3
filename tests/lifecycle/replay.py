"""Replay a sequence ``make lifecycle`` printed (and wrote to ``.lifecycle-failure.py``):
``python -m tests.lifecycle.replay FILE``. The script is Hypothesis's own
(``state = LifecycleMachine()``, one ``state.rule(...)`` line a step,
``state.teardown()``); it runs here against a fresh served local Platform in a temporary
directory, the invariants checked after every step as in the suite. Exit 0 when the
sequence keeps every invariant, 1 (naming the invariant) when it breaks one.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hypothesis.stateful import RuleBasedStateMachine

from .machine import Violation, machine_for, world


class _Checked:
    """``state`` of the script: every rule call is followed by the machine's invariants."""

    def __init__(self, machine: RuleBasedStateMachine) -> None:
        self._machine = machine

    def _invariants(self) -> None:
        for name in dir(type(self._machine)):
            method = getattr(type(self._machine), name)
            if getattr(method, "hypothesis_stateful_invariant", None) is not None:
                method(self._machine)

    def __getattr__(self, name: str) -> object:
        target = getattr(self._machine, name)
        if not callable(target) or name == "teardown":
            return target

        def step(*args: object, **kwargs: object) -> object:
            done = target(*args, **kwargs)
            self._invariants()
            return done

        return step


def replay(script: str, base: Path) -> None:
    """Run ``script`` (Hypothesis's replay script) with its machine living under ``base``."""
    machine = machine_for(base)
    with world(base):
        namespace = {"LifecycleMachine": lambda: _Checked(machine())}
        # Hypothesis's script ends with `state.teardown()`; the lines before are rules.
        exec(compile(script, "<lifecycle script>", "exec"), namespace)  # noqa: S102


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.lifecycle.replay FILE", file=sys.stderr)
        return 2
    script = Path(argv[0]).read_text()
    with tempfile.TemporaryDirectory(prefix="lifecycle-replay-") as tmp:
        try:
            replay(script, Path(tmp))
        except Violation as exc:
            print(f"replayed: {exc}")
            return 1
    print("replayed: every invariant held")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
