"""The HTML results report the collect (and apply) job commits under the results directory.

``osmosis-ci commit-lockfile --results-dir DIR`` writes ``DIR/report.html`` (the same
self-contained page as ``osmosis-results --html``: per-address trends, agents side by side,
cost against pass@1, per-task grids, each run generator's grid) next to the summary and results files, so the report
is browsable in the repository and committed with the lockfile.

Nothing is fetched: the per-task outcomes come from files already in the repository (the
per-run files ``osmosis-results`` keeps under ``results/<address>/<run-dir>/``, the newest
run's copy under ``DIR/<address>/`` when its sha256 is the recorded one, the run's download
directory), each read through the path-safety layer (no symlink followed, nothing outside
the repository); a run without them is shown from its recorded scores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from reconciler.errors import StateError
from reconciler.model import GeneratorProduct, LockState
from reconciler.outputs.layout import run_dir_name
from reconciler.paths import read_regular, relative_path_problem, write_inside
from reconciler.results import html as html_report
from reconciler.results.build import Loader, build_address_reports, build_gate
from reconciler.results.compare import DEFAULT_MARGIN
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.grid import build_grids
from reconciler.results.runs import RecordedResult

__all__ = ["REPORT_NAME", "repo_loader", "write_report"]

REPORT_NAME = "report.html"
KEPT_DIR = "results"
"""Where ``osmosis-results`` keeps each run's files (``outputs.kept.RESULTS_DIR``)."""
FILE_LIMIT = 10 * 1024 * 1024


def _read(root: Path, rel: str) -> bytes | None:
    """The file ``rel`` under ``root`` when it is a regular file reached without symlinks."""
    if relative_path_problem(rel) is not None:
        return None
    try:
        return read_regular(
            root / rel, what="results file", max_bytes=FILE_LIMIT, repo_root=root, error=StateError
        )
    except (FileNotFoundError, StateError):
        return None


def _candidates(state: LockState, run: RecordedResult, results_dir: str) -> list[tuple[str, str]]:
    """Where the run's ``results.csv`` may be, each with the sha256 it must have ('' any)."""
    name = run_dir_name(run.run_name, run.run_id)
    found = [
        (f"{KEPT_DIR}/{run.address}/{name}/results.csv", ""),
        (f"{results_dir}/{run.address}/{name}/results.csv", ""),
    ]
    entry = state.runs.get(run.address)
    # A retried run is current with its retry run (``runs._fold_retries``); the entry's
    # downloads are the retry run's own.
    if run.current and entry is not None and entry.run_id == run.run_id and entry.downloads:
        recorded = entry.downloads.sha256.get("results.csv", "").removeprefix("sha256:")
        if recorded:
            found.append((f"{results_dir}/{run.address}/results.csv", recorded))
        found.append((f"{entry.downloads.directory}/results.csv", recorded))
    return found


def repo_loader(root: Path, state: LockState, results_dir: str = KEPT_DIR) -> Loader:
    """A loader of runs' per-task outcomes from the files in the repository at ``root``
    (resolved): never fetched, never through a symlink; None for a run without them."""
    cache: dict[str, RunOutcomes | None] = {}

    def load(run: RecordedResult) -> RunOutcomes | None:
        if run.run_id in cache:
            return cache[run.run_id]
        outcomes: RunOutcomes | None = None
        for rel, digest in _candidates(state, run, results_dir):
            data = _read(root, rel)
            if data is None or (digest and hashlib.sha256(data).hexdigest() != digest):
                continue
            outcomes = parse_results_csv(data.decode("utf-8", errors="replace"))
            break
        cache[run.run_id] = outcomes
        return outcomes

    return load


def _about(root: Path, state: LockState) -> html_report.About:
    """Repository, commit and date of the report, from the lockfile so the same lockfile
    writes the same page (the job commits the report only when it changed): the newest
    observation recorded, and the commit its apply ran at."""
    observed = [(r.observed_at, r) for r in state.runs.values() if r.observed_at is not None]
    if not observed:
        return html_report.About(state.repository or root.name, None, "never observed")
    when, latest = max(observed, key=lambda pair: pair[0])
    return html_report.About(
        repository=state.repository or root.name,
        commit=latest.applied_at_commit,
        generated=when.isoformat().replace("+00:00", "Z"),
    )


def write_report(
    root: Path,
    state: LockState,
    results_dir: str,
    *,
    generators: Sequence[GeneratorProduct] = (),
    cells: Mapping[str, Mapping[str, str]] | None = None,
    margin: float = DEFAULT_MARGIN,
) -> str | None:
    """Write ``<results_dir>/report.html`` for every recorded address of ``state``; the
    repository-relative path when it changed, None when it was already up to date (or the
    lockfile records no run). ``root`` is resolved; ``results_dir`` checked by the caller;
    ``generators`` and ``cells`` (address -> axis -> key) give the run generators' grids."""
    if not state.runs and not any(h.run_id for h in state.history):
        return None
    load = repo_loader(root, state, results_dir)
    reports = build_address_reports(state, (), load)

    paired: dict[str, RunOutcomes] = {}
    for report in reports:
        for line in report.runs:
            got = load(line.report.run)
            if got is not None and got.paired:
                paired[line.report.run.run_id] = got
    by_address = {r.address: r for r in reports}
    grids = build_grids(generators, cells or {}, state, by_address)
    gate = build_gate(state, load, margin=margin)
    text = html_report.render_html(
        reports, paired, gate, grids=grids, about=_about(root, state), decisions=state.decisions
    ).encode("utf-8")
    target = f"{results_dir}/{REPORT_NAME}"
    current = _read(root, target)
    if current == text:
        return None
    write_inside(root, target, text)  # a symlink on the way is refused (UnsafeInputError)
    return target
