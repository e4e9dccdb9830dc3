"""``osmosis-results``: every recorded run of each address with honest intervals, paired
comparisons with a verdict, accepted baselines and the regression gate, an HTML report.

    osmosis-results [ADDR|GLOB]... [--html FILE] [--fail-on-regression]
    osmosis-results compare LEFT RIGHT [--fail-on-regression] [--html FILE]
    osmosis-results accept ADDR@RUN

The statistics and renders live in ``reconciler.results``; this module reads the flags,
the lockfile and the terminal's width, and prints.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from reconciler.cli.common import Parser, add_common_flags, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.logs import explain_failures
from reconciler.cli.output import Output
from reconciler.config.load import load_configs
from reconciler.engine.context import DOWNLOAD_ROOT, Context, open_context, resolve_settings
from reconciler.engine.state_commands import utcnow
from reconciler.errors import UsageError
from reconciler.exit_codes import Ending
from reconciler.gitinfo import GitRepo
from reconciler.model import Baseline, LockState, RunStatus, Settings, glob_match
from reconciler.outputs.kept import ResultsStore
from reconciler.platform import PlatformClient
from reconciler.results import html as html_report
from reconciler.results.build import build_address_reports, build_compare
from reconciler.results.compare import Verdict
from reconciler.results.data import RunOutcomes
from reconciler.results.grid import (
    Grid,
    build_grids,
    grid_to_dict,
    render_grids_markdown,
    render_grids_text,
)
from reconciler.results.report import (
    AddressReport,
    CompareReport,
    address_to_dict,
    compare_to_dict,
    render_addresses_markdown,
    render_addresses_text,
    render_compare_markdown,
    render_compare_text,
)
from reconciler.results.runs import RecordedResult, address_runs, parse_ref, resolve
from reconciler.state.door import LockScope, open_door
from reconciler.state.lockfile import new_state, read_lockfile

DESCRIPTION = """\
Results you can decide with: every recorded run of each address (current and history)
with per-agent pass@1 and its 95% CI (the task is the cluster: Wilson for one attempt per
task on small task sets, a task-level bootstrap with several), pass@k, cost and tokens per
task, the commit that requested it, and whether it is complete or partial.

  [ADDR|GLOB]...        the recorded runs of these addresses (default: all)
  compare LEFT RIGHT    a paired comparison on the tasks both ran: Δ = RIGHT − LEFT with
                        its CI, exact McNemar (one attempt) or a sign-flip test (several),
                        and a verdict: better, worse, no change (CI inside ±margin) or
                        inconclusive (with the minimum detectable effect).
                        LEFT/RIGHT: ADDR (its newest run), ADDR@RUN or ADDR@RUN#AGENT
                        (RUN: a run name or id, or ~N: N runs before the newest)
  accept ADDR@RUN       record RUN as ADDR's baseline in the lockfile (never a partial run)

Each run's summary.csv and results.csv are kept under results/<address>/<run-dir>/ (from
the local download, else fetched from the Platform on demand) so any two recorded runs
can be compared from a fresh checkout. The margin is the regression_margin_pp setting
(default 3 points) unless --margin is given.
"""

EPILOG = """\
exit codes:
  0  done (with --fail-on-regression: no run is worse than its baseline)
  1  error: bad arguments, unknown address or run, unreadable lockfile
  2  only with --fail-on-regression: a run is worse than its accepted baseline (compare:
     RIGHT is worse than LEFT)
"""


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="osmosis-results",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_flags(parser)
    parser.add_argument("args", nargs="*", metavar="ARG", help="addresses, or compare/accept")
    parser.add_argument("--html", metavar="FILE", help="also write the HTML report to FILE")
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="compare each address's newest run with its accepted baseline (compare: RIGHT "
        "with LEFT) and exit 2 when it is worse",
    )
    parser.add_argument(
        "--margin",
        type=float,
        metavar="PP",
        help="the no-change margin in percentage points (default: regression_margin_pp, 3)",
    )
    parser.add_argument(
        "--seed", type=int, default=20241101, help="resampling seed (same seed, same numbers)"
    )
    parser.add_argument(
        "--no-fetch",
        action="store_true",
        help="never call the Platform: runs whose files are not kept are shown from the "
        "lockfile's summary (comparisons unpaired)",
    )
    parser.add_argument(
        "--width", type=int, metavar="COLUMNS", help="text width (default: the terminal's)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command("osmosis-results", parser, argv, _command)


def terminal_width(explicit: int | None) -> int:
    if explicit is not None:
        if explicit < 40:
            raise UsageError("--width must be at least 40")
        return explicit
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) >= 40:
        return int(columns)
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((100, 24)).columns)
    return 100


class _Platform:
    """The Platform, opened only when a run's files must be fetched."""

    def __init__(self, args: argparse.Namespace, root: Path, state: LockState) -> None:
        self.args, self.root, self.state = args, root, state
        self.ctx: Context | None = None

    def __call__(self) -> tuple[PlatformClient, httpx.Client]:
        if self.ctx is None:
            workspace = self.args.workspace
            if workspace is None and not self.state.workspace.startswith("git:"):
                workspace = self.state.workspace or None
            self.ctx = open_context(
                repo_root=self.root,
                platform_flag=self.args.platform or self.state.platform or None,
                workspace_flag=workspace,
                overrides={},
            )
        return self.ctx.client, self.ctx.http

    def close(self) -> None:
        if self.ctx is not None:
            self.ctx.close()


def _command(args: argparse.Namespace, output: Output) -> Ending:
    root = repo_root(args).resolve()
    settings = resolve_settings(root, {"benchmarks": args.benchmarks, "state": args.state})
    margin_pp = args.margin if args.margin is not None else settings.regression_margin_pp
    if not 0 < margin_pp < 100:
        raise UsageError("--margin must be between 0 and 100 (percentage points)")
    margin = margin_pp / 100
    state_path = root / settings.state
    state = read_lockfile(state_path, platform=None, workspace=None, display_path=settings.state)
    words = list(args.args)
    platform = _Platform(args, root, state)
    store = ResultsStore(
        root,
        download_root=root / DOWNLOAD_ROOT,
        platform=None if args.no_fetch else platform,
    )
    cache: dict[str, RunOutcomes | None] = {}

    def load(run: RecordedResult) -> RunOutcomes | None:
        if run.run_id not in cache:
            cache[run.run_id] = store.outcomes(run, fetch=not args.no_fetch)
        return cache[run.run_id]

    try:
        if words[:1] == ["accept"]:
            return _accept(output, root, settings, words[1:])
        if words[:1] == ["compare"]:
            return _compare(args, output, state, words[1:], load, margin, store)
        grids = _generator_grids(root, settings, state, words, load, args.seed)
        return _list(args, output, state, words, load, margin, store, platform, grids)
    finally:
        platform.close()


def _generator_grids(
    root: Path,
    settings: Settings,
    state: LockState,
    patterns: list[str],
    load: Callable[[RecordedResult], RunOutcomes | None],
    seed: int,
) -> list[Grid]:
    """The grid of each run generator (``*.matrix.toml``) with a cell matching
    ``patterns`` (all when none). The configs are read for their generators only: a config
    with errors leaves its generator out (``osmosis-plan`` reports it)."""
    loaded = load_configs(root, settings.benchmarks, ignore=settings.ignore, policy=settings.policy)
    if not loaded.generators:
        return []
    cells = {
        run.address: dict(run.source.cell)
        for run in loaded.runs
        if run.source is not None and run.source.kind == "generator"
    }
    products = [
        p
        for p in loaded.generators
        if not patterns or any(glob_match(a, tuple(patterns)) for a in p.cells)
    ]
    recorded = {a for p in products for a in p.cells if a in state.runs}
    recorded |= {h.address for h in state.history if h.run_id and h.address in recorded}
    reports = (
        {r.address: r for r in build_address_reports(state, sorted(recorded), load, seed=seed)}
        if recorded
        else {}
    )
    return build_grids(products, cells, state, reports)


def _notes(output: Output, store: ResultsStore) -> None:
    if store.fetched:
        output.info(
            "fetched from the Platform into results/: " + ", ".join(sorted(set(store.fetched)))
        )
    for problem in store.problems:
        output.warning(problem)


def _list(
    args: argparse.Namespace,
    output: Output,
    state: LockState,
    patterns: list[str],
    load: Callable[[RecordedResult], RunOutcomes | None],
    margin: float,
    store: ResultsStore,
    platform: _Platform,
    grids: Sequence[Grid] = (),
) -> Ending:
    def kept(run: RecordedResult) -> str | None:
        return store.relative_dir(run) if (store.run_dir(run) / "results.csv").is_file() else None

    reports = build_address_reports(state, patterns, load, local_dir=kept, seed=args.seed)
    gates = []
    if args.fail_on_regression:
        for address, baseline in sorted(state.baselines.items()):
            if patterns and address not in {r.address for r in reports}:
                continue
            # The newest full run: a smoke run is never the address's result.
            newest = next((r for r in address_runs(state, address) if not r.smoke), None)
            if newest is None or newest.run_id == baseline.run_id:
                continue
            gates.extend(
                build_compare(
                    state,
                    parse_ref(f"{address}@{baseline.run_id}"),
                    parse_ref(f"{address}@{newest.run_id}"),
                    load,
                    margin=margin,
                    seed=args.seed,
                )
            )
    _notes(output, store)
    if args.html:
        _write_html(args.html, reports, gates, load, state, grids)
    worse = [g for g in gates if g.comparison.verdict is Verdict.WORSE]
    if output.machine:
        output.result(
            "results",
            {
                "addresses": [address_to_dict(r) for r in reports],
                "regression_checks": [compare_to_dict(g) for g in gates],
                "regressed": bool(worse),
                "html": args.html,
                "generators": [grid_to_dict(g) for g in grids],
            },
        )
    elif args.format == "markdown":
        text = render_addresses_markdown(reports)
        if grids:
            text += "\n" + render_grids_markdown(grids)
        if gates:
            text += "\n#### Against the accepted baselines\n\n" + render_compare_markdown(gates)
        output.show(text)
    else:
        width = terminal_width(args.width)
        text = render_addresses_text(reports, width)
        unsuccessful = [
            (r.address, line.report.run.run_id, line.report.run.label)
            for r in reports
            for line in r.runs
            if line.report.run.current and RunStatus.of(line.report.run.status).is_unsuccessful
        ]
        if unsuccessful and not args.no_fetch:
            source, _http = platform()
            text += "\n" + "\n".join(explain_failures(source, unsuccessful)) + "\n"
        if grids:
            text += "\n" + render_grids_text(grids, width)
        if gates:
            text += "\nAgainst the accepted baselines:\n\n" + render_compare_text(gates, width)
        elif args.fail_on_regression:
            text += "\nNo address has an accepted baseline and a newer run to check.\n"
        output.show(text)
    if args.html:
        output.info(f"HTML report written to {args.html}")
    # --fail-on-regression: the newest run is worse than the accepted baseline.
    return Ending.PENDING if worse else Ending.DONE


def _compare(
    args: argparse.Namespace,
    output: Output,
    state: LockState,
    words: list[str],
    load: Callable[[RecordedResult], RunOutcomes | None],
    margin: float,
    store: ResultsStore,
) -> Ending:
    if len(words) != 2:
        raise UsageError(
            f"osmosis-results compare LEFT RIGHT: expected 2 run references, got {len(words)}",
            "LEFT/RIGHT: ADDR, ADDR@RUN or ADDR@RUN#AGENT",
        )
    left, right = parse_ref(words[0]), parse_ref(words[1])
    reports = build_compare(state, left, right, load, margin=margin, seed=args.seed)
    _notes(output, store)
    if args.html:
        addresses = sorted({left.address, right.address})
        _write_html(
            args.html,
            build_address_reports(state, addresses, load, seed=args.seed),
            reports,
            load,
            state,
        )
    worse = args.fail_on_regression and any(r.comparison.verdict is Verdict.WORSE for r in reports)
    if output.machine:
        output.result(
            "results_compare",
            {
                "comparisons": [compare_to_dict(r) for r in reports],
                "regressed": bool(worse),
                "html": args.html,
            },
        )
    elif args.format == "markdown":
        output.show(render_compare_markdown(reports))
    else:
        output.show(render_compare_text(reports, terminal_width(args.width)))
    # --fail-on-regression: the newest run is worse than the accepted baseline.
    return Ending.PENDING if worse else Ending.DONE


def _write_html(
    path: str,
    reports: Sequence[AddressReport],
    comparisons: Sequence[CompareReport],
    load: Callable[[RecordedResult], RunOutcomes | None],
    state: LockState,
    grids: Sequence[Grid] = (),
) -> None:
    outcomes: dict[str, RunOutcomes] = {}
    for report in reports:
        for line in report.runs:
            found = load(line.report.run)
            if found is not None and found.paired:
                outcomes[line.report.run.run_id] = found
    text = html_report.render_html(reports, outcomes, comparisons, grids=grids)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.partial")
        temp.write_text(text, encoding="utf-8")
        temp.replace(target)
    except OSError as exc:
        raise UsageError(
            f"--html {path}: cannot write the report: {exc.strerror or exc}",
            "pass a writable file path",
        ) from None


def _accept_instead(state: LockState, address: str) -> str:
    """Which run of ``address`` can be accepted instead: its newest complete full run."""
    run = next((r for r in address_runs(state, address) if not r.smoke and not r.partial), None)
    if run is None:
        return (
            f"accept a full run that finished with all its outputs; {address} has none yet "
            "(`osmosis-apply` submits the full run once its smoke run ended well, and "
            "downloads its outputs when it has finished)"
        )
    return (
        f"accept a full run that finished with all its outputs, e.g. its newest: "
        f"`osmosis-results accept {shlex.quote(f'{address}@{run.label}')}`"
    )


def _accept(output: Output, root: Path, settings: Settings, words: list[str]) -> Ending:
    if len(words) != 1 or "@" not in words[0]:
        raise UsageError(
            "osmosis-results accept ADDR@RUN: expected one run reference with its run",
            "name the run explicitly (a baseline is a decision): e.g. "
            "`osmosis-results accept terminal-bench/smoke@my-run`",
        )
    ref = parse_ref(words[0])
    if ref.agent is not None:
        raise UsageError(f"{words[0]}: a baseline is a whole run", "leave out the #AGENT part")
    display = settings.state
    git = GitRepo.discover(root)
    scope = LockScope.recorded(root / display, display, repo_root=root, settings=settings)
    with open_door(scope, timeout=0.0, command=f"osmosis-results accept {words[0]}") as door:
        state = door.read() or new_state("", "")
        run = resolve(state, ref)
        if run.smoke:
            raise UsageError(
                f"{ref.address}@{run.label} is a smoke run (a one-attempt test of the config "
                "before its full run, docs/smoke.md): a smoke run is never a baseline",
                _accept_instead(state, ref.address),
            )
        if run.partial:
            raise UsageError(
                f"{ref.address}@{run.label} is partial ({run.status}): a partial run is never a "
                "baseline",
                _accept_instead(state, ref.address),
            )
        baseline = Baseline(
            run_id=run.run_id,
            run_name=run.run_name,
            accepted_at=utcnow(),
            accepted_at_commit=git.head() if git else None,
        )
        baselines = {**state.baselines, ref.address: baseline}
        written = door.write(state.model_copy(update={"baselines": baselines}))
    message = f"{ref.address}: baseline is now {run.label} ({run.run_id}); commit {display}"
    if output.machine:
        output.result(
            "results_accept",
            {
                "address": ref.address,
                "run_id": run.run_id,
                "run_name": run.run_name,
                "serial": written.serial,
            },
        )
    else:
        output.show(message + "\n")
    return Ending.DONE
