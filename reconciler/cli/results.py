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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from reconciler.cli.common import Parser, add_common_flags, repo_root
from reconciler.cli.error_handler import run_command
from reconciler.cli.logs import explain_failures
from reconciler.cli.output import Output
from reconciler.config.load import load_configs
from reconciler.engine.context import DOWNLOAD_ROOT, Context, open_context, resolve_settings
from reconciler.engine.state_commands import utcnow
from reconciler.errors import ReconcilerError, UsageError
from reconciler.exit_codes import Ending
from reconciler.gitinfo import GitRepo
from reconciler.model import Baseline, LockState, RunStatus, Settings, glob_match
from reconciler.outputs.kept import ResultsStore
from reconciler.paths import write_named
from reconciler.platform import PlatformClient
from reconciler.results import html as html_report
from reconciler.results.build import build_address_reports, build_compare, build_gate
from reconciler.results.data import RunOutcomes
from reconciler.results.gate import Gate, gate_to_dict
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
from reconciler.results.retried import merged_outcomes
from reconciler.results.runs import RecordedResult, address_runs, parse_ref, resolve
from reconciler.state.door import LockScope, open_door
from reconciler.state.lockfile import check_state_path, new_state, read_lockfile

DESCRIPTION = """\
Results you can decide with: every recorded run of each address (current and history)
with per-agent pass@1 (the Platform's: an errored attempt counts as not passed) and its
95% Wilson interval over tasks, the errored attempts beside it, pass@k at the k the config
asked for, cost and tokens per task and per attempt, the commit that requested it, and
whether it is complete, partial or a smoke run; then every address's newest run against
its accepted baseline (the regression gate's comparisons, Holm-adjusted, with a one-line
summary).

  [ADDR|GLOB]...        the recorded runs of these addresses (default: all)
  compare LEFT RIGHT    a paired comparison on the tasks both ran: Δ = RIGHT − LEFT, its
                        interval and p-value from one test (exact McNemar at one attempt,
                        the sign-flip test at several), and a verdict: better, worse,
                        no change (the interval inside ±margin) or inconclusive (with the
                        minimum detectable effect).
                        LEFT/RIGHT: ADDR (its newest run), ADDR@RUN or ADDR@RUN#AGENT
                        (RUN: a run name or id, or ~N: N runs before the newest)
  accept ADDR@RUN       record RUN as ADDR's baseline in the lockfile (never a partial run)
  decide ADDR           a decision ([decide]): verdict, tasks used of the maximum, each
                        look, α spent, dollars spent and saved; --replay recomputes every
                        look and prints "match" or the first difference (exit 1)

Each run's summary.csv and results.csv are kept under results/<address>/<run-dir>/ (from
the local download, else fetched from the Platform on demand) so any two recorded runs
can be compared from a fresh checkout. The margin is the regression_margin_pp setting
(default 3 points) unless --margin is given.
"""

EPILOG = """\
exit codes:
  0  done (with --fail-on-regression: no run is worse than its baseline beyond the margin)
  1  error: bad arguments, unknown address or run, unreadable lockfile
  2  only with --fail-on-regression: a run is worse than its accepted baseline beyond the
     margin, after the gate's Holm adjustment (compare: RIGHT than LEFT); with
     --fail-on-inconclusive-drop also when a run's non-inferiority is not shown
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
        help="exit 2 when an address's newest run is worse than its accepted baseline beyond "
        "the margin (the whole Holm-adjusted interval below -margin; compare: RIGHT than LEFT)",
    )
    parser.add_argument(
        "--fail-on-inconclusive-drop",
        action="store_true",
        help="with --fail-on-regression, also exit 2 unless non-inferiority is shown (the "
        "interval's lower end above -margin): an inconclusive drop fails too",
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
        "--replay",
        action="store_true",
        help="decide: recompute every look from the lockfile and the downloaded results; "
        'print "match" (exit 0) or the first difference (exit 1)',
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

    def __init__(
        self, args: argparse.Namespace, root: Path, state: LockState, output: Output
    ) -> None:
        self.args, self.root, self.state, self.output = args, root, state, output
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
            if self.ctx.warning:
                self.output.warning(self.ctx.warning)
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
    check_state_path(root, settings.state)  # accept writes it; nothing is read through a link
    state = read_lockfile(state_path, platform=None, workspace=None, display_path=settings.state)
    words = list(args.args)
    platform = _Platform(args, root, state, output)
    store = ResultsStore(
        root,
        download_root=root / DOWNLOAD_ROOT,
        platform=None if args.no_fetch else platform,
    )
    cache: dict[str, RunOutcomes | None] = {}

    def read(run: RecordedResult) -> RunOutcomes | None:
        return store.outcomes(run, fetch=not args.no_fetch)

    def load(run: RecordedResult) -> RunOutcomes | None:
        # A run's result has its retry runs' attempts in place of its errored ones
        # (docs/retrying.md): every surface reads the merged outcomes.
        if run.run_id not in cache:
            cache[run.run_id] = merged_outcomes(run, read)[0]
        return cache[run.run_id]

    thresholds = _CatalogThresholds(platform, fetch=not args.no_fetch)
    try:
        if words[:1] == ["accept"]:
            return _accept(output, root, settings, words[1:])
        if words[:1] == ["decide"]:
            from reconciler.cli.results_decide import decide_command

            return decide_command(args, output, state, words[1:], load)
        context = _Context(root, state, load, margin, store, platform, thresholds)
        if words[:1] == ["compare"]:
            return _compare(args, output, context, words[1:])
        grids = _generator_grids(root, settings, state, words, load, thresholds)
        return _list(args, output, context, words, grids)
    finally:
        platform.close()


class _CatalogThresholds(Mapping[str, float]):
    """Benchmark id -> the catalog's pass threshold, read from the Platform only when a run
    needs it (fractional rewards and no threshold in its config), once per benchmark."""

    def __init__(self, platform: _Platform, *, fetch: bool) -> None:
        self.platform, self.fetch = platform, fetch
        self.known: dict[str, float | None] = {}

    def __getitem__(self, benchmark_id: str) -> float:
        if benchmark_id not in self.known:
            self.known[benchmark_id] = None
            if self.fetch:
                try:
                    client, _http = self.platform()
                    self.known[benchmark_id] = client.get_benchmark(benchmark_id).pass_threshold
                except (ReconcilerError, httpx.HTTPError):
                    pass  # unknown: the file's own outcome column decides
        value = self.known[benchmark_id]
        if value is None:
            raise KeyError(benchmark_id)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(k for k, v in self.known.items() if v is not None)

    def __len__(self) -> int:
        return sum(1 for v in self.known.values() if v is not None)


@dataclass(frozen=True)
class _Context:
    root: Path
    state: LockState
    load: Callable[[RecordedResult], RunOutcomes | None]
    margin: float
    store: ResultsStore
    platform: _Platform
    thresholds: Mapping[str, float]


def _generator_grids(
    root: Path,
    settings: Settings,
    state: LockState,
    patterns: list[str],
    load: Callable[[RecordedResult], RunOutcomes | None],
    thresholds: Mapping[str, float],
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
        {
            r.address: r
            for r in build_address_reports(state, sorted(recorded), load, thresholds=thresholds)
        }
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
    ctx: _Context,
    patterns: list[str],
    grids: Sequence[Grid] = (),
) -> Ending:
    store, state = ctx.store, ctx.state

    def kept(run: RecordedResult) -> str | None:
        return store.relative_dir(run) if (store.run_dir(run) / "results.csv").is_file() else None

    reports = build_address_reports(
        state, patterns, ctx.load, local_dir=kept, thresholds=ctx.thresholds
    )
    # The verdicts against the accepted baselines are always shown; the flag makes them a gate.
    gate = build_gate(
        state,
        ctx.load,
        patterns=patterns,
        margin=ctx.margin,
        seed=args.seed,
        thresholds=ctx.thresholds,
        strict=args.fail_on_inconclusive_drop,
    )
    _notes(output, store)
    if args.html:
        _write_html(args.html, reports, gate, ctx, grids)
    failed = args.fail_on_regression and gate.failed
    gates = list(gate.comparisons)
    if output.machine:
        output.result(
            "results",
            {
                "addresses": [address_to_dict(r) for r in reports],
                "regression_checks": [compare_to_dict(g) for g in gates],
                "gate": gate_to_dict(gate),
                "regressed": bool(failed),
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
            text += f"\n**{gate.summary_line()}**\n"
        output.show(text)
    else:
        output.show(_list_text(args, ctx, reports, gate, grids))
    if args.html:
        output.info(f"HTML report written to {args.html}")
    # --fail-on-regression: the gate failed (worse beyond the margin after the family's
    # adjustment, or with --fail-on-inconclusive-drop, non-inferiority not shown).
    return Ending.PENDING if failed else Ending.DONE


def _list_text(
    args: argparse.Namespace,
    ctx: _Context,
    reports: Sequence[AddressReport],
    gate: Gate,
    grids: Sequence[Grid],
) -> str:
    width = terminal_width(args.width)
    text = render_addresses_text(reports, width)
    unsuccessful = [
        (r.address, line.report.run.run_id, line.report.run.label)
        for r in reports
        for line in r.runs
        if line.report.run.current and RunStatus.of(line.report.run.status).is_unsuccessful
    ]
    if unsuccessful and not args.no_fetch:
        source, _http = ctx.platform()
        text += "\n" + "\n".join(explain_failures(source, unsuccessful)) + "\n"
    if grids:
        text += "\n" + render_grids_text(grids, width)
    if gate.comparisons:
        text += "\nAgainst the accepted baselines:\n\n"
        text += render_compare_text(list(gate.comparisons), width)
        text += "\n" + gate.summary_line() + "\n"
    elif args.fail_on_regression:
        text += "\nNo address has an accepted baseline and a newer run to check.\n"
    return text


def _compare(args: argparse.Namespace, output: Output, ctx: _Context, words: list[str]) -> Ending:
    state, load, margin = ctx.state, ctx.load, ctx.margin
    store, thresholds = ctx.store, ctx.thresholds
    if len(words) != 2:
        raise UsageError(
            f"osmosis-results compare LEFT RIGHT: expected 2 run references, got {len(words)}",
            "LEFT/RIGHT: ADDR, ADDR@RUN or ADDR@RUN#AGENT",
        )
    left, right = parse_ref(words[0]), parse_ref(words[1])
    reports = build_compare(
        state, left, right, load, margin=margin, seed=args.seed, thresholds=thresholds
    )
    _notes(output, store)
    if args.html:
        addresses = sorted({left.address, right.address})
        _write_html(
            args.html,
            build_address_reports(state, addresses, load, thresholds=thresholds),
            None,
            ctx,
            comparisons=reports,
        )
    strict = Gate(tuple(reports), strict=args.fail_on_inconclusive_drop)
    worse = args.fail_on_regression and strict.failed
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
    gate: Gate | None,
    ctx: _Context,
    grids: Sequence[Grid] = (),
    comparisons: Sequence[CompareReport] = (),
) -> None:
    outcomes: dict[str, RunOutcomes] = {}
    for report in reports:
        for line in report.runs:
            found = ctx.load(line.report.run)
            if found is not None and found.paired:
                outcomes[line.report.run.run_id] = found
    text = html_report.render_html(
        reports,
        outcomes,
        gate,
        comparisons,
        grids=grids,
        about=_about(ctx.root, ctx.state),
        decisions=ctx.state.decisions,
    )
    try:
        # Anywhere the user names, never through a symlink (reconciler.paths, issue 36).
        write_named(path, text.encode("utf-8"), what="--html")
    except OSError as exc:
        raise UsageError(
            f"--html {path}: cannot write the report: {exc.strerror or exc}",
            "pass a writable file path",
        ) from None


def _about(root: Path, state: LockState) -> html_report.About:
    """What the report is about: repository, commit and when it was made."""
    git = GitRepo.discover(root)
    return html_report.About(
        repository=state.repository or (git.root.name if git else root.name),
        commit=git.head() if git else None,
        generated=utcnow().isoformat().replace("+00:00", "Z"),
    )


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
