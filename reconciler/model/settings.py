"""``Settings``: the policy knobs, ``[tool.osmosis-reconciler]`` overlaid by flags."""

from __future__ import annotations

from typing import Literal, get_args

from reconciler.model.base import Frozen
from reconciler.model.policy import PolicyRule

DOWNLOAD_TYPES = ("summary", "results", "artifacts", "logs")

# The closed vocabularies of the settings: mypy checks every value written or compared, and
# ``config.project`` accepts exactly these (``SETTING_CHOICES``).
OnDelete = Literal["stop", "forget"]
OnChange = Literal["replace", "keep"]
Refresh = Literal["incremental", "full"]
Unmanaged = Literal["ignore", "summary", "list"]
Outputs = Literal["recorded", "disk"]
LockKind = Literal["local", "git"]
SETTING_CHOICES: dict[str, tuple[str, ...]] = {
    "on_delete": get_args(OnDelete),
    "on_change": get_args(OnChange),
    "unmanaged": get_args(Unmanaged),
    "outputs": get_args(Outputs),
    "lock": get_args(LockKind),
    "on_remove": get_args(OnDelete),
    "on_project_remove": get_args(OnDelete),
}
"""The settings a file may set to one of a few words, and the words, in the order messages
list them."""


class SmokeRule(Frozen, frozen=True, kw_only=True):
    """One ``smoke`` setting: submits of matching addresses planning more than ``above``
    attempts run a smoke run first (docs/smoke.md)."""

    addresses: tuple[str, ...] = ("**",)
    """Address globs the rule applies to."""
    above: int = 0
    """Planned attempts above which the smoke stage applies."""
    tasks: int = 1
    """Tasks of the smoke run: the first ones, in catalog order, of the config's selection."""
    min_score: float | None = None
    """Best pass@1 (a fraction) the smoke run must reach; None: no score is asked for."""
    task_names: tuple[str, ...] = ()
    """The smoke run's tasks, by name, when given: for a selection whose tasks the catalog
    does not list (a task set of HLE), where the first ``tasks`` cannot be chosen."""


class Settings(Frozen, frozen=True, kw_only=True):
    """Policy knobs: ``[tool.osmosis-reconciler]`` overlaid by command-line flags."""

    benchmarks: str = "benchmarks"
    state: str = "state/osmosis.lock"
    download_types: tuple[str, ...] = ("summary", "results")
    on_delete: OnDelete = "stop"
    """``stop`` or ``forget`` for an active run whose config was deleted."""
    on_change: OnChange = "replace"
    """``replace`` or ``keep`` for an active run whose config changed."""
    max_stops: int = 5
    max_attempts: int = 5000
    max_cost_usd: float | None = None
    """Budget guard in dollars: the estimated cost (upper end) of new submits; None: off."""
    parallelism: int = 8
    targets: tuple[str, ...] = ()
    """Address globs; empty = everything."""
    replace: tuple[str, ...] = ()
    """Addresses to re-run even though their config is unchanged."""
    retry_errored: tuple[str, ...] = ()
    """Address globs whose ended, downloaded run's errored attempts are re-run in a
    follow-up run (``--retry-errored``, an ``Osmosis-Retry-Errored`` trailer)."""
    skip: tuple[str, ...] = ()
    """Address globs held back (``Osmosis-Skip`` trailers)."""
    allow_mass_stop: bool = False
    allow_over_budget: bool = False
    refresh_only: bool = False
    download_running: bool = False
    ignore: tuple[str, ...] = ()
    """Address globs of config files kept in the tree but never submitted (templates,
    drafts); a file can also say so itself (``# osmosis-reconciler: ignore``)."""
    allow_foreign_state: bool = False
    """Accept a lockfile of another repository or lineage (``--allow-foreign-state``)."""
    refresh: Refresh = "incremental"
    """``incremental``: list only runs newer than the lockfile's watermark (cost does not
    grow with the workspace's history); ``full``: list every run (scheduled drift checks)."""
    unmanaged: Unmanaged = "summary"
    """Runs of the workspace this repository did not request: ``ignore``, ``summary`` (one
    line with their count) or ``list`` (every one; needs a full listing)."""
    outputs: Outputs = "recorded"
    """``recorded``: a complete download recorded in the lockfile is done even when its files
    are not on this disk (a fresh clone, a CI runner); ``disk``: missing files are fetched
    again. Files that are on disk are checked against their recorded sha256 either way."""
    lock: LockKind | None = None
    """``local`` (OS lock, one machine) or ``git`` (also a lock ref on the ``origin`` remote);
    None: ``git`` when the repository has an ``origin`` remote, else ``local``."""
    smoke: tuple[SmokeRule, ...] = ()
    """Smoke stages (``[[smoke]]``); empty: off."""
    skip_smoke: tuple[str, ...] = ()
    """Address globs that go straight to the full run (``--skip-smoke``, an
    ``Osmosis-Skip-Smoke`` trailer)."""
    lock_ttl: int = 120
    """Seconds a git lock stays valid without a renewal (the holder renews it every third)."""
    regression_margin_pp: float = 3.0
    """The margin, in percentage points, of ``osmosis-results`` verdicts: a change whose
    95% CI lies inside ±margin is "no change"; ``--fail-on-regression`` fails on "worse"."""
    settings_where: str = "[tool.osmosis-reconciler]"
    """Where a person changes a setting: ``osmosis.toml`` (or ``.osmosis.toml``) when the
    settings live there, else ``[tool.osmosis-reconciler]`` (of ``pyproject.toml``)."""
    policy: tuple[PolicyRule, ...] = ()
    """Policy rules (``[[policy]]`` in the settings): allowed models and harnesses, required
    task sets, budgets per address glob; ``deny`` fails the plan, ``warn`` warns."""
    allow_unestimated: bool = False
    """Let a plan with ``max_cost_usd`` set submit configs that have no cost estimate."""
    id: str | None = None
    """The project's id (``id`` in a project's settings file): it names the project's lock
    and state record beside the Platform and workspace; None: the repository is one project."""
    workspace: str | None = None
    """The Platform workspace (``workspace``); ``--workspace`` wins over it, and it wins
    over ``OSMOSIS_WORKSPACE`` (each project of a repository has its own)."""
    after: tuple[str, ...] = ()
    """Projects (ids) whose apply must succeed before this project's (``after``)."""
    on_remove: str | None = None
    """``stop`` or ``forget`` the runs of this project when its directory is deleted."""
    projects: tuple[str, ...] = ()
    """The root of many projects: globs of their directories."""
    on_project_remove: str = "forget"
    """The root's default for a deleted project's runs: ``forget`` or ``stop``."""
    unknown_outcome_listings: int = 3
    """Complete run listings without a matching run, after a submit whose outcome is
    unknown, before it is sent again (with ``unknown_outcome_quiet_minutes``)."""
    unknown_outcome_quiet_minutes: float = 30.0
    """Minutes since such a submit that those listings must span."""
    allow_duplicate: tuple[str, ...] = ()
    """Address globs that may pay for a run although an identical active run exists that
    this repository has no evidence for (``--allow-duplicate``, an
    ``Osmosis-Allow-Duplicate`` trailer; ``plan.twins``)."""
