"""Policy rules as data (``[[policy]]`` in the settings): allowed models and harnesses,
required task sets and budgets, per address glob. Pure data; ``config.project`` reads them,
``config.policy`` checks each config against them, the plan's policy phase checks budgets.

This module imports only ``reconciler.model.base`` so that ``model`` can re-export it.
"""

from __future__ import annotations

from reconciler.model.base import Frozen

POLICY_EFFECTS = ("deny", "warn")


class PolicyRule(Frozen, frozen=True, kw_only=True):
    """One rule: what it applies to (``match`` globs, optionally one ``benchmark``), what it
    requires, and whether a violation fails the plan (``deny``) or is a warning (``warn``)."""

    name: str
    match: tuple[str, ...] = ("**",)
    """Address globs the rule applies to (``*`` within a segment, ``dir/**`` below dir)."""
    effect: str = "deny"
    benchmark: str | None = None
    """Only configs of this benchmark (key, as written in ``[experiment].benchmark``)."""
    models: tuple[str, ...] | None = None
    """Allowed model globs (``openai/*``; a hosted model is ``base_model:lora_model_name``)."""
    harnesses: tuple[str, ...] | None = None
    """Allowed harnesses (``default`` = the benchmark's own scaffold, no harness set)."""
    task_set: str | None = None
    """The task set the matching configs must select (``[tasks].task_set``)."""
    max_attempts: int | None = None
    """New attempts of the plan's submits and replaces under ``match``, at most."""
    max_cost_usd: float | None = None
    """Estimated dollars (upper end) of those, at most."""
    where: str = ""
    """Where the rule is written (``osmosis.toml:12``), for messages."""
