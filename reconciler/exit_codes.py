"""The exit codes of every command line, in one place (design.md §4: frozen).

A command says how it ended as an ``Ending``; ``exit_code`` is the one table that turns an
ending into a number. The reconciler's commands (``reconciler.cli``), ``osmosis-ci`` and
the local Platform's own command line all take their numbers from here; nothing else
writes an exit code as a literal.

Usage errors exit 1, never 2 (2 means "something is pending" to a script that passed
``--detailed-exitcode``). The local Platform's command line is the one exception: it is a
server's tool that follows argparse's convention (``EMULATOR_USAGE``).
"""

from __future__ import annotations

from enum import Enum
from types import MappingProxyType
from typing import Final


class Ending(Enum):
    """How a command ended: what its exit code tells a script."""

    DONE = "done"
    """Success (``osmosis-plan --detailed-exitcode``: nothing to do and no drift)."""
    FAILED = "failed"
    """An error, or nothing applied: invalid config, usage, stale plan, lock held, refused."""
    PENDING = "pending"
    """Something for a script to act on: ``osmosis-plan --detailed-exitcode`` found changes
    or drift; ``osmosis-results --fail-on-regression`` found a run worse than its baseline."""
    PARTIAL = "partial"
    """Some actions failed; the lockfile holds the ones that succeeded."""
    BLOCKED = "blocked"
    """``osmosis-plan``: the plan has items newly blocked since the last recorded apply."""
    WAIT_TIMED_OUT = "wait_timed_out"
    """``osmosis-apply --wait``: everything applied, but runs were still active at the end."""
    INTERRUPTED = "interrupted"
    """SIGINT or SIGTERM; the lockfile holds what completed."""


_CODES: Final = MappingProxyType(
    {
        Ending.DONE: 0,
        Ending.FAILED: 1,
        Ending.PENDING: 2,
        Ending.PARTIAL: 3,
        Ending.BLOCKED: 4,
        Ending.WAIT_TIMED_OUT: 4,
        Ending.INTERRUPTED: 130,
    }
)

OK: Final = _CODES[Ending.DONE]
ERROR: Final = _CODES[Ending.FAILED]
PENDING: Final = _CODES[Ending.PENDING]
PARTIAL: Final = _CODES[Ending.PARTIAL]
WAIT_TIMED_OUT: Final = _CODES[Ending.WAIT_TIMED_OUT]
INTERRUPTED: Final = _CODES[Ending.INTERRUPTED]
EMULATOR_USAGE: Final = 2
"""``osmosis-platform-emulator``: an option value it cannot use (argparse's convention)."""


def exit_code(ending: Ending) -> int:
    """The exit code of a command that ended so."""
    return _CODES[ending]


PLAN_AND_APPLY_HELP: Final = """\
exit codes:
  osmosis-plan   0  success (with --detailed-exitcode: nothing to do and no drift)
                 1  error: invalid config, platform unreachable, policy denied, bad usage
                 2  only with --detailed-exitcode: changes or drift pending (with
                    --refresh-only: changes to record or drift)
                 4  the plan has items newly blocked since the last recorded apply (each
                    says its fix); a standing block, recorded in the lockfile, is listed
                    but not counted; checked before --detailed-exitcode's 2
  osmosis-apply  0  everything applied (with --wait: every run ended and was downloaded)
                 1  nothing applied: error, stale plan, lock held, not approved, bad usage
                 3  partial: some actions it attempted failed; the lockfile holds the ones
                    that succeeded (a blocked item is reported, never a failure by itself)
                 4  only with --wait: everything applied, but the wait ran out while runs
                    were still active; the lockfile records what was done (apply --wait
                    again to download them once they end)
  both         130  interrupted (SIGINT/SIGTERM); the lockfile holds what completed
"""
"""The ``exit codes`` section of ``osmosis-plan --help`` and ``osmosis-apply --help``."""
