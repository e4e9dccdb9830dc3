"""Validation of a parsed benchmark config against platform-api.md §9 (page rules win).

``check(doc)`` returns every problem it finds, in the evaluation order of §9.4: structure
(every table, key, type, requiredness), env var names, secret name syntax, then the per-agent
rules. Later rules only look at the parts that are well typed, so one mistake yields one
problem instead of a cascade, and all problems of a file come out in one run.

A problem carries a key *path* and an *anchor* (which spot in the file it is about); the
loader turns those into a line and column only when a file has problems (``locate``).

Values that look like credentials are never put into a message: the messages that would
echo such a value are replaced by the inlined-secret problem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

import msgspec

from reconciler.config import rules
from reconciler.errors import closest

Path = tuple[str | int, ...]


class Problem(msgspec.Struct, frozen=True):
    """One finding, before it is located in the file."""

    path: Path
    message: str
    hint: str | None = None
    anchor: str = "value"
    """``key``, ``value``, ``table``, ``parent`` (a missing key) or ``file``."""
    severity: str = "error"
    at: Path | None = None
    """Where to point when it is not ``path`` itself (e.g. a missing table's neighbour)."""


def looks_like_credential(value: str) -> bool:
    """Whether ``value`` looks like a secret value rather than a name or a setting."""
    if rules.CREDENTIAL_RE.search(value):
        return True
    if len(value) < rules.RANDOM_TOKEN_MIN_LENGTH:
        return False
    for token in value.split():
        if len(token) < rules.RANDOM_TOKEN_MIN_LENGTH:
            continue
        for run in rules.RANDOM_RUN_RE.findall(token):
            if (
                any(c.isupper() for c in run)
                and any(c.islower() for c in run)
                and any(c.isdigit() for c in run)
            ):
                return True
    return False


def looks_like_path(value: str) -> bool:
    """Whether a ``[experiment].benchmark`` value is a file path rather than a catalog key.

    Path-like: it starts like a path (``./``, ``../``, ``/``, ``~``), contains a backslash,
    ends in a data-file suffix (``.jsonl``, ``.csv``, ...), or has an empty, ``.`` or ``..``
    segment. ``acme/custom@1.0`` and ``acme/custom`` (Harbor registry keys and names) and
    ``Terminal-Bench 2.1`` are not: a dot inside a version is not a suffix.
    """
    text = value.strip()
    if text.startswith(rules.PATH_PREFIXES) or "\\" in text:
        return True
    if text.lower().endswith(rules.DATA_FILE_SUFFIXES):
        return True
    if "/" in text:
        segments = text.split("/")
        return any(segment in ("", ".", "..") for segment in segments)
    return False


def type_name(value: Any) -> str:
    """The TOML type of a parsed value, with its article (``an integer``)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, datetime):
        return "a date-time"
    if isinstance(value, date):
        return "a date"
    if isinstance(value, time):
        return "a time"
    return type(value).__name__


def _elsewhere(kind: str) -> dict[str, str]:
    """Hints for keys that belong to another model variant than ``kind``."""
    allowed = ("type",) + rules.MODEL_VARIANTS[kind][0] + rules.MODEL_VARIANTS[kind][1]
    users: dict[str, list[str]] = {}
    for other, (req, opt) in rules.MODEL_VARIANTS.items():
        for key in req + opt:
            if key not in allowed:
                users.setdefault(key, []).append(f'"{other}"')
    return {
        key: f"{_quote(key)} is only used with type = " + " or ".join(kinds)
        for key, kinds in users.items()
    }


def _choices(items: Any) -> str:
    """``'a', 'b' or 'c'`` (pydantic's wording for literal choices)."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _quote(text: str) -> str:
    return "'" + text.replace("\n", "\\n") + "'"


_KIND_NAMES = {
    ("integer",): "an integer",
    ("integer", "float"): "a number",
    ("string",): "a string",
}
_KIND_HINTS = {
    ("integer",): "a whole number without quotes",
    ("integer", "float"): "a number without quotes",
    ("string",): "a quoted string",
}


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "integer":
        return type(value) is int  # a bool is not a count
    if kind == "float":
        return type(value) is float
    return isinstance(value, str)


@dataclass(slots=True)
class _AgentEnv:
    """One agent as §9.4 rule 4 sees it: its table, model and the env it runs with."""

    index: int
    agent: dict
    model: dict | None
    own: dict[str, str]
    """The agent's ``[agents.env]``."""
    effective: dict[str, Path]
    """Every env name the agent runs with -> where it is set (``[env]`` or its own)."""
    harness: str | None

    @property
    def number(self) -> int:
        return self.index + 1

    def src(self, name: str) -> str:
        """Where the env name is set, as a message says it."""
        return f"[agents.env] of agent {self.number}" if name in self.own else "[env]"


class _Checker:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.problems: list[Problem] = []
        self.omitted = {"error": 0, "warning": 0}
        """Problems found after ``rules.MAX_ISSUES_PER_FILE``: counted, not kept."""

    def full(self) -> bool:
        return len(self.problems) >= rules.MAX_ISSUES_PER_FILE

    def add(
        self,
        path: Path,
        message: str,
        hint: str | None = None,
        anchor: str = "value",
        severity: str = "error",
        at: Path | None = None,
    ) -> None:
        if self.full():
            self.omitted[severity] += 1
            return
        self.problems.append(Problem(path, message, hint, anchor, severity, at))

    # ------------------------------------------------------------------ structure helpers
    def unknown_keys(
        self,
        table: dict,
        path: Path,
        allowed: tuple[str, ...],
        label: str,
        elsewhere: dict[str, str] | None = None,
    ) -> None:
        if len(table) <= len(allowed) and all(key in allowed for key in table):
            return  # the common case, kept cheap
        for key in table:
            if key in allowed:
                continue
            if self.full():  # 50,000 unknown keys: count them, spare the close matches
                self.omitted["error"] += 1
                continue
            if looks_like_credential(key):
                self.add(
                    path + (key,),
                    rules.INLINED_SECRET_MESSAGE,
                    rules.INLINED_SECRET_HINT,
                    anchor="key",
                )
                continue
            if elsewhere and key in elsewhere:
                hint = elsewhere[key]
            else:
                close = closest(key, allowed, 0.6)
                hint = (
                    f"did you mean {_quote(close)}?"
                    if close
                    else "allowed keys: " + ", ".join(allowed)
                )
            self.add(
                path + (key,), f"Unrecognized key {_quote(key)} in {label}", hint, anchor="key"
            )

    def table(self, value: Any, path: Path, label: str) -> dict | None:
        if isinstance(value, dict):
            return value
        self.add(
            path, f"{label} must be a table, got {type_name(value)}", f"write {label} as a table"
        )
        return None

    def string(
        self,
        table: dict,
        key: str,
        path: Path,
        required: bool = False,
        hint: str | None = None,
        type_hint: str = "quote the value",
    ) -> str | None:
        if key not in table:
            if required:
                self.add(path + (key,), "Field required", hint, anchor="parent")
            return None
        value = table[key]
        if isinstance(value, str):
            return value
        self.add(path + (key,), f"must be a string, got {type_name(value)}", type_hint)
        return None

    def string_list(
        self,
        table: dict,
        key: str,
        path: Path,
        max_items: int | None = None,
        non_blank: bool = False,
    ) -> list[tuple[Path, str]] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list):
            self.add(
                path + (key,),
                f"must be an array of strings, got {type_name(value)}",
                f'write it as {key} = ["..."]',
            )
            return None
        if max_items is not None and len(value) > max_items:
            self.add(
                path + (key,),
                f"List should have at most {max_items} items after validation, not {len(value)}",
                f"list at most {max_items} names",
            )
        items = []
        for index, item in enumerate(value):
            item_path = path + (key, index)
            if not isinstance(item, str):
                self.add(item_path, f"must be a string, got {type_name(item)}", "quote the value")
            elif non_blank and not item.strip():
                self.add(item_path, "must not be blank", "remove the empty entry or write the name")
            else:
                items.append((item_path, item))
        return items

    def string_table(self, value: Any, path: Path, label: str) -> dict[str, str] | None:
        table = self.table(value, path, label)
        if table is None:
            return None
        good = {}
        for key, item in table.items():
            if isinstance(item, str):
                good[key] = item
            else:
                self.add(
                    path + (key,),
                    f"must be a string, got {type_name(item)}",
                    "env and header values are strings: quote the value",
                )
        return good

    def typed(self, key: str, value: Any, path: Path) -> bool:
        """Whether ``value`` has a type ``rules.EXECUTION_TYPES`` accepts for ``key``."""
        spec = rules.EXECUTION_TYPES.get(key)
        if spec is None:
            return True
        kinds, example = spec
        if any(_is_kind(value, kind) for kind in kinds):
            return True
        wanted = _KIND_NAMES[kinds]
        self.add(
            path + (key,),
            f"must be {wanted}, got {type_name(value)}",
            f"write {_KIND_HINTS[kinds]}, e.g. {key} = {example}",
        )
        return False

    def json_safe(self, value: Any, path: Path) -> None:
        """Refuse values the submit body cannot carry (date-times, nan/inf, deep nesting)."""
        if type(value) in (str, int, bool):
            return  # the common case: nothing to walk
        stack: list[tuple[Any, Path, int]] = [(value, path, 0)]
        while stack:
            item, item_path, depth = stack.pop()
            if depth > rules.MAX_NESTING_DEPTH:
                self.add(
                    item_path,
                    f"value is nested too deeply (more than {rules.MAX_NESTING_DEPTH} levels)",
                    "flatten the value",
                )
                continue
            if isinstance(item, datetime | date | time):
                self.add(
                    item_path,
                    f"{type_name(item)} cannot be sent to the Platform (no JSON form)",
                    "quote it as a string",
                )
            elif isinstance(item, float) and not math.isfinite(item):
                self.add(
                    item_path,
                    "nan and inf cannot be sent to the Platform (no JSON form)",
                    "use a finite number",
                )
            elif isinstance(item, dict):
                stack.extend((v, item_path + (k,), depth + 1) for k, v in item.items())
            elif isinstance(item, list):
                stack.extend((v, item_path + (i,), depth + 1) for i, v in enumerate(item))

    def catalog_reference(self, value: str) -> None:
        """``[experiment].benchmark`` names a catalog benchmark, never a local dataset."""
        path = ("experiment", "benchmark")
        hint = (
            "use the key, exact name or ID of a benchmark in the workspace, e.g. "
            'benchmark = "terminal-bench-2-1" (list them with `osmosis benchmark list`); '
            "to run your own dataset, add it to the workspace on the Platform first"
        )
        if not value.strip():
            self.add(path, "must not be empty: name a benchmark of the workspace", hint)
        elif looks_like_path(value):
            self.add(
                path,
                f"{_quote(value)} looks like a local file path; the benchmark is a catalog "
                "reference (key, name or ID), never a local dataset",
                hint,
            )

    # ------------------------------------------------------------------ §9.2 structure
    def structure(self) -> None:
        doc = self.doc
        self.unknown_keys(doc, (), rules.TOP_LEVEL_KEYS, "the top level")
        self.benchmark: str | None = None
        self.judge: str | None = None
        self.agents: list[tuple[int, dict, dict | None, dict[str, str]]] = []
        self.env: dict[str, str] = {}
        self.verifier: list[tuple[Path, str]] = []
        self.secrets: list[tuple[Path, str]] = []

        if "experiment" not in doc:
            self.add(
                ("experiment",),
                "Missing [experiment] section",
                'add [experiment] with benchmark = "<benchmark key, name or ID>"',
                anchor="file",
            )
        elif isinstance(doc["experiment"], dict):
            exp = doc["experiment"]
            self.unknown_keys(exp, ("experiment",), rules.EXPERIMENT_KEYS, "[experiment]")
            self.benchmark = self.string(
                exp,
                "benchmark",
                ("experiment",),
                required=True,
                hint='add benchmark = "<benchmark key, name or ID>"',
            )
            if self.benchmark is not None:
                self.catalog_reference(self.benchmark)
        else:
            self.add(
                ("experiment",),
                "[experiment] must be a table",
                'write it as [experiment] with benchmark = "..."',
            )

        if "tasks" in doc:
            tasks = self.table(doc["tasks"], ("tasks",), "[tasks]")
            if tasks is not None:
                self.unknown_keys(tasks, ("tasks",), rules.TASKS_KEYS, "[tasks]")
                task_set = self.string(tasks, "task_set", ("tasks",))
                if task_set is not None and task_set not in rules.ALLOWED_TASK_SETS:
                    allowed = _choices(_quote(s) for s in rules.ALLOWED_TASK_SETS)
                    self.add(
                        ("tasks", "task_set"),
                        f"Input should be {allowed}",
                        f"set task_set = {allowed}, or select tasks with task_names or categories",
                    )
                for key in ("task_names", "categories"):
                    self.string_list(tasks, key, ("tasks",), non_blank=True)

        self.structure_agents()

        if "execution" in doc:
            execution = self.table(doc["execution"], ("execution",), "[execution]")
            if execution is not None:
                self.execution = execution
                self.unknown_keys(execution, ("execution",), rules.EXECUTION_KEYS, "[execution]")
                for key, value in execution.items():
                    if key in rules.EXECUTION_KEYS and self.typed(key, value, ("execution",)):
                        self.json_safe(value, ("execution", key))
                judge = execution.get("judge_api_key_secret")
                self.judge = judge if isinstance(judge, str) else None

        for section, limit in (
            ("verifier", rules.MAX_VERIFIER_NAMES),
            ("secrets", rules.MAX_SECRETS_NAMES),
        ):
            if section in doc:
                table = self.table(doc[section], (section,), f"[{section}]")
                if table is not None:
                    keys = rules.VERIFIER_KEYS if section == "verifier" else rules.SECRETS_KEYS
                    self.unknown_keys(table, (section,), keys, f"[{section}]")
                    names = self.string_list(table, "required", (section,), max_items=limit)
                    setattr(self, section, names or [])

        if "env" in doc:
            self.env = self.string_table(doc["env"], ("env",), "[env]") or {}

    def structure_agents(self) -> None:
        doc = self.doc
        if "agents" not in doc:
            self.add(
                ("agents",),
                "Missing [[agents]] section",
                "add at least one [[agents]] table with a [agents.model]",
                anchor="file",
            )
            return
        agents = doc["agents"]
        if not isinstance(agents, list):
            self.add(
                ("agents",),
                "[[agents]] must be an array of tables",
                "write each agent as an [[agents]] table",
                anchor="table",
            )
            return
        if len(agents) < rules.MIN_AGENTS:
            self.add(
                ("agents",),
                f"List should have at least {rules.MIN_AGENTS} item after "
                f"validation, not {len(agents)}",
                "add an [[agents]] table",
            )
        if len(agents) > rules.MAX_AGENTS:
            self.add(
                ("agents", rules.MAX_AGENTS),
                f"List should have at most {rules.MAX_AGENTS} items after validation, "
                f"not {len(agents)}",
                f"a run compares at most {rules.MAX_AGENTS} agents; split it into several configs",
                anchor="table",
            )
        for index, agent in enumerate(agents):
            path: Path = ("agents", index)
            if not isinstance(agent, dict):
                self.add(
                    path,
                    f"must be a table, got {type_name(agent)}",
                    "write each agent as an [[agents]] table",
                )
                continue
            self.unknown_keys(agent, path, rules.AGENT_KEYS, f"agent {index + 1}")
            self.string(agent, "harness", path)
            self.string(agent, "harness_api_key_secret", path)
            model = None
            if "model" not in agent:
                self.add(
                    path + ("model",),
                    "Field required",
                    f"add an [agents.model] table to agent {index + 1} with type = "
                    '"provider", "endpoint" or "hosted"',
                    anchor="parent",
                )
            else:
                model = self.structure_model(agent["model"], path + ("model",))
            env: dict[str, str] = {}
            if "env" in agent:
                env = self.string_table(agent["env"], path + ("env",), "[agents.env]") or {}
            self.agents.append((index, agent, model, env))

    def structure_model(self, value: Any, path: Path) -> dict | None:
        model = self.table(value, path, "[agents.model]")
        if model is None:
            return None
        variants = tuple(rules.MODEL_VARIANTS)
        if "type" not in model:
            choices = _choices(f'"{v}"' for v in variants)
            self.add(path + ("type",), "Field required", f"set type = {choices}", anchor="parent")
            return None
        kind = model["type"]
        if not isinstance(kind, str):
            choices = _choices(f'"{v}"' for v in variants)
            self.add(
                path + ("type",),
                f"must be a string, got {type_name(kind)}",
                f"set type = {choices}",
            )
            return None
        if kind not in rules.MODEL_VARIANTS:
            close = closest(kind, variants, 0.6)
            options = _choices(f"'{v}'" for v in variants)
            hint = f"did you mean {_quote(close)}?" if close else f"use one of {options}"
            self.add(path + ("type",), f"Input should be {options}", hint)
            return None
        required, optional = rules.MODEL_VARIANTS[kind]
        allowed = ("type",) + required + optional
        self.unknown_keys(
            model, path, allowed, f'[agents.model] of type "{kind}"', _elsewhere(kind)
        )
        for key in required:
            self.string(model, key, path, required=True, hint=f'type = "{kind}" needs {key}')
        if "extra_headers" in model and "extra_headers" in allowed:
            headers = self.string_table(
                model["extra_headers"], path + ("extra_headers",), "extra_headers"
            )
            for name, header in (headers or {}).items():
                if name.lower() == rules.FORBIDDEN_EXTRA_HEADER:
                    self.add(
                        path + ("extra_headers", name),
                        "extra_headers must not include an Authorization header; "
                        "use api_key_secret for endpoint authentication",
                        "remove the header: the Platform sends the api_key_secret "
                        "record's value as the endpoint credential",
                        anchor="key",
                    )
                elif looks_like_credential(header) or looks_like_credential(name):
                    self.add(
                        path + ("extra_headers", name),
                        rules.INLINED_SECRET_MESSAGE,
                        rules.INLINED_SECRET_HINT,
                    )
        return model

    # ------------------------------------------------------------------ §9.4 rule 2
    def env_names(self) -> None:
        tables: list[tuple[Path, dict[str, str], str]] = [(("env",), self.env, "[env]")]
        for index, _agent, _model, env in self.agents:
            tables.append((("agents", index, "env"), env, f"agent {index + 1}'s [agents.env]"))
        for path, env, label in tables:
            for name, value in env.items():
                if looks_like_credential(name):
                    self.add(
                        path + (name,),
                        rules.INLINED_SECRET_MESSAGE,
                        rules.INLINED_SECRET_HINT,
                        anchor="key",
                    )
                    continue
                if not rules.ENV_NAME_RE.match(name):
                    self.add(
                        path + (name,),
                        f"Invalid env var name {_quote(name)} in {label}: must match "
                        f"{rules.ENV_NAME_PATTERN}",
                        "use upper-case letters, digits and underscores",
                        anchor="key",
                    )
                elif name.startswith(rules.RESERVED_ENV_PREFIX):
                    self.add(
                        path + (name,),
                        f"{_quote(name)} in {label}: env var names starting with "
                        f"{rules.RESERVED_ENV_PREFIX} are reserved by the platform",
                        "choose a different name",
                        anchor="key",
                    )
                if looks_like_credential(value):
                    self.add(
                        path + (name,), rules.INLINED_SECRET_MESSAGE, rules.INLINED_SECRET_HINT
                    )

    # ------------------------------------------------------------------ §9.4 rule 3
    def referenced_secrets(self) -> list[tuple[Path, str]]:
        """Every referenced secret name with its path, in §9.5 order."""
        refs: list[tuple[Path, str]] = []
        for index, _agent, model, _env in self.agents:
            secret = _model_secret(model)
            if secret is not None:
                refs.append((("agents", index, "model", "api_key_secret"), secret))
        for index, agent, _model, _env in self.agents:
            if isinstance(agent.get("harness_api_key_secret"), str):
                refs.append(
                    (("agents", index, "harness_api_key_secret"), agent["harness_api_key_secret"])
                )
        if self.judge is not None:
            refs.append((("execution", "judge_api_key_secret"), self.judge))
        refs.extend(self.verifier)
        refs.extend(self.secrets)
        return refs

    def secret_names(self) -> None:
        self.credential_paths: set[Path] = set()
        self.invalid_paths: set[Path] = set()
        for path, name in self.referenced_secrets():
            if looks_like_credential(name):
                self.credential_paths.add(path)
                self.add(path, rules.INLINED_SECRET_MESSAGE, rules.INLINED_SECRET_HINT)
            elif not rules.SECRET_NAME_RE.match(name):
                self.invalid_paths.add(path)
                self.add(
                    path,
                    f"Invalid secret name {_quote(name)}",
                    "use uppercase letters, digits, and underscores, starting with a "
                    "letter (e.g. MY_SECRET). Must match "
                    f"{rules.SECRET_NAME_PATTERN}.",
                )

    # ------------------------------------------------------------------ §9.4 rule 4
    def per_agent(self) -> None:
        env_paths: dict[str, Path] = {name: ("env", name) for name in self.env}
        judge = self.judge
        if ("execution", "judge_api_key_secret") in self.credential_paths:
            judge = None
        verifier = [name for path, name in self.verifier if path not in self.credential_paths]
        for index, agent, model, env in self.agents:
            effective = dict(env_paths)
            effective.update({name: ("agents", index, "env", name) for name in env})
            harness = agent.get("harness") if isinstance(agent.get("harness"), str) else None
            one = _AgentEnv(index, agent, model, env, effective, harness)
            self.model_secret_rules(one)
            self.injected_names(one, judge, verifier)
            self.harness_credential(one)
            self.model_key_alias(one)

    def env_clash(self, one: _AgentEnv, name: str, message: str, hint: str) -> None:
        """A problem at the env entry ``name`` of the agent's environment (the callers
        test ``name in one.effective`` first: most agents have no clash, and building the
        message for each would cost a tenth of ``check``)."""
        self.add(one.effective[name], message, hint, anchor="key")

    def model_secret_rules(self, one: _AgentEnv) -> None:
        """4.1 reserved model secret names; 4.2 the model secret against the env."""
        secret_path = ("agents", one.index, "model", "api_key_secret")
        if secret_path in self.credential_paths:
            return
        model_secret = _model_secret(one.model)
        if model_secret in rules.RESERVED_MODEL_SECRET_NAMES:
            self.add(
                secret_path,
                f"Agent {one.number}'s api_key_secret {_quote(model_secret)} uses a name "
                "reserved by the benchmark runner",
                "Store the model credential under a different Platform secret record name.",
            )
        if model_secret is not None and model_secret in one.effective:
            self.env_clash(
                one,
                model_secret,
                f"{_quote(model_secret)} appears in {one.src(model_secret)} and as agent "
                f"{one.number}'s api_key_secret",
                "The platform injects the secret value under that name; remove the "
                "env var or rename it.",
            )

    def injected_names(self, one: _AgentEnv, judge: str | None, verifier: list[str]) -> None:
        """4.3 the judge secret, 4.4 the verifier secrets and (page D1) the runner's reserved
        names, each against the agent's env."""
        if judge is not None and judge in one.effective:
            self.env_clash(
                one,
                judge,
                f"{_quote(judge)} appears in {one.src(judge)} and as judge_api_key_secret",
                "The platform injects the judge secret value under that name; remove "
                "the env var or rename it.",
            )
        for name in verifier:
            if name not in one.effective:
                continue
            self.env_clash(
                one,
                name,
                f"{_quote(name)} appears in {one.src(name)} and in [verifier].required",
                "The platform injects the secret value under that name; remove "
                "the env var or rename it.",
            )
        # Page D1: reserved literal env names, checked after 4.4 as in #265.
        for name in sorted(rules.RESERVED_ENV_NAMES):
            if name not in one.effective:
                continue
            self.env_clash(
                one,
                name,
                f"{_quote(name)} appears in {one.src(name)} but is reserved by the "
                "benchmark runner",
                "The runner removes this literal env var before starting the "
                "agent; remove it from the config. For HLE, store the dataset "
                f"credential in the {name} Platform secret record instead.",
            )

    def harness_credential(self, one: _AgentEnv) -> None:
        """4.5-4.8 harness credentials (page D3/D4: driven by the harness table)."""
        agent, harness, i = one.agent, one.harness, one.number
        credential = rules.HARNESS_CREDENTIALS.get(harness) if harness else None
        harness_secret_path = ("agents", one.index, "harness_api_key_secret")
        if credential is None:
            if "harness_api_key_secret" in agent:
                who = f"{harness} harness" if harness else "official scaffold"
                self.add(
                    harness_secret_path,
                    f"Agent {i}'s {who} does not use harness_api_key_secret",
                    "Remove it.",
                    anchor="key",
                )
            return
        if credential in one.effective:
            self.env_clash(
                one,
                credential,
                f"{_quote(credential)} appears in {one.src(credential)} but is "
                f"managed by agent {i}'s {harness} harness",
                "Remove the env var.",
            )
        if "harness_api_key_secret" not in agent:
            self.add(
                harness_secret_path,
                f"Agent {i}'s {harness} harness requires harness_api_key_secret",
                f"Set it to the name of a Platform secret record containing {credential}.",
                anchor="parent",
            )
        elif (
            isinstance(agent["harness_api_key_secret"], str)
            and agent["harness_api_key_secret"] != credential
            and harness_secret_path not in self.credential_paths
            and harness_secret_path not in self.invalid_paths
        ):
            self.add(
                harness_secret_path,
                f"Agent {i}'s harness_api_key_secret "
                f"{_quote(agent['harness_api_key_secret'])} does not match the "
                f"variable the {harness} harness reads",
                "Store the credential in a Platform secret record named exactly "
                f"{credential} and reference that name.",
            )

    def model_key_alias(self, one: _AgentEnv) -> None:
        """4.9 model-key alias (disabled by the page; active only if the table has a row)."""
        harness = one.harness
        alias = rules.HARNESS_MODEL_KEY_ALIASES.get(harness) if harness else None
        if (
            alias is not None
            and one.model is not None
            and one.model["type"] in rules.MODEL_VARIANTS_WITH_SECRET
            and alias in one.effective
        ):
            self.env_clash(
                one,
                alias,
                f"{_quote(alias)} appears in {one.src(alias)} but the platform injects "
                f"agent {one.number}'s model key under that name for the {harness} harness",
                "Remove the env var.",
            )

    # ------------------------------------------------------------------ warnings
    def warnings(self) -> None:
        benchmark = self.benchmark
        if benchmark is None:
            return
        if benchmark.strip().lower() not in rules.PARITY_RECOMMENDED_BENCHMARKS:
            return
        tasks = self.doc.get("tasks")
        if isinstance(tasks, dict) and tasks.get("task_set") == rules.PARITY_TASK_SET:
            return
        self.add(
            ("tasks", "task_set"),
            f'For HLE, we recommend [tasks] task_set = "{rules.PARITY_TASK_SET}" so '
            "results are comparable with published scores. This submission uses the "
            "full or a custom task selection.",
            f'add task_set = "{rules.PARITY_TASK_SET}" to [tasks] (HLE_PARITY_RECOMMENDED)',
            anchor="table" if isinstance(tasks, dict) else "value",
            severity="warning",
            at=("tasks",) if isinstance(tasks, dict) else ("experiment", "benchmark"),
        )

    def run(self) -> list[Problem]:
        if not self.doc:
            self.add(
                (),
                "config file is empty",
                "add an [experiment] table and at least one [[agents]] table "
                "(see benchmarks/terminal-bench/smoke.toml)",
                anchor="file",
            )
            return self.problems
        self.structure()
        self.env_names()
        self.secret_names()
        self.per_agent()
        self.warnings()
        omitted = self.omitted["error"] + self.omitted["warning"]
        if omitted:
            self.problems.append(
                Problem(
                    (),
                    f"{omitted:,} more problem(s) in this file are not listed (only the "
                    f"first {rules.MAX_ISSUES_PER_FILE} are)",
                    "fix the ones listed, then validate again to see the rest",
                    anchor="file",
                    severity="error" if self.omitted["error"] else "warning",
                )
            )
        return self.problems


def _model_secret(model: dict | None) -> str | None:
    """A provider/endpoint model's api_key_secret, when it is a string."""
    if model is None or model.get("type") not in rules.MODEL_VARIANTS_WITH_SECRET:
        return None
    secret = model.get("api_key_secret")
    return secret if isinstance(secret, str) else None


def check(doc: dict[str, Any]) -> list[Problem]:
    """Every problem of one parsed config, in §9.4 evaluation order."""
    return _Checker(doc).run()
