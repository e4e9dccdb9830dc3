"""Print the house measures of ``reconciler/`` (issue 33), before and after a change:

    python scripts/house_measures.py [--json] [--details]

* lockfile writers: modules outside ``reconciler/state/`` that call ``write_lockfile``,
  construct a ``StateStore`` or call ``_atomic_write``;
* exit-code choices: modules (and functions) that write a non-zero exit code as a number;
* ``Session``: where a class of that name is defined, if anywhere;
* import circles: strongly connected components of ``reconciler/``'s import graph, function
  level and ``TYPE_CHECKING`` imports included;
* functions over 100 lines, and the longest;
* private names (``_x``) imported from another module: distinct (importer, module, name)
  triples, ``from a import _x`` and ``a._x`` on an imported module ``a``;
* coverage: the total of ``.coverage`` when ``make coverage`` has written one.

tests/support/house.py defines each count exactly (its docstring); everything is read from
the source with ``ast``, nothing imported. Needs only the standard library (and coverage,
for the last figure).

On main at 35dc349 (issue 33 said 5, 4, yes, 3, 21, 151) this printed 5, 9 (modules), yes,
4, 21, 156. The differences are in how the issue counted:

* exit codes: 9 modules write one as a number (cli/main, cli/front, cli/results,
  cli/importing, cli/authoring, ci/main, engine/session, engine/apply_result and the local
  Platform's command); the issue's 4 are presumably the places that map an apply or plan
  outcome to its code. The goal (1: one constants module) reads the same either way.
* circles: the fourth is ``render/__init__`` and the five renders, which import private
  helpers from it while it re-imports them at its end (``# noqa: E402``).
* private names: 151 ``from a import _x`` plus 5 ``a._x`` uses (cli/front reads three
  parsers of cli/main, two local Platform modules ``simulation._model_string``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import house  # noqa: E402


def measure(data_file: Path) -> dict[str, Any]:
    """Every measure, with the detail behind each count."""
    writers = house.lockfile_writers()
    exits = house.exit_code_choices()
    circles = house.import_circles(house.import_graph())
    lengths = house.function_lengths()
    long = dict(
        sorted(
            ((k, v) for k, v in lengths.items() if v > house.FUNCTION_LIMIT),
            key=lambda kv: (-kv[1], kv[0]),
        )
    )
    private = sorted(house.private_imports())
    coverage = house.coverage_percent(data_file)
    return {
        "lockfile_writer_modules": len(writers),
        "exit_code_modules": len(exits),
        "exit_code_functions": len({(m, p.split(":")[0]) for m, ps in exits.items() for p in ps}),
        "session": house.session_exists(),
        "import_circles": len(circles),
        "functions_over_100": len(long),
        "longest_function": next(iter(long.items()), None),
        "private_imports": len(private),
        "coverage_percent": None if coverage is None else round(coverage.percent, 2),
        "details": {
            "lockfile_writers": writers,
            "exit_codes": exits,
            "import_circles": circles,
            "functions_over_100": long,
            "private_imports": [
                f"{importer} <- {module}.{name}" for importer, module, name in private
            ],
            "coverage_data": None if coverage is None else str(coverage.data_file),
        },
    }


def show(figures: dict[str, Any], details: bool) -> str:
    longest = figures["longest_function"]
    coverage = figures["coverage_percent"]
    lines = [
        f"lockfile writers outside state/   {figures['lockfile_writer_modules']} modules",
        f"exit-code choices                 {figures['exit_code_modules']} modules"
        f" ({figures['exit_code_functions']} functions)",
        "Session                           "
        + (", ".join(figures["session"]) if figures["session"] else "gone"),
        f"import circles                    {figures['import_circles']}",
        f"functions over 100 lines          {figures['functions_over_100']}"
        + (f" (longest {longest[0]}, {longest[1]} lines)" if longest else ""),
        f"private names imported            {figures['private_imports']}",
        "coverage                          "
        + (_no_coverage() if coverage is None else f"{coverage:.2f}%"),
    ]
    if details:
        detail = figures["details"]
        lines.append("")
        for module, calls in detail["lockfile_writers"].items():
            lines.append(f"writer   {module}: {', '.join(calls)}")
        for module, places in detail["exit_codes"].items():
            lines.append(f"exit     {module}: {', '.join(places)}")
        for circle in detail["import_circles"]:
            lines.append(f"circle   {' <-> '.join(circle)}")
        for function, size in detail["functions_over_100"].items():
            lines.append(f"long     {size:4d} {function}")
        for entry in detail["private_imports"]:
            lines.append(f"private  {entry}")
    return "\n".join(lines) + "\n"


def _no_coverage() -> str:
    if importlib.util.find_spec("coverage") is None:
        return "coverage is not installed here (run this with .venv/bin/python)"
    return "no data (run `make coverage`)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="one JSON document, details included")
    parser.add_argument("--details", action="store_true", help="list what each count counts")
    parser.add_argument(
        "--coverage-data", type=Path, default=ROOT / ".coverage", help="default: .coverage"
    )
    args = parser.parse_args(argv)
    figures = measure(args.coverage_data)
    if args.json:
        sys.stdout.write(json.dumps(figures, indent=2) + "\n")
    else:
        sys.stdout.write(show(figures, args.details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
