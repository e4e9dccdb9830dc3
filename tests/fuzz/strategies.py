"""Hostile inputs: valid documents with hostile edits, and hostile values on their own."""

from __future__ import annotations

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

_unicode = st.text(st.characters(blacklist_categories=("Cs",), max_codepoint=0x10FFFF), max_size=40)
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
