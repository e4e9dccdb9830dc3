"""The ``[decide]`` table (config/decide.py): read into a ``DecisionSpec``, every mistake
named by file, line, column and key with what to write instead, and the table kept out of
the submit body and the digest."""

from __future__ import annotations

import tomllib

import pytest

from reconciler.config.decide import check_decide, decide_issues, parse_decide
from reconciler.config.spec import build_spec, spec_digest
from reconciler.model import DecisionSpec

HEAD = """\
[experiment]
benchmark = "terminal-bench-2-1"

[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
"""
SECOND_AGENT = """
[[agents]]
harness = "terminus-2"

[agents.model]
type = "provider"
model = "anthropic/claude-sonnet-4.5"
api_key_secret = "ANTHROPIC_API_KEY"
"""


def config(decide: str, *, agents: int = 2) -> str:
    return HEAD + (SECOND_AGENT if agents == 2 else "") + "\n[decide]\n" + decide


def rendered(text: str) -> list[str]:
    spec, issues = decide_issues("benchmarks/tb/ab.toml", text)
    assert spec is None or all(i.severity == "warning" for i in issues)
    return [issue.render() for issue in issues]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_a_full_table_reads_into_the_value() -> None:
    text = config(
        'margin_pp = 3\nalpha = 0.01\npower = 0.9\nlooks = 5\nfutility = "none"\n'
        'max_tasks = 400\nbudget_usd = 250\nseed = 42\nmonitor = "batches"\n'
    )
    spec, issues = decide_issues("benchmarks/tb/ab.toml", text)
    assert issues == []
    assert spec == DecisionSpec(
        margin_pp=3.0,
        seed=42,
        alpha=0.01,
        power=0.9,
        looks=5,
        futility="none",
        max_tasks=400,
        budget_usd=250.0,
        monitor="batches",
        where=f"benchmarks/tb/ab.toml:{line_of(text, '[decide]')}",
    )
    assert spec.margin == pytest.approx(0.03)


def test_defaults_and_auto() -> None:
    spec = parse_decide(tomllib.loads(config('margin_pp = 5\nseed = 1\nmax_tasks = "auto"\n')))
    assert spec is not None
    assert (spec.alpha, spec.power, spec.looks, spec.futility, spec.monitor) == (
        0.05,
        0.8,
        4,
        "equivalence",
        "batches",
    )
    assert spec.max_tasks is None and spec.budget_usd is None and spec.baseline is None


def test_no_table_no_decision() -> None:
    assert decide_issues("benchmarks/a.toml", HEAD + SECOND_AGENT) == (None, [])
    assert check_decide(tomllib.loads(HEAD)) == []


def test_one_agent_and_a_baseline() -> None:
    text = config('margin_pp = 5\nseed = 1\nbaseline = "tb/agent-a"\n', agents=1)
    spec, issues = decide_issues("benchmarks/tb/ab.toml", text)
    assert issues == [] and spec is not None and spec.baseline == "tb/agent-a"


def test_every_mistake_named_with_its_line() -> None:
    text = config(
        'margin_pp = "5"\nalpah = 0.05\npower = 1.2\nlooks = 0\nfutility = "equivalance"\n'
        'budget_usd = nan\nseed = true\nmonitor = "always"\n'
    )
    keys = ("margin_pp", "alpah", "power", "looks", "futility", "budget_usd", "seed", "monitor")
    at = {key: f"benchmarks/tb/ab.toml:{line_of(text, key + ' =')}" for key in keys}
    assert rendered(text) == [
        f"{at['alpah']}:1: decide.alpah: Unrecognized key 'alpah' in [decide] "
        "(did you mean 'alpha'?)",
        f"{at['margin_pp']}:13: decide.margin_pp: must be a number, got a string "
        "(write a number without quotes, e.g. margin_pp = 5)",
        f"{at['power']}:9: decide.power: must be above 0.5 and below 1, got 1.2 (e.g. power = 0.8)",
        f"{at['looks']}:9: decide.looks: must be between 1 and 20, got 0 (e.g. looks = 4)",
        f'{at["futility"]}:12: decide.futility: must be "equivalence" or "none", got '
        "'equivalance' (did you mean \"equivalence\"?)",
        f'{at["monitor"]}:11: decide.monitor: must be "batches" or "anytime", got '
        '\'always\' (write monitor = "batches" or "anytime")',
        f"{at['seed']}:8: decide.seed: must be a whole number, got a boolean "
        "(write a whole number without quotes, e.g. seed = 1)",
        f"{at['budget_usd']}:14: decide.budget_usd: must be a positive number of dollars, "
        "got nan (e.g. budget_usd = 250)",
    ]


def test_missing_keys_point_at_the_table() -> None:
    text = config("alpha = 0.05\n")
    header = line_of(text, "[decide]")
    assert rendered(text) == [
        f"benchmarks/tb/ab.toml:{header}:1: decide.margin_pp: Field required (add margin_pp = 5 "
        "to [decide]: the smallest difference that matters, in points of pass@1)",
        f"benchmarks/tb/ab.toml:{header}:1: decide.seed: Field required (add seed = 1 to "
        "[decide]: it fixes the task order, reviewed with the config)",
    ]


def test_max_tasks_must_cover_the_looks() -> None:
    text = config("margin_pp = 5\nseed = 1\nlooks = 4\nmax_tasks = 6\n")
    assert rendered(text) == [
        f"benchmarks/tb/ab.toml:{line_of(text, 'max_tasks')}:13: decide.max_tasks: must be at "
        "least 8 (two tasks for each of 4 looks), got 6 (raise max_tasks, or lower looks; "
        'max_tasks = "auto" sizes it for the power)'
    ]
    text = config('margin_pp = 5\nseed = 1\nmax_tasks = "all"\n')
    assert "must be a whole number or \"auto\", got a string 'all'" in rendered(text)[0]


@pytest.mark.parametrize(
    ("agents", "decide", "expected"),
    [
        (
            1,
            "margin_pp = 5\nseed = 1\n",
            "decide: needs two sides: two [[agents]] (this config has 1) or one agent and baseline",
        ),
        (
            2,
            'margin_pp = 5\nseed = 1\nbaseline = "tb/a"\n',
            "decide.baseline: compares one agent with an accepted run, but this config has 2 "
            "agents",
        ),
        (
            1,
            'margin_pp = 5\nseed = 1\nbaseline = "tb/a.toml"\n',
            "decide.baseline: is an address, not a file name: drop the .toml ('tb/a')",
        ),
        (
            1,
            'margin_pp = 5\nseed = 1\nbaseline = "../a"\n',
            "decide.baseline: must not have empty, '.' or '..' parts",
        ),
    ],
)
def test_two_sides(agents: int, decide: str, expected: str) -> None:
    issues = rendered(config(decide, agents=agents))
    assert len(issues) == 1 and expected in issues[0], issues


def test_looks_with_anytime_sets_its_batches_without_a_warning() -> None:
    # An anytime decision buys its tasks in ``looks`` batches too (the sequence is valid
    # at any of them), so looks is meaningful there and not flagged.
    text = config('margin_pp = 5\nseed = 1\nmonitor = "anytime"\nlooks = 6\n')
    spec, issues = decide_issues("benchmarks/tb/ab.toml", text)
    assert spec is not None and spec.monitor == "anytime" and spec.looks == 6
    assert issues == []


def test_a_table_that_is_not_a_table() -> None:
    text = "decide = 5\n" + HEAD + SECOND_AGENT
    issues = rendered(text)
    assert issues == [
        f"benchmarks/tb/ab.toml:{line_of(text, 'decide = 5')}:10: decide: [decide] must be a "
        "table, got an integer (write it as a [decide] table with margin_pp and seed)"
    ]


def test_decide_is_not_part_of_the_request_or_its_digest() -> None:
    without = tomllib.loads(HEAD + SECOND_AGENT)
    with_table = tomllib.loads(config("margin_pp = 5\nseed = 1\nbudget_usd = 100\n"))
    assert build_spec(with_table) == build_spec(without)
    assert spec_digest(build_spec(with_table)) == spec_digest(build_spec(without))
    edited = tomllib.loads(config("margin_pp = 2\nseed = 9\n"))
    assert spec_digest(build_spec(edited)) == spec_digest(build_spec(without))
