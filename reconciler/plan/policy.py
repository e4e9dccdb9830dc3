"""The policy phase: budgets per address glob (``[[policy]]`` rules with ``max_attempts`` or
``max_cost_usd``), over what this plan would start, and the rules a config's spelling of
its benchmark hid from the load-time check.

A ``deny`` rule over its budget is a guard error (the plan fails, exit 1, unless
``--allow-over-budget``, as for the global budget); a ``warn`` rule adds a warning. Rules on
the configs themselves (models, harnesses, task sets) are checked when the configs load
(``reconciler.config.policy``, through ``rule_violations``), where only the text is known.

Guards match what the Platform resolves, never the file's spelling (issue 34: a rule on
``benchmark = "hle"`` did not apply to ``benchmark = "HLE"``, which the Platform accepts as
the same benchmark, and a 230-attempt run was paid): a rule's ``benchmark`` covers a config
whose benchmark resolves, in the catalog, to the entry the rule names by key, name or id
(``rule_covers``). A rule the load-time check could not see that way is checked here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from reconciler.model import (
    Action,
    BenchmarkInfo,
    DesiredRun,
    PlanItem,
    PolicyRule,
    glob_match,
    model_identity,
    origin_of,
)
from reconciler.plan.draft import Draft, plural

DEFAULT_HARNESS = "default"
"""How a rule names an agent without a harness (the benchmark's own scaffold)."""


@dataclass(frozen=True)
class RuleViolation:
    """One per-config rule broken by one config: the key (as a TOML path and as text), what
    is wrong and what is allowed."""

    path: tuple[str | int, ...]
    key: str
    message: str
    hint: str


def names_benchmark(rule: PolicyRule, benchmark: BenchmarkInfo) -> bool:
    """Whether the rule's ``benchmark`` names this catalog entry (its key, name or id, in
    any case: a wider rule only ever denies more)."""
    if rule.benchmark is None:
        return True
    wanted = rule.benchmark.strip().casefold()
    return wanted in {benchmark.key.casefold(), benchmark.name.casefold(), benchmark.id.casefold()}


def rule_covers(rule: PolicyRule, run: DesiredRun, benchmark: BenchmarkInfo | None) -> bool:
    """Whether ``rule`` applies to ``run``: its address matches and its benchmark is the
    rule's, as written or as resolved (``benchmark``: the catalog entry the config's
    benchmark resolves to, None when it does not)."""
    if not glob_match(run.address, rule.match):
        return False
    if rule.benchmark is None or run.benchmark == rule.benchmark:
        return True
    return benchmark is not None and names_benchmark(rule, benchmark)


def _allowed(value: str, patterns: Sequence[str]) -> bool:
    return any(value == p or fnmatchcase(value, p) for p in patterns)


def rule_violations(rule: PolicyRule, run: DesiredRun) -> list[RuleViolation]:
    """Every per-config requirement of ``rule`` (models, harnesses, task set) ``run`` breaks;
    the caller decides that the rule applies. Models are compared as the Platform reports
    them (``model_identity``: a hosted model is ``base_model:lora_model_name``)."""
    found: list[RuleViolation] = []
    for index, agent in enumerate(run.spec.get("agents", [])):
        model = model_identity(agent.get("model", {}))
        if rule.models is not None and not _allowed(model, rule.models):
            found.append(
                RuleViolation(
                    ("agents", index, "model", "model"),
                    f"agents[{index}].model",
                    f'model "{model}" is not allowed',
                    "allowed here: " + ", ".join(rule.models),
                )
            )
        harness = agent.get("harness") or DEFAULT_HARNESS
        if rule.harnesses is not None and not _allowed(harness, rule.harnesses):
            found.append(
                RuleViolation(
                    ("agents", index, "harness"),
                    f"agents[{index}].harness",
                    f'harness "{harness}" is not allowed',
                    "allowed here: " + ", ".join(rule.harnesses),
                )
            )
    if rule.task_set is not None and run.task_set != rule.task_set:
        shown = f'"{run.task_set}"' if run.task_set else "no task set"
        found.append(
            RuleViolation(
                ("tasks", "task_set"),
                "tasks.task_set",
                f'{rule.benchmark} must use task_set "{rule.task_set}", this config has {shown}',
                f'set task_set = "{rule.task_set}" in [tasks]',
            )
        )
    return found


def check_resolved_rules(draft: Draft) -> None:
    """Per-config rules whose ``benchmark`` the config names by another accepted spelling
    (so the load-time check, which sees only the text, passed them over)."""
    rules = [
        r
        for r in draft.settings.policy
        if r.benchmark is not None and (r.models or r.harnesses or r.task_set)
    ]
    for address in sorted(draft.desired):
        run = draft.desired[address]
        benchmark = draft.observed.benchmarks.get(run.benchmark)
        for rule in rules:
            if run.benchmark == rule.benchmark or not rule_covers(rule, run, benchmark):
                continue  # checked when the configs loaded, or not this rule's
            label = f'policy "{rule.name}" ({rule.where}, {rule.effect})'
            for violation in rule_violations(rule, run):
                # A generator cell's value is cited at the element that set it.
                origin = origin_of(run.origins, violation.path)
                where = f"{run.path}:{origin.line}" if origin and origin.line else run.path
                element = f" (from {origin.element})" if origin else ""
                text = (
                    f"{where}: {violation.key}: {address}: {violation.message}: {label} "
                    f"(benchmark {run.benchmark!r} is {rule.benchmark!r}){element}; "
                    f"{violation.hint}"
                )
                if rule.effect == "warn":
                    draft.warnings.append(text)
                else:
                    draft.errors.append(text)


def check_policy_budgets(draft: Draft) -> None:
    rules = [
        r for r in draft.settings.policy if r.max_attempts is not None or r.max_cost_usd is not None
    ]
    if not rules:
        return
    paid = [i for i in draft.items if i.action in (Action.SUBMIT, Action.REPLACE, Action.RETRY)]
    for rule in rules:
        chosen: list[PlanItem] = [item for item in paid if _covers(draft, rule, item)]
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


def _covers(draft: Draft, rule: PolicyRule, item: PlanItem) -> bool:
    """Whether a budget ``rule`` counts ``item``: by the config's resolved benchmark."""
    desired = draft.desired.get(item.address)
    if desired is None:
        return False
    return rule_covers(rule, desired, draft.observed.benchmarks.get(desired.benchmark))
