"""docs/development.md's package map is the tree: every package and module it names exists,
and every package under ``reconciler/`` is named.

The map is the ``text`` block under "## The packages". An entry line (two spaces in) names
packages (``model/``, ``results/sequential/``) and top-level modules (``errors.py``) in its
first column, relative to ``reconciler/``; the description beside it and on the lines below
names modules of the entry's package (``door.py``), or paths from ``reconciler/``
(``engine/context.py``). A line at the margin names a path from the repository root.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.docs import DOCS, PROJECT_ROOT, blocks

PAGE = DOCS / "development.md"
PACKAGE = PROJECT_ROOT / "reconciler"
NAME = re.compile(r"(?<![\w./-])((?:\w+/)*\w+(?:/|\.py|\.yml))(?![\w/])")
COLUMN_GAP = re.compile(r"\S {3,}\S")


def package_map() -> str:
    (body,) = [
        b.body for b in blocks(PAGE) if b.lang == "text" and b.headings[-1] == "## The packages"
    ]
    return body


def named_paths(text: str) -> list[tuple[str, Path]]:
    """Each name the map shows, with the path it stands for."""
    found: list[tuple[str, Path]] = []
    owner: Path | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            found += [(n, PROJECT_ROOT / n) for n in NAME.findall(line)]
            continue
        description = line
        if indent == 2:
            gap = COLUMN_GAP.search(line)
            split = gap.start() + 1 if gap else len(line)
            column, description = line[:split], line[split:]
            names = NAME.findall(column)
            found += [(n, PACKAGE / n) for n in names]
            packages = [n for n in names if n.endswith("/")]
            owner = PACKAGE / packages[0] if len(packages) == 1 else None
        for name in NAME.findall(description):
            base = PACKAGE if "/" in name.rstrip("/") or owner is None else owner
            found.append((name, base / name))
    return found


def packages() -> set[str]:
    """Every package under ``reconciler/``, as the map writes it (``results/sequential/``)."""
    return {
        init.parent.relative_to(PACKAGE).as_posix() + "/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE
    }


def test_every_name_in_the_map_exists() -> None:
    found = named_paths(package_map())
    assert len(found) >= 20
    missing = [
        f"{name} ({path.relative_to(PROJECT_ROOT)})"
        for name, path in found
        if not (path.is_dir() if name.endswith("/") else path.is_file())
    ]
    assert missing == [], "docs/development.md names what the tree does not hold"


def test_every_package_is_in_the_map() -> None:
    named = {
        path.relative_to(PACKAGE).as_posix() + "/"
        for name, path in named_paths(package_map())
        if name.endswith("/") and path.is_relative_to(PACKAGE) and path != PACKAGE
    }
    assert packages() - named == set(), "packages docs/development.md does not list"


def test_the_reader_finds_a_stale_name_and_an_unlisted_package() -> None:
    text = (
        "reconciler/\n"
        "  model/  gone/                 the core\n"
        "  state/                        the lockfile, its door (door.py, nothere.py)\n"
        "                                and engine/context.py\n"
        "  errors.py                     the exceptions\n"
    )
    found = dict(named_paths(text))
    assert found["gone/"] == PACKAGE / "gone" and not found["gone/"].exists()
    assert found["door.py"] == PACKAGE / "state" / "door.py"
    assert found["nothere.py"] == PACKAGE / "state" / "nothere.py"
    assert found["engine/context.py"] == PACKAGE / "engine" / "context.py"
    assert found["errors.py"] == PACKAGE / "errors.py"
    listed = {n for n in found if n.endswith("/") and n != "reconciler/"}
    assert "cli/" in packages() - listed
