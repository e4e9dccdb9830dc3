"""Policy rules checked against each config (allowed models and harnesses, required task
sets): a ``deny`` rule's violation is an error of that config, a ``warn`` rule's a warning,
each naming the rule, where the rule is written, and the file and line of the offending key.

Budgets per glob (``max_attempts``, ``max_cost_usd``) depend on what the plan would submit
and are checked by the plan's policy phase (``reconciler.plan.policy``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from reconciler import toml_locate as locate
from reconciler.errors import ConfigIssue
from reconciler.model import DesiredRun, PolicyRule, glob_match, model_identity

DEFAULT_HARNESS = "default"
"""How a rule names an agent without a harness (the benchmark's own scaffold)."""


def applies(rule: PolicyRule, run: DesiredRun) -> bool:
    if not glob_match(run.address, rule.match):
        return False
    return rule.benchmark is None or run.benchmark == rule.benchmark


def _allowed(value: str, patterns: Sequence[str]) -> bool:
    return any(value == p or fnmatchcase(value, p) for p in patterns)


class _Lines:
    """Lines of keys in config files, read only for a file that has a violation."""

    def __init__(self, repo_root: Path) -> None:
        self.root = repo_root
        self.scans: dict[str, locate.Positions | None] = {}

    def line(self, run: DesiredRun, path: tuple[str | int, ...]) -> int | None:
        if run.source is not None:
            return run.source.line
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
    """Every violation of every per-config rule, in run order then rule order."""
    checked = [r for r in rules if r.models or r.harnesses or r.task_set]
    if not checked:
        return []
    lines = _Lines(repo_root)
    issues: list[ConfigIssue] = []
    for run in runs:
        for rule in checked:
            if not applies(rule, run):
                continue
            severity = "error" if rule.effect == "deny" else "warning"
            label = f'policy "{rule.name}" ({rule.where}, {rule.effect})'

            def add(
                path: tuple[str | int, ...], key: str, message: str, hint: str,
                rule: PolicyRule = rule, severity: str = severity, label: str = label,
                run: DesiredRun = run,
            ) -> None:  # fmt: skip
                issues.append(
                    ConfigIssue(
                        run.path, lines.line(run, path), None, key,
                        f"{run.address}: {message}: {label}", hint, severity,
                    )
                )  # fmt: skip

            for index, agent in enumerate(run.spec.get("agents", [])):
                model = model_identity(agent.get("model", {}))
                if rule.models is not None and not _allowed(model, rule.models):
                    add(
                        ("agents", index, "model", "model"),
                        f"agents[{index}].model",
                        f'model "{model}" is not allowed',
                        "allowed here: " + ", ".join(rule.models),
                    )
                harness = agent.get("harness") or DEFAULT_HARNESS
                if rule.harnesses is not None and not _allowed(harness, rule.harnesses):
                    add(
                        ("agents", index, "harness"),
                        f"agents[{index}].harness",
                        f'harness "{harness}" is not allowed',
                        "allowed here: " + ", ".join(rule.harnesses),
                    )
            if rule.task_set is not None and run.task_set != rule.task_set:
                shown = f'"{run.task_set}"' if run.task_set else "no task set"
                add(
                    ("tasks", "task_set"),
                    "tasks.task_set",
                    f'{rule.benchmark} must use task_set "{rule.task_set}", this config has {shown}',
                    f'set task_set = "{rule.task_set}" in [tasks]',
                )
    return issues
