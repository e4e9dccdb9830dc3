"""The policy phase: budgets per address glob (``[[policy]]`` rules with ``max_attempts`` or
``max_cost_usd``), over what this plan would start.

A ``deny`` rule over its budget is a guard error (the plan fails, exit 1, unless
``--allow-over-budget``, as for the global budget); a ``warn`` rule adds a warning. Rules on
the configs themselves (models, harnesses, task sets) are checked when the configs load
(``reconciler.config.policy``).
"""

from __future__ import annotations

from reconciler.model import Action, PlanItem, glob_match
from reconciler.plan.draft import Draft, plural


def check_policy_budgets(draft: Draft) -> None:
    rules = [
        r for r in draft.settings.policy if r.max_attempts is not None or r.max_cost_usd is not None
    ]
    if not rules:
        return
    paid = [i for i in draft.items if i.action in (Action.SUBMIT, Action.REPLACE)]
    for rule in rules:
        chosen: list[PlanItem] = [
            item
            for item in paid
            if glob_match(item.address, rule.match)
            and (rule.benchmark is None or _benchmark(draft, item) == rule.benchmark)
        ]
        if not chosen:
            continue
        label = f'policy "{rule.name}" ({rule.where}, {rule.effect})'
        scope = ", ".join(rule.match)
        problems: list[str] = []
        attempts = sum(item.attempts for item in chosen)
        if rule.max_attempts is not None and attempts > rule.max_attempts:
            problems.append(
                f"{plural(len(chosen), 'submit')} under {scope} would start {attempts:,} "
                f"attempts, more than max_attempts = {rule.max_attempts:,}"
            )
        priced = [item.cost.usd_high for item in chosen if item.cost is not None]
        cost = sum(priced) if priced else None
        if rule.max_cost_usd is not None and cost is not None and cost > rule.max_cost_usd:
            problems.append(
                f"{plural(len(chosen), 'submit')} under {scope} may cost up to ${cost:,.2f}, "
                f"more than max_cost_usd = ${rule.max_cost_usd:,.2f}"
            )
        for problem in problems:
            addresses = ", ".join(item.address for item in chosen[:5])
            more = ", ..." if len(chosen) > 5 else ""
            text = f"{label}: {problem} ({addresses}{more})"
            if rule.effect == "warn":
                draft.warnings.append(text)
            elif not draft.settings.allow_over_budget:
                draft.errors.append(
                    text + "; re-run with --allow-over-budget if that is intended, or raise "
                    f"the rule's budget in {rule.where.split(':')[0]}"
                )


def _benchmark(draft: Draft, item: PlanItem) -> str | None:
    desired = draft.desired.get(item.address)
    return desired.benchmark if desired is not None else None
