"""The submit request body (platform-api.md §9.6) built from a parsed config, and its digest.

The body is what the Platform receives, so it is also what identifies a desired run: two
configs that differ only in TOML style (key order, whitespace, comments, quoting, inline vs.
standard tables) parse to the same data and so to the same body and digest, while any change
to the body changes the digest.
"""

from __future__ import annotations

from typing import Any

from reconciler.model import digest

_MODEL_KEYS = (
    "type",
    "model",
    "base_url",
    "api_key_secret",
    "extra_headers",
    "base_model",
    "lora_model_name",
)


def build_spec(parsed: dict[str, Any]) -> dict[str, Any]:
    """The §9.6 submit body of a *validated* config, without per-run secret values.

    ``secrets.provided`` is always empty here: values supplied per run (``--secrets-file``,
    process env) are added by the submitter at POST time and never stored or digested.
    """
    body: dict[str, Any] = {"experiment_config": {"benchmark": parsed["experiment"]["benchmark"]}}

    tasks = parsed.get("tasks") or {}
    tasks_config = {
        key: list(tasks[key]) if isinstance(tasks[key], list) else tasks[key]
        for key in ("task_set", "task_names", "categories")
        if key in tasks
    }
    if tasks_config:
        body["tasks_config"] = tasks_config

    agents = []
    for agent in parsed["agents"]:
        entry: dict[str, Any] = {}
        if "harness" in agent:
            entry["harness"] = agent["harness"]
        if "harness_api_key_secret" in agent:
            entry["harness_api_key_secret"] = agent["harness_api_key_secret"]
        model = agent["model"]
        entry["model"] = {
            key: dict(model[key]) if key == "extra_headers" else model[key]
            for key in _MODEL_KEYS
            if key in model
        }
        entry["env"] = dict(agent.get("env") or {})
        agents.append(entry)
    body["agents"] = agents

    execution_config = dict(parsed.get("execution") or {})
    verifier_secrets = list((parsed.get("verifier") or {}).get("required") or [])
    if verifier_secrets:
        execution_config["verifier_secrets"] = verifier_secrets
    if execution_config:
        body["execution_config"] = execution_config

    required = list((parsed.get("secrets") or {}).get("required") or [])
    if required:
        body["secrets"] = {"required": required, "provided": {}}

    env_config = dict(parsed.get("env") or {})
    if env_config:
        body["env_config"] = env_config
    return body


def spec_digest(spec: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of a submit body (== ``reconciler.model.digest``)."""
    return digest(spec)
