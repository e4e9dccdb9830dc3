"""``PlanItem`` cannot be built in a combination that makes no sense (issue 20): facts that
belong to some actions only are groups, refused on any other action."""

from __future__ import annotations

import pytest

from reconciler.engine.saved_plan import plan_from_dict
from reconciler.model import (
    PAID_ACTIONS,
    Action,
    BenchmarkFacts,
    Blocked,
    Cost,
    Fix,
    Plan,
    PlanItem,
    Reason,
)
from reconciler.render import plan_to_dict

COST = Cost(usd_low=1.0, usd_high=2.5, basis="2 recorded runs")
FACTS = BenchmarkFacts(source_url="https://example.org/bench", pass_threshold=0.5)
BLOCKED = Blocked(
    intended_action=Action.SUBMIT,
    intended_reason=Reason.NEW_CONFIG,
    fixes=(Fix(command="osmosis secret set KEY --scope workspace"),),
)


def item(action: Action, **groups: object) -> PlanItem:
    return PlanItem(action=action, address="tb/a", reason=Reason.NEW_CONFIG, **groups)  # type: ignore[arg-type]


@pytest.mark.parametrize("action", [a for a in Action if a is not Action.BLOCKED])
def test_only_a_blocked_item_carries_the_blocked_group(action: Action) -> None:
    with pytest.raises(ValueError, match=f"a {action.value} item cannot carry blocked"):
        item(action, blocked=BLOCKED)


@pytest.mark.parametrize("action", sorted(set(Action) - PAID_ACTIONS))
@pytest.mark.parametrize(
    ("name", "value"), [("cost", COST), ("benchmark", FACTS), ("context", "sha256:ctx")]
)
def test_cost_benchmark_and_context_belong_to_paid_items(
    action: Action, name: str, value: object
) -> None:
    with pytest.raises(ValueError, match=f"cannot carry {name}"):
        item(action, **{name: value})


def test_from_address_belongs_to_a_move() -> None:
    assert item(Action.MOVE, from_address="tb/old").from_address == "tb/old"
    with pytest.raises(ValueError, match="a stop item cannot carry from_address"):
        item(Action.STOP, from_address="tb/old")


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ValueError) as raised:
        item(Action.DOWNLOAD, blocked=BLOCKED, cost=COST, from_address="tb/old")
    assert "a download item cannot carry blocked, cost, from_address (tb/a)" in str(raised.value)


def test_a_cost_needs_its_upper_end() -> None:
    with pytest.raises(TypeError, match="usd_high"):
        Cost(usd_low=1.0)  # type: ignore[call-arg]


@pytest.mark.parametrize("action", sorted(PAID_ACTIONS))
def test_the_valid_combinations_build_and_round_trip_through_a_saved_plan(action: Action) -> None:
    groups: dict[str, object] = {"cost": COST, "benchmark": FACTS, "context": "sha256:ctx"}
    if action is Action.BLOCKED:
        groups["blocked"] = BLOCKED
    built = item(action, **groups)
    assert built.fixes == (BLOCKED.fixes if action is Action.BLOCKED else ())
    plan = Plan(items=(built,))
    assert plan_from_dict(plan_to_dict(plan)) == plan
