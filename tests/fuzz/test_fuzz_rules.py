"""Fuzz targets (issue 36): run generators, policy rules and smoke rules, structure-aware.

Each document is built as data first (axes with elements and fragments, excludes that
name existing and unknown keys, ``[[policy]]`` tables with globs, budgets and effects,
``[[smoke]]`` thresholds), sometimes hostile in shape (36 axes of two elements, a
``max_runs`` of 10^30, a glob of 2,000 stars), written as TOML and sometimes edited further
(``strategies.edited``). Each must end in a result or a clear error: a generator in its
issues (and never more than ``HARD_MAX_RUNS`` runs, each address a clean relative path),
rules in a ``UsageError`` naming the settings file; the rules that load then drive
``check_policy`` and a whole ``compute_plan`` and its text render.

Generators (``generator_examples``): a strategy that draws names and values at random
reaches expansion rarely (9% of 150 examples: a duplicate key, an axis clash or an
exclude matching nothing stops it first), so most examples are valid by construction
(``valid_generators``: each axis over its own config leaf with distinct values) and must
expand to exactly the runs they describe; some break one rule (``near_miss``) and must be
refused; the rest are the hostile ones (``generators``). The table's ``reached`` column
counts the examples whose cells were expanded.
"""

from __future__ import annotations

import atexit
import copy
import itertools
import os
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

import tomlkit
from hypothesis import assume, given
from hypothesis import strategies as st

from reconciler.config.discover import Found
from reconciler.config.generator import HARD_MAX_RUNS, expand_generator
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

from .conftest import exercise, fuzz_target

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


# Generators valid by construction: each axis owns config leaves no other axis sets, and
# its elements give them distinct values, so no two cells clash or are one run twice.
MODELS_POOL = [
    {"type": "provider", "model": m, "api_key_secret": secret}
    for m, secret in (
        ("openai/gpt-5", "OPENAI_API_KEY"),
        ("openai/gpt-5.2", "OPENAI_API_KEY"),
        ("openai/gpt-5-mini", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4", "ANTHROPIC_API_KEY"),
        ("anthropic/claude-opus-4-1", "ANTHROPIC_API_KEY"),
        ("google/gemini-2.5-pro", "GEMINI_API_KEY"),
    )
]
TASKS_POOL = ["terminal-bench/git-multibranch", "terminal-bench/hello-world",
              *(f"terminal-bench/task-{i:02d}" for i in range(6))]  # fmt: skip
DIMENSIONS: dict[str, tuple[tuple[str, ...], list[Any]]] = {
    # dimension: (the leaf its elements set, the distinct values they take)
    "model": (("agent", "model"), MODELS_POOL),
    "harness": (("agent", "harness"), ["codex", "terminus-2", "claude-code"]),
    "attempts": (("execution", "attempts_per_task"), [1, 2, 3, 4, 5]),
    "concurrency": (("execution", "max_concurrent_attempts"), [1, 2, 4, 8]),
    "timeout": (("execution", "timeout_multiplier"), [1.0, 1.5, 2.0, 3.0]),
    "tasks": (("tasks", "task_names"), [[t] for t in TASKS_POOL]),
    "seed": (("env", "SEED"), ["1", "2", "3", "4", "5", "6"]),
}
# Names from pools, not ``st.from_regex``: Hypothesis keeps every example's choices, and a
# name drawn character by character made the process grow by ~40 MB per 1,000 examples
# (past ``make fuzz``'s 300 MiB by example 6,000).
ELEMENT_KEYS = st.sampled_from(
    ["a", "b", "c", "0", "1", "9", "x.y", "k_1", "a-b", "gpt-5", "gpt-5.2", "v1.0", "2x",
     "long-key.with_all-3", "z" * 40, "0.0", "a..b", "a__b", "x-", "tb"]
)  # fmt: skip
"""Element keys: every one matches the rule (lowercase, digits, ``.``, ``_``, ``-``)."""
AXIS_NAMES = st.sampled_from(["model", "bench", "m2", "size", "a", "b", "c", "x_y", "k-1"])


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for part in reversed(path[:-1]):
        out = {part: out}
    return out


class Drawn:
    """A generator document drawn as data, with the cells it must expand to."""

    def __init__(self, doc: dict[str, Any], axes: dict[str, list[str]]):
        self.doc, self.axes = doc, axes
        self.kept: list[tuple[str, ...]] = []
        """The product's cells the excludes leave (an include adds one more each)."""

    @property
    def runs(self) -> int:
        return len(self.kept) + len(self.doc.get("include", []))


@st.composite
def valid_generators(draw: st.DrawFn) -> Drawn:
    """A generator that must expand: 1-4 axes (of 1-6 elements, at most 256 cells), each
    over its own dimension; excludes that each remove a cell, includes that bring excluded
    cells back, overrides on leaves no axis sets, and well-formed moves and removals."""
    dims = draw(st.lists(st.sampled_from(sorted(DIMENSIONS)), min_size=1, max_size=4,
                         unique=True))  # fmt: skip
    names = draw(st.lists(AXIS_NAMES, min_size=len(dims), max_size=len(dims), unique=True))
    elements: dict[str, list[dict[str, Any]]] = {}
    axes: dict[str, list[str]] = {}
    product = 1
    for name, dim in zip(names, dims, strict=True):
        path, values = DIMENSIONS[dim]
        most = max(1, min(len(values), 6, HARD_MAX_RUNS // product))
        chosen = draw(st.lists(st.sampled_from(values), min_size=1, max_size=most,
                               unique_by=repr))  # fmt: skip
        keys = draw(st.lists(ELEMENT_KEYS, min_size=len(chosen), max_size=len(chosen),
                             unique=True))  # fmt: skip
        product *= len(chosen)
        axes[name] = keys
        elements[name] = [{"key": k, **_nested(path, v)} for k, v in zip(keys, chosen, strict=True)]
    order = draw(st.permutations(names))
    base = copy.deepcopy(BASES[0])
    if draw(st.booleans()):
        base["env"] = {"RUN": "fuzz"}
    doc: dict[str, Any] = {
        "generate": {"version": 1, "address": "/".join("{" + n + "}" for n in order)},
        "base": base,
        "axis": elements,
    }
    drawn = Drawn(doc, axes)
    cells = list(itertools.product(*(axes[n] for n in names)))
    kept = set(cells)
    excludes = []
    for _ in range(draw(st.integers(0, 3)) if len(cells) > 1 else 0):
        chosen_axes = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names),
                                    unique=True))  # fmt: skip
        picked = {a: draw(st.lists(st.sampled_from(axes[a]), min_size=1, max_size=2,
                                   unique=True)) for a in chosen_axes}  # fmt: skip
        hit = {c for c in kept if all(c[names.index(a)] in ks for a, ks in picked.items())}
        if not hit or hit == kept:
            continue  # it would match nothing new, or leave nothing
        kept -= hit
        excludes.append({a: ks[0] if len(ks) == 1 and draw(st.booleans()) else ks
                         for a, ks in picked.items()})  # fmt: skip
    if excludes:
        doc["exclude"] = excludes
        gone = sorted(set(cells) - kept)
        back = draw(st.lists(st.sampled_from(gone), max_size=2, unique=True))
        if back:
            doc["include"] = [dict(zip(names, cell, strict=True)) for cell in back]
    drawn.kept = sorted(kept)
    final = drawn.kept + [tuple(i[n] for n in names) for i in doc.get("include", [])]
    for n in range(draw(st.integers(0, 2))):
        cell = draw(st.sampled_from(final))
        match_axes = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names),
                                   unique=True))  # fmt: skip
        fragment: dict[str, Any] = draw(st.sampled_from([
            {"env": {f"OVERRIDE_{n}": "on"}},
            {"env": {"NOTE": f"n{n}"}},
        ]))  # fmt: skip
        if "concurrency" not in dims and draw(st.booleans()):
            fragment = {"execution": {"max_concurrent_attempts": 2}}  # a leaf no axis sets
        doc.setdefault("override", []).append(
            {"match": {a: cell[names.index(a)] for a in match_axes}, **fragment}
        )
    if draw(st.booleans()):
        doc["generate"]["max_runs"] = draw(st.integers(drawn.runs, HARD_MAX_RUNS))
    if draw(st.booleans()):
        doc["generate"]["on_remove"] = draw(st.sampled_from(["stop", "forget", "finish"]))
    first = names[0]
    if draw(st.integers(0, 3)) == 0:
        old = draw(ELEMENT_KEYS.filter(lambda k: k not in axes[first]))
        doc["removed"] = [{"axis": first, "key": old,
                           "on_remove": draw(st.sampled_from(["stop", "forget", "finish"]))}]  # fmt: skip
    if draw(st.integers(0, 3)) == 0:
        doc["moved"] = [draw(st.sampled_from([
            {"from_prefix": "old/prefix"},
            # Not one of ``ELEMENT_KEYS``, so never still an element.
            {"axis": first, "from": "renamed-away", "to": axes[first][0]},
        ]))]  # fmt: skip
    return drawn


NEAR_MISSES = (
    "max_runs", "duplicate", "clash", "exclude", "include", "key", "address", "version",
    "on_remove", "no key", "unknown", "moved", "override", "wide",
)  # fmt: skip
"""One rule of docs/generators.md broken in an otherwise valid generator: each must be
refused with an issue (a clear error), never expanded."""


def near_miss(draw: st.DrawFn, drawn: Drawn) -> tuple[dict[str, Any], str]:
    doc = copy.deepcopy(drawn.doc)
    axes = drawn.axes
    names = list(axes)
    first = names[0]
    # The elements of a cell that is kept: a rule broken on excluded cells breaks nothing.
    kept = {a: axes[a].index(k) for a, k in zip(names, drawn.kept[0], strict=True)}
    how = draw(st.sampled_from(NEAR_MISSES))
    if how == "max_runs" and drawn.runs > 1:
        doc["generate"]["max_runs"] = draw(st.integers(1, drawn.runs - 1))
    elif how == "duplicate":  # its twin's cells are the kept cell's config again
        doc.pop("override", None)  # (an override matching the original would tell them apart)
        element = doc["axis"][first][kept[first]]
        doc["axis"][first].append({**copy.deepcopy(element), "key": element["key"] + "-twin"})
    elif how == "clash" and len(names) > 1:  # the kept cell gets one leaf from two axes
        other = doc["axis"][names[1]][kept[names[1]]]
        leaf = {k: v for k, v in doc["axis"][first][kept[first]].items() if k != "key"}
        other.update(copy.deepcopy(leaf))
    elif how == "exclude":
        doc.setdefault("exclude", []).append({first: "not-an-element"})
    elif how == "include":
        doc.setdefault("include", []).append(dict(zip(names, drawn.kept[0], strict=True)))
    elif how == "key":
        doc["axis"][first][0]["key"] = draw(st.sampled_from(["Upper", "a b", "../x", "-x", ""]))
    elif how == "address":
        doc["generate"]["address"] = draw(st.sampled_from(
            ["{" + first + "}/{" + first + "}", "{ghost}", "fixed", "", f"x{{{first}}}"]
            + (["{" + first + "}"] if len(names) > 1 else [])
        ))  # fmt: skip
    elif how == "version":
        doc["generate"]["version"] = draw(st.sampled_from([2, "1", 0, 1.0]))
    elif how == "on_remove":
        doc["generate"]["on_remove"] = draw(st.sampled_from(["later", "", "STOP"]))
    elif how == "no key":
        del doc["axis"][first][0]["key"]
    elif how == "unknown":
        doc[draw(st.sampled_from(["axes", "runs", "generator"]))] = {"x": 1}
    elif how == "moved":
        doc["moved"] = [{"axis": first, "from": axes[first][0], "to": axes[first][0]}]
    elif how == "override":
        doc["override"] = [{"match": {first: "not-an-element"}, "env": {"X": "1"}}]
    else:  # wide (and a rule the drawn generator cannot break): 2^n cells, refused by
        # their count before any is built
        n = draw(st.integers(20, 40))
        doc["axis"] = {f"a{i}": [{"key": "x", "env": {f"A{i}": "x"}},
                                 {"key": "y", "env": {f"A{i}": "y"}}] for i in range(n)}  # fmt: skip
        doc["generate"]["address"] = "/".join(f"{{a{i}}}" for i in range(n))
        for table in ("exclude", "include", "override", "moved", "removed"):
            doc.pop(table, None)
        how = "wide"
    return doc, how


class Example(NamedTuple):
    text: str
    kind: str
    """``valid``, ``near miss: RULE`` or ``hostile``."""
    runs: int | None = None
    """For a valid one: how many runs it must expand to."""


VALID_SHARE, NEAR_SHARE = 13, 4
"""Of every 20 examples: 13 valid, 4 near misses, 3 hostile (``generators``)."""


@st.composite
def generator_examples(draw: st.DrawFn) -> Example:
    """Mostly generators that must expand (so expansion, merging and every cell's config
    check run), some one rule away from valid, some hostile in shape or text."""
    share = draw(st.integers(0, 19))
    if share >= VALID_SHARE + NEAR_SHARE:
        return Example(draw(generators()), "hostile")
    drawn = draw(valid_generators())
    if share < VALID_SHARE:
        return Example(tomlkit.dumps(drawn.doc), "valid", drawn.runs)
    doc, how = near_miss(draw, drawn)
    return Example(tomlkit.dumps(doc), f"near miss: {how}")


@fuzz_target
@given(generator_examples())
def test_generators(example: Example) -> None:
    GENERATOR.parent.mkdir(parents=True, exist_ok=True)
    GENERATOR.write_bytes(example.text.encode("utf-8", "surrogatepass"))

    def call() -> Loaded:
        runs, product, issues = load_generator_file(FOUND)
        for issue in issues:
            assert issue.message and issue.file == FOUND.relpath, issue
        cells = _expanded_cells(example.text)
        if any(issue.severity == "error" for issue in issues):
            assert not runs and product is None
            assert example.kind != "valid", [i.message for i in issues]
            return Loaded(None, cells)
        assert len(runs) <= HARD_MAX_RUNS
        for run in runs:
            assert relative_path_problem(run.address) is None, run.address
            assert escape_text(run.address) == run.address, run.address
        if example.runs is not None:
            assert len(runs) == example.runs, (len(runs), example.runs)
        assert not example.kind.startswith("near miss"), example.kind
        return Loaded(runs, cells)

    exercise(
        "generators",
        call,
        (),
        refused=lambda loaded: loaded.runs is None,
        reached=lambda loaded: loaded.cells > 0,
        reached_means="cells expanded",
    )


class Loaded(NamedTuple):
    runs: list[Any] | None
    """The desired runs; None: refused with issues."""
    cells: int
    """Cells the expander built (some may still fail their config check)."""


def _expanded_cells(text: str) -> int:
    """How many cells ``expand_generator`` builds from ``text`` (0: it stops before)."""
    try:
        parsed = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return 0
    expansion = expand_generator(parsed, text, FOUND.relpath, FOUND.address)
    return len(expansion.cells) if expansion.product is not None else 0


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


@fuzz_target
@given(rule_tables(POLICY_KEYS, "policy"))
def test_policy_rules(document: str) -> None:
    def call() -> object:
        rules = _settings(document).get("policy", ())
        check_policy(RUNS, rules, WORK)
        plan = compute_plan(RUNS, lock(), observation(), settings(policy=rules))
        render_text(plan, color=False)
        return plan

    exercise("policy rules", call, (UsageError,))


@fuzz_target
@given(rule_tables(SMOKE_KEYS, "smoke"))
def test_smoke_rules(document: str) -> None:
    def call() -> object:
        rules = _settings(document).get("smoke", ())
        plan = compute_plan(RUNS, lock(), observation(), settings(smoke=rules))
        render_text(plan, color=False)
        return plan

    exercise("smoke rules", call, (UsageError,))
