"""The house measures of ``reconciler/`` (issue 33), read from the source tree with ``ast``:
nothing is imported, so a broken module is still measured.

``scripts/house_measures.py`` prints them; ``tests/unit/test_house_rules.py`` holds the
rules built on them (a function-length limit, no private name imported from another
module). How each one counts:

* **Lockfile writers outside state/**: modules outside ``reconciler/state/`` with a call to
  one of ``LOCKFILE_WRITERS`` (by name or as an attribute, ``lockfile.write_lockfile(...)``).
  Constructing a ``StateStore`` counts: it writes on every update. Holding one passed in does
  not.
* **Exit-code choices**: a non-zero exit code (``EXIT_CODE_NUMBERS``) written as a number in
  a place that decides what a command exits with: ``sys.exit``/``SystemExit``/``os._exit``;
  assigned to ``exit_code``, ``EXIT_*``, ``.exit_code`` or (in a function annotated
  ``-> int``) ``code``; an ``exit_code=``
  keyword or a ``CommandResult``'s first argument; returned from a function annotated
  ``-> int`` that is named ``main``/``*_main``/``*exit_code``, or that lives in a module
  that is a console script of ``pyproject.toml``. A number inside a conditional counts
  (``3 if partial else 1``). Named constants (``return EXIT_BLOCKED``) do not: the goal is
  one module that holds the numbers. Counted per module and per function.
* **Import circles**: strongly connected components (two or more modules) of the import
  graph of ``reconciler/``: every ``import``/``from ... import`` in a file, the ones inside
  functions and ``if TYPE_CHECKING:`` too. ``from pkg import name`` is an edge to
  ``pkg.name`` when that is a module, else to ``pkg`` (its ``__init__``).
* **Long functions**: every ``def`` (methods and nested functions too, each on its own),
  ``end_lineno - lineno + 1`` from the ``def`` line (decorators not counted, docstring and
  comments counted).
* **Private names imported across modules**: distinct (importer, source module, name)
  triples where ``name`` starts with one underscore (``_x``, not ``__x__`` or ``_``) and is
  taken from another module of ``reconciler/``: ``from a import _x`` (relative imports
  resolved), or ``a._x`` where ``a`` was bound by importing the module ``a``. Inside the
  tree only: tests importing private names are not counted.
"""

from __future__ import annotations

import ast
import functools
import io
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reconciler"

LOCKFILE_WRITERS = frozenset({"write_lockfile", "StateStore", "_atomic_write"})
"""What writes the lockfile, all defined in ``reconciler/state/``."""
EXIT_CODE_NUMBERS = frozenset({1, 2, 3, 4, 130})
"""The non-zero exit codes our commands use (design.md §4; 2 is also the emulator's usage
error, 130 an interrupt)."""
FUNCTION_LIMIT = 100
FUNCTION_CAP = 150


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


@functools.cache
def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imported_module(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` in module ``name`` (file ``path``) reads from."""
    if not node.level:
        return node.module or ""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = here[: len(here) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


# --------------------------------------------------------------------------- the measures


def lockfile_writers(package: Path = PACKAGE) -> dict[str, list[str]]:
    """Module outside ``state`` -> the writer calls in it (``name:line``)."""
    state = f"{package.name}.state"
    found: dict[str, list[str]] = {}
    for name, path in module_names(package).items():
        if name == state or name.startswith(state + "."):
            continue
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Call):
                func = node.func
                called = (
                    func.id
                    if isinstance(func, ast.Name)
                    else func.attr
                    if isinstance(func, ast.Attribute)
                    else ""
                )
                if called in LOCKFILE_WRITERS:
                    found.setdefault(name, []).append(f"{called}:{node.lineno}")
    return found


def _has_exit_number(node: ast.expr | None) -> bool:
    """An exit-code number in an expression, conditionals and ``or``/``and`` included (not
    inside calls, comparisons or subscripts: ``max(1, n)`` chooses no exit code)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int and node.value in EXIT_CODE_NUMBERS
    if isinstance(node, ast.IfExp):
        return _has_exit_number(node.body) or _has_exit_number(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_has_exit_number(value) for value in node.values)
    return False


def console_script_modules(root: Path = ROOT) -> set[str]:
    """The modules ``pyproject.toml``'s console scripts live in."""
    with (root / "pyproject.toml").open("rb") as fh:
        scripts = tomllib.load(fh)["project"].get("scripts", {})
    return {target.split(":")[0] for target in scripts.values()}


def _returns_exit_codes(function: str, in_script: bool) -> bool:
    """Whether an ``-> int`` function's return value is an exit code."""
    return in_script or function == "main" or function.endswith(("_main", "exit_code"))


def _own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or classes defined in it."""
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _exit_choice(node: ast.AST, returns_codes: bool, returns_int: bool) -> bool:
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        if func in ("sys.exit", "SystemExit", "os._exit", "exit") and node.args:
            return _has_exit_number(node.args[0])
        if func.endswith("CommandResult") and node.args and _has_exit_number(node.args[0]):
            return True
        return any(kw.arg == "exit_code" and _has_exit_number(kw.value) for kw in node.keywords)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            named = (
                target.id
                if isinstance(target, ast.Name)
                else target.attr
                if isinstance(target, ast.Attribute)
                else ""
            )
            # ``code`` only where the function returns an int: elsewhere it is another code
            # (the local Platform's simulated outcome codes).
            if (
                named == "exit_code"
                or named.startswith("EXIT_")
                or (named == "code" and returns_int)
            ):
                return _has_exit_number(node.value)
        return False
    if isinstance(node, ast.Return) and returns_codes:
        return _has_exit_number(node.value)
    return False


def exit_code_choices(package: Path = PACKAGE, root: Path = ROOT) -> dict[str, list[str]]:
    """Module -> the places in it that write an exit code as a number (``function:line``;
    ``<module>`` for module level)."""
    scripts = console_script_modules(root)
    found: dict[str, list[str]] = {}
    for name, path in module_names(package).items():
        tree = parse(path)
        scopes: list[tuple[str, ast.AST, bool, bool]] = [("<module>", tree, False, False)]
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                returns_int = node.returns is not None and ast.unparse(node.returns) == "int"
                codes = returns_int and _returns_exit_codes(node.name, name in scripts)
                scopes.append((node.name, node, codes, returns_int))
        for scope, owner, returns_codes, returns_int in scopes:
            for node in _own_nodes(owner):
                if _exit_choice(node, returns_codes, returns_int):
                    found.setdefault(name, []).append(f"{scope}:{getattr(node, 'lineno', 0)}")
    return {name: sorted(set(places)) for name, places in found.items()}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (anywhere in the file)."""
    modules = module_names(package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = imported_module(name, path, node)
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    found.add(sub if sub in modules else source)
        graph[name] = (found & modules.keys()) - {name}
    return graph


def import_circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return sorted(circles)


def function_lengths(package: Path = PACKAGE) -> dict[str, int]:
    """``module:Qual.name`` -> lines, for every function of the tree (a name defined twice
    in one scope keeps its longest)."""
    lengths: dict[str, int] = {}
    for name, path in module_names(package).items():
        todo: list[tuple[str, ast.AST]] = [("", parse(path))]
        while todo:
            prefix, owner = todo.pop()
            for node in ast.iter_child_nodes(owner):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    qual = f"{prefix}{node.name}"
                    if not isinstance(node, ast.ClassDef):
                        key = f"{name}:{qual}"
                        size = (node.end_lineno or node.lineno) - node.lineno + 1
                        lengths[key] = max(size, lengths.get(key, 0))
                    todo.append((qual + ".", node))
                else:
                    todo.append((prefix, node))
    return lengths


def private_imports(package: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """(importer, source module, ``_name``) for every private name taken from another module
    of the tree."""
    modules = module_names(package)
    top = package.name
    found: set[tuple[str, str, str]] = set()
    for name, path in modules.items():
        tree = parse(path)
        bound: dict[str, str] = {}  # local name -> the module it is
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = imported_module(name, path, node)
                if not (source == top or source.startswith(top + ".")):
                    continue
                for alias in node.names:
                    if _private(alias.name) and source != name:
                        found.add((name, source, alias.name))
                    elif f"{source}.{alias.name}" in modules:
                        bound[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        if alias.asname:
                            bound[alias.asname] = alias.name
                        else:
                            bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                source = _dotted(node.value)
                head = source.split(".")[0] if source else ""
                if head in bound:
                    module = bound[head] + source[len(head) :]
                    if module in modules and module != name:
                        found.add((name, module, node.attr))
    return found


def private_import_lines(package: Path = PACKAGE) -> set[str]:
    """``private_imports`` as ``"importer <- module._name"`` lines (the allowlist's form)."""
    return {f"{importer} <- {module}.{name}" for importer, module, name in private_imports(package)}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for a chain of names and attributes, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def test_imports(root: Path = ROOT) -> list[tuple[str, str]]:
    """(importer, imported) for every import of a ``tests`` module by a module of
    ``tests/`` or ``scripts/`` that crosses suites: a suite (``tests/unit``,
    ``tests/integration``, ...) imports its own modules and ``tests.support`` only;
    ``tests.support`` and the rest (``tests/conftest.py``, ``scripts/``) import
    ``tests.support`` only. Relative imports are resolved; module-level and lazy ones count."""
    crossing: list[tuple[str, str]] = []
    for path in sorted([*(root / "tests").rglob("*.py"), *(root / "scripts").rglob("*.py")]):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        home = _suite(name)
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = imported_module(name, path, node)
                targets = [
                    f"{source}.{alias.name}"
                    if _is_module(root, f"{source}.{alias.name}")
                    else source
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                suite = _suite(target)
                if suite is not None and suite not in ("support", home):
                    crossing.append((name, target))
    return sorted(set(crossing))


def _is_module(root: Path, dotted: str) -> bool:
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _suite(module: str) -> str | None:
    """The suite a ``tests`` module belongs to (``tests.unit.test_plan`` -> ``unit``);
    ``""`` for the modules directly in ``tests/``, None outside ``tests``."""
    parts = module.split(".")
    if parts[0] != "tests":
        return None
    return parts[1] if len(parts) > 2 else ""


class LongFileWarning(UserWarning):
    """A module over 900 lines (tests/unit/test_import_direction.py): a hint to look for the
    interface to cut it along, never a reason to cut it at a line count. pyproject's
    filterwarnings shows it instead of failing the run."""


def file_lengths(package: Path = PACKAGE) -> dict[str, int]:
    """Path under the package's parent -> lines."""
    return {
        str(path.relative_to(package.parent)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(package.rglob("*.py"))
    }


def session_exists(package: Path = PACKAGE) -> list[str]:
    """Where a class named ``Session`` is defined (``module:line``)."""
    return [
        f"{name}:{node.lineno}"
        for name, path in module_names(package).items()
        for node in ast.walk(parse(path))
        if isinstance(node, ast.ClassDef) and node.name == "Session"
    ]


@dataclass(frozen=True)
class Coverage:
    percent: float
    data_file: Path


def coverage_percent(data_file: Path = ROOT / ".coverage") -> Coverage | None:
    """The total of a combined coverage data file (``make coverage`` writes one), or None
    when there is none or coverage is not installed."""
    if not data_file.is_file():
        return None
    try:
        import coverage
    except ImportError:
        return None
    cov = coverage.Coverage(data_file=str(data_file), config_file=str(ROOT / "pyproject.toml"))
    cov.load()
    try:
        percent = cov.report(file=io.StringIO())
    except coverage.exceptions.NoDataError:
        return None
    return Coverage(percent, data_file)
