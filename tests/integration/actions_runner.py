"""A small runner for GitHub Actions workflows and composite actions, for the consumer test.

It runs what matters of a job the way the hosted runner does: the job's ``if``, each
step's ``if``, ``with:`` and ``env:`` expressions (``${{ }}`` over ``github``, ``inputs``,
``secrets``, ``vars``, ``steps``, ``runner``), ``run:`` scripts with
``bash --noprofile --norc -eo pipefail``, the ``GITHUB_OUTPUT`` / ``GITHUB_ENV`` /
``GITHUB_STEP_SUMMARY`` files, composite actions (``uses: ./`` or a mapped
``owner/repo@ref``) with their inputs, defaults and outputs, and ``actions/checkout`` as
a clone of the bare remote at the requested ref.

A job that calls a reusable workflow (``uses: ./.github/workflows/X.yml``) is expanded, not
run: ``Runner.expand`` evaluates a job's ``strategy.matrix`` (a ``${{ fromJSON(...) }}``, or
keys of lists), and for each entry of a caller the ``with:`` and ``secrets:`` it passes,
down to the jobs with steps the run would start, each with its matrix entry, ``inputs`` and
concurrency group; ``run_job`` then runs one of them.

What it does not do: it does not install Python or restore caches (``actions/setup-python``
and ``actions/cache`` are recorded as skipped; the test's interpreter is on PATH), nor run
a step that only installs osmosis-reconciler with pip from its git URL (skipped: the test's
interpreter has it, and the network is loopback only), and it
knows only the expression operators the workflows use (``==``, ``!=``, ``&&``, ``||``,
``!``, ``always()``, ``success()``, ``failure()``, ``cancelled()``, ``hashFiles()``,
``fromJSON()``, ``toJSON()``), and of a matrix only ``include`` alone or keys of lists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[\w-]+|\[[^\]]+\])*))"
)


class ExpressionError(Exception):
    pass


def _lookup(path: str, contexts: dict[str, Any]) -> Any:
    parts = re.findall(r"[\w-]+|\['[^']*'\]", path)
    value: Any = contexts
    for part in parts:
        key = part[2:-2] if part.startswith("['") else part
        if isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def evaluate(expr: str, contexts: dict[str, Any], status: dict[str, bool]) -> Any:
    """Evaluate one ``${{ }}`` expression."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if not match or match.end() == pos:
            if expr[pos:].strip() == "":
                break
            raise ExpressionError(f"cannot parse {expr!r} at {pos}")
        pos = match.end()
        kind = match.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        tokens.append((kind, match.group(kind)))
    index = 0

    def peek() -> tuple[str, str] | None:
        return tokens[index] if index < len(tokens) else None

    def take() -> tuple[str, str]:
        nonlocal index
        index += 1
        return tokens[index - 1]

    def truthy(value: Any) -> bool:
        return value not in (None, False, "", 0)

    def primary() -> Any:
        kind, text = take()
        if kind == "op" and text == "(":
            value = or_()
            take()
            return value
        if kind == "op" and text == "!":
            return not truthy(primary())
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text) if "." in text else int(text)
        if peek() == ("op", "("):
            take()
            args = []
            while peek() != ("op", ")"):
                args.append(or_())
                if peek() == ("op", ","):
                    take()
            take()
            name = text.lower()
            if name == "always":
                return True
            if name == "success":
                return not status["failed"]
            if name == "failure":
                return status["failed"]
            if name == "cancelled":
                return False
            if name == "hashfiles":
                return ""
            if name == "fromjson":
                return json.loads(str(args[0]))
            if name == "tojson":
                return json.dumps(args[0], indent=2)
            raise ExpressionError(f"unknown function {text}")
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        return _lookup(text, contexts)

    def compare() -> Any:
        left = primary()
        while peek() in (("op", "=="), ("op", "!=")):
            _kind, op = take()
            right = primary()
            same = (
                str(left if left is not None else "").lower()
                == str(right if right is not None else "").lower()
            )
            left = same if op == "==" else not same
        return left

    def and_() -> Any:
        left = compare()
        while peek() == ("op", "&&"):
            take()
            right = compare()
            left = right if truthy(left) else left
        return left

    def or_() -> Any:
        left = and_()
        while peek() == ("op", "||"):
            take()
            right = and_()
            left = left if truthy(left) else right
        return left

    value = or_()
    if index != len(tokens):
        raise ExpressionError(f"trailing tokens in {expr!r}")
    return value


def substitute(text: Any, contexts: dict[str, Any], status: dict[str, bool]) -> Any:
    if not isinstance(text, str):
        return text
    whole = _EXPR.fullmatch(text.strip())
    if whole:
        value = evaluate(whole.group(1), contexts, status)
        return "" if value is None else value

    def one(match: re.Match[str]) -> str:
        value = evaluate(match.group(1), contexts, status)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return _EXPR.sub(one, text)


def condition(text: Any, contexts: dict[str, Any], status: dict[str, bool]) -> bool:
    if text is None:
        return not status["failed"]
    if isinstance(text, bool):
        return text
    expr = str(text).strip()
    match = _EXPR.fullmatch(expr)
    expr = match.group(1) if match else expr
    uses_status = re.search(r"\b(always|success|failure|cancelled)\s*\(", expr)
    value = evaluate(expr, contexts, status)
    ok = value not in (None, False, "", 0)
    return ok if uses_status else ok and not status["failed"]


MATRIX_MAX = 256
"""GitHub starts at most this many jobs of one matrix."""


def matrix_entries(spec: Any, contexts: dict[str, Any], status: dict[str, bool]) -> list[Any]:
    """The entries of a job's ``strategy.matrix`` (``[{}]`` without one), refused as
    GitHub refuses them: an empty matrix, one of more than 256 jobs."""
    if spec is None:
        return [{}]
    if isinstance(spec, str):
        value = substitute(spec, contexts, status)
    else:
        value = {key: substitute(item, contexts, status) for key, item in spec.items()}
    if not isinstance(value, dict):
        raise ExpressionError(f"strategy.matrix is no mapping: {value!r}")
    value = dict(value)
    include = value.pop("include", None)
    if "exclude" in value or (include is not None and value):
        raise ExpressionError("this runner knows a matrix of include alone or of keys of lists")
    entries: list[Any] = [{}]
    for key, values in value.items():
        if not isinstance(values, list):
            raise ExpressionError(f"matrix.{key} is no list: {values!r}")
        entries = [{**entry, key: item} for entry in entries for item in values]
    if include is not None:
        entries = list(include)
    if not entries or entries == [{}]:
        raise ExpressionError("the matrix has no job (GitHub fails the workflow)")
    if len(entries) > MATRIX_MAX:
        raise ExpressionError(f"{len(entries)} jobs of one matrix (GitHub runs {MATRIX_MAX})")
    return entries


@dataclass(frozen=True)
class PlannedJob:
    """A job with steps that a workflow run starts: one entry of its matrix, reached
    through the reusable workflows that call it."""

    workflow: Path
    job: str
    matrix: dict[str, Any]
    inputs: dict[str, Any]
    """The ``inputs`` of its workflow (a reusable one's, its defaults applied)."""
    secrets: dict[str, str] | None
    """The secrets its caller passed; None: the repository's (not called)."""
    concurrency: str | None
    """Its evaluated concurrency group."""
    cancel_in_progress: bool


def _read_kv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    if not path.is_file():
        return values
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and "=" not in line.split("<<")[0]:
            key, delim = line.split("<<", 1)
            body = []
            i += 1
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            values[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            values[key] = value
        i += 1
    return values


@dataclass
class StepResult:
    name: str
    outcome: str
    """``success``, ``failure`` or ``skipped``."""
    outputs: dict[str, str] = field(default_factory=dict)
    log: str = ""


_OWN_INSTALL = re.compile(r'\s*pip install "osmosis-reconciler @ git\+https://[^"]+"\s*')
"""A ``run:`` step that installs the tool from its repository: the test's interpreter has it."""


@dataclass
class JobResult:
    ran: bool
    steps: list[StepResult] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    """The job's ``outputs:``, evaluated after its steps."""

    @property
    def ok(self) -> bool:
        return self.ran and all(s.outcome != "failure" for s in self.steps)

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.name} [{s.outcome}]\n{s.log}" for s in self.steps)


@dataclass
class Runner:
    """Runs workflow jobs of one repository whose remote is ``remote`` (a bare repo)."""

    remote: Path
    work: Path
    repository: str
    actions: dict[str, Path]
    """``owner/repo@ref`` -> directory holding its action.yml (``./`` is the workspace)."""
    secrets: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    """The runner machine's environment (PATH with the tools, GITHUB_API_URL, ...)."""
    github_token: str = ""

    def contexts(
        self,
        event_name: str,
        event: dict[str, Any],
        *,
        matrix: dict[str, Any] | None = None,
        needs: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        secrets: dict[str, str] | None = None,
        run_id: str = "1",
        workspace: Path | None = None,
        temp: Path | None = None,
        **github: Any,
    ) -> dict[str, Any]:
        """The expression contexts of one job."""
        ctx_github = {
            "event_name": event_name,
            "event": event,
            "repository": self.repository,
            "server_url": "https://github.com",
            "run_id": run_id,
            "token": self.github_token,
            "workspace": str(workspace or self.work),
            "base_ref": "",
            "ref": "refs/heads/main",
            "ref_name": "main",
            "action_ref": "",
            **github,
        }
        return {
            "github": ctx_github,
            "secrets": self.secrets if secrets is None else secrets,
            "vars": self.variables,
            "runner": {"os": "Linux", "temp": str(temp or self.work)},
            "steps": {},
            "env": {},
            "matrix": matrix or {},
            "needs": needs or {},
            "inputs": inputs or {},
        }

    def expand(
        self,
        workflow: Path,
        job: str,
        event_name: str,
        event: dict[str, Any],
        *,
        needs: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        secrets: dict[str, str] | None = None,
        **github: Any,
    ) -> list[PlannedJob]:
        """The jobs with steps that job ``job`` starts (none when its ``if`` is false): one
        per entry of its matrix, or, for a job calling a reusable workflow, those of the
        called workflow's jobs for each entry."""
        spec = yaml.safe_load(workflow.read_text(encoding="utf-8"))["jobs"][job]
        status = {"failed": False}
        contexts = self.contexts(
            event_name, event, needs=needs, inputs=inputs, secrets=secrets, **github
        )
        if not condition(spec.get("if"), contexts, status):
            return []
        planned: list[PlannedJob] = []
        for entry in matrix_entries((spec.get("strategy") or {}).get("matrix"), contexts, status):
            ctx = {**contexts, "matrix": entry}
            if "uses" not in spec:
                concurrency = spec.get("concurrency")
                if isinstance(concurrency, str):
                    concurrency = {"group": concurrency}
                concurrency = concurrency or {}
                group = concurrency.get("group")
                planned.append(
                    PlannedJob(
                        workflow,
                        job,
                        entry,
                        dict(inputs or {}),
                        secrets,
                        None if group is None else str(substitute(group, ctx, status)),
                        condition(concurrency.get("cancel-in-progress", False), ctx, status),
                    )
                )
                continue
            called = workflow.parents[2] / spec["uses"]  # ./.github/workflows/X.yml
            passed = {k: substitute(v, ctx, status) for k, v in (spec.get("with") or {}).items()}
            given = spec.get("secrets")
            if given == "inherit":
                handed = dict(contexts["secrets"])
            else:
                handed = {k: str(substitute(v, ctx, status)) for k, v in (given or {}).items()}
            declared = yaml.safe_load(called.read_text(encoding="utf-8"))
            call = (declared.get("on") or declared.get(True))["workflow_call"] or {}
            unknown = set(passed) - set(call.get("inputs") or {})
            assert not unknown, f"inputs {called.name} does not define: {unknown}"
            values = {}
            for key, input_spec in (call.get("inputs") or {}).items():
                if key not in passed:
                    assert not input_spec.get("required"), f"{called.name} needs input {key}"
                values[key] = passed.get(key, input_spec.get("default", ""))
            for inner in declared["jobs"]:
                planned += self.expand(
                    called, inner, event_name, event, inputs=values, secrets=handed, **github
                )
        return planned

    def run_planned(
        self, planned: PlannedJob, event_name: str, event: dict[str, Any], **github: Any
    ) -> JobResult:
        """Run one job ``expand`` found."""
        return self.run_job(
            planned.workflow,
            planned.job,
            event_name,
            event,
            matrix=planned.matrix,
            inputs=planned.inputs,
            secrets=planned.secrets,
            **github,
        )

    def run_job(
        self,
        workflow: Path,
        job: str,
        event_name: str,
        event: dict[str, Any],
        *,
        matrix: dict[str, Any] | None = None,
        needs: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        secrets: dict[str, str] | None = None,
        **github: Any,
    ) -> JobResult:
        """Run one job; ``matrix``: the values of one entry of its ``strategy.matrix``;
        ``needs``: job id -> ``{"outputs": {...}}`` of the jobs it needs; ``inputs`` and
        ``secrets``: what its caller passed a reusable workflow."""
        data = yaml.safe_load(workflow.read_text(encoding="utf-8"))
        spec = data["jobs"][job]
        run_id = str(uuid.uuid4().int % 10**9)
        workspace = self.work / f"job-{run_id}"
        temp = self.work / f"temp-{run_id}"
        workspace.mkdir(parents=True)
        temp.mkdir()
        contexts = self.contexts(
            event_name,
            event,
            matrix=matrix,
            needs=needs,
            inputs=inputs,
            secrets=secrets,
            run_id=run_id,
            workspace=workspace,
            temp=temp,
            **github,
        )
        status = {"failed": False}
        if not condition(spec.get("if"), contexts, status):
            return JobResult(ran=False)
        result = JobResult(ran=True)
        files = {
            "GITHUB_OUTPUT": temp / "output",
            "GITHUB_ENV": temp / "env",
            "GITHUB_STEP_SUMMARY": temp / "summary.md",
        }
        base_env = {
            **self.env,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": self.repository,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": run_id,
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_TEMP": str(temp),
        }
        for number, step in enumerate(spec["steps"]):
            self._step(step, f"s{number}", contexts, status, workspace, base_env, files, result)
        result.outputs = {
            key: str(substitute(value, contexts, status))
            for key, value in (spec.get("outputs") or {}).items()
        }
        return result

    # -- steps ----------------------------------------------------------------

    def _step(
        self,
        step: dict[str, Any],
        default_id: str,
        contexts: dict[str, Any],
        status: dict[str, bool],
        workspace: Path,
        base_env: dict[str, str],
        files: dict[str, Path],
        result: JobResult,
    ) -> None:
        step_id = step.get("id", default_id)
        name = step.get("name") or step.get("uses") or step_id
        name = str(substitute(name, contexts, status))
        if not condition(step.get("if"), contexts, status):
            result.steps.append(StepResult(name, "skipped"))
            contexts["steps"][step_id] = {"outcome": "skipped", "outputs": {}}
            return
        env = {**base_env, **contexts["env"]}
        for key, value in (step.get("env") or {}).items():
            env[key] = str(substitute(value, contexts, status))
        inputs = {k: substitute(v, contexts, status) for k, v in (step.get("with") or {}).items()}
        uses = step.get("uses")
        if uses is not None and uses.startswith("actions/checkout@"):
            outcome = self._checkout(workspace, inputs, contexts)
            outputs: dict[str, str] = {}
            log = f"checked out {outcome}"
            outcome = "success"
        elif uses is not None and (
            uses.startswith("actions/setup-python@") or uses.startswith("actions/cache@")
        ):
            result.steps.append(StepResult(name, "success", log="skipped by the test runner"))
            contexts["steps"][step_id] = {"outcome": "success", "outputs": {}}
            return
        elif uses is None and _OWN_INSTALL.fullmatch(str(step["run"])):
            result.steps.append(StepResult(name, "success", log="skipped by the test runner"))
            contexts["steps"][step_id] = {"outcome": "success", "outputs": {}}
            return
        elif uses is not None:
            outcome, outputs, log = self._composite(uses, inputs, contexts, workspace, env, files)
        else:
            script = str(substitute(step["run"], contexts, status))
            cwd = workspace / str(
                substitute(step.get("working-directory") or ".", contexts, status)
            )
            outcome, outputs, log = self._bash(script, cwd, env, files)
        if outcome == "failure" and not step.get("continue-on-error"):
            status["failed"] = True
        result.steps.append(StepResult(name, outcome, outputs, log))
        contexts["steps"][step_id] = {"outcome": outcome, "outputs": outputs}

    def _bash(
        self, script: str, cwd: Path, env: dict[str, str], files: dict[str, Path]
    ) -> tuple[str, dict[str, str], str]:
        files["GITHUB_OUTPUT"].write_text("")
        env = {**env, **{k: str(v) for k, v in files.items()}}
        env.update(_read_kv(files["GITHUB_ENV"]))
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        outputs = _read_kv(files["GITHUB_OUTPUT"])
        return (
            "success" if done.returncode == 0 else "failure",
            outputs,
            done.stdout + done.stderr,
        )

    def _checkout(self, workspace: Path, inputs: dict[str, Any], contexts: dict[str, Any]) -> str:
        if workspace.exists():
            shutil.rmtree(workspace)
        subprocess.run(
            ["git", "clone", "-q", str(self.remote), str(workspace)],
            check=True,
            capture_output=True,
        )
        ref = inputs.get("ref") or contexts["github"].get("sha") or "main"
        subprocess.run(
            ["git", "checkout", "-q", str(ref)], cwd=workspace, check=True, capture_output=True
        )
        return str(ref)

    def _composite(
        self,
        uses: str,
        inputs: dict[str, Any],
        contexts: dict[str, Any],
        workspace: Path,
        env: dict[str, str],
        files: dict[str, Path],
    ) -> tuple[str, dict[str, str], str]:
        path = workspace if uses == "./" else self.actions[uses]
        action = yaml.safe_load((path / "action.yml").read_text(encoding="utf-8"))
        assert action["runs"]["using"] == "composite"
        status = {"failed": False}
        github = {**contexts["github"], "action_path": str(path)}
        outer = {**contexts, "github": github}
        values: dict[str, Any] = {}
        for key, spec in (action.get("inputs") or {}).items():
            if key in inputs:
                values[key] = "" if inputs[key] is None else str(inputs[key])
            else:
                values[key] = str(substitute(spec.get("default", ""), outer, status))
        unknown = set(inputs) - set(values)
        assert not unknown, f"inputs the action does not define: {unknown}"
        inner: dict[str, Any] = {**outer, "inputs": values, "steps": {}}
        sub = JobResult(ran=True)
        for number, step in enumerate(action["runs"]["steps"]):
            self._step(step, f"c{number}", inner, status, workspace, env, files, sub)
        outputs = {
            key: str(substitute(spec["value"], inner, status))
            for key, spec in (action.get("outputs") or {}).items()
        }
        return ("failure" if status["failed"] else "success"), outputs, sub.log


def find_environment(tools: Path) -> dict[str, str]:
    """A runner environment: the test's venv first on PATH, nothing from OSMOSIS_/GITHUB_."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OSMOSIS_", "GITHUB_", "RUNNER_")) and k not in ("CI",)
    }
    env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
    return env
