"""A generator is sized from its axes before anything is built (issue 36, finding 1).

On main (35dc349) a 3.5 KB generator of 36 axes of 2 elements built all 2^36 cells before
comparing their count with ``max_runs``: MemoryError under a 3 GB limit. Here the count is
a product and a walk over the excludes; the same file fails at once, under a memory limit
far below what the product would need, with the count and ``max_runs`` in the message.
"""

from __future__ import annotations

import itertools
import os
import random
import resource
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.config import load_configs
from reconciler.config.generator import CellCount

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 400 * 1024 * 1024
"""Address space allowed to the command: 2^36 cell dicts would need terabytes."""


def wide_generator(axes: int) -> str:
    address = "/".join(f"{{a{i}}}" for i in range(axes))
    lines = [
        "[generate]",
        "version = 1",
        f'address = "{address}"',
        "",
        "[base.agent]",
        'harness = "codex"',
        'model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }',
        "",
        "[base.experiment]",
        'benchmark = "terminal-bench-2-1"',
    ]
    for i in range(axes):
        for key in ("x", "y"):
            lines += ["", f"[[axis.a{i}]]", f'key = "{key}"']
    return "\n".join(lines) + "\n"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_thirty_six_axes_fail_fast_under_a_memory_limit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    text = wide_generator(36)
    assert len(text.encode()) < 4096  # the finding's size: a few KB
    (repo / "benchmarks" / "wide.matrix.toml").write_text(text, encoding="utf-8")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "osmosis-plan"), "--validate-only", "--dir", str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_memory,
        env={**os.environ, "NO_COLOR": "1", "MALLOC_ARENA_MAX": "2"},
        cwd=repo,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "MemoryError" not in out and "internal error" not in out, out
    assert "benchmarks/wide.matrix.toml" in out, out
    assert f"expands to {2**36:,} runs" in out and "max_runs = 256" in out, out


def test_excludes_count_without_building_the_product() -> None:
    keys = {f"a{i}": ["x", "y"] for i in range(40)}
    # Two excludes that together remove every cell but that neither covers alone, on the
    # last axis: a walk over the product would visit 2^40 cells.
    boxes = [
        (0, (*([None] * 39), frozenset({0}))),
        (1, (*([None] * 39), frozenset({1}))),
        (2, (frozenset({0}), *([None] * 39))),
    ]
    sizing = CellCount(keys, boxes)
    assert sizing.product == 2**40
    assert sizing.total() == 0
    assert list(sizing.cells()) == []
    assert sizing.count_within(boxes[2][1], 2) == 0  # the third exclude matches nothing left
    assert sizing.count_within(boxes[1][1], 1) == 2**39


@st.composite
def products(draw: st.DrawFn) -> tuple[dict[str, list[str]], list[tuple[int, tuple]]]:
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    keys = {f"a{i}": [f"k{j}" for j in range(n)] for i, n in enumerate(sizes)}
    boxes = []
    for index in range(draw(st.integers(0, 4))):
        parts = [draw(st.none() | st.frozensets(st.integers(0, n - 1), min_size=1)) for n in sizes]
        if all(p is None for p in parts):
            parts[0] = frozenset({0})
        boxes.append((index, tuple(parts)))
    return keys, boxes


def _covered(cell: tuple[int, ...], box: tuple) -> bool:
    return all(part is None or i in part for i, part in zip(cell, box, strict=True))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(products())
def test_the_count_and_the_cells_are_those_of_the_product(
    case: tuple[dict[str, list[str]], list[tuple[int, tuple]]],
) -> None:
    keys, boxes = case
    product = list(itertools.product(*(range(len(k)) for k in keys.values())))
    kept = [c for c in product if not any(_covered(c, b) for _i, b in boxes)]
    sizing = CellCount(keys, boxes)
    assert sizing.product == len(product)
    assert sizing.total() == len(kept)
    assert list(sizing.cells()) == kept
    for position, (_index, box) in enumerate(boxes):
        before = [c for c in product if not any(_covered(c, b) for _i, b in boxes[:position])]
        assert sizing.count_within(box, position) == sum(_covered(c, box) for c in before)


def test_a_product_past_the_grid_cap_is_refused_even_when_excludes_trim_it(
    tmp_path: Path,
) -> None:
    text = wide_generator(11)  # 2,048 combinations
    text += '\n[[exclude]]\na0 = "y"\n\n[[exclude]]\na1 = "y"\n\n[[exclude]]\na2 = "y"\n'
    text += '\n[[exclude]]\na3 = "y"\n'  # 128 cells left: within max_runs
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "wide.matrix.toml").write_text(text, encoding="utf-8")
    result = load_configs(tmp_path, "benchmarks")
    shown = [f"{i.location()}: {i.message}" for i in result.errors]
    assert any(
        "the axes span 2,048 combinations" in m and "more than the 1,024" in m for m in shown
    ), shown


def test_excludes_too_intricate_to_count_are_a_clear_error(tmp_path: Path) -> None:
    rng = random.Random(1)
    lines = [
        "[generate]",
        "version = 1",
        'address = "' + "/".join(f"{{a{i}}}" for i in range(40)) + '"',
    ]
    for i in range(40):
        lines += [f'[[axis.a{i}]]\nkey = "{k}"' for k in "xyz"]
    for _ in range(300):
        chosen = rng.sample(range(40), 3)
        lines.append("[[exclude]]\n" + "\n".join(f'a{a} = "{rng.choice("xyz")}"' for a in chosen))
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "knot.matrix.toml").write_text("\n".join(lines) + "\n")
    result = load_configs(tmp_path, "benchmarks")
    shown = [f"{i.location()}: {i.message}" for i in result.errors]
    assert any(
        "the [[exclude]] tables are too intricate to count the cells (more than 1,000,000 "
        "steps)" in m
        for m in shown
    ), shown
