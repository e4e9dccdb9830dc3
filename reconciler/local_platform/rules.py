"""Submit (E3) validation of the local Platform: every rule kept as data.

platform-api.md asks for the page's rules to be one table per rule so that a Platform change
is a one-line edit. Two homes:

* ``reconciler.plan.submit_rules``: the rules that depend on the catalog entry or on
  ``[execution]`` values (ranges, judge, verifier, harness flags, task selection and its
  semantics). The plan's preflight reads the same module, so the plan blocks exactly what
  this route refuses and counts exactly the tasks it selects.
* here: the structure of the body and the page's name rules (§9.4), which the reconciler's
  config validation (``reconciler.config``) enforces before a plan is made.

Messages follow the wording of platform-api.md §9.4 where it gives one; the Platform's own
wording is not determinable (§13), so the rest are ours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.plan import submit_rules
from reconciler.plan.submit_rules import (  # noqa: F401  (the route reads them from here)
    NOT_READY_STATUS,
    CatalogFacts,
    referenced_secrets,
)

ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
RESERVED_ENV_PREFIX = "_OSMOSIS_"
SECRET_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
SECRET_NAME_MAX = 255
SECRET_VALUE_MAX = 65_536
RESERVED_ENV_NAMES = frozenset({"HF_TOKEN"})
RESERVED_MODEL_SECRET_NAMES = frozenset({"HF_TOKEN", "DAYTONA_API_KEY", "DAYTONA_API_URL"})
HARNESS_CREDENTIALS: Mapping[str, str] = {
    "cursor-cli": "CURSOR_API_KEY",
    "mini-swe-agent": "MSWEA_API_KEY",
}
MAX_AGENTS = 8
MAX_RUN_SECRETS = 16
MAX_VERIFIER_SECRETS = 16
MODEL_KEYS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    # type -> (required keys, optional keys); "type" itself is implied.
    "provider": (frozenset({"model", "api_key_secret"}), frozenset()),
    "endpoint": (frozenset({"base_url", "model", "api_key_secret"}), frozenset({"extra_headers"})),
    "hosted": (frozenset({"base_model"}), frozenset({"lora_model_name", "checkpoint_name"})),
}
TOP_LEVEL_KEYS = frozenset(
    {"experiment_config", "agents", "tasks_config", "execution_config", "env_config", "secrets"}
)
AGENT_KEYS = frozenset({"harness", "harness_api_key_secret", "model", "env"})
TASK_KEYS = frozenset({"task_set", "task_names", "categories"})

STOP_TERMINAL_STATUS = 409
"""Stop of a run that is already terminal: 409 CONFLICT (real behaviour not determinable)."""
STOP_TERMINAL_MESSAGE = (
    "Benchmark run {name} is already {status}; only pending, queued or running runs can be stopped."
)


@dataclass(frozen=True)
class Issue:
    """One validation problem: the dotted key path and what is wrong."""

    key: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"key": self.key, "message": self.message}


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_shape(body: Any) -> list[Issue]:
    """Structural validation of a submit body (types, required keys, unknown keys)."""
    if not isinstance(body, dict):
        return [Issue("", "request body must be a JSON object")]
    issues: list[Issue] = []
    for key in sorted(set(body) - TOP_LEVEL_KEYS):
        issues.append(Issue(key, "Unrecognized key"))
    experiment = body.get("experiment_config")
    if not isinstance(experiment, dict):
        issues.append(Issue("experiment_config", "Field required (an object with 'benchmark')"))
    else:
        for key in sorted(set(experiment) - {"benchmark"}):
            issues.append(Issue(f"experiment_config.{key}", "Unrecognized key"))
        if not isinstance(experiment.get("benchmark"), str) or not experiment["benchmark"]:
            issues.append(Issue("experiment_config.benchmark", "must be a non-empty string"))
    agents = body.get("agents")
    if not isinstance(agents, list) or not agents:
        issues.append(Issue("agents", "must be a list of 1 to 8 agents"))
        agents = []
    elif len(agents) > MAX_AGENTS:
        issues.append(Issue("agents", f"at most {MAX_AGENTS} agents, got {len(agents)}"))
    for i, agent in enumerate(agents):
        issues.extend(_check_agent(i, agent))
    tasks = body.get("tasks_config")
    if tasks is not None:
        if not isinstance(tasks, dict):
            issues.append(Issue("tasks_config", "must be an object"))
        else:
            for key in sorted(set(tasks) - TASK_KEYS):
                issues.append(Issue(f"tasks_config.{key}", "Unrecognized key"))
            if "task_set" in tasks and not isinstance(tasks["task_set"], str):
                issues.append(Issue("tasks_config.task_set", "must be a string"))
            for key in ("task_names", "categories"):
                if key in tasks and not (
                    _str_list(tasks[key]) and all(v.strip() for v in tasks[key])
                ):
                    issues.append(
                        Issue(f"tasks_config.{key}", "must be a list of non-blank strings")
                    )
    execution = body.get("execution_config")
    if execution is not None:
        if not isinstance(execution, dict):
            issues.append(Issue("execution_config", "must be an object"))
        else:
            issues.extend(_check_execution(execution))
    env = body.get("env_config")
    if env is not None and not _is_str_map(env):
        issues.append(Issue("env_config", "must be an object of string values"))
    secrets = body.get("secrets")
    if secrets is not None:
        if not isinstance(secrets, dict):
            issues.append(Issue("secrets", "must be an object"))
        else:
            for key in sorted(set(secrets) - {"required", "provided"}):
                issues.append(Issue(f"secrets.{key}", "Unrecognized key"))
            required = secrets.get("required", [])
            if not _str_list(required) or len(required) > MAX_RUN_SECRETS:
                issues.append(
                    Issue("secrets.required", f"must be a list of at most {MAX_RUN_SECRETS} names")
                )
            provided = secrets.get("provided", {})
            # The message names the key only: a provided value must never be echoed back.
            if not _is_str_map(provided):
                issues.append(Issue("secrets.provided", "must be an object of string values"))
    return issues


def _check_agent(i: int, agent: Any) -> list[Issue]:
    where = f"agents.{i}"
    if not isinstance(agent, dict):
        return [Issue(where, "must be an object")]
    issues = [Issue(f"{where}.{k}", "Unrecognized key") for k in sorted(set(agent) - AGENT_KEYS)]
    for key in ("harness", "harness_api_key_secret"):
        if key in agent and agent[key] is not None and not isinstance(agent[key], str):
            issues.append(Issue(f"{where}.{key}", "must be a string"))
    if "env" in agent and not _is_str_map(agent["env"]):
        issues.append(Issue(f"{where}.env", "must be an object of string values"))
    model = agent.get("model")
    if not isinstance(model, dict):
        issues.append(Issue(f"{where}.model", "Field required (an object with 'type')"))
        return issues
    kind = model.get("type")
    if not isinstance(kind, str) or kind not in MODEL_KEYS:
        issues.append(Issue(f"{where}.model.type", "must be one of provider, endpoint, hosted"))
        return issues
    required, optional = MODEL_KEYS[str(kind)]
    for key in sorted(set(model) - required - optional - {"type"}):
        issues.append(Issue(f"{where}.model.{kind}.{key}", "Unrecognized key"))
    for key in sorted(required):
        if not isinstance(model.get(key), str) or not model[key]:
            issues.append(Issue(f"{where}.model.{kind}.{key}", "Field required (a string)"))
    if kind == "hosted" and not (
        isinstance(model.get("lora_model_name"), str)
        or isinstance(model.get("checkpoint_name"), str)
    ):
        issues.append(Issue(f"{where}.model.hosted.lora_model_name", "Field required (a string)"))
    if "extra_headers" in model:
        headers = model["extra_headers"]
        if not _is_str_map(headers):
            issues.append(
                Issue(f"{where}.model.endpoint.extra_headers", "must be an object of strings")
            )
        elif any(k.lower() == "authorization" for k in headers):
            issues.append(
                Issue(
                    f"{where}.model.endpoint.extra_headers",
                    "extra_headers must not include an Authorization header; use api_key_secret "
                    "for endpoint authentication",
                )
            )
    return issues


def _check_execution(execution: Mapping[str, Any]) -> list[Issue]:
    # Value ranges are known rules shared with the plan (submit_rules), checked after the
    # benchmark resolves; only the types the route cannot read at all are checked here.
    issues: list[Issue] = []
    if "judge_api_key_secret" in execution and not isinstance(
        execution["judge_api_key_secret"], str
    ):
        issues.append(Issue("execution_config.judge_api_key_secret", "must be a string"))
    if "verifier_secrets" in execution:
        names = execution["verifier_secrets"]
        if not _str_list(names) or len(names) > MAX_VERIFIER_SECRETS:
            issues.append(
                Issue(
                    "execution_config.verifier_secrets",
                    f"must be a list of at most {MAX_VERIFIER_SECRETS} names",
                )
            )
    return issues


def check_rules(body: Mapping[str, Any], benchmark: Mapping[str, Any]) -> list[Issue]:
    """The page's config rules (platform-api.md §9.4 'Our validation') against a benchmark."""
    issues: list[Issue] = []
    env_config: dict[str, str] = body.get("env_config") or {}
    execution = body.get("execution_config") or {}
    for name in env_config:
        issues.extend(_env_name_issues("env_config", name))
    for name in referenced_secrets(body):
        if not SECRET_NAME_RE.match(name) or len(name) > SECRET_NAME_MAX:
            issues.append(
                Issue(
                    "secrets",
                    f"Invalid secret name '{name}': use uppercase letters, digits, and "
                    "underscores, starting with a letter (e.g. MY_SECRET).",
                )
            )
    judge = execution.get("judge_api_key_secret")
    verifier = execution.get("verifier_secrets") or []
    for i, agent in enumerate(body.get("agents", [])):
        where = f"agents.{i}"
        label = f"Agent {i + 1}"
        agent_env = agent.get("env") or {}
        for name in agent_env:
            issues.extend(_env_name_issues(f"{where}.env", name))
        effective = {**env_config, **agent_env}

        def src(name: str, _agent_env: Mapping[str, str] = agent_env, _where: str = where) -> str:
            return f"{_where}.env" if name in _agent_env else "env_config"

        model = agent.get("model", {})
        key_secret = model.get("api_key_secret") if model.get("type") != "hosted" else None
        if key_secret in RESERVED_MODEL_SECRET_NAMES:
            issues.append(
                Issue(
                    f"{where}.model.api_key_secret",
                    f"{label}'s api_key_secret '{key_secret}' uses a name reserved by the "
                    "benchmark runner. Store the model credential under a different Platform "
                    "secret record name.",
                )
            )
        if key_secret and key_secret in effective:
            issues.append(
                Issue(
                    src(key_secret),
                    f"'{key_secret}' appears in {src(key_secret)} and as agent {i + 1}'s "
                    "api_key_secret. The platform injects the secret value under that name; "
                    "remove the env var or rename it.",
                )
            )
        if isinstance(judge, str) and judge in effective:
            issues.append(
                Issue(
                    src(judge),
                    f"'{judge}' appears in {src(judge)} and as judge_api_key_secret. The "
                    "platform injects the judge secret value under that name; remove the env "
                    "var or rename it.",
                )
            )
        for name in verifier:
            if name in effective:
                issues.append(
                    Issue(
                        src(name),
                        f"'{name}' appears in {src(name)} and in verifier_secrets. The platform "
                        "injects the secret value under that name; remove the env var or "
                        "rename it.",
                    )
                )
        harness = agent.get("harness")
        harness_secret = agent.get("harness_api_key_secret")
        credential = HARNESS_CREDENTIALS.get(harness or "")
        if credential is not None:
            if credential in effective:
                issues.append(
                    Issue(
                        src(credential),
                        f"'{credential}' appears in {src(credential)} but is managed by agent "
                        f"{i + 1}'s {harness} harness. Remove the env var.",
                    )
                )
            if harness_secret is None:
                issues.append(
                    Issue(
                        f"{where}.harness_api_key_secret",
                        f"{label}'s {harness} harness requires harness_api_key_secret. Set it "
                        f"to the name of a Platform secret record containing {credential}.",
                    )
                )
            elif harness_secret != credential:
                issues.append(
                    Issue(
                        f"{where}.harness_api_key_secret",
                        f"{label}'s harness_api_key_secret '{harness_secret}' does not match "
                        f"the variable the {harness} harness reads. Store the credential in a "
                        f"Platform secret record named exactly {credential} and reference "
                        "that name.",
                    )
                )
        elif harness_secret is not None:
            what = f"{harness} harness" if harness else "official scaffold"
            issues.append(
                Issue(
                    f"{where}.harness_api_key_secret",
                    f"{label}'s {what} does not use harness_api_key_secret. Remove it.",
                )
            )
        for name in sorted(RESERVED_ENV_NAMES & set(effective)):
            issues.append(
                Issue(
                    src(name),
                    f"'{name}' appears in {src(name)} but is reserved by the benchmark runner. "
                    "The runner removes this literal env var before starting the agent; remove "
                    "it from the config. For HLE, store the dataset credential in the HF_TOKEN "
                    "Platform secret record instead.",
                )
            )
    # The known rules the plan applies too: one function, one wording (submit_rules).
    issues.extend(
        Issue(v.key, v.message) for v in submit_rules.violations(body, facts_of(benchmark))
    )
    return issues


def _env_name_issues(where: str, name: str) -> list[Issue]:
    if not ENV_NAME_RE.match(name):
        return [Issue(where, f"Invalid env var name '{name}': must match ^[A-Z_][A-Z0-9_]*$")]
    if name.startswith(RESERVED_ENV_PREFIX):
        return [
            Issue(
                where,
                f"'{name}': env var names starting with {RESERVED_ENV_PREFIX} are reserved by "
                "the platform; choose a different name.",
            )
        ]
    return []


@submit_rules.cached_facts
def facts_of(benchmark: Mapping[str, Any]) -> CatalogFacts:
    """The rules' view of a catalog entry (E2 shape plus the private ``_`` keys); the app
    hands out one cached dict per catalog revision, never mutated."""
    unavailable = benchmark.get("unavailable_tasks") or {}
    return CatalogFacts(
        name=benchmark["name"],
        source_type=benchmark.get("source_type"),
        supports_harness=bool(benchmark.get("supports_harness", True)),
        requires_harness=bool(benchmark.get("requires_harness")),
        default_harness=benchmark.get("default_harness"),
        requires_judge_model=bool(benchmark.get("requires_judge_model")),
        requires_judge_api_key=bool(benchmark.get("requires_judge_api_key")),
        judge_model_default=benchmark.get("judge_model_default"),
        task_count=int(benchmark.get("task_count") or 0),
        tasks=tuple((t["name"], t.get("category")) for t in benchmark.get("tasks") or ()),
        categories={c["name"]: c["task_count"] for c in benchmark.get("categories") or ()},
        task_sets={s["name"]: s["task_count"] for s in benchmark.get("task_sets") or ()},
        task_set_members={
            name: tuple(members)
            for name, members in (benchmark.get("_task_set_members") or {}).items()
        },
        unavailable_tasks=tuple(t["name"] for t in unavailable.get("tasks") or ()),
        unavailable_reason=unavailable.get("reason"),
    )


def select_tasks(body: Mapping[str, Any], benchmark: Mapping[str, Any]) -> list[str]:
    """The task names a submit selects (``submit_rules.select_tasks``, the plan's too)."""
    selection = submit_rules.select_tasks(facts_of(benchmark), body.get("tasks_config"))
    if selection.names is not None:
        return list(selection.names)
    return [t["name"] for t in benchmark.get("tasks") or ()]
