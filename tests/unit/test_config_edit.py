"""Writing and editing configs with tomlkit (``reconciler.config.edit``): the generated
layout is the example configs' own, and edits keep every comment and line they do not
change."""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path

import pytest

from reconciler.config.edit import render_config, set_key, update_config
from reconciler.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "benchmarks"
COMPARISON = EXAMPLES / "comparisons" / "terminal-bench-codex-vs-claude-code.toml"


def example_paths() -> list[Path]:
    return sorted(EXAMPLES.rglob("*.toml"))


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


# --------------------------------------------------------------------------- render


@pytest.mark.parametrize(
    "path", [p for p in example_paths() if p != COMPARISON], ids=lambda p: p.stem
)
def test_rendering_an_example_s_data_reproduces_the_example_byte_for_byte(path: Path) -> None:
    # The examples use standard tables throughout (the comparison uses inline model
    # tables, a layout the generator does not choose); the generator writes that layout.
    text = path.read_text(encoding="utf-8")
    header = [line[2:] for line in text.split("\n\n", 1)[0].splitlines()]
    assert render_config(tomllib.loads(text), header) == text


def test_rendering_the_comparison_keeps_its_data_with_standard_model_tables() -> None:
    data = tomllib.loads(COMPARISON.read_text(encoding="utf-8"))
    text = render_config(data, ["two agents"])
    assert tomllib.loads(text) == data
    assert text.count("[agents.model]") == 2
    assert text.startswith("# two agents\n\n[experiment]\n")


def test_rendering_orders_tables_and_keys_like_the_schema_whatever_the_input_order() -> None:
    data = {
        "env": {"LOG_LEVEL": "info"},
        "execution": {"max_retries": 0, "attempts_per_task": 2},
        "agents": [{"model": {"api_key_secret": "K", "model": "m", "type": "provider"}}],
        "experiment": {"benchmark": "hle"},
    }
    text = render_config(data)
    assert text.index("[experiment]") < text.index("[[agents]]") < text.index("[execution]")
    assert text.index("[execution]") < text.index("[env]")
    model = text.split("[agents.model]\n", 1)[1].split("\n\n", 1)[0]
    assert model.splitlines() == ['type = "provider"', 'model = "m"', 'api_key_secret = "K"']
    assert "attempts_per_task = 2\nmax_retries = 0" in text


def test_rendering_escapes_strings_and_keeps_value_types() -> None:
    data = {
        "experiment": {"benchmark": 'quote " and \\ backslash é'},
        "agents": [{"model": {"type": "hosted", "base_model": "a", "lora_model_name": "b"}}],
        "execution": {"timeout_multiplier": 1.0, "attempts_per_task": 1, "judge_model": "x"},
        "env": {"A B": "tab\there"},
    }
    parsed = tomllib.loads(render_config(data))
    assert parsed == data
    assert type(parsed["execution"]["timeout_multiplier"]) is float


# --------------------------------------------------------------------------- set_key


def test_set_key_changes_one_line_and_keeps_its_trailing_comment() -> None:
    text = (
        '# header comment\n[experiment]\nbenchmark = "hle"\n\n[execution]\n'
        "# why three\nattempts_per_task = 3  # pass@3\nmax_retries = 1\n"
    )
    edited = set_key(text, ("execution", "attempts_per_task"), 5)
    assert changed_lines(text, edited) == [
        "-attempts_per_task = 3  # pass@3",
        "+attempts_per_task = 5  # pass@3",
    ]


def test_set_key_inside_an_inline_table_and_an_array_of_tables() -> None:
    text = COMPARISON.read_text(encoding="utf-8")
    edited = set_key(text, ("agents", 1, "model", "model"), "anthropic/claude-opus-4")
    assert changed_lines(text, edited) == [
        '-model = { type = "provider", model = "anthropic/claude-sonnet-4", '
        'api_key_secret = "ANTHROPIC_API_KEY" }',
        '+model = { type = "provider", model = "anthropic/claude-opus-4", '
        'api_key_secret = "ANTHROPIC_API_KEY" }',
    ]


def test_set_key_creates_a_missing_table_with_a_blank_line_before_the_next_header() -> None:
    text = COMPARISON.read_text(encoding="utf-8")
    edited = set_key(text, ("agents", 0, "env", "FOO"), "bar")
    assert tomllib.loads(edited)["agents"][0]["env"] == {"FOO": "bar"}
    assert '[agents.env]\nFOO = "bar"\n\n[[agents]]\nharness = "claude-code"' in edited
    assert edited.startswith(text.split("[[agents]]")[0])  # the comments above are kept


def test_set_key_none_removes_the_key_and_nothing_else() -> None:
    text = COMPARISON.read_text(encoding="utf-8")
    edited = set_key(text, ("execution", "max_retries"), None)
    assert changed_lines(text, edited) == ["-max_retries = 1"]
    assert set_key(text, ("verifier", "required"), None) == text


def test_set_key_names_a_path_that_does_not_exist() -> None:
    text = COMPARISON.read_text(encoding="utf-8")
    with pytest.raises(KeyError, match=r"agents\[5\]: no such array element"):
        set_key(text, ("agents", 5, "harness"), "codex")
    with pytest.raises(KeyError, match="experiment.benchmark is not a table"):
        set_key(text, ("experiment", "benchmark", "x"), 1)


def test_invalid_toml_is_a_config_error_with_the_line() -> None:
    with pytest.raises(ConfigError) as caught:
        set_key('[experiment]\nbenchmark = "hle\n', ("experiment", "benchmark"), "x", file="b.toml")
    issue = caught.value.issues[0]
    assert (issue.file, issue.line) == ("b.toml", 2)
    assert issue.message.startswith("Invalid TOML: ")


# --------------------------------------------------------------------------- update_config


def test_update_with_equal_data_returns_the_text_unchanged() -> None:
    for path in example_paths():
        text = path.read_text(encoding="utf-8")
        assert update_config(text, tomllib.loads(text)) == text, path.name


def test_update_touches_only_the_values_that_differ_and_keeps_every_comment() -> None:
    text = COMPARISON.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    data["agents"][0]["model"]["model"] = "openai/gpt-5.3"
    data["execution"]["attempts_per_task"] = 4
    del data["execution"]["max_retries"]
    data["execution"]["timeout_multiplier"] = 2.0
    edited = update_config(text, data)
    assert tomllib.loads(edited) == data
    assert changed_lines(text, edited) == [
        '-model = { type = "provider", model = "openai/gpt-5.2", api_key_secret = "OPENAI_API_KEY" }',
        '+model = { type = "provider", model = "openai/gpt-5.3", api_key_secret = "OPENAI_API_KEY" }',
        "-attempts_per_task = 3",
        "+attempts_per_task = 4",
        "-max_retries = 1",
        "+timeout_multiplier = 2.0",
    ]
    assert edited.startswith("# Two agents on the same Terminal-Bench 2.1 task")


def test_update_tells_integers_from_floats_and_booleans() -> None:
    text = "[execution]\ntimeout_multiplier = 1  # one\nflag = 1\n"
    edited = update_config(text, {"execution": {"timeout_multiplier": 1.0, "flag": True}})
    parsed = tomllib.loads(edited)
    assert type(parsed["execution"]["timeout_multiplier"]) is float
    assert parsed["execution"]["flag"] is True
    assert "timeout_multiplier = 1.0  # one" in edited


def test_update_adds_and_removes_agents_and_tables() -> None:
    text = COMPARISON.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    data["agents"].append(
        {"model": {"type": "hosted", "base_model": "Qwen/Qwen3-8B", "lora_model_name": "v3"}}
    )
    del data["env"]
    grown = update_config(text, data)
    assert tomllib.loads(grown) == data
    assert '[[agents]]\n\n[agents.model]\ntype = "hosted"' in grown
    assert grown.endswith(
        'lora_model_name = "v3"\n\n[execution]\nattempts_per_task = 3\n'
        "max_concurrent_attempts = 2\nmax_retries = 1\n"
    )
    data["agents"] = data["agents"][:1]
    shrunk = update_config(grown, data)
    assert tomllib.loads(shrunk) == data
    assert "claude-code" not in shrunk and "hosted" not in shrunk
