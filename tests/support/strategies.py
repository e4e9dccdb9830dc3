"""Hostile inputs: valid documents with hostile edits, and hostile values on their own."""

from __future__ import annotations

import csv
import io

from hypothesis import strategies as st

DEEP = 3000
HOSTILE_SCALARS = [
    "nan",
    "inf",
    "-inf",
    "+nan",
    "1e999",
    "-1",
    "0",
    "-0.0",
    "9223372036854775808",
    "9" * 5000,
    "0x" + "f" * 4400,
    "true",
    '""',
    '" "',
    '"\\u001b]0;pwned\\u0007\\u001b[2J"',
    '"\\u0000"',
    '"a\\u0000b"',
    '"../../../../etc/passwd"',
    '"/etc/passwd"',
    '"..\\\\..\\\\x"',
    '"state/../../outside"',
    '"\\u202eevil"',
    '"' + "x" * 70_000 + '"',
    "1979-05-27T07:32:00Z",
    "07:32:00",
    "[" * DEEP + "]" * DEEP,
    "{a = " * 200 + "1" + "}" * 200,
    "[1, 'a', {b = 2}]",
    '"""\nmulti\nline"""',
    "'literal\\path'",
]
HOSTILE_KEYS = [
    "a",
    "version",
    "serial",
    "platform",
    "workspace",
    "benchmark",
    "max_cost_usd",
    "state",
    "benchmarks",
    "directory",
    "run_id",
    "address",
    '"\\u001b[2J"',
    ".".join(["k"] * 300),
    '"../x"',
]
HOSTILE_LINES = [
    '[runs."../../escape"]',
    '[runs."/abs"]',
    "[[history]]",
    "[tool.osmosis-reconciler]",
    "<<<<<<< HEAD",
    "=======",
    ">>>>>>> theirs",
    "[a]\n[a]",
    "x = 1\nx = 2",
    "\ufeff",
    "\x00",
    "[" * 500,
    "a." * 2000 + "b = 1",
]

_unicode = st.text(st.characters(exclude_categories=["Cs"], max_codepoint=0x10FFFF), max_size=40)
_ascii = st.text(st.sampled_from("[]{}=\"'.,\\#\n -_0123456789abcdeftrunfi+:TZ"), max_size=60)


@st.composite
def edited(draw: st.DrawFn, base: str) -> str:
    """``base`` with 1-4 hostile edits: values replaced, lines inserted, deleted, duplicated,
    random text spliced in, or the text truncated."""
    lines = base.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["value", "insert", "delete", "dup", "splice", "truncate"]))
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "value" and lines:
            line = lines[at]
            key = line.split("=", 1)[0] if "=" in line else draw(st.sampled_from(HOSTILE_KEYS))
            lines[at] = f"{key.rstrip()} = {draw(st.sampled_from(HOSTILE_SCALARS))}"
        elif op == "insert":
            new = draw(
                st.one_of(
                    st.sampled_from(HOSTILE_LINES),
                    st.builds(
                        lambda k, v: f"{k} = {v}",
                        st.sampled_from(HOSTILE_KEYS),
                        st.sampled_from(HOSTILE_SCALARS),
                    ),
                )
            )
            lines.insert(at, new)
        elif op == "delete" and lines:
            del lines[at]
        elif op == "dup" and lines:
            lines.insert(at, lines[at])
        elif op == "splice" and lines:
            line = lines[at]
            cut = draw(st.integers(0, len(line)))
            lines[at] = line[:cut] + draw(st.one_of(_unicode, _ascii)) + line[cut:]
        elif op == "truncate":
            text = "\n".join(lines)
            lines = text[: draw(st.integers(0, len(text)))].split("\n")
    return "\n".join(lines)


def documents(base: str) -> st.SearchStrategy[str]:
    """Mostly edits of a valid ``base``, sometimes text from scratch."""
    return st.one_of(
        edited(base),
        edited(base),
        edited(base),
        st.one_of(_unicode, _ascii, st.sampled_from(HOSTILE_LINES)),
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["../../x", "/etc/passwd", "\x1b[2J", "a" * 70_000]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


# --------------------------------------------------------------------------- results.csv

RESULTS_HEADER = [
    "task", "agent_index", "model", "harness", "attempt", "outcome", "reward",
    "input_tokens", "output_tokens", "tokens", "cost_usd", "task_checksum", "category",
]  # fmt: skip
RESULTS_TASKS = ["task-00", "task-01", "task-02", "tb/x", " "]
HOSTILE_CELLS = [
    "", " ", "nan", "inf", "-inf", "1e400", "-1e400", "-5", "0", "1", "0.5", "2", "1e308",
    "9" * 5000, "???", "n/a", "passed", "failed", "errored", "PASSED", "true", "0x10",
    "1_000", "٣", "\x00", "\x1b[2J", "a,b", '"', "\r\n", "1.0000000000000000000001",
    "-0.0", "+1", "1e-400", "4294967296", "1023", "1024",
]  # fmt: skip
OVERSIZED_CELL = "x" * 200_000
"""Past the csv module's field limit (131,072). One file in 25 holds it, not one cell in
185 (two files in five): Hypothesis keeps every file it drew for the rest of its run, and
the results fuzz target grew by ~280 MB per 1,000 examples with it that common."""
_PLAIN = ["0", "1", "passed", "failed", "errored", "0.02", "1200", "openai/gpt-5", "codex"]


@st.composite
def results_files(draw: st.DrawFn) -> str:
    """A ``results.csv``: any subset and order of the known columns (and unknown ones),
    rows of any length, each cell plain, hostile, or any text; sometimes raw edits."""
    header = list(draw(st.permutations([*RESULTS_HEADER, "extra"])))
    columns = header[: draw(st.integers(1, len(header)))]
    rows: list[list[str]] = [columns]
    for _ in range(draw(st.integers(0, 16))):
        row = []
        for name in columns[: draw(st.integers(0, len(columns)))]:
            pick = draw(st.integers(0, 4))
            if pick == 0:
                row.append(draw(st.sampled_from(HOSTILE_CELLS)))
            elif pick == 1:
                row.append(draw(st.text(max_size=8)))
            elif name == "task":
                row.append(draw(st.sampled_from(RESULTS_TASKS)))
            else:
                row.append(draw(st.sampled_from(_PLAIN)))
        rows.append(row)
    if len(rows) > 1 and rows[-1] and draw(st.integers(0, 24)) == 0:
        rows[-1][draw(st.integers(0, len(rows[-1]) - 1))] = OVERSIZED_CELL
    out = io.StringIO()
    csv.writer(out, lineterminator=draw(st.sampled_from(["\n", "\r\n"]))).writerows(rows)
    text = out.getvalue()
    if draw(st.integers(0, 5)) == 0:
        text = draw(edited(text))
    return text
