"""Run outputs kept per run for comparisons: ``results/<address>/<run-dir>/`` (an edge).

Downloads under ``.osmosis/benchmarks/`` are local and gitignored; comparisons need any two
recorded runs' per-task files, also in a fresh checkout, so each ended run's ``summary.csv``
and ``results.csv`` are kept under ``results/<address>/<run-dir>/`` (``<run-dir>`` as the
osmosis CLI names it). A run whose files are not there is taken from the local download
directory when present, else fetched again from the Platform (E8/E9, the same safe download
code as apply) on demand.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx

from reconciler.errors import ReconcilerError
from reconciler.model import RunStatus
from reconciler.outputs.layout import run_dir_name
from reconciler.paths import UnsafeInputError, check_inside, read_regular, write_inside
from reconciler.platform import PlatformClient
from reconciler.results.data import RunOutcomes, parse_results_csv
from reconciler.results.runs import RecordedResult

__all__ = ["RESULTS_DIR", "KEPT", "ResultsStore", "read_kept_outcomes"]

RESULTS_DIR = "results"
KEPT = ("summary.csv", "results.csv")
MAX_KEPT_BYTES = 64 * 1024 * 1024
"""A kept ``results.csv`` larger than this is not read (a few MB holds 100,000 attempts)."""


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
        data = self._read(path)
        if data is None:
            return None
        return parse_results_csv(data.decode("utf-8", errors="replace"))

    def _read(self, path: Path) -> bytes | None:
        """A kept or downloaded file: regular, at most ``MAX_KEPT_BYTES``, reached from the
        repository root without a symlink (``reconciler.paths``); None, with the reason
        noted, otherwise."""
        try:
            return read_regular(
                path, what="results file", max_bytes=MAX_KEPT_BYTES, repo_root=self.repo_root
            )
        except FileNotFoundError:
            return None
        except UnsafeInputError as exc:
            self.problems.append(f"{exc.message}: not read")
            return None

    def ensure(self, run: RecordedResult, *, fetch: bool = True) -> Path | None:
        """The path of the run's kept ``results.csv``, copying or fetching it first."""
        rel = self.relative_dir(run)
        problem = check_inside(self.repo_root, rel + "/results.csv", last_is_file=True)
        if problem is not None:
            self.problems.append(f"{problem.path} {problem.message}: not read")
            return None
        target = self.run_dir(run)
        if os.path.lexists(target / "results.csv"):
            return target / "results.csv"
        local = self.download_root / run_dir_name(run.run_name, run.run_id)
        local_rel = os.path.relpath(local, self.repo_root)
        found = check_inside(self.repo_root, local_rel + "/results.csv", last_is_file=True)
        if found is None and (local / "results.csv").is_file():
            for name in KEPT:
                data = self._read(local / name)
                if data is not None:
                    write_inside(self.repo_root, f"{rel}/{name}", data)
            return target / "results.csv"
        if not fetch or self._platform is None or not RunStatus.of(run.status).may_have_outputs:
            return None

        # Only a fetch uses the download code: a plan (which reads kept outcomes) never does.
        from reconciler.outputs.downloads import download_run

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


def read_kept_outcomes(
    repo_root: Path, run: RecordedResult, download_root: Path
) -> RunOutcomes | None:
    """The run's ``results.csv`` parsed, from ``results/<address>/<run-dir>/`` or its
    download directory; None when neither has it. Read only: nothing is copied or fetched
    (a plan reads it), and nothing is followed through a symlink or out of the repository."""
    name = run_dir_name(run.run_name, run.run_id)
    for directory in (repo_root / RESULTS_DIR / run.address / name, download_root / name):
        try:
            data = read_regular(
                directory / "results.csv",
                what="results file",
                max_bytes=50 * 1024 * 1024,
                repo_root=repo_root,
            )
        except (FileNotFoundError, NotADirectoryError, ReconcilerError):
            continue
        return parse_results_csv(data.decode("utf-8", errors="replace"))
    return None
