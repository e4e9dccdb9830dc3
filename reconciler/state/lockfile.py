"""The lockfile ``state/osmosis.lock``: the recorded state, read and written as TOML.

Layout (design.md §5)::

    # header comment
    version = 2
    lineage = "<uuid4>"
    serial = 7
    platform = "local"
    workspace = "acme"
    repository = "github.com/acme/bench"   # the origin remote, else "root:<sha>"
    root_commit = "<sha>"                  # format 2: the root commit of the history

    [runs."terminal-bench/smoke"]          # one table per address, sorted
    spec_digest = "sha256:..."             # scalars in RecordedRun field order, None omitted
    ...
    [runs."terminal-bench/smoke".spec]     # then the nested tables: spec, downloads, intent
    [runs."terminal-bench/smoke".downloads]
    [runs."terminal-bench/smoke".intent]

    [[history]]                            # newest first, capped per address
    address = "terminal-bench/smoke"
    ...

Datetimes are TOML offset date-times in UTC with second precision (``2026-01-02T03:04:05Z``).
Keys inside ``spec`` tables and string maps are sorted, so two equal states always produce
the same bytes and ``serialize(parse(serialize(s))) == serialize(s)``.

Why not tomlkit here: the stack names tomlkit for TOML, and it is the right tool where a
human-written file must keep its comments and style. The lockfile is machine-written, and on
the reference machine (2 cores) a 2 MB, 5,000-entry document took tomlkit 5.3 s to parse and
0.5 s to dump, against a sub-second budget for the whole read. So this module writes the
TOML text itself (``toml_emit.py`` has the measurement against tomli-w and tomlkit) (a small deterministic emitter with proper string escaping) and reads it
in two tiers:

* ``fast_load`` reads exactly the TOML subset the emitter produces, mostly one regex per
  line; it returns None for anything else (hand edits in another style, comments after
  values, literal strings, errors);
* ``tomllib`` (standard library, TOML 1.0) reads everything else and reports syntax errors
  with line and column.

Even ``tomllib`` alone took ~1.1 s for a 5.9 MB lockfile of 5,000 full entries; the fast
tier reads the same file in ~0.45 s. The tests hold the fast tier to ``tomllib`` (generated
states, mutated files, tricky TOML) and cross-check the emitted text with tomlkit's parser.

Secret values never reach the file: a submit body's ``secrets.provided`` map (per-run
values, platform-api.md §9.6) is stripped from every ``spec`` before writing.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import tomllib
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reconciler.crashpoints import crash_point
from reconciler.errors import StateError
from reconciler.model import (
    LOCKFILE_VERSION,
    Baseline,
    Downloads,
    HistoryEntry,
    Intent,
    LockState,
    RecordedRun,
    Rejection,
    RunResults,
)
from reconciler.paths import check_inside, check_named
from reconciler.state.diagnostics import (  # noqa: F401  (re-exported)
    CONFLICT_END,
    CONFLICT_MIDDLE,
    CONFLICT_START,
    TOML_POSITION,
    conflict_regions,
    describe_regions,
    path_str,
)
from reconciler.state.history import (  # noqa: F401  (re-exported)
    HISTORY_LIMIT_PER_ADDRESS,
    HISTORY_REASONS,
    OUTPUTS_DUE_REASONS,
    OUTPUTS_DUE_STATUSES,
    add_history,
    cap_history,
    history_entry,
    put_run,
    rekey_run,
    retire_run,
)
from reconciler.state.provenance import (  # noqa: F401  (re-exported)
    FOREIGN_STATE_FLAG,
    PEEK_BYTES,
    PEEK_LINEAGE,
    PEEK_REPOSITORY,
    PEEK_SERIAL,
    PEEK_WATERMARK,
    check_provenance,
    peek_header,
    peek_watermark,
    peek_watermark_in,
    same_repository,
)
from reconciler.state.tables import (  # noqa: F401  (re-exported)
    HISTORY_NULLABLE,
    RESTORE_HINT,
    RUN_NESTED,
    build_baseline,
    build_history,
    build_rejection,
    build_results,
    build_run,
    check_path_value,
    describe_input,
    entry_builder,
    nullable_required,
    shape_error,
    take_item,
    validate,
)
from reconciler.state.toml_emit import (  # noqa: F401  (re-exported)
    BARE_KEY,
    ESCAPES,
    NEEDS_ESCAPE,
    emit_mapping,
    emit_table,
    escape_char,
    inline_value,
    toml_datetime,
    toml_float,
    toml_key,
    toml_str,
)
from reconciler.state.toml_fast import (  # noqa: F401  (re-exported)
    F_ARRAY_WS,
    F_BARE,
    F_COMMENT,
    F_DATETIME,
    F_EOL,
    F_FLAT_PAIR,
    F_FLAT_TABLE,
    F_HEADER_KEY,
    F_HEADER_LINE,
    F_NUMBER,
    F_SIMPLE_LINE,
    F_STR,
    F_STR_BODY,
    F_WORDS,
    F_WS,
    AlwaysMatches,
    NotCanonical,
    f_key,
    f_value,
    fast_load,
    utc,
)
from reconciler.toml_locate import KeyLines

__all__ = [
    "HISTORY_LIMIT_PER_ADDRESS",
    "HISTORY_REASONS",
    "MAX_LOCKFILE_BYTES",
    "add_history",
    "cap_history",
    "new_state",
    "parse",
    "peek_watermark",
    "peek_header",
    "check_provenance",
    "put_run",
    "read_lockfile",
    "rekey_run",
    "retire_run",
    "serialize",
    "strip_secret_values",
    "remove_stale_temps",
    "write_lockfile",
]


MAX_LOCKFILE_BYTES = 64 * 1024 * 1024
"""A lockfile larger than this is refused before it is read (5,000 full entries: ~6 MB)."""

HEADER_COMMENT = (
    "# osmosis-reconciler state. Written by osmosis-apply and committed to git; "
    "do not edit by hand."
)


# --------------------------------------------------------------------------- emitting TOML


def strip_secret_values(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a submit body without ``secrets.provided`` (per-run secret *values*)."""
    result = dict(spec)
    secrets = result.get("secrets")
    if isinstance(secrets, Mapping) and "provided" in secrets:
        cleaned = {k: v for k, v in secrets.items() if k != "provided"}
        if cleaned:
            result["secrets"] = cleaned
        else:
            del result["secrets"]
    return result


def _has_secret_values(spec: Mapping[str, Any]) -> bool:
    secrets = spec.get("secrets")
    return isinstance(secrets, Mapping) and "provided" in secrets


def _sanitize(state: LockState) -> LockState:
    """The state as it will be on disk: no secret values in any spec."""
    runs: dict[str, RecordedRun] = {}
    changed = False
    for address, run in state.runs.items():
        update: dict[str, Any] = {}
        if _has_secret_values(run.spec):
            update["spec"] = strip_secret_values(run.spec)
        if run.intent is not None and _has_secret_values(run.intent.spec):
            update["intent"] = run.intent.model_copy(
                update={"spec": strip_secret_values(run.intent.spec)}
            )
        if update:
            changed = True
            run = run.model_copy(update=update)
        runs[address] = run
    return state.model_copy(update={"runs": runs}) if changed else state


_RUN_SCALARS = [
    name
    for name in RecordedRun.field_names()
    if name not in ("address", "spec", "downloads", "intent", "results")
]
_INTENT_SCALARS = [name for name in Intent.field_names() if name != "spec"]
_DOWNLOAD_SCALARS = [name for name in Downloads.field_names() if name != "sha256"]
_HISTORY_FIELDS = [name for name in HistoryEntry.field_names() if name != "results"]
_RESULTS_SCALARS = [name for name in RunResults.field_names() if name != "agents"]


def _emit_results(out: list[str], header: str, results: RunResults) -> None:
    """A run's scores: totals, then one inline table per agent (one line each)."""
    pairs: list[tuple[str, Any]] = [(name, getattr(results, name)) for name in _RESULTS_SCALARS]
    pairs.append(("agents", [a.model_dump(exclude_none=True) for a in results.agents]))
    emit_table(out, header, pairs)


_RUN_LINES: dict[int, tuple[RecordedRun, str, list[str]]] = {}
"""Emitted lines per entry object. Entries are frozen and shared between successive states,
so an apply that persists after every action re-emits only the entries it changed (the
whole file each time made 500 submits cost seconds of serialising)."""


def _run_lines(address: str, run: RecordedRun) -> list[str]:
    """The lines of one ``[runs."<address>"]`` table and its sub-tables."""
    hit = _RUN_LINES.get(id(run))
    if hit is not None and hit[0] is run and hit[1] == address:
        return hit[2]
    out: list[str] = []
    header = f"runs.{toml_key(address)}"
    emit_table(out, header, [(name, getattr(run, name)) for name in _RUN_SCALARS])
    if run.spec:
        emit_mapping(out, f"{header}.spec", run.spec)
    if run.downloads is not None:
        d = run.downloads
        emit_table(
            out,
            f"{header}.downloads",
            [(name, getattr(d, name)) for name in _DOWNLOAD_SCALARS],
            [("sha256", d.sha256)] if d.sha256 else [],
        )
    if run.results is not None:
        _emit_results(out, f"{header}.results", run.results)
    if run.intent is not None:
        i = run.intent
        emit_table(
            out,
            f"{header}.intent",
            [(name, getattr(i, name)) for name in _INTENT_SCALARS],
            [("spec", i.spec)] if i.spec else [],
        )
    _RUN_LINES[id(run)] = (run, address, out)
    return out


def serialize(state: LockState) -> str:
    """The lockfile text for ``state``: deterministic, LF line endings, final newline."""
    state = _sanitize(state)
    out = [
        HEADER_COMMENT,
        # Always today's format: a lockfile read in an older one is migrated on write.
        f"version = {LOCKFILE_VERSION}",
        f"lineage = {toml_str(state.lineage)}",
        f"serial = {state.serial}",
        f"platform = {toml_str(state.platform)}",
        f"workspace = {toml_str(state.workspace)}",
    ]
    if state.repository is not None:
        out.append(f"repository = {toml_str(state.repository)}")
    if state.root_commit is not None:
        out.append(f"root_commit = {toml_str(state.root_commit)}")
    if state.platform_instance is not None:
        out.append(f"platform_instance = {toml_str(state.platform_instance)}")
    if state.observed_until is not None:
        out.append(f"observed_until = {toml_datetime(state.observed_until)}")
    if len(_RUN_LINES) > 2 * len(state.runs) + 256:
        _RUN_LINES.clear()
    for address in sorted(state.runs):
        out.extend(_run_lines(address, state.runs[address]))
    for address in sorted(state.rejections):
        rejection = state.rejections[address]
        emit_table(
            out,
            f"rejections.{toml_key(address)}",
            [(name, getattr(rejection, name)) for name in Rejection.field_names()],
        )
    for address in sorted(state.baselines):
        baseline = state.baselines[address]
        emit_table(
            out,
            f"baselines.{toml_key(address)}",
            [(name, getattr(baseline, name)) for name in Baseline.field_names()],
        )
    if any(state.reruns.values()):
        out.append("")
        out.append("[reruns]")
        for address in sorted(state.reruns):
            if state.reruns[address]:
                out.append(f"{toml_key(address)} = {inline_value(list(state.reruns[address]))}")
    if state.decisions:
        from reconciler.state.decisions import emit_decisions

        emit_decisions(out, state.decisions)
    for entry in state.history:
        out.append("")
        out.append("[[history]]")
        for name in _HISTORY_FIELDS:
            value = getattr(entry, name)
            if value is not None:
                out.append(f"{name} = {inline_value(value)}")
        if entry.results is not None:
            _emit_results(out, "history.results", entry.results)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- reading TOML


_HEADER_KEYS = frozenset(
    {
        "version",
        "lineage",
        "serial",
        "platform",
        "workspace",
        "repository",
        "root_commit",
        "observed_until",
        "runs",
        "rejections",
        "history",
        "baselines",
        "platform_instance",
        "reruns",
        "decisions",
    }
)
_FORMAT3_KEYS = ("platform_instance", "reruns")
"""Keys a lockfile of format 3 may hold and an older one may not."""
_COMMIT_SHA = re.compile(r"[0-9a-f]{40,64}")

HEADER_BYTES = PEEK_BYTES
"""Enough of a lockfile to read its header (``peek_header``, ``peek_watermark``)."""


def parse(text: str, filename: str, specs: Mapping[str, Any] | None = None) -> LockState:
    """Parse lockfile text. Every problem is a ``StateError`` naming the file and line.
    ``specs`` (address -> current body) lets equal recorded bodies share it (``build_run``)."""
    if text.startswith("\ufeff"):
        text = text[1:]  # an editor's BOM is harmless; do not refuse the file for it
    _refuse_conflicts(text, filename)
    locator = KeyLines(text)
    raw = _read_document(text, filename, locator, specs)
    version, serial = _check_header(raw, filename, locator)
    if version == 1:
        raw = migrate_v1(raw)
    repository, root_commit, observed_until = _optional_header(raw, filename, locator)
    runs, rejections, history, baselines = _build_tables(raw, filename, locator, specs)
    platform_instance, reruns = _format3_fields(raw, filename, locator)
    return LockState(
        version=version,
        lineage=raw["lineage"],
        serial=serial,
        platform=raw["platform"],
        workspace=raw["workspace"],
        repository=repository,
        root_commit=root_commit,
        observed_until=observed_until,
        runs=runs,
        rejections=rejections,
        history=history,
        baselines=baselines,
        platform_instance=platform_instance,
        reruns=reruns,
        decisions=_decisions(raw, filename, locator),
    )


def _refuse_conflicts(text: str, filename: str) -> None:
    """A lockfile with git's merge-conflict markers is refused with the way out."""
    # The substring test is C-speed; the line scan runs only when a marker may be present.
    maybe_conflicted = any(marker in text for marker in ("<<<<<<<", "=======", ">>>>>>>"))
    regions = conflict_regions(text.splitlines()) if maybe_conflicted else []
    if regions:
        raise StateError(
            f"{filename} has unresolved git merge conflicts at {describe_regions(regions)}",
            "lockfiles cannot be merged by hand: take one side with "
            f"`git checkout --theirs {filename}` (or `--ours`), then run "
            "`osmosis-apply --refresh-only` to re-observe the Platform and record the result",
        )


def _read_document(
    text: str, filename: str, locator: KeyLines, specs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The TOML document: the fast tier when it reads the text, else ``tomllib``; a syntax
    error becomes a ``StateError`` with the file, line and column."""
    try:
        try:  # entries built as they are read: never the whole document as dicts
            raw = fast_load(text, entry_builder(filename, locator, specs))
        except StateError:
            raw = fast_load(text)  # then the checks below report in their own order
        if raw is None:
            raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = TOML_POSITION.match(str(exc))
        where, problem = filename, str(exc)
        if match:
            where = f"{filename}:{match['line']}:{match['col']}"
            problem = match["msg"]
        raise StateError(
            f"{where}: not valid TOML: {problem}",
            "the lockfile is corrupt; " + RESTORE_HINT.format(file=filename),
        ) from None
    except RecursionError:
        raise StateError(
            f"{filename}: not valid TOML: nested too deeply",
            "the lockfile is corrupt; " + RESTORE_HINT.format(file=filename),
        ) from None
    except ValueError:
        # Python refuses to convert an integer literal of more than 4,300 digits.
        line = next(
            (n for n, row in enumerate(text.splitlines(), 1) if re.search(r"[0-9_]{4300}", row)),
            None,
        )
        where = f"{filename}:{line}" if line else filename
        raise StateError(
            f"{where}: an integer with more than 4,300 digits",
            "the lockfile is corrupt; " + RESTORE_HINT.format(file=filename),
        ) from None
    return raw


def _check_header(raw: Mapping[str, Any], filename: str, locator: KeyLines) -> tuple[int, int]:
    """The required header keys checked, no unknown key: the format version and serial."""
    version = raw.get("version")
    if "version" not in raw:
        raise shape_error(filename, locator, ["version"], "missing required key")
    if type(version) is not int or version < 1:
        raise shape_error(
            filename,
            locator,
            ["version"],
            f"must be a positive integer (found {describe_input(version)})",
        )
    if version > LOCKFILE_VERSION:
        raise shape_error(
            filename,
            locator,
            ["version"],
            f"lockfile format {version if version < 10**6 else describe_input(version)} was "
            "written by a newer osmosis-reconciler "
            f"(this one reads format {LOCKFILE_VERSION})",
            "upgrade osmosis-reconciler (`pip install -U osmosis-reconciler`) and run again",
        )
    for key in ("lineage", "platform", "workspace"):
        if key not in raw:
            raise shape_error(filename, locator, [key], "missing required key")
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise shape_error(
                filename,
                locator,
                [key],
                f"must be a non-empty string (found {describe_input(raw[key])})",
            )
    serial = raw.get("serial", 0)
    if type(serial) is not int or serial < 0:
        raise shape_error(
            filename,
            locator,
            ["serial"],
            f"must be a non-negative integer (found {describe_input(serial)})",
        )
    unknown = sorted(set(raw) - _HEADER_KEYS)
    if unknown:
        raise shape_error(filename, locator, [unknown[0]], "unknown key")
    if version == 1 and "root_commit" in raw:
        raise shape_error(filename, locator, ["root_commit"], "unknown key in format 1")
    if version < 3:
        newer = next((key for key in _FORMAT3_KEYS if key in raw), None)
        if newer is not None:
            raise shape_error(filename, locator, [newer], f"unknown key in format {version}")
    return version, serial


def _optional_header(
    raw: Mapping[str, Any], filename: str, locator: KeyLines
) -> tuple[str | None, str | None, datetime | None]:
    """``repository``, ``root_commit`` and ``observed_until``, each checked when present."""
    repository = raw.get("repository")
    if repository is not None and (not isinstance(repository, str) or not repository.strip()):
        raise shape_error(
            filename,
            locator,
            ["repository"],
            f"must be a non-empty string (found {describe_input(repository)})",
        )
    root_commit = raw.get("root_commit")
    if root_commit is not None and (
        not isinstance(root_commit, str) or not re.fullmatch(r"[0-9a-f]{40,64}", root_commit)
    ):
        raise shape_error(
            filename,
            locator,
            ["root_commit"],
            f"must be a commit sha (found {describe_input(root_commit)})",
        )
    observed_until = raw.get("observed_until")
    if observed_until is not None and not isinstance(observed_until, datetime):
        raise shape_error(
            filename,
            locator,
            ["observed_until"],
            f"must be a date-time (found {describe_input(observed_until)})",
        )
    if isinstance(observed_until, datetime) and observed_until.tzinfo is None:
        observed_until = observed_until.replace(tzinfo=UTC)
    return repository, root_commit, observed_until


def _build_tables(
    raw: Mapping[str, Any], filename: str, locator: KeyLines, specs: Mapping[str, Any] | None
) -> tuple[
    dict[str, RecordedRun],
    dict[str, Rejection],
    tuple[HistoryEntry, ...],
    dict[str, Baseline],
]:
    """The ``runs``, ``rejections``, ``history`` and ``baselines`` tables, each entry built."""
    runs_table = raw.get("runs", {})
    if not isinstance(runs_table, dict):
        raise shape_error(filename, locator, ["runs"], "must be a table of addresses")
    # Each table is dropped from the parsed document once its entry is built, so the
    # document and the entries are never both whole in memory (the largest of a big
    # lockfile's transients).
    runs = {
        address: build_run(address, runs_table.pop(address), filename, locator, specs)
        for address in list(runs_table)
    }
    rejections_table = raw.get("rejections", {})
    if not isinstance(rejections_table, dict):
        raise shape_error(filename, locator, ["rejections"], "must be a table of addresses")
    rejections = {
        address: build_rejection(address, table, filename, locator)
        for address, table in rejections_table.items()
    }
    history_list = raw.get("history", [])
    if not isinstance(history_list, list):
        raise shape_error(
            filename, locator, ["history"], "must be an array of tables ([[history]])"
        )
    history = tuple(
        build_history(index, take_item(history_list, index), filename, locator)
        for index in range(len(history_list))
    )
    baselines_table = raw.get("baselines", {})
    if not isinstance(baselines_table, dict):
        raise shape_error(filename, locator, ["baselines"], "must be a table of addresses")
    baselines = {
        address: build_baseline(address, table, filename, locator)
        for address, table in baselines_table.items()
    }
    return runs, rejections, history, baselines


def _format3_fields(
    raw: Mapping[str, Any], filename: str, locator: KeyLines
) -> tuple[str | None, dict[str, tuple[str, ...]]]:
    """``platform_instance`` and ``[reruns]`` (format 3), each checked when present."""
    platform_instance = raw.get("platform_instance")
    if platform_instance is not None and (
        not isinstance(platform_instance, str) or not platform_instance.strip()
    ):
        raise shape_error(
            filename,
            locator,
            ["platform_instance"],
            f"must be a non-empty string (found {describe_input(platform_instance)})",
        )
    return platform_instance, _build_reruns(raw.get("reruns", {}), filename, locator)


def _build_reruns(table: Any, filename: str, locator: KeyLines) -> dict[str, tuple[str, ...]]:
    """``[reruns]``: address -> the commits whose re-run request an apply acted on."""
    if not isinstance(table, dict):
        raise shape_error(filename, locator, ["reruns"], "must be a table of addresses")
    reruns: dict[str, tuple[str, ...]] = {}
    for address, commits in table.items():
        if not isinstance(commits, list) or not all(
            isinstance(c, str) and _COMMIT_SHA.fullmatch(c) for c in commits
        ):
            raise shape_error(
                filename,
                locator,
                ["reruns", address],
                f"must be a list of commit shas (found {describe_input(commits)})",
            )
        reruns[address] = tuple(commits)
    return reruns


def _decisions(raw: Mapping[str, Any], filename: str, locator: Any) -> dict[str, Any]:
    if "decisions" not in raw:
        return {}
    # Imported here: a lockfile without decisions never loads their reader.
    from reconciler.state.decisions import build_decisions

    return build_decisions(raw["decisions"], filename, locator)


def migrate_v1(raw: dict[str, Any]) -> dict[str, Any]:
    """A format-1 lockfile's table as format 2 reads it (written back as format 2).

    Format 2 records the root commit beside the repository (``LockState.root_commit``);
    format 1 knew it only when the repository had no remote (``repository = "root:SHA"``).
    Format 2's other additions are optional fields, each of which means "nothing known" when
    absent: an intent without ``listings`` has no quiet-period evidence yet, and a history
    entry without ``outputs_pending`` or its cost inputs (``benchmark_id``, ``models``,
    ``attempts_per_task``) owes no download and gives no cost sample. Whether a format-1
    history entry's outputs were downloaded is not recorded, so none is assumed owed.
    The ``[baselines."ADDR"]`` tables of ``osmosis-results accept`` and history entries'
    ``task_count`` and ``selection`` are such fields too.
    """
    migrated = dict(raw)
    repository = raw.get("repository")
    if isinstance(repository, str) and repository.startswith("root:"):
        migrated["root_commit"] = repository.removeprefix("root:")
    return migrated


# --------------------------------------------------------------------------- files


def new_state(platform: str, workspace: str) -> LockState:
    """An empty state with a fresh lineage: what a missing lockfile means."""
    return LockState(lineage=str(uuid.uuid4()), serial=0, platform=platform, workspace=workspace)


def _same_platform(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def check_state_path(repo_root: Path, rel: str) -> None:
    """Refuse a lockfile path that leaves the repository or passes through a symlink.

    Checked from the repository root down (``reconciler.paths``): a ``state`` directory
    linked elsewhere would put the lockfile, its temp files and the apply lock outside the
    repository, and a linked lockfile would read another repository's state.
    """
    problem = check_inside(repo_root, rel, last_is_file=True)
    if problem is not None:
        raise StateError(
            f"{problem.path} {problem.message}: the lockfile and the apply lock must be "
            "written inside the repository",
            f"replace {problem.path} with a real directory (or file) in the repository, or "
            "point --state at a path inside it (default state/osmosis.lock)",
        )


def read_lockfile(
    path: Path,
    *,
    platform: str | None,
    workspace: str | None,
    display_path: str | None = None,
) -> LockState:
    """Read the lockfile at ``path``; a missing file is an empty state.

    A corrupt, conflicted, oversized, non-UTF-8 or foreign (other platform or workspace)
    lockfile raises ``StateError``; it is never treated as empty, because an empty state
    would make the plan submit every run again. ``platform``/``workspace`` None accepts the
    file's own (``osmosis-state``, which never talks to the Platform).
    """
    name = display_path or str(path)
    return load_lockfile(
        read_lockfile_bytes(path, name), name=name, platform=platform, workspace=workspace
    )


def read_lockfile_bytes(path: Path, name: str) -> bytes | None:
    """The lockfile's bytes, None when there is none; ``StateError`` when the path is not a
    regular file, is over ``MAX_LOCKFILE_BYTES`` or cannot be read. The one read of the
    lockfile a command makes (``read_lockfile`` = this, then ``load_lockfile``).

    Never through a symlink, for every command (issue 36): ``osmosis-state``, results,
    logs and import read a linked lockfile (or ``state/``) that the plan refuses."""
    check_named(path, what="lockfile", error=StateError)
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(
            f"{name}: cannot read the lockfile: {exc.strerror}",
            "check the path and its permissions",
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise StateError(
            f"{name}: the lockfile path is not a regular file",
            "point --state at a file (default state/osmosis.lock)",
        )
    if info.st_size > MAX_LOCKFILE_BYTES:
        raise StateError(
            f"{name}: the lockfile is {info.st_size:,} bytes, over the "
            f"{MAX_LOCKFILE_BYTES:,}-byte limit",
            "this is not a lockfile written by osmosis-apply; " + RESTORE_HINT.format(file=name),
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StateError(
            f"{name}: cannot read the lockfile: {exc.strerror}",
            "check the path and its permissions",
        ) from None


def lockfile_text(data: bytes, name: str) -> str:
    """A lockfile's bytes as text; ``StateError`` (line and column) when not UTF-8. A
    caller that passes its only reference to the bytes has them freed before the parse."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise StateError(
            f"{name}:{line}:{column}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start})",
            "the lockfile is corrupt; " + RESTORE_HINT.format(file=name),
        ) from None


def load_lockfile(
    data: bytes | str | None,
    *,
    name: str,
    platform: str | None,
    workspace: str | None,
    specs: Mapping[str, Any] | None = None,
) -> LockState:
    """The state in a lockfile's bytes or text (None: no lockfile, an empty state); see
    ``read_lockfile`` for what is refused, ``parse`` for ``specs``."""
    if data is None:
        return new_state(platform or "", workspace or "")
    text = data if isinstance(data, str) else lockfile_text(data, name)
    del data  # the bytes of a big lockfile are not kept through the parse
    state = parse(text, name, specs)
    mismatches = []
    flags = []
    if platform is not None and not _same_platform(state.platform, platform):
        mismatches.append(f"platform {state.platform!r} (this run uses {platform!r})")
        flags.append(f"--platform {state.platform}")
    if workspace is not None and state.workspace.strip() != workspace.strip():
        mismatches.append(f"workspace {state.workspace!r} (this run uses {workspace!r})")
        flags.append(f"--workspace {state.workspace}")
    if mismatches:
        raise StateError(
            f"{name} records runs of {' and '.join(mismatches)}; "
            "state from another platform must never drive stops",
            f"pass {' '.join(flags)} to use this state, or point --state at the lockfile "
            "for the current platform and workspace",
        )
    return state


_PEEK_PLATFORM = re.compile(r'^platform = "([^"\\]*)"$', re.M)


def peek_platform(path: Path) -> str | None:
    """The ``platform`` a lockfile on disk records (its header only), None when there is
    no readable lockfile there."""
    try:
        with path.open("rb") as handle:
            head = handle.read(PEEK_BYTES)
    except OSError:
        return None
    found = _PEEK_PLATFORM.search(head.decode("utf-8", "replace").partition("\n[")[0])
    return found.group(1) if found else None


def peek_guarded(path: Path) -> tuple[str, str] | None:
    """The ``(platform, workspace)`` a lockfile on disk records, read from its header alone
    (the lines before its first table), None when there is no readable header there."""
    try:
        with path.open("rb") as handle:
            head = handle.read(PEEK_BYTES)
    except OSError:
        return None
    header, table, _rest = head.decode("utf-8", "replace").partition("\n[")
    if not table and len(head) == PEEK_BYTES:
        return None  # a header longer than the peek: not one this writer made
    try:
        fields = tomllib.loads(header)
    except tomllib.TOMLDecodeError:
        return None
    platform, workspace = fields.get("platform"), fields.get("workspace")
    if not isinstance(platform, str) or not isinstance(workspace, str):
        return None
    return platform, workspace


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # some filesystems do not allow opening directories; the rename still happened
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path: Path, data: bytes) -> None:
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644  # committed to git: readable by everyone, like any source file
    fd, temp_name = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        # The rename is the commit point: a crash before it leaves the old file intact,
        # a crash after it leaves the new one. Never a half-written file at ``path``.
        crash_point("lockfile.before_rename")
        os.replace(temp_name, path)
        crash_point("lockfile.after_rename")
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(directory)


def remove_stale_temps(path: Path) -> int:
    """Delete temp files of ``path`` left by a writer killed before its rename; returns how many.

    Call only while holding the apply lock: every writer holds it, so a temp file seen then
    belongs to a dead process. Without this, ``state/`` collects ``.osmosis.lock.*.tmp``
    files that end up committed next to the lockfile.
    """
    pattern = re.compile(re.escape(f".{path.name}.") + r"[A-Za-z0-9_]+\.tmp")
    removed = 0
    try:
        names = os.listdir(path.parent)
    except OSError:
        return 0
    for name in names:
        if pattern.fullmatch(name):
            try:
                os.unlink(path.parent / name)
                removed += 1
            except OSError:
                pass
    return removed


def write_lockfile(path: Path, state: LockState) -> LockState:
    """Write ``state`` atomically with ``serial + 1``; returns the state as written."""
    written = _sanitize(state).model_copy(
        update={"serial": state.serial + 1, "version": LOCKFILE_VERSION}
    )
    try:
        _atomic_write(path, serialize(written).encode("utf-8"))
    except OSError as exc:
        raise StateError(
            f"{path}: cannot write the lockfile: {exc.strerror or exc}",
            "check that the state directory exists and is writable",
        ) from None
    return written
