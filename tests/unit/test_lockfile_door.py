"""The lockfile has one door (design.md §7.12): nothing outside ``reconciler/state/`` writes
the lockfile or takes its locks; every command goes through ``state/door.py``.

Read from the source with ``ast``, per module outside ``state/``, as a lockfile write:

* importing a writer or a lock shape from ``state/`` (``write_lockfile``, ``StateStore``,
  ``hold_lock``, ``hold_git_lock``, ...), or calling one by name;
* replacing, renaming, linking or writing a file whose expression names the lockfile
  (``os.replace(tmp, state_path)``, ``ctx.state_path.write_text(...)``);
* spelling the held lock's file name (``.osmosis.lock.held``): ``state.door.HELD_NAME`` is
  the one place.

The companion test proves each probe can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

from reconciler.state.door import HELD_NAME

PACKAGE = Path(__file__).resolve().parents[2] / "reconciler"
DOOR_PACKAGE = PACKAGE / "state"

# Writers that predate the door, each to be moved onto it by the work named. The test fails
# when one no longer writes, so the set only shrinks; it is empty: every writer uses the door.
ALLOWED: set[str] = set()

WRITER_NAMES = {
    "reconciler.state.lockfile": {"write_lockfile", "_atomic_write", "remove_stale_temps"},
    "reconciler.state.locking": {"hold_lock", "force_unlock"},
    "reconciler.state.gitlock": {"hold_git_lock", "force_unlock_any"},
}
CALLED_WRITERS = {"write_lockfile", "_atomic_write", "StateStore", "hold_git_lock"}
"""Writers flagged by the name they are called by, however they were imported (the type
``StateStore`` may be imported: the door hands stores out, only it builds them)."""
FILE_WRITES = {"replace", "rename", "link", "move", "write_text", "write_bytes", "write_inside"}
"""Calls that put a file in place: ``os.*``, ``shutil.*``, ``Path.*``, ``paths.write_inside``."""
MODULES = {"os", "shutil", "paths"}
LOCKFILE_WORDS = ("state_path", "lockfile", "lock_path", "settings.state", "osmosis.lock")
"""What an expression naming the lockfile (or its lock) contains."""


def _documentation(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as statements: docstrings of
    modules, classes, functions and attributes."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def _names_lockfile(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return any(word in text for word in LOCKFILE_WORDS)


def lockfile_writes(source: str) -> list[str]:
    """Each lockfile write of a module's source, as ``line: what``."""
    tree = ast.parse(source)
    documentation = _documentation(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in WRITER_NAMES:
            for alias in node.names:
                if alias.name in WRITER_NAMES[node.module]:
                    found.append(f"{node.lineno}: imports {node.module}.{alias.name}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name in CALLED_WRITERS:
                found.append(f"{node.lineno}: calls {name}")
            elif name in FILE_WRITES:
                targets = list(node.args)
                if isinstance(func, ast.Attribute) and ast.unparse(func.value) not in MODULES:
                    targets.append(func.value)  # Path.replace, path.write_text
                named = [t for t in targets if _names_lockfile(t)]
                if named:
                    found.append(f"{node.lineno}: {name} on {ast.unparse(named[0])}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and HELD_NAME in node.value
            and id(node) not in documentation
        ):
            found.append(f"{node.lineno}: spells {HELD_NAME!r}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def outside_the_door() -> dict[str, list[str]]:
    """Module (relative to ``reconciler/``) -> its lockfile writes, for every module outside
    ``state/`` that has one."""
    writes = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(DOOR_PACKAGE):
            continue
        found = lockfile_writes(path.read_text(encoding="utf-8"))
        if found:
            writes[path.relative_to(PACKAGE).as_posix()] = found
    return writes


def test_nothing_outside_state_writes_the_lockfile() -> None:
    writes = outside_the_door()
    new = {module: lines for module, lines in writes.items() if module not in ALLOWED}
    assert not new, (
        "write the lockfile through reconciler/state/door.py (open_door: read, write, store), "
        f"never directly: {new}"
    )
    gone = sorted(ALLOWED - writes.keys())
    assert not gone, f"{gone} no longer write the lockfile: remove them from ALLOWED"


def test_the_held_lock_name_is_spelled_once_in_state() -> None:
    spelled = [
        path.relative_to(PACKAGE).as_posix()
        for path in sorted(DOOR_PACKAGE.rglob("*.py"))
        if any("spells" in line for line in lockfile_writes(path.read_text(encoding="utf-8")))
    ]
    assert spelled == ["state/door.py"]


def test_the_probe_finds_each_kind_of_write() -> None:
    source = '''
"""A module that mentions .osmosis.lock.held in its docstring only is fine."""
import os
from reconciler.state.lockfile import read_lockfile, write_lockfile
from reconciler.state.store import StateStore  # the type: fine
from reconciler.state import lockfile as lf
from reconciler.state.locking import hold_lock

def forget(ctx, state):
    lf.write_lockfile(ctx.state_path, state)
    store = StateStore(ctx.state_path, state)
    os.replace(tmp, ctx.state_path)
    (root / settings.state).write_text("x")
    held = ctx.state_path.parent / ".osmosis.lock.held"
    os.replace(tmp, plan_path)  # another file: fine
    read_lockfile(ctx.state_path)  # reading is not writing
'''
    assert lockfile_writes(source) == [
        "4: imports reconciler.state.lockfile.write_lockfile",
        "7: imports reconciler.state.locking.hold_lock",
        "10: calls write_lockfile",
        "11: calls StateStore",
        "12: replace on ctx.state_path",
        "13: write_text on root / settings.state",
        f"14: spells {HELD_NAME!r}",
    ]
    assert lockfile_writes("import os\nos.replace(a, b)\n") == []
