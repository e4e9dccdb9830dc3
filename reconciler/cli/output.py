"""The output layer of every command: text for people, one JSON document, or JSON Lines.

The contract (docs/machine-output.md; schema ``reconciler/schema/output.schema.json``):

* ``--format text`` / ``markdown``: the result for people on stdout; notes, warnings and
  errors on stderr.
* ``--format json``: stdout holds exactly one JSON document, errors included (a command that
  fails before it has a result prints a document of ``type`` ``error``). Text for people
  (notes, progress, errors in words) and logs go to stderr.
* ``--format jsonl``: stdout holds JSON Lines: the events of the command as they happen
  (each with a ``type``, e.g. ``apply_start`` / ``apply_complete``), and last the document
  ``--format json`` prints, on one line.

Every document and event carries ``format_version`` and ``type``; every document carries
``command``, ``diagnostics`` (every error and warning, structured), ``errors`` (the error
messages), ``errored`` and ``exit_code``.

A command uses one ``Output`` for all of it: ``info``/``warning`` for notes, ``present``
for its ``CommandResult`` (document body and human text), ``progress`` for lines while it
works, ``event`` for machine events. The CLI's one error handler calls ``error`` and then
``finish``. A new command is wired the same way and needs nothing else from here.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from reconciler.errors import (
    ConfigError,
    ConfigIssue,
    LockHeldError,
    MissingSecretsError,
    ReconcilerError,
)
from reconciler.escaping import escape_text
from reconciler.exit_codes import (
    ERROR,
    INTERRUPTED,
    OK,
    PARTIAL,
    PENDING,
    WAIT_TIMED_OUT,
    Ending,
)
from reconciler.redact import redact, redact_optional, redact_value

if TYPE_CHECKING:
    from reconciler.engine.report import Outcome, RunRef, WaitReport
    from reconciler.model import Plan, PlanItem

FORMAT_VERSION = "1.0"
FORMATS = ("text", "markdown", "json", "jsonl")
MACHINE_FORMATS = frozenset({"json", "jsonl"})
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema" / "output.schema.json"
"""The published JSON Schema of every document and event."""

Body = Mapping[str, Any] | Callable[[int], Mapping[str, Any]]
"""A document body, or a function of the exit code that builds it at the end."""


def color_enabled(
    no_color_flag: bool, stream: TextIO, env: Mapping[str, str] | None = None
) -> bool:
    """Whether to colour ``stream``: ``--no-color`` > ``NO_COLOR`` > ``FORCE_COLOR`` >
    ``TERM=dumb`` > whether the stream is a terminal (no-color.org, force-color.org)."""
    env = os.environ if env is None else env
    if no_color_flag or env.get("NO_COLOR"):
        return False
    force = env.get("FORCE_COLOR")
    if force is not None and force.strip().lower() not in ("", "0", "false", "no"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def requested_format(argv: Sequence[str]) -> str:
    """The ``--format`` of a command line, read before parsing it (a usage error must
    still answer in the format asked for)."""
    value = "text"
    items = list(argv)
    for i, arg in enumerate(items):
        if arg == "--format" and i + 1 < len(items):
            value = items[i + 1]
        elif arg.startswith("--format="):
            value = arg.split("=", 1)[1]
    return value if value in FORMATS else "text"


# --------------------------------------------------------------------------- diagnostics


@dataclass(frozen=True)
class Diagnostic:
    """One error or warning, as the JSON documents carry it."""

    severity: str
    """``error`` or ``warning``."""
    kind: str
    """What kind of problem: the error class (``ConfigError``, ``LockHeldError``,
    ``TransportError``, ...), ``ConfigIssue`` for one problem in a config file, ``warning``."""
    message: str
    hint: str | None = None
    file: str | None = None
    line: int | None = None
    column: int | None = None
    key: str | None = None
    details: Mapping[str, Any] | None = None
    """Facts a script may need: the lock holder, the missing secret names."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["details"] = dict(self.details) if self.details else None
        return data

    def text(self) -> str:
        """The message as a person reads it, with its location when it has one."""
        if self.file is None:
            return self.message
        where = self.file + (f":{self.line}" if self.line is not None else "")
        if self.line is not None and self.column is not None:
            where += f":{self.column}"
        key = f" {self.key}:" if self.key else ""
        return f"{where}:{key} {self.message}"


def issue_diagnostic(issue: ConfigIssue) -> Diagnostic:
    return Diagnostic(
        severity="warning" if issue.severity == "warning" else "error",
        kind="ConfigIssue",
        message=redact(issue.message),
        hint=redact_optional(issue.hint),
        file=issue.file,
        line=issue.line,
        column=issue.column,
        key=issue.key or None,
    )


def github_annotation(issue: ConfigIssue) -> str:
    """``::error file=F,line=L,col=C::key: message (hint)`` for the GitHub Actions log."""
    kind = "warning" if issue.severity == "warning" else "error"
    where = f"file={_gh_property(escape_text(issue.file))}"
    if issue.line is not None:
        where += f",line={issue.line}"
        if issue.column is not None:
            where += f",col={issue.column}"
    text = f"{issue.key}: {issue.message}" if issue.key else issue.message
    if issue.hint:
        text += f" ({issue.hint})"
    text = _gh_escape(escape_text(redact(text)))
    return f"::{kind} {where}::{text}"


def _gh_escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_escape(text).replace(":", "%3A").replace(",", "%2C")


def issue_to_dict(issue: ConfigIssue) -> dict[str, Any]:
    """A config issue as the validation document lists it."""
    return {
        "file": issue.file,
        "line": issue.line,
        "column": issue.column,
        "key": issue.key,
        "message": redact(issue.message),
        "hint": redact_optional(issue.hint),
        "severity": issue.severity,
    }


def error_diagnostic(exc: ReconcilerError) -> Diagnostic:
    details: dict[str, Any] | None = None
    if isinstance(exc, LockHeldError) and exc.holder:
        details = {"holder": redact_value(dict(exc.holder))}
    elif isinstance(exc, MissingSecretsError) and exc.names:
        details = {"missing_secrets": list(exc.names)}
    return Diagnostic(
        severity="error",
        kind=type(exc).__name__,
        message=redact(exc.message),
        hint=redact_optional(exc.hint),
        details=details,
    )


# --------------------------------------------------------------------------- output


@dataclass(frozen=True)
class CommandResult:
    """What a command hands to the one printer (``Output.present``): how it ended, its
    document for scripts (type and body) and its text for people. No command writes its
    result itself, and none writes JSON to be parsed back."""

    ending: Ending
    """How the command ended (its exit code: ``reconciler.exit_codes``)."""
    document_type: str
    """The document's ``type`` (``plan``, ``state_list``, ``import``, ...)."""
    body: Body | None = None
    """The document's body, when the command made one (always in the JSON formats)."""
    text: str = ""
    """The result for people (text and markdown formats; not printed in the JSON ones)."""
    warnings: tuple[str, ...] = ()
    """Warnings for people, said on stderr in the text formats (a JSON body lists them)."""


class Output:
    """Everything one command prints, in the format it was asked for (module docstring)."""

    def __init__(
        self,
        command: str,
        fmt: str = "text",
        *,
        out: TextIO,
        err: TextIO,
        quiet: bool = False,
        color: bool = False,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.command = command
        self.format = fmt if fmt in FORMATS else "text"
        self.out = out
        self.err = err
        self.quiet = quiet
        self.color = color
        self._clock = clock
        self._lock = threading.RLock()
        self._diagnostics: list[Diagnostic] = []
        self._type: str | None = None
        self._body: Body | None = None
        self._finished = False
        self.github = os.environ.get("GITHUB_ACTIONS") == "true"
        """On GitHub Actions config issues are also ``::error file=...`` annotations."""

    @property
    def machine(self) -> bool:
        """True for ``json`` and ``jsonl``: stdout carries only JSON."""
        return self.format in MACHINE_FORMATS

    @property
    def people(self) -> TextIO:
        """The stream for text meant for people while the command works."""
        return self.err if self.machine else self.out

    def configure(self, *, fmt: str, quiet: bool, color: bool) -> None:
        """Set what the parsed command line says (before parsing, defaults apply)."""
        self.format = fmt if fmt in FORMATS else "text"
        self.quiet = quiet
        self.color = color

    # -- text for people ------------------------------------------------------

    def _write(self, stream: TextIO, text: str) -> None:
        with self._lock:
            stream.write(text)
            stream.flush()

    def info(self, text: str) -> None:
        """A note (the Platform banner, where a plan was saved): stderr, silenced by -q."""
        if not self.quiet:
            self._write(self.err, redact(text) + "\n")

    def warning(self, message: str, *, hint: str | None = None) -> None:
        """A warning: stderr always, and a diagnostic in the document."""
        self._write(self.err, f"warning: {redact(message)}\n")
        self.diagnose(Diagnostic("warning", "warning", redact(message), redact_optional(hint)))

    def issue(self, issue: ConfigIssue) -> None:
        """A config issue: ``error: file:line: ...`` on stderr and a diagnostic."""
        label = "warning" if issue.severity == "warning" else "error"
        self._write(self.err, f"{label}: {redact(issue.render())}\n")
        if self.github:
            self._write(self.err, github_annotation(issue) + "\n")
        self.diagnose(issue_diagnostic(issue))

    def alert(self, text: str) -> None:
        """A line people must read even with -q (the apply lock was lost): stderr."""
        self._write(self.err, redact(text) + "\n")

    def show(self, text: str) -> None:
        """The command's result for people (a plan): stdout, in text and markdown only."""
        if not self.machine:
            self._write(self.out, text)

    def progress(self, text: str, *, essential: bool = False) -> None:
        """A line while the command works: stdout in text mode, stderr in the JSON modes.

        Outcomes are ``essential`` (shown with -q too); the rest (waiting, polling) is not.
        """
        if self.quiet and not essential:
            return
        self._write(self.people, redact(text) + "\n")

    def prompt(self, text: str) -> None:
        self._write(self.people, text)

    # -- machine events and the document ---------------------------------------

    def event(self, type_: str, **fields: Any) -> None:
        """A machine event: printed at once with ``jsonl``, otherwise not printed."""
        if self.format != "jsonl":
            return
        line = {
            "format_version": FORMAT_VERSION,
            "type": type_,
            "timestamp": self._clock().isoformat().replace("+00:00", "Z"),
            **fields,
        }
        self._write(self.out, _dumps(redact_value(line)) + "\n")

    def result(self, type_: str, body: Body) -> None:
        """Set the document's type and body (replacing an earlier one)."""
        self._type, self._body = type_, body

    def present(self, result: CommandResult) -> Ending:
        """Print a command's result: its document (printed last, by ``finish``) and its
        text for people; returns how the command ended."""
        if result.body is not None:
            self.result(result.document_type, result.body)
        if not self.machine:
            for warning in result.warnings:
                self.warning(warning)
            self.show(result.text)
        return result.ending

    def diagnose(self, diagnostic: Diagnostic) -> None:
        """Record an error or warning already shown to people (e.g. in the plan text)."""
        self._diagnostics.append(diagnostic)
        self.event("diagnostic", diagnostic=diagnostic.to_dict())

    def error(self, exc: ReconcilerError, *, shown: bool = False) -> None:
        """Record ``exc`` and print it once on stderr (config errors with every issue).

        ``shown``: the human result already says it (a plan's guard error), so people
        read it on stderr only in the JSON modes.
        """
        if isinstance(exc, ConfigError):
            # Warnings were shown when the configs were read; the errors are shown here.
            for issue in exc.issues:
                if issue.severity != "warning":
                    self.issue(issue)
        diagnostic = error_diagnostic(exc)
        if not shown or self.machine:
            text = f"Error: {escape_text(diagnostic.message, keep_newlines=True)}\n"
            if diagnostic.hint:
                text += f"  {escape_text(diagnostic.hint, keep_newlines=True)}\n"
            self._write(self.err, text)
        self.diagnose(diagnostic)

    def failure(self, kind: str, message: str, hint: str | None = None) -> None:
        """An error that is not a ``ReconcilerError`` (interrupt, internal error)."""
        self._write(self.err, f"{self.command}: {redact(message)}\n")
        self.diagnose(Diagnostic("error", kind, redact(message), redact_optional(hint)))

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(self._diagnostics)

    def document(self, exit_code: int) -> dict[str, Any]:
        """The command's one JSON document (``type`` ``error`` when it has no result)."""
        body: Mapping[str, Any] = {}
        if self._body is not None:
            body = self._body(exit_code) if callable(self._body) else self._body
        errors = [d.text() for d in self._diagnostics if d.severity == "error"]
        document = {
            "format_version": FORMAT_VERSION,
            "type": self._type or "error",
            "command": self.command,
            **body,
            "diagnostics": [d.to_dict() for d in self._diagnostics],
            "errors": errors,
            "errored": exit_code not in (OK, PENDING) or bool(errors),
            "exit_code": exit_code,
        }
        return redact_value(document)

    def finish(self, exit_code: int) -> int:
        """Print the document (JSON modes) once; returns ``exit_code``."""
        with self._lock:
            if self._finished:
                return exit_code
            self._finished = True
        if self.format == "json":
            self._write(self.out, json.dumps(self.document(exit_code), indent=2) + "\n")
        elif self.format == "jsonl":
            self._write(self.out, _dumps(self.document(exit_code)) + "\n")
        return exit_code

    def document_line(self, type_: str, body: Mapping[str, Any]) -> None:
        """One complete document on one line, now (``--watch`` prints one per plan)."""
        document = {
            "format_version": FORMAT_VERSION,
            "type": type_,
            "command": self.command,
            **body,
            "diagnostics": [],
            "errors": [],
            "errored": False,
            "exit_code": OK,
        }
        self._write(self.out, _dumps(redact_value(document)) + "\n")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- plan


def render_plan(
    plan: Plan, fmt: str, *, color: bool, results: bool | None = None, quiet: bool = False
) -> str:
    """The plan as ``--format`` asks for it (the JSON modes print the plan's document);
    ``results`` and ``quiet`` shape the text (``render_text``)."""
    from reconciler.render import render_json, render_markdown, render_text

    if fmt == "json":
        return render_json(plan)
    if fmt == "markdown":
        return render_markdown(plan)
    return render_text(plan, color=color, results=results, quiet=quiet)


# --------------------------------------------------------------------------- apply


def outcome_line(outcome: Outcome) -> str:
    """``+ tb/smoke: submit eager-hare: ok: submitted`` (a run that ended unsuccessfully
    shows its status: ``↓ tb/x: download eager-hare (run failed): ok: ...``)."""
    from reconciler.model import Action, RunStatus  # after an apply: the models are loaded

    item = outcome.item
    message = escape_text(outcome.message, keep_newlines=True)
    head = f"{item.action.symbol} {escape_text(item.address)}: {item.action.value}"
    if item.action is Action.BLOCKED:
        return f"{head}: {'not attempted' if outcome.blocked else 'REFUSED'}: {message}"
    run = outcome.run_name or outcome.run_id
    if run:
        head += f" {escape_text(run)}"
    if RunStatus.of(outcome.status).is_unsuccessful and item.action is not Action.STOP:
        head += f" (run {outcome.status})"
    mark = "ok" if outcome.ok else "FAILED"
    return f"{head}: {mark}: {message}"


def outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    from reconciler.model import Action  # after an apply: the models are loaded

    item = outcome.item
    body: dict[str, Any] = {
        "address": item.address,
        "action": item.action.value,
        "symbol": item.action.symbol,
        "ok": outcome.ok,
        "blocked": outcome.blocked,
        "message": outcome.message,
        "run_id": outcome.run_id,
        "run_name": outcome.run_name,
        "status": outcome.status,
    }
    if item.action is Action.DOWNLOAD:
        body["directory"] = outcome.directory
    return body


DOWNLOADS_LISTED = 20
"""Download directories the closing lines of an apply name; the JSON document has all."""


def download_lines(outcomes: Iterable[Outcome]) -> list[str]:
    """Where each download of an apply went, by address (``Downloaded to:`` and one line
    per address; an incomplete one says so)."""
    from reconciler.model import Action  # after an apply: the models are loaded

    went = sorted(
        (o.item.address, o.directory, o.ok)
        for o in outcomes
        if o.item.action is Action.DOWNLOAD and o.directory is not None
    )
    if not went:
        return []
    width = max(len(escape_text(address)) for address, _, _ in went[:DOWNLOADS_LISTED])
    lines = ["Downloaded to:"]
    for address, directory, ok in went[:DOWNLOADS_LISTED]:
        shown = escape_text(address).ljust(width)
        lines.append(f"  {shown}  {escape_text(directory)}/" + ("" if ok else " (incomplete)"))
    if len(went) > DOWNLOADS_LISTED:
        lines.append(
            f"  and {len(went) - DOWNLOADS_LISTED} more (`--format json` lists every "
            "outcome's directory)"
        )
    return lines


class ApplyReport:
    """An apply as it happens: lines for people, events, and the ``apply`` document.

    The engine's ``ApplyProgress`` (``reconciler.engine.report``): the ``Applier`` calls
    ``started``/``finished`` from its worker threads; the apply (``engine.apply``) calls the
    rest in order, and the CLI ``planned``.
    """

    def __init__(self, output: Output) -> None:
        self.output = output
        self._lock = threading.Lock()
        self.plan: dict[str, Any] | None = None
        self.outcomes: list[Outcome] = []
        self.wait: WaitReport | None = None
        self.unsuccessful: tuple[RunRef, ...] = ()

    def planned(self, plan: Plan, plan_dict: dict[str, Any]) -> None:
        """The plan to carry out: from here on the command's document is ``apply``."""
        self.plan = plan_dict
        self.output.result("apply", self.body)
        for change in plan_dict["actions"]:
            self.output.event("planned_change", change=change)
        self.output.event("change_summary", summary=plan_dict["summary"])

    def started(self, item: PlanItem) -> None:
        self.output.event("apply_start", address=item.address, action=item.action.value)

    def finished(self, outcome: Outcome) -> None:
        with self._lock:
            self.outcomes.append(outcome)
        self.output.progress(outcome_line(outcome), essential=True)
        kind = "apply_complete" if outcome.ok or outcome.blocked else "apply_errored"
        self.output.event(kind, outcome=outcome_to_dict(outcome))

    def waiting(self, runs: Sequence[RunRef], timeout: float) -> None:
        self.output.progress(
            f"Waiting for {len(runs)} run(s) to finish (up to {_seconds(timeout)}) ..."
        )
        self.output.event("wait_start", runs=[asdict(r) for r in runs], timeout_s=timeout)

    def wait_progress(self, counts: Mapping[str, int]) -> None:
        text = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        self.output.progress(f"  runs: {text}")
        self.output.event("wait_progress", counts=dict(sorted(counts.items())))

    def waited(self, report: WaitReport) -> None:
        self.wait = report
        if report.timed_out:
            names = ", ".join(f"{r.label()} ({r.status or 'unknown'})" for r in report.active)
            self.output.diagnose(
                Diagnostic(
                    "error",
                    "WaitTimeout",
                    f"the wait ran out after {_seconds(report.timeout)} with "
                    f"{len(report.active)} run(s) still active: {names}",
                    "run `osmosis-apply --auto-approve --wait` again to wait for them and "
                    "download their outputs",
                )
            )
            self.output.progress(
                f"The wait ran out after {_seconds(report.timeout)}; "
                f"{len(report.active)} run(s) still active:",
                essential=True,
            )
            for run in report.active:
                self.output.progress(
                    f"  {escape_text(run.label())}: {run.status or 'unknown'}", essential=True
                )
            self.output.progress(
                "Their outputs are downloaded by a later `osmosis-apply --wait` once they end.",
                essential=True,
            )
        self.output.event("wait_end", wait=report.to_dict())

    def summarise(
        self,
        unsuccessful: Iterable[RunRef],
        *,
        unsaved: str | None = None,
        lockfile: str | None = None,
    ) -> None:
        """The closing lines: counts, failures, and runs that ended unsuccessfully.

        ``unsaved``: why the lockfile could not be written at the end, when it could not.
        ``lockfile``: the lockfile's path, named in the reminder to commit it.
        """
        from reconciler.model import RERUN_HINT, Action  # after an apply: the models are loaded

        self.unsuccessful = tuple(unsuccessful)
        ok = sum(1 for o in self.outcomes if o.ok)
        failed = [o for o in self.outcomes if not o.ok and not o.blocked]
        blocked = [o for o in self.outcomes if o.blocked]
        closing = f"Apply complete: {ok} succeeded, {len(failed)} failed."
        if blocked:
            closing = closing[:-1] + f", {len(blocked)} blocked (not attempted)."
        runs = {o.item.address for o in self.outcomes}
        if len(runs) != len(self.outcomes):
            # 14 outcomes for 7 runs (a submit and a download each) must not read as 14 runs.
            kinds: dict[str, int] = {}
            for outcome in self.outcomes:
                kinds[outcome.item.action.value] = kinds.get(outcome.item.action.value, 0) + 1
            closing += (
                f" {len(self.outcomes)} actions on {len(runs)} run(s): "
                + ", ".join(f"{n} {kind}" for kind, n in kinds.items())
                + "."
            )
        if self.wait is not None and self.wait.timed_out:
            closing += f" The wait ran out with {len(self.wait.active)} run(s) still active."
        lines = ["", closing, *download_lines(self.outcomes)]
        for outcome in failed:
            item = outcome.item
            address, message = (
                escape_text(item.address),
                escape_text(outcome.message, keep_newlines=True),
            )
            lines.append(f"  ! {address} ({item.action.value}): {message}")
            self.output.diagnose(
                Diagnostic(
                    "error",
                    "Blocked" if item.action is Action.BLOCKED else "ActionFailed",
                    f"{item.address} ({item.action.value}): {redact(outcome.message)}",
                )
            )
        for outcome in blocked:
            item = outcome.item
            address, message = (
                escape_text(item.address),
                escape_text(outcome.message, keep_newlines=True),
            )
            lines.append(f"  ! {address} (blocked, not attempted): {message}")
            self.output.diagnose(
                Diagnostic(
                    "warning", "Blocked", f"{item.address} (blocked): {redact(outcome.message)}"
                )
            )
        if unsaved:
            lines.append(f"  ! the lockfile could not be written: {escape_text(unsaved)}")
        reached = [o for o in failed if o.reached_platform]
        if reached:
            lines.append(
                f"Partial apply: {len(reached)} failed action(s) did reach the Platform (listed "
                "above); the next osmosis-apply records them without paying again."
            )
        if self.unsuccessful:
            lines.append(f"{len(self.unsuccessful)} run(s) ended without finishing:")
            for run in self.unsuccessful:
                hint = RERUN_HINT.format(address=run.address)
                lines.append(f"  {escape_text(run.label())}: {run.status}; {escape_text(hint)}")
                self.output.diagnose(
                    Diagnostic("warning", "RunUnsuccessful", f"{run.label()}: {run.status}", hint)
                )
        if lockfile and ok and not unsaved:
            # The next plan (and everyone else's) reads the committed lockfile: an apply whose
            # record stays on this disk would be planned again elsewhere.
            lines.append(
                f"Recorded in {lockfile}: commit it (`git add {lockfile} && git commit`) so "
                "other clones and CI see these runs."
            )
        for line in lines:
            self.output.progress(line, essential=True)

    def body(self, exit_code: int) -> dict[str, Any]:

        with self._lock:
            outcomes = list(self.outcomes)
        ok = sum(1 for o in outcomes if o.ok)
        outcome = {
            OK: "applied" if outcomes else "nothing_to_do",
            ERROR: "failed",
            PARTIAL: "partial",
            WAIT_TIMED_OUT: "wait_timeout",
            INTERRUPTED: "interrupted",
        }.get(exit_code, "failed")
        return {
            "plan": self.plan,
            "outcomes": [outcome_to_dict(o) for o in outcomes],
            "wait": self.wait.to_dict() if self.wait else None,
            "runs_unsuccessful": [asdict(r) for r in self.unsuccessful],
            "summary": {
                "outcome": outcome,
                "succeeded": ok,
                "failed": sum(1 for o in outcomes if not o.ok and not o.blocked),
                "blocked": sum(1 for o in outcomes if o.blocked),
            },
        }


def _seconds(value: float) -> str:
    return f"{value:g} s"
