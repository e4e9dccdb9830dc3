"""The submit rules known in advance, as data and pure functions that both sides read.

Two readers, one source of truth:

* the local Platform's submit route (``local_platform/app.py``) refuses a body with these
  rules (400 ``VALIDATION`` with ``issues``, or 409 for a benchmark that is not ready);
* the plan's preflight (``plan/preflight.py``) applies the same rules to the same body, so
  every config the local Platform refuses plans as ``!`` blocked with the Platform's own
  words, and the attempts a ``+`` promises are the tasks the Platform will schedule
  (``select_tasks``) x agents x ``attempts_per_task``.

The real Platform may have rules nobody wrote down (platform-api.md §13: ranges, workspace
limits, harness catalogue); those are learned from its refusals. The ones here are the
known rules: the page's (judge credential for HLE and GDPVal, ``[verifier]`` refused for
managed benchmarks, harness flags, a task selection that must select something) and our
stand-ins for what is not determinable (``EXECUTION_RANGES``), each kept as one table so a
Platform change is a one-line edit.

Task selection (``select_tasks``), where platform-api.md is silent, is our choice:

* ``task_set`` takes precedence over ``task_names``/``categories`` (§6.3, test docstring);
  the other two keys are then ignored, and a task set the benchmark does not have selects
  the whole benchmark (the route silently expands it, §6.3).
* ``task_names`` and ``categories`` together select the **union**: every named task plus
  every task of a listed category, each task once (a name listed twice, or named and also
  in a listed category, is one task). The spec says nothing about combining them; the
  union is what a person listing both most plausibly means ("these tasks, and those
  categories"), and it never under-counts a budget.
* An explicit empty list selects nothing from that key; a selection of no task at all is
  refused (``EMPTY_SELECTION``) rather than widened to the whole benchmark.

Nothing here does I/O or imports an edge library: the pure core imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any, TypeVar

from reconciler.model import DEFAULT_ATTEMPTS_PER_TASK
from reconciler.model import attempts_per_task as attempts_per_task  # the rule, re-exported

# --------------------------------------------------------------------------- data

EXECUTION_RANGES: Mapping[str, tuple[int, int]] = {
    "attempts_per_task": (1, 16),
    "max_concurrent_attempts": (1, 64),
}
"""Inclusive integer ranges of ``[execution]`` values. The Platform's are not determinable
(platform-api.md §9.2, §13); ``max_concurrent_attempts`` stands in for the page's
"workspace limits"."""
EXECUTION_DEFAULTS: Mapping[str, int] = {
    "attempts_per_task": DEFAULT_ATTEMPTS_PER_TASK,
    "max_concurrent_attempts": 4,
}
"""Route defaults when the key is absent (platform-api.md §9.2)."""

VERIFIER_REJECTED_SOURCE_TYPES = frozenset({"osmosis_managed"})
"""SDK code comment: 'Submit rejects the section for managed benchmarks'."""

NOT_FOUND_MESSAGE = (
    "Benchmark '{ref}' was not found in this workspace. Benchmark names are case-sensitive; "
    "use its key, exact name or ID, and add Harbor registry benchmarks to the workspace from "
    "the Platform first."
)
"""The 404 of a submit whose ``[experiment].benchmark`` does not resolve (our wording: the
Platform's is not determinable, §6.3)."""

NOT_READY_STATUS = 409
"""HTTP status of a submit against a benchmark whose ``sync_status`` is not ``ready``
(platform-api.md §6.3 emulator policy; the real status is not determinable)."""
NOT_READY_MESSAGES: Mapping[str, str] = {
    "pending": "{name} is still syncing its task list (sync queued); submit once it is ready.",
    "syncing": "{name} is still syncing its task list ({synced} of {total} tasks); "
    "submit once it is ready.",
    "failed": "{name} is not runnable: {error} Retry its sync at {url}.",
}
"""The refusal of a benchmark that is not ready, by ``sync_status`` (the CLI's wording, §5)."""
DEFAULT_SYNC_ERROR = "Failed to sync tasks"


class Rule(str, Enum):
    """The known rules a submit body can break (after its structure is valid)."""

    EXECUTION_RANGE = "execution_range"
    VERIFIER_REJECTED = "verifier_rejected"
    JUDGE_SECRET_REQUIRED = "judge_secret_required"
    JUDGE_MODEL_REQUIRED = "judge_model_required"
    HARNESS_REQUIRED = "harness_required"
    HARNESS_UNSUPPORTED = "harness_unsupported"
    UNKNOWN_TASK = "unknown_task"
    UNKNOWN_CATEGORY = "unknown_category"
    EMPTY_SELECTION = "empty_selection"


@dataclass(frozen=True)
class Violation:
    """One broken rule: which, where in the submit body, and the Platform's message."""

    rule: Rule
    key: str
    """Dotted key of the submit body, as the Platform's ``issues[].key`` names it."""
    message: str
    agent: int | None = None
    """0-based agent index for per-agent rules."""
    names: tuple[str, ...] = ()
    """The offending names (unknown tasks or categories)."""

    def as_issue(self) -> dict[str, str]:
        """The ``{key, message}`` issue of a 400 answer (platform-api.md §6.1)."""
        return {"key": self.key, "message": self.message}


@dataclass(frozen=True)
class CatalogFacts:
    """What the rules need to know about one benchmark, whichever side built it.

    The local Platform builds it from its catalog entry, the plan from the Platform's E2
    answer (``BenchmarkInfo``): the rules never see either shape.
    """

    name: str
    source_type: str | None = None
    supports_harness: bool = True
    requires_harness: bool = False
    default_harness: str | None = None
    requires_judge_model: bool = False
    requires_judge_api_key: bool = False
    judge_model_default: str | None = None
    task_count: int = 0
    tasks: tuple[tuple[str, str | None], ...] = ()
    """(name, category) of every task, in catalog order; empty when the catalog omitted them."""
    categories: Mapping[str, int] = field(default_factory=dict)
    task_sets: Mapping[str, int] = field(default_factory=dict)
    """Named task set -> its task count."""
    task_set_members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Named task set -> its tasks, where known (the local Platform knows; E2 does not say)."""
    unavailable_tasks: tuple[str, ...] = ()
    unavailable_reason: str | None = None

    @cached_property
    def task_names(self) -> frozenset[str]:
        """Every task name, for membership tests (computed once per facts object)."""
        return frozenset(name for name, _ in self.tasks)

    @cached_property
    def all_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.tasks)


Source = TypeVar("Source")


def cached_facts(build: Callable[[Source], CatalogFacts]) -> Callable[[Source], CatalogFacts]:
    """``build`` memoised per source object (an immutable catalog answer).

    Both sides hand the same object around for every config (or listed run) of one
    benchmark, so its task list is built once. The cache holds the object itself, so its
    ``id`` cannot be reused while cached; it is cleared when it reaches 64 entries.
    """
    cache: dict[int, tuple[Source, CatalogFacts]] = {}

    def facts_of(source: Source) -> CatalogFacts:
        cached = cache.get(id(source))
        if cached is not None and cached[0] is source:
            return cached[1]
        facts = build(source)
        if len(cache) >= 64:
            cache.clear()
        cache[id(source)] = (source, facts)
        return facts

    facts_of.__doc__ = build.__doc__
    return facts_of


@dataclass(frozen=True)
class Selection:
    """The tasks a submit selects (``select_tasks``)."""

    count: int
    names: tuple[str, ...] | None
    """The selected tasks in catalog order; None when this side cannot list them."""
    task_set_expanded: bool = False
    """The task set does not exist in the benchmark, so every task is selected."""
    ignored: tuple[str, ...] = ()
    """``tasks_config`` keys ignored because ``task_set`` takes precedence."""
    estimated: bool = False
    """The catalog did not list its tasks: ``count`` is an upper bound from the counts."""


# --------------------------------------------------------------------------- selection


def select_tasks(facts: CatalogFacts, tasks_config: Mapping[str, Any] | None) -> Selection:
    """The tasks a submit with this ``tasks_config`` selects (semantics: module docstring)."""
    config = tasks_config or {}
    all_names = facts.all_names
    if "task_set" in config:
        ignored = tuple(k for k in ("task_names", "categories") if k in config)
        task_set = config["task_set"]
        if task_set in facts.task_sets:
            members = facts.task_set_members.get(task_set)
            count = len(members) if members is not None else facts.task_sets[task_set]
            return Selection(count, members, ignored=ignored)
        return _everything(facts, all_names, expanded=True, ignored=ignored)
    if "task_names" not in config and "categories" not in config:
        return _everything(facts, all_names)
    names = list(dict.fromkeys(config.get("task_names") or ()))
    categories = set(config.get("categories") or ())
    if not facts.tasks:
        # No task list to intersect with: count every name as a task and every listed
        # category in full, capped at the benchmark; over-counting is the safe side.
        guess = len(names) + sum(facts.categories.get(c, 0) for c in categories)
        if facts.task_count:
            guess = min(guess, facts.task_count)
        return Selection(guess, None, estimated=True)
    wanted = set(names)
    selected = tuple(n for n, cat in facts.tasks if n in wanted or cat in categories)
    return Selection(len(selected), selected)


def _everything(
    facts: CatalogFacts,
    all_names: tuple[str, ...],
    *,
    expanded: bool = False,
    ignored: tuple[str, ...] = (),
) -> Selection:
    if all_names:
        return Selection(len(all_names), all_names, task_set_expanded=expanded, ignored=ignored)
    return Selection(facts.task_count, None, task_set_expanded=expanded, ignored=ignored)


def planned_attempts(selection: Selection, body: Mapping[str, Any]) -> int:
    """Tasks x agents x attempts_per_task: what the Platform schedules for the body
    (``model.attempts_per_task`` reads the last, for the plan and the local Platform)."""
    agents = body.get("agents")
    count = len(agents) if isinstance(agents, list) else 0
    return selection.count * count * attempts_per_task(body.get("execution_config"))


# --------------------------------------------------------------------------- rules


def needs_judge_secret(facts: CatalogFacts) -> bool:
    """Whether a submit must name ``[execution].judge_api_key_secret``.

    A benchmark graded by an LLM judge (``requires_judge_model``, HLE and GDPVal per the
    page) or by a pinned grader that needs a key (``requires_judge_api_key``, BrowseComp)
    needs the judge credential; older servers send only the first flag.
    """
    return facts.requires_judge_model or facts.requires_judge_api_key


def execution_violations(execution: Mapping[str, Any] | None) -> list[Violation]:
    """Values of ``[execution]`` outside ``EXECUTION_RANGES`` (or not integers)."""
    found: list[Violation] = []
    for key, (low, high) in EXECUTION_RANGES.items():
        if execution is None or key not in execution:
            continue
        value = execution[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            found.append(
                Violation(
                    Rule.EXECUTION_RANGE,
                    f"execution_config.{key}",
                    f"{key} must be an integer from {low} to {high}",
                )
            )
    return found


def violations(body: Mapping[str, Any], facts: CatalogFacts) -> list[Violation]:
    """Every known rule the (structurally valid) body breaks against this benchmark.

    In the order the local Platform reports them: ``[execution]`` ranges, per-agent harness
    rules, the judge, the verifier, then the task selection.
    """
    execution = body.get("execution_config") or {}
    found = execution_violations(execution)
    for index, agent in enumerate(body.get("agents") or ()):
        harness = agent.get("harness") if isinstance(agent, Mapping) else None
        if harness and not facts.supports_harness:
            found.append(
                Violation(
                    Rule.HARNESS_UNSUPPORTED,
                    f"agents.{index}.harness",
                    f"{facts.name} runs only with its official scaffold; remove harness.",
                    agent=index,
                )
            )
        elif not harness and facts.requires_harness:
            suffix = (
                f' (its published scores use harness = "{facts.default_harness}")'
                if facts.default_harness
                else ""
            )
            found.append(
                Violation(
                    Rule.HARNESS_REQUIRED,
                    f"agents.{index}.harness",
                    f"{facts.name} requires a harness{suffix}.",
                    agent=index,
                )
            )
    judge = execution.get("judge_api_key_secret")
    if needs_judge_secret(facts) and not (isinstance(judge, str) and judge):
        extra = (
            f" (judge model defaults to {facts.judge_model_default})"
            if facts.judge_model_default
            else ""
        )
        found.append(
            Violation(
                Rule.JUDGE_SECRET_REQUIRED,
                "execution_config.judge_api_key_secret",
                f"{facts.name} uses an LLM judge and requires judge_api_key_secret{extra}.",
            )
        )
    if (
        facts.requires_judge_model
        and not facts.judge_model_default
        and not execution.get("judge_model")
    ):
        found.append(
            Violation(
                Rule.JUDGE_MODEL_REQUIRED,
                "execution_config.judge_model",
                f"{facts.name} has no default judge model; set judge_model.",
            )
        )
    if execution.get("verifier_secrets") and facts.source_type in VERIFIER_REJECTED_SOURCE_TYPES:
        found.append(
            Violation(
                Rule.VERIFIER_REJECTED,
                "execution_config.verifier_secrets",
                f"{facts.name} is a managed benchmark; verifier secrets are not accepted.",
            )
        )
    found.extend(selection_violations(body.get("tasks_config"), facts))
    return found


def selection_violations(
    tasks_config: Mapping[str, Any] | None, facts: CatalogFacts
) -> list[Violation]:
    """Unknown task names or categories, or a selection of no task (not under a task set)."""
    config = tasks_config or {}
    found: list[Violation] = []
    if "task_set" not in config and facts.tasks:
        known = facts.task_names
        unavailable = set(facts.unavailable_tasks)
        unknown = [n for n in dict.fromkeys(config.get("task_names") or ()) if n not in known]
        for name in unknown:
            why = f" ({facts.unavailable_reason or 'unavailable'})" if name in unavailable else ""
            what = "Unavailable" if name in unavailable else "Unknown"
            found.append(
                Violation(
                    Rule.UNKNOWN_TASK,
                    "tasks_config.task_names",
                    f"{what} task '{name}' in {facts.name}{why}",
                    names=(name,),
                )
            )
    if "task_set" not in config:
        for name in dict.fromkeys(config.get("categories") or ()):
            if name not in facts.categories:
                found.append(
                    Violation(
                        Rule.UNKNOWN_CATEGORY,
                        "tasks_config.categories",
                        f"Unknown category '{name}' in {facts.name}",
                        names=(name,),
                    )
                )
    if not found and select_tasks(facts, config).count == 0:
        found.append(
            Violation(
                Rule.EMPTY_SELECTION,
                "tasks_config",
                "The task selection matches no tasks: list task names or categories, "
                "or omit [tasks] to run every task.",
            )
        )
    return found


def referenced_secrets(body: Mapping[str, Any]) -> list[str]:
    """Every secret record name the body references, in reference order, de-duplicated
    (platform-api.md §9.5): model keys, harness keys, judge, verifier, ``secrets.required``."""
    names: list[str] = []
    agents = [a for a in body.get("agents") or () if isinstance(a, Mapping)]
    for agent in agents:
        model = agent.get("model") or {}
        if model.get("type") in ("provider", "endpoint") and isinstance(
            model.get("api_key_secret"), str
        ):
            names.append(model["api_key_secret"])
    for agent in agents:
        if isinstance(agent.get("harness_api_key_secret"), str):
            names.append(agent["harness_api_key_secret"])
    execution = body.get("execution_config") or {}
    if isinstance(execution.get("judge_api_key_secret"), str):
        names.append(execution["judge_api_key_secret"])
    names.extend(n for n in execution.get("verifier_secrets") or () if isinstance(n, str))
    names.extend(n for n in (body.get("secrets") or {}).get("required") or () if isinstance(n, str))
    return list(dict.fromkeys(names))


def needed_secrets(body: Mapping[str, Any], required_secret_names: Sequence[str]) -> list[str]:
    """Records a submit needs: the body's references, then the benchmark's implicit ones (D2)."""
    return list(dict.fromkeys([*referenced_secrets(body), *required_secret_names]))


def missing_secrets_message(names: Sequence[str]) -> str:
    """The Platform's 404 wording for missing records (platform-api.md §6.3)."""
    return f"Secret(s) not found: {', '.join(names)}"


def not_ready_message(
    name: str, sync_status: str, synced: int, total: int, error: str | None, url: str | None
) -> str:
    """The refusal of a benchmark whose task list is not ``ready``."""
    template = NOT_READY_MESSAGES.get(sync_status, NOT_READY_MESSAGES["pending"])
    return template.format(
        name=name,
        synced=synced,
        total=total,
        error=(error or DEFAULT_SYNC_ERROR).rstrip(".") + ".",
        url=url or "the benchmark's Platform page",
    )
