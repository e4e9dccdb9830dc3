"""Load every benchmark config of a repository into desired runs, or say what is wrong.

Fast path: read, decode, ``tomllib``, validate the parsed dict, build the submit body. Only a
file that has an issue is scanned again to find the line and column of each key (``locate``),
so a repository of valid configs pays for parsing and checking only.
"""

from __future__ import annotations

import copy
import gc
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import msgspec

from reconciler import toml_locate as locate
from reconciler.config import rules
from reconciler.config.cells import cells_label
from reconciler.config.decide import check_decide, parse_decide
from reconciler.config.discover import (
    GENERATOR_SUFFIX,
    Found,
    RootError,
    discover,
    is_generator,
    looks_like_generator,
    special_kind,
    unprintable,
)
from reconciler.config.keypath import format_path
from reconciler.config.policy import check_policy
from reconciler.config.spec import build_spec, spec_digest
from reconciler.config.validate import Problem, check, looks_like_credential
from reconciler.errors import ConfigIssue
from reconciler.model import (
    CellOrigin,
    CellSource,
    DesiredRun,
    GeneratorProduct,
    PolicyRule,
    attempts_per_task,
    glob_match,
    origin_of,
)
from reconciler.redact import redact

if TYPE_CHECKING:
    from reconciler.config.generator import Cell

_DUPLICATE_REASONS = ("Cannot overwrite a value", "Cannot declare")
_TOML_HINT = "fix the TOML syntax there (reference: https://toml.io/en/v1.0.0)"


IGNORE_MARKER = "# osmosis-reconciler: ignore"
"""A comment line that keeps a template or draft in the tree without it ever being
submitted; anywhere in the file's leading comment block (before the first table or key)."""
_MARKER = re.compile(rb"^[ \t]*#[ \t]*osmosis-reconciler[ \t]*:[ \t]*ignore\b", re.I)


class Ignored(msgspec.Struct, frozen=True):
    """A config file left out on purpose: not validated, never submitted, shown in the plan."""

    path: str
    """Relative to the repository root."""
    address: str
    why: str
    """``marker`` (its ``# osmosis-reconciler: ignore`` line) or ``setting`` (a glob of the
    ``ignore`` setting)."""


def _marked(data: bytes) -> bool:
    """Whether the leading comment block of a file holds the ignore marker."""
    for line in data.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith(b"#"):
            return False
        if _MARKER.match(stripped):
            return True
    return False


class Salvaged(msgspec.Struct, frozen=True):
    """A config with errors, read as far as it goes, so that its remaining checks (the
    policy rules here, the catalog and the secrets in a plan) come out in the same report as
    its errors rather than one plan later. Never planned, never submitted."""

    run: DesiredRun
    """The run the config describes once the keys with errors are left out."""
    dropped: tuple[str, ...]
    """Those keys (dotted): a check about one of them, or inside one, is not reported, since
    the config's own error already is (``Salvaged.concerns``)."""

    def concerns(self, issue: ConfigIssue) -> bool:
        """Whether ``issue`` is about a key left out (or within one)."""
        return any(
            issue.key == key or issue.key.startswith((key + ".", key + "[")) for key in self.dropped
        )


class LoadResult(msgspec.Struct, frozen=True):
    """Every desired run that validated, and every issue of every file, in one value."""

    runs: tuple[DesiredRun, ...]
    """Valid configs (warnings allowed), sorted by address."""
    issues: tuple[ConfigIssue, ...]
    """Errors and warnings of all files: files in address order, each in rule order."""
    files: int
    """How many config files were found."""
    ignored: tuple[Ignored, ...] = ()
    """Files left out on purpose (the ``ignore`` setting, or their marker line)."""
    generators: tuple[GeneratorProduct, ...] = ()
    """What each run generator (``*.matrix.toml``) expanded to, by file."""
    salvaged: tuple[Salvaged, ...] = ()
    """Configs with errors whose other keys still make a run (``Salvaged``), by address:
    the plan checks them against the catalog with the valid ones."""

    @property
    def ok(self) -> bool:
        """True when no issue is an error (warnings do not count)."""
        return not any(issue.severity == "error" for issue in self.issues)

    @property
    def errors(self) -> tuple[ConfigIssue, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "error")

    @property
    def warnings(self) -> tuple[ConfigIssue, ...]:
        return tuple(issue for issue in self.issues if issue.severity == "warning")


def load_configs(
    repo_root: Path,
    benchmarks_dir: str = "benchmarks",
    *,
    ignore: Sequence[str] = (),
    policy: Sequence[PolicyRule] = (),
) -> LoadResult:
    """Discover, parse and validate every config under ``repo_root / benchmarks_dir``.

    Never raises for a bad config or a missing directory: everything wrong is an issue in
    the result, so that one run reports all problems of all files. Files whose address
    matches an ``ignore`` glob, or that carry ``IGNORE_MARKER``, are left out (``ignored``).
    ``policy`` rules are checked against every valid config (``config.policy``): a ``deny``
    violation is an error, so the run is not kept.
    """
    repo_root = Path(repo_root)
    try:
        found, refused = discover(repo_root, benchmarks_dir)
        found, unnamed = unprintable(found)
        refused = sorted([*refused, *unnamed], key=lambda r: r.relpath)
    except RootError as exc:
        return LoadResult(
            (), (ConfigIssue(benchmarks_dir, None, None, "", exc.message, exc.hint),), 0
        )
    except FileNotFoundError:
        return _no_directory(
            benchmarks_dir,
            f"benchmarks directory '{benchmarks_dir}' does not exist",
            f"create it (`mkdir -p {benchmarks_dir}`) and add one Osmosis benchmark TOML "
            "per run, or pass --benchmarks DIR",
        )
    except NotADirectoryError:
        return _no_directory(
            benchmarks_dir,
            f"benchmarks path '{benchmarks_dir}' is not a directory",
            "point --benchmarks at the directory that holds the configs",
        )
    loaded = _Loaded()
    loaded.issues = [
        (
            r.relpath,
            ConfigIssue(
                file=r.relpath, line=None, column=None, key="", message=r.message, hint=r.hint
            ),
        )
        for r in refused
    ]
    # Loading creates only acyclic data, so the cyclic GC's passes over the growing set of
    # parsed configs are pure overhead (about 15% on 5,000 files); pause it meanwhile.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for item in found:
            loaded.add(item, ignore)
    finally:
        if gc_was_enabled:
            gc.enable()
    runs, issues = loaded.runs, loaded.issues
    if loaded.generators:
        runs, collisions = _without_collisions(runs)
        issues.extend(collisions)
        runs.sort(key=lambda r: r.address)
    if policy:
        violations = check_policy(runs, policy, repo_root)
        denied = {i.file for i in violations if i.severity == "error"}
        runs = [r for r in runs if r.path not in denied]
        issues.extend((issue.file, issue) for issue in violations)
        for salvaged in loaded.salvaged:
            issues.extend(
                (salvaged.run.address, issue)
                for issue in check_policy([salvaged.run], policy, repo_root)
                if not salvaged.concerns(issue)
            )
    # Refused entries first (they explain why a config may be missing), then files by address.
    listed = _capped([issue for _, issue in issues], benchmarks_dir)
    return LoadResult(
        tuple(runs),
        tuple(listed),
        len(found) + len(refused),
        tuple(loaded.ignored),
        tuple(loaded.generators),
        tuple(loaded.salvaged),
    )


def _no_directory(benchmarks_dir: str, message: str, hint: str) -> LoadResult:
    """The result of a benchmarks directory that cannot be walked: one issue, no runs."""
    issue = ConfigIssue(
        file=benchmarks_dir, line=None, column=None, key="", message=message, hint=hint
    )
    return LoadResult((), (issue,), 0)


@dataclass
class _Loaded:
    """What ``load_configs`` gathered so far, file by file."""

    runs: list[DesiredRun] = field(default_factory=list)
    issues: list[tuple[str, ConfigIssue]] = field(default_factory=list)
    """(sort key, issue): the refused entries', then each file's under its address."""
    ignored: list[Ignored] = field(default_factory=list)
    generators: list[GeneratorProduct] = field(default_factory=list)
    salvaged: list[Salvaged] = field(default_factory=list)

    def add(self, item: Found, ignore: Sequence[str]) -> None:
        """Load one config or generator file, unless an ``ignore`` glob or its marker says
        to leave it out."""
        if ignore and glob_match(item.address, tuple(ignore)):
            self.ignored.append(Ignored(item.relpath, item.address, "setting"))
            return
        marked: list[bool] = []
        if is_generator(item.relpath):
            cells, product, file_issues = load_generator_file(item, marked=marked)
            if marked:
                self.ignored.append(Ignored(item.relpath, item.address, "marker"))
                return
            self.runs.extend(cells)
            if product is not None:
                self.generators.append(product)
            self.issues.extend((item.address, issue) for issue in file_issues)
            return
        run, file_issues = load_file(item, marked=marked, salvaged=self.salvaged)
        if marked:
            self.ignored.append(Ignored(item.relpath, item.address, "marker"))
            return
        if run is not None:
            self.runs.append(run)
        self.issues.extend((item.address, issue) for issue in file_issues)


def _without_collisions(
    runs: list[DesiredRun],
) -> tuple[list[DesiredRun], list[tuple[str, ConfigIssue]]]:
    """G5: an address produced twice (a generator and a file, or two generators) is an error
    naming both sources; neither run is kept, so the plan cannot pick one silently."""
    by_address: dict[str, list[DesiredRun]] = {}
    for run in runs:
        by_address.setdefault(run.address, []).append(run)
    kept: list[DesiredRun] = []
    issues: list[tuple[str, ConfigIssue]] = []
    for address, same in by_address.items():
        if len(same) == 1:
            kept.append(same[0])
            continue
        names = [
            f"{r.path} (cell {' × '.join(r.source.cell.values())})" if r.source else r.path
            for r in same
        ]
        first = next((r for r in same if r.source is not None), same[0])
        issues.append(
            (
                address,
                ConfigIssue(
                    first.path,
                    first.source.line if first.source else None,
                    None,
                    "",
                    f"{address} is produced by " + " and also by ".join(names),
                    "one address is one run: delete the hand-written file (the generator's "
                    "cell takes over its run with no change), or exclude the cell",
                ),
            )
        )
    return kept, issues


def _capped(issues: list[ConfigIssue], benchmarks_dir: str) -> list[ConfigIssue]:
    """At most ``rules.MAX_ISSUES_TOTAL`` issues, then one that counts the rest."""
    if len(issues) <= rules.MAX_ISSUES_TOTAL:
        return issues
    kept, rest = issues[: rules.MAX_ISSUES_TOTAL], issues[rules.MAX_ISSUES_TOTAL :]
    files = {i.file for i in rest} - {i.file for i in kept}
    errors = any(i.severity == "error" for i in rest)
    return [
        *kept,
        ConfigIssue(
            benchmarks_dir,
            None,
            None,
            "",
            f"{len(rest):,} more issue(s) are not listed (only the first "
            f"{rules.MAX_ISSUES_TOTAL} are), {len(files):,} more file(s) among them",
            "fix the ones listed, then run `osmosis-plan --validate-only` again to see the rest",
            "error" if errors else "warning",
        ),
    ]


def load_file(
    item: Found, *, marked: list[bool] | None = None, salvaged: list[Salvaged] | None = None
) -> tuple[DesiredRun | None, list[ConfigIssue]]:
    """One config file -> its desired run (when it has no error) and its issues. A file with
    the ignore marker is not parsed: ``marked`` (when given) gets ``True`` appended. A file
    with errors whose other keys still make a run adds it to ``salvaged`` (when given)."""
    parsed, text, issues = _read_toml(item, marked)
    if parsed is None:
        return None, issues
    if looks_like_generator(parsed):
        return None, [
            ConfigIssue(
                item.relpath,
                1,
                1,
                "",
                "has [generate]/[base]/[[axis.*]]: looks like a run generator, and generators "
                f"must be named *{GENERATOR_SUFFIX}",
                f"rename it: `git mv {item.relpath} "
                f"{item.relpath[: -len('.toml')]}{GENERATOR_SUFFIX}`",
            )
        ]
    problems = check(parsed) + check_decide(parsed)
    issues = _locate(item.relpath, text, problems) if problems else []
    if any(p.severity == "error" for p in problems):
        if salvaged is not None:
            found = salvage(item, parsed, problems)
            if found is not None:
                salvaged.append(found)
        return None, issues
    return _desired_run(item, parsed), issues


def salvage(item: Found, parsed: dict[str, Any], problems: Sequence[Problem]) -> Salvaged | None:
    """The run ``parsed`` describes without the keys its errors are about, when what is left
    is a valid config (an unknown key, a mistyped optional setting); None when an error is
    about the file or a key the config cannot do without (a missing table, a required key)."""
    paths = {p.path for p in problems if p.severity == "error"}
    if () in paths:
        return None
    doc = copy.deepcopy(parsed)
    items: dict[tuple[str | int, ...], list[int]] = {}
    for path in paths:
        parent: Any = doc
        for part in path[:-1]:
            parent = _child(parent, part)
        last = path[-1]
        if isinstance(parent, dict) and isinstance(last, str):
            parent.pop(last, None)
        elif isinstance(parent, list) and isinstance(last, int):
            items.setdefault(path[:-1], []).append(last)
    for path, indices in items.items():
        parent = doc
        for part in path:
            parent = _child(parent, part)
        if isinstance(parent, list):
            for index in sorted(set(indices), reverse=True):
                if index < len(parent):
                    del parent[index]
    if any(p.severity == "error" for p in check(doc) + check_decide(doc)):
        return None
    return Salvaged(_desired_run(item, doc), tuple(sorted(format_path(p) for p in paths)))


def _child(node: Any, part: str | int) -> Any:
    """``node[part]`` when it exists, else None (a path through a missing key leads nowhere)."""
    if isinstance(node, dict) and isinstance(part, str):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and part < len(node):
        return node[part]
    return None


class ExpandedCell(msgspec.Struct, frozen=True):
    """One validated cell of a generator, as ``expand`` prints it."""

    address: str
    config: dict[str, Any]
    source: CellSource
    spec_digest: str


def expand_file(
    item: Found,
) -> tuple[list[ExpandedCell], GeneratorProduct | None, list[ConfigIssue]]:
    """One generator's validated cells (plain configs), its product and its issues; no
    cell at all when any issue is an error (``load_generator_file``)."""
    configs: dict[str, dict[str, Any]] = {}
    runs, product, issues = load_generator_file(item, configs=configs)
    cells = [
        ExpandedCell(run.address, configs[run.address], run.source, run.spec_digest)
        for run in runs
        if run.source is not None
    ]
    return cells, product, issues


def load_generator_file(
    item: Found,
    *,
    marked: list[bool] | None = None,
    configs: dict[str, dict[str, Any]] | None = None,
) -> tuple[list[DesiredRun], GeneratorProduct | None, list[ConfigIssue]]:
    """One ``*.matrix.toml`` -> the desired run of every cell, the generator's product, and
    every issue (the generator's own, then each cell's, located in the generator file). Any
    error means no run at all: a half-expanded generator would plan its missing cells as
    removals. ``configs`` (when given) gets each cell's plain config by address."""
    parsed, text, issues = _read_toml(item, marked)
    if parsed is None:
        return [], None, issues
    # Imported here: a repository without run generators never pays for the expander.
    from reconciler.config.generator import expand_generator

    rel = item.relpath
    expansion = expand_generator(parsed, text, rel, item.address)
    positions = locate.scan(text)
    for found_problem in expansion.problems:
        line, column = positions.find(found_problem.path, found_problem.anchor)
        issues.append(
            ConfigIssue(
                rel,
                line,
                column,
                format_path(found_problem.path),
                _redact(found_problem.message) or "",
                _redact(found_problem.hint),
            )
        )
    if issues or expansion.product is None:
        return [], None, issues
    runs = _cell_runs(item, expansion.cells, positions, issues, configs)
    if any(issue.severity == "error" for issue in issues):
        return [], None, issues
    # G6: two cells that are one paid run twice.
    by_digest: dict[str, DesiredRun] = {}
    for run in runs:
        other = by_digest.setdefault(run.spec_digest, run)
        if other is not run:
            issues.append(
                ConfigIssue(
                    rel,
                    run.source.line if run.source else None,
                    None,
                    "",
                    f"cells {other.address} and {run.address} expand to identical configs "
                    "(a duplicate paid run)",
                    "use execution.attempts_per_task for repeats, or make the cells differ",
                )
            )
    if any(issue.severity == "error" for issue in issues):
        return [], None, issues
    return runs, expansion.product, issues


def _cell_runs(
    item: Found,
    expanded: Sequence[Cell],
    positions: locate.Positions,
    issues: list[ConfigIssue],
    configs: dict[str, dict[str, Any]] | None,
) -> list[DesiredRun]:
    """The desired run of every valid cell, each with the origin of its keys; the cells'
    issues go to ``issues``. One mistake in an element is one issue, however many cells
    inherit it: keyed by the element's spot and the problem, with the cells it affects."""
    runs: list[DesiredRun] = []
    located: dict[locate.Path, tuple[int, int]] = {}

    def where(at: locate.Path) -> tuple[int, int]:
        if at not in located:
            located[at] = positions.find(at, "key")
        return located[at]

    shared: dict[tuple[Any, ...], list[str]] = {}
    for cell in expanded:
        origins = tuple(
            CellOrigin(path=path, element=who, line=where(at)[0])
            for path, (who, at) in cell.origins.items()
        )
        cell_problems = check(cell.config) + check_decide(cell.config)
        for problem in cell_problems:
            origin = origin_of(origins, problem.at or problem.path)
            if origin is None:  # a key the config needs and nobody set: point at [base]
                who, (line, column) = "base", where(("base",))
            else:
                who, (line, column) = origin.element, where(cell.origins[origin.path][1])
            signature = (line, column, problem.path, problem.message, problem.hint,
                         problem.severity, who)  # fmt: skip
            shared.setdefault(signature, []).append(cell.address)
        if any(p.severity == "error" for p in cell_problems):
            continue
        found = Found(cell.address, item.relpath, item.fspath)
        if configs is not None:
            configs[cell.address] = cell.config
        runs.append(
            _desired_run(found, cell.config).model_copy(
                update={"source": cell.source, "moved_from": cell.moved_from, "origins": origins}
            )
        )
    for (line, column, path, message, hint, severity, who), affected in shared.items():
        issues.append(
            ConfigIssue(
                item.relpath,
                line,
                column,
                format_path(path),
                _redact(f"{cells_label(affected)}: {message} (from {who}, line {line})") or "",
                _redact(hint),
                severity,
            )
        )
    return runs


def _read_toml(
    item: Found, marked: list[bool] | None
) -> tuple[dict[str, Any] | None, str, list[ConfigIssue]]:
    """Read, decode and parse one file: (parsed, text, []) or (None, "", its issues)."""
    rel = item.relpath
    try:
        data = _read_bytes(item)
        if marked is not None and b"osmosis-reconciler" in data[:4096] and _marked(data[:4096]):
            marked.append(True)
            return None, "", []
        text = _decode(rel, data)
        return _parse_toml(rel, text), text, []
    except _FileRefused as exc:
        return None, "", [exc.issue]


class _FileRefused(Exception):
    """One config file cannot be read as TOML: ``issue`` says why."""

    def __init__(self, issue: ConfigIssue) -> None:
        super().__init__(issue.message)
        self.issue = issue


def _refused(
    rel: str, message: str, hint: str, line: int | None = 1, column: int | None = 1, key: str = ""
) -> _FileRefused:
    return _FileRefused(ConfigIssue(rel, line, column, key, message, hint))


def _read_bytes(item: Found) -> bytes:
    """The file's bytes, when it is a regular file within the size limit."""
    rel = item.relpath
    try:
        # Non-blocking, then checked: a file swapped for a FIFO after discovery must not
        # block the read forever.
        fd = os.open(item.fspath, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as handle:
            info = os.fstat(fd)
            kind = special_kind(info.st_mode)
            if kind is not None:
                raise _refused(
                    rel,
                    f"is {kind}, not a regular file",
                    "remove it from the benchmarks directory: configs are regular files",
                    None,
                    None,
                )
            # Never read more than the limit: a huge file must not cost memory or time.
            data = handle.read(rules.MAX_CONFIG_BYTES + 1)
            if len(data) > rules.MAX_CONFIG_BYTES:
                raise _refused(
                    rel,
                    f"config file is too large ({info.st_size:,} bytes; the limit is "
                    f"{rules.MAX_CONFIG_BYTES:,})",
                    "a benchmark config is a few hundred bytes: check that this is the right file",
                )
            return data
    except OSError as exc:
        raise _refused(
            rel,
            f"Cannot read config file: {exc.strerror or exc}",
            "check the file's permissions",
            None,
            None,
        ) from None


def _decode(rel: str, data: bytes) -> str:
    """The file's text: UTF-8 without a BOM, no key dotted deeper than TOML reads."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        raise _refused(
            rel,
            f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
            "save the file with UTF-8 encoding",
            line,
            column,
        ) from None
    if text.startswith("\ufeff"):
        raise _refused(
            rel,
            "file starts with a byte order mark (BOM), which TOML does not allow",
            "save the file as UTF-8 without BOM",
        )
    if text.count(".") >= rules.MAX_KEY_PARTS:
        deep = locate.deep_key_position(text, rules.MAX_KEY_PARTS)
        if deep is not None:
            line, column = deep
            raise _refused(
                rel,
                "Invalid TOML for a benchmark config: a key or table header with more than "
                f"{rules.MAX_KEY_PARTS} dotted parts",
                "a benchmark config nests keys a few levels deep: check that this is the right file",
                line,
                column,
            )
    return text


def _parse_toml(rel: str, text: str) -> dict[str, Any]:
    """The parsed document, every integer within 64 bits."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _FileRefused(_syntax_issue(rel, text, str(exc))) from None
    except ValueError:
        # Python refuses to convert an integer literal of more than 4,300 digits.
        found = re.search(r"[0-9_]{4300}", text)
        digits_line = text.count("\n", 0, found.start()) + 1 if found else None
        digits_column = found.start() - text.rfind("\n", 0, found.start()) if found else None
        raise _refused(
            rel,
            "Invalid TOML for a benchmark config: an integer with more than 4,300 digits",
            "no config value needs a number that long: check the value",
            digits_line,
            digits_column,
        ) from None
    except RecursionError:
        line, column = locate.nesting_position(text, rules.MAX_NESTING_DEPTH)
        raise _refused(
            rel,
            f"Invalid TOML: arrays or inline tables nested too deeply (more than "
            f"{rules.MAX_NESTING_DEPTH} levels)",
            "flatten the value",
            line,
            column,
        ) from None
    huge = _huge_integer(doc)
    if huge is not None:
        # A hex, octal or binary literal has no digit limit in tomllib, but the spec digest
        # (JSON) cannot write it: refused here with its key (found by the fuzz suite).
        found = _HUGE_LITERAL.search(text)
        huge_line = text.count("\n", 0, found.start()) + 1 if found else None
        raise _refused(
            rel,
            f"Invalid value for a benchmark config: an integer out of range at {huge}",
            "no config value needs a number beyond 64 bits: check the value",
            huge_line,
            None,
            key=huge,
        )
    return doc


_HUGE_LITERAL = re.compile(r"0[xob][0-9a-fA-F_]{17,}|[0-9_]{20,}")


def _huge_integer(value: Any, path: str = "") -> str | None:
    """The dotted key of the first integer beyond 64 bits in ``value``, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (path or "(top level)") if value.bit_length() > 63 else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _huge_integer(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _huge_integer(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _syntax_issue(rel: str, text: str, error: str) -> ConfigIssue:
    reason, line, column = locate.syntax_error_position(text, error)
    if reason.startswith(_DUPLICATE_REASONS):
        # tomllib reports where it noticed, often the end of the document; the scanner
        # knows which key was defined twice.
        positions = locate.scan(text)
        if positions.duplicate is not None:
            line, column = positions.line_col(positions.duplicate_offset)
            key = format_path(positions.duplicate)
            return ConfigIssue(
                rel,
                line,
                column,
                key,
                f"Invalid TOML: {key} is defined twice",
                "keep one definition and delete the other",
            )
    key = format_path(locate.current_key_path(text, line))
    return ConfigIssue(rel, line, column, key, f"Invalid TOML: {reason}", _TOML_HINT)


def _locate(rel: str, text: str, problems: list[Problem]) -> list[ConfigIssue]:
    positions = locate.scan(text)
    issues: list[ConfigIssue] = []
    seen: set[tuple[Any, ...]] = set()
    for problem in problems:
        line, column = positions.find(problem.at or problem.path, problem.anchor)
        issue = ConfigIssue(
            rel,
            line,
            column,
            format_path(problem.path),
            _redact(problem.message),
            _redact(problem.hint),
            problem.severity,
        )
        signature = (issue.line, issue.column, issue.key, issue.message)
        if signature in seen:  # e.g. an [env] name refused once per agent
            continue
        seen.add(signature)
        issues.append(issue)
    return issues


@overload
def _redact(text: str) -> str: ...
@overload
def _redact(text: str | None) -> str | None: ...
def _redact(text: str | None) -> str | None:
    """Last line of defence: a credential-looking value in a message is a secret to the
    tool's one redaction rule (``reconciler.redact``), so it never leaves this module."""
    if text is None or not looks_like_credential(text):
        return text
    found = [m.group() for m in rules.CREDENTIAL_RE.finditer(text)]
    found += [token for token in text.split(" ") if looks_like_credential(token)]
    return redact(text, also=found)


def _desired_run(item: Found, doc: dict[str, Any]) -> DesiredRun:
    spec = build_spec(doc)
    tasks = doc.get("tasks") or {}
    agents = doc["agents"]
    execution = doc.get("execution") or {}
    secret_names: dict[str, None] = {}
    for agent in agents:
        model = agent["model"]
        if model["type"] in rules.MODEL_VARIANTS_WITH_SECRET:
            secret_names[model["api_key_secret"]] = None
    for agent in agents:
        if "harness_api_key_secret" in agent:
            secret_names[agent["harness_api_key_secret"]] = None
    judge = execution.get("judge_api_key_secret")
    if judge is not None:
        secret_names[judge] = None
    for name in (doc.get("verifier") or {}).get("required") or ():
        secret_names[name] = None
    for name in (doc.get("secrets") or {}).get("required") or ():
        secret_names[name] = None
    task_names = tasks.get("task_names")
    categories = tasks.get("categories")
    return DesiredRun(
        address=item.address,
        path=item.relpath,
        spec=spec,
        spec_digest=spec_digest(spec),
        benchmark=doc["experiment"]["benchmark"],
        task_set=tasks.get("task_set"),
        task_names=tuple(task_names) if task_names is not None else None,
        categories=tuple(categories) if categories is not None else None,
        agent_count=len(agents),
        attempts_per_task=attempts_per_task(execution),
        harnesses=tuple(agent.get("harness") for agent in agents),
        secret_names=tuple(secret_names),
        judge_secret=judge,
        decide=parse_decide(doc, item.relpath) if "decide" in doc else None,
    )
