"""Run outputs kept per run for comparisons: ``results/<address>/<run-dir>/`` (an edge).

Downloads under ``.osmosis/benchmarks/`` are local and gitignored; comparisons need any two
recorded runs' per-task files, also in a fresh checkout, so each ended run's ``summary.csv``
and ``results.csv`` are kept under ``results/<address>/<run-dir>/`` (``<run-dir>`` as the
osmosis CLI names it). A run whose files are not there is taken from the local download
directory when present, else fetched again from the Platform (E8/E9, the same safe download
code as apply) on demand.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import httpx

from reconciler.model import RunStatus
from reconciler.outputs.downloads import download_run, run_dir_name
from reconciler.paths import check_inside
from reconciler.platform import PlatformClient
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.runs import RecordedResult

__all__ = ["RESULTS_DIR", "KEPT", "ResultsStore"]

RESULTS_DIR = "results"
KEPT = ("summary.csv", "results.csv")


class ResultsStore:
    """Finds (and on demand fetches) each run's kept outputs."""

    def __init__(
        self,
        repo_root: Path,
        *,
        download_root: Path,
        platform: Callable[[], tuple[PlatformClient, httpx.Client]] | None = None,
    ) -> None:
        self.repo_root = repo_root
        self.download_root = download_root
        self._platform = platform
        self.fetched: list[str] = []
        """Run labels fetched from the Platform by this store (said once to the user)."""
        self.problems: list[str] = []

    def run_dir(self, run: RecordedResult) -> Path:
        return self.repo_root / RESULTS_DIR / run.address / run_dir_name(run.run_name, run.run_id)

    def relative_dir(self, run: RecordedResult) -> str:
        return self.run_dir(run).relative_to(self.repo_root).as_posix()

    def outcomes(self, run: RecordedResult, *, fetch: bool = True) -> RunOutcomes | None:
        """The run's parsed ``results.csv``; None when it cannot be had."""
        path = self.ensure(run, fetch=fetch)
        if path is None:
            return None
        return parse_results_csv(path.read_text(encoding="utf-8", errors="replace"))

    def ensure(self, run: RecordedResult, *, fetch: bool = True) -> Path | None:
        """The path of the run's kept ``results.csv``, copying or fetching it first."""
        rel = self.relative_dir(run)
        problem = check_inside(self.repo_root, rel + "/results.csv", last_is_file=True)
        if problem is not None:
            self.problems.append(f"{problem.path} {problem.message}: not read")
            return None
        target = self.run_dir(run)
        if (target / "results.csv").is_file():
            return target / "results.csv"
        local = self.download_root / run_dir_name(run.run_name, run.run_id)
        if (local / "results.csv").is_file() and not local.is_symlink():
            target.mkdir(parents=True, exist_ok=True)
            for name in KEPT:
                if (local / name).is_file():
                    shutil.copyfile(local / name, target / name)
            return target / "results.csv"
        if not fetch or self._platform is None or not RunStatus.of(run.status).may_have_outputs:
            return None
        source, http = self._platform()
        result = download_run(
            source,
            http,
            run_id=run.run_id,
            run_name=run.run_name,
            root=target.parent,
            types=("summary", "results"),
            repo_root=self.repo_root,
        )
        self.fetched.append(run.label)
        for path, error in result.failures:
            self.problems.append(f"{run.label}: {path}: {error}")
        return target / "results.csv" if (target / "results.csv").is_file() else None
