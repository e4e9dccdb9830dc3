"""Run generators: expansion and every generator error, read through ``load_configs`` from
real files (issue 25; docs/generators.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.config import load_configs
from reconciler.config.generator import expand_generator

HEAD = """\
[generate]
version = 1
address = "{benchmark}/{model}"

[base.agent]
harness = "codex"

[base.execution]
attempts_per_task = 1
max_concurrent_attempts = 2

[[axis.benchmark]]
key = "tb"
experiment.benchmark = "terminal-bench-2-1"
tasks.task_names = ["terminal-bench/git-multibranch"]

[[axis.benchmark]]
key = "gdpval"
experiment.benchmark = "gdpval"
execution.judge_api_key_secret = "OPENAI_API_KEY"

[[axis.model]]
key = "gpt-5-2"
agent.model = { type = "provider", model = "openai/gpt-5.2", api_key_secret = "OPENAI_API_KEY" }

[[axis.model]]
key = "gpt-5"
agent.model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }
"""


def load(tmp_path: Path, text: str, name: str = "cmp.matrix.toml"):
    bench = tmp_path / "benchmarks"
    bench.mkdir(exist_ok=True)
    (bench / name).write_text(text, encoding="utf-8")
    return load_configs(tmp_path, "benchmarks")


def messages(result) -> list[str]:
    return [f"{i.location()}: {i.key}: {i.message}" for i in result.errors]


def test_expansion_builds_plain_configs_with_key_addresses(tmp_path: Path) -> None:
    result = load(tmp_path, HEAD)
    assert result.ok, messages(result)
    assert [r.address for r in result.runs] == [
        "cmp/gdpval/gpt-5",
        "cmp/gdpval/gpt-5-2",
        "cmp/tb/gpt-5",
        "cmp/tb/gpt-5-2",
    ]
    spec = {r.address: r.spec for r in result.runs}["cmp/tb/gpt-5-2"]
    assert spec["agents"] == [
        {
            "harness": "codex",
            "model": {
                "type": "provider",
                "model": "openai/gpt-5.2",
                "api_key_secret": "OPENAI_API_KEY",
            },
            "env": {},
        }
    ]
    assert spec["execution_config"] == {"attempts_per_task": 1, "max_concurrent_attempts": 2}
    (product,) = result.generators
    assert product.product_line() == "benchmark(2) × model(2) = 4 runs"


def test_overrides_apply_after_axes_and_replace_the_model_whole(tmp_path: Path) -> None:
    text = (
        HEAD
        + '\n[[override]]\nmatch = { benchmark = "tb", model = "gpt-5" }\n'
        + "execution.timeout_multiplier = 2.0\n"
        + 'agent.model = { type = "hosted", base_model = "Qwen/Qwen3-8B", lora_model_name = "x" }\n'
    )
    result = load(tmp_path, text)
    assert result.ok, messages(result)
    tb = {r.address: r.spec for r in result.runs}["cmp/tb/gpt-5"]
    assert tb["execution_config"]["timeout_multiplier"] == 2.0
    assert tb["agents"][0]["model"] == {
        "type": "hosted",
        "base_model": "Qwen/Qwen3-8B",
        "lora_model_name": "x",
    }


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda t: t.replace('key = "gpt-5"\n', ""),
            "cmp.matrix.toml:26:1: axis.model[1]: axis.model[1]: missing key. Every element needs a key; it becomes part of the address.",
        ),
        (
            lambda t: t.replace('key = "gpt-5"', 'key = "gpt-5-2"'),
            'cmp.matrix.toml:27:7: axis.model[1].key: axis.model[1]: key "gpt-5-2" already used at line 22',
        ),
        (
            lambda t: t.replace('key = "gpt-5"', 'key = "GPT 5"'),
            'cmp.matrix.toml:27:7: axis.model[1].key: axis.model[1].key \'GPT 5\': use lowercase letters, digits, ".", "_", "-"',
        ),
        (
            lambda t: t.replace('"{benchmark}/{model}"', '"{benchmark}/{models}"'),
            'cmp.matrix.toml:3:11: generate.address: generate.address "{benchmark}/{models}": unknown axis "models" (did you mean "model"?)',
        ),
        (
            lambda t: t.replace('"{benchmark}/{model}"', '"{benchmark}"'),
            'cmp.matrix.toml:3:11: generate.address: generate.address "{benchmark}" does not use axis "model"; two cells would share an address',
        ),
        (
            lambda t: t.replace("version = 1", "version = 1\nadress = 2"),
            'cmp.matrix.toml:3:1: generate.adress: generate.adress: unknown key (did you mean "address"?)',
        ),
        (
            lambda t: t + '\n[[exclude]]\nmodel = "gpt-4"\n',
            'cmp.matrix.toml:31:9: exclude[0].model: exclude.model "gpt-4" matches no element (did you mean "gpt-5"?)',
        ),
        (
            lambda t: t + '\n[[include]]\nbenchmark = "tb"\nmodel = "gpt-5"\n',
            'cmp.matrix.toml:30:1: include[0]: include {benchmark="tb", model="gpt-5"} is already in the product',
        ),
        (
            lambda t: (
                t + '\n[[override]]\nmatch = { model = "gpt-5" }\nexecution.max_retries = 1\n'
                '\n[[exclude]]\nmodel = "gpt-5"\n'
            ),
            "cmp.matrix.toml:30:3: override[0]: override[0] matches no cell",
        ),
        (
            lambda t: (
                t.replace(
                    "max_concurrent_attempts = 2\n",
                    "max_concurrent_attempts = 2\nmax_retries = 0\n",
                )
                + '\n[[axis.harness]]\nkey = "x"\nexecution.max_retries = 1\n'
            ),
            "",  # checked below: the address does not use the new axis
        ),
        (  # found by the generators fuzz target: 1.0 == 1 (and true == 1) in Python
            lambda t: t.replace("version = 1", "version = 1.0"),
            "cmp.matrix.toml:2:1: generate.version: generate.version = 1.0: only 1 is known",
        ),
        (
            lambda t: t.replace("version = 1", "version = 1\nmax_runs = 3"),
            "cmp.matrix.toml:3:1: generate.max_runs: expands to 4 runs (benchmark 2 × model 2); max_runs = 3",
        ),
        (
            lambda t: t + '\n[[moved]]\naxis = "model"\nfrom = "gpt-5"\nto = "gpt-5-2"\n',
            'cmp.matrix.toml:32:8: moved[0].from: moved from "gpt-5", but "gpt-5" is still an element (line 26)',
        ),
        (
            lambda t: t.split("[[axis.model]]")[0] + "[axis]\nmodel = []\n",
            "cmp.matrix.toml:23:1: axis.model: axis.model has no elements; a generator cannot expand to zero runs",
        ),
    ],
)
def test_each_generator_error_names_file_line_and_key(
    tmp_path: Path, edit: object, expected: str
) -> None:
    result = load(tmp_path, edit(HEAD))  # type: ignore[operator]
    assert not result.ok
    assert result.runs == ()
    shown = messages(result)
    if expected:
        assert any(m.startswith("benchmarks/" + expected) for m in shown), shown


def test_two_axes_setting_one_leaf_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    text = HEAD.replace(
        'key = "gpt-5"\n', 'key = "gpt-5"\nexecution.judge_api_key_secret = "ANTHROPIC_API_KEY"\n'
    )
    result = load(tmp_path, text)
    shown = messages(result)
    assert any(
        "cell gdpval × gpt-5: execution.judge_api_key_secret is set by axis.benchmark "
        '"gdpval" (line 17) and axis.model "gpt-5" (line 26)' in m
        for m in shown
    ), shown


def test_an_expanded_config_error_points_at_the_element_that_set_it(tmp_path: Path) -> None:
    text = HEAD.replace('model = "openai/gpt-5", ', 'model = "openai/gpt-5", base_url = 3, ')
    result = load(tmp_path, text)
    shown = messages(result)
    assert any(
        m.startswith("benchmarks/cmp.matrix.toml:28:") and 'from axis.model "gpt-5", line 28' in m
        for m in shown
    ), shown


def test_a_plain_toml_that_is_a_generator_gets_one_targeted_error(tmp_path: Path) -> None:
    result = load(tmp_path, HEAD, name="cmp.toml")
    assert [i.message for i in result.errors] == [
        "has [generate]/[base]/[[axis.*]]: looks like a run generator, and generators must "
        "be named *.matrix.toml"
    ]
    assert result.errors[0].hint == (
        "rename it: `git mv benchmarks/cmp.toml benchmarks/cmp.matrix.toml`"
    )


def test_two_cells_with_identical_configs_are_a_duplicate_paid_run(tmp_path: Path) -> None:
    text = HEAD.replace('model = "openai/gpt-5", ', 'model = "openai/gpt-5.2", ')
    result = load(tmp_path, text)
    assert any("expand to identical configs (a duplicate paid run)" in m for m in messages(result))


def test_expansion_is_pure_and_independent_of_element_order() -> None:
    import tomllib

    swapped = HEAD.replace(
        '[[axis.model]]\nkey = "gpt-5-2"', '[[axis.model]]\nkey = "TMP"'
    )  # placeholder swap below keeps both elements, reversed
    first = expand_generator(tomllib.loads(HEAD), HEAD, "b/x.matrix.toml", "x.matrix")
    parts = HEAD.split("[[axis.model]]")
    reversed_text = parts[0] + "[[axis.model]]" + parts[2] + "\n[[axis.model]]" + parts[1]
    second = expand_generator(
        tomllib.loads(reversed_text), reversed_text, "b/x.matrix.toml", "x.matrix"
    )
    assert swapped  # the text edit helper above is only a sanity check of the fixture
    assert [(c.address, c.config) for c in first.cells] == [
        (c.address, c.config) for c in second.cells
    ]


def test_one_typo_in_an_element_is_one_issue_naming_the_cells_it_affects(tmp_path: Path) -> None:
    # Issue 37 finding 7: a typo in [base] was reported once per cell (4 errors for 4 cells).
    text = HEAD.replace("max_concurrent_attempts = 2", "max_concurrent_atempts = 2")
    result = load(tmp_path, text)
    assert [(i.location(), i.key) for i in result.errors] == [
        ("benchmarks/cmp.matrix.toml:10:1", "execution.max_concurrent_atempts")
    ]
    message = result.errors[0].message
    assert message.startswith(
        "4 cells (cmp/gdpval/gpt-5, cmp/gdpval/gpt-5-2, cmp/tb/gpt-5 and 1 more): "
        "Unrecognized key 'max_concurrent_atempts' in [execution]"
    ), message
    assert message.endswith("(from base, line 10)"), message
    assert result.errors[0].hint == "did you mean 'max_concurrent_attempts'?"


def test_a_typo_in_one_element_names_only_the_cells_of_that_element(tmp_path: Path) -> None:
    text = HEAD.replace(
        'experiment.benchmark = "gdpval"', 'experiment.benchmark = "gdpval"\nexperiment.bench = 1'
    )
    result = load(tmp_path, text)
    assert [(i.location(), i.message) for i in result.errors] == [
        (
            "benchmarks/cmp.matrix.toml:20:12",
            "2 cells (cmp/gdpval/gpt-5, cmp/gdpval/gpt-5-2): Unrecognized key 'bench' in "
            '[experiment] (from axis.benchmark "gdpval", line 20)',
        )
    ]


def test_a_policy_issue_cites_the_element_that_set_the_value(tmp_path: Path) -> None:
    # Issue 37 finding 7: the harness came from the benchmark element, but the warning
    # cited the line of the cell's first element (the model axis, first in the address).
    from reconciler.model import PolicyRule

    text = HEAD.replace('"{benchmark}/{model}"', '"{model}/{benchmark}"').replace(
        'key = "tb"\n', 'key = "tb"\nagent.harness = "terminus-2"\n'
    )
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    (bench / "cmp.matrix.toml").write_text(text, encoding="utf-8")
    rule = PolicyRule(name="scaffolds", harnesses=("codex",), effect="warn", where="osmosis.toml:1")
    result = load_configs(tmp_path, "benchmarks", policy=(rule,))
    assert result.ok, messages(result)
    lines = text.splitlines()
    harness_line = lines.index('agent.harness = "terminus-2"') + 1
    assert [(i.location(), i.key, i.message) for i in result.warnings] == [
        (
            f"benchmarks/cmp.matrix.toml:{harness_line}",
            "agents[0].harness",
            '2 cells (cmp/gpt-5-2/tb, cmp/gpt-5/tb): harness "terminus-2" is not allowed: '
            'policy "scaffolds" (osmosis.toml:1, warn) '
            f'(from axis.benchmark "tb", line {harness_line})',
        )
    ]
    cell = next(r for r in result.runs if r.address == "cmp/gpt-5/gdpval")
    harness = next(o for o in cell.origins if o.path == ("agents", 0, "harness"))
    assert (harness.element, harness.line) == ("base", lines.index('harness = "codex"') + 1)
