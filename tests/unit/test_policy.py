"""Policy rules as data (issue 25): each kind with the violation's message — allowed models,
allowed harnesses, a required task set (checked on the config files, with file and line),
budgets per glob (checked on the plan), deny vs warn, and the settings' own validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.config import load_configs
from reconciler.config.project import load_project_settings
from reconciler.errors import UsageError
from reconciler.model import AgentResult, PolicyRule, RunResults
from reconciler.plan import compute_plan
from tests.support.plan_fixtures import (
    desired,
    lock,
    observation,
    observed_run,
    recorded_run,
    settings,
)

CONFIG = """\
[experiment]
benchmark = "{benchmark}"

[tasks]
{tasks}

[[agents]]
harness = "{harness}"

[agents.model]
type = "provider"
model = "{model}"
api_key_secret = "OPENAI_API_KEY"

[execution]
judge_api_key_secret = "OPENAI_API_KEY"
"""


def repo(tmp_path: Path, policy: str, configs: dict[str, dict[str, str]]) -> Path:
    (tmp_path / "osmosis.toml").write_text(policy, encoding="utf-8")
    for address, values in configs.items():
        target = tmp_path / "benchmarks" / f"{address}.toml"
        target.parent.mkdir(parents=True, exist_ok=True)
        fields = {
            "benchmark": "hle",
            "tasks": 'task_set = "parity"',
            "harness": "codex",
            "model": "openai/gpt-5.2",
            **values,
        }
        target.write_text(CONFIG.format(**fields), encoding="utf-8")
    return tmp_path


def load(root: Path):
    rules = load_project_settings(root)["policy"]
    return load_configs(root, "benchmarks", policy=rules)


def shown(result) -> list[str]:
    return [f"{i.severity}: {i.location()}: {i.key}: {i.message}" for i in result.issues]


MODELS_RULE = """\
[[policy]]
name = "frontier-only"
match = ["compare/**"]
models = ["openai/gpt-5*", "anthropic/*"]
"""


def test_allowed_models_per_glob_deny_names_rule_file_and_line(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        MODELS_RULE,
        {
            "compare/a": {"model": "openai/gpt-5.2"},
            "compare/b": {"model": "qwen/qwen3-8b"},
            "other/c": {"model": "qwen/qwen3-8b"},
        },
    )
    result = load(root)
    assert shown(result) == [
        "error: benchmarks/compare/b.toml:12: agents[0].model: compare/b: model "
        '"qwen/qwen3-8b" is not allowed: policy "frontier-only" (osmosis.toml:1, deny)'
    ]
    assert result.errors[0].hint == "allowed here: openai/gpt-5*, anthropic/*"
    assert [r.address for r in result.runs] == ["compare/a", "other/c"]


def test_allowed_harnesses_warn_is_a_warning_and_keeps_the_run(tmp_path: Path) -> None:
    policy = (
        '[[policy]]\nname = "scaffolds"\nharnesses = ["codex", "claude-code"]\neffect = "warn"\n'
    )
    root = repo(tmp_path, policy, {"a": {"harness": "terminus-2"}})
    result = load(root)
    assert result.ok
    assert shown(result) == [
        'warning: benchmarks/a.toml:8: agents[0].harness: a: harness "terminus-2" is not '
        'allowed: policy "scaffolds" (osmosis.toml:1, warn)'
    ]
    assert [r.address for r in result.runs] == ["a"]


def test_a_required_task_set_per_benchmark(tmp_path: Path) -> None:
    policy = '[[policy]]\nname = "hle-parity"\nbenchmark = "hle"\ntask_set = "parity"\n'
    root = repo(
        tmp_path,
        policy,
        {
            "hle-full": {"tasks": "# every task"},
            "hle-ok": {},
            "tb": {"benchmark": "terminal-bench-2-1", "tasks": 'categories = ["security"]'},
        },
    )
    result = load(root)
    assert [line for line in shown(result) if line.startswith("error")] == [
        "error: benchmarks/hle-full.toml:4: tasks.task_set: hle-full: hle must use task_set "
        '"parity", this config has no task set: policy "hle-parity" (osmosis.toml:1, deny)'
    ]
    assert result.errors[0].hint == 'set task_set = "parity" in [tasks]'


def test_rules_in_pyproject_name_their_table(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "x"\n\n[[tool.osmosis-reconciler.policy]]\n'
        + MODELS_RULE.split("\n", 1)[1]
    )
    root = repo(tmp_path, "", {"compare/b": {"model": "qwen/qwen3-8b"}})
    (root / "osmosis.toml").unlink()
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    result = load(root)
    assert 'policy "frontier-only" (pyproject.toml:4, deny)' in result.errors[0].message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[[policy]]\nname = "x"\nmodel = ["a"]\n',
            "osmosis.toml:1: policy[0].model: unknown key",
        ),
        ('[[policy]]\nname = "x"\n', "osmosis.toml:1: policy[0]: the rule checks nothing"),
        (
            '[[policy]]\nname = "x"\nmodels = ["a"]\neffect = "block"\n',
            "osmosis.toml:1: policy[0].effect: must be one of deny, warn, got 'block'",
        ),
        (
            '[[policy]]\nname = "x"\ntask_set = "parity"\n',
            'osmosis.toml:1: policy[0].task_set: a required task set needs benchmark = "..."',
        ),
        ('[[policy]]\nmodels = ["a"]\n', "osmosis.toml:1: policy[0]: a rule needs a name"),
    ],
)
def test_a_bad_rule_is_a_clear_settings_error(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "osmosis.toml").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        load_project_settings(tmp_path)
    assert caught.value.message == message
    if "model:" in message:
        assert caught.value.hint == "did you mean 'models'?"


def _plan(rule: PolicyRule, **flags: bool):
    want = [desired("compare/a", attempts=2), desired("compare/b"), desired("other/c")]
    return compute_plan(want, lock(), observation(), settings(policy=(rule,), **flags))


def test_a_budget_per_glob_denies_with_the_rule_and_its_line() -> None:
    rule = PolicyRule(
        name="compare-budget", match=("compare/**",), max_attempts=500, where="osmosis.toml:7"
    )
    plan = _plan(rule)
    assert plan.errors == (
        'policy "compare-budget" (osmosis.toml:7, deny): 2 submits under compare/** would start '
        "747 attempts, more than max_attempts = 500 (compare/a, compare/b); re-run with "
        "--allow-over-budget if that is intended, or raise the rule's budget in osmosis.toml",
    )
    assert _plan(rule, allow_over_budget=True).errors == ()
    within = PolicyRule(name="compare-budget", match=("compare/**",), max_attempts=747)
    assert _plan(within).errors == ()


def test_a_warn_budget_warns_and_the_plan_stands() -> None:
    rule = PolicyRule(
        name="soft", match=("other/**",), max_attempts=10, effect="warn", where="osmosis.toml:1"
    )
    plan = _plan(rule)
    assert plan.errors == ()
    assert (
        'policy "soft" (osmosis.toml:1, warn): 1 submit under other/** would start 249 '
        "attempts, more than max_attempts = 10 (other/c)"
    ) in plan.warnings


def test_a_dollar_budget_per_glob_uses_the_estimates() -> None:
    def priced(address: str, run_id: str, cost: float):
        entry = recorded_run(desired(address), run_id, status="finished")
        results = RunResults(agents=(AgentResult(agent_index=0, cost_per_task=cost),))
        return entry.model_copy(update={"benchmark_id": "bench-hle", "results": results})

    entries = [priced("hle/x", "r1", 0.40), priced("hle/y", "r2", 1.00)]
    runs = [observed_run("r1", "finished"), observed_run("r2", "finished")]
    rule = PolicyRule(
        name="dollars", match=("hle/new*",), max_cost_usd=100.0, where="osmosis.toml:3"
    )
    plan = compute_plan(
        [desired("hle/new", attempts=2), desired("hle/x"), desired("hle/y")],
        lock(*entries),
        observation(*runs),
        settings(policy=(rule,)),
    )
    assert any(
        e.startswith(
            'policy "dollars" (osmosis.toml:3, deny): 1 submit under hle/new* may cost up to '
            "$498.00, more than max_cost_usd = $100.00 (hle/new)"
        )
        for e in plan.errors
    ), plan.errors


def test_guard_hints_name_the_settings_file_in_use(tmp_path: Path) -> None:
    from reconciler.engine.context import resolve_settings

    (tmp_path / "osmosis.toml").write_text("max_stops = 0\n", encoding="utf-8")
    chosen = resolve_settings(tmp_path, {})
    entry = recorded_run(desired("hle/gone"), "r1")
    plan = compute_plan([], lock(entry), observation(observed_run("r1", "running")), chosen)
    assert plan.errors and plan.errors[0].endswith("or raise max_stops in osmosis.toml")
    default = compute_plan(
        [], lock(entry), observation(observed_run("r1", "running")), settings(max_stops=0)
    )
    assert default.errors[0].endswith("or raise max_stops in [tool.osmosis-reconciler]")
