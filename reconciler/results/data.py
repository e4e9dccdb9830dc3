"""Per-task outcomes read from a run's ``results.csv`` by header name (pure).

The Platform does not document ``results.csv``'s columns (platform-api.md §7), so nothing
here depends on their order. A paired comparison needs ``PAIRED_COLUMNS``; without them
the caller falls back to an unpaired comparison of the summaries and says which columns
were missing. Optional columns add cost, tokens, categories and task checksums.

Outcomes follow the Platform's convention (docs/results.md, "One number per run"): every
attempt counts, and an ``errored`` (or ``cancelled``) attempt counts as not passed; errored
attempts are also counted apart, so every score can show them beside it. A scored attempt
passes when its ``reward`` (or ``score``) is at least the pass threshold (the config's
``pass_threshold``, else the catalog's; ``TaskOutcome.at_threshold``); while no threshold is
known the file's ``outcome`` column (the Platform's own decision) decides, and without one a
reward of at least ``PASS_REWARD``.

The file is untrusted input (issue 36): every number is read as a finite value in its
range (a reward in [0, ``max_reward``], counts and costs non-negative and below a bound
no real run reaches), never through ``int(float(...))`` of whatever the cell says
(``1e400`` is infinity, and converting it was an OverflowError in every results command).
A row whose outcome cannot be read (an outcome word that means neither pass nor fail,
``???``, ``n/a``, a reward out of range, a broken agent index) is not counted as a
failure: one such row makes the run's per-task data unreadable as a whole ("unreadable:
N rows"), so it is never compared (``missing`` says why). A cost or token cell that cannot
be read drops that column for the run.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

__all__ = [
    "PAIRED_COLUMNS",
    "AgentKey",
    "RunOutcomes",
    "TaskOutcome",
    "merge_retry",
    "parse_results_csv",
]

PAIRED_COLUMNS = ("task", "outcome")
"""What a paired, per-task comparison needs (``reward`` or ``score`` may stand in for
``outcome``); ``agent_index`` and ``attempt`` are read when present."""
PASS_REWARD = 1.0
MAX_AGENT_INDEX = 1023
"""A run has at most 8 agents; an index past this is not an agent's."""
MAX_COST_PER_ATTEMPT = 1e6
"""Dollars; sums of costs stay finite below it."""
MAX_TOKENS_PER_ATTEMPT = 1e12
_INFRA = frozenset({"errored", "error", "cancelled", "canceled"})
_PASSED = frozenset({"passed", "pass", "success", "resolved", "true", "1"})
_FAILED = frozenset({"failed", "fail", "failure", "unresolved", "false", "0", "incorrect"})


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
    """Attempts that passed."""
    attempts: int = 0
    """Every attempt, errored ones included (the headline's denominator)."""
    errored: int = 0
    """Attempts that errored or were cancelled: not passed, and counted apart."""
    rewards: list[float] = field(default_factory=list)
    """The reward of each scored attempt, when the file has rewards for all of them."""
    cost: float = 0.0
    tokens: int = 0
    checksum: str | None = None
    category: str | None = None

    @property
    def scored(self) -> int:
        """Attempts with a score (passed or failed)."""
        return self.attempts - self.errored

    @property
    def rate(self) -> float:
        """The task's share of passed attempts, an errored attempt counting as not passed."""
        return self.passes / self.attempts if self.attempts else 0.0

    @property
    def scored_rate(self) -> float | None:
        """The share of passed attempts among the scored ones (secondary, labelled so)."""
        return self.passes / self.scored if self.scored else None

    @property
    def mean_reward(self) -> float | None:
        """Mean reward over every attempt (an errored one scores 0); None without rewards."""
        if not self.attempts or len(self.rewards) != self.scored:
            return None
        return sum(self.rewards) / self.attempts

    def at_threshold(self, threshold: float | None) -> TaskOutcome:
        """The same attempts with passes counted as a reward of at least ``threshold``
        (unchanged without a threshold or without a reward for every scored attempt)."""
        if threshold is None or len(self.rewards) != self.scored:
            return self
        return replace(self, passes=sum(1 for r in self.rewards if r >= threshold))


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
    fractional: bool = False
    """Some reward lies strictly between 0 and 1: the run has a score beside pass@1."""
    unreadable: int = 0
    """Rows whose outcome could not be read; any makes the run's per-task data unusable
    (``missing`` says so and ``tasks`` is empty)."""
    retried: dict[int, dict[str, int]] = field(default_factory=dict)
    """Agent index -> task -> attempts that came from a retry run (``merge_retry``): they
    replace as many errored attempts of the run."""
    retry_runs: tuple[str, ...] = ()
    """The retry runs merged in, oldest first."""
    retries_left_out: tuple[str, ...] = ()
    """Retry runs of the run whose ``results.csv`` was not at hand: not merged (yet)."""

    @property
    def retried_attempts(self) -> int:
        """Attempts that came from retry runs, in all."""
        return sum(sum(tasks.values()) for tasks in self.retried.values())

    @property
    def paired(self) -> bool:
        return not self.missing

    def attempted(self, agent: int, threshold: float | None = None) -> dict[str, TaskOutcome]:
        """The agent's tasks with at least one attempt (errored ones count), with passes
        counted at ``threshold`` when one is known."""
        return {
            t: o.at_threshold(threshold) for t, o in self.tasks.get(agent, {}).items() if o.attempts
        }


class _Unreadable(ValueError):
    """A cell that is neither empty nor a number in its range."""


def _number(text: str | None, *, high: float = math.inf) -> float | None:
    """The cell as a finite number from 0 to ``high``; None when empty; ``_Unreadable``
    otherwise (``nan``, ``inf``, ``1e400``, ``-5``, ``n/a``)."""
    if text is None or not text.strip():
        return None
    stripped = text.strip()
    if len(stripped) > 40:
        raise _Unreadable(stripped[:40])
    try:
        value = float(stripped)
    except ValueError:
        raise _Unreadable(stripped) from None
    if not math.isfinite(value) or not 0.0 <= value <= high:
        raise _Unreadable(stripped)
    return value


def _optional(text: str | None, high: float) -> tuple[float, bool]:
    """A cost or token cell: (value, readable); an empty cell is 0, readable."""
    try:
        return _number(text, high=high) or 0.0, True
    except _Unreadable:
        return 0.0, False


def _column(header: Mapping[str, int], *names: str) -> int | None:
    for name in names:
        if name in header:
            return header[name]
    return None


def parse_results_csv(text: str, *, max_reward: float = 1.0) -> RunOutcomes:
    """Read ``results.csv`` text. Unknown columns are ignored; a file without the paired
    columns yields outcomes with ``missing`` set and no tasks, and so does a file with any
    unreadable outcome (see the module doc). ``max_reward``: the benchmark's highest
    reward, when it is not 1."""
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        return RunOutcomes(missing=(f"readable rows (not CSV: {exc})",))
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
        try:
            index_number = _number(cell(row, agent_col), high=MAX_AGENT_INDEX)
            if index_number is not None and not index_number.is_integer():
                raise _Unreadable(str(index_number))
            passed = _passed(cell(row, outcome_col), cell(row, reward_col), max_reward)
            reward = _number(cell(row, reward_col), high=max_reward)
        except _Unreadable:
            result.unreadable += 1
            continue
        index = int(index_number) if index_number is not None else 0
        if index not in result.agents:
            result.agents[index] = AgentKey(
                index, (cell(row, model_col) or "").strip(), (cell(row, harness_col) or "").strip()
            )
        outcome = result.tasks.setdefault(index, {}).setdefault(task, TaskOutcome())
        outcome.attempts += 1
        # Every attempt's cost and tokens count, errored ones too: the Platform bills them.
        cost, readable = _optional(cell(row, cost_col), MAX_COST_PER_ATTEMPT)
        outcome.cost += cost
        result.has_cost = result.has_cost and readable
        if tokens_col is not None:
            tokens, readable = _optional(cell(row, tokens_col), MAX_TOKENS_PER_ATTEMPT)
        else:
            tokens_in, read_in = _optional(cell(row, in_col), MAX_TOKENS_PER_ATTEMPT)
            tokens_out, read_out = _optional(cell(row, out_col), MAX_TOKENS_PER_ATTEMPT)
            tokens, readable = tokens_in + tokens_out, read_in and read_out
        outcome.tokens += int(tokens)
        result.has_tokens = result.has_tokens and readable
        if passed is None:
            outcome.errored += 1
        else:
            if reward is not None:
                outcome.rewards.append(reward)
                result.fractional = result.fractional or 0.0 < reward < max_reward
            outcome.passes += int(passed)
        checksum = cell(row, checksum_col)
        if checksum:
            outcome.checksum = checksum.strip()
        category = cell(row, category_col)
        if category:
            outcome.category = category.strip()
    if result.unreadable:
        rows_word = "row" if result.unreadable == 1 else "rows"
        return RunOutcomes(
            missing=(f"readable outcomes (unreadable: {result.unreadable} {rows_word})",),
            unreadable=result.unreadable,
        )
    return result


def _passed(status_cell: str | None, reward_cell: str | None, max_reward: float) -> bool | None:
    """Whether one attempt passed; None for an errored (infrastructure) attempt;
    ``_Unreadable`` when neither the outcome nor the reward says."""
    status = (status_cell or "").strip().lower()
    if status in _INFRA:
        return None
    if status in _PASSED:
        return True
    if status in _FAILED:
        return False
    reward = _number(reward_cell, high=max_reward)
    if reward is None:
        if status:
            raise _Unreadable(status)
        return None  # no outcome and no reward: the attempt did not run to a score
    return reward >= PASS_REWARD


def merge_retry(
    base: RunOutcomes, retry: RunOutcomes, agents: Sequence[int], label: str
) -> RunOutcomes:
    """``base`` with the attempts of ``retry`` (a run of its errored attempts,
    ``--retry-errored``) in place of as many of its errored ones: for each task the retry
    ran, its attempts are added and the same number of errored attempts taken out (never
    more than there were). ``agents``: the base run's agent index of each agent of the
    retry run. Costs and tokens add up (both runs were billed). ``label`` names the retry
    run in ``retry_runs``. A side that cannot pair is returned as ``base`` is."""
    if not base.paired or not retry.paired:
        return base
    tasks = {
        index: {t: replace(o, rewards=list(o.rewards)) for t, o in by.items()}
        for index, by in base.tasks.items()
    }
    retried = {index: dict(by) for index, by in base.retried.items()}
    known = dict(base.agents)
    for position, by_task in retry.tasks.items():
        if position >= len(agents):
            continue
        index = agents[position]
        mine = tasks.setdefault(index, {})
        for task, new in by_task.items():
            old = mine.get(task) or TaskOutcome()
            # The retry ran as many attempts as errored here; an errored attempt scored
            # nothing, so taking it out changes only the counts.
            taken = min(new.attempts, old.errored)
            merged = replace(
                old,
                attempts=old.attempts - taken + new.attempts,
                errored=old.errored - taken + new.errored,
                passes=old.passes + new.passes,
                rewards=[*old.rewards, *new.rewards],
                cost=old.cost + new.cost,
                tokens=old.tokens + new.tokens,
                checksum=old.checksum or new.checksum,
                category=old.category or new.category,
            )
            mine[task] = merged
            counted = retried.setdefault(index, {})
            counted[task] = counted.get(task, 0) + new.attempts
        if index not in known and position in retry.agents:
            known[index] = replace(retry.agents[position], index=index)
    return replace(
        base,
        agents=known,
        tasks=tasks,
        retried=retried,
        retry_runs=(*base.retry_runs, label),
        has_cost=base.has_cost and retry.has_cost,
        has_tokens=base.has_tokens and retry.has_tokens,
        fractional=base.fractional or retry.fractional,
    )
