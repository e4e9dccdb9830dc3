"""The figures table of ``make reliability``: what was exercised and what must be 0.

Suites call ``record`` as they go; ``tests/reliability/conftest.py`` prints ``render()`` at
the end of the session (and saves the rows as JSON when ``OSMOSIS_RELIABILITY_FIGURES``
names a file). ``python -m tests.reliability.report FILE`` prints a saved table again.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    """One row: a count, and whether the guarantee says it must be 0."""

    suite: str
    name: str
    value: int | float | str
    must_be_zero: bool = False

    @property
    def ok(self) -> bool:
        return not self.must_be_zero or self.value == 0


ROWS: list[Figure] = []


def record(suite: str, name: str, value: int | float | str, *, must_be_zero: bool = False) -> None:
    """Add (or replace) the figure ``name`` of ``suite``."""
    ROWS[:] = [r for r in ROWS if (r.suite, r.name) != (suite, name)]
    ROWS.append(Figure(suite, name, value, must_be_zero))


def render(rows: list[Figure] | None = None) -> str:
    """The table, suites in first-recorded order; a must-be-0 row that is not 0 says FAIL."""
    rows = ROWS if rows is None else rows
    if not rows:
        return "No reliability figures were recorded.\n"
    width = max(len(r.name) for r in rows)
    suite_width = max(12, *(len(r.suite) for r in rows))
    suites: list[str] = []
    for r in rows:
        if r.suite not in suites:
            suites.append(r.suite)
    lines = [
        f"{'suite':<{suite_width}} {'figure':<{width}} {'value':>10}  must be 0",
        f"{'-' * suite_width} {'-' * width} {'-' * 10}  ---------",
    ]
    for suite in suites:
        for r in (r for r in rows if r.suite == suite):
            value = f"{r.value:,}" if isinstance(r.value, int) else str(r.value)
            check = ("yes  ok" if r.ok else "yes  FAIL") if r.must_be_zero else ""
            lines.append(f"{suite:<{suite_width}} {r.name:<{width}} {value:>10}  {check}")
    bad = [r for r in rows if not r.ok]
    lines.append("")
    lines.append(
        f"{len(bad)} must-be-0 figure(s) are not 0." if bad else "Every must-be-0 figure is 0."
    )
    return "\n".join(lines) + "\n"


def save(path: Path) -> None:
    path.write_text(json.dumps([asdict(r) for r in ROWS], indent=2) + "\n", encoding="utf-8")


def load(path: Path) -> list[Figure]:
    return [Figure(**row) for row in json.loads(path.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m tests.reliability.report FIGURES.json\n")
        return 1
    rows = load(Path(args[0]))
    sys.stdout.write(render(rows))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
