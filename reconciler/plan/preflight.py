"""Preflight: would the Platform accept this submit, and what would it cost?

Every paid item (submit, replace) goes through ``paid_item``: when a known rule says the
Platform would refuse the body, the item is ``blocked`` with the exact fix instead, so a plan
never shows a ``+`` that apply cannot carry out.
"""

from __future__ import annotations

from typing import Any

from reconciler.model import (
    Action,
    BenchmarkInfo,
    DesiredRun,
    Observation,
    PlanItem,
    Reason,
    glob_match,
    rejection_context,
)
from reconciler.plan.cost import estimate
from reconciler.plan.draft import Draft, plural


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
) -> PlanItem:
    """A submit or replace, with its cost, after preflight; ``blocked`` when it would fail."""
    benchmark = draft.observed.benchmarks.get(wanted.benchmark)
    problems, warnings = preflight(wanted, benchmark, draft.observed)
    tasks = task_count(wanted, benchmark)
    attempts = tasks * wanted.agent_count * wanted.attempts_per_task if tasks is not None else 0
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
        "warnings": tuple(warnings),
        "requested_by": wanted.requested_by,
        "requested_subject": wanted.requested_subject,
    }
    context = rejection_context(benchmark, _present_secrets(wanted, benchmark, draft.observed))
    fields["context"] = context
    cost = estimate(wanted, benchmark.id if benchmark else None, tasks, draft.costs)
    if cost is not None:
        fields.update(cost_usd_low=cost.low, cost_usd_high=cost.high, cost_basis=cost.basis)
    if not problems:
        refused = _remembered_refusal(draft, wanted, context)
        if refused:
            problems = [(Reason.PLATFORM_REFUSED, text) for text in refused]
    if problems:
        return PlanItem(
            action=Action.BLOCKED,
            reason=problems[0][0],
            details=tuple(text for _, text in problems),
            intended_action=action,
            intended_reason=reason,
            **fields,
        )
    return PlanItem(action=action, reason=reason, **fields)


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


def task_count(wanted: DesiredRun, benchmark: BenchmarkInfo | None) -> int | None:
    """Tasks the submit would select; the Platform's precedence is task_set > names > categories.

    An unknown ``task_set`` is silently expanded by the Platform to the whole benchmark, so
    that is what it costs. An empty ``task_names`` list is counted as the whole benchmark:
    over-estimating a budget is the safe side.
    """
    if benchmark is None:
        return len(wanted.task_names) if wanted.task_names else None
    if wanted.task_set:
        return benchmark.task_sets.get(wanted.task_set, benchmark.task_count)
    if wanted.task_names:
        return len(wanted.task_names)
    if wanted.categories:
        return sum(benchmark.categories.get(name, 0) for name in wanted.categories)
    return benchmark.task_count


def preflight(
    wanted: DesiredRun, benchmark: BenchmarkInfo | None, observed: Observation
) -> tuple[list[tuple[Reason, str]], list[str]]:
    """Every reason the submit would fail, each with its exact fix; and non-blocking warnings."""
    problems: list[tuple[Reason, str]] = []
    warnings: list[str] = []
    path = wanted.path
    if benchmark is None:
        problems.append(
            (
                Reason.BENCHMARK_NOT_FOUND,
                f'benchmark "{wanted.benchmark}" does not resolve by key, name or id in '
                f"workspace {observed.workspace}; fix: add it to the workspace on the Platform, "
                f"or correct [experiment].benchmark in {path}",
            )
        )
    elif benchmark.sync_status != "ready":
        progress = f"{benchmark.synced_task_count} of {benchmark.task_count} tasks synced"
        if benchmark.sync_status == "failed":
            text = (
                f"{benchmark.name} is not runnable: its task sync failed "
                f"({benchmark.sync_error or 'no reason given'}; {progress}); fix: retry its sync"
                f"{' at ' + benchmark.platform_url if benchmark.platform_url else ' on the Platform'}"
                ", then plan again"
            )
        else:
            text = (
                f"{benchmark.name} is still syncing its task list ({progress}, status "
                f"{benchmark.sync_status}); fix: plan again once it is ready"
                f"{' (' + benchmark.platform_url + ')' if benchmark.platform_url else ''}"
            )
        problems.append((Reason.BENCHMARK_NOT_READY, text))

    needed: list[tuple[str, str]] = [
        (name, f"referenced by {path}") for name in wanted.secret_names
    ]
    if benchmark is not None:
        needed += [
            (name, f"required by {benchmark.name}")
            for name in benchmark.required_secret_names
            if name not in wanted.secret_names
        ]
    if needed and observed.secrets is None:
        warnings.append(
            "secrets could not be listed, so these were not checked: "
            + ", ".join(name for name, _ in needed)
        )
    elif observed.secrets is not None:
        for name, why in needed:
            if name not in observed.secrets:
                problems.append(
                    (
                        Reason.SECRET_MISSING,
                        f"secret {name} ({why}) is not stored on the Platform; "
                        f"fix: `osmosis secret set {name}`",
                    )
                )

    if benchmark is None:
        return problems, warnings

    if (benchmark.requires_judge_model or benchmark.requires_judge_api_key) and not (
        wanted.judge_secret
    ):
        problems.append(
            (
                Reason.JUDGE_REQUIRED,
                f"{benchmark.name} is graded by an LLM judge and needs its credential; fix: "
                f"set [execution].judge_api_key_secret in {path} to a stored secret record name",
            )
        )
    for index, harness in enumerate(wanted.harnesses, start=1):
        if harness is None and benchmark.requires_harness:
            suggestion = (
                f'harness = "{benchmark.default_harness}"'
                if benchmark.default_harness
                else "harness"
            )
            problems.append(
                (
                    Reason.HARNESS_REQUIRED,
                    f"{benchmark.name} requires a harness but agent {index} has none; fix: set "
                    f"{suggestion} in [[agents]] {index} of {path}",
                )
            )
        elif harness is not None and not benchmark.supports_harness:
            problems.append(
                (
                    Reason.HARNESS_UNSUPPORTED,
                    f"{benchmark.name} runs only its official scaffold but agent {index} sets "
                    f'harness = "{harness}"; fix: remove harness from [[agents]] {index} of {path}',
                )
            )
        elif (
            harness is not None
            and benchmark.default_harness
            and harness != benchmark.default_harness
        ):
            warnings.append(
                f'agent {index} uses harness "{harness}", not {benchmark.name}\'s default '
                f'"{benchmark.default_harness}": scores not comparable with the published '
                "leaderboard"
            )

    info = f"`osmosis benchmark info {benchmark.key}`"
    if wanted.task_names:
        if benchmark.task_names:
            unknown = [n for n in wanted.task_names if n not in benchmark.task_names]
            if unknown:
                problems.append(
                    (
                        Reason.TASKS_NOT_FOUND,
                        f"{plural(len(unknown), 'task')} not in {benchmark.name}: "
                        f"{', '.join(unknown)}; fix: correct [tasks].task_names in {path} "
                        f"(list the tasks with {info})",
                    )
                )
        else:
            warnings.append(
                f"the catalog did not list {benchmark.name}'s tasks, so [tasks].task_names "
                "were not checked"
            )
    if wanted.categories:
        unknown = [c for c in wanted.categories if c not in benchmark.categories]
        if unknown:
            known = ", ".join(sorted(benchmark.categories)) or "none"
            problems.append(
                (
                    Reason.TASKS_NOT_FOUND,
                    f"{'category' if len(unknown) == 1 else 'categories'} not in "
                    f"{benchmark.name}: {', '.join(unknown)}; fix: use one of ({known}) in "
                    f"[tasks].categories of {path}",
                )
            )
    if wanted.task_set and wanted.task_set not in benchmark.task_sets:
        known = ", ".join(sorted(benchmark.task_sets)) or "none"
        problems.append(
            (
                Reason.TASKS_NOT_FOUND,
                f'task set "{wanted.task_set}" does not exist in {benchmark.name} (the Platform '
                f"would run every task instead); fix: use one of ({known}) or remove "
                f"[tasks].task_set in {path}",
            )
        )
    is_hle = "hle" in (benchmark.key.strip().lower(), wanted.benchmark.strip().lower())
    if is_hle and wanted.task_set != "parity":
        warnings.append(
            'For HLE, we recommend [tasks] task_set = "parity" so results are comparable with '
            "published scores. This submission uses the full or a custom task selection."
        )
    return problems, warnings
