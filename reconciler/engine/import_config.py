"""The config ``osmosis-import`` generates from a run's details (step 2 of ``importer``).

``ImportFlags`` holds what the user says where the run's details (E5) are silent;
``generate_config`` copies what E5 reports, takes the rest from those flags or, only where
exactly one value is possible, infers it, and refuses with every flag to pass when a value
stays open. ``header_lines`` is the generated file's comment header. Pure: no Platform call,
no file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.config import rules as config_rules
from reconciler.errors import ImportRefusedError, UsageError
from reconciler.platform.models import BenchmarkDetail, RunAgent, RunDetail, RunSummary

__all__ = [
    "EVERY_AGENT",
    "MODEL_TYPES",
    "GeneratedConfig",
    "ImportFlags",
    "generate_config",
    "header_lines",
    "run_label",
]

MODEL_TYPES = tuple(config_rules.MODEL_VARIANTS)
"""``provider``, ``endpoint``, ``hosted`` (platform-api.md §9.3)."""
EVERY_AGENT = 0
"""The agent number of a flag given without ``AGENT=``: it applies to every agent."""

_AGENT_PREFIX = re.compile(r"^(\d+)=(.*)$", re.DOTALL)
_TYPE_CHOICES = "|".join(MODEL_TYPES)


# --------------------------------------------------------------------------- flags


def _per_agent(
    flag: str, values: Sequence[str], check: Callable[[str], str | None] | None = None
) -> dict[int, str]:
    """``[AGENT=]VALUE`` values of one flag -> agent number (0: every agent) -> value."""
    out: dict[int, str] = {}
    for raw in values:
        match = _AGENT_PREFIX.match(raw)
        agent, value = (int(match[1]), match[2]) if match else (EVERY_AGENT, raw)
        if match and agent < 1:
            raise UsageError(f"{flag} {raw}: agents are numbered from 1", f"e.g. {flag} 1=...")
        if not value:
            raise UsageError(f"{flag} {raw}: no value after the agent number")
        problem = check(value) if check else None
        if problem:
            raise UsageError(f"{flag} {raw}: {problem}")
        if agent in out and out[agent] != value:
            who = "every agent" if agent == EVERY_AGENT else f"agent {agent}"
            raise UsageError(f"{flag} is given twice for {who}", "give it once per agent")
        out[agent] = value
    return out


def _check_secret_name(value: str) -> str | None:
    if config_rules.SECRET_NAME_RE.match(value):
        return None
    return (
        "not a secret record name (uppercase letters, digits and underscores, starting "
        "with a letter)"
    )


def _check_model_type(value: str) -> str | None:
    return None if value in MODEL_TYPES else f"the model type is one of {', '.join(MODEL_TYPES)}"


@dataclass(frozen=True)
class ImportFlags:
    """What the user says about a run where its details (E5) are silent.

    Keys are 1-based agent numbers; ``EVERY_AGENT`` (0) is a flag given without ``AGENT=``.
    """

    model_types: Mapping[int, str] = field(default_factory=dict)
    secrets: Mapping[int, str] = field(default_factory=dict)
    base_urls: Mapping[int, str] = field(default_factory=dict)
    headers: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    no_extra_headers: bool = False
    lora_models: Mapping[int, str] = field(default_factory=dict)
    judge_secret: str | None = None
    required_secrets: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls,
        *,
        model_types: Sequence[str] = (),
        secrets: Sequence[str] = (),
        base_urls: Sequence[str] = (),
        headers: Sequence[str] = (),
        no_extra_headers: bool = False,
        lora_models: Sequence[str] = (),
        judge_secret: str | None = None,
        required_secrets: Sequence[str] = (),
    ) -> ImportFlags:
        """From the raw flag values; a malformed one is a ``UsageError`` naming it."""
        parsed_headers: dict[int, dict[str, str]] = {}
        for raw in headers:
            match = _AGENT_PREFIX.match(raw)
            agent, rest = (int(match[1]), match[2]) if match else (EVERY_AGENT, raw)
            name, sep, value = rest.partition("=")
            if (match and agent < 1) or not sep or not name.strip() or name != name.strip():
                raise UsageError(
                    f"--header {raw}: expected [AGENT=]NAME=VALUE",
                    "e.g. --header 1=X-Routing-Pool=benchmarks",
                )
            mine = parsed_headers.setdefault(agent, {})
            if name in mine and mine[name] != value:
                raise UsageError(f"--header {name} is given twice for the same agent")
            mine[name] = value
        for name in [judge_secret, *required_secrets]:
            if name is not None and _check_secret_name(name):
                raise UsageError(f"{name}: {_check_secret_name(name)}")
        return cls(
            model_types=_per_agent("--model-type", model_types, _check_model_type),
            secrets=_per_agent("--secret", secrets, _check_secret_name),
            base_urls=_per_agent("--base-url", base_urls),
            headers=parsed_headers,
            no_extra_headers=no_extra_headers,
            lora_models=_per_agent("--lora-model", lora_models),
            judge_secret=judge_secret,
            required_secrets=tuple(dict.fromkeys(required_secrets)),
        )

    def describe(self) -> list[str]:
        """The flags as a command line would give them, in a fixed order."""

        def agent_flags(flag: str, values: Mapping[int, str]) -> list[str]:
            return [
                f"{flag} {value}" if agent == EVERY_AGENT else f"{flag} {agent}={value}"
                for agent, value in sorted(values.items())
            ]

        parts = agent_flags("--model-type", self.model_types)
        parts += agent_flags("--secret", self.secrets)
        parts += agent_flags("--base-url", self.base_urls)
        for agent, headers in sorted(self.headers.items()):
            for name, value in headers.items():
                prefix = "" if agent == EVERY_AGENT else f"{agent}="
                parts.append(f"--header {prefix}{name}={value}")
        if self.no_extra_headers:
            parts.append("--no-extra-headers")
        parts += agent_flags("--lora-model", self.lora_models)
        if self.judge_secret:
            parts.append(f"--judge-secret {self.judge_secret}")
        parts += [f"--required-secret {name}" for name in self.required_secrets]
        return parts

    def agent_numbers(self) -> list[tuple[str, int]]:
        """Every (flag, agent number) given for one agent, to check against a run's agents."""
        pairs = [
            (flag, agent)
            for flag, values in (
                ("--model-type", self.model_types),
                ("--secret", self.secrets),
                ("--base-url", self.base_urls),
                ("--header", self.headers),
                ("--lora-model", self.lora_models),
            )
            for agent in values
            if agent != EVERY_AGENT
        ]
        return sorted(pairs)


def _for_agent(values: Mapping[int, Any], agent: int) -> Any:
    return values.get(agent, values.get(EVERY_AGENT))


# --------------------------------------------------------------------------- generation


@dataclass(frozen=True)
class GeneratedConfig:
    """A config built from a run's details, before it is checked by the round trip."""

    data: dict[str, Any]
    """The config's tables in parsed-TOML shape, in the layout order of the example configs."""
    from_flags: tuple[str, ...] = ()
    """Config keys whose values came from the command line."""
    inferred: tuple[str, ...] = ()
    """Config keys E5 does not report, filled in because exactly one value is possible."""
    judge_from_flag: bool = False
    """``[execution].judge_api_key_secret`` came from ``--judge-secret`` because the run's
    configuration does not report it; the round trip cannot compare it."""


def run_label(run: RunSummary) -> str:
    """``name (id)``, or the id alone."""
    return f"{run.name} ({run.id})" if run.name else run.id


def _agents_phrase(numbers: Sequence[int]) -> str:
    if len(numbers) == 1:
        return f"agent {numbers[0]}"
    return "agents " + ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"


def _names_phrase(names: Sequence[str]) -> str:
    if not names:
        return "none"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _drop_nulls(values: Mapping[str, Any]) -> dict[str, Any]:
    # TOML has no null. A null the Platform stores cannot be written back; leaving it out
    # lets the round trip show the difference instead of guessing a value.
    return {k: v for k, v in values.items() if v is not None}


def generate_config(
    detail: RunDetail, benchmark: BenchmarkDetail, flags: ImportFlags
) -> GeneratedConfig:
    """The config that asks for exactly the run ``detail`` describes.

    Raises ``ImportRefusedError`` naming the flags to pass when E5 leaves a value open, and
    when the run holds something a config cannot express.
    """
    return _Generation(detail, benchmark, flags).build()


class _Generation:
    """One ``generate_config`` call, in named steps.

    Refusals that make the rest pointless (no agents, an unknown model type, a flag that
    does not apply) are raised at once; values E5 leaves open are collected in ``asks`` so
    one error names every flag to pass.
    """

    def __init__(self, detail: RunDetail, benchmark: BenchmarkDetail, flags: ImportFlags):
        self.detail = detail
        self.benchmark = benchmark
        self.flags = flags
        self.label = run_label(detail.summary)
        self.agents = detail.agents
        self.resolved = list(detail.configuration.resolved_secret_scopes)
        self.model_candidates = [
            name for name in self.resolved if name not in config_rules.RESERVED_MODEL_SECRET_NAMES
        ]
        self.asks: list[tuple[str, str]] = []
        """(what E5 does not say, the flag that says it), in the order they are named."""
        self.from_flags: list[str] = []
        self.inferred: list[str] = []
        self.used_secrets: list[str] = []
        """Every secret name the config references, to account for what the run resolved."""

    def build(self) -> GeneratedConfig:
        self.check_agents()
        self.require_model_types()
        generated_agents = self.agent_entries()
        shared = _split_env(self.agents, generated_agents)
        data: dict[str, Any] = {
            "experiment": {
                "benchmark": self.benchmark.key or self.benchmark.name or self.benchmark.id
            }
        }
        tasks = self.tasks()
        if tasks:
            data["tasks"] = tasks
        data["agents"] = generated_agents
        execution, verifier, judge_from_flag = self.execution()
        if execution:
            data["execution"] = execution
        if isinstance(verifier, list) and verifier:
            data["verifier"] = {"required": list(verifier)}
            self.used_secrets.extend(str(name) for name in verifier)
        if self.flags.required_secrets:
            for name in self.flags.required_secrets:
                self.check_resolved(f"--required-secret {name}", name)
            data["secrets"] = {"required": list(self.flags.required_secrets)}
            self.used_secrets.extend(self.flags.required_secrets)
            self.from_flags.append("secrets.required")
        if shared:
            data["env"] = shared
        if not self.asks:
            self.account_for_secrets()
        if self.asks:
            raise self.refuse(
                "its details (E5) do not say " + "; ".join(text for text, _ in self.asks),
                "pass " + " ".join(flag for _, flag in self.asks),
            )
        return GeneratedConfig(
            data=data,
            from_flags=tuple(self.from_flags),
            inferred=tuple(self.inferred),
            judge_from_flag=judge_from_flag,
        )

    def refuse(self, message: str, hint: str) -> ImportRefusedError:
        return ImportRefusedError(f"cannot import run {self.label}: {message}", hint)

    def check_resolved(self, flag_text: str, name: str) -> None:
        """A secret named by flag must be one the run resolved (when it reports any)."""
        if self.resolved and name not in self.resolved:
            raise self.refuse(
                f"{flag_text}: the run resolved no secret {name} "
                f"(it resolved {_names_phrase(self.resolved)})",
                "name a secret the run used",
            )

    def check_agents(self) -> None:
        """The run lists agents numbered 0..n-1, and every ``AGENT=`` flag names one."""
        agents = self.agents
        if not agents:
            raise self.refuse("its details list no agents", "check the run on the Platform")
        if [a.agent_index for a in agents] != list(range(len(agents))):
            raise self.refuse(
                "its agents are not numbered 0 to "
                f"{len(agents) - 1} (agent_index {[a.agent_index for a in agents]})",
                "the run's details are incomplete; it cannot be imported",
            )
        for flag, agent in self.flags.agent_numbers():
            if agent > len(agents):
                raise self.refuse(
                    f"{flag} {agent}=...: the run has {len(agents)} agent"
                    f"{'' if len(agents) == 1 else 's'}",
                    "number agents from 1 in the order the run lists them",
                )

    def require_model_types(self) -> None:
        """The model type decides what else is needed, so it is asked for first."""
        agents = self.agents
        missing_types = [
            n for n in range(1, len(agents) + 1) if _for_agent(self.flags.model_types, n) is None
        ]
        if not missing_types:
            return
        shown = "; ".join(
            f"agent {n}: model {json.dumps(agents[n - 1].model or '')}"
            + (
                f", model_ref {json.dumps(agents[n - 1].model_ref)}"
                if agents[n - 1].model_ref
                else ""
            )
            for n in missing_types
        )
        raise self.refuse(
            f"its details do not say the model type of {_agents_phrase(missing_types)} ({shown})",
            "pass "
            + " ".join(f"--model-type {n}={_TYPE_CHOICES}" for n in missing_types)
            + (f", or --model-type {_TYPE_CHOICES} for every agent" if len(agents) > 1 else ""),
        )

    def agent_entries(self) -> list[dict[str, Any]]:
        """``[[agents]]`` tables (without ``env``), one per agent of the run."""
        generated_agents: list[dict[str, Any]] = []
        needs_secret: list[int] = []
        for number, agent in enumerate(self.agents, 1):
            where = f"agents[{number - 1}]"
            kind = _for_agent(self.flags.model_types, number)
            self.from_flags.append(f"{where}.model.type")
            entry: dict[str, Any] = {}
            if agent.harness:
                entry["harness"] = agent.harness
            credential = config_rules.HARNESS_CREDENTIALS.get(agent.harness or "")
            if credential is not None:
                entry["harness_api_key_secret"] = credential
                self.used_secrets.append(credential)
            self.check_flags_apply(number, kind)
            if kind in config_rules.MODEL_VARIANTS_WITH_SECRET:
                model = self.model_with_secret(number, agent, kind)
                if "api_key_secret" not in model:
                    needs_secret.append(number)
            else:
                model = self.hosted_model(number, agent, kind)
            entry["model"] = model
            generated_agents.append(entry)
        if needs_secret:
            self.ask_model_secrets(needs_secret)
        return generated_agents

    def check_flags_apply(self, number: int, kind: str) -> None:
        """A per-agent flag the agent's model type does not take is refused."""
        flags = self.flags
        for flag, values, applies in (
            ("--secret", flags.secrets, kind in config_rules.MODEL_VARIANTS_WITH_SECRET),
            ("--base-url", flags.base_urls, kind == "endpoint"),
            ("--header", flags.headers, kind == "endpoint"),
            ("--lora-model", flags.lora_models, kind == "hosted"),
        ):
            if number in values and not applies:
                raise self.refuse(
                    f"{flag} {number}=...: agent {number}'s model is {kind}, which does not "
                    f"take it",
                    f"drop {flag} {number}=..., or correct --model-type {number}",
                )

    def model_with_secret(self, number: int, agent: RunAgent, kind: str) -> dict[str, Any]:
        """A ``provider`` or ``endpoint`` model; without ``api_key_secret`` when it is open."""
        where = f"agents[{number - 1}]"
        flags = self.flags
        model: dict[str, Any] = {"type": kind}
        if not agent.model:
            raise self.refuse(
                f"its details give no model name for agent {number}",
                "the run's details are incomplete; it cannot be imported",
            )
        if kind == "endpoint":
            base_url = _for_agent(flags.base_urls, number)
            if base_url is None:
                self.asks.append(
                    (
                        f"the base URL of agent {number}'s endpoint model",
                        f"--base-url {number}=URL",
                    )
                )
            else:
                model["base_url"] = base_url
                self.from_flags.append(f"{where}.model.base_url")
        model["model"] = agent.model
        secret = _for_agent(flags.secrets, number)
        if secret is not None:
            self.check_resolved(f"--secret {number}={secret}", secret)
            model["api_key_secret"] = secret
            self.from_flags.append(f"{where}.model.api_key_secret")
            self.used_secrets.append(secret)
        elif len(self.model_candidates) == 1:
            model["api_key_secret"] = self.model_candidates[0]
            self.inferred.append(f"{where}.model.api_key_secret")
            self.used_secrets.append(self.model_candidates[0])
        if kind == "endpoint":
            headers = _for_agent(flags.headers, number)
            if headers:
                model["extra_headers"] = dict(headers)
                self.from_flags.append(f"{where}.model.extra_headers")
            elif not flags.no_extra_headers:
                self.asks.append(
                    (
                        f"the extra_headers of agent {number}'s endpoint model",
                        f"--header {number}=NAME=VALUE (once per header) or --no-extra-headers",
                    )
                )
        return model

    def hosted_model(self, number: int, agent: RunAgent, kind: str) -> dict[str, Any]:
        """A ``hosted`` model: the reported ``BASE:LORA`` split into its two keys."""
        where = f"agents[{number - 1}]"
        model: dict[str, Any] = {"type": kind}
        identity = agent.model or ""
        lora = _for_agent(self.flags.lora_models, number)
        if lora is not None:
            if not identity.endswith(":" + lora):
                raise self.refuse(
                    f"--lora-model {number}={lora}: agent {number}'s model "
                    f"{identity!r} does not end in ':{lora}'",
                    "the hosted model is reported as BASE_MODEL:LORA_MODEL_NAME",
                )
            base = identity[: -len(lora) - 1]
            model["base_model"], model["lora_model_name"] = base, lora
            self.from_flags.append(f"{where}.model.lora_model_name")
        elif identity.count(":") == 1 and all(identity.split(":")):
            model["base_model"], model["lora_model_name"] = identity.split(":")
            self.inferred.append(f"{where}.model.base_model")
            self.inferred.append(f"{where}.model.lora_model_name")
        else:
            self.asks.append(
                (
                    f"how agent {number}'s hosted model {identity!r} splits into "
                    "base_model and lora_model_name",
                    f"--lora-model {number}=NAME",
                )
            )
        return model

    def ask_model_secrets(self, needs_secret: Sequence[int]) -> None:
        """One ask, first, for every model secret neither given nor the only candidate."""
        candidates = self.model_candidates
        why = (
            f"the run resolved {_names_phrase(candidates)}"
            if candidates
            else "the run reports no secret a model may use"
        )
        whose = (
            f"agent {needs_secret[0]}'s model secret"
            if len(needs_secret) == 1
            else f"the model secrets of {_agents_phrase(needs_secret)}"
        )
        self.asks.insert(
            0, (f"{whose} ({why})", " ".join(f"--secret {n}=NAME" for n in needs_secret))
        )

    def tasks(self) -> dict[str, Any]:
        """``[tasks]`` from the run's task filters; a filter ``[tasks]`` lacks is refused."""
        filters = self.detail.configuration.task_filters
        unknown = sorted(set(filters) - set(config_rules.TASKS_KEYS))
        if unknown:
            raise self.refuse(
                f"its task filters hold {', '.join(unknown)}, which [tasks] cannot express",
                "the run cannot be described by a benchmark config",
            )
        return _drop_nulls(filters)

    def execution(self) -> tuple[dict[str, Any], Any, bool]:
        """``[execution]``, the run's verifier secrets, and whether the judge secret came
        from ``--judge-secret``."""
        flags, benchmark = self.flags, self.benchmark
        execution = _drop_nulls(self.detail.configuration.config)
        verifier = execution.pop("verifier_secrets", None)
        judge = execution.get("judge_api_key_secret")
        judge_from_flag = False
        if isinstance(judge, str):
            self.used_secrets.append(judge)
            if flags.judge_secret is not None and flags.judge_secret != judge:
                raise self.refuse(
                    f"--judge-secret {flags.judge_secret}: the run's configuration says "
                    f"judge_api_key_secret = {judge!r}",
                    "drop --judge-secret",
                )
        elif flags.judge_secret is not None:
            self.check_resolved(f"--judge-secret {flags.judge_secret}", flags.judge_secret)
            execution["judge_api_key_secret"] = flags.judge_secret
            self.used_secrets.append(flags.judge_secret)
            self.from_flags.append("execution.judge_api_key_secret")
            judge_from_flag = True
        elif benchmark.requires_judge_api_key or benchmark.requires_judge_model:
            self.asks.append(
                (
                    f"the judge_api_key_secret {benchmark.name or benchmark.key} requires",
                    "--judge-secret NAME",
                )
            )
        return execution, verifier, judge_from_flag

    def account_for_secrets(self) -> None:
        """Every name the run resolved must be one the config references (or one the
        benchmark needs by itself): otherwise the config is missing something."""
        explained = set(self.used_secrets) | set(self.benchmark.required_secret_names)
        for name in self.resolved:
            if name not in explained:
                self.asks.append(
                    (
                        f"which config key used the run's secret {name}",
                        f"--secret AGENT={name} if an agent's model used it, or "
                        f"--required-secret {name} if the config listed it under "
                        "[secrets].required",
                    )
                )


def _split_env(
    agents: Sequence[RunAgent], generated_agents: Sequence[dict[str, Any]]
) -> dict[str, str]:
    """E5 reports each agent's effective env ([env] overlaid by [agents.env]); what every
    agent shares goes to [env] (returned), the rest to each agent's table. Both layouts give
    every agent the same env."""
    envs = [dict(a.environment_variables) for a in agents]
    shared = {k: v for k, v in envs[0].items() if all(k in e and e[k] == v for e in envs[1:])}
    for entry, env in zip(generated_agents, envs, strict=True):
        own = {k: v for k, v in env.items() if k not in shared}
        if own:
            entry["env"] = own
    return shared


def header_lines(
    detail: RunDetail, benchmark: BenchmarkDetail, generated: GeneratedConfig
) -> list[str]:
    """The comment header of a generated config: the run, its page, and what came from
    people rather than from the Platform."""
    run = detail.summary
    created = run.created_at.strftime("%Y-%m-%dT%H:%M:%SZ") if run.created_at else "unknown"
    lines = [
        f"Imported by osmosis-import from Osmosis Platform run {run_label(run)}",
        f"on {benchmark.name or benchmark.key}, created {created}.",
        f"Run page: {run.platform_url or 'not reported by the Platform'}",
    ]
    if generated.from_flags:
        lines += _wrap("Given on the command line:", generated.from_flags)
    if generated.inferred:
        lines += _wrap("Inferred (the only possible value):", generated.inferred)
    return lines


def _wrap(lead: str, items: Sequence[str], width: int = 96) -> list[str]:
    lines, current = [], lead
    for i, item in enumerate(items):
        piece = f" {item}{',' if i < len(items) - 1 else '.'}"
        if len(current) + len(piece) > width:
            lines.append(current)
            current = " " + piece.lstrip()
        else:
            current += piece
    lines.append(current)
    return lines
