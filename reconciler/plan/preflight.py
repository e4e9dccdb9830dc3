"""Preflight: would the Platform accept this submit, and what would it cost?

Every paid item (submit, replace) goes through ``paid_item``: when a known rule says the
Platform would refuse the body, the item is ``blocked`` with the Platform's own words and
the fixes that make it pass, so a plan never shows a ``+`` that apply cannot carry out.

The rules and the task selection are ``reconciler.plan.submit_rules``, the module the local
Platform's submit route reads too: the two cannot disagree about what is refused or about
how many tasks a selection schedules. This module adds what only the plan can: the fixes
(``Fix``: a command that works when typed, or an exact edit), the nearest names from the
catalog, and warnings that never block.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reconciler.errors import closest
from reconciler.loopback import is_loopback_url
from reconciler.model import (
    Action,
    BenchmarkFacts,
    BenchmarkInfo,
    BenchmarkRef,
    Blocked,
    Cost,
    DesiredRun,
    Fix,
    Observation,
    PlanItem,
    Reason,
    glob_match,
    rejection_context,
)
from reconciler.plan import submit_rules
from reconciler.plan.cost import estimate
from reconciler.plan.draft import Draft, plural
from reconciler.plan.smoke import stage_paid_item
from reconciler.plan.submit_rules import CatalogFacts, Rule, Selection, Violation

LOCAL_PLATFORM = "local"
EMULATOR = "osmosis-platform-emulator"
SECRET_PLACEHOLDER = "VALUE"
"""What a secret hint pipes in: the person replaces it with the credential."""
NEAREST_CUTOFF = 0.6
"""``difflib`` similarity a catalog name needs to be offered as "did you mean"."""

RULE_REASONS: Mapping[Rule, Reason] = {
    Rule.EXECUTION_RANGE: Reason.EXECUTION_INVALID,
    Rule.VERIFIER_REJECTED: Reason.VERIFIER_REJECTED,
    Rule.JUDGE_SECRET_REQUIRED: Reason.JUDGE_REQUIRED,
    Rule.JUDGE_MODEL_REQUIRED: Reason.JUDGE_REQUIRED,
    Rule.HARNESS_REQUIRED: Reason.HARNESS_REQUIRED,
    Rule.HARNESS_UNSUPPORTED: Reason.HARNESS_UNSUPPORTED,
    Rule.UNKNOWN_TASK: Reason.TASKS_NOT_FOUND,
    Rule.UNKNOWN_CATEGORY: Reason.TASKS_NOT_FOUND,
    Rule.EMPTY_SELECTION: Reason.TASKS_EMPTY,
}


SELECTION_REASONS = frozenset({Reason.TASKS_NOT_FOUND, Reason.TASKS_EMPTY})


@dataclass(frozen=True)
class Problem:
    """One reason the submit would be refused: what the Platform says, and the fixes."""

    reason: Reason
    message: str
    fixes: tuple[Fix, ...] = ()
    advice: str | None = None
    """A fix that is not a command or an edit ("wait for the sync"), in words."""

    @property
    def text(self) -> str:
        steps = [fix.text for fix in self.fixes]
        if self.advice:
            steps.append(self.advice)
        if not steps:
            return self.message
        return f"{self.message.rstrip('.')}; fix: {' and '.join(steps)}"


@dataclass
class Preflight:
    """What preflight found for one desired run."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    selection: Selection | None = None
    """The tasks the Platform would select; None when the benchmark did not resolve."""


def paid_item(
    draft: Draft,
    action: Action,
    reason: Reason,
    wanted: DesiredRun,
    *,
    run_id: str | None = None,
    run_name: str | None = None,
    before: str | None = None,
    changes: tuple[str, ...] = (),
    after_smoke: str | None = None,
    resend_full: bool = False,
) -> PlanItem:
    """A submit or replace, with its cost, after preflight; ``blocked`` when it would fail;
    its smoke stage when a ``smoke`` rule applies (``after_smoke``: the smoke run that ended
    well, so this is the full run; ``resend_full``: a lost full run's submit sent again)."""
    benchmark = draft.observed.benchmarks.get(wanted.benchmark)
    found = preflight(wanted, benchmark, draft.observed)
    tasks = found.selection.count if found.selection is not None else task_count(wanted, None)
    attempts = wanted.planned_attempts(tasks) if tasks is not None else 0
    fields: dict[str, Any] = {
        "address": wanted.address,
        "run_id": run_id,
        "run_name": run_name,
        "before_digest": before,
        "after_digest": wanted.spec_digest,
        "spec": wanted.spec,
        "benchmark_id": benchmark.id if benchmark else None,
        "task_count": tasks,
        "attempts": attempts,
        "changes": changes,
        "warnings": tuple(found.warnings),
        "requested_by": wanted.requested_by,
        "requested_subject": wanted.requested_subject,
        "reruns": wanted.reruns,
    }
    if benchmark is not None and (
        benchmark.source_url is not None or benchmark.pass_threshold is not None
    ):
        fields["benchmark"] = BenchmarkFacts(
            source_url=benchmark.source_url, pass_threshold=benchmark.pass_threshold
        )
    context = rejection_context(benchmark, _present_secrets(wanted, benchmark, draft.observed))
    fields["context"] = context
    cost = estimate(wanted, benchmark.id if benchmark else None, tasks, draft.costs)
    if cost is not None:
        fields["cost"] = Cost(usd_low=cost.low, usd_high=cost.high, basis=cost.basis)
    problems = found.problems
    if not problems:
        refused = _remembered_refusal(draft, wanted, context)
        if refused:
            problems = [Problem(Reason.PLATFORM_REFUSED, text) for text in refused]
    if problems:
        return PlanItem(
            action=Action.BLOCKED,
            reason=problems[0].reason,
            details=tuple(problem.text for problem in problems),
            blocked=Blocked(
                intended_action=action,
                intended_reason=reason,
                fixes=tuple(fix for problem in problems for fix in problem.fixes),
            ),
            **fields,
        )
    return stage_paid_item(
        draft.settings,
        PlanItem(action=action, reason=reason, **fields),
        wanted,
        found.selection.names if found.selection is not None else None,
        after_smoke=after_smoke,
        resend_full=resend_full,
    )


def _present_secrets(
    wanted: DesiredRun, benchmark: BenchmarkInfo | None, observed: Observation
) -> list[str] | None:
    """The secret records this submit needs that exist now (None: secrets not listed)."""
    if observed.secrets is None:
        return None
    needed = set(wanted.secret_names)
    if benchmark is not None:
        needed.update(benchmark.required_secret_names)
    return sorted(needed & observed.secrets)


def _remembered_refusal(draft: Draft, wanted: DesiredRun, context: str) -> list[str]:
    """The Platform's own words for a refusal of exactly this body in exactly this context,
    unless a re-run was asked for; empty when there is none."""
    rejection = draft.recorded.rejections.get(wanted.address)
    if (
        rejection is None
        or rejection.spec_digest != wanted.spec_digest
        or rejection.context != context
        or glob_match(wanted.address, draft.settings.replace)
    ):
        return []
    when = rejection.rejected_at.strftime("%Y-%m-%d %H:%M UTC")
    status = f"HTTP {rejection.status}" if rejection.status else "a refusal"
    lines = [f"the Platform refused this exact config on {when} ({status}): {rejection.message}"]
    lines += [f"Platform: {issue}" for issue in rejection.issues]
    lines.append(
        f"fix: change {wanted.path} as the Platform says and commit it; if the Platform's "
        "rules changed since, ask for a retry as it is with an empty commit: `git commit "
        f'--allow-empty -m "Retry {wanted.address}" -m "Osmosis-Rerun: {wanted.address}"`'
    )
    return lines


# --------------------------------------------------------------------------- cost


@submit_rules.cached_facts
def facts_of(benchmark: BenchmarkInfo) -> CatalogFacts:
    """The rules' view of the Platform's E2 answer (once per frozen ``BenchmarkInfo``)."""
    tasks = benchmark.tasks
    if not tasks and not benchmark.categories:
        # Names without categories are a full list only when there are no categories to
        # place them in; otherwise the selection is estimated from the counts.
        tasks = tuple((name, None) for name in sorted(benchmark.task_names))
    return CatalogFacts(
        name=benchmark.name,
        source_type=benchmark.source_type,
        supports_harness=benchmark.supports_harness,
        requires_harness=benchmark.requires_harness,
        default_harness=benchmark.default_harness,
        requires_judge_model=benchmark.requires_judge_model,
        requires_judge_api_key=benchmark.requires_judge_api_key,
        judge_model_default=benchmark.judge_model_default,
        task_count=benchmark.task_count,
        tasks=tasks,
        categories=benchmark.categories,
        task_sets=benchmark.task_sets,
        unavailable_tasks=benchmark.unavailable_tasks,
        unavailable_reason=benchmark.unavailable_reason,
    )


def select(wanted: DesiredRun, benchmark: BenchmarkInfo) -> Selection:
    """The tasks the Platform selects for this config (``submit_rules.select_tasks``)."""
    return submit_rules.select_tasks(facts_of(benchmark), wanted.spec.get("tasks_config"))


def task_count(wanted: DesiredRun, benchmark: BenchmarkInfo | None) -> int | None:
    """Tasks the submit would select, with the Platform's semantics (``submit_rules``).

    Without a resolved benchmark only explicit task names can be counted (each once).
    """
    if benchmark is None:
        return len(set(wanted.task_names)) if wanted.task_names else None
    return select(wanted, benchmark).count


# --------------------------------------------------------------------------- checks


def preflight(
    wanted: DesiredRun, benchmark: BenchmarkInfo | None, observed: Observation
) -> Preflight:
    """Every reason the submit would fail, in the order the Platform checks them (the
    benchmark, its sync, the known rules, then secrets), each with its fixes; and
    non-blocking warnings."""
    found = Preflight()
    if benchmark is None:
        found.problems.append(_not_found(wanted, observed))
        meant = meant_benchmark(wanted.benchmark, observed)
        if meant is not None:
            # The rest of the config is checked against the benchmark it most likely names,
            # so fixing the name does not reveal its other errors one plan later.
            note = f" (checked against {meant.name}, the benchmark it most likely names)"
            found.problems.extend(
                replace(problem, message=problem.message.rstrip(".") + note)
                for problem in _rule_problems(wanted, meant, facts_of(meant), observed)
            )
        else:
            # The [execution] ranges hold for every benchmark: check them anyway.
            execution = wanted.spec.get("execution_config")
            found.problems.extend(
                _execution_problem(violation, wanted.path, execution or {})
                for violation in submit_rules.execution_violations(execution)
            )
    else:
        if benchmark.sync_status != "ready":
            found.problems.append(_not_ready(benchmark, observed))
        facts = facts_of(benchmark)
        found.selection = submit_rules.select_tasks(facts, wanted.spec.get("tasks_config"))
        problems = _rule_problems(wanted, benchmark, facts, observed)
        if benchmark.sync_status != "ready":
            # The task list is still paging in: the Platform refuses the submit for that
            # alone (409), and [tasks] can only be checked against the finished list.
            problems = [p for p in problems if p.reason not in SELECTION_REASONS]
            found.warnings.append(
                f"{benchmark.name}'s task list is not complete yet, so [tasks] is checked "
                "once it is ready"
            )
        found.problems.extend(problems)
        found.warnings.extend(_warnings(wanted, benchmark, found.selection))
    found.problems.extend(_secret_problems(wanted, benchmark, observed, found.warnings))
    return found


def _not_found(wanted: DesiredRun, observed: Observation) -> Problem:
    message = submit_rules.NOT_FOUND_MESSAGE.format(ref=wanted.benchmark)
    nearest = nearest_benchmark(wanted.benchmark, observed.catalog or ())
    if nearest is not None:
        label = nearest.key if nearest.name == nearest.key else f"{nearest.key} ({nearest.name})"
        return Problem(
            Reason.BENCHMARK_NOT_FOUND,
            f"{message} Did you mean {label}?",
            (Fix(file=wanted.path, key="experiment.benchmark", value=nearest.key),),
        )
    listing = (
        _emulator(observed, "benchmark", "list")
        if _is_local(observed)
        else "osmosis benchmark list"
    )
    known = ""
    if observed.catalog:
        keys = ", ".join(ref.key for ref in observed.catalog[:12])
        more = len(observed.catalog) - 12
        known = f" Benchmarks in workspace {observed.workspace}: {keys}" + (
            f" and {more} more." if more > 0 else "."
        )
    add = "add the benchmark to the workspace on the Platform"
    if _is_local(observed):  # the local Platform's catalog page is this command
        add = f"add it to the workspace: `{_emulator(observed, 'benchmark', 'add', wanted.benchmark)}`"
    return Problem(
        Reason.BENCHMARK_NOT_FOUND,
        message + known,
        advice=f"correct [experiment].benchmark in {wanted.path} (list them with "
        f"`{listing}`), or {add}",
    )


def meant_benchmark(ref: str, observed: Observation) -> BenchmarkInfo | None:
    """The catalog entry (E2) of the benchmark an unknown ``ref`` most likely names, when
    the observation read it (``engine.observe`` reads the nearest of each unknown name)."""
    nearest = nearest_benchmark(ref, observed.catalog or ())
    if nearest is None:
        return None
    return observed.benchmarks.get(nearest.key)


def nearest_benchmark(ref: str, catalog: Sequence[BenchmarkRef]) -> BenchmarkRef | None:
    """The catalog entry ``ref`` most plausibly meant: the same key, name or id in another
    case or with stray spaces, else the closest key or name (``difflib``)."""
    wanted = ref.strip().lower()
    if not wanted:
        return None
    by_label: dict[str, BenchmarkRef] = {}
    for entry in catalog:
        for label in (entry.key, entry.name, entry.id):
            by_label.setdefault(label.lower(), entry)
    if wanted in by_label:
        return by_label[wanted]
    close = closest(wanted, list(by_label), NEAREST_CUTOFF)
    return by_label[close] if close else None


def _not_ready(benchmark: BenchmarkInfo, observed: Observation) -> Problem:
    message = submit_rules.not_ready_message(
        benchmark.name,
        benchmark.sync_status,
        benchmark.synced_task_count,
        benchmark.task_count,
        benchmark.sync_error,
        benchmark.platform_url,
    )
    if _is_local(observed):
        # The local Platform's sync only moves on when told to: this command is its
        # stand-in for the registry finishing (or a retried sync succeeding).
        command = _emulator(
            observed, "benchmark", "sync", benchmark.key, "--status", "ready", workspace=False
        )
        return Problem(Reason.BENCHMARK_NOT_READY, message, (Fix(command=command),))
    if benchmark.sync_status == "failed":
        where = f"at {benchmark.platform_url}" if benchmark.platform_url else "on the Platform"
        advice = f"retry its sync {where}, then plan again"
    else:
        advice = "plan again once its task list is ready"
    return Problem(Reason.BENCHMARK_NOT_READY, message, advice=advice)


def _rule_problems(
    wanted: DesiredRun, benchmark: BenchmarkInfo, facts: CatalogFacts, observed: Observation
) -> list[Problem]:
    spec = wanted.spec
    path = wanted.path
    execution = spec.get("execution_config") or {}
    problems: list[Problem] = []
    found = submit_rules.violations(spec, facts)
    for violation in found:
        reason = RULE_REASONS[violation.rule]
        if violation.rule is Rule.EXECUTION_RANGE:
            problems.append(_execution_problem(violation, path, execution))
        elif violation.rule is Rule.VERIFIER_REJECTED:
            fix = Fix(file=path, key="verifier", remove=True)
            problems.append(Problem(reason, violation.message, (fix,)))
        elif violation.rule is Rule.JUDGE_SECRET_REQUIRED:
            name = _judge_secret(spec, benchmark, observed)
            fix = Fix(file=path, key="execution.judge_api_key_secret", value=name)
            problems.append(Problem(reason, violation.message, (fix,)))
        elif violation.rule is Rule.JUDGE_MODEL_REQUIRED:
            advice = f"set execution.judge_model in {path} to the judge model to use"
            problems.append(Problem(reason, violation.message, advice=advice))
        elif violation.rule is Rule.HARNESS_REQUIRED:
            key = f"agents[{violation.agent}].harness"
            if benchmark.default_harness:
                fix = Fix(file=path, key=key, value=benchmark.default_harness)
                problems.append(Problem(reason, _agent(violation), (fix,)))
            else:
                advice = f"set {key} in {path}"
                problems.append(Problem(reason, _agent(violation), advice=advice))
        elif violation.rule is Rule.HARNESS_UNSUPPORTED:
            fix = Fix(file=path, key=f"agents[{violation.agent}].harness", remove=True)
            problems.append(Problem(reason, _agent(violation), (fix,)))
        elif violation.rule in (Rule.UNKNOWN_TASK, Rule.UNKNOWN_CATEGORY):
            task = violation.rule is Rule.UNKNOWN_TASK
            same = [v for v in found if v.rule is violation.rule]
            if violation is not same[0]:
                continue  # one problem for all unknown names of a key, one corrected list
            problems.append(
                _unknown_names(
                    reason,
                    same,
                    [name for name, _ in facts.tasks] if task else list(facts.categories),
                    list(dict.fromkeys((wanted.task_names if task else wanted.categories) or ())),
                    Fix(file=path, key="tasks.task_names" if task else "tasks.categories"),
                    "tasks" if task else "categories",
                    _info_command(benchmark, observed),
                )
            )
        elif violation.rule is Rule.EMPTY_SELECTION:
            if facts.tasks:
                fix = Fix(file=path, key="tasks.task_names", value=[facts.tasks[0][0]])
                problems.append(Problem(reason, violation.message, (fix,)))
            else:
                problems.append(
                    Problem(reason, violation.message, advice=f"edit [tasks] in {path}")
                )
    return problems


def _execution_problem(violation: Violation, path: str, execution: Mapping[str, Any]) -> Problem:
    """An ``[execution]`` value out of range, with the nearest valid value as the fix."""
    name = violation.key.rsplit(".", 1)[1]
    fix = Fix(file=path, key=f"execution.{name}", value=_clamped(name, execution.get(name)))
    return Problem(RULE_REASONS[violation.rule], violation.message, (fix,))


def _agent(violation: Violation) -> str:
    assert violation.agent is not None
    return f"Agent {violation.agent + 1}: {violation.message}"


def _clamped(name: str, value: Any) -> int:
    """The valid value nearest to what was written (``"2"`` and ``2.0`` mean 2)."""
    low, high = submit_rules.EXECUTION_RANGES[name]
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return submit_rules.EXECUTION_DEFAULTS[name]
    return min(max(value, low), high)


def _judge_secret(spec: Mapping[str, Any], benchmark: BenchmarkInfo, observed: Observation) -> str:
    """The record to name as the judge credential: one for the judge model's provider
    (``openai/gpt-5`` -> a name containing ``OPENAI``), referenced or stored, else the first
    model key, else a name for a new record."""
    execution = spec.get("execution_config") or {}
    judge = execution.get("judge_model") or benchmark.judge_model_default or ""
    provider = judge.split("/", 1)[0].upper() if isinstance(judge, str) and "/" in judge else ""
    referenced = submit_rules.referenced_secrets(spec)
    stored = sorted(observed.secrets or ())
    if provider:
        for name in [*referenced, *stored]:
            if provider in name:
                return name
    for agent in spec.get("agents") or ():
        model = agent.get("model") or {}
        if model.get("type") in ("provider", "endpoint") and model.get("api_key_secret"):
            return str(model["api_key_secret"])
    return "JUDGE_API_KEY"


def nearest_names(name: str, candidates: Iterable[str]) -> str | None:
    """The catalog name ``name`` most plausibly meant (``difflib``), if any is close."""
    pool = list(candidates)
    folded = {candidate.lower(): candidate for candidate in pool}
    if name.strip().lower() in folded:
        return folded[name.strip().lower()]
    return closest(name, pool, NEAREST_CUTOFF)


def _unknown_names(
    reason: Reason,
    violations: list[Violation],
    candidates: list[str],
    written: list[str],
    edit: Fix,
    words: str,
    info: str,
) -> Problem:
    """Unknown task names or categories, each with its nearest catalog name, and the
    corrected list as one edit when every unknown name has a nearest one."""
    unknown = [v.names[0] for v in violations]
    nearest = {name: nearest_names(name, candidates) for name in unknown}
    message = "; ".join(
        f"{v.message} (did you mean '{nearest[v.names[0]]}'?)" if nearest[v.names[0]] else v.message
        for v in violations
    )
    advice = f"list the {words} with `{info}`"
    if all(nearest.values()):
        corrected = list(dict.fromkeys(nearest.get(name) or name for name in written))
        return Problem(reason, message, (edit.model_copy(update={"value": corrected}),))
    return Problem(reason, message, advice=f"correct {edit.key} in {edit.file} ({advice})")


def _info_command(benchmark: BenchmarkInfo, observed: Observation) -> str:
    if _is_local(observed):
        return _emulator(observed, "benchmark", "info", benchmark.key, workspace=False)
    return f"osmosis benchmark info {shlex.quote(benchmark.key)}"


def _secret_problems(
    wanted: DesiredRun,
    benchmark: BenchmarkInfo | None,
    observed: Observation,
    warnings: list[str],
) -> list[Problem]:
    implicit = benchmark.required_secret_names if benchmark is not None else ()
    referenced = set(submit_rules.referenced_secrets(wanted.spec))
    needed = submit_rules.needed_secrets(wanted.spec, implicit)
    if not needed:
        return []
    if observed.secrets is None:
        warnings.append(
            "secrets could not be listed, so these were not checked: " + ", ".join(needed)
        )
        return []
    problems = []
    for name in needed:
        if name in observed.personal_secrets:
            warnings.append(
                f"secret {name} exists only at personal scope (yours): this plan sees it, but "
                "an apply in CI, with the workspace's token, will not and the submit will "
                f"fail there; fix: `{secret_command(name, observed)}` (store it at workspace "
                "scope)"
            )
        if name in observed.secrets:
            continue
        owner = benchmark.name if benchmark is not None else wanted.benchmark
        why = f"referenced by {wanted.path}" if name in referenced else f"required by {owner}"
        # A misspelt name must not get only the fix that creates the misspelt record.
        close = closest(name, sorted(observed.secrets), 0.75)
        if close and name in referenced:
            why += (
                f'; did you mean "{close}", which exists? Then fix the name in '
                f"{wanted.path} instead of creating {name}"
            )
        elsewhere = observed.secrets_elsewhere.get(name)
        if elsewhere:
            places = " and ".join(
                f"workspace {workspace!r} ({SCOPE_WORDS.get(scope, scope)})"
                for workspace, scope in elsewhere
            )
            why += (
                f"; not in workspace {_workspace_words(observed.workspace)}, but a secret of "
                f"that name exists in {places}: store it in this workspace (the fix below), "
                f"or plan against that one (--workspace {shlex.quote(elsewhere[0][0])})"
            )
        problems.append(
            Problem(
                Reason.SECRET_MISSING,
                f"{submit_rules.missing_secrets_message([name])} ({why})",
                (Fix(command=secret_command(name, observed)),),
            )
        )
    return problems


SCOPE_WORDS = {"workspace": "workspace scope", "user": "personal scope, yours"}
"""A secret record's scope as a message names it."""


def _workspace_words(label: str) -> str:
    """A workspace label as a message names it: ``'local'``, or the repository's."""
    if label.startswith("git:"):
        return f"of repository {label[4:]}"
    return repr(label)


def secret_command(name: str, observed: Observation) -> str:
    """The command that stores secret ``name`` where this plan's Platform finds it.

    Always workspace scope: runs submitted from CI use the CI token's identity, which does
    not see a person's personal records (personal is the Platform's default, S2).
    """
    if _is_local(observed):
        command = _emulator(observed, "secret", "set", name, "--scope", "workspace")
        return f"echo {SECRET_PLACEHOLDER} | {command}"
    workspace = observed.workspace
    if workspace.startswith("git:"):
        # The osmosis CLI selects the repository's workspace from the Git checkout itself.
        return f"osmosis secret set {shlex.quote(name)} --scope workspace"
    return (
        f"osmosis --workspace {shlex.quote(workspace)} secret set {shlex.quote(name)} "
        "--scope workspace"
    )


def _is_local(observed: Observation) -> bool:
    """The embedded local Platform, or a loopback URL (``osmosis-platform-emulator serve``)."""
    return observed.platform == LOCAL_PLATFORM or is_loopback_url(observed.platform)


def _emulator(observed: Observation, *args: str, workspace: bool = True) -> str:
    """An ``osmosis-platform-emulator`` command aimed at this plan's local Platform."""
    words = [EMULATOR, *args]
    if workspace:
        label = observed.workspace
        words += ["--git", label[4:]] if label.startswith("git:") else ["--workspace", label]
    if observed.platform != LOCAL_PLATFORM:
        words += ["--platform", observed.platform]
    return " ".join(shlex.quote(word) for word in words)


# --------------------------------------------------------------------------- warnings


def _warnings(wanted: DesiredRun, benchmark: BenchmarkInfo, selection: Selection) -> list[str]:
    warnings: list[str] = []
    tasks_config = wanted.spec.get("tasks_config") or {}
    if selection.task_set_expanded:
        warnings.append(
            f'task set "{tasks_config.get("task_set")}" does not exist in {benchmark.name}: '
            f"the Platform runs every task ({plural(selection.count, 'task')}) instead; "
            f"remove [tasks].task_set from {wanted.path} to say so, or select tasks"
        )
    if selection.ignored:
        keys = " and ".join(f"[tasks].{key}" for key in selection.ignored)
        warnings.append(
            f"{keys} {'is' if len(selection.ignored) == 1 else 'are'} ignored: "
            "task_set takes precedence on the Platform"
        )
    if selection.estimated:
        warnings.append(
            f"the catalog did not list {benchmark.name}'s tasks, so [tasks] was not checked "
            f"and is counted as at most {plural(selection.count, 'task')}"
        )
    for index, harness in enumerate(wanted.harnesses, start=1):
        if (
            harness is not None
            and benchmark.supports_harness
            and benchmark.default_harness
            and harness != benchmark.default_harness
        ):
            warnings.append(
                f'agent {index} uses harness "{harness}", not {benchmark.name}\'s default '
                f'"{benchmark.default_harness}": scores not comparable with the published '
                "leaderboard"
            )
    recommended = benchmark.recommended_task_sets
    if recommended and wanted.task_set not in recommended:
        chosen = recommended[0]
        count = benchmark.task_sets.get(chosen)
        size = f" ({plural(count, 'task')})" if count is not None else ""
        warnings.append(
            f'For {benchmark.name}, we recommend [tasks] task_set = "{chosen}"{size} so results '
            "are comparable with published scores. This submission uses the full or a custom "
            "task selection."
        )
    return warnings
