"""Per-task outcomes read from a run's ``results.csv`` by header name (pure).

The Platform does not document ``results.csv``'s columns (platform-api.md §7), so nothing
here depends on their order. A paired comparison needs ``PAIRED_COLUMNS``; without them
the caller falls back to an unpaired comparison of the summaries and says which columns
were missing. Optional columns add cost, tokens, categories and task checksums.

Outcomes: ``passed`` counts 1, ``failed`` 0; ``errored`` (and ``cancelled``) attempts are
infrastructure failures, kept out of the scores and counted separately, because an agent
should not be compared on attempts that never ran. Without an ``outcome`` column a
``reward`` (or ``score``) column is read as passed when it is at least ``PASS_REWARD``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "PAIRED_COLUMNS",
    "AgentKey",
    "RunOutcomes",
    "TaskOutcome",
    "parse_results_csv",
]

PAIRED_COLUMNS = ("task", "outcome")
"""What a paired, per-task comparison needs (``reward`` or ``score`` may stand in for
``outcome``); ``agent_index`` and ``attempt`` are read when present."""
PASS_REWARD = 1.0
_INFRA = frozenset({"errored", "error", "cancelled", "canceled"})
_PASSED = frozenset({"passed", "pass", "success", "resolved", "true", "1"})


@dataclass(frozen=True)
class AgentKey:
    """Who an agent is, as results.csv names it."""

    index: int
    model: str = ""
    harness: str = ""

    @property
    def label(self) -> str:
        model = self.model or f"agent {self.index + 1}"
        return f"{model} · {self.harness or 'default'}"


@dataclass
class TaskOutcome:
    """One agent's attempts at one task."""

    passes: int = 0
    attempts: int = 0
    """Scored attempts (passed or failed)."""
    errored: int = 0
    cost: float = 0.0
    tokens: int = 0
    checksum: str | None = None
    category: str | None = None

    @property
    def rate(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0


@dataclass
class RunOutcomes:
    """Every agent's per-task outcomes of one run."""

    agents: dict[int, AgentKey] = field(default_factory=dict)
    tasks: dict[int, dict[str, TaskOutcome]] = field(default_factory=dict)
    """Agent index -> task -> outcome."""
    missing: tuple[str, ...] = ()
    """Columns a paired comparison needs that the file lacks (empty: it can pair)."""
    has_cost: bool = False
    has_tokens: bool = False

    @property
    def paired(self) -> bool:
        return not self.missing

    def scored(self, agent: int) -> dict[str, TaskOutcome]:
        """The agent's tasks with at least one scored attempt."""
        return {t: o for t, o in self.tasks.get(agent, {}).items() if o.attempts}

    def attempts_per_task(self, agent: int) -> int:
        """The smallest number of scored attempts over the agent's tasks (pass@k's k)."""
        scored = self.scored(agent)
        return min((o.attempts for o in scored.values()), default=0)


def _number(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _column(header: Mapping[str, int], *names: str) -> int | None:
    for name in names:
        if name in header:
            return header[name]
    return None


def parse_results_csv(text: str) -> RunOutcomes:
    """Read ``results.csv`` text. Unknown columns are ignored; a file without the paired
    columns yields outcomes with ``missing`` set and no tasks."""
    reader = csv.reader(io.StringIO(text))
    rows = list(reader)
    if not rows:
        return RunOutcomes(missing=PAIRED_COLUMNS)
    header = {name.strip().lower(): i for i, name in enumerate(rows[0])}
    task_col = _column(header, "task", "task_name", "task_id")
    outcome_col = _column(header, "outcome", "status", "result")
    reward_col = _column(header, "reward", "score")
    missing: list[str] = []
    if task_col is None:
        missing.append("task")
    if outcome_col is None and reward_col is None:
        missing.append("outcome")
    if missing or task_col is None:
        return RunOutcomes(missing=tuple(missing))
    agent_col = _column(header, "agent_index")
    model_col = _column(header, "model")
    harness_col = _column(header, "harness")
    cost_col = _column(header, "cost_usd", "cost")
    in_col = _column(header, "input_tokens")
    out_col = _column(header, "output_tokens")
    tokens_col = _column(header, "tokens", "total_tokens")
    checksum_col = _column(header, "task_checksum", "checksum", "task_version")
    category_col = _column(header, "category")
    result = RunOutcomes(
        has_cost=cost_col is not None,
        has_tokens=tokens_col is not None or in_col is not None or out_col is not None,
    )

    def cell(row: Sequence[str], col: int | None) -> str | None:
        return row[col] if col is not None and col < len(row) else None

    for row in rows[1:]:
        if not row or task_col >= len(row):
            continue
        task = row[task_col].strip()
        if not task:
            continue
        index_number = _number(cell(row, agent_col))
        index = int(index_number) if index_number is not None else 0
        if index not in result.agents:
            result.agents[index] = AgentKey(
                index, (cell(row, model_col) or "").strip(), (cell(row, harness_col) or "").strip()
            )
        outcome = result.tasks.setdefault(index, {}).setdefault(task, TaskOutcome())
        status = (cell(row, outcome_col) or "").strip().lower()
        if status in _INFRA:
            outcome.errored += 1
            continue
        if outcome_col is not None and status:
            passed = status in _PASSED
        else:
            reward = _number(cell(row, reward_col))
            if reward is None:
                outcome.errored += 1
                continue
            passed = reward >= PASS_REWARD
        outcome.attempts += 1
        outcome.passes += int(passed)
        outcome.cost += _number(cell(row, cost_col)) or 0.0
        tokens = _number(cell(row, tokens_col))
        if tokens is None:
            tokens = (_number(cell(row, in_col)) or 0.0) + (_number(cell(row, out_col)) or 0.0)
        outcome.tokens += int(tokens)
        checksum = cell(row, checksum_col)
        if checksum:
            outcome.checksum = checksum.strip()
        category = cell(row, category_col)
        if category:
            outcome.category = category.strip()
    return result
