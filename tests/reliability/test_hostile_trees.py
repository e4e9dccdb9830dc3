"""Every command × every hostile tree (issue 36): 0 reads outside, 0 writes outside, 0
internal errors.

``tests/support/hostile_tree.py`` builds the trees (a real applied repository with one
hazard each: a committed link to a file or directory outside, a FIFO, a file past its cap,
an output directory that is a link) and runs each command of the front door in its own
process under an audit-hook probe. The table printed at the end has one row per tree: the
commands run, how many refused, and the three figures that must be 0; a second table lists
every command that read or wrote outside, or failed with an internal error, by name.

Run alone: ``.venv/bin/python -m pytest -m reliability -p no:xdist -s
tests/reliability/test_hostile_trees.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.local_platform import LocalPlatform
from tests.support.emulator import serve
from tests.support.hostile_tree import (
    TREES,
    Layout,
    Outcome,
    build_template,
    cli_env,
    commands,
    prepare,
    probe,
)

from . import report

pytestmark = pytest.mark.reliability
WORKSPACE = "hostile-trees"
RESULTS: list[Outcome] = []


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Layout, str]]:
    root = tmp_path_factory.mktemp("hostile-trees")
    platform = LocalPlatform(root / "platform", speed=5000, seed=0, workspaces=(WORKSPACE,))
    platform.set_secret(WORKSPACE, "OPENAI_API_KEY", "sk-hostile-trees-suite-value")
    handle = serve(platform, quiet=True)
    try:
        layout = build_template(root, handle.url, WORKSPACE)
        yield root / "template", layout, handle.url
    finally:
        handle.close()


def _publish() -> None:
    trees: list[str] = []
    for outcome in RESULTS:
        if outcome.tree not in trees:
            trees.append(outcome.tree)
    for tree in trees:
        rows = [o for o in RESULTS if o.tree == tree]
        report.record("hostile trees", f"{tree}: commands run", len(rows))
        report.record(
            "hostile trees", f"{tree}: commands that refused", sum(o.refused for o in rows)
        )
        report.record(
            "hostile trees",
            f"{tree}: reads outside",
            sum(len(o.reads) for o in rows),
            must_be_zero=True,
        )
        report.record(
            "hostile trees",
            f"{tree}: writes outside",
            sum(len(o.writes) for o in rows),
            must_be_zero=True,
        )
        report.record(
            "hostile trees",
            f"{tree}: internal errors",
            sum(o.internal_error for o in rows),
            must_be_zero=True,
        )


def _table() -> str:
    names = list(commands(Layout(), "URL", WORKSPACE))
    trees = [t for t in TREES if any(o.tree == t for o in RESULTS)]
    width = max(len(n) for n in names)
    lines = [
        "hostile trees (columns) × commands (rows): . accepted, R refused, "
        "! read/wrote outside or internal error",
        " " * width + "  " + " ".join(f"{i:>2}" for i in range(1, len(trees) + 1)),
    ]
    for name in names:
        cells = []
        for tree in trees:
            found = next((o for o in RESULTS if o.command == name and o.tree == tree), None)
            if found is None:
                cells.append(" -")
            elif found.reads or found.writes or found.internal_error:
                cells.append(" !")
            else:
                cells.append(" R" if found.refused else " .")
        lines.append(f"{name:<{width}}  " + " ".join(cells))
    lines += [f"  {i:>2}: {tree}" for i, tree in enumerate(trees, 1)]
    return "\n".join(lines)


@pytest.mark.parametrize("tree", sorted(TREES))
def test_every_command_against_the_tree(
    template: tuple[Path, Layout, str], tmp_path: Path, tree: str
) -> None:
    source, layout, url = template
    bad: list[str] = []
    for name, argv in commands(layout, url, WORKSPACE).items():
        repo, outside = prepare(source, layout, tree, tmp_path / "case")
        outcome = probe(name, tree, repo, outside, argv, env=cli_env())
        RESULTS.append(outcome)
        if outcome.reads or outcome.writes or outcome.internal_error:
            bad.append(
                f"{name}: reads {outcome.reads} writes {outcome.writes} "
                f"(exit {outcome.code}): {outcome.text[-600:]}"
            )
    _publish()
    print(f"\n{tree}:\n" + _table())
    assert not bad, "\n".join(bad)
