"""A team's life as a Hypothesis state machine (issues 22 and 27): random sequences of what
a team does, driven through the real commands over real git repositories against the local
Platform served on loopback, with the invariants checked after every step.

The world of one sequence:

* a bare ``remote`` (main branch) and a ``ci`` clone that applies after every merge and
  commits the lockfile back (``lock = "git"``: the lock and state record on the remote); its
  settings turn the smoke stage on for ``tb/**`` above ``SMOKE_ABOVE`` attempts;
* a ``laptop`` clone that tries configs out against the embedded Platform, and
  ``teammate`` clones on "other machines" (an embedded Platform each) given its try-out
  lockfile;
* ``desk`` clones of this repository on the same machine, applying with a lockfile copied
  from the CI clone (what they record is committed and pushed, as the apply asks);
* a generator (``GENERATOR``) of two staged cells, one behind the endpoint that answers
  errors (its smoke run fails: a standing block);
* a ``colleague`` repository in the same workspace whose runs are not this repository's,
  applied with this repository's token (one service token for the organisation: the
  harder case for ownership, the creator is the same) or as another user
  (``COLLEAGUE_TOKEN``);
* ``solo`` repositories started without a remote that gain one later, in the same
  workspace, with this repository's token: a fresh clone of each must accept its lockfile;
* the served local Platform (one per process, a fresh workspace per sequence) on a clock
  moved only by the ``time_passes`` rule, and its fault knobs. A config whose model is
  ``ERRORING`` meets an endpoint that answers errors: its runs fail, smoke runs included.

The commands run in this process through their entry points (``apply_main`` /
``plan_main`` with the environment and arguments a shell would give them); the crash rule is
the subprocess sample (a real process killed at a named crash point).

``PLANT`` (environment ``LIFECYCLE_PLANT``, read by the harness only, never by the product)
plants a bug in the harness's CI job to show the invariants find and shrink one:
``lost-record`` discards what an apply recorded, the lockfile and the remote state record
(as if its record after the POST were never written), so the next apply pays again.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import time
import tomllib
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from reconciler.cli.apply import main as apply_main
from reconciler.cli.plan import main as plan_main
from reconciler.cli.results import main as results_main
from reconciler.local_platform import Faults, LocalPlatform
from reconciler.local_platform.faults import FaultInjector
from reconciler.state.gitlock import GuardedRefs
from tests.support.osmosis import (
    BIN_DIR,
    COLLEAGUE_TOKEN,
    SECRET_NAMES,
    SECRET_VALUE_PREFIX,
    TOKEN,
    Platform,
    Result,
    _check_clean,
    _environ,
    cli_env,
    smoke_config,
    start_platform,
)

PLANT = os.environ.get("LIFECYCLE_PLANT", "")
ERRORING = "my-org/always-errors"
"""A model behind an endpoint that answers errors: every run of it fails (issue 27)."""
MODELS = ("openai/gpt-5.2", "anthropic/claude-sonnet-4.5", ERRORING)
ADDRESSES = ("tb/a", "tb/b", "tb/c", "hle/x")
MAX_STOPS = 1
SMOKE_ABOVE = 2
"""Configs under ``tb/`` planning more attempts than this get a smoke run first."""
PYPROJECT = (
    f'[tool.osmosis-reconciler]\nlock = "git"\nlock_ttl = 30\nmax_stops = {MAX_STOPS}\n\n'
    f'[[tool.osmosis-reconciler.smoke]]\naddresses = ["tb/**"]\nabove = {SMOKE_ABOVE}\n'
)
CRASH_POINTS = ("submit.before_post", "submit.after_post")
FAULT_KINDS = (
    "outage",
    "unknown_outcome",
    "unknown_outcome_unlisted",
    "wrong_shape",
    "rate_limited",
)
ACTIVE = ("pending", "queued", "running")

RULES: Counter[str] = Counter()
FAULTS: Counter[str] = Counter()
CHECKS: Counter[str] = Counter()
VIOLATIONS: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()
DETAILS: list[str] = []
"""The first violations' messages (a violation Hypothesis could not replay still shows)."""
"""Process-wide tallies across sequences, printed by ``tests.lifecycle.run``: rules run,
faults injected, invariant checks and violations, and what the product did (smoke stages)."""
INVARIANTS = (
    "one_paid_run_per_request",
    "smoke_run_once_and_gates_the_full_run",
    "ended_runs_downloaded",
    "unmanaged_never_touched",
    "remote_holds_only_this_platforms_refs",
    "unblocked_submits_accepted",
    "guards_checked",
    "exit_codes_documented",
    "a_clone_accepts_a_lockfile_written_before_the_remote",
    "no_twin_runs_unless_allowed",
    "rerun_requests_carried_out",
)
EXPECTED_FAULTS = FAULT_KINDS + tuple(f"crash:{point}" for point in CRASH_POINTS)


class FastClock:
    """The Platform's wall clock: real time (runs move on while an apply waits, at the
    Platform's speed factor) plus what ``time_passes`` added."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


class _World:
    """One served Platform for the whole process (a workspace per sequence)."""

    platform: Platform | None = None
    clock: FastClock | None = None
    root: Path | None = None

    @classmethod
    def get(cls, root: Path) -> tuple[Platform, FastClock]:
        if cls.platform is None:
            cls.clock = FastClock()
            cls.root = root
            cls.platform = start_platform(root / "platform", clock=cls.clock, speed=300.0)
        assert cls.clock is not None
        return cls.platform, cls.clock


_GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "Team",
    "GIT_AUTHOR_EMAIL": "team@example.com",
    "GIT_COMMITTER_NAME": "Team",
    "GIT_COMMITTER_EMAIL": "team@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    """git in ``repo`` without hooks or automatic gc (the cheap git of a test world)."""
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", *args],
        cwd=repo,
        env=_GIT_ENV,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {repo.name}: {done.stderr}")
    return done.stdout.strip()


def _remote_refs(bare: Path) -> set[str]:
    """Every ref of a bare repository, loose and packed (read from disk: one step checks
    this, and a ``git for-each-ref`` process each time would double a short step)."""
    refs = {
        path.relative_to(bare).as_posix() for path in (bare / "refs").rglob("*") if path.is_file()
    }
    packed = bare / "packed-refs"
    if packed.exists():
        for line in packed.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith(("#", "^")):
                refs.add(parts[1])
    return refs


def _config(model: str, attempts: int) -> str:
    if model != ERRORING:
        return smoke_config(model, attempts=attempts)
    return (
        "[experiment]\n"
        'benchmark = "terminal-bench-2-1"\n\n'
        "[tasks]\n"
        'task_names = ["terminal-bench/git-multibranch"]\n\n'
        "[[agents]]\n"
        'harness = "terminus-2"\n\n'
        "[agents.model]\n"
        'type = "endpoint"\n'
        f'model = "{model}"\n'
        'base_url = "https://always-errors.example.invalid/v1"\n'
        'api_key_secret = "MY_ENDPOINT_KEY"\n\n'
        "[execution]\n"
        f"attempts_per_task = {attempts}\n"
        "max_concurrent_attempts = 1\n"
    )


SOLO_ATTEMPTS = 4
"""Attempts of the solo repository's config (``remote_added_later``)."""
GENERATOR = "tb/gen"
"""A generator of two staged cells under ``tb/`` (a smoke run first): one whose endpoint
answers errors (its smoke run fails, the full run is blocked for good) and one that works."""
GENERATOR_CELLS = {f"{GENERATOR}/errors": ERRORING, f"{GENERATOR}/gpt": MODELS[0]}
GENERATOR_ATTEMPTS = SMOKE_ABOVE + 1


def _generator() -> str:
    return (
        "[generate]\n"
        "version = 1\n"
        'address = "{model}"\n'
        "max_runs = 4\n\n"
        "[base.experiment]\n"
        'benchmark = "terminal-bench-2-1"\n\n'
        "[base.tasks]\n"
        'task_names = ["terminal-bench/git-multibranch"]\n\n'
        "[base.agent]\n"
        'harness = "terminus-2"\n\n'
        "[base.execution]\n"
        f"attempts_per_task = {GENERATOR_ATTEMPTS}\n"
        "max_concurrent_attempts = 1\n\n"
        "[[axis.model]]\n"
        'key = "errors"\n'
        f'agent.model = {{ type = "endpoint", model = "{ERRORING}", '
        'base_url = "https://always-errors.example.invalid/v1", '
        'api_key_secret = "MY_ENDPOINT_KEY" }\n\n'
        "[[axis.model]]\n"
        'key = "gpt"\n'
        f'agent.model = {{ type = "provider", model = "{MODELS[0]}", '
        'api_key_secret = "OPENAI_API_KEY" }\n'
    )


def _body_of(spec: dict[str, Any]) -> tuple[str, int]:
    """(model, attempts per task) of a submit body as the lockfile's intent records it."""
    agents = spec.get("agents") or [{}]
    model = (agents[0].get("model") or {}).get("model", "")
    execution = spec.get("execution_config") or spec["execution"]
    return model, int(execution["attempts_per_task"])


PICK = st.integers(0, 7)
"""Which of the addresses (or runs) a rule acts on, by position: a plain number, so the
printed sequence replays as it is (``tests.lifecycle.replay``)."""


def _pick(choices: list[str], pick: int) -> str:
    return choices[pick % len(choices)]


def _staged(address: str, attempts: int) -> bool:
    """Whether the smoke setting applies to this config (a smoke run first)."""
    return address.startswith("tb/") and attempts > SMOKE_ABOVE


def _has_configs(machine: LifecycleMachine) -> bool:
    return bool(machine.configs)


def _can_rename(machine: LifecycleMachine) -> bool:
    return bool(machine.configs) and len(machine.configs) < len(ADDRESSES)


class Violation(AssertionError):
    """An invariant broke; its name is counted and the sequence fails (and shrinks)."""


class LifecycleMachine(RuleBasedStateMachine):
    """See the module docstring."""

    base: Path = Path("/tmp")

    def __init__(self) -> None:
        super().__init__()
        self.platform, self.clock = _World.get(self.base)
        self.workspace = f"ws-{uuid.uuid4().hex[:10]}"
        self.ws = self.platform.in_workspace(self.workspace)
        self.dir = self.base / self.workspace
        self.remote = self.dir / "remote.git"
        self.ci = self.dir / "ci"
        self.laptop = self.dir / "laptop"
        self.colleague = self.dir / "colleague"
        seed = self.dir / "seed"
        (seed / "benchmarks").mkdir(parents=True)
        (seed / "benchmarks" / ".keep").write_text("")
        (seed / "pyproject.toml").write_text(PYPROJECT)
        (seed / ".gitignore").write_text(".osmosis/\n")
        _git(seed, "init", "-q", "-b", "main")
        _git(seed, "add", "-A")
        _git(seed, "commit", "-q", "-m", "Start")
        _git(self.dir, "clone", "-q", "--bare", str(seed), str(self.remote))
        _git(self.dir, "clone", "-q", str(self.remote), str(self.ci))
        self.laptop_cloned = False
        self.colleague_ready = False
        self.configs: dict[str, tuple[str, int]] = {}
        """Address -> (model, attempts) on main."""
        self.requests = 0
        """Paid requests made so far: new, edited, renamed-and-edited configs, re-runs; a
        request of a staged config is two (its smoke run is a paid request of its own)."""
        self.staged_requests: Counter[str] = Counter()
        """Address -> requests of a staged config made there (each may pay one smoke run)."""
        self.moves: dict[str, str] = {}
        """Old address -> new of the plain renames committed in this sequence (an apply
        records each as a move once it sees the old address vanished)."""
        self.skip_smoke: set[str] = set()
        self.unstaged_runs: set[str] = set()
        """Full runs recorded at an address where no smoke stage applied (or was skipped):
        a plain rename into a staged address takes the run along, allowed as it was paid."""
        """Addresses whose smoke stage a person skipped (trailer or flag) in this sequence."""
        self.others: set[str] = set()
        """Runs that are not this repository's: the colleague's and the solo repository's."""
        self.stopped_by_others: set[str] = set()
        """Runs of others that their own repository's apply stopped (a replace there)."""
        self.ambiguous: set[str] = set()
        """Runs of others neither ours nor provably theirs (``_note_ambiguous``)."""
        self.same_token: dict[str, tuple[str, int]] = {}
        """Run id -> the body it was made from, (model, attempts per task), of the other
        repositories' runs made with this repository's token."""
        self.crashes = 0
        self.fault: str | None = None
        self.last_apply: Result | None = None
        self.commits = 0
        self.allow_mass_stop = False
        self.generator = False
        """Whether the generator (``GENERATOR_CELLS``) is on main."""
        self.reruns: list[tuple[str, str, float]] = []
        """(commit, address, Platform time) of each ``Osmosis-Rerun:`` request committed."""
        self.copied_lock: bytes | None = None
        """The CI clone's lockfile as a person copied it into another clone last time."""
        self.lockfiles: dict[Path, str] = {}
        """Lockfiles of the other clones and repositories -> the repository they belong to
        ("main" for this repository's other clones)."""
        self.tryout_machines = 0
        self._listing: dict[str, tuple[str, float]] | None = None
        self._committed_lock: bytes | None = None
        self._client = self.ws.client()

    # -- helpers ---------------------------------------------------------------

    def _cli(
        self,
        repo: Path,
        main: Callable[[list[str]], int],
        *args: str,
        token: str = TOKEN,
        platform: bool = True,
    ) -> Result:
        """One command through its entry point, as a shell would run it in ``repo``."""
        self._listing = None
        env = cli_env({"OSMOSIS_CRASH_LOG": str(self.dir / "crash.log"), "OSMOSIS_TOKEN": token})
        out, err = io.StringIO(), io.StringIO()
        common = ["--dir", str(repo)]
        if platform:
            common += ["--platform", self.platform.url, "--workspace", self.workspace]
        with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*common, "--no-color", "--log-format", "json", *args])
        result = Result(code, out.getvalue(), err.getvalue())
        _check_clean(result)
        return result

    def _commit_ci(self, message: str, *trailers: str) -> None:
        _git(self.ci, "add", "-A")
        args = ["commit", "-q", "--allow-empty", "-m", message]
        for trailer in trailers:
            args += ["-m", trailer]
        _git(self.ci, *args)
        _git(self.ci, "push", "-q", "origin", "main")
        self.commits += 1

    def _write(self, address: str, model: str, attempts: int) -> None:
        path = self.ci / "benchmarks" / f"{address}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_config(model, attempts))

    def _request(self, address: str, attempts: int) -> None:
        self.requests += 1
        if _staged(address, attempts):
            self.requests += 1
            self.staged_requests[address] += 1

    def _lockfile(self) -> dict[str, Any]:
        path = self.ci / "state" / "osmosis.lock"
        return tomllib.loads(path.read_text()) if path.exists() else {}

    def _entries(self) -> list[tuple[str, dict[str, Any]]]:
        """Every (address, entry) the lockfile records, current and history."""
        lock = self._lockfile()
        found = list(lock.get("runs", {}).items())
        found += [(h.get("address", ""), h) for h in lock.get("history", [])]
        return found

    def _pending_bodies(self) -> set[tuple[str, int]]:
        """The bodies, (model, attempts per task), of the submits whose outcome the
        lockfile still has pending (an intent; a smoke run's body is its own, 1 attempt)."""
        bodies = set()
        for entry in self._lockfile().get("runs", {}).values():
            intent = entry.get("intent") or {}
            if intent.get("op") == "submit":
                bodies.add(_body_of(intent.get("spec") or {}))
        return bodies

    def _recorded_ids(self) -> set[str]:
        return {e["run_id"] for _a, e in self._entries() if e.get("run_id")}

    def _set_faults(self, faults: Faults) -> None:
        self.platform.platform.faults = faults
        self.platform.platform.injector = FaultInjector(faults)

    def _violate(self, name: str, detail: str) -> None:
        VIOLATIONS[name] += 1
        if len(DETAILS) < 5:
            DETAILS.append(f"{name}: {detail}\n{self.last_apply}")
        raise Violation(f"invariant {name} violated: {detail}")

    # -- rules: configs --------------------------------------------------------

    def _address_reused(self, address: str) -> None:
        """A config is written at ``address`` that a plain rename left before an apply
        recorded the move: the design pairs a rename by a *vanished* address, so the two
        commits read as an edit of ``address`` and a new config where the run moved to, and
        the moved config is a new request (docs/plan-and-apply.md, `>` move)."""
        moved_to = self.moves.pop(address, None)
        recorded = self._lockfile().get("runs", {})
        if moved_to in self.configs and moved_to not in recorded and address in recorded:
            self._request(moved_to, self.configs[moved_to][1])

    def _commit_new(self, pick: int, model: str, attempts: int) -> None:
        address = _pick([a for a in ADDRESSES if a not in self.configs], pick)
        self._address_reused(address)
        self._write(address, model, attempts)
        self.configs[address] = (model, attempts)
        self._request(address, attempts)
        self._commit_ci(f"Add {address}")

    def _commit_edit(self, pick: int, failing: bool) -> None:
        """An edit of the attempts, or of the model to (or away from) the endpoint that
        answers errors (the run, or the smoke run, fails)."""
        address = _pick(sorted(self.configs), pick)
        model, attempts = self.configs[address]
        if failing:
            model = MODELS[0] if model == ERRORING else ERRORING
        else:
            attempts = attempts % 3 + 1
        self._write(address, model, attempts)
        self.configs[address] = (model, attempts)
        self._request(address, attempts)
        self._commit_ci(f"Edit {address}")

    def _commit_rename(self, pick: int, to: int, edit: bool) -> None:
        old = _pick(sorted(self.configs), pick)
        new = _pick([a for a in ADDRESSES if a not in self.configs], to)
        model, attempts = self.configs.pop(old)
        self._requests_gone(old)
        (self.ci / "benchmarks" / f"{old}.toml").unlink()
        self._address_reused(new)
        source = next((k for k, v in self.moves.items() if v == old), old)
        self.moves.pop(source, None)
        if edit:
            attempts = attempts % 3 + 1
            self._request(new, attempts)
        else:
            self.moves[source] = new
            # A plain rename is no new request: what was allowed at the old address moves.
            self.staged_requests[new] += self.staged_requests[old]
            recorded = self._lockfile().get("runs", {})
            if (
                _staged(new, attempts)
                and not _staged(old, attempts)
                and new not in self.skip_smoke
                and old not in recorded
                and source not in recorded
            ):
                # Not paid yet where no smoke stage applied (hle/x): the new address (tb/a)
                # runs its smoke stage before the full run, one run more than asked there.
                # An Osmosis-Skip-Smoke trailer that named hle/x names no config now (the
                # plan says so): it skipped no stage there and skips none at tb/a.
                self.requests += 1
                self.staged_requests[new] += 1
            if old in self.skip_smoke:
                self.skip_smoke.add(new)
        self._write(new, model, attempts)
        self.configs[new] = (model, attempts)
        self._commit_ci(f"Rename {old} to {new}")

    def _commit_delete(self, pick: int) -> None:
        address = _pick(sorted(self.configs), pick)
        for source in [k for k, v in self.moves.items() if v == address]:
            del self.moves[source]
        del self.configs[address]
        self._requests_gone(address)
        (self.ci / "benchmarks" / f"{address}.toml").unlink()
        self._commit_ci(f"Delete {address}")

    def _requests_gone(self, address: str) -> None:
        """Re-run requests of an address that is gone: the plan names them, nothing to run."""
        self.reruns = [r for r in self.reruns if r[1] != address]

    def _commit_generator(self) -> None:
        """A generator of two staged cells: the smoke run of one fails, so its full run is
        blocked (a standing block from then on); the other's body is the same as a
        hand-written config's of the same model and size (a twin, if both are asked)."""
        path = self.ci / "benchmarks" / f"{GENERATOR}.matrix.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_generator())
        for address in GENERATOR_CELLS:
            self._request(address, GENERATOR_ATTEMPTS)
        self.generator = True
        self._commit_ci("Add a generator")

    def _commit_trailer(self, pick: int, kind: str) -> None:
        address = _pick(sorted(self.configs), pick)
        if kind == "skip":
            self._commit_ci("Hold one back", f"Osmosis-Skip: {address}")
        elif kind == "skip_smoke":
            self.skip_smoke.add(address)
            self._commit_ci("Run it in full", f"Osmosis-Skip-Smoke: {address}")
        else:
            self._request(address, self.configs[address][1])
            self._commit_ci("Run it again", f"Osmosis-Rerun: {address}")
            self.reruns.append((_git(self.ci, "rev-parse", "HEAD"), address, self.clock()))

    # -- rules: the CI job -----------------------------------------------------

    def _ci_apply(self, mode: str) -> None:
        """The CI job after a merge (``ci`` is the only clone that pushes to main, so it is
        never behind): apply, apply and wait, or apply with the smoke stage skipped."""
        lock_path = self.ci / "state" / "osmosis.lock"
        before = lock_path.read_bytes() if lock_path.exists() else None
        args = ["--auto-approve", "--lock-timeout", "5"]
        if self.allow_mass_stop:
            args.append("--allow-mass-stop")  # a person read the refusal and agreed
            self.allow_mass_stop = False
        if mode == "apply_wait":
            args += ["--wait", "--wait-timeout", "60"]
        if mode == "apply_skip_smoke":
            args += ["--skip-smoke", "tb/*"]
            self.skip_smoke |= {a for a in self.configs if a.startswith("tb/")}
        active = {k for k, (v, _t) in self._statuses().items() if v in ACTIVE}
        result = self._cli(self.ci, apply_main, *args)
        self.last_apply = result
        stopped = {k for k, (v, _t) in self._statuses().items() if v == "stopped"} & active
        self._check_guard(result, stopped - self.others)
        self._check_exit("apply", result, faulted=self.fault is not None, wait=mode == "apply_wait")
        self._clear_fault()
        if PLANT == "lost-record":
            # The planted bug: what the apply recorded is lost, in the lockfile and in the
            # remote state record (harness seam only; the product has no such switch).
            if before is None:
                lock_path.unlink(missing_ok=True)
            else:
                lock_path.write_bytes(before)
            state_ref = GuardedRefs(self.platform.url, self.workspace).state
            subprocess.run(["git", "update-ref", "-d", state_ref], cwd=self.remote, check=False)
        self._commit_state()

    def _commit_state(self) -> None:
        path = self.ci / "state" / "osmosis.lock"
        now = path.read_bytes() if path.exists() else None
        if now != self._committed_lock:
            self._commit_ci("Record apply")
            self._committed_lock = now

    def _ci_drift(self) -> None:
        result = self._cli(self.ci, plan_main, "--detailed-exitcode", "--refresh", "full")
        self._check_exit("plan", result, faulted=self.fault is not None)
        self._clear_fault()

    def _ci_collect(self) -> None:
        result = self._cli(self.ci, apply_main, "--auto-approve", "--only", "download")
        self._check_exit("apply", result, faulted=self.fault is not None)
        self._clear_fault()
        self._commit_state()

    def _fresh_ci_clone(self) -> None:
        """The next CI job runs in a fresh clone (no ``.osmosis/`` of the last one)."""
        target = self.dir / f"ci-{self.commits}-{uuid.uuid4().hex[:6]}"
        _git(self.dir, "clone", "-q", str(self.remote), str(target))
        self.ci = target
        lock_path = target / "state" / "osmosis.lock"
        self._committed_lock = lock_path.read_bytes() if lock_path.exists() else None

    def _ci_apply_crashes(self, point: str) -> None:
        """A real process killed at a named crash point (the subprocess sample), then the
        next CI job runs on the lockfile it left (committed as found)."""
        FAULTS[f"crash:{point}"] += 1
        self._listing = None
        env = cli_env({"OSMOSIS_CRASH_AT": point})
        common = ["--dir", str(self.ci), "--platform", self.platform.url]
        done = subprocess.run(
            [str(BIN_DIR / "osmosis-apply"), *common, "--workspace", self.workspace]
            + ["--auto-approve", "--no-color", "--lock-timeout", "5"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        CHECKS["exit_codes_documented"] += 1
        if done.returncode not in (0, -9, 137, 1, 3):
            self._violate("exit_codes_documented", f"crashed apply exit {done.returncode}")
        self._commit_state()

    def _edited_saved_plan(self, pick: int, edit: str) -> None:
        """A saved plan (``osmosis-plan --out``) edited by hand before ``osmosis-apply
        PLANFILE``: a stop of a run that is not ours added, or a submit doubled. The apply
        must do nothing the recomputed plan does not (the invariants see what it did)."""
        planfile = self.dir / f"saved-{uuid.uuid4().hex[:6]}.plan.json"
        planned = self._cli(self.ci, plan_main, "--out", str(planfile))
        self._check_exit("plan", planned, faulted=self.fault is not None)
        if not planfile.exists():
            self._clear_fault()
            return
        saved = json.loads(planfile.read_text())
        actions: list[dict[str, Any]] = saved["plan"]["actions"]
        submits = [a for a in actions if a.get("action") in ("submit", "replace")]
        theirs = sorted(self.others & set(self._statuses()))
        if edit == "stop_unmanaged" and theirs and actions:
            run_id = _pick(theirs, pick)
            stop = {**actions[0], "action": "stop", "symbol": "-", "reason": "config_deleted"}
            stop.update(address="tb/theirs", run_id=run_id, spec=None, attempts=0)
            actions.append(stop)
        elif submits:
            actions.append(dict(submits[0]))
        planfile.write_text(json.dumps(saved))
        result = self._cli(self.ci, apply_main, str(planfile))
        self.last_apply = result
        self._check_exit("apply", result, faulted=self.fault is not None, saved=True)
        self._clear_fault()
        self._commit_state()

    # -- rules: the world ------------------------------------------------------

    def _time_passes(self, minutes: int) -> None:
        """Runs move on and end (finished or failed, as the Platform's simulation decides)."""
        self._listing = None
        self.clock.advance(minutes * 60)

    def _fault_on_next_command(self, kind: str) -> None:
        """A fault of the local Platform for the next command: an outage, a submit whose
        answer is lost (with, or without, the new run in the list), answered in the wrong
        shape, or 429 after the run was committed."""
        FAULTS[kind] += 1
        self.fault = kind
        self._set_faults(
            {
                "outage": Faults(benchmarks_disabled=True),
                "unknown_outcome": Faults(drop_after_submit_rate=1.0),
                "unknown_outcome_unlisted": Faults(drop_after_submit_rate=1.0, list_omit_rate=1.0),
                "wrong_shape": Faults(wrong_submit_reply_rate=1.0),
                "rate_limited": Faults(rate_limit_after_submit_rate=1.0, retry_after_s=0),
            }[kind]
        )

    def _clear_fault(self) -> None:
        if self.fault is not None:
            self._set_faults(Faults())
            self.fault = None

    def _colleague_run(self, pick: int, identical: bool, another_user: bool) -> None:
        """A colleague in the same workspace applies the same config, or another, with this
        repository's token (one service token for the organisation) or as another user."""
        if not self.colleague_ready:
            (self.colleague / "benchmarks").mkdir(parents=True)
            (self.colleague / ".gitignore").write_text(".osmosis/\n")
            (self.colleague / "pyproject.toml").write_text(
                '[tool.osmosis-reconciler]\nlock = "local"\n'
            )
            _git(self.colleague, "init", "-q", "-b", "main")
            self.colleague_ready = True
            self.lockfiles[self.colleague / "state" / "osmosis.lock"] = "colleague"
        address = _pick(sorted(self.configs), pick)
        model, attempts = self.configs[address]
        if not identical:
            model = MODELS[(MODELS.index(model) + 1) % 2]
        target = self.colleague / "benchmarks" / f"{address}.toml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_config(model, attempts))
        _git(self.colleague, "add", "-A")
        _git(self.colleague, "commit", "-q", "--allow-empty", "-m", "colleague")
        before = self._all_run_ids()
        active = {k for k, (v, _t) in self._statuses().items() if v in ACTIVE}
        self._clear_fault()
        token = COLLEAGUE_TOKEN if another_user else TOKEN
        result = self._cli(self.colleague, apply_main, "--auto-approve", token=token)
        made = self._all_run_ids() - before
        self.others |= made
        # The colleague's apply replaces its own run when its config there changed.
        self.stopped_by_others |= (
            {k for k, (v, _t) in self._statuses().items() if v == "stopped"} & active & self.others
        )
        if not another_user:
            self.same_token.update(dict.fromkeys(made, (model, attempts)))
        CHECKS["exit_codes_documented"] += 1
        if result.code not in (0, 3):
            self._violate("exit_codes_documented", f"colleague apply: {result}")

    def _laptop_tryout(self) -> None:
        """A try-out of main's configs against the embedded Platform on a laptop."""
        if not self.laptop_cloned:
            _git(self.dir, "clone", "-q", str(self.remote), str(self.laptop))
            self.laptop_cloned = True
        # A try-out before main had a lockfile wrote one for the embedded Platform (the
        # first-use default); the user moves it aside before pulling the team's.
        untracked = self.laptop / "state" / "osmosis.lock"
        if "?? state/" in _git(self.laptop, "status", "--porcelain", "--untracked-files=all"):
            untracked.rename(self.laptop / ".osmosis" / "moved-aside.lock")
        _git(self.laptop, "pull", "-q", "--ff-only", "origin", "main")
        local = LocalPlatform(self.laptop / ".osmosis" / "local-platform", auto_workspaces=True)
        for name in SECRET_NAMES:
            local.set_secret("local", name, SECRET_VALUE_PREFIX + name.lower())
        result = self._cli(
            self.laptop, apply_main, "--platform", "local", "--auto-approve", platform=False
        )
        self._check_exit("apply", result, faulted=False)
        changed = [
            line
            for line in _git(self.laptop, "status", "--porcelain", "--", "state").splitlines()
            if not line.startswith("??")
        ]
        if changed:
            self._violate(
                "remote_holds_only_this_platforms_refs",
                f"a try-out changed the committed lockfile: {changed}",
            )

    def _clone_copies_lockfile(self) -> None:
        """A second clone of this repository on the same machine, with a lockfile copied
        from the CI clone (the copy a person made the last time, or now): it applies main.
        Whatever it pays is a run of this repository; whatever it finds paid since its copy
        was made is not its evidence, and must not be paid again."""
        path = self.ci / "state" / "osmosis.lock"
        now = path.read_bytes() if path.exists() else None
        copy = self.copied_lock if self.copied_lock is not None else now
        self.copied_lock = now
        desk = self.dir / f"desk-{uuid.uuid4().hex[:6]}"
        _git(self.dir, "clone", "-q", str(self.remote), str(desk))
        if copy is not None:
            (desk / "state").mkdir(exist_ok=True)
            (desk / "state" / "osmosis.lock").write_bytes(copy)
        target = desk / "state" / "osmosis.lock"
        self.lockfiles[target] = "main"
        written = target.read_bytes() if target.exists() else None
        result = self._cli(desk, apply_main, "--auto-approve", "--lock-timeout", "5")
        self.last_apply = result
        if result.code == 1 and "is behind the one the last apply wrote" in result.text:
            # The state record on the remote knows a later apply: refused, nothing paid.
            OUTCOMES["copied lockfile: refused, behind the state record"] += 1
        else:
            OUTCOMES[f"copied lockfile: apply exit {result.code}"] += 1
            self._check_exit("apply", result, faulted=self.fault is not None)
        self._clear_fault()
        if target.exists() and target.read_bytes() != written:
            # What it recorded is committed and pushed, as the apply asks; the CI clone
            # pulls it (the next CI job runs on main).
            _git(desk, "add", "state/osmosis.lock")
            _git(desk, "commit", "-q", "-m", "Record apply from another clone")
            _git(desk, "push", "-q", "origin", "main")
            _git(self.ci, "pull", "-q", "--ff-only", "origin", "main")
            self._committed_lock = (self.ci / "state" / "osmosis.lock").read_bytes()
            self.commits += 1

    def _hand_edited_run_id(self, pick: int) -> None:
        """A person edits a recorded ``run_id`` by hand (to an id of no run) and commits it;
        the CI job applies; then the edit is reverted. Nothing may be paid for the address
        while its run, recorded under the old id, still runs (or ended)."""
        path = self.ci / "state" / "osmosis.lock"
        runs = self._lockfile().get("runs", {})
        address = _pick(sorted(a for a, e in runs.items() if e.get("run_id")), pick)
        run_id = runs[address]["run_id"]
        edited = f"bmr_{uuid.uuid4().hex[:20]}"
        path.write_text(path.read_text().replace(run_id, edited))
        self._commit_ci("Fix the run id by hand")
        self._committed_lock = path.read_bytes()
        self._ci_apply("apply")
        if "no longer lists it" in self.last_apply.text if self.last_apply else False:
            OUTCOMES["hand-edited run id: named as missing"] += 1
        path.write_text(path.read_text().replace(edited, run_id))
        self._commit_ci("Put the run id back")
        self._committed_lock = path.read_bytes()

    def _tryout_elsewhere(self) -> None:
        """A teammate on another machine reads the laptop's try-out lockfile (written
        against the laptop's embedded Platform) in a clone of their own, with their own
        embedded Platform: one message says so, and nothing is planned or paid there."""
        tryout = self.laptop / ".osmosis" / "try-out" / "osmosis.lock"
        if not tryout.exists():
            self._laptop_tryout()
        # Its try-out state: beside its embedded Platform, or, made before main had a
        # lockfile, the untracked one in state/ (never the team's committed lockfile).
        untracked = "?? state/" in _git(
            self.laptop, "status", "--porcelain", "--untracked-files=all"
        )
        source = tryout if tryout.exists() else self.laptop / "state" / "osmosis.lock"
        if not tryout.exists() and not untracked:
            OUTCOMES["no try-out lockfile on the laptop (nothing to try)"] += 1
            return
        self.tryout_machines += 1
        other = self.dir / f"teammate-{self.tryout_machines}"
        _git(self.dir, "clone", "-q", str(self.remote), str(other))
        committed = (other / "state" / "osmosis.lock").exists()
        target = other / (".osmosis/try-out/osmosis.lock" if committed else "state/osmosis.lock")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        recorded = tomllib.loads(source.read_text()).get("runs", {})
        local = LocalPlatform(other / ".osmosis" / "local-platform", auto_workspaces=True)
        for name in SECRET_NAMES:
            local.set_secret("local", name, SECRET_VALUE_PREFIX + name.lower())
        plan = self._cli(other, plan_main, "--platform", "local", platform=False)
        self._check_exit("plan", plan, faulted=False)
        applied = self._cli(
            other, apply_main, "--platform", "local", "--auto-approve", platform=False
        )
        self._check_exit("apply", applied, faulted=False)
        if not recorded:
            OUTCOMES["try-out lockfile without runs"] += 1
            return  # nothing of the laptop's to mistake: a try-out of its own here
        OUTCOMES["try-out lockfile of another machine"] += 1
        CHECKS["one_paid_run_per_request"] += 1
        paid = local.submit_count()
        if paid or "another machine" not in plan.text:
            self._violate(
                "one_paid_run_per_request",
                f"another machine's try-out lockfile: {paid} runs paid here\n{plan}\n{applied}",
            )

    def _rerun_beside_accept(self, pick: int) -> None:
        """A re-run request, then ``osmosis-results accept`` of a finished run and the
        lockfile commit it asks for (which must not consume the request)."""
        self._commit_trailer(pick, "rerun")
        # The person waits for a run to end and its outputs to be collected (an ended run
        # is what ``accept`` takes), then accepts one.
        self._time_passes(600)
        self._ci_collect()
        runs = self._lockfile().get("runs", {})
        done = sorted(
            address
            for address, entry in runs.items()
            if entry.get("status") == "finished"
            and entry.get("downloads")
            and entry.get("stage") != "smoke"
        )
        if not done:
            OUTCOMES["re-run beside accept: no finished run to accept"] += 1
            return
        address = _pick(done, pick)
        accepted = self._cli(
            self.ci, results_main, "accept", f"{address}@{runs[address]['run_name']}"
        )
        OUTCOMES[f"re-run beside accept: accept exit {accepted.code}"] += 1
        if accepted.code == 0:
            self._commit_ci("Accept the baseline")
            path = self.ci / "state" / "osmosis.lock"
            self._committed_lock = path.read_bytes()

    def _remote_added_later(self, model: str) -> None:
        """Another repository's first week, in the same workspace: started without a
        remote, applied, the lockfile committed; then ``origin`` is added and pushed, and a
        fresh clone of it must accept that lockfile (and pay nothing again)."""
        name = f"solo-{uuid.uuid4().hex[:6]}"
        solo = self.dir / name
        (solo / "benchmarks" / "tb").mkdir(parents=True)
        # Four attempts: no body of this repository's (1 to 3 attempts) is the same, so the
        # twin guard has no run of ours to block it on (the colleague rules cover twins).
        (solo / "benchmarks" / "tb" / "solo.toml").write_text(_config(model, SOLO_ATTEMPTS))
        (solo / ".gitignore").write_text(".osmosis/\n")
        (solo / "pyproject.toml").write_text("[tool.osmosis-reconciler]\n")
        _git(solo, "init", "-q", "-b", "main")
        _git(solo, "add", "-A")
        _git(solo, "commit", "-q", "-m", "Start without a remote")
        self._clear_fault()
        before = self._all_run_ids()
        self.lockfiles[solo / "state" / "osmosis.lock"] = name
        applied = self._cli(solo, apply_main, "--auto-approve")
        paid = self._all_run_ids() - before
        self.others |= paid
        self.same_token.update(dict.fromkeys(paid, (model, SOLO_ATTEMPTS)))
        self._check_exit("apply", applied, faulted=False)
        _git(solo, "add", "-A")
        _git(solo, "commit", "-q", "-m", "Record apply")
        bare = self.dir / f"{name}.git"
        _git(self.dir, "init", "-q", "--bare", "-b", "main", str(bare))
        _git(solo, "remote", "add", "origin", str(bare))
        _git(solo, "push", "-q", "-u", "origin", "main")
        clone = self.dir / f"{name}-clone"
        _git(self.dir, "clone", "-q", str(bare), str(clone))
        self.lockfiles[clone / "state" / "osmosis.lock"] = name
        name = "a_clone_accepts_a_lockfile_written_before_the_remote"
        CHECKS[name] += 1
        plan = self._cli(clone, plan_main, "--format", "json")
        if plan.code != 0 or any(item.get("action") == "submit" for item in plan.json()["actions"]):
            self._violate(name, f"the clone's plan:\n{plan}")
        again = self._cli(clone, apply_main, "--auto-approve")
        self._check_exit("apply", again, faulted=False)
        extra = self._all_run_ids() - before - paid
        self.others |= extra
        self.same_token.update(dict.fromkeys(extra, (model, SOLO_ATTEMPTS)))
        if len(paid) != 1 or extra:
            self._violate(name, f"paid {len(paid)} then {len(extra)} runs for one config")

    # -- the rules ---------------------------------------------------------------
    # One rule a variant: Hypothesis draws rules far more evenly than a rule's parameters,
    # and the coverage table counts each (``make lifecycle`` fails below 20).

    @initialize(pick=PICK, model=st.sampled_from(MODELS), attempts=st.integers(1, 3))
    def first_config(self, pick: int, model: str, attempts: int) -> None:
        """The team starts with one config on main."""
        self._rule("first_config")
        self._commit_new(pick, model, attempts)

    @precondition(lambda self: len(self.configs) < len(ADDRESSES))
    @rule(pick=PICK, model=st.sampled_from(MODELS), attempts=st.integers(1, 3))
    def commit_new_config(self, pick: int, model: str, attempts: int) -> None:
        self._rule("commit_new_config")
        self._commit_new(pick, model, attempts)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def commit_edited_config(self, pick: int) -> None:
        self._rule("commit_edited_config")
        self._commit_edit(pick, failing=False)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def commit_failing_config(self, pick: int) -> None:
        """The model switched to (or back from) the endpoint that answers errors."""
        self._rule("commit_failing_config")
        self._commit_edit(pick, failing=True)

    @precondition(_can_rename)
    @rule(pick=PICK, to=PICK)
    def commit_renamed_config(self, pick: int, to: int) -> None:
        self._rule("commit_renamed_config")
        self._commit_rename(pick, to, edit=False)

    @precondition(_can_rename)
    @rule(pick=PICK, to=PICK)
    def commit_renamed_and_edited_config(self, pick: int, to: int) -> None:
        self._rule("commit_renamed_and_edited_config")
        self._commit_rename(pick, to, edit=True)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def commit_deleted_config(self, pick: int) -> None:
        self._rule("commit_deleted_config")
        self._commit_delete(pick)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def rerun_trailer(self, pick: int) -> None:
        self._rule("rerun_trailer")
        self._commit_trailer(pick, "rerun")

    @precondition(_has_configs)
    @rule(pick=PICK)
    def skip_trailer(self, pick: int) -> None:
        self._rule("skip_trailer")
        self._commit_trailer(pick, "skip")

    @precondition(_has_configs)
    @rule(pick=PICK)
    def skip_smoke_trailer(self, pick: int) -> None:
        self._rule("skip_smoke_trailer")
        self._commit_trailer(pick, "skip_smoke")

    @rule()
    def apply(self) -> None:
        self._rule("apply")
        self._ci_apply("apply")

    @rule()
    def apply_wait(self) -> None:
        self._rule("apply_wait")
        self._ci_apply("apply_wait")

    @rule()
    def apply_skip_smoke(self) -> None:
        self._rule("apply_skip_smoke")
        self._ci_apply("apply_skip_smoke")

    @rule()
    def collect(self) -> None:
        self._rule("collect")
        self._ci_collect()

    @rule()
    def drift(self) -> None:
        self._rule("drift")
        self._ci_drift()

    @rule()
    def fresh_clone(self) -> None:
        self._rule("fresh_clone")
        self._fresh_ci_clone()

    @precondition(_has_configs)
    @rule(point=st.sampled_from(CRASH_POINTS))
    def crash(self, point: str) -> None:
        """A real ``osmosis-apply`` process killed at a crash point (a process start is the
        dearest step; one rule for every point keeps their share small; the point is the
        rule's argument, so a shrunk script names it)."""
        self._rule("crash")
        self._ci_apply_crashes(point)
        self.crashes += 1

    @rule(pick=PICK)
    def edited_saved_plan_stop(self, pick: int) -> None:
        """A saved plan with a stop of a run that is not ours added by hand."""
        self._rule("edited_saved_plan_stop")
        self._edited_saved_plan(pick, "stop_unmanaged")

    @rule()
    def edited_saved_plan_duplicate(self) -> None:
        """A saved plan with one of its submits doubled by hand."""
        self._rule("edited_saved_plan_duplicate")
        self._edited_saved_plan(0, "duplicate_submit")

    @rule()
    def time_passes(self) -> None:
        self._rule("time_passes")
        self._time_passes(5)

    @rule(minutes=st.sampled_from((60, 600)))
    def runs_end(self, minutes: int) -> None:
        self._rule("runs_end")
        self._time_passes(minutes)

    @rule()
    def fault_outage(self) -> None:
        self._rule("fault_outage")
        self._fault_on_next_command("outage")

    @rule()
    def fault_unknown_outcome(self) -> None:
        self._rule("fault_unknown_outcome")
        self._fault_on_next_command("unknown_outcome")

    @rule()
    def fault_unknown_outcome_unlisted(self) -> None:
        self._rule("fault_unknown_outcome_unlisted")
        self._fault_on_next_command("unknown_outcome_unlisted")

    @rule()
    def fault_wrong_shape(self) -> None:
        self._rule("fault_wrong_shape")
        self._fault_on_next_command("wrong_shape")

    @rule()
    def fault_rate_limited(self) -> None:
        self._rule("fault_rate_limited")
        self._fault_on_next_command("rate_limited")

    @precondition(_has_configs)
    @rule(pick=PICK)
    def colleague_identical_same_token(self, pick: int) -> None:
        self._rule("colleague_identical_same_token")
        self._colleague_run(pick, identical=True, another_user=False)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def colleague_identical_another_user(self, pick: int) -> None:
        self._rule("colleague_identical_another_user")
        self._colleague_run(pick, identical=True, another_user=True)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def colleague_different_same_token(self, pick: int) -> None:
        self._rule("colleague_different_same_token")
        self._colleague_run(pick, identical=False, another_user=False)

    @precondition(_has_configs)
    @rule(pick=PICK)
    def colleague_different_another_user(self, pick: int) -> None:
        self._rule("colleague_different_another_user")
        self._colleague_run(pick, identical=False, another_user=True)

    @rule()
    def laptop_tryout(self) -> None:
        self._rule("laptop_tryout")
        self._laptop_tryout()

    @precondition(lambda self: (self.ci / "state" / "osmosis.lock").exists())
    @rule()
    def clone_copies_lockfile(self) -> None:
        self._rule("clone_copies_lockfile")
        self._clone_copies_lockfile()

    @precondition(
        lambda self: any(e.get("run_id") for e in self._lockfile().get("runs", {}).values())
    )
    @rule(pick=PICK)
    def hand_edited_run_id(self, pick: int) -> None:
        self._rule("hand_edited_run_id")
        self._hand_edited_run_id(pick)

    @rule()
    def tryout_lockfile_of_another_machine(self) -> None:
        self._rule("tryout_lockfile_of_another_machine")
        self._tryout_elsewhere()

    @precondition(_has_configs)
    @rule(pick=PICK)
    def rerun_trailer_beside_accept(self, pick: int) -> None:
        self._rule("rerun_trailer_beside_accept")
        self._rerun_beside_accept(pick)

    @precondition(lambda self: not self.generator)
    @rule()
    def generator_blocked_by_smoke(self) -> None:
        self._rule("generator_blocked_by_smoke")
        self._commit_generator()

    @rule(model=st.sampled_from(MODELS[:2]))
    def remote_added_later(self, model: str) -> None:
        self._rule("remote_added_later")
        self._remote_added_later(model)

    def _rule(self, name: str) -> None:
        RULES[name] += 1

    # -- invariants ------------------------------------------------------------

    def _statuses(self) -> dict[str, tuple[str, float]]:
        """Run id -> (status, created) as the Platform lists them, read with its faults
        off (the checks look at the truth; the fault is for the next command); one listing
        a step."""
        if self._listing is not None:
            return self._listing
        local = self.platform.platform
        faults, injector = local.faults, local.injector
        local.faults, local.injector = Faults(), FaultInjector(Faults())
        try:
            self._listing = {
                run.id: (run.status, run.created_at.timestamp() if run.created_at else 0.0)
                for run in self._client.list_runs()
            }
        finally:
            local.faults, local.injector = faults, injector
        return self._listing

    def _all_run_ids(self) -> set[str]:
        return set(self._statuses())

    def _check_exit(
        self,
        command: str,
        result: Result,
        *,
        faulted: bool,
        saved: bool = False,
        wait: bool = False,
    ) -> None:
        CHECKS["exit_codes_documented"] += 1
        allowed = {"apply": {0, 3}, "plan": {0, 2}}[command]
        if faulted:
            allowed = allowed | {1}
        if "--allow-mass-stop" in result.text or saved:
            allowed = allowed | {1}  # a guard or a stale saved plan refused: exit 1
        blocked = re.search(r"(\d+) blocked(?: \((\d+) standing\))?", result.out)
        if command == "plan" and blocked and blocked.group(1) != blocked.group(2):
            # Items newly blocked (a smoke run that did not end well, a twin): a plan exits
            # 4; a block the lockfile already records is standing and exits 0, and an
            # apply never exits non-zero for a blocked item by itself (issue 34).
            allowed = allowed | {4}
        if command == "apply" and wait:
            allowed = allowed | {4}  # the wait ran out while runs were still active
        if result.code not in allowed:
            self._violate("exit_codes_documented", f"{command} exit {result.code}\n{result}")
        if command == "apply" and result.code == 0:
            CHECKS["unblocked_submits_accepted"] += 1
            if "refused" in result.out and "ok: submitted" not in result.out:
                self._violate("unblocked_submits_accepted", str(result))

    @invariant()
    def one_paid_run_per_request(self) -> None:
        CHECKS["one_paid_run_per_request"] += 1
        ours = self._all_run_ids() - self.others - self.ambiguous  # those the colleague paid
        if len(ours) > self.requests:
            self._violate(
                "one_paid_run_per_request", f"{len(ours)} runs paid for {self.requests} requests"
            )

    @invariant()
    def smoke_run_once_and_gates_the_full_run(self) -> None:
        """At most one smoke run per staged request at an address and digest; a full run of
        a staged config only after a smoke run of the same digest ended well (finished,
        created before it), or when a person skipped the stage."""
        name = "smoke_run_once_and_gates_the_full_run"
        CHECKS[name] += 1
        statuses = self._statuses()
        smokes: dict[tuple[str, str], set[str]] = {}
        passed: dict[str, float] = {}
        for address, entry in self._entries():
            if entry.get("stage") != "smoke" or not entry.get("run_id"):
                continue
            smokes.setdefault((address, entry.get("spec_digest", "")), set()).add(entry["run_id"])
            status, created = statuses.get(entry["run_id"], ("", 0.0))
            if status == "finished":
                digest = entry.get("spec_digest", "")
                passed[digest] = min(passed.get(digest, created), created)
        for (address, _digest), ids in smokes.items():
            if len(ids) > max(1, self.staged_requests[address]):
                self._violate(name, f"{address}: {len(ids)} smoke runs {sorted(ids)}")
        for address, entry in self._entries():
            attempts = entry.get("attempts")
            if entry.get("stage") == "smoke" or not isinstance(attempts, int):
                continue
            run_id = entry.get("run_id") or ""
            if not _staged(address, attempts) or address in self.skip_smoke:
                self.unstaged_runs.add(run_id)
                continue
            if run_id in self.unstaged_runs:
                continue  # paid at hle/x, say, and renamed to tb/a since: a move, not a run
            _status, created = statuses.get(entry.get("run_id", ""), ("", 0.0))
            smoke_at = passed.get(entry.get("spec_digest", ""))
            if smoke_at is None or smoke_at > created:
                self._violate(
                    name,
                    f"{address}: full run {entry.get('run_id')} without a smoke run that "
                    f"ended well\n{self.last_apply}",
                )

    def _bodies(self) -> dict[str, str]:
        """Run id -> the body it was submitted with (canonical JSON), read from the local
        Platform's own store: what each run does, whoever made it."""
        db = self.platform.platform.store.read()
        rows = db.execute(
            "SELECT r.id, r.body FROM runs r JOIN workspaces w ON w.id = r.workspace_id "
            "WHERE w.name = ?",
            (self.workspace,),
        ).fetchall()
        return {row[0]: json.dumps(json.loads(row[1]), sort_keys=True) for row in rows}

    def _askers(self) -> tuple[dict[str, set[tuple[str, str]]], Counter[str]]:
        """Who asked for which run: run id -> the (repository, address) pairs whose current
        lockfile entry is that run (every clone of this repository is one repository), and
        the bodies of submits still pending (an intent: the run may exist, unrecorded)."""
        recorded: dict[str, set[tuple[str, str]]] = {}
        pending: Counter[str] = Counter()
        lockfiles = [(self.ci / "state" / "osmosis.lock", "main"), *self.lockfiles.items()]
        for path, repository in lockfiles:
            if not path.exists():
                continue
            for address, entry in tomllib.loads(path.read_text()).get("runs", {}).items():
                if entry.get("run_id"):
                    recorded.setdefault(entry["run_id"], set()).add((repository, address))
                intent = entry.get("intent") or {}
                if intent.get("op") in ("submit", "replace") and intent.get("spec"):
                    pending[json.dumps(intent["spec"], sort_keys=True)] += 1
        return recorded, pending

    @invariant()
    def no_twin_runs_unless_allowed(self) -> None:
        """Never two active runs of one body in the workspace (read from the Platform's own
        store) unless this repository asked for each by a config of its own (two addresses
        of the same body; a submit still pending counts for a run not recorded yet): two
        clones of this repository, a copied or hand-edited lockfile, a colleague's
        identical run must not lead to a second run. (No rule allows a duplicate with
        ``--allow-duplicate``.)"""
        name = "no_twin_runs_unless_allowed"
        CHECKS[name] += 1
        statuses = self._statuses()
        groups: dict[str, list[str]] = {}
        for run_id, body in self._bodies().items():
            if statuses.get(run_id, ("", 0.0))[0] in ACTIVE:
                groups.setdefault(body, []).append(run_id)
        twins = {body: ids for body, ids in groups.items() if len(ids) > 1}
        if not twins:
            return
        recorded, pending = self._askers()
        for body, ids in twins.items():
            askers = set().union(*(recorded.get(run_id, set()) for run_id in ids))
            unrecorded = [run_id for run_id in ids if run_id not in recorded]
            repositories = {repository for repository, _address in askers}
            if len(repositories) > 1 or len(ids) > len(askers) + min(
                len(unrecorded), pending[body]
            ):
                self._violate(
                    name,
                    f"{len(ids)} active runs {sorted(ids)} of one body, asked for by "
                    f"{sorted(askers)} and {pending[body]} pending submit(s): {body}",
                )

    def _note_ambiguous(self) -> None:
        """Another repository's run made with this repository's token from the same body as
        a submit of ours whose outcome is pending, and not recorded yet: the Platform cannot
        tell it from the run our lost POST may have made, and the pending intent is the
        evidence the design accepts (docs/ownership.md; the plan matches within its
        clock-skew window, and a whole sequence lies inside that window). Adopting it is
        allowed; paying a second run is still checked. Found by the suite: the solo
        repository's run, and a colleague's 1-attempt run matching our smoke run's body."""
        pending = self._pending_bodies()
        recorded = self._recorded_ids()
        for run_id, body in self.same_token.items():
            if body in pending and run_id not in recorded and run_id in self.others:
                self.others.discard(run_id)
                self.ambiguous.add(run_id)

    @invariant()
    def unmanaged_never_touched(self) -> None:
        CHECKS["unmanaged_never_touched"] += 1
        self._note_ambiguous()
        recorded = self._recorded_ids() & self.others
        if recorded:
            self._violate("unmanaged_never_touched", f"recorded a colleague's run {recorded}")
        stopped = [
            run_id
            for run_id, (status, _t) in self._statuses().items()
            if run_id in self.others
            and status == "stopped"
            and run_id not in self.stopped_by_others
        ]
        if stopped:
            self._violate("unmanaged_never_touched", f"stopped a colleague's run {stopped}")

    @invariant()
    def remote_holds_only_this_platforms_refs(self) -> None:
        CHECKS["remote_holds_only_this_platforms_refs"] += 1
        refs = GuardedRefs(self.platform.url, self.workspace)
        allowed = {"refs/heads/main", refs.lock, refs.state}
        extra = [ref for ref in _remote_refs(self.remote) if ref not in allowed]
        if extra:
            self._violate("remote_holds_only_this_platforms_refs", f"unexpected refs {extra}")

    def _check_guard(self, result: Result, stopped: set[str]) -> None:
        """The stop guard is set (``max_stops``): an apply that stopped more runs than it
        allows must have been refused (exit 1, naming the guard and its flag)."""
        CHECKS["guards_checked"] += 1
        if len(stopped) > MAX_STOPS:
            self._violate("guards_checked", f"{len(stopped)} runs stopped past max_stops\n{result}")
        if (
            result.code == 1
            and "max_stops" in result.text
            and "--allow-mass-stop" not in result.text
        ):
            self._violate("guards_checked", f"the stop guard tripped without its flag\n{result}")
        if result.code == 1 and "--allow-mass-stop" in result.text:
            OUTCOMES["stop guard tripped"] += 1
            self.allow_mass_stop = True

    def _check_reruns(self) -> None:
        """By the end of a sequence every ``Osmosis-Rerun:`` request of an address that is
        still there was carried out (the lockfile's ``[reruns]`` names its commit, a run of
        the address was made after it, or the Platform refused it), or the plan still lists
        it as pending: none is consumed by a commit that did not act on it (``accept``)."""
        name = "rerun_requests_carried_out"
        CHECKS[name] += 1
        lock = self._lockfile()
        acted = lock.get("reruns", {})
        statuses = self._statuses()
        waiting = []
        for commit, address, at in self.reruns:
            if any(commit.startswith(c) or c.startswith(commit) for c in acted.get(address, [])):
                continue
            if address in lock.get("rejections", {}):
                continue
            if any(
                a == address and statuses.get(e.get("run_id") or "", ("", 0.0))[1] >= at
                for a, e in self._entries()
            ):
                continue
            waiting.append((commit, address))
        if not waiting:
            return
        plan = self._cli(self.ci, plan_main)
        for commit, address in waiting:
            if commit[:7] not in plan.text:
                self._violate(
                    name, f"{address}: the re-run request of {commit[:7]} was lost\n{plan}"
                )
            OUTCOMES["re-run request still pending at the end"] += 1

    def teardown(self) -> None:
        """By the end of a sequence every ended managed run's outputs are downloaded: the
        runs end, the CI job applies again (with the fault knobs off) until an apply submits
        and records nothing more (a full run after its smoke run, a resubmit, an adoption
        whose outputs the next apply fetches), every run then ended.
        (The clock is moved instead of ``--wait``: a wait sleeps at least a second.)"""
        try:
            if not hasattr(self, "ci"):
                return
            self._clear_fault()
            for _round in range(6):
                self.clock.advance(3600 * 48 / 300)
                before = self._all_run_ids()
                recorded = self._committed_lock
                result = self._cli(self.ci, apply_main, "--auto-approve", "--allow-mass-stop")
                if PLANT == "lost-record":
                    return
                self._commit_state()
                if self._all_run_ids() == before and self._committed_lock == recorded:
                    break  # converged: nothing paid, nothing recorded (an adoption is
                    # recorded by one apply and its outputs fetched by the next)
            self.one_paid_run_per_request()
            self.smoke_run_once_and_gates_the_full_run()
            self._check_reruns()
            CHECKS["ended_runs_downloaded"] += 1
            for address, entry in self._lockfile().get("runs", {}).items():
                if entry.get("stage") == "smoke":
                    OUTCOMES[f"smoke run left {entry.get('status')}"] += 1
                    continue  # a smoke run is never the address's outputs (docs/smoke.md)
                if entry.get("status") == "finished" and not entry.get("downloads"):
                    self._violate("ended_runs_downloaded", f"{address}: not downloaded\n{result}")
            for _address, entry in self._entries():
                if entry.get("stage") == "smoke":
                    OUTCOMES["smoke runs recorded"] += 1
                elif _staged(_address, entry.get("attempts") or 0):
                    OUTCOMES["full runs of staged configs"] += 1
        finally:
            self.last_apply = None
            self._client.close()


EXPECTED_RULES = tuple(
    sorted(
        name
        for name, value in vars(LifecycleMachine).items()
        if hasattr(value, "hypothesis_stateful_rule")
        or hasattr(value, "hypothesis_stateful_initialize_rule")
    )
)
"""Every rule, which the coverage table must show at least ``MIN_COVERAGE`` times."""


def machine_for(base: Path) -> type[LifecycleMachine]:
    """The machine class whose sequences live under ``base``."""
    return type("LifecycleMachine", (LifecycleMachine,), {"base": base})


@contextlib.contextmanager
def world(base: Path) -> Iterator[None]:
    try:
        yield
    finally:
        if _World.platform is not None:
            _World.platform.close()
            _World.platform = None


__all__ = [
    "CHECKS",
    "DETAILS",
    "EXPECTED_FAULTS",
    "EXPECTED_RULES",
    "FAULTS",
    "INVARIANTS",
    "OUTCOMES",
    "RULES",
    "VIOLATIONS",
    "LifecycleMachine",
    "TOKEN",
    "machine_for",
    "world",
]
