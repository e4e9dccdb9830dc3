"""Adoption fingerprints: what a desired spec and a Platform run detail (E5) can both
produce, to recognise a run whose submit reply was lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from reconciler.model.base import digest


def creator_digest(email: str | None) -> str | None:
    """A short, stable stand-in for a run creator's e-mail (the lockfile is committed and
    shared; the address itself is not needed, only whether two runs share a creator)."""
    if not email or not email.strip():
        return None
    return "sha256:" + hashlib.sha256(email.strip().lower().encode("utf-8")).hexdigest()[:16]


def model_identity(model: Mapping[str, Any]) -> str:
    """The model string a run's detail reports for an agent's ``[agents.model]`` table."""
    if model.get("type") == "hosted":
        return f"{model.get('base_model', '')}:{model.get('lora_model_name', '')}"
    return str(model.get("model", ""))


def adoption_fingerprint(
    benchmark_id: str | None,
    task_filters: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    agents: list[tuple[str | None, str, Mapping[str, str]]],
) -> str:
    """Fingerprint that both a desired spec and a Platform run detail (E5) can produce.

    The Platform has no idempotency key (platform-api.md §10), so a run created by a
    submit whose response was lost can only be recognised by what it was asked to do:
    the benchmark, the task filters, the execution settings, and per agent its harness,
    model and effective env. Secret values never take part.
    """
    return digest(fingerprint_fields(benchmark_id, task_filters, config, agents))


def fingerprint_fields(
    benchmark_id: str | None,
    task_filters: Mapping[str, Any] | None,
    config: Mapping[str, Any] | None,
    agents: list[tuple[str | None, str, Mapping[str, str]]],
) -> dict[str, Any]:
    """What ``adoption_fingerprint`` digests, as data (to show a difference to people)."""
    return {
        "benchmark_id": benchmark_id,
        "task_filters": dict(task_filters or {}),
        "config": dict(config or {}),
        "agents": [
            {"harness": harness, "model": model, "env": dict(sorted(env.items()))}
            for harness, model, env in agents
        ],
    }


def spec_fingerprint(spec: Mapping[str, Any], benchmark_id: str | None) -> str:
    """``adoption_fingerprint`` of a submit body, with the benchmark resolved to its id."""
    return digest(spec_fingerprint_fields(spec, benchmark_id))


def spec_fingerprint_fields(spec: Mapping[str, Any], benchmark_id: str | None) -> dict[str, Any]:
    """What ``spec_fingerprint`` digests, as data."""
    env_config = spec.get("env_config") or {}
    agents: list[tuple[str | None, str, Mapping[str, str]]] = []
    for agent in spec.get("agents", []):
        effective_env = {**env_config, **(agent.get("env") or {})}
        agents.append((agent.get("harness"), model_identity(agent.get("model", {})), effective_env))
    return fingerprint_fields(
        benchmark_id, spec.get("tasks_config"), spec.get("execution_config"), agents
    )
