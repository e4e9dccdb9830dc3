"""The bad-input corpus: every case is refused with exactly the expected issues."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.config import load_configs
from tests.support.corpus import Case, all_cases

CASES = all_cases()


def _load(tmp_path: Path, cases: list[Case]):
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    for case in cases:
        (bench / f"{case.name}.toml").write_bytes(case.content)
    return load_configs(tmp_path)


def test_corpus_is_large_enough():
    assert len(CASES) >= 50
    assert all(case.expected for case in CASES), [c.name for c in CASES if not c.expected]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case(tmp_path: Path, case: Case):
    result = _load(tmp_path, [case])
    got = [(i.key, i.line, i.column, i.message, i.severity) for i in result.issues]
    want = [(e.key, e.line, e.column, e.message, e.severity) for e in case.expected]
    assert got == want
    assert all(issue.file == f"benchmarks/{case.name}.toml" for issue in result.issues)
    assert all(issue.hint for issue in result.issues)
    # Every case is refused: at least one error, and no desired run comes out of it.
    assert not result.ok
    assert result.runs == ()
    for secret in case.secrets:
        rendered = json.dumps([vars(issue) for issue in result.issues])
        assert secret not in rendered
        assert secret not in repr(result)


def test_all_cases_in_one_run(tmp_path: Path):
    """All issues of all files come out of one call, grouped by file in address order."""
    result = _load(tmp_path, CASES)
    assert result.files == len(CASES)
    files = [issue.file for issue in result.issues]
    assert sorted(set(files)) == sorted(f"benchmarks/{c.name}.toml" for c in CASES)
    # Grouped: once a file's issues end, that file does not come back.
    seen: list[str] = []
    for name in files:
        if not seen or seen[-1] != name:
            assert name not in seen
            seen.append(name)
    assert seen == sorted(seen)
    assert sum(len(c.expected) for c in CASES) == len(result.issues)
