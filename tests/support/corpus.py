"""The bad-input corpus: config files that must be refused, with the exact issues expected.

Each ``tests/corpus/cases/*.toml`` file is one case. Its trailing comment lines state every
issue the loader must report for it, in order::

    # expect: <key path> @ <line>:<column> | <exact message>
    # expect-warning: <key path> @ <line>:<column> | <exact message>

Fake credentials are not committed (secret scanners would flag them): a case writes
``{{SK}}``-style placeholders that ``materialize`` replaces with generated look-alikes.
Cases that cannot be text files (empty, non-UTF-8, 5 MB, deep nesting) are generated in
``generated_cases``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CASES_DIR = Path(__file__).resolve().parents[1] / "corpus" / "cases"

_EXPECT = re.compile(r"^# expect(-warning)?: (\S*) @ (\d+):(\d+) \| (.*)$")

# Built by concatenation so that no credential-shaped literal sits in the repository.
FAKE_CREDENTIALS = {
    "SK": "sk-" + "proj-" + "Zx81kQ" * 4,
    "GHP": "ghp" + "_" + "a1B2c3D4e5" * 4,
    "GITHUB_PAT": "github" + "_pat_" + "11ABCDEFG0" * 3,
    "HF": "hf" + "_" + "QwErTyUiOpAsDfGhJkLzXcVb",
    "AKIA": "AKIA" + "Q3EXAMPLE7Z2WXYV",
    "XOX": "xox" + "b-" + "1234567890-abcdefghij",
    "RANDOM": "Tq9" + "vL2mXr8KpW4nYs6HbJ3dFg7C",
}


@dataclass(frozen=True)
class Expected:
    key: str
    line: int
    column: int
    message: str
    severity: str = "error"


@dataclass(frozen=True)
class Case:
    name: str
    content: bytes
    expected: tuple[Expected, ...]
    secrets: tuple[str, ...] = ()
    """Credential look-alikes in the file; none may appear in any issue."""


def materialize(text: str) -> tuple[str, tuple[str, ...]]:
    """Replace ``{{NAME}}`` placeholders by fake credentials; return the text and those used."""
    used = []
    for name, value in FAKE_CREDENTIALS.items():
        placeholder = "{{" + name + "}}"
        if placeholder in text:
            text = text.replace(placeholder, value)
            used.append(value)
    return text, tuple(used)


def parse_expectations(text: str) -> tuple[Expected, ...]:
    found = []
    for line in text.splitlines():
        match = _EXPECT.match(line)
        if match:
            warning, key, row, column, message = match.groups()
            found.append(
                Expected(key, int(row), int(column), message, "warning" if warning else "error")
            )
    return tuple(found)


def file_cases() -> list[Case]:
    cases = []
    for path in sorted(CASES_DIR.glob("*.toml")):
        raw = path.read_text(encoding="utf-8")
        text, secrets = materialize(raw)
        cases.append(Case(path.stem, text.encode("utf-8"), parse_expectations(raw), secrets))
    return cases


def generated_cases() -> list[Case]:
    """Cases whose bytes cannot (or should not) be committed as files."""
    valid = (
        '[experiment]\nbenchmark = "terminal-bench-2-1"\n\n[[agents]]\nharness = "codex"\n'
        '[agents.model]\ntype = "provider"\nmodel = "openai/gpt-5.2"\n'
        'api_key_secret = "OPENAI_API_KEY"\n'
    )
    big = (
        valid
        + "[env]\n"
        + "".join(f'VAR_{i:06d} = "{"x" * 60}"\n' for i in range(5 * 1024 * 1024 // 78 + 1))
    )
    deep = valid + "[execution]\nmax_retries = " + "[" * 5000 + "1" + "]" * 5000 + "\n"
    nested = valid + "[execution]\njudge_model = " + "{a = " * 40 + "1" + "}" * 40 + "\n"
    return [
        Case("generated-empty", b"", (Expected("", 1, 1, "config file is empty"),)),
        Case(
            "generated-whitespace-only",
            b"\n  \n\t\n",
            (Expected("", 1, 1, "config file is empty"),),
        ),
        Case(
            "generated-non-utf8",
            b'[experiment]\nbenchmark = "caf\xe9"\n',
            (Expected("", 2, 17, "file is not valid UTF-8 (byte 0xe9)"),),
        ),
        Case(
            "generated-latin1-comment",
            b"# r\xe9sum\xe9\n" + valid.encode(),
            (Expected("", 1, 4, "file is not valid UTF-8 (byte 0xe9)"),),
        ),
        Case(
            "generated-bom",
            b"\xef\xbb\xbf" + valid.encode(),
            (
                Expected(
                    "", 1, 1, "file starts with a byte order mark (BOM), which TOML does not allow"
                ),
            ),
        ),
        Case(
            "generated-5mb",
            big.encode(),
            (
                Expected(
                    "",
                    1,
                    1,
                    f"config file is too large ({len(big):,} bytes; the limit is 1,048,576)",
                ),
            ),
        ),
        Case(
            "generated-deep-nesting",
            deep.encode(),
            (
                Expected(
                    "",
                    11,
                    47,
                    "Invalid TOML: arrays or inline tables nested too deeply (more than 32 levels)",
                ),
            ),
        ),
        Case(
            "generated-nested-execution-value",
            nested.encode(),
            (
                # judge_model is a string (rules.EXECUTION_TYPES): one problem, not a cascade.
                Expected("execution.judge_model", 11, 15, "must be a string, got a table"),
            ),
        ),
    ]


def all_cases() -> list[Case]:
    return file_cases() + generated_cases()
