"""Policy rules end to end: ``osmosis-plan`` against the local Platform over loopback HTTP
fails (exit 1) on a ``deny`` rule and names every violation; nothing is submitted."""

from __future__ import annotations

from pathlib import Path

from tests.support.osmosis import Osmosis, Platform, init_repo, smoke_config

POLICY = """\
[[policy]]
name = "openai-only"
match = ["tb/**"]
models = ["openai/*"]

[[policy]]
name = "tb-budget"
match = ["tb/**"]
max_attempts = 2
"""


def test_a_deny_rule_fails_the_plan_naming_every_violation(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(
        tmp_path / "repo",
        configs={
            "tb/a": smoke_config("openai/gpt-5.2"),
            "tb/b": smoke_config("anthropic/claude-sonnet-4", secret="ANTHROPIC_API_KEY"),
            "tb/c": smoke_config("mistral/large"),
        },
    )
    (repo / "osmosis.toml").write_text(POLICY, encoding="utf-8")
    osm = Osmosis(repo, platform)
    assert platform.requests is not None
    platform.requests.reset()

    result = osm.plan()
    assert result.code == 1, result
    for address in ("tb/b", "tb/c"):
        assert f"benchmarks/{address}.toml:13: agents[0].model: {address}: model" in result.err
    assert 'policy "openai-only" (osmosis.toml:1, deny)' in result.err
    assert "tb/a.toml" not in result.err
    assert platform.requests.count("POST") == 0
    assert osm.plan("--validate-only").code == 1


def test_a_budget_rule_fails_the_plan_with_its_rule(tmp_path: Path, platform: Platform) -> None:
    repo = init_repo(
        tmp_path / "repo",
        configs={"tb/a": smoke_config(attempts=2), "tb/b": smoke_config("openai/gpt-5")},
    )
    (repo / "osmosis.toml").write_text(POLICY, encoding="utf-8")
    osm = Osmosis(repo, platform)
    result = osm.plan()
    assert result.code == 1, result
    assert (
        'policy "tb-budget" (osmosis.toml:6, deny): 2 submits under tb/** would start 3 '
        "attempts, more than max_attempts = 2 (tb/a, tb/b)"
    ) in result.out
    assert osm.plan("--allow-over-budget").code == 0
    assert platform.submits() == 0
