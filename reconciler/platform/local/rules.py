"""Submit (E3) validation of the local Platform: every rule kept as data.

platform-api.md asks for the page's rules to be one table per rule so that a Platform change
is a one-line edit. The tables are the module constants below; ``validate_submit`` only walks
them. Messages follow the wording of platform-api.md §9.4 where it gives one; the Platform's
own wording is not determinable (§13), so the rest are ours.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
ATTEMPTS_PER_TASK_RANGE = (1, 16)
"""Our choice: the Platform's range is not determinable (platform-api.md §9.2)."""
MAX_CONCURRENT_ATTEMPTS_RANGE = (1, 64)
"""Our stand-in for the 'workspace limits' the page mentions."""
VERIFIER_REJECTED_SOURCE_TYPES = frozenset({"osmosis_managed"})
"""SDK code comment: 'Submit rejects the section for managed benchmarks'."""
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

NOT_READY_STATUS = 409
"""HTTP status of a submit against a benchmark whose ``sync_status`` is not ``ready``
(platform-api.md §6.3 emulator policy; the real status is not determinable)."""
NOT_READY_MESSAGES: Mapping[str, str] = {
    "pending": "{name} is still syncing its task list (sync queued); submit once it is ready.",
    "syncing": "{name} is still syncing its task list ({synced} of {total} tasks); "
    "submit once it is ready.",
    "failed": "{name} is not runnable: {error} Retry its sync at {url}.",
}
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
    if kind not in MODEL_KEYS:
        issues.append(Issue(f"{where}.model.type", "must be one of provider, endpoint, hosted"))
        return issues
    required, optional = MODEL_KEYS[kind]
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
    issues: list[Issue] = []
    for key, (low, high) in (
        ("attempts_per_task", ATTEMPTS_PER_TASK_RANGE),
        ("max_concurrent_attempts", MAX_CONCURRENT_ATTEMPTS_RANGE),
    ):
        if key in execution:
            value = execution[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                issues.append(
                    Issue(f"execution_config.{key}", f"must be an integer from {low} to {high}")
                )
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


def referenced_secrets(body: Mapping[str, Any]) -> list[str]:
    """Every secret record name the body references, in reference order, de-duplicated
    (platform-api.md §9.5): model keys, harness keys, judge, verifier, ``secrets.required``."""
    names: list[str] = []
    for agent in body.get("agents", []):
        model = agent.get("model", {})
        if model.get("type") in ("provider", "endpoint"):
            names.append(model.get("api_key_secret", ""))
    for agent in body.get("agents", []):
        if agent.get("harness_api_key_secret") is not None:
            names.append(agent["harness_api_key_secret"])
    execution = body.get("execution_config") or {}
    if isinstance(execution.get("judge_api_key_secret"), str):
        names.append(execution["judge_api_key_secret"])
    names.extend(execution.get("verifier_secrets") or [])
    names.extend((body.get("secrets") or {}).get("required") or [])
    return list(dict.fromkeys(names))


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
        if harness and not benchmark["supports_harness"]:
            issues.append(
                Issue(
                    f"{where}.harness",
                    f"{benchmark['name']} runs only with its official scaffold; remove harness.",
                )
            )
        if not harness and benchmark["requires_harness"]:
            default = benchmark.get("default_harness")
            suffix = f' (its published scores use harness = "{default}")' if default else ""
            issues.append(
                Issue(f"{where}.harness", f"{benchmark['name']} requires a harness{suffix}.")
            )
    if benchmark.get("requires_judge_api_key") and not judge:
        default = benchmark.get("judge_model_default")
        extra = f" (judge model defaults to {default})" if default else ""
        issues.append(
            Issue(
                "execution_config.judge_api_key_secret",
                f"{benchmark['name']} uses an LLM judge and requires judge_api_key_secret{extra}.",
            )
        )
    if verifier and benchmark.get("source_type") in VERIFIER_REJECTED_SOURCE_TYPES:
        issues.append(
            Issue(
                "execution_config.verifier_secrets",
                f"{benchmark['name']} is a managed benchmark; verifier secrets are not accepted.",
            )
        )
    tasks = body.get("tasks_config") or {}
    if "task_set" not in tasks:
        known_tasks = {t["name"] for t in benchmark["tasks"]}
        known_cats = {c["name"] for c in benchmark["categories"]}
        for name in tasks.get("task_names") or []:
            if name not in known_tasks:
                issues.append(
                    Issue(
                        "tasks_config.task_names", f"Unknown task '{name}' in {benchmark['name']}"
                    )
                )
        for name in tasks.get("categories") or []:
            if name not in known_cats:
                issues.append(
                    Issue(
                        "tasks_config.categories",
                        f"Unknown category '{name}' in {benchmark['name']}",
                    )
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


def select_tasks(body: Mapping[str, Any], benchmark: Mapping[str, Any]) -> list[str]:
    """The task names a submit selects. ``task_set`` wins over names/categories; an unknown
    ``task_set`` silently expands to the full benchmark (SDK code comment, §6.3)."""
    all_tasks = [t["name"] for t in benchmark["tasks"]]
    tasks = body.get("tasks_config") or {}
    if "task_set" in tasks:
        members = benchmark.get("_task_set_members", {}).get(tasks["task_set"])
        return list(members) if members is not None else all_tasks
    selected: list[str] = []
    if "task_names" in tasks:
        wanted = set(tasks["task_names"])
        selected.extend(n for n in all_tasks if n in wanted)
    if "categories" in tasks:
        cats = set(tasks["categories"])
        selected.extend(
            t["name"]
            for t in benchmark["tasks"]
            if t["category"] in cats and t["name"] not in selected
        )
    if "task_names" in tasks or "categories" in tasks:
        return selected
    return all_tasks
