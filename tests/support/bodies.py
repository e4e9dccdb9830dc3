"""The canonical submit bodies (platform-api.md §9.6): one builder instead of a copy per file.

``submit_body`` builds a body as ``config`` would from a benchmark config; ``tb_body`` and
``hle_body`` are the two canonical ones the suites submit (a one-task Terminal-Bench 2.1 run,
an HLE parity run), each a fresh dict a test may change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TB = "terminal-bench-2-1"
TB_TASK = "terminal-bench/git-multibranch"
MODEL = "openai/gpt-5"
SECRET = "OPENAI_API_KEY"


def agent(
    model: str = MODEL,
    *,
    harness: str | None = "codex",
    secret: str | None = SECRET,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One ``agents[]`` entry with a provider model."""
    entry: dict[str, Any] = {}
    if harness is not None:
        entry["harness"] = harness
    entry["model"] = {"type": "provider", "model": model}
    if secret is not None:
        entry["model"]["api_key_secret"] = secret
    entry["env"] = dict(env or {})
    return entry


def submit_body(
    benchmark: str = TB,
    *,
    models: Sequence[str] = (MODEL,),
    harness: str | None = "codex",
    secret: str | None = SECRET,
    agent_env: Mapping[str, str] | None = None,
    task_set: str | None = None,
    task_names: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    attempts: int = 1,
    judge: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A submit body as config would build it: sections only when they say something
    (``execution_config`` only for attempts other than 1 or a judge, ``env_config`` only for
    an environment)."""
    body: dict[str, Any] = {"experiment_config": {"benchmark": benchmark}}
    tasks: dict[str, Any] = {}
    if task_set is not None:
        tasks["task_set"] = task_set
    if task_names is not None:
        tasks["task_names"] = list(task_names)
    if categories is not None:
        tasks["categories"] = list(categories)
    if tasks:
        body["tasks_config"] = tasks
    body["agents"] = [
        agent(model, harness=harness, secret=secret, env=agent_env) for model in models
    ]
    execution: dict[str, Any] = {}
    if attempts != 1:
        execution["attempts_per_task"] = attempts
    if judge:
        execution["judge_api_key_secret"] = judge
    if execution:
        body["execution_config"] = execution
    if env:
        body["env_config"] = dict(env)
    return body


def tb_body(model: str = MODEL, **sections: Any) -> dict[str, Any]:
    """The canonical Terminal-Bench 2.1 body: one task, one codex agent on ``model`` with
    ``OPENAI_API_KEY``; ``sections`` replace whole top-level sections."""
    return {**submit_body(TB, models=(model,), task_names=(TB_TASK,)), **sections}


def hle_body(model: str = MODEL, **sections: Any) -> dict[str, Any]:
    """The canonical HLE body: the parity task set, one codex agent on ``model``;
    ``sections`` replace whole top-level sections."""
    return {**submit_body("hle", models=(model,), task_set="parity"), **sections}
