"""``osmosis-plan --watch``: re-plan whenever a config under the benchmarks directory changes.

The Platform is observed once; later plans reuse that observation (fetching catalog info
only for a benchmark name not seen before), so editing a file never causes a request storm.

With ``--format json`` (or ``jsonl``) every plan is one complete document on one line of
stdout (JSON Lines), and errors and the "Watching" note go to stderr.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import watchfiles

from reconciler.cli.output import render_plan
from reconciler.engine.load import load_desired
from reconciler.engine.plan import make_plan
from reconciler.errors import ConfigError, NotFoundError, ReconcilerError
from reconciler.exit_codes import Ending
from reconciler.plan import compute_plan
from reconciler.render import plan_to_dict

if TYPE_CHECKING:
    from reconciler.cli.output import Output
    from reconciler.engine.context import Context
    from reconciler.engine.snapshots import Snapshots
    from reconciler.model import DesiredRun, Observation

CLEAR = "\x1b[2J\x1b[H"


def watch_plans(
    ctx: Context,
    fmt: str,
    output: Output,
    *,
    max_plans: int | None = None,
) -> Ending:
    """Plan now, then after every change, in ``fmt``; done when stopped (^C ends it as
    usual)."""
    bench_dir = ctx.repo_root / ctx.settings.benchmarks
    out = output.out
    tty = out.isatty() and not output.machine
    color = output.color
    plans = 0
    # Observed once; later plans load only the configs and reuse the rest.
    snapshots: Snapshots | None = None

    def show(first: bool) -> None:
        nonlocal plans, snapshots
        if tty and not first:
            out.write(CLEAR)
        try:
            if snapshots is None:
                plan, snapshots = make_plan(ctx, output)
            else:
                configs = load_desired(ctx, output)
                desired = configs.runs
                observation = _fill_missing_benchmarks(ctx, desired, snapshots.observation)
                snapshots = replace(
                    snapshots,
                    desired=desired,
                    observation=observation,
                    generators=configs.generators,
                )
                plan = compute_plan(
                    snapshots.desired,
                    snapshots.state,
                    snapshots.observation,
                    ctx.settings,
                    snapshots.generators,
                )
            if output.machine:
                output.document_line("plan", plan_to_dict(plan))
            else:
                out.write(render_plan(plan, fmt, color=color))
        except ConfigError as exc:
            people = output.people
            for issue in exc.issues:
                people.write(f"{issue.severity}: {issue.render()}\n")
        except ReconcilerError as exc:
            output.people.write(f"Error: {exc.message}\n")
        output.people.write(f"\nWatching {ctx.settings.benchmarks}/ for changes (Ctrl-C to stop)\n")
        output.people.flush()
        out.flush()
        plans += 1

    # Start watching before the first plan, so an edit made as soon as "Watching" shows is
    # never missed; the first (timed-out, empty) batch says the watcher is running.
    watcher = watchfiles.watch(
        bench_dir,
        debounce=200,
        watch_filter=_toml_filter,
        yield_on_timeout=True,
        rust_timeout=100,
    )
    next(watcher, None)
    show(first=True)
    if max_plans is not None and plans >= max_plans:
        return Ending.DONE
    for changes in watcher:
        if changes:
            show(first=False)
        if max_plans is not None and plans >= max_plans:
            break
    return Ending.DONE


def _toml_filter(_change: watchfiles.Change, path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.endswith(".toml") and not name.startswith(".")


def _fill_missing_benchmarks(
    ctx: Context, desired: tuple[DesiredRun, ...], observation: Observation
) -> Observation:
    """``observation`` with catalog info for every benchmark ``desired`` names."""
    missing = sorted({d.benchmark for d in desired} - set(observation.benchmarks))
    if not missing:
        return observation
    benchmarks = dict(observation.benchmarks)
    for name in missing:
        try:
            benchmarks[name] = ctx.client.get_benchmark(name).to_info()
        except NotFoundError:
            benchmarks[name] = None
    return observation.model_copy(update={"benchmarks": benchmarks})
