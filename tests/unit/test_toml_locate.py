"""The one key-path locator (``reconciler/toml_locate.py``), as its two callers use it: the
config loader asks for the line and column of a key or value (``scan(...).find``), the
lockfile reader for the line of a key path in a shape error (``KeyLines.line_of``)."""

from __future__ import annotations

import tomllib

import pytest

from reconciler.toml_locate import KeyLines, scan

# A text with every shape both callers meet: top-level keys, a table, tables under quoted
# keys (a lockfile's runs), an array of tables (its history), inline tables (a config's
# model), dotted keys and quoted keys with a dot inside.
TEXT = """\
version = 2                          # 1
serial = 3                           # 2
title = "x"                          # 3
                                     # 4
[runs."tb/smoke"]                    # 5
spec_digest = "d"                    # 6
task_count = 12                      # 7
                                     # 8
[runs."tb/smoke".downloads]          # 9
types = ["summary", "logs"]          # 10
                                     # 11
[runs.plain]                         # 12
run_id = "r-1"                       # 13
                                     # 14
[[history]]                          # 15
address = "a"                        # 16
reason = "replaced"                  # 17
                                     # 18
[[history]]                          # 19
address = "b"                        # 20
reason = "whim"                      # 21
                                     # 22
[[agents]]                           # 23
name = "first"                       # 24
model = { type = "llm", size = 7 }   # 25
                                     # 26
[[agents]]                           # 27
name = "second"                      # 28
model.type = "tool"                  # 29
"dotted.name" = 1                    # 30
'literal key' = 2                    # 31
"""

Case = tuple[tuple[str | int, ...], int | None]

CASES: list[Case] = [
    # top-level keys; a key the text does not hold at all
    (("version",), 1),
    (("serial",), 2),
    (("lineage",), None),
    # tables under quoted keys, their keys, a missing key (its table's header)
    (("runs", "tb/smoke"), 5),
    (("runs", "tb/smoke", "task_count"), 7),
    (("runs", "tb/smoke", "spec_digest"), 6),
    (("runs", "tb/smoke", "observed_at"), 5),
    (("runs", "tb/smoke", "downloads", "types"), 10),
    (("runs", "tb/smoke", "downloads", "types", 1), 10),
    (("runs", "plain", "run_id"), 13),
    (("runs", "plain", "intent", "started_at"), 12),
    # an array of tables: each element, its keys, an element past the end
    (("history", 0), 15),
    (("history", 1, "reason"), 21),
    (("history", 1, "spec_digest"), 19),
    (("history", 0, "address"), 16),
    # inline tables, dotted keys, quoted keys with a dot inside
    (("agents", 0, "model", "size"), 25),
    (("agents", 1, "model", "type"), 29),
    (("agents", 1, "dotted.name"), 30),
    (("agents", 1, "literal key"), 31),
]


def test_the_text_is_valid_toml() -> None:
    data = tomllib.loads(TEXT)
    assert data["runs"]["tb/smoke"]["downloads"]["types"] == ["summary", "logs"]
    assert data["agents"][1]["dotted.name"] == 1


@pytest.mark.parametrize(("path", "line"), CASES, ids=[".".join(map(str, p)) for p, _ in CASES])
def test_the_lockfile_reader_gets_the_line_of_each_key_path(
    path: tuple[str | int, ...], line: int | None
) -> None:
    assert KeyLines(TEXT).line_of(list(path)) == line


@pytest.mark.parametrize(
    ("path", "anchor", "where"),
    [
        (("runs", "tb/smoke", "task_count"), "key", (7, 1)),
        (("runs", "tb/smoke", "task_count"), "value", (7, 14)),
        (("agents", 0, "model", "size"), "key", (25, 25)),
        (("agents", 0, "model", "size"), "value", (25, 32)),
        (("agents", 1, "model", "type"), "key", (29, 7)),
        (("agents", 1, "literal key"), "key", (31, 1)),
        (("history", 1, "colour"), "parent", (19, 1)),
        (("runs", "plain"), "table", (12, 1)),
        (("nowhere",), "key", (1, 1)),
        (("version",), "file", (1, 1)),
    ],
)
def test_the_config_loader_gets_line_and_column(
    path: tuple[str | int, ...], anchor: str, where: tuple[int, int]
) -> None:
    assert scan(TEXT).find(path, anchor) == where


def test_a_duplicate_key_is_found_where_it_is_defined_again() -> None:
    positions = scan("[a]\nx = 1\n\n[a]\ny = 2\n")
    assert positions.duplicate == ("a",)
    assert positions.line_col(positions.duplicate_offset) == (4, 1)


def test_text_it_does_not_understand_keeps_what_was_found() -> None:
    # An unclosed string: the scanner stops there, the lines before it are still known.
    text = 'a = 1\n[t]\nb = "open\nc = 3\n'
    lines = KeyLines(text)
    assert lines.line_of(["t", "b"]) == 3
    assert lines.line_of(["t", "c"]) == 2  # not scanned: its table's header
    assert KeyLines("").line_of(["a"]) is None


def test_keylines_scans_only_when_asked() -> None:
    lines = KeyLines(TEXT)
    assert lines._positions is None  # a valid lockfile never pays for the scan
    assert lines.line_of(["runs", "plain"]) == 12
    positions = lines._positions
    assert lines.line_of(["history", 1]) == 19
    assert lines._positions is positions  # scanned once
