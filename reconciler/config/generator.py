"""Run generators: a ``*.matrix.toml`` file expands, in one pure pass, into ordinary configs.

``expand_generator(parsed, text, relpath, address)`` takes the parsed generator (and its text,
only to put line numbers on problems) and returns every cell as a plain Osmosis config dict,
with its address built from element keys, plus the generator's ``GeneratorProduct`` and every
problem. It reads no file, no clock and no network: a generator is literal data in the
committed file, so an error can never read as "nothing wanted" (any problem fails the whole
load, before the plan computes a single removal).

Per cell the config is ``[base]`` <- each axis element (in address order) <- each matching
``[[override]]`` (in file order). Tables merge recursively; scalars, arrays and
``agent.model`` (one choice of model) replace whole. Two axes setting the same leaf is an
error (axes have no order); an override may set anything. ``[base.agent]`` is the run's one
agent (``[[agents]]`` with one entry once expanded); a fixed ``[[base.agents]]`` list cannot
be touched by axes or overrides.

See docs/generators.md for the file format and the decisions behind it.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler import toml_locate as locate
from reconciler.config.discover import (  # noqa: F401  (re-exported)
    GENERATOR_SUFFIX,
    is_generator,
    looks_like_generator,
)
from reconciler.errors import closest
from reconciler.escaping import shown_value
from reconciler.model import CellSource, GeneratorMove, GeneratorProduct, GeneratorRemoval

HARD_MAX_RUNS = 256
"""Whatever ``max_runs`` says: one generator never expands past this (GitHub's matrix cap)."""
MAX_PRODUCT = 4 * HARD_MAX_RUNS
"""The most combinations the axes may span before excludes. The results grid draws every
combination (an excluded one as ``excluded``), so a product of 2^36 trimmed to a few cells
by excludes would still ask for 2^36 grid cells; a grid this size is already unreadable."""
ON_REMOVE = ("stop", "forget", "finish")

_TOP_KEYS = ("generate", "base", "axis", "include", "exclude", "override", "moved", "removed")
_GENERATE_KEYS = ("version", "address", "max_runs", "on_remove", "cells")
_FRAGMENT_TABLES = ("experiment", "tasks", "agent", "execution", "env", "secrets", "verifier")
_BASE_TABLES = (*_FRAGMENT_TABLES, "agents", "decide")
"""``decide`` is a base table only: a decision is one per generator, each cell its own."""
_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_SLUG = re.compile(r"[^a-z0-9._-]+")
_PLACEHOLDER = re.compile(r"^\{([^{}]*)\}$")
_REPLACED_WHOLE = (("agent", "model"),)
"""Tables that are one value, not a set of settings: a fragment replaces them whole."""

TomlPath = tuple[str | int, ...]


@dataclass(frozen=True)
class GeneratorProblem:
    """One problem, at a path of the generator file (located to a line by the loader)."""

    path: TomlPath
    message: str
    hint: str | None = None
    anchor: str = "key"


@dataclass(frozen=True)
class Cell:
    """One expanded run: its address, the plain config, where it came from."""

    address: str
    config: dict[str, Any]
    source: CellSource
    origins: dict[TomlPath, tuple[str, TomlPath]]
    """Config leaf path -> (who set it, its path in the generator), for locating problems
    the config validator finds in the expanded config."""
    moved_from: tuple[str, ...] = ()


@dataclass
class Expansion:
    cells: list[Cell] = field(default_factory=list)
    product: GeneratorProduct | None = None
    problems: list[GeneratorProblem] = field(default_factory=list)


Box = tuple[frozenset[int] | None, ...]
"""An ``[[exclude]]`` table: per axis (in address order), the element indices it names, or
None for an axis it does not name (every element)."""

MAX_SIZING_STEPS = 1_000_000
"""Work allowed to count a generator's cells; past it the generator is refused. Counting
is proportional to the distinct ways the excludes overlap, never to the product: real
generators take a few hundred steps."""


class SizingTooComplexError(Exception):
    """Counting the cells would take more than ``MAX_SIZING_STEPS`` steps."""


class CellCount:
    """The cells of a product of axes minus excluded boxes, counted without building it.

    ``sizes`` (elements per axis, in address order) and the exclude boxes are all it
    needs: the product is a multiplication, and the cells an exclude removes are counted
    axis by axis, grouping the elements that the same excludes name (so 36 axes of two
    elements take 36 steps, not 2^36). ``cells()`` lists the kept cells, skipping every
    branch whose count is 0, so its work follows the cells kept, which the caller has
    already compared with ``max_runs``.
    """

    def __init__(self, keys: Mapping[str, Sequence[str]], boxes: Sequence[tuple[int, Box]]):
        self.sizes = [len(k) for k in keys.values()]
        self.boxes = [box for _index, box in boxes]
        self.product = math.prod(self.sizes)
        # The last axis each box names: past it, a box still alive covers everything.
        self._last = [max(i for i, part in enumerate(b) if part is not None) for b in self.boxes]
        self._steps = 0
        self._memo: dict[tuple[Box | None, int, frozenset[int]], int] = {}

    def total(self) -> int:
        """How many cells survive every exclude."""
        return self._count(None, 0, frozenset(range(len(self.boxes))))

    def count_within(self, box: Box, before: int) -> int:
        """How many cells of ``box`` survive the excludes listed before it (0: it matches
        no cell)."""
        return self._count(box, 0, frozenset(range(before)))

    def cells(self) -> Iterator[tuple[int, ...]]:
        """The surviving cells as element indices, in product order."""
        everything = frozenset(range(len(self.boxes)))
        stack: list[tuple[int, frozenset[int], tuple[int, ...]]] = [(0, everything, ())]
        while stack:
            axis, alive, prefix = stack.pop()
            if self._count(None, axis, alive) == 0:
                continue
            if axis == len(self.sizes):
                yield prefix
                continue
            for element in reversed(range(self.sizes[axis])):
                stack.append((axis + 1, self._alive(alive, axis, element), (*prefix, element)))

    def _alive(self, alive: frozenset[int], axis: int, element: int) -> frozenset[int]:
        """The boxes still covering a cell once ``element`` of ``axis`` is chosen."""
        return frozenset(
            b for b in alive if (part := self.boxes[b][axis]) is None or element in part
        )

    def _elements(self, domain: Box | None, axis: int) -> Sequence[int]:
        part = None if domain is None else domain[axis]
        return range(self.sizes[axis]) if part is None else sorted(part)

    def _count(self, domain: Box | None, axis: int, alive: frozenset[int]) -> int:
        """Cells of ``domain`` (None: the whole product) from ``axis`` on, given the
        choices before it, that none of the ``alive`` boxes covers."""
        if any(self._last[b] < axis for b in alive):
            return 0
        if not alive:
            return math.prod(len(self._elements(domain, i)) for i in range(axis, len(self.sizes)))
        key = (domain, axis, alive)
        if key in self._memo:
            return self._memo[key]
        groups: dict[frozenset[int], int] = {}
        for element in self._elements(domain, axis):
            self._steps += 1 + len(alive)
            if self._steps > MAX_SIZING_STEPS:
                raise SizingTooComplexError
            covering = self._alive(alive, axis, element)
            groups[covering] = groups.get(covering, 0) + 1
        total = sum(n * self._count(domain, axis + 1, g) for g, n in groups.items())
        self._memo[key] = total
        return total


def generator_prefix(address: str) -> str:
    """``compare/frontier.matrix`` (the discovered address) -> ``compare/frontier``."""
    suffix = GENERATOR_SUFFIX[: -len(".toml")]
    return address[: -len(suffix)] if address.endswith(suffix) else address


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = closest(word, choices, 0.6)
    return f' (did you mean "{close}"?)' if close else ""


def _suggest_key(element: Mapping[str, Any]) -> str | None:
    """A key for an element without one: the slug of what it sets that names it."""
    for path in (("agent", "model", "model"), ("agent", "model", "lora_model_name")):
        value: Any = element
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, str):
            return _SLUG.sub("-", value.split("/")[-1].lower()).strip("-") or None
    bench = element.get("experiment", {})
    if isinstance(bench, Mapping) and isinstance(bench.get("benchmark"), str):
        return _SLUG.sub("-", bench["benchmark"].lower()).strip("-") or None
    return None


def _leaves(value: Mapping[str, Any], prefix: TomlPath = ()) -> list[tuple[TomlPath, Any]]:
    """Every leaf (and every whole-replaced table) of a fragment, with its path."""
    out: list[tuple[TomlPath, Any]] = []
    for key, item in value.items():
        path = (*prefix, key)
        if isinstance(item, Mapping) and path not in _REPLACED_WHOLE:
            out.extend(_leaves(item, path))
        else:
            out.append((path, item))
    return out


def _set(config: dict[str, Any], path: TomlPath, value: Any) -> None:
    node = config
    for part in path[:-1]:
        child = node.get(str(part))
        if not isinstance(child, dict):
            child = {}
            node[str(part)] = child
        node = child
    node[str(path[-1])] = copy.deepcopy(value)


class _Expander:
    def __init__(self, parsed: Mapping[str, Any], relpath: str, address: str, text: str) -> None:
        self.axis_names: list[str] = []
        self.doc = parsed
        self.relpath = relpath
        self.prefix = generator_prefix(address)
        self.positions = locate.scan(text)
        self.problems: list[GeneratorProblem] = []

    def line(self, path: TomlPath) -> int:
        return self.positions.find(path, "table")[0]

    def problem(
        self, path: TomlPath, message: str, hint: str | None = None, anchor: str = "key"
    ) -> None:
        self.problems.append(GeneratorProblem(path, message, hint, anchor))

    # -- structure -------------------------------------------------------------------

    def check_keys(self, table: Mapping[str, Any], allowed: Sequence[str], at: TomlPath) -> None:
        for key in table:
            if key not in allowed:
                shown = ".".join(str(p) for p in (*at, key))
                self.problem(
                    (*at, key),
                    f"{shown}: unknown key{_did_you_mean(key, allowed)}",
                    "allowed here: " + ", ".join(allowed),
                )

    def table(self, key: str) -> dict[str, Any]:
        value = self.doc.get(key, {})
        if not isinstance(value, dict):
            self.problem((key,), f"{key} must be a table ([{key}])")
            return {}
        return value

    def tables(self, key: str) -> list[dict[str, Any]]:
        value = self.doc.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.problem((key,), f"{key} must be an array of tables ([[{key}]])")
            return []
        return value

    def run(self) -> Expansion:
        self.check_keys(self.doc, _TOP_KEYS, ())
        generate = self.table("generate")
        self.check_keys(generate, _GENERATE_KEYS, ("generate",))
        if "generate" not in self.doc:
            self.problem(
                (),
                "a generator needs a [generate] table",
                'add [generate] with version = 1 and address = "{axis}/{axis}"',
                "file",
            )
        version = generate.get("version", 1)
        if type(version) is not int or version != 1:  # 1.0 and true equal 1 in Python
            self.problem(
                ("generate", "version"),
                f"generate.version = {shown_value(version)}: only 1 is known",
            )
        on_remove = generate.get("on_remove", "stop")
        if on_remove not in ON_REMOVE:
            self.problem(
                ("generate", "on_remove"),
                f"generate.on_remove = {shown_value(on_remove)}: use one of "
                + ", ".join(ON_REMOVE),
            )
        max_runs = generate.get("max_runs", HARD_MAX_RUNS)
        if type(max_runs) is not int or not 1 <= max_runs <= HARD_MAX_RUNS:
            self.problem(
                ("generate", "max_runs"),
                f"generate.max_runs = {shown_value(max_runs)}: use a whole number from 1 to {HARD_MAX_RUNS}",
            )
            max_runs = HARD_MAX_RUNS
        base = self.table("base")
        self.check_keys(base, _BASE_TABLES, ("base",))
        if "agent" in base and "agents" in base:
            self.problem(
                ("base", "agents"),
                "base has both [base.agent] and [[base.agents]]",
                "keep one: [base.agent] (one agent per run, set by axes) or a fixed [[base.agents]] list",
            )
        axes = self.axes()
        order = self.address_order(generate, axes)
        if self.problems or not order:
            return Expansion(problems=self.problems)
        axes = {name: axes[name] for name in order}
        keys = {name: [e["key"] for e in elements] for name, elements in axes.items()}

        sized = self.sized_cells(generate, keys, max_runs)
        if sized is None or self.problems:
            return Expansion(problems=self.problems)
        cells, combinations = sized

        overrides = self.overrides(keys)
        built = [self.build(cell, base, axes, overrides) for cell in cells]
        for index, used in enumerate(overrides.used):
            if not used:
                self.problem(("override", index), f"override[{index}] matches no cell")
        removals = self.removals(keys)
        moves = self.moves(keys, order, cells)
        if self.problems:
            return Expansion(problems=self.problems)
        pairs_by_new: dict[str, list[str]] = {}
        for move in moves:
            for old, new in move.pairs:
                pairs_by_new.setdefault(new, []).append(old)
        built = [
            Cell(c.address, c.config, c.source, c.origins, tuple(pairs_by_new.get(c.address, ())))
            for c in built
        ]
        excluded = combinations - (len(cells) - self.included)
        element_lines = {
            f"{name}/{e['key']}": self.line(("axis", name, i))
            for name, elements in axes.items()
            for i, e in enumerate(elements)
        }
        product_value = GeneratorProduct(
            file=self.relpath,
            prefix=self.prefix,
            axes={name: tuple(k) for name, k in keys.items()},
            element_lines=element_lines,
            cells=tuple(sorted(c.address for c in built)),
            excluded=excluded,
            included=self.included,
            on_remove=on_remove if on_remove in ON_REMOVE else "stop",
            removed=tuple(removals),
            moves=tuple(moves),
        )
        return Expansion(sorted(built, key=lambda c: c.address), product_value, self.problems)

    def axes(self) -> dict[str, list[dict[str, Any]]]:
        raw = self.table("axis")
        if not raw and "axis" not in self.doc:
            self.problem(
                (),
                "a generator needs at least one axis",
                'add [[axis.NAME]] elements, each with key = "..."',
                "file",
            )
        axes: dict[str, list[dict[str, Any]]] = {}
        self.axis_names = list(raw)
        for name, elements in raw.items():
            if not isinstance(elements, list) or not all(isinstance(e, dict) for e in elements):
                self.problem(
                    ("axis", name), f"axis.{name} must be an array of tables ([[axis.{name}]])"
                )
                continue
            if not _KEY.match(name):
                self.problem(
                    ("axis", name),
                    f'axis name "{name}": use lowercase letters, digits, ".", "_", "-"',
                )
            if not elements:
                self.problem(
                    ("axis", name),
                    f"axis.{name} has no elements; a generator cannot expand to zero runs",
                    "to retire runs, delete the file (guarded) or add [[removed]] entries",
                )
                continue
            seen: dict[str, int] = {}
            for index, element in enumerate(elements):
                at: TomlPath = ("axis", name, index)
                self.check_keys(element, ("key", *_FRAGMENT_TABLES), at)
                for table in _FRAGMENT_TABLES:
                    if table in element and not isinstance(element[table], dict):
                        self.problem((*at, table), f"axis.{name}[{index}].{table} must be a table")
                key = element.get("key")
                if key is None:
                    suggestion = _suggest_key(element)
                    self.problem(
                        at,
                        f"axis.{name}[{index}]: missing key. Every element needs a key; it "
                        "becomes part of the address.",
                        f'Suggested: key = "{suggestion}"' if suggestion else 'add key = "..."',
                        "table",
                    )
                    continue
                if not isinstance(key, str) or not _KEY.match(key):
                    fixed = _SLUG.sub("-", str(key).lower()).strip("-")
                    self.problem(
                        (*at, "key"),
                        f"axis.{name}[{index}].key {shown_value(key)}: use lowercase letters, digits, "
                        '".", "_", "-"',
                        f'e.g. key = "{fixed}"' if fixed else None,
                        "value",
                    )
                    continue
                if key in seen:
                    self.problem(
                        (*at, "key"),
                        f'axis.{name}[{index}]: key "{key}" already used at line '
                        f"{self.line(('axis', name, seen[key]))}",
                        "keys must be unique within an axis",
                        "value",
                    )
                    continue
                seen[key] = index
            axes[name] = elements
        return axes

    def address_order(
        self, generate: Mapping[str, Any], axes: Mapping[str, list[dict[str, Any]]]
    ) -> list[str]:
        pattern = generate.get("address")
        at: TomlPath = ("generate", "address")
        if pattern is None:
            if "generate" in self.doc:
                example = "/".join("{" + name + "}" for name in axes) or "{axis}"
                self.problem(
                    ("generate",),
                    "generate.address is missing: it says which axes make the address, in "
                    "which order",
                    f'add address = "{example}"',
                    "table",
                )
            return []
        if not isinstance(pattern, str):
            self.problem(at, "generate.address must be a string", anchor="value")
            return []
        order: list[str] = []
        for segment in pattern.split("/"):
            match = _PLACEHOLDER.match(segment)
            if match is None:
                self.problem(
                    at,
                    f'generate.address "{pattern}": each segment must be one axis in '
                    f'braces ("{{model}}"), not "{segment}"',
                    anchor="value",
                )
                return []
            name = match.group(1)
            if name not in axes and name in self.axis_names:
                return []  # the axis itself is broken, and said so
            if name not in axes:
                self.problem(
                    at,
                    f'generate.address "{pattern}": unknown axis "{name}"'
                    f"{_did_you_mean(name, list(axes))}",
                    anchor="value",
                )
                return []
            if name in order:
                self.problem(
                    at, f'generate.address "{pattern}" uses axis "{name}" twice', anchor="value"
                )
                return []
            order.append(name)
        for name in axes:
            if name not in order:
                self.problem(
                    at,
                    f'generate.address "{pattern}" does not use axis "{name}"; two cells '
                    "would share an address",
                    anchor="value",
                )
        return order if len(order) == len(axes) else []

    # -- cells -----------------------------------------------------------------------

    included = 0

    def selector(
        self, table: Mapping[str, Any], keys: Mapping[str, list[str]], at: TomlPath, what: str
    ) -> dict[str, set[str]] | None:
        """``{axis: key | [keys]}`` -> axis -> allowed keys; None after a problem."""
        out: dict[str, set[str]] = {}
        for axis, value in table.items():
            if axis not in keys:
                self.problem(
                    (*at, axis),
                    f'{what}: unknown axis "{axis}"{_did_you_mean(axis, list(keys))}',
                )
                return None
            values = value if isinstance(value, list) else [value]
            for item in values:
                if item not in keys[axis]:
                    self.problem(
                        (*at, axis),
                        f'{what}.{axis} "{item}" matches no element'
                        f"{_did_you_mean(str(item), keys[axis])}",
                        anchor="value",
                    )
                    return None
            out[axis] = set(values)
        return out

    def sized_cells(
        self, generate: Mapping[str, Any], keys: Mapping[str, list[str]], max_runs: int
    ) -> tuple[list[dict[str, str]], int] | None:
        """The cells and the number of combinations of the axes, counted before any cell
        is built and compared with ``max_runs`` and ``MAX_PRODUCT`` (None after a problem).

        Sized first: 36 axes of 2 elements once made 2^36 cell dicts (MemoryError) before
        their count was compared with ``max_runs``."""
        excludes, includes = self.selections(keys)
        if self.problems:
            return None
        sizing = CellCount(keys, excludes)
        sizes = " × ".join(f"{name} {len(k)}" for name, k in keys.items())
        try:
            total = sizing.total() + len(includes)
            if total > max_runs:
                self.problem(
                    ("generate", "max_runs") if "max_runs" in generate else ("generate",),
                    f"expands to {total:,} runs ({sizes}); max_runs = {max_runs}",
                    "exclude cells, split the generator, or raise max_runs "
                    f"(at most {HARD_MAX_RUNS})",
                )
                return None
            if sizing.product > MAX_PRODUCT:
                self.problem(
                    ("generate",),
                    f"the axes span {sizing.product:,} combinations ({sizes}), more than the "
                    f"{MAX_PRODUCT:,} a generator may span before excludes",
                    "split the generator into several files, each with fewer axes or elements",
                )
                return None
            return self.shape(keys, sizing, excludes, includes), sizing.product
        except SizingTooComplexError:
            self.problem(
                ("exclude",),
                "the [[exclude]] tables are too intricate to count the cells (more than "
                f"{MAX_SIZING_STEPS:,} steps)",
                "use fewer, broader excludes, or split the generator",
                "table",
            )
            return None

    def selections(
        self, keys: Mapping[str, list[str]]
    ) -> tuple[list[tuple[int, Box]], list[tuple[int, tuple[int, ...]]]]:
        """The ``[[exclude]]`` boxes and ``[[include]]`` cells, as element indices in
        address order (each with its table's index); problems recorded, nothing built."""
        axes = list(keys)
        excludes: list[tuple[int, Box]] = []
        for index, table in enumerate(self.tables("exclude")):
            at: TomlPath = ("exclude", index)
            chosen = self.selector(table, keys, at, "exclude")
            if chosen is None:
                continue
            if not chosen:
                self.problem(at, f"exclude[{index}] names no axis", anchor="table")
                continue
            excludes.append(
                (
                    index,
                    tuple(
                        frozenset(keys[a].index(k) for k in chosen[a]) if a in chosen else None
                        for a in axes
                    ),
                )
            )
        includes: list[tuple[int, tuple[int, ...]]] = []
        for index, table in enumerate(self.tables("include")):
            at = ("include", index)
            chosen = self.selector(table, keys, at, "include")
            if chosen is None:
                continue
            if set(chosen) != set(keys) or any(len(v) != 1 for v in chosen.values()):
                self.problem(
                    at,
                    f"include[{index}] must name one key of every axis (" + ", ".join(keys) + ")",
                    anchor="table",
                )
                continue
            includes.append((index, tuple(keys[a].index(next(iter(chosen[a]))) for a in axes)))
        return excludes, includes

    def shape(
        self,
        keys: Mapping[str, list[str]],
        sizing: CellCount,
        excludes: Sequence[tuple[int, Box]],
        includes: Sequence[tuple[int, tuple[int, ...]]],
    ) -> list[dict[str, str]]:
        """The cells (product minus excludes, plus includes), listed once ``sizing`` said
        how many there are: the work is proportional to the cells kept."""
        axes = list(keys)
        for position, (index, box) in enumerate(excludes):
            if sizing.count_within(box, position) == 0:
                self.problem(
                    ("exclude", index), f"exclude[{index}] matches no cell", anchor="table"
                )
        cells = [dict(zip(axes, (keys[a][i] for a, i in zip(axes, found, strict=True)), strict=True))
                 for found in sizing.cells()]  # fmt: skip
        kept = {tuple(c.values()) for c in cells}
        for index, found in includes:
            cell = {a: keys[a][i] for a, i in zip(axes, found, strict=True)}
            if tuple(cell.values()) in kept:
                shown = ", ".join(f'{a}="{k}"' for a, k in cell.items())
                self.problem(
                    ("include", index),
                    f"include {{{shown}}} is already in the product",
                    anchor="table",
                )
                continue
            kept.add(tuple(cell.values()))
            cells.append(cell)
            self.included += 1
        return cells

    @dataclass
    class _Overrides:
        tables: list[tuple[int, dict[str, set[str]], dict[str, Any]]]
        used: list[bool]

    def overrides(self, keys: Mapping[str, list[str]]) -> _Expander._Overrides:
        found: list[tuple[int, dict[str, set[str]], dict[str, Any]]] = []
        raw = self.tables("override")
        for index, table in enumerate(raw):
            at: TomlPath = ("override", index)
            self.check_keys(table, ("match", *_FRAGMENT_TABLES), at)
            match = table.get("match")
            if not isinstance(match, dict) or not match:
                self.problem(
                    at,
                    f'override[{index}] needs match = {{ axis = "key" }}',
                    anchor="table",
                )
                continue
            chosen = self.selector(match, keys, (*at, "match"), "override.match")
            if chosen is None:
                continue
            fragment = {k: v for k, v in table.items() if k != "match"}
            found.append((index, chosen, fragment))
        return _Expander._Overrides(found, [False] * len(raw))

    def build(
        self,
        cell: Mapping[str, str],
        base: Mapping[str, Any],
        axes: Mapping[str, list[dict[str, Any]]],
        overrides: _Expander._Overrides,
    ) -> Cell:
        config: dict[str, Any] = {}
        origins: dict[TomlPath, tuple[str, TomlPath]] = {}
        for path, value in _leaves(base):
            _set(config, path, value)
            origins[path] = ("base", ("base", *path))
        by_axis: dict[TomlPath, tuple[str, str, int]] = {}
        fixed_agents = "agents" in base
        address = self.prefix + "/" + "/".join(cell[a] for a in axes)
        for axis, elements in axes.items():
            index = next(i for i, e in enumerate(elements) if e["key"] == cell[axis])
            fragment = {k: v for k, v in elements[index].items() if k != "key"}
            if fixed_agents and "agent" in fragment:
                self.problem(
                    ("axis", axis, index, "agent"),
                    f"axis.{axis} sets agent, but base has a fixed [[base.agents]] list",
                    "use [base.agent] (one agent per run)",
                )
            for path, value in _leaves(fragment):
                clash = next(
                    (p for p in by_axis if p[: len(path)] == path or path[: len(p)] == p), None
                )
                if clash is not None:
                    other_axis, other_key, other_line = by_axis[clash]
                    self.problem(
                        ("axis", axis, index, *path),
                        f"cell {' × '.join(cell.values())}: {'.'.join(map(str, path))} is set "
                        f'by axis.{other_axis} "{other_key}" (line {other_line}) and axis.{axis} '
                        f'"{cell[axis]}" (line {self.line(("axis", axis, index))})',
                        "move it to an [[override]]",
                    )
                    continue
                by_axis[path] = (axis, cell[axis], self.line(("axis", axis, index)))
                _set(config, path, value)
                origins[path] = (f'axis.{axis} "{cell[axis]}"', ("axis", axis, index, *path))
        for index, chosen, fragment in overrides.tables:
            if not all(cell[a] in ks for a, ks in chosen.items()):
                continue
            overrides.used[index] = True
            if fixed_agents and "agent" in fragment:
                self.problem(
                    ("override", index, "agent"),
                    "override sets agent, but base has a fixed [[base.agents]] list",
                    "use [base.agent] (one agent per run)",
                )
            for path, value in _leaves(fragment):
                _set(config, path, value)
                origins[path] = (f"override[{index}]", ("override", index, *path))
        if "agent" in config:
            agent = config.pop("agent")
            config["agents"] = [agent]
            origins = {
                (("agents", 0, *p[1:]) if p and p[0] == "agent" else p): o
                for p, o in origins.items()
            }
        first_axis = next(iter(axes))
        first = next(i for i, e in enumerate(axes[first_axis]) if e["key"] == cell[first_axis])
        source = CellSource(
            file=self.relpath, cell=dict(cell), line=self.line(("axis", first_axis, first))
        )
        return Cell(address, config, source, origins)

    # -- retirement and renames --------------------------------------------------------

    def removals(self, keys: Mapping[str, list[str]]) -> list[GeneratorRemoval]:
        out: list[GeneratorRemoval] = []
        for index, table in enumerate(self.tables("removed")):
            at: TomlPath = ("removed", index)
            self.check_keys(table, ("axis", "key", "on_remove"), at)
            axis, key = table.get("axis"), table.get("key")
            on_remove = table.get("on_remove", "stop")
            if not isinstance(axis, str) or axis not in keys:
                self.problem(
                    (*at, "axis"),
                    f'removed.axis "{axis}": unknown axis{_did_you_mean(str(axis), list(keys))}',
                    anchor="value",
                )
                continue
            if not isinstance(key, str):
                self.problem(at, 'removed needs key = "..." (the retired element)', anchor="table")
                continue
            if key in keys[axis]:
                self.problem(
                    (*at, "key"),
                    f'removed key "{key}" is still an element of axis.{axis}',
                    "delete the element, or this [[removed]] entry",
                    "value",
                )
                continue
            if on_remove not in ON_REMOVE:
                self.problem(
                    (*at, "on_remove"),
                    f"removed.on_remove = {shown_value(on_remove)}: use one of "
                    + ", ".join(ON_REMOVE),
                    anchor="value",
                )
                continue
            out.append(
                GeneratorRemoval(axis=axis, key=key, line=self.line(at), on_remove=on_remove)
            )
        return out

    def moves(
        self, keys: Mapping[str, list[str]], order: list[str], cells: list[dict[str, str]]
    ) -> list[GeneratorMove]:
        out: list[GeneratorMove] = []
        addresses = {self.prefix + "/" + "/".join(c[a] for a in order): c for c in cells}
        for index, table in enumerate(self.tables("moved")):
            at: TomlPath = ("moved", index)
            self.check_keys(table, ("axis", "from", "to", "from_prefix"), at)
            if "from_prefix" in table:
                move = self.moved_prefix(table, at, addresses)
            elif "axis" in table:
                move = self.moved_key(table, at, keys, order, addresses)
            else:
                move = self.moved_file(table, at, keys, order, addresses)
            if move is not None:
                out.append(move)
        self.check_moves(out, addresses)
        return out

    def moved_prefix(
        self, table: Mapping[str, Any], at: TomlPath, addresses: Mapping[str, dict[str, str]]
    ) -> GeneratorMove | None:
        """``from_prefix``: every cell was under another prefix."""
        old_prefix = table["from_prefix"]
        if not isinstance(old_prefix, str) or old_prefix.strip("/") == self.prefix:
            self.problem(
                (*at, "from_prefix"),
                "moved.from_prefix must be the generator's old address prefix "
                f"(not {self.prefix!r})",
                anchor="value",
            )
            return None
        old_prefix = old_prefix.strip("/")
        pairs = tuple(
            (old_prefix + address[len(self.prefix) :], address) for address in sorted(addresses)
        )
        return GeneratorMove(line=self.line(at), pairs=pairs, label=f"from {old_prefix}")

    def moved_key(
        self,
        table: Mapping[str, Any],
        at: TomlPath,
        keys: Mapping[str, list[str]],
        order: list[str],
        addresses: Mapping[str, dict[str, str]],
    ) -> GeneratorMove | None:
        """``axis``/``from``/``to``: an element's key was renamed."""
        axis, old, new = table.get("axis"), table.get("from"), table.get("to")
        if not isinstance(axis, str) or axis not in keys:
            self.problem(
                (*at, "axis"),
                f'moved.axis "{axis}": unknown axis{_did_you_mean(str(axis), list(keys))}',
                anchor="value",
            )
            return None
        if not isinstance(old, str) or not isinstance(new, str):
            self.problem(at, 'moved needs from = "old-key" and to = "new-key"', anchor="table")
            return None
        if old in keys[axis]:
            index_of = keys[axis].index(old)
            self.problem(
                (*at, "from"),
                f'moved from "{old}", but "{old}" is still an element (line '
                f"{self.line(('axis', axis, index_of))})",
                "rename the element's key to the new one, or delete this [[moved]] block",
                "value",
            )
            return None
        if new not in keys[axis]:
            self.problem(
                (*at, "to"),
                f'moved to "{new}" matches no element of axis.{axis}'
                f"{_did_you_mean(new, keys[axis])}",
                anchor="value",
            )
            return None
        position = order.index(axis)
        pairs_list = []
        for address, cell in sorted(addresses.items()):
            if cell[axis] != new:
                continue
            parts = [cell[a] for a in order]
            parts[position] = old
            pairs_list.append((self.prefix + "/" + "/".join(parts), address))
        return GeneratorMove(
            line=self.line(at), pairs=tuple(pairs_list), label=f'{axis} "{old}" -> "{new}"'
        )

    def moved_file(
        self,
        table: Mapping[str, Any],
        at: TomlPath,
        keys: Mapping[str, list[str]],
        order: list[str],
        addresses: Mapping[str, dict[str, str]],
    ) -> GeneratorMove | None:
        """``from = "old/address"`` with ``to = { axis = "key", ... }``: a file adopted."""
        old_address, target = table.get("from"), table.get("to")
        if not isinstance(old_address, str) or not isinstance(target, dict):
            self.problem(
                at,
                'moved needs axis/from/to (rename a key), from = "old/address" with '
                'to = { axis = "key", ... } (adopt a file), or from_prefix',
                anchor="table",
            )
            return None
        chosen = self.selector(target, keys, (*at, "to"), "moved.to")
        if chosen is None:
            return None
        cell = {a: next(iter(v)) for a, v in chosen.items() if len(v) == 1}
        new_address = self.prefix + "/" + "/".join(cell.get(a, "?") for a in order)
        if new_address not in addresses:
            self.problem(
                (*at, "to"),
                "moved.to must name one existing cell (one key of every axis: "
                + ", ".join(order)
                + ")",
                anchor="value",
            )
            return None
        return GeneratorMove(
            line=self.line(at),
            pairs=((old_address.strip("/"), new_address),),
            label=f"{old_address} -> {new_address}",
        )

    def check_moves(
        self, moves: list[GeneratorMove], addresses: Mapping[str, dict[str, str]]
    ) -> None:
        """No move from a cell that still exists, and none of one address to two."""
        seen: dict[str, str] = {}
        for move in moves:
            for old, new in move.pairs:
                if old in addresses:
                    self.problem(
                        ("moved",),
                        f"moved from {old}, but {old} is still a cell of this generator",
                        anchor="table",
                    )
                if old in seen and seen[old] != new:
                    self.problem(
                        ("moved",),
                        f"moved: {old} is moved twice ({seen[old]} and {new})",
                        anchor="table",
                    )
                seen[old] = new


def expand_generator(parsed: Mapping[str, Any], text: str, relpath: str, address: str) -> Expansion:
    """Every cell of one generator, its product, and every problem (see the module doc)."""
    return _Expander(parsed, relpath, address, text).run()
