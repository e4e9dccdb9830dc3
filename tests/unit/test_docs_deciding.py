"""docs/deciding.md shows what the code does: its ``[decide]`` example is accepted with the
values the page names, its mistakes give exactly the messages it prints, and its design
tables are the library's numbers."""

from __future__ import annotations

import pytest

from reconciler.config.decide import decide_issues
from reconciler.results import sequential as seq
from tests.support.docs import DOCS, blocks

PAGE = DOCS / "deciding.md"
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
"""19 lines, so the page's ``[decide]`` blocks start at line 20."""


def section(heading: str) -> list[tuple[str, str]]:
    return [
        (b.lang, b.body) for b in blocks(PAGE) if b.headings and b.headings[-1].endswith(heading)
    ]


def test_the_example_table_is_accepted() -> None:
    (lang, body), *_ = section("The `[decide]` table")
    assert lang == "toml"
    spec, issues = decide_issues("benchmarks/tb/ab.toml", CONFIG + body)
    assert issues == []
    assert spec is not None
    assert (spec.margin_pp, spec.seed, spec.alpha, spec.power, spec.looks) == (
        5.0,
        20260601,
        0.05,
        0.8,
        4,
    )
    assert (spec.futility, spec.max_tasks, spec.budget_usd, spec.monitor, spec.baseline) == (
        "equivalence",
        None,
        250.0,
        "batches",
        None,
    )


def test_the_mistakes_print_as_shown() -> None:
    _, (lang, mistaken), (out_lang, shown) = section("The `[decide]` table")
    assert (lang, out_lang) == ("toml", "text")
    _, issues = decide_issues("benchmarks/tb/ab.toml", CONFIG + mistaken)
    assert [issue.render() for issue in issues] == shown.splitlines()


def test_the_boundary_table_is_the_librarys() -> None:
    text = PAGE.read_text(encoding="utf-8")
    bounds = seq.boundaries(
        (0.25, 0.5, 0.75, 1.0), alpha=0.05, equivalence=seq.equivalence_error(0.05)
    )
    for k in range(4):
        row = (
            f"| {k + 1} | {25 * (k + 1)} % | {bounds.efficacy[k]:.3f} | "
            f"{bounds.alpha_spent[k]:.{5 if k == 0 else 4}f} | {bounds.equivalence[k]:.3f} |"
        )
        assert row in text, row


def test_the_worked_plan_is_the_librarys() -> None:
    plan = seq.design(margin=0.05, omega2=2 * 0.15 * 0.3 + 2 * 0.08 / 3)
    text = PAGE.read_text(encoding="utf-8")
    expected = [
        plan.expected_tasks(at) for at in (plan.under_zero, plan.at_margin, plan.at_1_6_margin)
    ]
    sentence = (
        f"fixed design needs {plan.fixed_tasks} tasks; the decision's maximum is "
        f"{plan.max_tasks} in 4 batches of {plan.batch_ends[0]}, and it\n   expects "
        f"{expected[0]:.0f}, {expected[1]:.0f} and {expected[2]:.0f} tasks"
    )
    assert sentence in text
    assert f"{plan.inflation:.3f} for 4 looks with the futility rule" in text


@pytest.mark.parametrize("spending", ["pocock"])
def test_the_pocock_inflation_quoted(spending: str) -> None:
    ratio = seq.inflation(4, alpha=0.05, power=0.8, futility=False, spending=spending)
    assert f"`R` = {ratio:.3f}" in PAGE.read_text(encoding="utf-8")
