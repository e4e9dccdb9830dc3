"""Bring an existing Platform run under management (``osmosis-import``).

A run made by hand (or by another repository) becomes this repository's when there is a
config that asks for exactly that run and a lockfile entry that says so. The importer:

1. reads the run's details (E5) and its benchmark (E2);
2. generates the config (``generate_config``, in ``import_config``): what E5 reports is
   copied, what it does not report is taken from flags or, only where exactly one value is
   possible, inferred;
3. checks the round trip: the config text, loaded back through ``load_configs`` exactly as
   ``osmosis-plan`` will load it, must have the run's adoption fingerprint, or nothing is
   written and the difference is shown;
4. under the apply lock: re-checks the lockfile and the file, writes the config (a new file
   is never overwritten; ``--update`` edits an existing one in place, keeping its comments),
   then records the run with its provenance (``imported_at``, ``imported_with``).

What E5 does not say (platform-api.md §3 E5): secret record names per agent (only the names
the run resolved, ``resolved_secret_scopes``), the model type (only through an opaque
``model_ref``), an endpoint's URL and headers. So:

* model type: always from ``--model-type``;
* an agent's model secret: ``--secret``, or the one name the run resolved that a model may
  use (names the runner reserves cannot be model secrets); two candidates are ambiguous;
* an endpoint's ``base_url`` and ``extra_headers``: ``--base-url``, ``--header`` /
  ``--no-extra-headers``;
* a hosted model's split into ``base_model`` and ``lora_model_name``: the model string
  ``base:lora`` when it has exactly one colon, else ``--lora-model``;
* a harness credential: the name the harness reads (``rules.HARNESS_CREDENTIALS``);
* the env: E5 reports each agent's effective env; variables every agent shares go to
  ``[env]``, the rest to ``[agents.env]`` (the same effective env, so the same run);
* every secret name the run resolved must be accounted for by the config (or the
  benchmark's implicit requirements), or the import asks where it came from.

Nothing is ever recorded against a config that might not be the run's own.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from reconciler.config import load_configs
from reconciler.config.edit import render_config, update_config
from reconciler.engine.import_config import (
    EVERY_AGENT,
    MODEL_TYPES,
    GeneratedConfig,
    ImportFlags,
    generate_config,
    header_lines,
    run_label,
)
from reconciler.errors import ImportRefusedError, NotFoundError, UsageError
from reconciler.model import (
    DesiredRun,
    LockState,
    RecordedRun,
    RunStatus,
    Settings,
    canonical_digest,
    effective_pass_threshold,
    spec_fingerprint,
    spec_fingerprint_fields,
)
from reconciler.plan import spec_changes
from reconciler.plan.preflight import task_count
from reconciler.platform import BenchmarkDetail, PlatformClient, RunDetail, RunSummary
from reconciler.state.lockfile import put_run, retire_run
from reconciler.state.store import StateStore

__all__ = [
    "EVERY_AGENT",
    "MODEL_TYPES",
    "GeneratedConfig",
    "ImportFlags",
    "ImportPlan",
    "Importer",
    "generate_config",
    "header_lines",
    "round_trip_differences",
    "run_label",
]

SCRATCH_DIR = ".osmosis/import"
"""Where the round trip writes its scratch copy (inside the repository, removed at once)."""

_SEGMENT_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


# --------------------------------------------------------------------------- round trip


def _without_judge(spec: dict[str, Any]) -> dict[str, Any]:
    execution = {
        k: v for k, v in (spec.get("execution_config") or {}).items() if k != "judge_api_key_secret"
    }
    trimmed = {k: v for k, v in spec.items() if k != "execution_config"}
    if execution:
        trimmed["execution_config"] = execution
    return trimmed


def round_trip_differences(
    detail: RunDetail,
    desired: DesiredRun,
    benchmark_id: str | None,
    *,
    judge_from_flag: bool = False,
) -> tuple[str, ...]:
    """Empty when the config describes exactly the run, else the differences (run -> config).

    "Exactly" is the adoption fingerprint (``spec_fingerprint`` of the config's spec with its
    benchmark resolved to an id, against ``RunDetail.fingerprint``): what a plan would use
    to recognise the run as this config's. A judge secret given by flag because E5 does not
    report it is left out of the comparison.
    """
    spec = _without_judge(desired.spec) if judge_from_flag else desired.spec
    if spec_fingerprint(spec, benchmark_id) == detail.fingerprint():
        return ()
    changes = spec_changes(detail.fingerprint_fields(), spec_fingerprint_fields(spec, benchmark_id))
    return changes or ("the fingerprints differ",)


# --------------------------------------------------------------------------- plan and commit


@dataclass(frozen=True)
class ImportPlan:
    """One run's import, checked and ready to write (nothing written yet)."""

    run: RunSummary
    address: str
    path: str
    """The config file, relative to the repository root."""
    text: str
    """What the file will hold."""
    existing: str | None
    """The file's content when it already exists (None: a new file)."""
    desired: DesiredRun
    """The config as ``load_configs`` reads it back."""
    entry: RecordedRun
    """The lockfile entry to record."""
    replaces: RecordedRun | None = None
    """The entry at the address that moves to history (``--force``)."""
    from_flags: tuple[str, ...] = ()
    inferred: tuple[str, ...] = ()

    @property
    def writes_file(self) -> bool:
        return self.existing != self.text


@dataclass
class Importer:
    """Prepares imports against one Platform and one repository, then commits them."""

    client: PlatformClient
    repo_root: Path
    settings: Settings
    state_display: str
    """The lockfile as messages name it (``state/osmosis.lock``)."""
    invocation: str
    """``osmosis-import RUN`` or ``osmosis-import --all ...``: the start of ``imported_with``."""
    head: str | None = None
    clock: Callable[[], datetime] = _utcnow

    # -- paths ---------------------------------------------------------------

    @property
    def benchmarks_dir(self) -> Path:
        return self.repo_root / self.settings.benchmarks

    def _benchmarks_rel(self) -> PurePosixPath:
        directory = Path(os.path.normpath(self.benchmarks_dir))
        try:
            rel = directory.relative_to(self.repo_root)
        except ValueError:
            raise UsageError(
                f"the benchmarks directory {self.settings.benchmarks} is outside the "
                f"repository {self.repo_root}",
                "point --benchmarks at a directory inside the repository",
            ) from None
        return PurePosixPath(rel.as_posix())

    def default_address(self, benchmark: BenchmarkDetail, run: RunSummary) -> str:
        """``<benchmark key>/<run name>``, each segment made safe for a file name."""
        segments = [
            _safe_segment(s)
            for s in (benchmark.key or benchmark.name or benchmark.id).split("/")
            if s.strip()
        ]
        segments.append(_safe_segment(run.name or run.id))
        return "/".join(s for s in segments if s)

    def address_for(self, to: str) -> str:
        """The address of ``--to PATH`` (relative to the repository root, like ``--state``)."""
        bench_rel = self._benchmarks_rel()
        target = Path(os.path.normpath(self.repo_root / to))
        top = Path(os.path.normpath(self.repo_root / bench_rel))
        hint = f"write it under {bench_rel}/, e.g. --to {bench_rel}/NAME.toml"
        if target.suffix != ".toml":
            raise UsageError(f"--to {to}: a config file name ends in .toml", hint)
        try:
            rel = target.relative_to(top)
        except ValueError:
            raise UsageError(
                f"--to {to}: not inside the benchmarks directory {bench_rel}/ "
                "(only configs there are read)",
                hint,
            ) from None
        parts = rel.with_suffix("").parts
        if any(part.startswith(".") for part in rel.parts):
            raise UsageError(
                f"--to {to}: a hidden file or directory is never read as a config", hint
            )
        # A symlinked directory on the way must not lead outside the benchmarks directory
        # (realpath resolves the part that exists and keeps the rest as written).
        real_top = os.path.realpath(top)
        real = os.path.realpath(target.parent)
        if real != real_top and not real.startswith(real_top + os.sep):
            raise UsageError(f"--to {to}: leads outside {bench_rel}/ through a symlink", hint)
        return "/".join(parts)

    def path_of(self, address: str) -> str:
        return f"{self._benchmarks_rel()}/{address}.toml"

    # -- prepare -------------------------------------------------------------

    def fetch(self, ref: str) -> RunDetail:
        """E5: the run by name or id."""
        try:
            return self.client.get_run(ref)
        except NotFoundError:
            raise ImportRefusedError(
                f"no run {ref!r} in this workspace",
                "give the run's name or id as the Platform shows it "
                "(`osmosis benchmark runs list`)",
            ) from None

    def prepare(
        self,
        detail: RunDetail,
        state: LockState,
        flags: ImportFlags,
        *,
        to: str | None = None,
        update: bool = False,
        force: bool = False,
        taken: Mapping[str, str] | None = None,
    ) -> ImportPlan:
        """Everything up to the writes: generate, check the round trip and every refusal.

        Reads the Platform and the files; writes only the round trip's scratch copy (inside
        the repository, removed before returning). ``taken`` maps addresses already planned
        by this command to their run labels.
        """
        run = detail.summary
        label = run_label(run)
        self._refuse_recorded(run.id, label, state, to)
        benchmark = self._benchmark_of(detail, label)
        generated = generate_config(detail, benchmark, flags)
        address = self.address_for(to) if to else self.default_address(benchmark, run)
        path = self.path_of(address)
        if taken and address in taken:
            raise ImportRefusedError(
                f"cannot import run {label}: {path} is also the file of run {taken[address]} "
                "in this import",
                "import one of them on its own with --to PATH",
            )

        replaces = state.runs.get(address)
        if replaces is not None:
            self._check_replaceable(label, address, replaces, force)

        existing = _read_text(self.repo_root / path)
        fresh = render_config(generated.data, header_lines(detail, benchmark, generated))
        if existing is None or existing == fresh:
            text = fresh
        elif update:
            text = update_config(existing, generated.data, file=path)
        else:
            raise ImportRefusedError(
                f"cannot import run {label}: {path} already exists",
                "pass --update to rewrite it from the run in place (its comments and layout "
                "are kept), or --to another path",
            )

        desired = self._load_back(address, text, label)
        resolved_id = self._resolve(desired.benchmark, benchmark)
        differences = round_trip_differences(
            detail, desired, resolved_id, judge_from_flag=generated.judge_from_flag
        )
        if differences:
            raise ImportRefusedError(
                f"cannot import run {label}: the generated config would not describe the run; "
                "differences (run -> config): " + "; ".join(differences),
                "nothing was written: the run holds values a benchmark config cannot "
                "express, so it cannot be imported",
            )
        return ImportPlan(
            run=run,
            address=address,
            path=path,
            text=text,
            existing=existing,
            desired=desired,
            entry=self._entry(address, run, desired, benchmark, flags),
            replaces=replaces,
            from_flags=generated.from_flags,
            inferred=generated.inferred,
        )

    def _refuse_recorded(self, run_id: str, label: str, state: LockState, to: str | None) -> None:
        """A run the lockfile records already is not imported again."""
        for address, recorded in state.runs.items():
            if recorded.run_id == run_id:
                wanted = self.address_for(to) if to else None
                hint = f"nothing to import; see it with `osmosis-state show {address}`"
                if wanted and wanted != address:
                    hint = (
                        f"to record it under {wanted} instead: osmosis-state mv {address} {wanted}"
                    )
                raise ImportRefusedError(
                    f"run {label} is already recorded at {address} in {self.state_display}",
                    hint,
                )

    def _benchmark_of(self, detail: RunDetail, label: str) -> BenchmarkDetail:
        """The run's benchmark, as this workspace resolves it."""
        run = detail.summary
        benchmark_id = detail.configuration.benchmark_id or run.benchmark_id
        if not benchmark_id:
            raise ImportRefusedError(
                f"cannot import run {label}: its details name no benchmark",
                "the run's details are incomplete; it cannot be imported",
            )
        try:
            return self.client.get_benchmark(benchmark_id)
        except NotFoundError:
            raise ImportRefusedError(
                f"cannot import run {label}: its benchmark {run.benchmark_name or benchmark_id} "
                "does not resolve in this workspace",
                "add the benchmark to the workspace on the Platform first",
            ) from None

    def _entry(
        self,
        address: str,
        run: RunSummary,
        desired: DesiredRun,
        benchmark: BenchmarkDetail,
        flags: ImportFlags,
    ) -> RecordedRun:
        """The lockfile entry of the imported run, observed now."""
        info = benchmark.to_info()
        tasks = task_count(desired, info)
        now = self.clock()
        # The digest the plan compares with the config's: canonical, the benchmark by its
        # resolved id (key, name and id are the same request).
        digest_ = canonical_digest(desired.spec, info.id)
        return RecordedRun(
            address=address,
            spec_digest=digest_,
            spec=desired.spec,
            run_id=run.id,
            run_name=run.name or None,
            status=run.status or None,
            observed_at=now,
            submitted_at=run.created_at,
            # The run comes under management now: commit trailers older than this HEAD
            # (Osmosis-Rerun) must not count as requests for it.
            applied_at_commit=self.head,
            benchmark_id=benchmark.id,
            task_count=tasks,
            attempts=desired.planned_attempts(tasks) if tasks is not None else None,
            platform_url=run.platform_url,
            imported_at=now,
            imported_with=" ".join([self.invocation, *flags.describe()]),
            pass_threshold=effective_pass_threshold(desired.spec, info.pass_threshold),
        )

    def _check_replaceable(
        self, label: str, address: str, recorded: RecordedRun, force: bool
    ) -> None:
        other = f"run {recorded.run_name or recorded.run_id}"
        if recorded.run_name and recorded.run_id:
            other = f"run {recorded.run_name} ({recorded.run_id})"
        if recorded.intent is not None:
            raise ImportRefusedError(
                f"cannot import run {label}: {address} has a pending {recorded.intent.op} "
                f"in {self.state_display}",
                "run osmosis-plan and osmosis-apply first, so the pending action is resolved",
            )
        if not force:
            raise ImportRefusedError(
                f"cannot import run {label}: {address} is already recorded in "
                f"{self.state_display} for {other}",
                "import it to another address with --to PATH, or pass --force to move that "
                "entry to the lockfile's history (allowed once its run has ended)",
            )
        status = recorded.status
        if recorded.run_id:
            try:
                status = self.client.get_run(recorded.run_id).summary.status or status
            except NotFoundError:
                status = "missing"
        if status is not None and status != "missing" and RunStatus.of(status).is_active:
            raise ImportRefusedError(
                f"cannot import run {label}: {address} records {other}, which is still "
                f"{status}; --force only replaces an entry whose run has ended",
                f"let it finish, or move its entry away first: osmosis-state mv {address} NEW",
            )

    def _resolve(self, reference: str, benchmark: BenchmarkDetail) -> str | None:
        """The id ``[experiment].benchmark`` resolves to, as ``osmosis-plan`` resolves it."""
        if reference == benchmark.id:
            return benchmark.id
        try:
            return self.client.get_benchmark(reference).id
        except NotFoundError:
            return None

    def _load_back(self, address: str, text: str, label: str) -> DesiredRun:
        """``text`` read exactly as ``osmosis-plan`` reads configs: through ``load_configs``
        on a scratch copy of the file at the same place, which is removed again."""
        bench_rel = self._benchmarks_rel()
        scratch_parent = self.repo_root / SCRATCH_DIR
        made: list[Path] = []
        probe = scratch_parent
        while not probe.exists():
            made.append(probe)
            probe = probe.parent
        scratch_parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="round-trip-", dir=scratch_parent))
        try:
            target = scratch / bench_rel / f"{address}.toml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            result = load_configs(scratch, str(bench_rel))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            for directory in made:  # deepest first
                try:
                    directory.rmdir()
                except OSError:
                    break
        if not result.ok or len(result.runs) != 1:
            problems = "; ".join(issue.render() for issue in result.errors) or "no config read"
            raise ImportRefusedError(
                f"cannot import run {label}: the generated config does not validate: {problems}",
                "nothing was written; the run's settings break a config rule (see above)",
            )
        return result.runs[0]

    # -- commit --------------------------------------------------------------

    def recheck(self, plan: ImportPlan, state: LockState) -> None:
        """Under the apply lock: nothing this plan relied on changed since it was made."""
        label = run_label(plan.run)
        for address, recorded in state.runs.items():
            if recorded.run_id == plan.run.id:
                raise ImportRefusedError(
                    f"run {label} is already recorded at {address} in {self.state_display} "
                    "(recorded while this import ran)",
                    f"nothing to import; see it with `osmosis-state show {address}`",
                )
        current = state.runs.get(plan.address)
        before = plan.replaces
        if (current is None) != (before is None) or (
            current is not None and before is not None and current.run_id != before.run_id
        ):
            raise ImportRefusedError(
                f"cannot import run {label}: the entry at {plan.address} changed in "
                f"{self.state_display} while this import ran",
                "run the import again",
            )
        if _read_text(self.repo_root / plan.path) != plan.existing:
            raise ImportRefusedError(
                f"cannot import run {label}: {plan.path} changed while this import ran",
                "run the import again",
            )

    def commit(self, plan: ImportPlan, store: StateStore) -> LockState:
        """Write the config, then record the run (call under the apply lock, after
        ``recheck``). A crash between the two leaves a config without an entry: running the
        same import again finds the file identical and records the run."""
        if plan.writes_file:
            _write_text(self.repo_root / plan.path, plan.text, replace=plan.existing is not None)
        now = plan.entry.imported_at or self.clock()

        def record(state: LockState) -> LockState:
            if plan.replaces is not None and plan.address in state.runs:
                return retire_run(
                    state, plan.address, "replaced", ended_at=now, replacement=plan.entry
                )
            return put_run(state, plan.entry)

        return store.update(record)


def _safe_segment(text: str) -> str:
    # A leading dot would hide the file from discovery, which reads no hidden files.
    return _SEGMENT_UNSAFE.sub("-", text.strip()).strip("-").lstrip(".")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}", "check the file") from None


def _write_text(path: Path, text: str, *, replace: bool) -> None:
    """Atomic: a temp file in the same directory, fsync, then rename (replace) or hard link
    (a new file, which must not exist: a file created meanwhile is never overwritten)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), 0o644)
            os.fsync(handle.fileno())
        if replace:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)
            except FileExistsError:
                raise ImportRefusedError(
                    f"{path} appeared while this import ran; it was not overwritten",
                    "run the import again",
                ) from None
    finally:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
