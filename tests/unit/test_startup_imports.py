"""A plan loads only what it uses: the libraries a no-op plan never needs stay unimported.

Start-up is most of a small plan's time (``make perf``, start-up: the no-op plan of 10
configs). These modules are imported where they are used, and this test keeps them there:
it imports what ``osmosis-plan`` imports, in a fresh interpreter, and lists what came in.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support.guards import without_coverage

NOT_AT_START = [
    "deepdiff",
    "structlog",
    "reconciler.engine.apply",
    "reconciler.engine.executor",
    "reconciler.engine.wait",
    "reconciler.engine.saved_plan",
    "reconciler.cli.apply",
    "reconciler.engine.apply_result",
    "asyncio",
    "tomlkit",
    # Issue 26: what only other commands use stays out of a plan's start-up too.
    "watchfiles",
    "sqlite3",  # the embedded Platform's store, only with --platform local
    "multiprocessing",
    "reconciler.local_platform",
    "reconciler.ci",
    "reconciler.config.edit",
    "reconciler.config.fmt",
    "reconciler.results.html",
    "reconciler.results.svg",
    "reconciler.engine.importer",
    "reconciler.engine.state_commands",
    "reconciler.cli.watch",
    "reconciler.cli.results",
    # Issue 26: what only some plans use (run generators, a paid item, a config error, the
    # git lock, an unknown benchmark name) is imported where it is used.
    "reconciler.config.generator",
    "reconciler.plan.preflight",
    "reconciler.plan.submit_rules",
    "reconciler.engine.precheck",
    "reconciler.state.gitlock",
    "reconciler.outputs.downloads",
    # Only a did-you-mean hint (``errors.closest``) and a submit with an earlier scored run
    # (the power line) use these.
    "difflib",
    "statistics",
    "reconciler.results.stats",
    # The value types' library replaced pydantic (issue 26): nothing may bring it back.
    "pydantic",
]

PROBE = """
import sys
import reconciler.cli.plan, reconciler.engine.load, reconciler.engine.plan, reconciler.config.project
print(",".join(name for name in {names!r} if name in sys.modules))
"""


def _loaded(names: list[str], prelude: str = "") -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", prelude + PROBE.format(names=names)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=without_coverage(),  # coverage would import sqlite3 and multiprocessing itself
    )
    return [name for name in result.stdout.strip().split(",") if name]


def test_the_plan_command_imports_none_of_the_libraries_only_other_paths_use() -> None:
    assert _loaded(NOT_AT_START) == []


def test_the_probe_sees_a_module_that_was_imported() -> None:
    # The probe must be able to fail, or the test above proves nothing.
    assert _loaded(["deepdiff"], prelude="import deepdiff\n") == ["deepdiff"]
