"""The lockfile's tables as models: each entry checked and built, with errors that name the file, the line and the key."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from reconciler.errors import StateError
from reconciler.escaping import escape_text
from reconciler.model import (
    Baseline,
    Downloads,
    Frozen,
    HistoryEntry,
    Intent,
    RecordedRun,
    Rejection,
    RunResults,
)
from reconciler.paths import relative_path_problem
from reconciler.state.diagnostics import (
    path_str,
)
from reconciler.toml_locate import KeyLines

RESTORE_HINT = (
    "restore the last good version from git (`git checkout HEAD -- {file}`), "
    "then run `osmosis-apply --refresh-only`"
)


def shape_error(
    filename: str, locator: KeyLines, path: list[str | int], problem: str, hint: str | None = None
) -> StateError:
    line = locator.line_of(path)
    where = f"{filename}:{line}" if line else filename
    return StateError(
        f"{where}: {path_str(path) or '(top level)'}: {problem}",
        hint or ("the lockfile is written by osmosis-apply; " + RESTORE_HINT.format(file=filename)),
    )


def describe_input(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 64:
        # repr() refuses an integer of more than 4,300 digits (and it says nothing useful).
        return f"an integer of {value.bit_length():,} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(
    model: type[Frozen],
    data: dict[str, Any],
    filename: str,
    locator: KeyLines,
    base: list[str | int],
) -> Any:
    try:
        return model.model_validate(data, strict=True)
    except msgspec.ValidationError as exc:
        loc, problem = _problem(str(exc), data, model)
        raise shape_error(filename, locator, base + loc, problem) from None


_WHERE = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_EXPECTED = re.compile(r"^Expected `(?P<types>[^`]+)`, got `[^`]+`$")
_KINDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "datetime": "a date-time",
    "array": "an array",
    "object": "a table",
}
_FIELD = re.compile(r"^Object (missing required|contains unknown) field `(?P<name>[^`]+)`$")
_CHOICE = re.compile(r"^Invalid enum value ")


def _words(model: type[Frozen], loc: list[str | int]) -> tuple[str, ...]:
    """The words a top-level field of a closed vocabulary (a ``Literal`` or an enum, maybe
    optional) accepts; empty for any other field."""
    info = msgspec.inspect.type_info(model)
    if len(loc) != 1 or not isinstance(info, msgspec.inspect.StructType):
        return ()
    field = next((f for f in info.fields if f.name == loc[0]), None)
    if field is None:
        return ()
    kinds = field.type.types if isinstance(field.type, msgspec.inspect.UnionType) else (field.type,)
    words: list[str] = []
    for kind in kinds:
        if isinstance(kind, msgspec.inspect.LiteralType):
            words += [str(value) for value in kind.values]
        elif isinstance(kind, msgspec.inspect.EnumType):
            words += [str(member.value) for member in kind.cls]
    return tuple(words)


def _problem(
    message: str, data: Any, model: type[Frozen] | None = None
) -> tuple[list[str | int], str]:
    """A ``msgspec.ValidationError``'s message as (key path, problem) in the lockfile's
    words: ``Expected `int`, got `str` - at `$.agents[0].rank``` becomes
    (``["agents", 0, "rank"]``, ``should be an integer (found 'x')``)."""
    match = _WHERE.match(message)
    assert match is not None  # the pattern matches any text
    what, path = match["what"], match["path"] or ""
    # findall gives (key, "") for ``.key`` and ("", index) for ``[index]``.
    loc: list[str | int] = [key or int(index) for key, index in _STEP.findall(path)]
    field = _FIELD.match(what)
    if field is not None:
        loc.append(field["name"])
        return loc, "missing required key" if "missing" in what else "unknown key"
    if _CHOICE.match(what) and model is not None and (words := _words(model, loc)):
        found = data.get(loc[0]) if isinstance(data, dict) else None
        return loc, (
            f"unknown {loc[0]} {describe_input(found)} (expected one of {', '.join(sorted(words))})"
        )
    expected = _EXPECTED.match(what)
    if expected is not None:
        kinds = [k for k in expected["types"].split(" | ") if k != "null"]
        what = "should be " + " or ".join(_KINDS.get(k, f"`{k}`") for k in kinds)
    elif what.startswith("Invalid RFC3339 encoded"):
        what = "should be a date-time"
    found = data
    for step in loc:
        try:
            found = found[step]
        except (KeyError, IndexError, TypeError):
            found = None
            break
    return loc, f"{what[:1].lower()}{what[1:]} (found {describe_input(found)})"


def nullable_required(model: type[Frozen]) -> list[str]:
    """Required fields that accept None: TOML has no null, so absence means None."""
    return [
        field.name
        for field in msgspec.structs.fields(model)
        if field.required and type(None) in getattr(field.type, "__args__", ())
    ]


HISTORY_NULLABLE = nullable_required(HistoryEntry)


RUN_NESTED = {"spec", "downloads", "intent", "results"}


def build_results(table: Any, filename: str, locator: KeyLines, base: list[str | int]) -> Any:
    """A ``results`` table as ``RunResults``; anything else is left for the model to refuse."""
    if not isinstance(table, dict):
        return table
    data = dict(table)
    if isinstance(data.get("agents"), list):
        data["agents"] = tuple(data["agents"])
    return validate(RunResults, data, filename, locator, base)


def check_path_value(
    value: Any, filename: str, locator: KeyLines, path: list[str | int], what: str
) -> None:
    """Lockfile values that become paths (addresses, download directories, file names) are
    validated as relative paths when read (issue 23): never ``..``, absolute or controls."""
    if not isinstance(value, str):
        return  # the model names the wrong type
    checked = value
    if what == "the address":
        # An address is a config file's path, and a file name may hold control characters
        # (the plan accepts such a config and escapes its name wherever it prints it): the
        # lockfile must read back what apply wrote. NUL, "..", absolute paths and
        # backslashes are still refused.
        checked = "".join("_" if 0 < ord(c) < 32 or ord(c) == 127 else c for c in value)
    problem = relative_path_problem(checked)
    if problem is not None:
        raise shape_error(
            filename,
            locator,
            path,
            f"{what} {escape_text(value)!r} {problem}",
            "a hand-edited or hostile lockfile: restore it from git "
            f"(`git checkout -- {filename}`) or correct the value",
        )


def same_value(a: Any, b: Any) -> bool:
    """``a == b`` type for type (``1``, ``1.0`` and ``True`` differ: they are written, and
    digested, differently), through dicts and lists."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return len(a) == len(b) and all(k in b and same_value(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(map(same_value, a, b))
    return bool(a == b)


def build_run(
    address: str,
    table: Any,
    filename: str,
    locator: KeyLines,
    specs: Mapping[str, Any] | None = None,
) -> RecordedRun:
    """``specs``: address -> the body its config builds now; an entry that recorded the same
    body shares that one object instead of keeping its own copy (~2 KB of dicts a run).
    An entry the reader already built (``entry_builder``) is returned as it is."""
    if isinstance(table, RecordedRun):
        return table
    base: list[str | int] = ["runs", address]
    check_path_value(address, filename, locator, base, "the address")
    if not isinstance(table, dict):
        raise shape_error(filename, locator, base, "must be a table")
    if "address" in table:
        raise shape_error(
            filename, locator, base + ["address"], "unknown key (the address is the table name)"
        )
    data: dict[str, Any] = {"address": address, **table}
    wanted = specs.get(address) if specs else None
    if wanted is not None and same_value(table.get("spec"), wanted):
        data["spec"] = wanted
    downloads = table.get("downloads")
    if isinstance(downloads, dict):
        downloads = dict(downloads)
        if isinstance(downloads.get("types"), list):
            downloads["types"] = tuple(downloads["types"])
        where = base + ["downloads"]
        check_path_value(
            downloads.get("directory"), filename, locator, where + ["directory"], "the directory"
        )
        if isinstance(downloads.get("sha256"), dict):
            for rel in downloads["sha256"]:
                check_path_value(rel, filename, locator, where + ["sha256"], "the file")
        data["downloads"] = validate(Downloads, downloads, filename, locator, base + ["downloads"])
    intent: Any = table.get("intent")
    if isinstance(intent, dict):
        listings: Any = intent.get("listings")
        if isinstance(listings, list):
            intent = {**intent, "listings": tuple(listings)}
        data["intent"] = validate(Intent, intent, filename, locator, base + ["intent"])
    if "results" in table:
        data["results"] = build_results(table["results"], filename, locator, base + ["results"])
    return validate(RecordedRun, data, filename, locator, base)


def take_item(items: list[Any], index: int) -> Any:
    """``items[index]``, leaving None in its place (see ``parse``: built entries drop their
    parsed tables)."""
    item, items[index] = items[index], None
    return item


def build_rejection(address: str, table: Any, filename: str, locator: KeyLines) -> Rejection:
    base: list[str | int] = ["rejections", address]
    check_path_value(address, filename, locator, base, "the address")
    if not isinstance(table, dict):
        raise shape_error(filename, locator, base, "must be a table")
    data = dict(table)
    if isinstance(data.get("issues"), list):
        data["issues"] = tuple(data["issues"])
    return validate(Rejection, data, filename, locator, base)


def build_baseline(address: str, table: Any, filename: str, locator: KeyLines) -> Baseline:
    base: list[str | int] = ["baselines", address]
    if not isinstance(table, dict):
        raise shape_error(filename, locator, base, "must be a table")
    return validate(Baseline, dict(table), filename, locator, base)


def build_history(index: int, table: Any, filename: str, locator: KeyLines) -> HistoryEntry:
    if isinstance(table, HistoryEntry):
        return table  # built while the text was read (``entry_builder``)
    base: list[str | int] = ["history", index]
    if not isinstance(table, dict):
        raise shape_error(filename, locator, base, "must be a table")
    data: dict[str, Any] = {name: None for name in HISTORY_NULLABLE}
    data.update(table)
    models: Any = table.get("models")
    if isinstance(models, list):
        data["models"] = tuple(models)
    if "results" in table:
        data["results"] = build_results(table["results"], filename, locator, base + ["results"])
    check_path_value(table.get("address"), filename, locator, base + ["address"], "the address")
    entry: HistoryEntry = validate(HistoryEntry, data, filename, locator, base)
    return entry


def entry_builder(
    filename: str, locator: KeyLines, specs: Mapping[str, Any] | None = None
) -> Callable[[str, Any, dict[str, Any]], Any]:
    """The ``finish`` of ``_fast_load``: each run and history entry built as soon as its
    tables are read. A ``StateError`` it raises means: read the file again without it, so
    errors are reported in the order the whole-document checks give."""

    def finish(kind: str, key: Any, table: dict[str, Any]) -> Any:
        if kind == "runs":
            return build_run(key, table, filename, locator, specs)
        return build_history(key, table, filename, locator)

    return finish
