"""One number per run: each of a run's numbers defined once, computed once, labelled where
shown (pure). docs/results.md ("One number per run") states the definitions; every surface
(the plan and apply tables, the pull-request comment, ``osmosis-results`` text, JSON and
HTML) shows a run's numbers through ``RunNumbers`` and the ``*_text`` functions here.

* **pass@1** (the headline, the Platform's convention, so it agrees with the run page and
  the leaderboard): the mean over tasks of each task's share of passed attempts, an errored
  attempt counting as not passed; a pass is a reward at or above the pass threshold (the
  config's ``pass_threshold``, else the catalog's). Its interval is Wilson's over the tasks
  (the Platform's too), and it is always shown with the errored attempts beside it.
* **pass rate among scored attempts**: the same mean with errored attempts left out; a
  secondary figure, labelled, never the headline.
* **score**: where rewards are fractional, the mean reward (same averaging, an errored
  attempt scoring 0), labelled "score".
* **k**: the attempts per task the config asked for; tasks with fewer are counted and named
  (``short_of_k``), never turned into a smaller k.
* **cost per task** = total cost ÷ tasks; **cost per attempt** = total cost ÷ attempts; the
  same for tokens. Both labelled, never one under the other's name.

A run whose ``results.csv`` is at hand is counted here (``count_numbers``); otherwise the
numbers are the Platform's summary recorded in the lockfile (``summary_numbers``), which the
Platform computed by the same definitions (its per-attempt figures are its per-task ones ÷ k).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.model import AgentResult
from reconciler.results.data import TaskOutcome

if TYPE_CHECKING:
    from reconciler.results.stats import Interval

# ``results.stats`` (and ``statistics``) load only when a run's numbers are made: the plan
# command imports this module for its results table and must start without them.

__all__ = [
    "HEADLINE",
    "RunNumbers",
    "cost_text",
    "count_numbers",
    "errored_text",
    "headline_text",
    "interval_text",
    "money",
    "numbers_to_dict",
    "pass_at_k_text",
    "percent",
    "scored_rate_text",
    "summary_numbers",
    "tokens",
    "tokens_text",
]

HEADLINE = "pass@1 [95% CI] · errored"
"""The headline column's label, the same on every surface."""
PRECISION = 4
"""Decimals the Platform reports a fraction to; pass@1 and its interval are kept at it."""


@dataclass(frozen=True)
class RunNumbers:
    """One agent's numbers in one run (fractions in [0, 1]; None: not known)."""

    source: str
    """``results.csv`` (counted here) or ``Platform summary`` (recorded in the lockfile)."""
    asked_k: int
    """Attempts per task the config asked for."""
    tasks: int | None
    """Tasks with at least one attempt."""
    attempts: int | None = None
    """Every attempt, errored ones included."""
    errored: int | None = None
    """Attempts that errored (counted as not passed in pass@1)."""
    pass_at_1: float | None = None
    ci: Interval | None = None
    """95% Wilson interval of pass@1 over the tasks."""
    scored_rate: float | None = None
    """pass@1 among scored attempts only (secondary)."""
    score: float | None = None
    """Mean reward, only where rewards are fractional."""
    pass_threshold: float | None = None
    """The threshold a pass was counted at; None: the Platform's own outcome decided."""
    short_of_k: tuple[str, ...] = ()
    """Tasks with fewer attempts than ``asked_k`` (named; pass@k leaves them out)."""
    pass_at_k: float | None = None
    k: int | None = None
    """The k of ``pass_at_k``: ``asked_k``, or the Platform's deepest for a summary."""
    pass_hat_k: float | None = None
    """pass^k: all k attempts pass (results.csv only)."""
    cost_total: float | None = None
    cost_per_task: float | None = None
    cost_per_attempt: float | None = None
    tokens_per_task: float | None = None
    tokens_per_attempt: float | None = None


def count_numbers(
    tasks: Mapping[str, TaskOutcome],
    *,
    asked_k: int,
    has_cost: bool = False,
    has_tokens: bool = False,
    fractional: bool = False,
    pass_threshold: float | None = None,
) -> RunNumbers:
    """The numbers of one agent's attempted tasks (``RunOutcomes.attempted``, passes
    already counted at ``pass_threshold``)."""
    from reconciler.results import stats

    attempted = {t: o for t, o in tasks.items() if o.attempts}
    count = len(attempted)
    if not count:
        return RunNumbers(source="results.csv", asked_k=asked_k, tasks=0, attempts=0, errored=0)
    outcomes = list(attempted.values())
    attempts = sum(o.attempts for o in outcomes)
    rates = [o.rate for o in outcomes]
    p1 = stats.mean(rates)
    wilson = stats.wilson(p1 * count, count)
    # At the Platform's precision (4 decimals), so a number shown from a run's file and the
    # same number from its recorded summary round to the same digits (35.75 from 0.357464
    # would otherwise show 35.7 here and 35.8 there).
    ci = stats.Interval(round(wilson.low, PRECISION), round(wilson.high, PRECISION), "wilson")
    scored = [r for r in (o.scored_rate for o in outcomes) if r is not None]
    score = None
    if fractional:
        rewards = [o.mean_reward for o in outcomes]
        if all(r is not None for r in rewards):
            score = stats.mean([r for r in rewards if r is not None])
    short = tuple(sorted(t for t, o in attempted.items() if o.attempts < asked_k))
    pass_k = hat_k = None
    eligible = [o for o in outcomes if o.attempts >= asked_k]
    if asked_k > 1 and eligible:
        pass_k = stats.mean([stats.pass_at_k(o.attempts, o.passes, asked_k) for o in eligible])
        hat_k = stats.mean([stats.pass_hat_k(o.attempts, o.passes, asked_k) for o in eligible])
    cost = math.fsum(o.cost for o in outcomes) if has_cost else None
    used = float(sum(o.tokens for o in outcomes)) if has_tokens else None
    return RunNumbers(
        source="results.csv",
        asked_k=asked_k,
        tasks=count,
        attempts=attempts,
        errored=sum(o.errored for o in outcomes),
        pass_at_1=round(p1, PRECISION),
        ci=ci,
        scored_rate=stats.mean(scored) if scored else None,
        score=score,
        pass_threshold=pass_threshold,
        short_of_k=short,
        pass_at_k=pass_k,
        k=asked_k if pass_k is not None else None,
        pass_hat_k=hat_k,
        cost_total=cost,
        cost_per_task=cost / count if cost is not None else None,
        cost_per_attempt=cost / attempts if cost is not None else None,
        tokens_per_task=used / count if used is not None else None,
        tokens_per_attempt=used / attempts if used is not None else None,
    )


def summary_numbers(agent: AgentResult, asked_k: int | None = None) -> RunNumbers:
    """The numbers the Platform recorded for one agent (its summary, in the lockfile):
    pass@1 and its interval as the run page shows them; per attempt = per task ÷ k."""
    from reconciler.results.stats import Interval

    k = asked_k or agent.attempts_per_task or 1
    ci = None
    if agent.ci_low is not None and agent.ci_high is not None:
        ci = Interval(agent.ci_low, agent.ci_high, "wilson")
    tasks = agent.n
    return RunNumbers(
        source="Platform summary",
        asked_k=k,
        tasks=tasks,
        attempts=tasks * k if tasks is not None else None,
        errored=agent.errored,
        pass_at_1=agent.pass_at_1,
        ci=ci,
        pass_at_k=agent.pass_at_k,
        k=agent.k if agent.pass_at_k is not None else None,
        cost_total=agent.cost_per_task * tasks
        if agent.cost_per_task is not None and tasks is not None
        else None,
        cost_per_task=agent.cost_per_task,
        cost_per_attempt=agent.cost_per_task / k if agent.cost_per_task is not None else None,
        tokens_per_task=agent.tokens_per_task,
        tokens_per_attempt=agent.tokens_per_task / k if agent.tokens_per_task is not None else None,
    )


# --------------------------------------------------------------------------- text


def percent(value: float | None) -> str:
    """``86.2%``."""
    return "–" if value is None else f"{value * 100:.1f}%"


def interval_text(ci: Interval | None) -> str:
    """``[81.1–90.0]`` (percent)."""
    if ci is None or ci.method == "none":
        return "–"
    return f"[{ci.low * 100:.1f}–{ci.high * 100:.1f}]"


def errored_text(numbers: RunNumbers) -> str:
    """``12 errored`` (``? errored`` when the source does not say)."""
    return f"{'?' if numbers.errored is None else f'{numbers.errored:,}'} errored"


def headline_text(numbers: RunNumbers) -> str:
    """``86.2% [81.1–90.0] · 12 errored``: pass@1, its interval, the errored attempts."""
    if numbers.pass_at_1 is None:
        return "–"
    text = percent(numbers.pass_at_1)
    if numbers.ci is not None:
        text += " " + interval_text(numbers.ci)
    return f"{text} · {errored_text(numbers)}"


def scored_rate_text(numbers: RunNumbers) -> str:
    """The secondary rate, labelled: ``90.5% among scored attempts``."""
    if numbers.scored_rate is None:
        return "–"
    return f"{percent(numbers.scored_rate)} among scored attempts"


def pass_at_k_text(numbers: RunNumbers) -> str:
    """``pass@3 91.0%``."""
    if numbers.pass_at_k is None or numbers.k is None:
        return "–"
    return f"pass@{numbers.k} {percent(numbers.pass_at_k)}"


def money(value: float | None) -> str:
    if value is None:
        return "–"
    # Cheap tasks cost fractions of a cent; two decimals would show them all as $0.00.
    return f"${value:.4f}" if 0 < value < 0.01 else f"${value:,.2f}"


def tokens(value: float | None) -> str:
    if value is None:
        return "–"
    if value >= 10_000:
        return f"{value / 1000:,.0f}k"
    return f"{value:,.0f}"


def cost_text(numbers: RunNumbers) -> str:
    """``$1.61/task · $0.32/attempt``."""
    if numbers.cost_per_task is None:
        return "–"
    return f"{money(numbers.cost_per_task)}/task · {money(numbers.cost_per_attempt)}/attempt"


def tokens_text(numbers: RunNumbers) -> str:
    """``177k/task · 35k/attempt``."""
    if numbers.tokens_per_task is None:
        return "–"
    return f"{tokens(numbers.tokens_per_task)}/task · {tokens(numbers.tokens_per_attempt)}/attempt"


# --------------------------------------------------------------------------- json


def _round(value: float | None) -> float | None:
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return round(value, 6)


def numbers_to_dict(numbers: RunNumbers) -> dict[str, Any]:
    """The numbers as JSON, with the same names on every document that carries them."""
    ci = numbers.ci
    return {
        "source": numbers.source,
        "pass_at_1": _round(numbers.pass_at_1),
        "ci": None
        if ci is None or ci.method == "none"
        else {"low": _round(ci.low), "high": _round(ci.high), "method": ci.method},
        "errored_attempts": numbers.errored,
        "attempts": numbers.attempts,
        "tasks": numbers.tasks,
        "attempts_per_task": numbers.asked_k,
        "tasks_short_of_k": list(numbers.short_of_k),
        "pass_rate_scored": _round(numbers.scored_rate),
        "score": _round(numbers.score),
        "pass_threshold": numbers.pass_threshold,
        "k": numbers.k,
        "pass_at_k": _round(numbers.pass_at_k),
        "pass_hat_k": _round(numbers.pass_hat_k),
        "cost_total": _round(numbers.cost_total),
        "cost_per_task": _round(numbers.cost_per_task),
        "cost_per_attempt": _round(numbers.cost_per_attempt),
        "tokens_per_task": _round(numbers.tokens_per_task),
        "tokens_per_attempt": _round(numbers.tokens_per_attempt),
    }
