"""Fuzz targets (issue 36): run generators, policy rules and smoke rules, structure-aware.

Each document is built as data first (axes with elements and fragments, excludes that
name existing and unknown keys, ``[[policy]]`` tables with globs, budgets and effects,
``[[smoke]]`` thresholds), sometimes hostile in shape (36 axes of two elements, a
``max_runs`` of 10^30, a glob of 2,000 stars), written as TOML and sometimes edited further
(``strategies.edited``). Each must end in a result or a clear error: a generator in its
issues (and never more than ``HARD_MAX_RUNS`` runs, each address a clean relative path),
rules in a ``UsageError`` naming the settings file; the rules that load then drive
``check_policy`` and a whole ``compute_plan`` and its text render.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import tomlkit
from hypothesis import assume, given
from hypothesis import strategies as st

from reconciler.config.discover import Found
from reconciler.config.generator import HARD_MAX_RUNS
from reconciler.config.load import load_generator_file
from reconciler.config.policy import check_policy
from reconciler.config.project import load_project_settings
from reconciler.errors import UsageError
from reconciler.escaping import escape_text
from reconciler.paths import relative_path_problem
from reconciler.plan import compute_plan
from reconciler.render import render_text
from tests.support.plan_fixtures import desired, lock, observation, settings
from tests.support.strategies import edited

from .conftest import FUZZ, exercise

WORK = Path(
    tempfile.mkdtemp(
        prefix="osmosis-fuzz-rules-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    )
)
atexit.register(shutil.rmtree, WORK, ignore_errors=True)
GENERATOR = WORK / "benchmarks" / "g" / "fuzzed.matrix.toml"
FOUND = Found("g/fuzzed.matrix", "benchmarks/g/fuzzed.matrix.toml", str(GENERATOR))

# --------------------------------------------------------------------------- generators

KEYS = ["a", "b", "gpt-5", "tb", "x.y", "k_1", "A", "", "../x", "a/b", "\x1b[2J", "k" * 300]
AXES = ["model", "bench", "m2", "Model", "", "a.b", "{x}"]
MODEL = {"type": "provider", "model": "openai/gpt-5", "api_key_secret": "OPENAI_API_KEY"}
FRAGMENTS: list[dict[str, Any]] = [
    {},
    {"agent": {"model": MODEL}},
    {"agent": {"model": {**MODEL, "model": "anthropic/claude"}, "harness": "codex"}},
    {"experiment": {"benchmark": "terminal-bench-2-1"}},
    {"tasks": {"task_names": ["terminal-bench/git-multibranch"]}},
    {"tasks": {"task_set": "parity"}, "experiment": {"benchmark": "hle"}},
    {"execution": {"attempts_per_task": 2, "max_concurrent_attempts": 1}},
    {"execution": {"attempts_per_task": float("inf")}},
    {"execution": {"attempts_per_task": 10**30}},
    {"env": {"X": "1", "HF_TOKEN": "x"}},
    {"secrets": {"required": ["OPENAI_API_KEY"]}},
    {"experiment": "not a table"},
    {"unknown": 1},
    {"agent": {"model": {"type": "hosted", "base_model": "q", "lora_model_name": "l"}}},
]
GOOD_KEYS = ["a", "b", "c", "gpt-5", "tb", "x.y", "k_1"]
GOOD_AXES = ["model", "bench", "m2", "size"]
GOOD_FRAGMENTS = [*FRAGMENTS[:7], {"env": {"X": "1"}}]
BASES: list[dict[str, Any]] = [
    {
        "experiment": {"benchmark": "terminal-bench-2-1"},
        "tasks": {"task_names": ["terminal-bench/git-multibranch"]},
        "agent": {"harness": "codex", "model": MODEL},
        "execution": {"attempts_per_task": 1, "max_concurrent_attempts": 1},
    },
    {"experiment": {"benchmark": "terminal-bench-2-1"}, "agent": {"harness": "codex"}},
    {"agents": [{"harness": "codex", "model": MODEL}], "experiment": {"benchmark": "hle"}},
    {},
]


@st.composite
def generators(draw: st.DrawFn) -> str:
    """A generator document: its axes and elements, address, guards, excludes, includes,
    overrides, renames and retirements, each drawn to reference real or unknown names.
    Half are tame (valid names and fragments, so expansion and validation go deep)."""
    tame = draw(st.booleans())
    if draw(st.integers(0, 15)) == 0:
        count = draw(st.integers(20, 40))  # wide: 2^count cells unless sized first
        axes = {f"a{i}": ["x", "y"] for i in range(count)}
    else:
        pool = GOOD_AXES if tame else AXES
        names = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
        key_pool = st.sampled_from(GOOD_KEYS if tame else KEYS)
        axes = {
            name: draw(st.lists(key_pool, min_size=int(tame), max_size=6, unique=tame))
            for name in names
        }
    names = list(axes)
    keys = [k for ks in axes.values() for k in ks] or ["a"]
    order = draw(st.permutations(names))
    full = "/".join("{" + n + "}" for n in order)
    address = (
        full if tame else draw(st.sampled_from([full, "{" + names[0] + "}", "fixed", "", "{nope}"]))
    )
    generate: dict[str, Any] = {"version": 1 if tame else draw(st.sampled_from([1, 2, "1"]))}
    generate["address"] = address
    if draw(st.booleans()):
        runs = [4, 64, 256] if tame else [1, 4, 256, 257, 0, -1, 10**30, 2.5, "9"]
        generate["max_runs"] = draw(st.sampled_from(runs))
    if draw(st.booleans()):
        removal = ["stop", "forget", "finish"] + ([] if tame else ["later"])
        generate["on_remove"] = draw(st.sampled_from(removal))
    fragments = GOOD_FRAGMENTS if tame else FRAGMENTS
    doc: dict[str, Any] = {
        "generate": generate,
        "base": BASES[0] if tame else draw(st.sampled_from(BASES)),
    }
    doc["axis"] = {
        name: [
            {"key": key, **draw(st.sampled_from(fragments))}
            if tame or draw(st.integers(0, 10))
            else draw(st.sampled_from(fragments))  # an element without a key
            for key in elements
        ]
        for name, elements in axes.items()
    }

    def selector() -> dict[str, Any]:
        pool = names if tame else [*names, "ghost"]
        chosen = draw(st.lists(st.sampled_from(pool), min_size=int(tame), max_size=3, unique=True))
        return {
            axis: draw(
                st.sampled_from(axes.get(axis) or keys)
                | st.lists(st.sampled_from(axes.get(axis) or keys), min_size=1, max_size=3)
            )
            for axis in chosen
        }

    for table, limit in (("exclude", 6), ("include", 3)):
        if draw(st.integers(0, 2)) == 0:
            doc[table] = [selector() for _ in range(draw(st.integers(0, limit)))]
    if draw(st.integers(0, 2)) == 0:
        doc["override"] = [
            {"match": selector(), **draw(st.sampled_from(fragments))}
            for _ in range(draw(st.integers(0, 3)))
        ]
    if not tame and draw(st.booleans()):
        doc["moved"] = [
            draw(
                st.sampled_from(
                    [
                        {"axis": names[0], "from": "old", "to": keys[0]},
                        {"from_prefix": "old/prefix"},
                        {"from": "old/address", "to": selector()},
                        {"axis": "ghost", "from": 1, "to": []},
                    ]
                )
            )
            for _ in range(draw(st.integers(0, 2)))
        ]
    if not tame and draw(st.booleans()):
        doc["removed"] = [
            {"axis": draw(st.sampled_from([*names, "ghost"])), "key": "gone", "on_remove": "stop"}
        ]
    try:
        text = tomlkit.dumps(doc)
    except Exception:  # a document tomlkit cannot write: not an input anyone can commit
        assume(False)
    return draw(edited(text)) if not tame and draw(st.integers(0, 2)) == 0 else text


@FUZZ
@given(generators())
def test_generators(text: str) -> None:
    GENERATOR.parent.mkdir(parents=True, exist_ok=True)
    GENERATOR.write_bytes(text.encode("utf-8", "surrogatepass"))

    def call() -> object:
        runs, product, issues = load_generator_file(FOUND)
        for issue in issues:
            assert issue.message and issue.file == FOUND.relpath, issue
        if any(issue.severity == "error" for issue in issues):
            assert not runs and product is None
            return None
        assert len(runs) <= HARD_MAX_RUNS
        for run in runs:
            assert relative_path_problem(run.address) is None, run.address
            assert escape_text(run.address) == run.address, run.address
        return runs

    exercise("generators", call, (), refused=lambda runs: runs is None)


# --------------------------------------------------------------------------- policy, smoke

GLOBS = ["**", "tb/*", "hle/**", "*", "", " ", "[", "[!a]*", "tb/[a-z]", "*" * 2000,
         "a*" * 300 + "b", "\x00", "../**", "tb/a.toml", "**/**/**"]  # fmt: skip
MODELS = ["openai/*", "*", "anthropic/claude", "", "q:l", "[", "*" * 500]
NUMBERS: list[Any] = [0, 1, 5, 5000, -1, 10**13, 10**30, 2.5, float("nan"), float("inf"),
                      -0.0, True, "5", []]  # fmt: skip
RUNS = [
    desired("hle/parity"),
    desired("hle/other", task_set=None),
    desired("tb/a", "terminal-bench-2-1", task_set=None, harness="codex"),
    desired("tb/b", "terminal-bench-2-1", task_set=None, harness="claude-code"),
    desired("tools/x", "toolathlon-verified", task_set=None),
]


def _value(draw: st.DrawFn, key: str) -> Any:
    if key in ("match", "models", "harnesses", "addresses"):
        pool = MODELS if key == "models" else GLOBS
        return draw(
            st.lists(st.sampled_from(pool), max_size=4)
            | st.sampled_from(pool)
            | st.sampled_from(NUMBERS)
        )
    if key == "effect":
        return draw(st.sampled_from(["deny", "warn", "allow", 1]))
    if key in ("name", "benchmark", "task_set"):
        return draw(st.sampled_from(["r", "HLE", "terminal-bench-2-1", "parity", "", "\x1b[2J"]))
    return draw(st.sampled_from(NUMBERS))


@st.composite
def rule_tables(draw: st.DrawFn, keys: tuple[str, ...], table: str) -> str:
    tables = []
    for _ in range(draw(st.integers(0, 4))):
        chosen = draw(st.lists(st.sampled_from([*keys, "bogus"]), max_size=len(keys), unique=True))
        tables.append({key: _value(draw, key) for key in chosen})
    shape: Any = tables if draw(st.integers(0, 8)) else draw(st.sampled_from([{}, "x", 3]))
    try:
        text = tomlkit.dumps({table: shape})
    except Exception:
        assume(False)
    if draw(st.booleans()):
        text = "[tool.osmosis-reconciler]\n" + text.replace(
            f"[[{table}]]", f"[[tool.osmosis-reconciler.{table}]]"
        )
        name = "pyproject.toml"
    else:
        name = "osmosis.toml"
    text = draw(edited(text)) if draw(st.integers(0, 4)) == 0 else text
    return name + "\n" + text


def _settings(document: str) -> dict[str, Any]:
    name, text = document.split("\n", 1)
    for old in ("osmosis.toml", "pyproject.toml"):
        (WORK / old).unlink(missing_ok=True)
    (WORK / name).write_bytes(text.encode("utf-8", "surrogatepass"))
    return load_project_settings(WORK)


POLICY_KEYS = ("name", "match", "effect", "benchmark", "models", "harnesses", "task_set",
               "max_attempts", "max_cost_usd")  # fmt: skip
SMOKE_KEYS = ("addresses", "above", "tasks", "min_score")


@FUZZ
@given(rule_tables(POLICY_KEYS, "policy"))
def test_policy_rules(document: str) -> None:
    def call() -> object:
        rules = _settings(document).get("policy", ())
        check_policy(RUNS, rules, WORK)
        plan = compute_plan(RUNS, lock(), observation(), settings(policy=rules))
        render_text(plan, color=False)
        return plan

    exercise("policy rules", call, (UsageError,))


@FUZZ
@given(rule_tables(SMOKE_KEYS, "smoke"))
def test_smoke_rules(document: str) -> None:
    def call() -> object:
        rules = _settings(document).get("smoke", ())
        plan = compute_plan(RUNS, lock(), observation(), settings(smoke=rules))
        render_text(plan, color=False)
        return plan

    exercise("smoke rules", call, (UsageError,))
