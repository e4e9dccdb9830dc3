"""The generator phase: what a ``*.matrix.toml`` file's vanished cells get, and its guard.

Runs after ``diff`` (which planned every vanished address as an ordinary deleted config) and
before ``guards``. For every item of a generator's address it records the cell it came from
(``PlanItem.source``); for a vanished cell it names the element that went, and the
``[[removed]]`` block that acknowledged it (with its line). The generator's ``on_remove``
(or the block's) then decides what a still-active run gets:

* ``stop``   the item stays a stop (the default, as ``on_delete`` for files);
* ``forget`` the entry is forgotten and the run keeps going on the Platform;
* ``finish`` nothing now: the run stays recorded until it ends, then the ordinary
  deleted-config rule downloads and forgets it.

Guard: removing more than half of a generator's recorded cells, or all of them, fails the
plan unless ``[[removed]]`` blocks in the reviewed file cover those cells or
``--allow-mass-stop`` is given.
"""

from __future__ import annotations

from reconciler.model import (
    Action,
    CellSource,
    GeneratorProduct,
    GeneratorRemoval,
    PlanItem,
    Reason,
)
from reconciler.plan.draft import Draft, plural


def _product_of(
    products: tuple[GeneratorProduct, ...], address: str
) -> tuple[GeneratorProduct, dict[str, str]] | None:
    for product in products:
        cell = product.cell_of(address)
        if cell is not None:
            return product, cell
    return None


def _removal_of(product: GeneratorProduct, cell: dict[str, str]) -> GeneratorRemoval | None:
    for removal in product.removed:
        if cell.get(removal.axis) == removal.key:
            return removal
    return None


def shape_generator_items(draft: Draft) -> None:
    """Annotate generator items, apply ``on_remove``, and check the per-generator guard."""
    products = draft.generators
    if not products:
        return
    shaped: list[PlanItem] = []
    uncovered: dict[str, list[str]] = {product.file: [] for product in products}
    for item in draft.items:
        desired = draft.desired.get(item.address)
        if desired is not None and desired.source is not None:
            shaped.append(item.model_copy(update={"source": desired.source}))
            continue
        removed = (
            item.action in (Action.STOP, Action.FORGET) and item.reason is Reason.CONFIG_DELETED
        )
        found = _product_of(products, item.address) if removed else None
        if found is None:
            shaped.append(item)
            continue
        product, cell = found
        gone = [(axis, key) for axis, key in cell.items() if key not in product.axes[axis]]
        removal = _removal_of(product, cell)
        if gone:
            note = "element removed: " + ", ".join(f'{axis} "{key}"' for axis, key in gone)
        else:
            note = "cell no longer in the product (excluded)"
        on_remove = removal.on_remove if removal is not None else product.on_remove
        if removal is not None:
            note += f' ([[removed]] line {removal.line}, on_remove = "{on_remove}")'
        else:
            uncovered[product.file].append(item.address)
        source = CellSource(
            file=product.file,
            cell=cell,
            line=removal.line if removal is not None else None,
            note=note,
        )
        if item.action is Action.STOP and on_remove == "finish":
            draft.warnings.append(
                f'{item.address}: {note}; its run is left to finish (on_remove = "finish"), '
                "then downloaded and forgotten"
            )
            continue
        if item.action is Action.STOP and on_remove == "forget":
            label = item.run_name or item.run_id or "its run"
            item = item.model_copy(
                update={
                    "action": Action.FORGET,
                    "warnings": (
                        *item.warnings,
                        f"run {label} keeps running on the Platform (on_remove = forget)",
                    ),
                }
            )
        shaped.append(item.model_copy(update={"source": source}))
    draft.items = shaped
    if draft.settings.allow_mass_stop:
        return
    for product in products:
        removed_cells = uncovered[product.file]
        if not removed_cells:
            continue
        recorded = [a for a in draft.recorded.runs if product.cell_of(a) is not None]
        if len(removed_cells) == len(recorded) or 2 * len(removed_cells) > len(recorded):
            draft.errors.append(
                f"{product.file}: this plan would remove {plural(len(removed_cells), 'cell')} "
                f"of {len(recorded)} recorded ({', '.join(removed_cells[:5])}"
                f"{', ...' if len(removed_cells) > 5 else ''}), more than half of the generator; "
                "acknowledge it in the file with a [[removed]] block per retired element "
                '(axis = "...", key = "...", on_remove = "stop" or "finish"), or re-run with '
                "--allow-mass-stop"
            )
