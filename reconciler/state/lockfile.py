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
TOML text itself (a small deterministic emitter with proper string escaping) and reads it
in two tiers:

* ``_fast_load`` reads exactly the TOML subset the emitter produces, mostly one regex per
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

import json
import math
import os
import re
import stat
import tempfile
import threading
import time
import tomllib
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, cast

from pydantic import BaseModel, ValidationError

from reconciler.crashpoints import crash_point
from reconciler.errors import StateError
from reconciler.escaping import escape_text
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
    model_identity,
    selection_digest,
)
from reconciler.paths import check_inside, relative_path_problem

__all__ = [
    "HISTORY_LIMIT_PER_ADDRESS",
    "HISTORY_REASONS",
    "MAX_LOCKFILE_BYTES",
    "StateStore",
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

HISTORY_LIMIT_PER_ADDRESS = 20
"""At most this many ``[[history]]`` entries are kept per address (the newest)."""

HISTORY_REASONS = frozenset({"replaced", "rerun", "forgotten", "stopped", "moved", "lost", "smoke"})
"""``smoke``: a smoke run that left its address to the full run (or to a new smoke run)."""

MAX_LOCKFILE_BYTES = 64 * 1024 * 1024
"""A lockfile larger than this is refused before it is read (5,000 full entries: ~6 MB)."""

HEADER_COMMENT = (
    "# osmosis-reconciler state. Written by osmosis-apply and committed to git; "
    "do not edit by hand."
)

_RESTORE_HINT = (
    "restore the last good version from git (`git checkout HEAD -- {file}`), "
    "then run `osmosis-apply --refresh-only`"
)

# --------------------------------------------------------------------------- emitting TOML

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')


def _escape_char(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _toml_str(value: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_str(key)


def _toml_datetime(value: datetime) -> str:
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}"
        f"T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}Z"
    )


def _toml_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)  # repr round-trips and is always a valid TOML float ("1.0", "1e-05")


def _inline(value: Any, indent: str = "") -> str:
    """A value on the right of ``=``: scalars, arrays and inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _toml_float(value)
    if isinstance(value, str):
        return _toml_str(value)
    if isinstance(value, datetime):
        return _toml_datetime(value)
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in sorted(value.items()) if v is not None]
        if not items:
            return "{}"
        return "{ " + ", ".join(f"{_toml_key(k)} = {_inline(v)}" for k, v in items) + " }"
    if isinstance(value, list | tuple | set | frozenset):
        elements = [
            v
            for v in (sorted(value) if isinstance(value, set | frozenset) else value)
            if v is not None
        ]
        if not elements:
            return "[]"
        if any(isinstance(v, Mapping) for v in elements):
            # Arrays of objects (a spec's agents) get one element per line so a change to
            # one agent is a one-line diff in git.
            inner = indent + "  "
            body = "".join(f"{inner}{_inline(v, inner)},\n" for v in elements)
            return "[\n" + body + indent + "]"
        return "[" + ", ".join(_inline(v, indent) for v in elements) + "]"
    raise TypeError(f"cannot write a {type(value).__name__} to the lockfile")


def _emit_table(
    out: list[str],
    header: str,
    pairs: Iterable[tuple[str, Any]],
    subtables: Iterable[tuple[str, Mapping[str, Any]]] = (),
) -> None:
    """Emit ``[header]``, its key/value lines, then each sub-table (depth first)."""
    out.append("")
    out.append(f"[{header}]")
    for key, value in pairs:
        if value is not None:
            out.append(f"{_toml_key(key)} = {_inline(value)}")
    for key, mapping in subtables:
        _emit_mapping(out, f"{header}.{_toml_key(key)}", mapping)


def _emit_mapping(out: list[str], header: str, mapping: Mapping[str, Any]) -> None:
    """A free-form mapping (a spec, a sha256 map) as a table with sorted keys.

    Non-empty nested mappings become sub-tables; everything else stays inline. TOML has no
    null, so None values are left out (submit bodies omit unset fields anyway).
    """
    pairs: list[tuple[str, Any]] = []
    subtables: list[tuple[str, Mapping[str, Any]]] = []
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, Mapping) and any(v is not None for v in value.values()):
            subtables.append((key, value))
        else:
            pairs.append((key, value))
    _emit_table(out, header, pairs, subtables)


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
    for name, field in RecordedRun.model_fields.items()
    if name not in ("address", "spec", "downloads", "intent", "results")
]
_INTENT_SCALARS = [name for name in Intent.model_fields if name != "spec"]
_DOWNLOAD_SCALARS = [name for name in Downloads.model_fields if name != "sha256"]
_HISTORY_FIELDS = [name for name in HistoryEntry.model_fields if name != "results"]
_RESULTS_SCALARS = [name for name in RunResults.model_fields if name != "agents"]


def _emit_results(out: list[str], header: str, results: RunResults) -> None:
    """A run's scores: totals, then one inline table per agent (one line each)."""
    pairs: list[tuple[str, Any]] = [(name, getattr(results, name)) for name in _RESULTS_SCALARS]
    pairs.append(("agents", [a.model_dump(exclude_none=True) for a in results.agents]))
    _emit_table(out, header, pairs)


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
    header = f"runs.{_toml_key(address)}"
    _emit_table(out, header, [(name, getattr(run, name)) for name in _RUN_SCALARS])
    if run.spec:
        _emit_mapping(out, f"{header}.spec", run.spec)
    if run.downloads is not None:
        d = run.downloads
        _emit_table(
            out,
            f"{header}.downloads",
            [(name, getattr(d, name)) for name in _DOWNLOAD_SCALARS],
            [("sha256", d.sha256)] if d.sha256 else [],
        )
    if run.results is not None:
        _emit_results(out, f"{header}.results", run.results)
    if run.intent is not None:
        i = run.intent
        _emit_table(
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
        f"lineage = {_toml_str(state.lineage)}",
        f"serial = {state.serial}",
        f"platform = {_toml_str(state.platform)}",
        f"workspace = {_toml_str(state.workspace)}",
    ]
    if state.repository is not None:
        out.append(f"repository = {_toml_str(state.repository)}")
    if state.root_commit is not None:
        out.append(f"root_commit = {_toml_str(state.root_commit)}")
    if state.observed_until is not None:
        out.append(f"observed_until = {_toml_datetime(state.observed_until)}")
    if len(_RUN_LINES) > 2 * len(state.runs) + 256:
        _RUN_LINES.clear()
    for address in sorted(state.runs):
        out.extend(_run_lines(address, state.runs[address]))
    for address in sorted(state.rejections):
        rejection = state.rejections[address]
        _emit_table(
            out,
            f"rejections.{_toml_key(address)}",
            [(name, getattr(rejection, name)) for name in Rejection.model_fields],
        )
    for address in sorted(state.baselines):
        baseline = state.baselines[address]
        _emit_table(
            out,
            f"baselines.{_toml_key(address)}",
            [(name, getattr(baseline, name)) for name in Baseline.model_fields],
        )
    for entry in state.history:
        out.append("")
        out.append("[[history]]")
        for name in _HISTORY_FIELDS:
            value = getattr(entry, name)
            if value is not None:
                out.append(f"{name} = {_inline(value)}")
        if entry.results is not None:
            _emit_results(out, "history.results", entry.results)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- reading TOML

_CONFLICT_START = re.compile(r"<{7}(?: |$)")
_CONFLICT_MIDDLE = re.compile(r"(?:={7}|\|{7}(?: .*)?)$")
_CONFLICT_END = re.compile(r">{7}(?: |$)")
_TOML_POSITION = re.compile(r"^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$")


def _conflict_regions(lines: list[str]) -> list[tuple[int, int]]:
    """1-based (first, last) line ranges of git merge-conflict blocks."""
    regions: list[tuple[int, int]] = []
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if _CONFLICT_START.match(line):
            if start is None:
                start = number
        elif _CONFLICT_END.match(line):
            regions.append((start if start is not None else number, number))
            start = None
        elif _CONFLICT_MIDDLE.match(line) and start is None:
            regions.append((number, number))  # a stray separator left after a bad resolve
    if start is not None:
        regions.append((start, len(lines)))
    return regions


def _describe_regions(regions: list[tuple[int, int]]) -> str:
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in regions]
    if len(parts) == 1:
        return f"line{'s' if '-' in parts[0] else ''} {parts[0]}"
    return "lines " + ", ".join(parts[:-1]) + " and " + parts[-1]


def _path_str(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + _toml_key(part)
    return text


class _Locator:
    """Best-effort line numbers for key paths, so shape errors can say where."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: list[str] = []
        self.headers: dict[str, list[int]] = {}

    def _index(self) -> None:
        # Only built when an error needs a line number: a valid file never pays for it.
        if self.lines or not self.text:
            return
        self.lines = self.text.splitlines()
        for number, line in enumerate(self.lines, 1):
            stripped = line.strip()
            if stripped.startswith("["):
                # Normalised header text (spaces removed) -> 1-based line numbers.
                self.headers.setdefault(stripped.replace(" ", ""), []).append(number)

    def line_of(self, path: list[str | int]) -> int | None:
        self._index()
        if len(path) >= 2 and path[0] == "history" and isinstance(path[1], int):
            numbers = self.headers.get("[[history]]", [])
            if path[1] >= len(numbers):
                return None
            return self._key_line(numbers[path[1]], path[2] if len(path) > 2 else None)
        # The deepest table header that exists, then the first remaining key inside it.
        for cut in range(len(path), 0, -1):
            found = self.headers.get(("[" + _path_str(path[:cut]) + "]").replace(" ", ""))
            if found:
                rest = path[cut:]
                return self._key_line(found[0], rest[0] if rest else None)
        if path and isinstance(path[0], str):
            return self._key_line(0, path[0]) or None
        return None

    def _key_line(self, header_line: int, key: str | int | None) -> int:
        """The line of ``key`` in the table starting at ``header_line`` (0: top level)."""
        if not isinstance(key, str):
            return header_line
        pattern = re.compile(
            r"\s*(?:" + re.escape(key) + "|" + re.escape(_toml_str(key)) + r")\s*[=.]"
        )
        for index in range(header_line, len(self.lines)):
            line = self.lines[index]
            if line.lstrip().startswith("["):
                break
            if pattern.match(line):
                return index + 1
        return header_line


def _shape_error(
    filename: str, locator: _Locator, path: list[str | int], problem: str, hint: str | None = None
) -> StateError:
    line = locator.line_of(path)
    where = f"{filename}:{line}" if line else filename
    return StateError(
        f"{where}: {_path_str(path) or '(top level)'}: {problem}",
        hint
        or ("the lockfile is written by osmosis-apply; " + _RESTORE_HINT.format(file=filename)),
    )


def _describe_input(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 64:
        # repr() refuses an integer of more than 4,300 digits (and it says nothing useful).
        return f"an integer of {value.bit_length():,} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _validate(
    model: type[BaseModel],
    data: dict[str, Any],
    filename: str,
    locator: _Locator,
    base: list[str | int],
) -> Any:
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = [p for p in error["loc"]]
        problem = error["msg"]
        if error["type"] == "missing":
            problem = "missing required key"
        elif error["type"] == "extra_forbidden":
            problem = "unknown key"
        else:
            problem += f" (found {_describe_input(error.get('input'))})"
        raise _shape_error(filename, locator, base + loc, problem) from None


def _nullable_required(model: type[BaseModel]) -> list[str]:
    """Required fields that accept None: TOML has no null, so absence means None."""
    names = []
    for name, field in model.model_fields.items():
        if field.is_required() and type(None) in getattr(field.annotation, "__args__", ()):
            names.append(name)
    return names


_HISTORY_NULLABLE = _nullable_required(HistoryEntry)
_RUN_NESTED = {"spec", "downloads", "intent", "results"}


def _build_results(table: Any, filename: str, locator: _Locator, base: list[str | int]) -> Any:
    """A ``results`` table as ``RunResults``; anything else is left for the model to refuse."""
    if not isinstance(table, dict):
        return table
    data = dict(table)
    if isinstance(data.get("agents"), list):
        data["agents"] = tuple(data["agents"])
    return _validate(RunResults, data, filename, locator, base)


def _check_path_value(
    value: Any, filename: str, locator: _Locator, path: list[str | int], what: str
) -> None:
    """Lockfile values that become paths (addresses, download directories, file names) are
    validated as relative paths when read (issue 23): never ``..``, absolute or controls."""
    if not isinstance(value, str):
        return  # the model names the wrong type
    problem = relative_path_problem(value)
    if problem is not None:
        raise _shape_error(
            filename,
            locator,
            path,
            f"{what} {escape_text(value)!r} {problem}",
            "a hand-edited or hostile lockfile: restore it from git "
            f"(`git checkout -- {filename}`) or correct the value",
        )


def _build_run(address: str, table: Any, filename: str, locator: _Locator) -> RecordedRun:
    base: list[str | int] = ["runs", address]
    _check_path_value(address, filename, locator, base, "the address")
    if not isinstance(table, dict):
        raise _shape_error(filename, locator, base, "must be a table")
    if "address" in table:
        raise _shape_error(
            filename, locator, base + ["address"], "unknown key (the address is the table name)"
        )
    data: dict[str, Any] = {"address": address, **table}
    downloads = table.get("downloads")
    if isinstance(downloads, dict):
        downloads = dict(downloads)
        if isinstance(downloads.get("types"), list):
            downloads["types"] = tuple(downloads["types"])
        where = base + ["downloads"]
        _check_path_value(
            downloads.get("directory"), filename, locator, where + ["directory"], "the directory"
        )
        if isinstance(downloads.get("sha256"), dict):
            for rel in downloads["sha256"]:
                _check_path_value(rel, filename, locator, where + ["sha256"], "the file")
        data["downloads"] = _validate(Downloads, downloads, filename, locator, base + ["downloads"])
    intent: Any = table.get("intent")
    if isinstance(intent, dict):
        listings: Any = intent.get("listings")
        if isinstance(listings, list):
            intent = {**intent, "listings": tuple(listings)}
        data["intent"] = _validate(Intent, intent, filename, locator, base + ["intent"])
    if "results" in table:
        data["results"] = _build_results(table["results"], filename, locator, base + ["results"])
    return _validate(RecordedRun, data, filename, locator, base)


def _build_rejection(address: str, table: Any, filename: str, locator: _Locator) -> Rejection:
    base: list[str | int] = ["rejections", address]
    _check_path_value(address, filename, locator, base, "the address")
    if not isinstance(table, dict):
        raise _shape_error(filename, locator, base, "must be a table")
    data = dict(table)
    if isinstance(data.get("issues"), list):
        data["issues"] = tuple(data["issues"])
    return _validate(Rejection, data, filename, locator, base)


def _build_baseline(address: str, table: Any, filename: str, locator: _Locator) -> Baseline:
    base: list[str | int] = ["baselines", address]
    if not isinstance(table, dict):
        raise _shape_error(filename, locator, base, "must be a table")
    return _validate(Baseline, dict(table), filename, locator, base)


def _build_history(index: int, table: Any, filename: str, locator: _Locator) -> HistoryEntry:
    base: list[str | int] = ["history", index]
    if not isinstance(table, dict):
        raise _shape_error(filename, locator, base, "must be a table")
    data: dict[str, Any] = {name: None for name in _HISTORY_NULLABLE}
    data.update(table)
    models: Any = table.get("models")
    if isinstance(models, list):
        data["models"] = tuple(models)
    if "results" in table:
        data["results"] = _build_results(table["results"], filename, locator, base + ["results"])
    _check_path_value(table.get("address"), filename, locator, base + ["address"], "the address")
    entry = _validate(HistoryEntry, data, filename, locator, base)
    if entry.reason not in HISTORY_REASONS:
        raise _shape_error(
            filename,
            locator,
            base + ["reason"],
            f"unknown reason {entry.reason!r} (expected one of {', '.join(sorted(HISTORY_REASONS))})",
        )
    return entry


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
    }
)

_PEEK_BYTES = 4096
HEADER_BYTES = _PEEK_BYTES
"""Enough of a lockfile to read its header (``peek_header``, ``peek_watermark``)."""
_PEEK_WATERMARK = re.compile(
    r"^observed_until = (\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$", re.M
)


def peek_watermark(path: Path) -> tuple[bool, datetime | None]:
    """(known, watermark) from the lockfile's first lines, without reading the whole file:
    lets the run list start (on a thread) before the lockfile is parsed. ``known`` is False
    when the header cannot be read this way (the full parse decides then)."""
    try:
        with open(path, "rb") as handle:
            return peek_watermark_in(handle.read(_PEEK_BYTES))
    except FileNotFoundError:
        return True, None
    except OSError:
        return False, None


def peek_watermark_in(data: bytes | None) -> tuple[bool, datetime | None]:
    """``peek_watermark`` of lockfile bytes already read (None: no lockfile)."""
    if data is None:
        return True, None
    head = data[:_PEEK_BYTES].decode("utf-8", "replace")
    body, _, _ = head.partition("\n[")
    match = _PEEK_WATERMARK.search(body)
    if match:
        try:
            return True, _utc(match.groups())
        except ValueError:
            return False, None
    return ("\n[" in head or len(head) < _PEEK_BYTES), None


class _NotCanonical(Exception):
    """The text is outside the subset ``_fast_load`` reads; use ``tomllib`` instead."""


class _AlwaysMatches(Protocol):
    """A compiled pattern that matches the empty string, so ``match`` never returns None."""

    def match(self, string: str, pos: int = ..., /) -> re.Match[str]: ...


def _utc(parts: Iterable[str]) -> datetime:
    """The UTC datetime of year, month, day, hour, minute, second (as matched digits)."""
    year, month, day, hour, minute, second = map(int, parts)
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


_F_WS = cast(_AlwaysMatches, re.compile(r"[ \t]*"))
_F_ARRAY_WS = cast(_AlwaysMatches, re.compile(r"(?:[ \t]|\r?\n)*"))
_F_BARE = re.compile(r"[A-Za-z0-9_-]+")
# Basic strings whose escapes mean the same in TOML and JSON (no raw tab or DEL, no
# surrogate \u escapes, high or low), so ``json.loads`` decodes them exactly as TOML does.
_F_STR_BODY = r'(?:[^"\\\x00-\x1f\x7f]|\\[btnfr"\\]|\\u(?![dD][89a-fA-F])[0-9A-Fa-f]{4})*'
_F_STR = re.compile('"' + _F_STR_BODY + '"')
_F_DATETIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z")
_F_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_F_EOL = re.compile(r"[ \t]*(?:\r?\n|\Z)")
_F_COMMENT = re.compile(r"#[^\x00-\x08\x0a-\x1f\x7f]*(?:\r?\n|\Z)")
_F_SIMPLE_LINE = re.compile(
    r'(?:([A-Za-z0-9_-]+)|"([^"\\\x00-\x1f\x7f]*)") = (?:'
    r'"([^"\\\x00-\x1f\x7f]*)"|(-?(?:0|[1-9][0-9]*))|(true|false)|'
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z|"
    r'(\[(?:"[^"\\\x00-\x1f\x7f]*"(?:, "[^"\\\x00-\x1f\x7f]*")*)?\])'  # JSON-identical
    r")\r?\n"
)
_F_HEADER_LINE = re.compile(
    r'\[((?:[A-Za-z0-9_-]+|"'
    + _F_STR_BODY
    + r'")(?:\.(?:[A-Za-z0-9_-]+|"'
    + _F_STR_BODY
    + r'"))*)\]\r?\n'
)
_F_HEADER_KEY = re.compile(r'([A-Za-z0-9_-]+)|("' + _F_STR_BODY + '")')
# A one-level inline table of plain strings and booleans (``{ X-Team = "evals" }``).
_F_FLAT_PAIR = re.compile(
    r'(?:([A-Za-z0-9_-]+)|("[^"\\\x00-\x1f\x7f]*")) = ("[^"\\\x00-\x1f\x7f]*"|true|false)'
)
_F_FLAT_TABLE = re.compile(
    r"\{ " + _F_FLAT_PAIR.pattern + r"(?:, " + _F_FLAT_PAIR.pattern + r")* \}"
)
_F_WORDS = {"true": True, "false": False, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _f_key(text: str, pos: int) -> tuple[str, int]:
    match = _F_BARE.match(text, pos)
    if match:
        return match.group(), match.end()
    match = _F_STR.match(text, pos)
    if match:
        raw = match.group()
        return (raw[1:-1] if "\\" not in raw else json.loads(raw)), match.end()
    raise _NotCanonical


def _f_value(text: str, pos: int, frozen: set[int]) -> tuple[Any, int]:
    char = text[pos : pos + 1]
    if char == '"':
        match = _F_STR.match(text, pos)
        if not match:
            raise _NotCanonical
        raw = match.group()
        return (raw[1:-1] if "\\" not in raw else json.loads(raw)), match.end()
    if char == "{":
        flat = _F_FLAT_TABLE.match(text, pos)
        if flat:
            table = {}
            for bare, quoted, value in _F_FLAT_PAIR.findall(flat.group()):
                key = bare or quoted[1:-1]
                if key in table:
                    raise _NotCanonical
                table[key] = value[1:-1] if value.startswith('"') else value == "true"
            frozen.add(id(table))
            return table, flat.end()
        table = {}
        frozen.add(id(table))
        pos = _F_WS.match(text, pos + 1).end()
        if text.startswith("}", pos):
            return table, pos + 1
        while True:
            key, pos = _f_key(text, pos)
            pos = _F_WS.match(text, pos).end()
            if not text.startswith("=", pos) or key in table:
                raise _NotCanonical
            pos = _F_WS.match(text, pos + 1).end()
            table[key], pos = _f_value(text, pos, frozen)
            pos = _F_WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos = _F_WS.match(text, pos + 1).end()
            elif text.startswith("}", pos):
                return table, pos + 1
            else:
                raise _NotCanonical
    if char == "[":
        array: list[Any] = []
        pos = _F_ARRAY_WS.match(text, pos + 1).end()
        while not text.startswith("]", pos):
            value, pos = _f_value(text, pos, frozen)
            if isinstance(value, dict | list):
                frozen.add(id(value))
            array.append(value)
            pos = _F_ARRAY_WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos = _F_ARRAY_WS.match(text, pos + 1).end()
            elif not text.startswith("]", pos):
                raise _NotCanonical
        return array, pos + 1
    match = _F_DATETIME.match(text, pos)
    if match:
        try:
            value = _utc(match.groups())
        except ValueError:
            raise _NotCanonical from None
        return value, match.end()
    for word, value in _F_WORDS.items():
        if text.startswith(word, pos) and not _F_BARE.match(text, pos + len(word)):
            return value, pos + len(word)
    match = _F_NUMBER.match(text, pos)
    if (
        match
        and not _F_BARE.match(text, match.end())
        and text[match.end() : match.end() + 1] != "."
    ):
        if match.group(1) or match.group(2):
            return float(match.group()), match.end()
        return int(match.group()), match.end()
    raise _NotCanonical


def _fast_load(text: str) -> dict[str, Any] | None:
    """Read the TOML subset that ``serialize`` writes, several times faster than
    ``tomllib``; None for anything outside it (hand edits, other TOML styles, errors),
    which ``tomllib`` then reads. It must never accept text ``tomllib`` would read
    differently; the tests check that on generated states and on mutated files.
    """
    root: dict[str, Any] = {}
    frozen: set[int] = set()  # dicts/lists from inline values: headers may not extend them
    defined: set[int] = set()  # tables already opened by a [header]
    current = root
    pos, end = 0, len(text)
    simple_line = _F_SIMPLE_LINE.match
    try:
        while pos < end:
            # Most lines are `key = "plain string" | integer | datetime | bool`: one regex.
            match = simple_line(text, pos)
            if match:
                key = match.group(1) or match.group(2)
                if key in current:
                    raise _NotCanonical
                if match.group(3) is not None:
                    current[key] = match.group(3)
                elif match.group(4) is not None:
                    current[key] = int(match.group(4))
                elif match.group(5) is not None:
                    current[key] = match.group(5) == "true"
                elif match.group(12) is not None:
                    current[key] = value = json.loads(match.group(12))
                    frozen.add(id(value))
                else:
                    try:
                        current[key] = _utc(match.group(6, 7, 8, 9, 10, 11))
                    except ValueError:
                        raise _NotCanonical from None
                pos = match.end()
                continue
            pos = _F_WS.match(text, pos).end()
            char = text[pos : pos + 1]
            if char in ("\n", "\r"):
                match = _F_EOL.match(text, pos)
                if not match:
                    raise _NotCanonical
                pos = match.end()
                continue
            if char == "#":
                match = _F_COMMENT.match(text, pos)
                if not match:
                    raise _NotCanonical
                pos = match.end()
                continue
            if char == "[":
                array_table = text.startswith("[[", pos)
                if array_table:
                    keys = []
                    pos += 2
                    while True:
                        key, pos = _f_key(text, pos)
                        keys.append(key)
                        if not text.startswith(".", pos):
                            break
                        pos += 1
                    match = _F_EOL.match(text, pos + 2)
                    if not text.startswith("]]", pos) or not match:
                        raise _NotCanonical
                else:
                    match = _F_HEADER_LINE.match(text, pos)
                    if not match:
                        raise _NotCanonical
                    keys = [
                        bare or (quoted[1:-1] if "\\" not in quoted else json.loads(quoted))
                        for bare, quoted in _F_HEADER_KEY.findall(match.group(1))
                    ]
                pos = match.end()
                container = root
                for key in keys[:-1]:
                    child = container.setdefault(key, {})
                    if isinstance(child, list):
                        if id(child) in frozen or not child:
                            raise _NotCanonical
                        child = child[-1]
                    if not isinstance(child, dict) or id(child) in frozen:
                        raise _NotCanonical
                    container = child
                last = keys[-1]
                if array_table:
                    array = container.setdefault(last, [])
                    if not isinstance(array, list) or id(array) in frozen:
                        raise _NotCanonical
                    current = {}
                    array.append(current)
                else:
                    existing = container.get(last)
                    if existing is None:
                        current = container[last] = {}
                    elif (
                        isinstance(existing, dict)
                        and id(existing) not in frozen
                        and id(existing) not in defined
                    ):
                        current = existing
                    else:
                        raise _NotCanonical
                defined.add(id(current))
                continue
            key, pos = _f_key(text, pos)
            pos = _F_WS.match(text, pos).end()
            if not text.startswith("=", pos) or key in current:
                raise _NotCanonical
            pos = _F_WS.match(text, pos + 1).end()
            value, pos = _f_value(text, pos, frozen)
            if isinstance(value, dict | list):
                frozen.add(id(value))
            current[key] = value
            match = _F_EOL.match(text, pos)
            if not match:
                raise _NotCanonical
            pos = match.end()
    except (_NotCanonical, json.JSONDecodeError, RecursionError):
        return None
    return root


def parse(text: str, filename: str) -> LockState:
    """Parse lockfile text. Every problem is a ``StateError`` naming the file and line."""
    if text.startswith("\ufeff"):
        text = text[1:]  # an editor's BOM is harmless; do not refuse the file for it
    # The substring test is C-speed; the line scan runs only when a marker may be present.
    maybe_conflicted = any(marker in text for marker in ("<<<<<<<", "=======", ">>>>>>>"))
    regions = _conflict_regions(text.splitlines()) if maybe_conflicted else []
    if regions:
        raise StateError(
            f"{filename} has unresolved git merge conflicts at {_describe_regions(regions)}",
            "lockfiles cannot be merged by hand: take one side with "
            f"`git checkout --theirs {filename}` (or `--ours`), then run "
            "`osmosis-apply --refresh-only` to re-observe the Platform and record the result",
        )
    try:
        raw = _fast_load(text)
        if raw is None:
            raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POSITION.match(str(exc))
        where, problem = filename, str(exc)
        if match:
            where = f"{filename}:{match['line']}:{match['col']}"
            problem = match["msg"]
        raise StateError(
            f"{where}: not valid TOML: {problem}",
            "the lockfile is corrupt; " + _RESTORE_HINT.format(file=filename),
        ) from None
    except RecursionError:
        raise StateError(
            f"{filename}: not valid TOML: nested too deeply",
            "the lockfile is corrupt; " + _RESTORE_HINT.format(file=filename),
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
            "the lockfile is corrupt; " + _RESTORE_HINT.format(file=filename),
        ) from None

    locator = _Locator(text)
    version = raw.get("version")
    if "version" not in raw:
        raise _shape_error(filename, locator, ["version"], "missing required key")
    if type(version) is not int or version < 1:
        raise _shape_error(
            filename,
            locator,
            ["version"],
            f"must be a positive integer (found {_describe_input(version)})",
        )
    if version > LOCKFILE_VERSION:
        raise _shape_error(
            filename,
            locator,
            ["version"],
            f"lockfile format {version if version < 10**6 else _describe_input(version)} was "
            "written by a newer osmosis-reconciler "
            f"(this one reads format {LOCKFILE_VERSION})",
            "upgrade osmosis-reconciler (`pip install -U osmosis-reconciler`) and run again",
        )
    for key in ("lineage", "platform", "workspace"):
        if key not in raw:
            raise _shape_error(filename, locator, [key], "missing required key")
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise _shape_error(
                filename,
                locator,
                [key],
                f"must be a non-empty string (found {_describe_input(raw[key])})",
            )
    serial = raw.get("serial", 0)
    if type(serial) is not int or serial < 0:
        raise _shape_error(
            filename,
            locator,
            ["serial"],
            f"must be a non-negative integer (found {_describe_input(serial)})",
        )
    unknown = sorted(set(raw) - _HEADER_KEYS)
    if unknown:
        raise _shape_error(filename, locator, [unknown[0]], "unknown key")
    if version == 1:
        if "root_commit" in raw:
            raise _shape_error(filename, locator, ["root_commit"], "unknown key in format 1")
        raw = migrate_v1(raw)

    repository = raw.get("repository")
    if repository is not None and (not isinstance(repository, str) or not repository.strip()):
        raise _shape_error(
            filename,
            locator,
            ["repository"],
            f"must be a non-empty string (found {_describe_input(repository)})",
        )
    root_commit = raw.get("root_commit")
    if root_commit is not None and (
        not isinstance(root_commit, str) or not re.fullmatch(r"[0-9a-f]{40,64}", root_commit)
    ):
        raise _shape_error(
            filename,
            locator,
            ["root_commit"],
            f"must be a commit sha (found {_describe_input(root_commit)})",
        )
    observed_until = raw.get("observed_until")
    if observed_until is not None and not isinstance(observed_until, datetime):
        raise _shape_error(
            filename,
            locator,
            ["observed_until"],
            f"must be a date-time (found {_describe_input(observed_until)})",
        )
    if isinstance(observed_until, datetime) and observed_until.tzinfo is None:
        observed_until = observed_until.replace(tzinfo=UTC)
    runs_table = raw.get("runs", {})
    if not isinstance(runs_table, dict):
        raise _shape_error(filename, locator, ["runs"], "must be a table of addresses")
    runs = {
        address: _build_run(address, table, filename, locator)
        for address, table in runs_table.items()
    }
    rejections_table = raw.get("rejections", {})
    if not isinstance(rejections_table, dict):
        raise _shape_error(filename, locator, ["rejections"], "must be a table of addresses")
    rejections = {
        address: _build_rejection(address, table, filename, locator)
        for address, table in rejections_table.items()
    }
    history_list = raw.get("history", [])
    if not isinstance(history_list, list):
        raise _shape_error(
            filename, locator, ["history"], "must be an array of tables ([[history]])"
        )
    history = tuple(
        _build_history(index, table, filename, locator) for index, table in enumerate(history_list)
    )
    baselines_table = raw.get("baselines", {})
    if not isinstance(baselines_table, dict):
        raise _shape_error(filename, locator, ["baselines"], "must be a table of addresses")
    baselines = {
        address: _build_baseline(address, table, filename, locator)
        for address, table in baselines_table.items()
    }
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
    )


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
    Entries, intents and history entries may hold ``stage = "smoke"`` (a smoke run); absent
    means a full run, as every format-1 run was.
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
    lockfile a command makes (``read_lockfile`` = this, then ``load_lockfile``)."""
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
            "this is not a lockfile written by osmosis-apply; " + _RESTORE_HINT.format(file=name),
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise StateError(
            f"{name}: cannot read the lockfile: {exc.strerror}",
            "check the path and its permissions",
        ) from None


def load_lockfile(
    data: bytes | None, *, name: str, platform: str | None, workspace: str | None
) -> LockState:
    """The state in a lockfile's bytes (None: no lockfile, an empty state); see
    ``read_lockfile`` for what is refused."""
    if data is None:
        return new_state(platform or "", workspace or "")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise StateError(
            f"{name}:{line}:{column}: not UTF-8 (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start})",
            "the lockfile is corrupt; " + _RESTORE_HINT.format(file=name),
        ) from None
    state = parse(text, name)
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


_PEEK_LINEAGE = re.compile(r'^lineage = "([^"\\]+)"$', re.M)
_PEEK_SERIAL = re.compile(r"^serial = (\d+)$", re.M)
_PEEK_REPOSITORY = re.compile(r'^repository = "([^"\\]*)"$', re.M)
FOREIGN_STATE_FLAG = "--allow-foreign-state"


def peek_header(data: bytes) -> tuple[str | None, int | None, str | None]:
    """(lineage, serial, repository) from a lockfile's first lines (e.g. HEAD's committed
    version), without parsing the whole file; None where absent."""
    head = data[:_PEEK_BYTES].decode("utf-8", "replace").partition("\n[")[0]
    lineage = _PEEK_LINEAGE.search(head)
    serial = _PEEK_SERIAL.search(head)
    repository = _PEEK_REPOSITORY.search(head)
    return (
        lineage.group(1) if lineage else None,
        int(serial.group(1)) if serial else None,
        repository.group(1) if repository else None,
    )


_PEEK_PLATFORM = re.compile(r'^platform = "([^"\\]*)"$', re.M)


def peek_platform(path: Path) -> str | None:
    """The ``platform`` a lockfile on disk records (its header only), None when there is
    no readable lockfile there."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_PEEK_BYTES)
    except OSError:
        return None
    found = _PEEK_PLATFORM.search(head.decode("utf-8", "replace").partition("\n[")[0])
    return found.group(1) if found else None


def check_provenance(
    state: LockState,
    *,
    name: str,
    repository: str | None,
    committed: bytes | None,
    allow_foreign: bool = False,
    root_commit: str | None = None,
) -> None:
    """Refuse a lockfile that is not this repository's own history.

    * It names another repository (copied from another repository in the same
      workspace, its entries would stop that repository's runs). Identity is the remote
      and the root commit (``same_repository``): a lockfile written before the repository
      had a remote is this repository's in a clone with the same root commit; a clone
      whose remote differs from the recorded one is a fork.
    * Its lineage differs from the lockfile committed at HEAD (replaced or deleted).
    * Its serial is lower than HEAD's with the same lineage (an older copy, edited back).

    ``allow_foreign`` (``--allow-foreign-state``) accepts the first two after a real rename
    or a deliberate replacement; an older copy is never accepted (restore it from git).
    """
    restore = f"`git checkout HEAD -- {name}`"
    if committed is not None:
        head_lineage, head_serial, _ = peek_header(committed)
        if head_lineage is not None and head_lineage == state.lineage:
            if head_serial is not None and state.serial < head_serial:
                raise StateError(
                    f"{name} has serial {state.serial}, older than the version committed at "
                    f"HEAD (serial {head_serial}): it was edited back or replaced by an older "
                    "copy, and would record runs that were already replaced",
                    f"restore it with {restore}",
                )
        elif head_lineage is not None and not allow_foreign:
            what = (
                "is missing"
                if state.serial == 0 and not state.runs
                else f"has lineage {state.lineage}"
            )
            raise StateError(
                f"{name} {what}, but the lockfile committed at HEAD has lineage "
                f"{head_lineage}: it was replaced (copied from elsewhere?) or deleted, and a "
                "replaced lockfile must never drive stops or submits",
                f"restore it with {restore}, or pass {FOREIGN_STATE_FLAG} if the "
                "replacement is deliberate",
            )
    if (
        repository is not None
        and not allow_foreign
        and not same_repository(state, repository, root_commit)
    ):
        raise StateError(
            f"{name} belongs to repository {state.repository}, not to this one "
            f"({repository}): a lockfile copied from another repository would stop or "
            "replace that repository's runs",
            f"use this repository's own lockfile; if the repository was renamed or moved, "
            f"pass {FOREIGN_STATE_FLAG} once (the next apply records the new name)",
        )


def same_repository(state: LockState, repository: str, root_commit: str | None) -> bool:
    """Whether ``state`` is the lockfile of the repository ``repository`` (its identity:
    the remote, else ``root:SHA``) whose history starts at ``root_commit``.

    The recorded remote decides when both sides have one (another remote is a fork, even
    with the same root commit). When either side has none (written before ``origin`` was
    added, or read in a copy without a remote) the root commit decides.
    """
    recorded = state.repository
    if recorded is None or recorded == repository:
        return True
    recorded_remote = None if recorded.startswith("root:") else recorded
    remote = None if repository.startswith("root:") else repository
    if recorded_remote is not None and remote is not None:
        return False
    recorded_root = state.root_commit or (
        recorded.removeprefix("root:") if recorded.startswith("root:") else None
    )
    ours = root_commit or (repository.removeprefix("root:") if remote is None else None)
    return recorded_root is not None and recorded_root == ours


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


class StateStore:
    """The one writer of the lockfile during an apply.

    Apply runs actions in threads; each persists its result through ``update``, which
    applies the change to the *current* state under a lock and returns only once a write
    that includes it is on disk, so concurrent updates are never lost. Writes are grouped:
    callers that arrive while a write is in flight are covered by one next write of the
    newest state (serial + 1 per update), which is what lets parallel actions outpace the
    fsyncs of one file.

    An update that is cheap to lose (a download's record: the files stay on disk and the
    next apply re-hashes them instead of fetching them again) may pass ``durable=False``:
    it is written with the next durable update, by ``flush``, or at the latest once
    ``lazy_interval`` seconds have passed since the last write, so a long run of downloads
    costs one lockfile write per interval instead of one per run.
    """

    def __init__(
        self,
        path: Path,
        state: LockState,
        *,
        lazy_interval: float = 1.0,
        on_write: Callable[[LockState], None] | None = None,
    ) -> None:
        self._on_write = on_write
        """Called after each write, inside it (``gitlock.GitLock.publish``: the remote
        state record gets every intent before its POST); an error fails the update."""
        self._path = path
        self._state = state
        self._latest = state
        """Every update applied, written or not."""
        self._applied = 0
        self._durable = 0
        """How many updates the file on disk includes."""
        self._lazy_interval = lazy_interval
        self._written_at = time.monotonic()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    @property
    def state(self) -> LockState:
        """The state as last written (or as given, before the first write)."""
        return self._state

    @property
    def pending(self) -> int:
        """Updates applied but not yet on disk (non-durable ones awaiting a write)."""
        with self._lock:
            return self._applied - self._durable

    def update(self, fn: Callable[[LockState], LockState], *, durable: bool = True) -> LockState:
        """Apply ``fn`` to the current state and persist the result atomically.

        Every call adds 1 to the serial and is written, even when ``fn`` changes nothing:
        callers use ``update(lambda s: s)`` to persist a state the store was constructed
        with. If the write fails the caller gets the error, and its change may still be
        written by a later update (each paid action's ordering is unaffected: its intent
        is on disk before ``update`` returns, or ``update`` raised). With ``durable=False``
        the write may be deferred (see the class docstring); the returned state is then the
        last one written.
        """
        with self._lock:
            base = self._latest
            self._latest = fn(base).model_copy(update={"serial": base.serial + 1})
            self._applied += 1
            mine = self._applied
            if not durable and time.monotonic() - self._written_at < self._lazy_interval:
                return self._state
        return self._write_through(mine)

    def flush(self) -> LockState:
        """Write every update applied so far, if any is not on disk yet."""
        with self._lock:
            mine = self._applied
        return self._write_through(mine)

    def _write_through(self, mine: int) -> LockState:
        with self._write_lock:
            if self._durable < mine:
                with self._lock:
                    target, covered = self._latest, self._applied
                # write_lockfile adds the 1 back.
                unwritten = target.model_copy(update={"serial": target.serial - 1})
                self._state = write_lockfile(self._path, unwritten)
                self._durable = covered
                self._written_at = time.monotonic()
                if self._on_write is not None:
                    self._on_write(self._state)
            return self._state


# --------------------------------------------------------------------------- history helpers


def cap_history(
    history: Iterable[HistoryEntry], limit: int = HISTORY_LIMIT_PER_ADDRESS
) -> tuple[HistoryEntry, ...]:
    """Keep the first (newest) ``limit`` entries of each address, preserving order."""
    counts: dict[str, int] = {}
    kept = []
    for entry in history:
        seen = counts.get(entry.address, 0)
        if seen < limit:
            kept.append(entry)
        counts[entry.address] = seen + 1
    return tuple(kept)


def add_history(state: LockState, entry: HistoryEntry) -> LockState:
    """Prepend ``entry`` (history is newest first) and cap the address's history."""
    if entry.reason not in HISTORY_REASONS:
        raise ValueError(f"unknown history reason {entry.reason!r}")
    return state.model_copy(update={"history": cap_history((entry, *state.history))})


OUTPUTS_DUE_REASONS = frozenset({"replaced", "rerun", "forgotten", "stopped"})
"""History reasons after which an ended run's outputs are still fetched (``moved`` carries
the run on under its new address; ``lost`` has no run to fetch from)."""
OUTPUTS_DUE_STATUSES = frozenset({"finished", "failed"})
"""Statuses of a run that ran to its end on its own: its outputs are results to keep."""


def _history_entry(
    run: RecordedRun, reason: str, ended_at: datetime | None, address: str | None = None
) -> HistoryEntry:
    downloaded = run.downloads is not None and run.downloads.complete
    pending = (
        reason in OUTPUTS_DUE_REASONS
        and run.run_id is not None
        and run.status in OUTPUTS_DUE_STATUSES
        and not downloaded
        and run.stage != "smoke"  # a smoke run's outputs are not the address's
    )
    per_task = (run.spec.get("execution_config") or {}).get("attempts_per_task", 1)
    return HistoryEntry(
        outputs_pending=True if pending else None,
        benchmark_id=run.benchmark_id,
        models=tuple(
            model_identity((agent or {}).get("model") or {})
            for agent in run.spec.get("agents") or []
        )
        or None,
        attempts_per_task=per_task
        if isinstance(per_task, int) and not isinstance(per_task, bool) and per_task > 1
        else None,
        address=address or run.address,
        run_id=run.run_id,
        run_name=run.run_name,
        spec_digest=run.spec_digest,
        status=run.status,
        submitted_at=run.submitted_at,
        ended_at=ended_at,
        reason=reason,
        requested_by=run.requested_by,
        results=None if run.stage == "smoke" else run.results,
        task_count=run.task_count,
        selection=selection_digest(run.spec) if run.spec else None,
        stage=run.stage,
    )


def put_run(state: LockState, run: RecordedRun) -> LockState:
    """Insert or replace the entry of ``run.address``."""
    return state.model_copy(update={"runs": {**state.runs, run.address: run}})


def retire_run(
    state: LockState,
    address: str,
    reason: str,
    *,
    ended_at: datetime | None = None,
    replacement: RecordedRun | None = None,
) -> LockState:
    """Move the entry of ``address`` to history (``replaced``, ``rerun``, ``forgotten``,
    ``lost``), then store ``replacement`` at the address or drop the address.

    An entry that never got a run id (an intent that was resolved as "nothing created")
    leaves no history: there is no run to remember.
    """
    runs = dict(state.runs)
    old = runs.pop(address, None)
    if replacement is not None:
        if replacement.address != address:
            raise ValueError("replacement must have the same address")
        runs[address] = replacement
    new = state.model_copy(update={"runs": runs})
    if old is not None and old.run_id is not None:
        new = add_history(new, _history_entry(old, reason, ended_at))
    return new


def rekey_run(
    state: LockState, old_address: str, new_address: str, *, ended_at: datetime | None = None
) -> LockState:
    """Re-key an entry after a config rename (plan action ``move``), without a Platform call.

    The old address gets a ``moved`` history entry so ``git log`` readers of the lockfile
    can follow the run; the run itself carries on under the new address.
    """
    if old_address not in state.runs:
        raise KeyError(old_address)
    if new_address in state.runs:
        raise ValueError(f"{new_address} already has a recorded run")
    runs = dict(state.runs)
    run = runs.pop(old_address)
    runs[new_address] = run.model_copy(update={"address": new_address})
    new = state.model_copy(update={"runs": runs})
    if run.run_id is not None:
        new = add_history(new, _history_entry(run, "moved", ended_at, address=old_address))
    return new
