"""Policy rules checked against each config (allowed models and harnesses, required task
sets): a ``deny`` rule's violation is an error of that config, a ``warn`` rule's a warning,
each naming the rule, where the rule is written, and the file and line of the offending key.

Budgets per glob (``max_attempts``, ``max_cost_usd``) depend on what the plan would submit
and are checked by the plan's policy phase (``reconciler.plan.policy``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reconciler import toml_locate as locate
from reconciler.config.cells import cells_label
from reconciler.errors import ConfigIssue
from reconciler.model import DesiredRun, PolicyRule, origin_of
from reconciler.plan.policy import DEFAULT_HARNESS, rule_covers, rule_violations

__all__ = ["DEFAULT_HARNESS", "applies", "check_policy"]


def applies(rule: PolicyRule, run: DesiredRun) -> bool:
    """Whether ``rule`` applies to ``run`` as far as its text tells (the catalog is not read
    here: a rule whose benchmark the config spells another way is checked by the plan,
    ``plan.policy.check_resolved_rules``)."""
    return rule_covers(rule, run, None)


class _Lines:
    """Lines of keys in config files, read only for a file that has a violation."""

    def __init__(self, repo_root: Path) -> None:
        self.root = repo_root
        self.scans: dict[str, locate.Positions | None] = {}

    def line(self, run: DesiredRun, path: tuple[str | int, ...]) -> int | None:
        if run.source is not None:
            origin = origin_of(run.origins, path)
            return origin.line if origin is not None else run.source.line
        if run.path not in self.scans:
            try:
                text = (self.root / run.path).read_text(encoding="utf-8")
                self.scans[run.path] = locate.scan(text)
            except (OSError, UnicodeDecodeError):
                self.scans[run.path] = None
        positions = self.scans[run.path]
        return positions.find(path, "value")[0] if positions is not None else None


def check_policy(
    runs: Sequence[DesiredRun], rules: Sequence[PolicyRule], repo_root: Path
) -> list[ConfigIssue]:
    """Every violation of every per-config rule, in run order then rule order. A violation
    that several cells of a generator inherit from one element is one issue naming the
    element (its line) and the cells."""
    checked = [r for r in rules if r.models or r.harnesses or r.task_set]
    if not checked:
        return []
    lines = _Lines(repo_root)
    found: dict[tuple[Any, ...], list[str]] = {}
    for run in runs:
        for rule in checked:
            if not applies(rule, run):
                continue
            severity = "error" if rule.effect == "deny" else "warning"
            label = f'policy "{rule.name}" ({rule.where}, {rule.effect})'
            for violation in rule_violations(rule, run):
                line = lines.line(run, violation.path)
                origin = origin_of(run.origins, violation.path) if run.source else None
                element = f" (from {origin.element}, line {line})" if origin else ""
                signature = (
                    run.path, line, violation.key, f"{violation.message}: {label}{element}",
                    violation.hint, severity,
                )  # fmt: skip
                found.setdefault(signature, []).append(run.address)
    return [
        ConfigIssue(path, line, None, key, f"{cells_label(addresses)}: {message}", hint, severity)
        for (path, line, key, message, hint, severity), addresses in found.items()
    ]
