"""A ``[decide]`` table read by the config loader (issue 39, phase 2 hooks): validated with
the other tables, carried on the desired run, never sent to the Platform nor digested."""

from __future__ import annotations

from pathlib import Path

from reconciler.config import load_configs
from reconciler.model import DecisionSpec

CONFIG = """\
[experiment]
benchmark = "terminal-bench-2-1"

[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "anthropic/claude-sonnet-4.5"
api_key_secret = "ANTHROPIC_API_KEY"
"""
DECIDE = "\n[decide]\nmargin_pp = 5\nseed = 7\nlooks = 3\n"

GENERATOR = """\
[generate]
version = 1
address = "{model}"

[base.experiment]
benchmark = "terminal-bench-2-1"

[base.agent]
harness = "codex"

[base.decide]
margin_pp = 4
seed = 1
baseline = "tb/accepted"

[[axis.model]]
key = "gpt-5-2"
agent.model = { type = "provider", model = "openai/gpt-5.2", api_key_secret = "OPENAI_API_KEY" }

[[axis.model]]
key = "gpt-5"
agent.model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }
"""


def load(tmp_path: Path, text: str, name: str = "ab.toml"):
    bench = tmp_path / "benchmarks"
    bench.mkdir(exist_ok=True)
    (bench / name).write_text(text, encoding="utf-8")
    return load_configs(tmp_path, "benchmarks")


def messages(result) -> list[str]:
    return [f"{i.location()}: {i.key}: {i.message}" for i in result.errors]


def test_a_config_with_two_agents_carries_its_decision(tmp_path: Path) -> None:
    result = load(tmp_path, CONFIG + DECIDE)
    assert result.ok, messages(result)
    (run,) = result.runs
    assert run.decide == DecisionSpec(margin_pp=5.0, seed=7, looks=3, where="benchmarks/ab.toml")
    assert "decide" not in run.spec


def test_the_table_changes_neither_the_request_nor_its_digest(tmp_path: Path) -> None:
    plain = load(tmp_path, CONFIG).runs[0]
    deciding = load(tmp_path, CONFIG + DECIDE).runs[0]
    assert plain.decide is None
    assert deciding.spec == plain.spec
    assert deciding.spec_digest == plain.spec_digest


def test_a_mistake_in_the_table_is_an_error_with_its_line(tmp_path: Path) -> None:
    text = CONFIG + DECIDE.replace("looks = 3", 'looks = "3"\nfutilty = "none"')
    result = load(tmp_path, text)
    assert not result.ok
    assert result.runs == [] or all(r.address != "ab" for r in result.runs)
    lines = text.splitlines()
    looks_line = next(i for i, line in enumerate(lines, 1) if line.startswith("looks"))
    typo_line = next(i for i, line in enumerate(lines, 1) if line.startswith("futilty"))
    found = messages(result)
    assert (
        f"benchmarks/ab.toml:{looks_line}:9: decide.looks: must be a whole number, got a string"
        in found
    )
    assert any(
        m.startswith(f"benchmarks/ab.toml:{typo_line}:1: decide.futilty: Unrecognized key")
        for m in found
    ), found


def test_one_agent_needs_a_baseline(tmp_path: Path) -> None:
    one = CONFIG[: CONFIG.index("[[agents]]", CONFIG.index("[[agents]]") + 1)]
    result = load(tmp_path, one + DECIDE)
    assert not result.ok
    assert any("needs two sides" in m for m in messages(result)), messages(result)
    result = load(tmp_path, one + DECIDE + 'baseline = "tb/accepted"\n')
    assert result.ok, messages(result)
    assert result.runs[0].decide is not None
    assert result.runs[0].decide.baseline == "tb/accepted"


def test_a_generator_base_gives_every_cell_the_decision(tmp_path: Path) -> None:
    result = load(tmp_path, GENERATOR, "cmp.matrix.toml")
    assert result.ok, messages(result)
    assert [r.address for r in result.runs] == ["cmp/gpt-5", "cmp/gpt-5-2"]
    for run in result.runs:
        assert run.decide is not None
        assert run.decide.margin_pp == 4.0
        assert run.decide.baseline == "tb/accepted"
        assert "decide" not in run.spec


def test_a_generator_cell_with_a_bad_table_is_reported(tmp_path: Path) -> None:
    result = load(
        tmp_path, GENERATOR.replace("margin_pp = 4", "margin_pp = 400"), "cmp.matrix.toml"
    )
    assert not result.ok
    assert any(
        "decide.margin_pp" in m and "above 0 and below 100" in m for m in messages(result)
    ), messages(result)
