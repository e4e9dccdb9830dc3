"""Bring an existing Platform run under management (``osmosis-import``).

A run made by hand (or by another repository) becomes this repository's when there is a
config that asks for exactly that run and a lockfile entry that says so. The importer:

1. reads the run's details (E5) and its benchmark (E2);
2. generates the config (``generate_config``): what E5 reports is copied, what it does not
   report is taken from flags or, only where exactly one value is possible, inferred;
3. checks the round trip: the config text, loaded back through ``load_configs`` exactly as
   ``osmosis-plan`` will load it, must have the run's adoption fingerprint, or nothing is
   written and the difference is shown;
4. under the apply lock: re-checks the lockfile and the file, writes the config (a new file
   is never overwritten; ``--update`` edits an existing one in place, keeping its comments),
   then records the run with its provenance (``imported_at``, ``imported_with``).

What E5 does not say (platform-api.md §3 E5): secret record names per agent (only the names
the run resolved, ``resolved_secret_scopes``), the model type (only through an opaque
``model_ref``), an endpoint's URL and headers. So:

* model type: always from ``--model-type``;
* an agent's model secret: ``--secret``, or the one name the run resolved that a model may
  use (names the runner reserves cannot be model secrets); two candidates are ambiguous;
* an endpoint's ``base_url`` and ``extra_headers``: ``--base-url``, ``--header`` /
  ``--no-extra-headers``;
* a hosted model's split into ``base_model`` and ``lora_model_name``: the model string
  ``base:lora`` when it has exactly one colon, else ``--lora-model``;
* a harness credential: the name the harness reads (``rules.HARNESS_CREDENTIALS``);
* the env: E5 reports each agent's effective env; variables every agent shares go to
  ``[env]``, the rest to ``[agents.env]`` (the same effective env, so the same run);
* every secret name the run resolved must be accounted for by the config (or the
  benchmark's implicit requirements), or the import asks where it came from.

Nothing is ever recorded against a config that might not be the run's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from reconciler.config import load_configs
from reconciler.config import rules as config_rules
from reconciler.config.edit import render_config, update_config
from reconciler.errors import ImportRefusedError, NotFoundError, UsageError
from reconciler.model import (
    DesiredRun,
    LockState,
    RecordedRun,
    Settings,
    canonical_digest,
    is_active,
    spec_fingerprint,
    spec_fingerprint_fields,
)
from reconciler.plan import spec_changes
from reconciler.plan.preflight import task_count
from reconciler.platform import BenchmarkDetail, PlatformClient, RunDetail, RunSummary
from reconciler.state.lockfile import StateStore, put_run, retire_run

__all__ = [
    "GeneratedConfig",
    "ImportFlags",
    "ImportPlan",
    "Importer",
    "generate_config",
]

MODEL_TYPES = tuple(config_rules.MODEL_VARIANTS)
"""``provider``, ``endpoint``, ``hosted`` (platform-api.md §9.3)."""
EVERY_AGENT = 0
"""The agent number of a flag given without ``AGENT=``: it applies to every agent."""
SCRATCH_DIR = ".osmosis/import"
"""Where the round trip writes its scratch copy (inside the repository, removed at once)."""

_AGENT_PREFIX = re.compile(r"^(\d+)=(.*)$", re.DOTALL)
_SEGMENT_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")
_TYPE_CHOICES = "|".join(MODEL_TYPES)


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


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
    run = detail.summary
    label = run_label(run)
    configuration = detail.configuration

    def refuse(message: str, hint: str) -> ImportRefusedError:
        return ImportRefusedError(f"cannot import run {label}: {message}", hint)

    agents = detail.agents
    if not agents:
        raise refuse("its details list no agents", "check the run on the Platform")
    if [a.agent_index for a in agents] != list(range(len(agents))):
        raise refuse(
            "its agents are not numbered 0 to "
            f"{len(agents) - 1} (agent_index {[a.agent_index for a in agents]})",
            "the run's details are incomplete; it cannot be imported",
        )
    for flag, agent_number in flags.agent_numbers():
        if agent_number > len(agents):
            raise refuse(
                f"{flag} {agent_number}=...: the run has {len(agents)} agent"
                f"{'' if len(agents) == 1 else 's'}",
                "number agents from 1 in the order the run lists them",
            )

    # The model type decides what else is needed, so it is asked for first.
    missing_types = [
        n for n in range(1, len(agents) + 1) if _for_agent(flags.model_types, n) is None
    ]
    if missing_types:
        shown = "; ".join(
            f"agent {n}: model {json.dumps(agents[n - 1].model or '')}"
            + (
                f", model_ref {json.dumps(agents[n - 1].model_ref)}"
                if agents[n - 1].model_ref
                else ""
            )
            for n in missing_types
        )
        raise refuse(
            f"its details do not say the model type of {_agents_phrase(missing_types)} ({shown})",
            "pass "
            + " ".join(f"--model-type {n}={_TYPE_CHOICES}" for n in missing_types)
            + (f", or --model-type {_TYPE_CHOICES} for every agent" if len(agents) > 1 else ""),
        )

    resolved = list(configuration.resolved_secret_scopes)
    model_candidates = [
        name for name in resolved if name not in config_rules.RESERVED_MODEL_SECRET_NAMES
    ]
    asks: list[tuple[str, str]] = []
    from_flags: list[str] = []
    inferred: list[str] = []
    used_secrets: list[str] = []

    def check_resolved(flag_text: str, name: str) -> None:
        if resolved and name not in resolved:
            raise refuse(
                f"{flag_text}: the run resolved no secret {name} "
                f"(it resolved {_names_phrase(resolved)})",
                "name a secret the run used",
            )

    generated_agents: list[dict[str, Any]] = []
    needs_secret: list[int] = []
    for number, agent in enumerate(agents, 1):
        where = f"agents[{number - 1}]"
        kind = _for_agent(flags.model_types, number)
        from_flags.append(f"{where}.model.type")
        entry: dict[str, Any] = {}
        if agent.harness:
            entry["harness"] = agent.harness
        credential = config_rules.HARNESS_CREDENTIALS.get(agent.harness or "")
        if credential is not None:
            entry["harness_api_key_secret"] = credential
            used_secrets.append(credential)
        model: dict[str, Any] = {"type": kind}
        for flag, values in (
            ("--secret", flags.secrets),
            ("--base-url", flags.base_urls),
            ("--header", flags.headers),
            ("--lora-model", flags.lora_models),
        ):
            applies = {
                "--secret": kind in config_rules.MODEL_VARIANTS_WITH_SECRET,
                "--base-url": kind == "endpoint",
                "--header": kind == "endpoint",
                "--lora-model": kind == "hosted",
            }[flag]
            if number in values and not applies:
                raise refuse(
                    f"{flag} {number}=...: agent {number}'s model is {kind}, which does not "
                    f"take it",
                    f"drop {flag} {number}=..., or correct --model-type {number}",
                )
        if kind in config_rules.MODEL_VARIANTS_WITH_SECRET:
            if not agent.model:
                raise refuse(
                    f"its details give no model name for agent {number}",
                    "the run's details are incomplete; it cannot be imported",
                )
            if kind == "endpoint":
                base_url = _for_agent(flags.base_urls, number)
                if base_url is None:
                    asks.append(
                        (
                            f"the base URL of agent {number}'s endpoint model",
                            f"--base-url {number}=URL",
                        )
                    )
                else:
                    model["base_url"] = base_url
                    from_flags.append(f"{where}.model.base_url")
            model["model"] = agent.model
            secret = _for_agent(flags.secrets, number)
            if secret is not None:
                check_resolved(f"--secret {number}={secret}", secret)
                model["api_key_secret"] = secret
                from_flags.append(f"{where}.model.api_key_secret")
                used_secrets.append(secret)
            elif len(model_candidates) == 1:
                model["api_key_secret"] = model_candidates[0]
                inferred.append(f"{where}.model.api_key_secret")
                used_secrets.append(model_candidates[0])
            else:
                needs_secret.append(number)
            if kind == "endpoint":
                headers = _for_agent(flags.headers, number)
                if headers:
                    model["extra_headers"] = dict(headers)
                    from_flags.append(f"{where}.model.extra_headers")
                elif not flags.no_extra_headers:
                    asks.append(
                        (
                            f"the extra_headers of agent {number}'s endpoint model",
                            f"--header {number}=NAME=VALUE (once per header) or --no-extra-headers",
                        )
                    )
        else:  # hosted
            identity = agent.model or ""
            lora = _for_agent(flags.lora_models, number)
            if lora is not None:
                if not identity.endswith(":" + lora):
                    raise refuse(
                        f"--lora-model {number}={lora}: agent {number}'s model "
                        f"{identity!r} does not end in ':{lora}'",
                        "the hosted model is reported as BASE_MODEL:LORA_MODEL_NAME",
                    )
                base = identity[: -len(lora) - 1]
                model["base_model"], model["lora_model_name"] = base, lora
                from_flags.append(f"{where}.model.lora_model_name")
            elif identity.count(":") == 1 and all(identity.split(":")):
                model["base_model"], model["lora_model_name"] = identity.split(":")
                inferred.append(f"{where}.model.base_model")
                inferred.append(f"{where}.model.lora_model_name")
            else:
                asks.append(
                    (
                        f"how agent {number}'s hosted model {identity!r} splits into "
                        "base_model and lora_model_name",
                        f"--lora-model {number}=NAME",
                    )
                )
        entry["model"] = model
        generated_agents.append(entry)
    if needs_secret:
        why = (
            f"the run resolved {_names_phrase(model_candidates)}"
            if model_candidates
            else "the run reports no secret a model may use"
        )
        whose = (
            f"agent {needs_secret[0]}'s model secret"
            if len(needs_secret) == 1
            else f"the model secrets of {_agents_phrase(needs_secret)}"
        )
        asks.insert(0, (f"{whose} ({why})", " ".join(f"--secret {n}=NAME" for n in needs_secret)))

    # E5 reports each agent's effective env ([env] overlaid by [agents.env]); what every
    # agent shares goes to [env]. Both layouts give every agent the same env.
    envs = [dict(a.environment_variables) for a in agents]
    shared = {k: v for k, v in envs[0].items() if all(k in e and e[k] == v for e in envs[1:])}
    for entry, env in zip(generated_agents, envs, strict=True):
        own = {k: v for k, v in env.items() if k not in shared}
        if own:
            entry["env"] = own

    data: dict[str, Any] = {
        "experiment": {"benchmark": benchmark.key or benchmark.name or benchmark.id}
    }
    unknown = sorted(set(configuration.task_filters) - set(config_rules.TASKS_KEYS))
    if unknown:
        raise refuse(
            f"its task filters hold {', '.join(unknown)}, which [tasks] cannot express",
            "the run cannot be described by a benchmark config",
        )
    tasks = _drop_nulls(configuration.task_filters)
    if tasks:
        data["tasks"] = tasks
    data["agents"] = generated_agents
    execution = _drop_nulls(configuration.config)
    verifier = execution.pop("verifier_secrets", None)
    judge = execution.get("judge_api_key_secret")
    judge_from_flag = False
    if isinstance(judge, str):
        used_secrets.append(judge)
        if flags.judge_secret is not None and flags.judge_secret != judge:
            raise refuse(
                f"--judge-secret {flags.judge_secret}: the run's configuration says "
                f"judge_api_key_secret = {judge!r}",
                "drop --judge-secret",
            )
    elif flags.judge_secret is not None:
        check_resolved(f"--judge-secret {flags.judge_secret}", flags.judge_secret)
        execution["judge_api_key_secret"] = flags.judge_secret
        used_secrets.append(flags.judge_secret)
        from_flags.append("execution.judge_api_key_secret")
        judge_from_flag = True
    elif benchmark.requires_judge_api_key or benchmark.requires_judge_model:
        asks.append(
            (
                f"the judge_api_key_secret {benchmark.name or benchmark.key} requires",
                "--judge-secret NAME",
            )
        )
    if execution:
        data["execution"] = execution
    if isinstance(verifier, list) and verifier:
        data["verifier"] = {"required": list(verifier)}
        used_secrets.extend(str(name) for name in verifier)
    if flags.required_secrets:
        for name in flags.required_secrets:
            check_resolved(f"--required-secret {name}", name)
        data["secrets"] = {"required": list(flags.required_secrets)}
        used_secrets.extend(flags.required_secrets)
        from_flags.append("secrets.required")
    if shared:
        data["env"] = shared

    if not asks:
        # Every name the run resolved must be one the config references (or one the
        # benchmark needs by itself): otherwise the config is missing something.
        explained = set(used_secrets) | set(benchmark.required_secret_names)
        for name in resolved:
            if name not in explained:
                asks.append(
                    (
                        f"which config key used the run's secret {name}",
                        f"--secret AGENT={name} if an agent's model used it, or "
                        f"--required-secret {name} if the config listed it under "
                        "[secrets].required",
                    )
                )
    if asks:
        raise refuse(
            "its details (E5) do not say " + "; ".join(text for text, _ in asks),
            "pass " + " ".join(flag for _, flag in asks),
        )
    return GeneratedConfig(
        data=data,
        from_flags=tuple(from_flags),
        inferred=tuple(inferred),
        judge_from_flag=judge_from_flag,
    )


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


# --------------------------------------------------------------------------- round trip


def _without_judge(spec: dict[str, Any]) -> dict[str, Any]:
    execution = {
        k: v for k, v in (spec.get("execution_config") or {}).items() if k != "judge_api_key_secret"
    }
    trimmed = {k: v for k, v in spec.items() if k != "execution_config"}
    if execution:
        trimmed["execution_config"] = execution
    return trimmed


def round_trip_differences(
    detail: RunDetail,
    desired: DesiredRun,
    benchmark_id: str | None,
    *,
    judge_from_flag: bool = False,
) -> tuple[str, ...]:
    """Empty when the config describes exactly the run, else the differences (run -> config).

    "Exactly" is the adoption fingerprint (``spec_fingerprint`` of the config's spec with its
    benchmark resolved to an id, against ``RunDetail.fingerprint``): what a plan would use
    to recognise the run as this config's. A judge secret given by flag because E5 does not
    report it is left out of the comparison.
    """
    spec = _without_judge(desired.spec) if judge_from_flag else desired.spec
    if spec_fingerprint(spec, benchmark_id) == detail.fingerprint():
        return ()
    changes = spec_changes(detail.fingerprint_fields(), spec_fingerprint_fields(spec, benchmark_id))
    return changes or ("the fingerprints differ",)


# --------------------------------------------------------------------------- plan and commit


@dataclass(frozen=True)
class ImportPlan:
    """One run's import, checked and ready to write (nothing written yet)."""

    run: RunSummary
    address: str
    path: str
    """The config file, relative to the repository root."""
    text: str
    """What the file will hold."""
    existing: str | None
    """The file's content when it already exists (None: a new file)."""
    desired: DesiredRun
    """The config as ``load_configs`` reads it back."""
    entry: RecordedRun
    """The lockfile entry to record."""
    replaces: RecordedRun | None = None
    """The entry at the address that moves to history (``--force``)."""
    from_flags: tuple[str, ...] = ()
    inferred: tuple[str, ...] = ()

    @property
    def writes_file(self) -> bool:
        return self.existing != self.text


@dataclass
class Importer:
    """Prepares imports against one Platform and one repository, then commits them."""

    client: PlatformClient
    repo_root: Path
    settings: Settings
    state_display: str
    """The lockfile as messages name it (``state/osmosis.lock``)."""
    invocation: str
    """``osmosis-import RUN`` or ``osmosis-import --all ...``: the start of ``imported_with``."""
    head: str | None = None
    clock: Callable[[], datetime] = _utcnow

    # -- paths ---------------------------------------------------------------

    @property
    def benchmarks_dir(self) -> Path:
        return self.repo_root / self.settings.benchmarks

    def _benchmarks_rel(self) -> PurePosixPath:
        directory = Path(os.path.normpath(self.benchmarks_dir))
        try:
            rel = directory.relative_to(self.repo_root)
        except ValueError:
            raise UsageError(
                f"the benchmarks directory {self.settings.benchmarks} is outside the "
                f"repository {self.repo_root}",
                "point --benchmarks at a directory inside the repository",
            ) from None
        return PurePosixPath(rel.as_posix())

    def default_address(self, benchmark: BenchmarkDetail, run: RunSummary) -> str:
        """``<benchmark key>/<run name>``, each segment made safe for a file name."""
        segments = [
            _safe_segment(s)
            for s in (benchmark.key or benchmark.name or benchmark.id).split("/")
            if s.strip()
        ]
        segments.append(_safe_segment(run.name or run.id))
        return "/".join(s for s in segments if s)

    def address_for(self, to: str) -> str:
        """The address of ``--to PATH`` (relative to the repository root, like ``--state``)."""
        bench_rel = self._benchmarks_rel()
        target = Path(os.path.normpath(self.repo_root / to))
        top = Path(os.path.normpath(self.repo_root / bench_rel))
        hint = f"write it under {bench_rel}/, e.g. --to {bench_rel}/NAME.toml"
        if target.suffix != ".toml":
            raise UsageError(f"--to {to}: a config file name ends in .toml", hint)
        try:
            rel = target.relative_to(top)
        except ValueError:
            raise UsageError(
                f"--to {to}: not inside the benchmarks directory {bench_rel}/ "
                "(only configs there are read)",
                hint,
            ) from None
        parts = rel.with_suffix("").parts
        if any(part.startswith(".") for part in rel.parts):
            raise UsageError(
                f"--to {to}: a hidden file or directory is never read as a config", hint
            )
        # A symlinked directory on the way must not lead outside the benchmarks directory
        # (realpath resolves the part that exists and keeps the rest as written).
        real_top = os.path.realpath(top)
        real = os.path.realpath(target.parent)
        if real != real_top and not real.startswith(real_top + os.sep):
            raise UsageError(f"--to {to}: leads outside {bench_rel}/ through a symlink", hint)
        return "/".join(parts)

    def path_of(self, address: str) -> str:
        return f"{self._benchmarks_rel()}/{address}.toml"

    # -- prepare -------------------------------------------------------------

    def fetch(self, ref: str) -> RunDetail:
        """E5: the run by name or id."""
        try:
            return self.client.get_run(ref)
        except NotFoundError:
            raise ImportRefusedError(
                f"no run {ref!r} in this workspace",
                "give the run's name or id as the Platform shows it "
                "(`osmosis benchmark runs list`)",
            ) from None

    def prepare(
        self,
        detail: RunDetail,
        state: LockState,
        flags: ImportFlags,
        *,
        to: str | None = None,
        update: bool = False,
        force: bool = False,
        taken: Mapping[str, str] | None = None,
    ) -> ImportPlan:
        """Everything up to the writes: generate, check the round trip and every refusal.

        Reads the Platform and the files; writes only the round trip's scratch copy (inside
        the repository, removed before returning). ``taken`` maps addresses already planned
        by this command to their run labels.
        """
        run = detail.summary
        label = run_label(run)
        for address, recorded in state.runs.items():
            if recorded.run_id == run.id:
                wanted = self.address_for(to) if to else None
                hint = f"nothing to import; see it with `osmosis-state show {address}`"
                if wanted and wanted != address:
                    hint = (
                        f"to record it under {wanted} instead: osmosis-state mv {address} {wanted}"
                    )
                raise ImportRefusedError(
                    f"run {label} is already recorded at {address} in {self.state_display}",
                    hint,
                )
        benchmark_id = detail.configuration.benchmark_id or run.benchmark_id
        if not benchmark_id:
            raise ImportRefusedError(
                f"cannot import run {label}: its details name no benchmark",
                "the run's details are incomplete; it cannot be imported",
            )
        try:
            benchmark = self.client.get_benchmark(benchmark_id)
        except NotFoundError:
            raise ImportRefusedError(
                f"cannot import run {label}: its benchmark {run.benchmark_name or benchmark_id} "
                "does not resolve in this workspace",
                "add the benchmark to the workspace on the Platform first",
            ) from None
        generated = generate_config(detail, benchmark, flags)
        address = self.address_for(to) if to else self.default_address(benchmark, run)
        path = self.path_of(address)
        if taken and address in taken:
            raise ImportRefusedError(
                f"cannot import run {label}: {path} is also the file of run {taken[address]} "
                "in this import",
                "import one of them on its own with --to PATH",
            )

        replaces = state.runs.get(address)
        if replaces is not None:
            self._check_replaceable(label, address, replaces, force)

        full = self.repo_root / path
        existing = _read_text(full)
        fresh = render_config(generated.data, header_lines(detail, benchmark, generated))
        if existing is None or existing == fresh:
            text = fresh
        elif update:
            text = update_config(existing, generated.data, file=path)
        else:
            raise ImportRefusedError(
                f"cannot import run {label}: {path} already exists",
                "pass --update to rewrite it from the run in place (its comments and layout "
                "are kept), or --to another path",
            )

        desired = self._load_back(address, text, label)
        resolved_id = self._resolve(desired.benchmark, benchmark)
        differences = round_trip_differences(
            detail, desired, resolved_id, judge_from_flag=generated.judge_from_flag
        )
        if differences:
            raise ImportRefusedError(
                f"cannot import run {label}: the generated config would not describe the run; "
                "differences (run -> config): " + "; ".join(differences),
                "nothing was written: the run holds values a benchmark config cannot "
                "express, so it cannot be imported",
            )

        info = benchmark.to_info()
        tasks = task_count(desired, info)
        now = self.clock()
        # The digest the plan compares with the config's: canonical, the benchmark by its
        # resolved id (key, name and id are the same request).
        digest_ = canonical_digest(desired.spec, info.id)
        entry = RecordedRun(
            address=address,
            spec_digest=digest_,
            spec=desired.spec,
            run_id=run.id,
            run_name=run.name or None,
            status=run.status or None,
            observed_at=now,
            submitted_at=run.created_at,
            # The run comes under management now: commit trailers older than this HEAD
            # (Osmosis-Rerun) must not count as requests for it.
            applied_at_commit=self.head,
            benchmark_id=benchmark.id,
            task_count=tasks,
            attempts=tasks * desired.agent_count * desired.attempts_per_task
            if tasks is not None
            else None,
            platform_url=run.platform_url,
            imported_at=now,
            imported_with=" ".join([self.invocation, *flags.describe()]),
        )
        return ImportPlan(
            run=run,
            address=address,
            path=path,
            text=text,
            existing=existing,
            desired=desired,
            entry=entry,
            replaces=replaces,
            from_flags=generated.from_flags,
            inferred=generated.inferred,
        )

    def _check_replaceable(
        self, label: str, address: str, recorded: RecordedRun, force: bool
    ) -> None:
        other = f"run {recorded.run_name or recorded.run_id}"
        if recorded.run_name and recorded.run_id:
            other = f"run {recorded.run_name} ({recorded.run_id})"
        if recorded.intent is not None:
            raise ImportRefusedError(
                f"cannot import run {label}: {address} has a pending {recorded.intent.op} "
                f"in {self.state_display}",
                "run osmosis-plan and osmosis-apply first, so the pending action is resolved",
            )
        if not force:
            raise ImportRefusedError(
                f"cannot import run {label}: {address} is already recorded in "
                f"{self.state_display} for {other}",
                "import it to another address with --to PATH, or pass --force to move that "
                "entry to the lockfile's history (allowed once its run has ended)",
            )
        status = recorded.status
        if recorded.run_id:
            try:
                status = self.client.get_run(recorded.run_id).summary.status or status
            except NotFoundError:
                status = "missing"
        if status is not None and status != "missing" and is_active(status):
            raise ImportRefusedError(
                f"cannot import run {label}: {address} records {other}, which is still "
                f"{status}; --force only replaces an entry whose run has ended",
                f"let it finish, or move its entry away first: osmosis-state mv {address} NEW",
            )

    def _resolve(self, reference: str, benchmark: BenchmarkDetail) -> str | None:
        """The id ``[experiment].benchmark`` resolves to, as ``osmosis-plan`` resolves it."""
        if reference == benchmark.id:
            return benchmark.id
        try:
            return self.client.get_benchmark(reference).id
        except NotFoundError:
            return None

    def _load_back(self, address: str, text: str, label: str) -> DesiredRun:
        """``text`` read exactly as ``osmosis-plan`` reads configs: through ``load_configs``
        on a scratch copy of the file at the same place, which is removed again."""
        bench_rel = self._benchmarks_rel()
        scratch_parent = self.repo_root / SCRATCH_DIR
        made: list[Path] = []
        probe = scratch_parent
        while not probe.exists():
            made.append(probe)
            probe = probe.parent
        scratch_parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="round-trip-", dir=scratch_parent))
        try:
            target = scratch / bench_rel / f"{address}.toml"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            result = load_configs(scratch, str(bench_rel))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            for directory in made:  # deepest first
                try:
                    directory.rmdir()
                except OSError:
                    break
        if not result.ok or len(result.runs) != 1:
            problems = "; ".join(issue.render() for issue in result.errors) or "no config read"
            raise ImportRefusedError(
                f"cannot import run {label}: the generated config does not validate: {problems}",
                "nothing was written; the run's settings break a config rule (see above)",
            )
        return result.runs[0]

    # -- commit --------------------------------------------------------------

    def recheck(self, plan: ImportPlan, state: LockState) -> None:
        """Under the apply lock: nothing this plan relied on changed since it was made."""
        label = run_label(plan.run)
        for address, recorded in state.runs.items():
            if recorded.run_id == plan.run.id:
                raise ImportRefusedError(
                    f"run {label} is already recorded at {address} in {self.state_display} "
                    "(recorded while this import ran)",
                    f"nothing to import; see it with `osmosis-state show {address}`",
                )
        current = state.runs.get(plan.address)
        before = plan.replaces
        if (current is None) != (before is None) or (
            current is not None and before is not None and current.run_id != before.run_id
        ):
            raise ImportRefusedError(
                f"cannot import run {label}: the entry at {plan.address} changed in "
                f"{self.state_display} while this import ran",
                "run the import again",
            )
        if _read_text(self.repo_root / plan.path) != plan.existing:
            raise ImportRefusedError(
                f"cannot import run {label}: {plan.path} changed while this import ran",
                "run the import again",
            )

    def commit(self, plan: ImportPlan, store: StateStore) -> LockState:
        """Write the config, then record the run (call under the apply lock, after
        ``recheck``). A crash between the two leaves a config without an entry: running the
        same import again finds the file identical and records the run."""
        if plan.writes_file:
            _write_text(self.repo_root / plan.path, plan.text, replace=plan.existing is not None)
        now = plan.entry.imported_at or self.clock()

        def record(state: LockState) -> LockState:
            if plan.replaces is not None and plan.address in state.runs:
                return retire_run(
                    state, plan.address, "replaced", ended_at=now, replacement=plan.entry
                )
            return put_run(state, plan.entry)

        return store.update(record)


def _safe_segment(text: str) -> str:
    # A leading dot would hide the file from discovery, which reads no hidden files.
    return _SEGMENT_UNSAFE.sub("-", text.strip()).strip("-").lstrip(".")


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}", "check the file") from None


def _write_text(path: Path, text: str, *, replace: bool) -> None:
    """Atomic: a temp file in the same directory, fsync, then rename (replace) or hard link
    (a new file, which must not exist: a file created meanwhile is never overwritten)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), 0o644)
            os.fsync(handle.fileno())
        if replace:
            os.replace(temp, path)
        else:
            try:
                os.link(temp, path)
            except FileExistsError:
                raise ImportRefusedError(
                    f"{path} appeared while this import ran; it was not overwritten",
                    "run the import again",
                ) from None
    finally:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
