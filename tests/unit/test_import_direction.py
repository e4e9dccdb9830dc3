"""The architecture rule as a test (style.md, "Import direction"), computed from the package
tree rather than a hand-kept list of modules:

* the pure core is the packages ``model``, ``plan`` and ``render`` plus every top-level
  module they import; each of its modules, imported alone in a fresh interpreter, loads no
  edge library (httpx, tomlkit, structlog, watchfiles);
* the core imports no edge package (``config``, ``state``, ``platform``, ...);
* nothing but a command shell imports one: the shells are ``cli`` (the only layer that reads
  argv, prints or exits) and ``ci`` (``osmosis-ci``, a command shell of the same layer that
  prints through cli's one ``Output``, as every command does). The engine included: it
  reports through the protocols of ``engine/report.py``, which the printer implements;
* the local Platform (``local_platform``, the emulator beside the client) is embedded by one
  module of the product (``engine/context.py``, for ``--platform local``) and reads only the
  vocabulary both sides share (run statuses, the submit rules) and the project's settings:
  never the client it stands in for, the engine, the state or a shell;
* no two modules import each other, directly or round a longer loop (lazy imports and
  ``TYPE_CHECKING`` ones count: each is an arrow a reader follows).

Each rule has a companion test proving its probe can fail.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from tests.support.house import LongFileWarning

PACKAGE = Path(__file__).resolve().parents[2] / "reconciler"
CORE_PACKAGES = ("model", "plan", "render", "results")
EDGE_LIBRARIES = ("httpx", "tomlkit", "structlog", "watchfiles")
SHELL_PACKAGES = ("cli", "ci")
"""The command shells: only a shell imports a shell (``ci`` uses cli's printer)."""
# Imports against the layering that predate this test, each to be removed by the work named.
# The test fails when one disappears, so the set only shrinks; both are empty now.
KNOWN_CLI_IMPORTS: set[tuple[str, str]] = set()
KNOWN_CIRCLES: set[frozenset[str]] = set()
"""Import circles that predate their test, each to be removed; the set only shrinks."""
LOCAL_PLATFORM = "local_platform"
LOCAL_PLATFORM_EMBEDDERS = {"reconciler.engine.context"}
"""The product's modules that import the local Platform: the one that runs it in-process."""
LOCAL_PLATFORM_READS = {"reconciler", "errors", "exit_codes", "model", "plan", "config"}
"""What the local Platform imports: the shared vocabulary, the exit codes of every command
line and the project's settings."""


# --------------------------------------------------------------------------- the tree


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package tree: dotted name -> file."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports_of(name: str, path: Path) -> set[str]:
    """The ``reconciler`` modules ``name`` imports, anywhere in the file (lazy ones too)."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            # ``from reconciler import deadlines`` imports a module, not a name.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return {m for m in found if m == "reconciler" or m.startswith("reconciler.")}


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (names that are not modules dropped)."""
    return {name: imports_of(name, path) & modules.keys() for name, path in modules.items()}


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """The import graph of ``reconciler/`` (parsed once for the tests of this file)."""
    return import_graph(module_names())


def unit_of(module: str) -> str:
    """The top-level package or module a module belongs to (``reconciler.plan.cost`` ->
    ``plan``); the package's own ``__init__`` is ``reconciler``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "reconciler"


def packages(modules: Mapping[str, Path]) -> set[str]:
    """The units of the tree that are packages (``plan``), not top-level modules."""
    return {
        name.split(".")[1]
        for name, path in modules.items()
        if path.name == "__init__.py" and name.count(".") == 1
    }


def core_units(graph: Mapping[str, set[str]], package_units: set[str]) -> set[str]:
    """The core packages and every top-level module they import, transitively. Another
    package is an edge by definition (importing it is a violation, not a reason to join)."""
    edge_packages = package_units - set(CORE_PACKAGES)
    units = set(CORE_PACKAGES)
    while True:
        reached = {
            unit_of(target)
            for source, targets in graph.items()
            if unit_of(source) in units
            for target in targets
        } - edge_packages
        if reached <= units:
            return units
        units |= reached


def core_modules(graph: Mapping[str, set[str]], package_units: set[str]) -> list[str]:
    units = core_units(graph, package_units)
    return sorted(module for module in graph if unit_of(module) in units)


def layering_violations(
    graph: Mapping[str, set[str]], package_units: set[str]
) -> list[tuple[str, str]]:
    """(importer, imported) pairs that break the layering rules."""
    core = core_units(graph, package_units)
    bad = []
    for source, targets in graph.items():
        for target in targets:
            src, dst = unit_of(source), unit_of(target)
            if src == dst:
                continue
            if (dst in SHELL_PACKAGES and src not in SHELL_PACKAGES) or (
                src in core and dst not in core
            ):
                bad.append((source, target))
    return sorted(bad)


def local_platform_violations(graph: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs across the local Platform's border that its rule refuses."""
    bad = []
    for source, targets in graph.items():
        for target in targets:
            src, dst = unit_of(source), unit_of(target)
            if src == dst:
                continue
            if (dst == LOCAL_PLATFORM and source not in LOCAL_PLATFORM_EMBEDDERS) or (
                src == LOCAL_PLATFORM and dst not in LOCAL_PLATFORM_READS
            ):
                bad.append((source, target))
    return sorted(bad)


def module_imports(name: str, path: Path, modules: Iterable[str]) -> set[str]:
    """The modules of the tree ``name`` imports, each import to the module it names:
    ``from pkg import mod`` is an arrow to ``pkg.mod`` and ``from pkg import name`` one to
    ``pkg``. Parent packages a dotted import runs first are left out: every package that
    imports its children would otherwise be a circle, and Python handles that order."""
    known = set(modules)
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            submodules = {f"{module}.{alias.name}" for alias in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(module)
    return (found & known) - {name}


def import_circles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm):
    each is a set of modules every one of which imports, through the others, every other."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: set[frozenset[str]] = set()

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.add(frozenset(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return circles


def circles_of(package: Path) -> set[frozenset[str]]:
    modules = module_names(package)
    return import_circles({n: module_imports(n, p, modules) for n, p in modules.items()})


# --------------------------------------------------------------------------- the probe

# One interpreter forks a child per module; the child imports that one module and answers
# which edge libraries it then holds. A module found clean is then imported by the parent too,
# so later children start with it loaded: each child still starts with no edge library, so
# one that ends up with any loaded it itself, and the whole probe costs about one import of
# the core (a fresh process per module took 30 s on a loaded machine, this takes 3).
PROBE = """
import importlib, json, os, sys
modules, edges = (json.loads(arg) for arg in sys.argv[1:3])
report = {}
for module in modules:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(module)
            loaded = [name for name in edges if name in sys.modules]
        except BaseException as exc:
            loaded = ["import failed: %r" % (exc,)]
        os.write(write, json.dumps(loaded).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        loaded = json.loads(answer.read() or '["no answer"]')
    os.waitpid(pid, 0)
    if loaded:
        report[module] = loaded
    else:
        importlib.import_module(module)
print(json.dumps(report))
"""


def probe(modules: Iterable[str], edges: Iterable[str] = EDGE_LIBRARIES) -> dict[str, list[str]]:
    """Module -> the edge libraries importing it alone loaded (only modules that loaded any)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(modules)), json.dumps(list(edges))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PACKAGE.parent,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


# --------------------------------------------------------------------------- the rules


def test_the_core_is_the_three_packages_and_the_modules_they_import() -> None:
    graph = package_graph()
    units = core_units(graph, packages(module_names()))
    assert set(CORE_PACKAGES) <= units
    assert {"errors", "escaping"} <= units
    assert not units & {
        "config",
        "state",
        "platform",
        "local_platform",
        "outputs",
        "engine",
        "cli",
        "ci",
    }
    assert (
        len(core_modules(graph, packages(module_names()))) >= 15
    )  # every module of the packages, not the packages


def test_every_core_module_alone_loads_no_edge_library() -> None:
    modules = core_modules(package_graph(), packages(module_names()))
    assert probe(modules) == {}


def test_the_probe_detects_an_edge_library() -> None:
    # The probe itself must be able to fail, or the test above proves nothing.
    report = probe(["reconciler.errors", "reconciler.platform.client", "reconciler.model"])
    assert list(report) == ["reconciler.platform.client"]
    assert "httpx" in report["reconciler.platform.client"]


def test_no_layering_violation_but_the_known_ones() -> None:
    violations = set(layering_violations(package_graph(), packages(module_names())))
    assert violations - KNOWN_CLI_IMPORTS == set(), "new imports against the layering"
    assert KNOWN_CLI_IMPORTS - violations == set(), "fixed: remove it from KNOWN_CLI_IMPORTS"


def test_the_layering_check_detects_each_rule(tmp_path: Path) -> None:
    tree = tmp_path / "reconciler"
    files = {
        "__init__.py": "",
        "errors.py": "",
        "model/__init__.py": "from reconciler import errors\n",
        "plan/__init__.py": "from reconciler.model import X\n",
        "plan/cost.py": "def f():\n    from ..state import lockfile\n",  # core -> edge, lazily
        "render/__init__.py": "",
        "state/__init__.py": "",
        "state/lockfile.py": "from reconciler.plan import cost\n",
        "engine/__init__.py": "",
        "engine/session.py": "from reconciler.cli.output import Output\n",  # engine -> cli
        "engine/apply.py": "from reconciler.ci import main\n",  # engine -> the other shell
        "cli/__init__.py": "",
        "cli/output.py": "from reconciler.engine import session\n",
        "ci/__init__.py": "",
        "ci/main.py": "from reconciler.cli.output import Output\n",  # shell -> shell: allowed
    }
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    modules = module_names(tree)
    graph, units = import_graph(modules), packages(modules)
    assert units == {"model", "plan", "render", "state", "engine", "cli", "ci"}
    assert core_units(graph, units) == {
        "model",
        "plan",
        "render",
        "results",
        "errors",
        "reconciler",
    }
    assert layering_violations(graph, units) == [
        ("reconciler.engine.apply", "reconciler.ci"),
        ("reconciler.engine.apply", "reconciler.ci.main"),
        ("reconciler.engine.session", "reconciler.cli.output"),
        ("reconciler.plan.cost", "reconciler.state"),
        ("reconciler.plan.cost", "reconciler.state.lockfile"),
    ]


def test_the_local_platform_keeps_to_its_border() -> None:
    graph = package_graph()
    assert local_platform_violations(graph) == []
    # The rule is about a package that exists and an edge that is there today.
    assert ("reconciler.engine.context", "reconciler.local_platform") in {
        (source, target) for source, targets in graph.items() for target in targets
    }


def test_the_local_platform_check_detects_each_direction(tmp_path: Path) -> None:
    tree = tmp_path / "reconciler"
    files = {
        "__init__.py": "",
        "model/__init__.py": "",
        "platform/__init__.py": "",
        "platform/client.py": "def f():\n    from reconciler.local_platform import app\n",
        "engine/__init__.py": "",
        "engine/context.py": "from reconciler.local_platform import LocalPlatform\n",  # allowed
        "local_platform/__init__.py": "from reconciler.model import X\n",  # allowed
        "local_platform/app.py": "from ..platform import client\n",  # the client it stands in for
    }
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    assert local_platform_violations(import_graph(module_names(tree))) == [
        ("reconciler.local_platform.app", "reconciler.platform"),
        ("reconciler.local_platform.app", "reconciler.platform.client"),
        ("reconciler.platform.client", "reconciler.local_platform"),
        ("reconciler.platform.client", "reconciler.local_platform.app"),
    ]


def test_no_import_circle_but_the_known_ones() -> None:
    circles = circles_of(PACKAGE)
    assert circles - KNOWN_CIRCLES == set(), "new import circles"
    assert KNOWN_CIRCLES - circles == set(), "fixed: remove it from KNOWN_CIRCLES"


def test_the_circle_check_detects_a_circle(tmp_path: Path) -> None:
    tree = tmp_path / "reconciler"
    files = {
        "__init__.py": "",
        "errors.py": "",
        # Two modules, one arrow lazy and one only for the type checker: still a circle.
        "engine/__init__.py": "from reconciler.engine.apply import Applier\n",
        "engine/report.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from .apply_result import Outcome\n"
        ),
        "engine/apply_result.py": "def f():\n    from reconciler.engine.report import RunRef\n",
        # A package that imports its child, and the child a sibling: no circle.
        "engine/apply.py": "from reconciler.engine import report\nfrom reconciler import errors\n",
        # Three modules round a loop, one arrow written as ``from package import module``.
        "cli/__init__.py": "from reconciler.cli.main import main\n",
        "cli/main.py": "import reconciler.cli.logs\n",
        "cli/logs.py": "from reconciler.cli.output import Output\n",
        "cli/output.py": "from reconciler.cli import main\n",
    }
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    assert circles_of(tree) == {
        frozenset({"reconciler.engine.report", "reconciler.engine.apply_result"}),
        frozenset({"reconciler.cli.main", "reconciler.cli.logs", "reconciler.cli.output"}),
    }


def test_the_type_gate_is_strict_for_the_core_and_the_engine() -> None:
    # The strict list in pyproject.toml follows the core as this file computes it: a module
    # that joins the core (a new top-level module the plan imports) joins the strict gate.
    with (PACKAGE.parent / "pyproject.toml").open("rb") as fh:
        overrides = tomllib.load(fh)["tool"]["mypy"]["overrides"]
    strict = [o for o in overrides if o.get("disallow_untyped_defs")]
    assert len(strict) == 1 and strict[0]["disallow_any_generics"]
    patterns = set(strict[0]["module"])
    units = packages(module_names())
    wanted = {
        f"reconciler.{unit}.*" if unit in units else f"reconciler.{unit}"
        for unit in core_units(package_graph(), units) | {"engine"}
        if unit != "reconciler"
    }
    assert wanted <= patterns, wanted - patterns


# --------------------------------------------------------------------------- the house limits

TOP_LEVEL_MODULES = 15
"""At most this many modules directly under ``reconciler/`` (issue 20): the rest live in
packages named for their concerns. The fifteenth is ``exit_codes`` (issue 33): the numbers
every command line uses (``cli``, ``ci``, the local Platform's), so below all of them."""
LONG_FILE = 900
"""A file under ``reconciler/`` longer than this gets a warning (issue 33, was the limit in
issue 20): it may hold more than one job. Cut it along an interface, never to meet a line
count."""
MAX_LINES = 1200
"""No file under ``reconciler/`` longer than this (issue 33)."""


def files_over(package: Path, lines: int) -> dict[str, int]:
    """Path under ``package`` -> its lines, for the files longer than ``lines``."""
    return {
        str(path.relative_to(package)): count
        for path in sorted(package.rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > lines
    }


def check_file_lengths(package: Path) -> None:
    """Warn (``LongFileWarning``) for each file over ``LONG_FILE`` lines; fail over
    ``MAX_LINES``."""
    for name, count in files_over(package, LONG_FILE).items():
        if count <= MAX_LINES:
            warnings.warn(
                f"{name} is {count} lines (over {LONG_FILE}): does it hold more than one job?",
                LongFileWarning,
                stacklevel=2,
            )
    too_long = files_over(package, MAX_LINES)
    assert too_long == {}, f"files over {MAX_LINES} lines: {too_long}"


def test_the_house_limits_hold() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, top
    check_file_lengths(PACKAGE)


def test_a_long_file_warns_and_a_longer_one_fails(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text("x = 1\n" * LONG_FILE)
    (tmp_path / "long.py").write_text("x = 1\n" * (LONG_FILE + 1))
    with pytest.warns(LongFileWarning, match=r"long.py is 901 lines \(over 900\)") as seen:
        check_file_lengths(tmp_path)
    assert len(seen) == 1
    (tmp_path / "longer.py").write_text("x = 1\n" * (MAX_LINES + 1))
    with pytest.warns(LongFileWarning), pytest.raises(AssertionError, match="longer.py"):
        check_file_lengths(tmp_path)
