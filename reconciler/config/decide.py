"""The ``[decide]`` table of a run config: checked, then read into a ``DecisionSpec``.

``check_decide(doc)`` returns every problem of the table in the shape of
``config.validate.check`` (key paths and anchors; the loader turns them into lines), so
loading a config runs both and reports all problems of a file at once;
``parse_decide(doc)`` builds the value once the check found no error. ``decide_issues``
does both for one file's text, with lines, for a caller outside the loader.

The table never reaches the Platform and is not part of the config's digest: the submit
body is built from the known tables only (``config.spec.build_spec``), so nothing here has
to take it out again.
"""

from __future__ import annotations

import math
import tomllib
from typing import Any

from reconciler import toml_locate as locate
from reconciler.config.keypath import format_path
from reconciler.config.validate import Path, Problem, type_name
from reconciler.errors import ConfigIssue, closest
from reconciler.escaping import shown_value
from reconciler.model.decision import AUTO, FUTILITY_RULES, MONITORS, DecisionSpec

__all__ = ["DECIDE_KEYS", "MAX_LOOKS", "check_decide", "decide_issues", "parse_decide"]

TABLE = "decide"
DECIDE_KEYS = (
    "margin_pp",
    "alpha",
    "power",
    "looks",
    "futility",
    "max_tasks",
    "budget_usd",
    "seed",
    "monitor",
    "baseline",
)
REQUIRED_HINTS = {
    "margin_pp": "add margin_pp = 5 to [decide]: the smallest difference that matters, "
    "in points of pass@1",
    "seed": "add seed = 1 to [decide]: it fixes the task order, reviewed with the config",
}
MAX_LOOKS = 20
"""More looks than this buy almost nothing (J&T §2.7) and cost a run each."""
MAX_SEED = 2**63 - 1


def _quote(text: str) -> str:
    return "'" + text.replace("\n", "\\n") + "'"


def _number(value: Any) -> bool:
    return type(value) in (int, float)


class _Check:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.problems: list[Problem] = []

    def add(
        self,
        key: str | None,
        message: str,
        hint: str,
        anchor: str = "value",
        severity: str = "error",
    ) -> None:
        path: Path = (TABLE, key) if key is not None else (TABLE,)
        self.problems.append(Problem(path, message, hint, anchor, severity))

    def number(
        self, table: dict[str, Any], key: str, low: float, high: float, example: str, what: str
    ) -> None:
        """A finite number strictly between ``low`` and ``high`` (both open)."""
        if key not in table:
            return
        value = table[key]
        if not _number(value):
            self.add(
                key,
                f"must be a number, got {type_name(value)}",
                f"write a number without quotes, e.g. {key} = {example}",
            )
        elif not math.isfinite(value) or not low < value < high:
            self.add(
                key,
                f"must be {what}, got {shown_value(value)}",
                f"e.g. {key} = {example}",
            )

    def choice(self, table: dict[str, Any], key: str, choices: tuple[str, ...]) -> None:
        if key not in table:
            return
        value = table[key]
        allowed = " or ".join(f'"{c}"' for c in choices)
        if not isinstance(value, str):
            self.add(key, f"must be {allowed}, got {type_name(value)}", f"write {key} = {allowed}")
        elif value not in choices:
            close = closest(value, choices, 0.5)
            hint = f'did you mean "{close}"?' if close else f"write {key} = {allowed}"
            self.add(key, f"must be {allowed}, got {_quote(value)}", hint)

    def integer(self, table: dict[str, Any], key: str, low: int, high: int, example: str) -> None:
        if key not in table:
            return
        value = table[key]
        if type(value) is not int:
            self.add(
                key,
                f"must be a whole number, got {type_name(value)}",
                f"write a whole number without quotes, e.g. {key} = {example}",
            )
        elif not low <= value <= high:
            self.add(
                key, f"must be between {low} and {high}, got {value}", f"e.g. {key} = {example}"
            )

    def run(self) -> list[Problem]:
        if TABLE not in self.doc:
            return []
        table = self.doc[TABLE]
        if not isinstance(table, dict):
            self.add(
                None,
                f"[decide] must be a table, got {type_name(table)}",
                "write it as a [decide] table with margin_pp and seed",
            )
            return self.problems
        self.unknown(table)
        for key, hint in REQUIRED_HINTS.items():
            if key not in table:
                self.add(key, "Field required", hint, anchor="parent")
        self.number(table, "margin_pp", 0, 100, "5", "above 0 and below 100 (points of pass@1)")
        self.number(table, "alpha", 0, 0.5, "0.05", "above 0 and below 0.5")
        self.number(table, "power", 0.5, 1, "0.8", "above 0.5 and below 1")
        self.integer(table, "looks", 1, MAX_LOOKS, "4")
        self.choice(table, "futility", FUTILITY_RULES)
        self.choice(table, "monitor", MONITORS)
        self.integer(table, "seed", 0, MAX_SEED, "1")
        self.max_tasks(table)
        self.number(table, "budget_usd", 0, math.inf, "250", "a positive number of dollars")
        self.sides(table)
        return self.problems

    def unknown(self, table: dict[str, Any]) -> None:
        for key in table:
            if key in DECIDE_KEYS:
                continue
            close = closest(key, DECIDE_KEYS, 0.6)
            hint = (
                f"did you mean {_quote(close)}?"
                if close
                else "allowed keys: " + ", ".join(DECIDE_KEYS)
            )
            self.add(key, f"Unrecognized key {_quote(key)} in [decide]", hint, anchor="key")

    def max_tasks(self, table: dict[str, Any]) -> None:
        if "max_tasks" not in table:
            return
        value = table["max_tasks"]
        if value == AUTO and isinstance(value, str):
            return
        if type(value) is not int:
            self.add(
                "max_tasks",
                f'must be a whole number or "auto", got {type_name(value)}'
                + (f" {_quote(value)}" if isinstance(value, str) else ""),
                'write max_tasks = "auto" (sized from the power calculation) or a number, '
                "e.g. max_tasks = 200",
            )
            return
        looks = table.get("looks", 4)
        least = 2 * looks if type(looks) is int and looks > 0 else 2
        if value < least:
            self.add(
                "max_tasks",
                f"must be at least {least} (two tasks for each of {least // 2} looks), got {value}",
                f'raise max_tasks, or lower looks; max_tasks = "{AUTO}" sizes it for the power',
            )

    def sides(self, table: dict[str, Any]) -> None:
        """Two agents in the config, or one agent and ``baseline``."""
        agents = self.doc.get("agents")
        count = len(agents) if isinstance(agents, list) else None
        baseline = table.get("baseline")
        if "baseline" in table:
            if not isinstance(baseline, str):
                self.add(
                    "baseline",
                    f"must be a string, got {type_name(baseline)}",
                    'name the accepted run by its config\'s address, e.g. baseline = "team/agent-a"',
                )
                return
            problem = _address_problem(baseline)
            if problem:
                self.add(
                    "baseline",
                    problem,
                    'e.g. baseline = "team/agent-a" (a config\'s path under the benchmarks directory, without .toml)',
                )
                return
            if count is not None and count != 1:
                self.add(
                    "baseline",
                    f"compares one agent with an accepted run, but this config has {count} agents",
                    "keep one [[agents]] entry, or remove baseline to compare the two agents",
                    anchor="key",
                )
        elif count is not None and count != 2:
            self.add(
                None,
                f"needs two sides: two [[agents]] (this config has {count}) or one agent and baseline",
                'add baseline = "<address of the accepted run\'s config>" to [decide], '
                "or a second [[agents]] entry",
                anchor="table",
            )


def _address_problem(address: str) -> str | None:
    if not address.strip():
        return "must not be empty"
    if address != address.strip():
        return "must not start or end with spaces"
    if address.endswith(".toml"):
        return f"is an address, not a file name: drop the .toml ({_quote(address[:-5])})"
    if address.startswith("/") or "\\" in address:
        return "must be a relative address with / between directories"
    if any(part in ("", ".", "..") for part in address.split("/")):
        return "must not have empty, '.' or '..' parts"
    return None


def check_decide(doc: dict[str, Any]) -> list[Problem]:
    """Every problem of ``doc``'s ``[decide]`` table (none when it has no such table)."""
    return _Check(doc).run()


def parse_decide(doc: dict[str, Any], where: str = "") -> DecisionSpec | None:
    """The decision of a config whose ``[decide]`` passed ``check_decide`` without
    errors; None when the config has no ``[decide]`` table."""
    table = doc.get(TABLE)
    if table is None:
        return None
    if any(p.severity == "error" for p in check_decide(doc)):
        raise ValueError("parse_decide needs a [decide] table that check_decide accepted")
    max_tasks = table.get("max_tasks", AUTO)
    return DecisionSpec(
        margin_pp=float(table["margin_pp"]),
        seed=table["seed"],
        alpha=float(table.get("alpha", 0.05)),
        power=float(table.get("power", 0.8)),
        looks=table.get("looks", 4),
        futility=table.get("futility", "equivalence"),
        max_tasks=None if max_tasks == AUTO else max_tasks,
        budget_usd=float(table["budget_usd"]) if "budget_usd" in table else None,
        monitor=table.get("monitor", "batches"),
        baseline=table.get("baseline"),
        where=where,
    )


def decide_issues(relpath: str, text: str) -> tuple[DecisionSpec | None, list[ConfigIssue]]:
    """One config file's text -> its decision (None without ``[decide]`` or with an error)
    and the issues of its ``[decide]`` table, each located at its line and column.
    A file that is not valid TOML is the loader's to report: no issue here."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None, []
    problems = check_decide(doc)
    issues: list[ConfigIssue] = []
    if problems:
        positions = locate.scan(text)
        for problem in problems:
            line, column = positions.find(problem.at or problem.path, problem.anchor)
            issues.append(
                ConfigIssue(
                    relpath,
                    line,
                    column,
                    format_path(problem.path),
                    problem.message,
                    problem.hint,
                    problem.severity,
                )
            )
    if any(issue.severity == "error" for issue in issues):
        return None, issues
    where = relpath
    if TABLE in doc:
        where = f"{relpath}:{locate.scan(text).find((TABLE,), 'table')[0]}"
    return parse_decide(doc, where), issues
