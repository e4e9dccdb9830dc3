"""The spec digest is canonical: TOML style never changes it, a change to the body always does.

Configs are generated as data, rendered to TOML in many styles by the renderer below (key
order, inline vs. standard tables, dotted keys, inline arrays of tables, quoting, escapes,
comments, whitespace), parsed back with the real loader code and digested.
"""

from __future__ import annotations

import json
import random
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.config import build_spec, load_configs, rules, spec_digest
from reconciler.config.validate import check, looks_like_path
from reconciler.model import digest
from tests.support.bodies import submit_body

# ----------------------------------------------------------------------------- generation

SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_ENDPOINT_KEY", "JUDGE_KEY_2")
HARNESSES = (None, "codex", "claude-code", "terminus-2")
RESERVED = set(SECRETS) | rules.RESERVED_ENV_NAMES | set(rules.HARNESS_CREDENTIALS.values())

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
short = st.text(st.characters(exclude_categories=["Cs"]), max_size=10)
non_blank = text.filter(lambda s: s.strip() != "")
# [experiment].benchmark is a catalog reference: never empty, never a path (validate.py).
catalog_ref = non_blank.filter(lambda s: not looks_like_path(s))
env_name = st.from_regex(r"\A[A-Z][A-Z0-9_]{0,7}\Z").filter(lambda n: n not in RESERVED)
header_name = st.from_regex(r"\AX-[A-Za-z]{1,8}\Z")
# [execution] values of the types rules.EXECUTION_TYPES accepts.
_KIND_VALUES = {
    "integer": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "string": short,
}


def exec_value(key: str):
    kinds, _example = rules.EXECUTION_TYPES[key]
    return st.one_of(*(_KIND_VALUES[kind] for kind in kinds))


@st.composite
def models(draw):
    kind = draw(st.sampled_from(sorted(rules.MODEL_VARIANTS)))
    if kind == "hosted":
        return {"type": kind, "base_model": draw(text), "lora_model_name": draw(text)}
    model = {"type": kind, "model": draw(text), "api_key_secret": draw(st.sampled_from(SECRETS))}
    if kind == "endpoint":
        model["base_url"] = draw(text)
        if draw(st.booleans()):
            model["extra_headers"] = draw(st.dictionaries(header_name, short, max_size=2))
    return model


@st.composite
def agents(draw):
    agent: dict[str, Any] = {}
    harness = draw(st.sampled_from(HARNESSES))
    if harness is not None:
        agent["harness"] = harness
    agent["model"] = draw(models())
    if draw(st.booleans()):
        agent["env"] = draw(st.dictionaries(env_name, short, max_size=3))
    return agent


@st.composite
def configs(draw):
    doc: dict[str, Any] = {"experiment": {"benchmark": draw(catalog_ref)}}
    if draw(st.booleans()):
        tasks: dict[str, Any] = {}
        if draw(st.booleans()):
            tasks["task_set"] = "parity"
        for key in ("task_names", "categories"):
            if draw(st.booleans()):
                tasks[key] = draw(st.lists(non_blank, max_size=3))
        doc["tasks"] = tasks
    doc["agents"] = draw(st.lists(agents(), min_size=1, max_size=3))
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(rules.EXECUTION_KEYS[:-1]), unique=True, max_size=4))
        execution = {key: draw(exec_value(key)) for key in keys}
        if draw(st.booleans()):
            execution["judge_api_key_secret"] = draw(st.sampled_from(SECRETS))
        doc["execution"] = execution
    for section in ("verifier", "secrets"):
        if draw(st.booleans()):
            doc[section] = {"required": draw(st.lists(st.sampled_from(SECRETS), max_size=3))}
    if draw(st.booleans()):
        doc["env"] = draw(st.dictionaries(env_name, short, max_size=3))
    return doc


# ----------------------------------------------------------------------------- rendering


@dataclass(frozen=True)
class Style:
    seed: int
    inline_tables: bool
    agents_inline: bool
    dotted_model: bool
    quote_keys: bool
    strings: str  # basic | escaped | literal
    comments: bool
    spacing: str


styles = st.builds(
    Style,
    seed=st.integers(0, 2**32),
    inline_tables=st.booleans(),
    agents_inline=st.booleans(),
    dotted_model=st.booleans(),
    quote_keys=st.booleans(),
    strings=st.sampled_from(["basic", "escaped", "literal"]),
    comments=st.booleans(),
    spacing=st.sampled_from([" = ", "=", "  =   ", "\t=\t"]),
)


class Renderer:
    def __init__(self, style: Style) -> None:
        self.style = style
        self.rng = random.Random(style.seed)

    def key(self, name: str) -> str:
        bare = name.replace("_", "").replace("-", "").isalnum() and name.isascii()
        if bare and not self.style.quote_keys:
            return name
        return self.string(name)

    def string(self, value: str) -> str:
        literal_ok = "'" not in value and all(c >= " " and c != "\x7f" for c in value)
        if self.style.strings == "literal" and literal_ok:
            return f"'{value}'"
        out = []
        for c in value:
            if c == '"':
                out.append('\\"')
            elif c == "\\":
                out.append("\\\\")
            elif c < " " or c == "\x7f" or (self.style.strings == "escaped" and ord(c) > 126):
                out.append(f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
            else:
                out.append(c)
        return '"' + "".join(out) + '"'

    def value(self, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, list):
            return "[" + ", ".join(self.value(v) for v in value) + "]"
        return (
            "{"
            + ", ".join(
                f"{self.key(k)}{self.style.spacing}{self.value(v)}"
                for k, v in self.shuffled(value.items())
            )
            + "}"
        )

    def shuffled(self, items):
        items = list(items)
        self.rng.shuffle(items)
        return items

    def comment(self) -> list[str]:
        return (
            [f"# note {self.rng.randint(0, 99)}  [not.a.table] x = 1", ""]
            if (self.style.comments and self.rng.random() < 0.5)
            else []
        )

    def assign(self, key: str, value: Any) -> str:
        trailer = "  # trailing" if self.style.comments and self.rng.random() < 0.3 else ""
        return f"{key}{self.style.spacing}{self.value(value)}{trailer}"

    def render(self, doc: dict[str, Any]) -> str:
        prelude: list[str] = []
        blocks: list[list[str]] = []
        for section, body in self.shuffled(doc.items()):
            if section == "agents":
                if self.style.agents_inline:
                    prelude.append(self.assign("agents", body))
                else:
                    blocks.append([line for agent in body for line in self.agent(agent)])
            elif self.style.inline_tables:
                prelude.append(self.assign(self.key(section), body))
            else:
                lines = self.comment() + [f"[{self.key(section)}]"]
                lines += [self.assign(self.key(k), v) for k, v in self.shuffled(body.items())]
                blocks.append(lines)
        # Arrays of tables must keep their file order relative to each other only; whole
        # blocks may move.
        lines = self.comment() + prelude
        for block in blocks:
            lines += [""] + block
        return "\n".join(lines) + "\n"

    def agent(self, agent: dict[str, Any]) -> list[str]:
        lines = self.comment() + ["[[agents]]"]
        subtables: list[list[str]] = []
        for key, value in self.shuffled(agent.items()):
            if key == "model" and self.style.dotted_model:
                for mk, mv in self.shuffled(value.items()):
                    lines.append(self.assign(f"model.{self.key(mk)}", mv))
            elif isinstance(value, dict) and not self.style.inline_tables:
                sub = [f"[agents.{key}]"]
                nested = []
                for mk, mv in self.shuffled(value.items()):
                    if isinstance(mv, dict):
                        nested.append(
                            [f"[agents.{key}.{mk}]"]
                            + [self.assign(self.key(hk), hv) for hk, hv in mv.items()]
                        )
                    else:
                        sub.append(self.assign(self.key(mk), mv))
                subtables.append(sub)
                subtables.extend(nested)
            else:
                lines.append(self.assign(self.key(key), value))
        for sub in subtables:
            lines += [""] + sub
        return lines


def spec_of(text_: str) -> dict[str, Any]:
    return build_spec(tomllib.loads(text_))


# ----------------------------------------------------------------------------- properties

PROFILE = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROFILE
@given(configs(), styles, styles)
def test_style_never_changes_the_digest(doc, style_a, style_b):
    text_a = Renderer(style_a).render(doc)
    text_b = Renderer(style_b).render(doc)
    parsed = tomllib.loads(text_a)
    assert parsed == doc  # the renderer is faithful, so the comparison below means something
    assert not [p for p in check(parsed) if p.severity == "error"]
    spec_a, spec_b = spec_of(text_a), spec_of(text_b)
    assert spec_digest(spec_a) == spec_digest(spec_b)
    assert spec_digest(spec_a) == digest(spec_a)


def _mutations(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """Edits that each change the submit body."""
    return [
        (
            "benchmark",
            lambda d: d["experiment"].__setitem__("benchmark", d["experiment"]["benchmark"] + "x"),
        ),
        ("add env", lambda d: d.setdefault("env", {}).__setitem__("ZZ_NEW_VAR", "1")),
        (
            "add agent env",
            lambda d: d["agents"][0].setdefault("env", {}).__setitem__("ZZ_AGENT_VAR", ""),
        ),
        (
            "model field",
            lambda d: d["agents"][-1]["model"].__setitem__(
                "lora_model_name" if d["agents"][-1]["model"]["type"] == "hosted" else "model",
                "changed/model-name",
            ),
        ),
        (
            "add agent",
            lambda d: d["agents"].append(
                {"model": {"type": "hosted", "base_model": "b", "lora_model_name": "l"}}
            ),
        ),
        (
            "attempts type",
            lambda d: d.setdefault("execution", {}).__setitem__(
                "attempts_per_task",
                1.0
                if d.get("execution", {}).get("attempts_per_task") == 1
                and type(d["execution"]["attempts_per_task"]) is int
                else 1,
            ),
        ),
        (
            "task names",
            lambda d: d.setdefault("tasks", {}).__setitem__(
                "task_names", list(d.get("tasks", {}).get("task_names", [])) + ["extra/task"]
            ),
        ),
        (
            "harness",
            lambda d: d["agents"][0].__setitem__(
                "harness", "codex" if d["agents"][0].get("harness") != "codex" else "claude-code"
            ),
        ),
        (
            "per-run secret",
            lambda d: d.setdefault("secrets", {}).__setitem__(
                "required", list(d.get("secrets", {}).get("required", [])) + ["NEW_SECRET"]
            ),
        ),
    ]


@PROFILE
@given(configs(), styles, styles, st.data())
def test_any_body_change_changes_the_digest(doc, style_a, style_b, data):
    name, mutate = data.draw(st.sampled_from(_mutations(doc)), label="mutation")
    changed = json.loads(json.dumps(doc))
    mutate(changed)
    spec_a = spec_of(Renderer(style_a).render(doc))
    spec_b = spec_of(Renderer(style_b).render(changed))
    assert spec_a != spec_b, name
    assert spec_digest(spec_a) != spec_digest(spec_b), name


@PROFILE
@given(configs(), st.data())
def test_agent_order_is_part_of_the_body(doc, data):
    spec = build_spec(doc)
    if len(spec["agents"]) < 2 or spec["agents"][0] == spec["agents"][1]:
        return  # identical agents in the body: swapping them is no change
    swapped = dict(doc, agents=[doc["agents"][1], doc["agents"][0], *doc["agents"][2:]])
    assert spec_digest(spec) != spec_digest(build_spec(swapped))


def test_digest_through_the_loader(tmp_path: Path):
    """Two files in different styles load to runs with the same digest; a third differs."""
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "a.toml").write_text(
        '[experiment]\nbenchmark = "hle"\n[tasks]\ntask_set = "parity"\n[[agents]]\n'
        'harness = "codex"\n[agents.model]\ntype = "provider"\nmodel = "openai/gpt-5"\n'
        'api_key_secret = "OPENAI_API_KEY"\n[execution]\nattempts_per_task = 2\n'
        'judge_api_key_secret = "OPENAI_API_KEY"\n[env]\nLOG_LEVEL = "info"\n'
    )
    (bench / "b.toml").write_text(
        "# same run, other style\nenv = { LOG_LEVEL = 'info' }\n"
        "execution = {judge_api_key_secret='OPENAI_API_KEY',attempts_per_task=2}\n"
        "agents = [ { model = { api_key_secret = \"OPENAI_API_KEY\", model = 'openai/gpt-5',"
        " type = \"\\u0070rovider\" }, harness = 'codex' } ]\n"
        "[tasks]\n\"task_set\" = 'parity'\n[experiment]\nbenchmark = 'hle'   # key\n"
    )
    (bench / "c.toml").write_text(
        (bench / "a.toml").read_text().replace("attempts_per_task = 2", "attempts_per_task = 3")
    )
    result = load_configs(tmp_path)
    assert result.ok, result.issues
    digests = {run.address: run.spec_digest for run in result.runs}
    assert digests["a"] == digests["b"] != digests["c"]
    # The §9.6 example body, verbatim.
    assert result.runs[0].spec == submit_body(
        "hle", task_set="parity", attempts=2, judge="OPENAI_API_KEY", env={"LOG_LEVEL": "info"}
    )
