"""``osmosis-ci announce``: tell the people who asked for a run that it finished.

A run is announced when it has ended and its outputs were downloaded (its scores are in
the lockfile). Its results table (pass@1 with its confidence interval, cost per task, the
change against the previous run of the same address; the plan's own renderer) is posted
on the pull request whose merge requested it, with the comparison's verdict (against the
address's accepted baseline when it has one, else against its previous comparable run, and
labelled which) and, once the address has two comparable complete runs, a Mermaid
``xychart-beta`` trend of pass@1 (GitHub renders it). The comparison is paired on the
per-task files already in the repository when they are there, else unpaired from the
recorded summaries, and says so. The comment is found from the run's recorded
``requested_by`` commit through GitHub's "pull requests for a commit" route, and set as a
commit status (context ``osmosis/<address>``; ``osmosis/<project>/<address>`` in a project
of a root of many) on that commit.

Each run is announced once. ``announced_at`` in the lockfile records it, so a fresh
checkout never posts again; the comment itself carries the run id in a hidden marker and
is updated rather than posted twice, so a job that dies between posting and committing
the lockfile does not post a second comment either. Runs that ended longer ago than
``max_age`` when first seen (a repository adopting the tool with a long history) are
marked without posting: nobody wants a comment on a pull request from last year.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as with_fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reconciler.ci.comment import COMMENT_LIMIT, decide_comment_action
from reconciler.ci.github import BOT_LOGIN, GitHubAPI
from reconciler.errors import GitHubError, UsageError
from reconciler.model import (
    GeneratorProduct,
    LockState,
    RecordedRun,
    ResultRow,
    RunStatus,
    Settings,
)
from reconciler.plan import result_rows
from reconciler.render import render_results_markdown
from reconciler.results.build import Loader, build_address_reports, build_compare
from reconciler.results.compare import DEFAULT_MARGIN
from reconciler.results.grid import build_grids, render_grids_markdown
from reconciler.results.report import mermaid_trend, render_compare_markdown
from reconciler.results.retried import retried_results
from reconciler.results.runs import RunRef, address_runs, previous_comparable, what_changed
from reconciler.state.door import LockScope, open_door

MARKER = "<!-- osmosis-reconciler:results"
MAX_AGE = timedelta(days=14)
STATUS_STATES = {"finished": "success", "failed": "failure", "stopped": "error"}


def marker(run_id: str) -> str:
    return f"{MARKER} run={run_id} -->"


def due(entry: RecordedRun) -> bool:
    """Whether ``entry`` is an ended, downloaded run nobody was told about yet."""
    if entry.announced_at is not None or not entry.run_id:
        return False
    if not RunStatus.of(entry.status).is_terminal:
        return False
    downloaded = entry.downloads is not None and entry.downloads.complete
    return entry.results is not None or downloaded


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def status_description(entry: RecordedRun, rows: Sequence[ResultRow]) -> str:
    """The commit status line (GitHub keeps 140 characters): pass@1, cost, change."""
    if not rows:
        return f"run {entry.run_name or entry.run_id} {entry.status}"[:140]
    parts = []
    for row in rows[:3]:
        agent = row.agent
        text = f"pass@1 {_pct(agent.pass_at_1)}"
        if agent.ci_low is not None and agent.ci_high is not None:
            text += f" ({agent.ci_low * 100:.0f}–{agent.ci_high * 100:.0f})"
        if agent.cost_per_task is not None:
            text += f" ${agent.cost_per_task:.2f}/task"
        if row.previous is not None and row.previous.pass_at_1 is not None:
            if agent.pass_at_1 is not None:
                text += f" {(agent.pass_at_1 - row.previous.pass_at_1) * 100:+.1f} pts"
        parts.append(text)
    return "; ".join(parts)[:140]


def _no_outcomes(_run: object) -> None:
    return None


def comparison_markdown(
    state: LockState, address: str, load: Loader = _no_outcomes, margin: float = DEFAULT_MARGIN
) -> str:
    """The verdict of the address's newest run against its accepted baseline (else its
    previous comparable run, labelled which), then its pass@1 trend over the comparable
    complete runs when there are at least two. Empty when the address has no run."""
    runs = address_runs(state, address)
    if not runs:
        return ""
    newest = runs[0]
    out: list[str] = []
    baseline = state.baselines.get(address)
    left: RunRef | None = None
    if baseline is not None and baseline.run_id != newest.run_id:
        if any(r.run_id == baseline.run_id for r in runs):
            left = RunRef(address, baseline.run_id)
            name = baseline.run_name or baseline.run_id
            out.append(f"#### Against the accepted baseline `{address}@{name}`")
    if left is None:
        older, changes = previous_comparable(runs, 0)
        if older is not None:
            left = RunRef(address, older.run_id)
            out.append(f"#### Against the previous comparable run `{address}@{older.label}`")
            out.append("")
            out.append(
                "_For reading: the regression gate compares with an accepted baseline "
                f"(`osmosis-results accept {address}@RUN`), never with a moving one._"
            )
        else:
            why = f" ({'; '.join(changes)})" if changes else ""
            out.append(f"_No earlier comparable run of `{address}` to compare with{why}._")
    if left is not None:
        out.append("")
        try:
            compared = build_compare(
                state, left, RunRef(address, newest.run_id), load, margin=margin
            )
            out.append(render_compare_markdown(compared).rstrip("\n"))
        except UsageError as exc:
            out.append(f"_Not compared: {exc.message}_")
    (report,) = build_address_reports(state, [address], load)
    comparable = tuple(
        line
        for line in report.runs
        if line.report.run.run_id == newest.run_id or not what_changed(newest, line.report.run)
    )
    trend = mermaid_trend(with_fields(report, runs=comparable))
    if trend:
        out += ["", trend]
    return "\n".join(out).strip("\n") + "\n"


def generator_grid_markdown(
    state: LockState,
    address: str,
    products: Sequence[GeneratorProduct],
    cells: Mapping[str, Mapping[str, str]],
    load: Loader = _no_outcomes,
) -> str:
    """The grid of the run generator ``address`` is a cell of (empty: none)."""
    chosen = [p for p in products if address in p.cells]
    if not chosen:
        return ""
    recorded = sorted({a for p in chosen for a in p.cells if a in state.runs})
    reports = {r.address: r for r in build_address_reports(state, recorded, load)}
    return render_grids_markdown(build_grids(chosen, cells, state, reports))


def results_comment(
    entry: RecordedRun,
    rows: Sequence[ResultRow],
    *,
    run_url: str | None = None,
    comparison: str = "",
) -> str:
    """The pull-request comment announcing one ended run (``comparison``: its
    ``comparison_markdown``, shown under the table)."""
    run = entry.run_name or entry.run_id or "?"
    lines = [
        marker(entry.run_id or ""),
        f"### Osmosis results: `{entry.address}` · {run} ({entry.status})",
        "",
    ]
    sha = entry.requested_by
    intro = f"The run requested by {sha[:7]} ended" if sha else "The run ended"
    if entry.platform_url:
        intro += f"; see it on the Osmosis Platform: {entry.platform_url}"
    lines += [intro + ".", ""]
    if len(comparison) > COMMENT_LIMIT // 2:
        comparison = ""  # the table stays the primary content
    table = render_results_markdown(rows, max_chars=COMMENT_LIMIT - 2000 - len(comparison))
    lines.append(table.rstrip("\n") if table else "_The run recorded no scores._")
    if comparison:
        lines += ["", comparison.rstrip("\n")]
    footer = "<sub>Posted once by `osmosis-ci announce`"
    if run_url:
        footer += f" · [workflow run]({run_url})"
    lines += ["", footer + "</sub>"]
    return "\n".join(lines) + "\n"


@dataclass
class AnnounceReport:
    """What one ``announce`` did."""

    posted: list[str] = field(default_factory=list)
    """``address run-id -> #PR`` per comment written."""
    statuses: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Marked as announced without posting (too old, no requesting commit)."""
    failed: list[str] = field(default_factory=list)


def _pulls(api: GitHubAPI, sha: str) -> list[int]:
    pulls = api.pulls_for_commit(sha)
    merged = [p for p in pulls if p.get("merged_at")]
    return sorted({int(p["number"]) for p in (merged or pulls)})


def _post(api: GitHubAPI, number: int, body: str, run_id: str) -> str:
    action = decide_comment_action(
        api.list_issue_comments(number), marker(run_id), body, bot_login=BOT_LOGIN
    )
    if action.kind == "create":
        api.create_issue_comment(number, body)
    elif action.kind == "update":
        assert action.comment_id is not None
        api.update_issue_comment(action.comment_id, body)
    return action.kind


def announce_state(
    api: GitHubAPI,
    state: LockState,
    *,
    now: datetime,
    run_url: str | None = None,
    max_age: timedelta = MAX_AGE,
    context_prefix: str = "osmosis",
    load: Loader = _no_outcomes,
    margin: float = DEFAULT_MARGIN,
    generators: Sequence[GeneratorProduct] = (),
    cells: Mapping[str, Mapping[str, str]] | None = None,
) -> tuple[LockState, AnnounceReport]:
    """Announce every due run of ``state``; returns the state with ``announced_at`` set on
    the runs that were announced (or skipped) and what was done. ``load`` gives a run's
    per-task outcomes for a paired comparison (None: compared from the summaries); a run of
    a generator cell (``generators``, ``cells``: address -> axis -> key, from the configs)
    also shows its generator's grid."""
    report = AnnounceReport()
    rows = result_rows(state, retried=retried_results(state, load))
    runs = dict(state.runs)
    for address, entry in sorted(state.runs.items()):
        if not due(entry):
            continue
        assert entry.run_id is not None
        seen = entry.observed_at or entry.submitted_at
        if entry.requested_by is None or (seen is not None and now - seen > max_age):
            why = "no requesting commit" if entry.requested_by is None else "older than max age"
            report.skipped.append(f"{address} {entry.run_id} ({why})")
            runs[address] = entry.model_copy(update={"announced_at": now})
            continue
        # A retry run's row is the run it retried, with the retry counted.
        shown = entry.retry_of or entry.run_id
        mine = [r for r in rows if r.address == address and r.run_id == shown]
        try:
            comparison = comparison_markdown(state, address, load, margin)
            grid = generator_grid_markdown(state, address, generators, cells or {}, load)
            if grid:
                comparison += "\n" + grid
            body = results_comment(entry, mine, run_url=run_url, comparison=comparison)
            for number in _pulls(api, entry.requested_by):
                kind = _post(api, number, body, entry.run_id)
                report.posted.append(f"{address} {entry.run_id} -> #{number} ({kind})")
            api.create_status(
                entry.requested_by,
                state=STATUS_STATES.get(entry.status or "", "error"),
                context=f"{context_prefix}/{address}",
                description=status_description(entry, mine),
                target_url=entry.platform_url or run_url,
            )
            report.statuses.append(f"{address} {entry.requested_by[:12]}")
        except GitHubError as exc:
            report.failed.append(f"{address} {entry.run_id}: {exc.message}")
            continue
        runs[address] = entry.model_copy(update={"announced_at": now})
    if runs == state.runs:
        return state, report
    return state.model_copy(update={"runs": runs}), report


def announce(
    api: GitHubAPI,
    state_path: Path,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC).replace(microsecond=0),
    run_url: str | None = None,
    max_age: timedelta = MAX_AGE,
    repo_root: Path | None = None,
    margin: float = DEFAULT_MARGIN,
    generators: Sequence[GeneratorProduct] = (),
    cells: Mapping[str, Mapping[str, str]] | None = None,
    settings: Settings | None = None,
    lock_timeout: float = 60.0,
    say: Callable[[str], object] | None = None,
    context_prefix: str = "osmosis",
) -> AnnounceReport:
    """Announce the due runs of the lockfile at ``state_path`` and record it there, through
    the lockfile's door (the locks an apply of the Platform and workspace it records takes,
    under the ``lock`` setting of ``settings``); with ``repo_root``, comparisons are paired
    on the runs' files in that repository. ``say`` is told when it waits for the lock.
    ``context_prefix`` starts each commit status's context (``osmosis/PROJECT`` for a
    project of a root of many, so its statuses name it)."""
    if not state_path.is_file():
        return AnnounceReport()
    scope = LockScope.recorded(state_path, str(state_path), settings=settings)
    with open_door(scope, timeout=lock_timeout, command="osmosis-ci announce", say=say) as door:
        state = door.read()
        if state is None:  # removed while this job waited for the lock
            return AnnounceReport()
        load: Loader = _no_outcomes
        if repo_root is not None:
            from reconciler.ci.report import repo_loader

            load = repo_loader(repo_root.resolve(), state)
        updated, report = announce_state(
            api,
            state,
            now=now(),
            run_url=run_url,
            max_age=max_age,
            load=load,
            margin=margin,
            generators=generators,
            cells=cells,
            context_prefix=context_prefix,
        )
        if updated is not state:
            door.write(updated)
    return report
