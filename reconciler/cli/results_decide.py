"""``osmosis-results decide ADDR [--replay]``: a decision as the lockfile records it, and
its replay from the downloaded results (docs/deciding.md; issue 39)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from reconciler.cli.output import Output
from reconciler.errors import UsageError
from reconciler.exit_codes import Ending
from reconciler.model import LockState
from reconciler.results.data import RunOutcomes
from reconciler.results.runs import RecordedResult, address_runs

__all__ = ["decide_command"]


def decide_command(
    args: argparse.Namespace,
    output: Output,
    state: LockState,
    words: list[str],
    load: Callable[[RecordedResult], RunOutcomes | None],
) -> Ending:
    from reconciler.results.sequential.record import (
        baseline_diffs,
        first_difference,
        paired_diffs,
        report,
    )

    if len(words) != 1:
        raise UsageError(
            f"osmosis-results decide ADDR: expected one address, got {len(words)}",
            "e.g. osmosis-results decide tb/ab (add --replay to recompute every look)",
        )
    address = words[0]
    record = state.decisions.get(address)
    if record is None:
        known = ", ".join(sorted(state.decisions)) or "none"
        raise UsageError(
            f"{address}: no decision recorded in the lockfile (decisions: {known})",
            "a config with [decide] records one when its first batch is applied",
        )
    used = record.batch_ends[-1] if record.batch_ends else 0
    per_task = record.dollars_spent / used if used else None
    body = {"address": address, **report(record, per_task)}
    if args.replay:
        by_id = {run.run_id: run for run in address_runs(state, address)}
        outcomes = []
        for run_id in record.batch_runs:
            run = by_id.get(run_id)
            got = load(run) if run is not None else None
            if got is not None:
                outcomes.append(got)
        if record.baseline_run is not None and record.spec.baseline is not None:
            accepted = next(
                (
                    run
                    for run in address_runs(state, record.spec.baseline)
                    if run.run_id == record.baseline_run
                ),
                None,
            )
            theirs = load(accepted) if accepted is not None else None
            diffs = baseline_diffs(outcomes, theirs) if theirs is not None else {}
        else:
            diffs = paired_diffs(outcomes)
        difference = first_difference(record, diffs)
        body["replay"] = "match" if difference is None else difference
    if output.machine:
        output.result("results_decide", body)
    else:
        output.show(_text(body))
    if args.replay and body["replay"] != "match":
        return Ending.FAILED
    return Ending.DONE


def _text(body: dict[str, object]) -> str:
    looks = body["looks"]
    assert isinstance(looks, list)
    lines = [
        f"{body['address']}: {body['verdict']}"
        + (f" ({body['reason']})" if body.get("reason") else ""),
        f"  tasks {body['tasks_used']} of {body['max_tasks']} (fixed design "
        f"{body['fixed_tasks']}), {body['batches']} batch(es), α spent "
        f"{float(body['alpha_spent']):.4f}",  # type: ignore[arg-type]
        f"  dollars spent ${float(body['dollars_spent']):,.2f}"  # type: ignore[arg-type]
        + (
            f", saved ${float(body['dollars_saved']):,.2f} against the fixed design"  # type: ignore[arg-type]
            if body.get("dollars_saved") is not None
            else ""
        ),
    ]
    for look in looks:
        lines.append(
            f"  look {look['index']}: {look['tasks']} tasks, Δ̂ {look['estimate'] * 100:+.1f} pts, "
            f"statistic {look['statistic']:+.3f} vs boundary ±{look['boundary']:.3f}, "
            f"α spent {look['alpha_spent']:.4f}: {look['verdict']}"
        )
    if "replay" in body:
        lines.append(str(body["replay"]))
    return "\n".join(lines) + "\n"
