"""The desired snapshot: one ``DesiredRun`` per validated config file (``config`` builds them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reconciler.model.base import DEFAULT_ATTEMPTS_PER_TASK, Frozen
from reconciler.model.decision import DecisionSpec
from reconciler.model.generator import CellOrigin, CellSource


class DesiredRun(Frozen, frozen=True, kw_only=True):
    """One validated config file: a request for one benchmark run."""

    address: str
    """Path relative to the benchmarks directory, without ``.toml``, ``/``-separated."""
    path: str
    """The file, relative to the repository root."""
    spec: dict[str, Any]
    """The submit request body (platform-api.md §9.6) built from the config. Secret *names* only."""
    spec_digest: str
    """``digest(spec)``: identical for configs that differ only in TOML style."""
    benchmark: str
    """``[experiment].benchmark`` as written: a key, name or ID."""
    task_set: str | None = None
    task_names: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    agent_count: int
    """``[[agents]]`` tables: the agents of the submit body."""
    attempts_per_task: int = DEFAULT_ATTEMPTS_PER_TASK
    """``attempts_per_task(spec["execution_config"])``, read once when the config is loaded."""
    harnesses: tuple[str | None, ...] = ()
    """Each agent's harness (None = the benchmark's official scaffold), in file order."""
    secret_names: tuple[str, ...] = ()
    """Every referenced secret record name, in reference order, de-duplicated."""
    judge_secret: str | None = None
    """``[execution].judge_api_key_secret``."""
    requested_by: str | None = None
    """Commit sha that last changed the file (filled by gitinfo when history is available)."""
    requested_subject: str | None = None
    """Subject line of that commit."""
    arrived_at: datetime | None = None
    """When the config's current content reached this branch: the committer time of the
    newest first-parent commit of HEAD that changed the file (for a merged pull request,
    the merge). None when unknown (uncommitted, or beyond a shallow clone's boundary). A run
    created before it cannot be one this repository's apply submitted for this content."""
    source: CellSource | None = None
    """For a run expanded from a generator (``*.matrix.toml``): the file and the cell."""
    origins: tuple[CellOrigin, ...] = ()
    """For a run expanded from a generator: which element set each key, and its line
    (``model.origin_of``), so a message about a key cites the element that set it."""
    reruns: tuple[str, ...] = ()
    """Commits whose ``Osmosis-Rerun`` trailer asks to re-run this address and that no apply
    has carried out yet (``engine.requests``): a submit of the address carries them out."""
    retry_requests: tuple[str, ...] = ()
    """Commits whose ``Osmosis-Retry-Errored`` trailer asks to retry this address's errored
    attempts and that no apply has carried out yet: the retry's submit carries them out."""
    moved_from: tuple[str, ...] = ()
    """Addresses a generator's ``[[moved]]`` block says this run was recorded under before."""
    decide: DecisionSpec | None = None
    """The config's ``[decide]`` table (docs/deciding.md); never part of ``spec`` or its
    digest, so adding or editing it never replaces a run."""

    def planned_attempts(self, tasks: int) -> int:
        """Attempts the Platform schedules for ``tasks`` selected tasks: tasks x agents x
        attempts per task (platform-api.md §9.6)."""
        return tasks * self.agent_count * self.attempts_per_task
