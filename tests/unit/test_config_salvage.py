"""A config with errors is still read as far as it goes (issue 37 finding 7): the run its
other keys make is kept aside (``LoadResult.salvaged``) for the checks that would otherwise
come one plan later (the policy rules here; the catalog and the secrets in a plan, see
tests/integration/test_new_user_trips.py), and never planned."""

from __future__ import annotations

from pathlib import Path

from reconciler.config import load_configs
from reconciler.model import PolicyRule

CONFIG = """\
[experiment]
benchmark = "termnal-bench-2-1"
colour = "blue"

[tasks]
categories = ["securty", 7]

[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "mistral/large"
api_key_secret = "OPENAI_API_KEY"

[execution]
max_concurrent_attempts = "4"
"""


def write(tmp_path: Path, text: str) -> Path:
    target = tmp_path / "benchmarks" / "tb" / "a.toml"
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_config_with_key_errors_keeps_the_run_its_other_keys_make(tmp_path: Path) -> None:
    result = load_configs(write(tmp_path, CONFIG), "benchmarks")
    assert [(i.location(), i.key) for i in result.errors] == [
        ("benchmarks/tb/a.toml:3:1", "experiment.colour"),
        ("benchmarks/tb/a.toml:6:26", "tasks.categories[1]"),
        ("benchmarks/tb/a.toml:17:27", "execution.max_concurrent_attempts"),
    ]
    assert result.runs == ()
    (salvaged,) = result.salvaged
    assert salvaged.dropped == (
        "execution.max_concurrent_attempts",
        "experiment.colour",
        "tasks.categories[1]",
    )
    run = salvaged.run
    assert (run.address, run.path) == ("tb/a", "benchmarks/tb/a.toml")
    # What the catalog check needs is kept as written, typos and all.
    assert run.benchmark == "termnal-bench-2-1"
    assert run.categories == ("securty",)
    assert "max_concurrent_attempts" not in run.spec.get("execution_config", {})


def test_a_config_missing_what_a_run_needs_is_not_salvaged(tmp_path: Path) -> None:
    no_model = CONFIG.split("[agents.model]")[0]
    result = load_configs(write(tmp_path, no_model), "benchmarks")
    assert any(i.key == "agents[0].model" for i in result.errors)
    assert result.salvaged == ()


def test_a_config_with_key_errors_gets_its_policy_checks_in_the_same_report(
    tmp_path: Path,
) -> None:
    rules = (
        PolicyRule(name="frontier", models=("openai/*",), where="osmosis.toml:1"),
        PolicyRule(name="scaffolds", harnesses=("codex",), effect="warn", where="osmosis.toml:5"),
    )
    result = load_configs(write(tmp_path, CONFIG), "benchmarks", policy=rules)
    assert [
        (i.location(), i.severity, i.message) for i in result.issues if "policy" in i.message
    ] == [
        (
            "benchmarks/tb/a.toml:13",
            "error",
            'tb/a: model "mistral/large" is not allowed: policy "frontier" (osmosis.toml:1, deny)',
        ),
        (
            "benchmarks/tb/a.toml:9",
            "warning",
            'tb/a: harness "terminus-2" is not allowed: policy "scaffolds" (osmosis.toml:5, warn)',
        ),
    ]
