"""Value types of run generators (``*.matrix.toml``): where an expanded run came from, and
what each generator produced. Pure data; ``reconciler.config.generator`` builds them, the
plan's generator phase and the renderers read them.

This module imports only ``reconciler.model.base`` so that ``model`` can re-export it.
"""

from __future__ import annotations

import msgspec

from reconciler.model.base import Frozen as _Frozen


class CellSource(_Frozen, frozen=True, kw_only=True):
    """Where one expanded run came from: the generator file and its cell."""

    file: str
    """The generator, relative to the repository root."""
    kind: str = "generator"
    cell: dict[str, str] = msgspec.field(default_factory=dict)
    """Axis name -> element key, in address order."""
    line: int | None = None
    """Line of the cell's first element in the generator file."""
    note: str | None = None
    """For a vanished cell: which element went and how (``element removed: model "o3"``)."""


class CellOrigin(_Frozen, frozen=True, kw_only=True):
    """Which element of a generator set one key of an expanded config, and on which line."""

    path: tuple[str | int, ...]
    """The key in the expanded config (``("tasks", "task_set")``, ``("agents", 0, "model")``)."""
    element: str
    """Who set it, as messages name it: ``base``, ``axis.benchmark "hle"``, ``override[0]``."""
    line: int | None = None
    """The line of that key in the generator file."""


def origin_of(origins: tuple[CellOrigin, ...], path: tuple[str | int, ...]) -> CellOrigin | None:
    """The origin of ``path`` or of its nearest enclosing key that has one (a whole-replaced
    table such as ``agents[0].model`` is set as one value); None when nothing set it."""
    by_path = {origin.path: origin for origin in origins}
    for depth in range(len(path), 0, -1):
        found = by_path.get(tuple(path[:depth]))
        if found is not None:
            return found
    return None


class GeneratorMove(_Frozen, frozen=True, kw_only=True):
    """One ``[[moved]]`` block: the addresses it re-keys (old -> new)."""

    line: int
    pairs: tuple[tuple[str, str], ...] = ()
    """(old address, new address) for every cell it applies to."""
    label: str = ""
    """How the plan names it: ``model "sonnet-4" -> "sonnet-4-5"``."""


class GeneratorRemoval(_Frozen, frozen=True, kw_only=True):
    """One ``[[removed]]`` block: an element retired in the reviewed diff."""

    axis: str
    key: str
    line: int
    on_remove: str = "stop"


class GeneratorProduct(_Frozen, frozen=True, kw_only=True):
    """What one generator file expands to, for the plan header, the PR grid and JSON."""

    file: str
    """The generator, relative to the repository root."""
    prefix: str
    """The address every cell starts with (``compare/frontier``)."""
    axes: dict[str, tuple[str, ...]] = msgspec.field(default_factory=dict)
    """Axis name -> element keys, in address order (dict order is the address order)."""
    element_lines: dict[str, int] = msgspec.field(default_factory=dict)
    """``axis/key`` -> the line of the element in the file."""
    cells: tuple[str, ...] = ()
    """Every expanded address, sorted."""
    excluded: int = 0
    """Cells of the product that ``[[exclude]]`` took out (after includes)."""
    included: int = 0
    """Cells ``[[include]]`` put back or listed."""
    on_remove: str = "stop"
    """What a vanished, still-active cell gets: ``stop``, ``forget`` or ``finish``."""
    removed: tuple[GeneratorRemoval, ...] = ()
    moves: tuple[GeneratorMove, ...] = ()

    @property
    def runs(self) -> int:
        return len(self.cells)

    def product_line(self) -> str:
        """``benchmark(3) × model(4) − 1 excluded = 11 runs``."""
        text = " × ".join(f"{axis}({len(keys)})" for axis, keys in self.axes.items())
        if self.excluded:
            text += f" − {self.excluded} excluded"
        if self.included:
            text += f" + {self.included} included"
        return f"{text} = {self.runs} run{'s' if self.runs != 1 else ''}"

    def cell_of(self, address: str) -> dict[str, str] | None:
        """The cell (axis -> key) an address of this generator names, known element or not;
        None when the address is not one of this generator's shape."""
        if not address.startswith(self.prefix + "/"):
            return None
        parts = address[len(self.prefix) + 1 :].split("/")
        if len(parts) != len(self.axes):
            return None
        return dict(zip(self.axes, parts, strict=True))
