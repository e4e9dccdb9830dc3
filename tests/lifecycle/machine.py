"""A team's life as a Hypothesis state machine (issue 22): random sequences of what a team
does, driven through the real commands over real git repositories against the local
Platform served on loopback, with the invariants checked after every step.

The world of one sequence:

* a bare ``remote`` (main branch) and a ``ci`` clone that applies after every merge and
  commits the lockfile back (``lock = "git"``: the lock and state record on the remote);
* a ``laptop`` clone that tries configs out against the embedded Platform;
* a ``colleague`` repository in the same workspace with the same token (one service token
  for the organisation) whose runs are not this repository's;
* the served local Platform (one per process, a fresh workspace per sequence) on a clock
  moved only by the ``time_passes`` rule, and its fault knobs.

The local Platform's several users (``serve --user TOKEN=NAME``) had not landed on main when
this was written: the colleague uses the same token, which is the harder case for ownership
(the creator is the same); the "another user" variant is to be added with it.

``PLANT`` (environment ``LIFECYCLE_PLANT``, read by the harness only, never by the product)
plants a bug in the harness's CI job to show the invariants find and shrink one:
``lost-record`` discards what an apply recorded, the lockfile and the remote state record
(as if its record after the POST were never written), so the next apply pays again.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import time
import tomllib
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reconciler.cli.main import apply_main, plan_main
from reconciler.platform.local import Faults, LocalPlatform
from reconciler.platform.local.faults import FaultInjector
from reconciler.state.gitlock import GuardedRefs
from tests.integration.helpers import (
    BIN_DIR,
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
MODELS = ("openai/gpt-5.2", "openai/gpt-5", "anthropic/claude-sonnet-4.5")
ADDRESSES = ("tb/a", "tb/b", "tb/c", "hle/x")
MAX_STOPS = 1
PYPROJECT = f'[tool.osmosis-reconciler]\nlock = "git"\nlock_ttl = 30\nmax_stops = {MAX_STOPS}\n'
CRASH_POINTS = ("submit.before_post", "submit.after_post")

RULES: Counter[str] = Counter()
FAULTS: Counter[str] = Counter()
CHECKS: Counter[str] = Counter()
VIOLATIONS: Counter[str] = Counter()
"""Process-wide tallies across sequences, printed by ``tests.lifecycle.run``."""
INVARIANTS = (
    "one_paid_run_per_request",
    "ended_runs_downloaded",
    "unmanaged_never_touched",
    "remote_holds_only_this_platforms_refs",
    "unblocked_submits_accepted",
    "guards_checked",
    "exit_codes_documented",
)


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


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Team",
        "GIT_AUTHOR_EMAIL": "team@example.com",
        "GIT_COMMITTER_NAME": "Team",
        "GIT_COMMITTER_EMAIL": "team@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
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
    return smoke_config(model, attempts=attempts)


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
        _git(self.dir, "clone", "-q", str(self.remote), str(self.laptop))
        (self.colleague / "benchmarks").mkdir(parents=True)
        (self.colleague / ".gitignore").write_text(".osmosis/\n")
        (self.colleague / "pyproject.toml").write_text(
            '[tool.osmosis-reconciler]\nlock = "local"\n'
        )
        _git(self.colleague, "init", "-q", "-b", "main")
        self.configs: dict[str, tuple[str, int]] = {}
        """Address -> (model, attempts) on main."""
        self.requests = 0
        """Paid requests made so far: new, edited, renamed-and-edited configs, re-runs."""
        self.colleague_runs: set[str] = set()
        self.fault: str | None = None
        self.crash: str | None = None
        self.last_apply: Result | None = None
        self.commits = 0
        self.allow_mass_stop = False

    # -- helpers ---------------------------------------------------------------

    def _cli(self, repo: Path, main: Callable[[list[str]], int], *args: str) -> Result:
        env = cli_env({"OSMOSIS_CRASH_LOG": str(self.dir / "crash.log")})
        out, err = io.StringIO(), io.StringIO()
        common = ["--dir", str(repo), "--platform", self.platform.url, "--workspace"]
        with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*common, self.workspace, "--no-color", "--log-format", "json", *args])
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

    def _lockfile(self) -> dict[str, Any]:
        path = self.ci / "state" / "osmosis.lock"
        return tomllib.loads(path.read_text()) if path.exists() else {}

    def _recorded_ids(self) -> set[str]:
        lock = self._lockfile()
        ids = {e.get("run_id") for e in lock.get("runs", {}).values()}
        ids |= {h.get("run_id") for h in lock.get("history", [])}
        return {i for i in ids if i}

    def _set_faults(self, faults: Faults) -> None:
        self.platform.platform.faults = faults
        self.platform.platform.injector = FaultInjector(faults)

    def _violate(self, name: str, detail: str) -> None:
        VIOLATIONS[name] += 1
        raise Violation(f"invariant {name} violated: {detail}")

    # -- rules: configs --------------------------------------------------------

    @rule(address=st.sampled_from(ADDRESSES), model=st.sampled_from(MODELS))
    def commit_new_config(self, address: str, model: str) -> None:
        if address in self.configs:
            return
        RULES["commit_new_config"] += 1
        self._write(address, model, 1)
        self.configs[address] = (model, 1)
        self.requests += 1
        self._commit_ci(f"Add {address}")

    @precondition(lambda self: bool(self.configs))
    @rule(data=st.data())
    def commit_edited_config(self, data: st.DataObject) -> None:
        RULES["commit_edited_config"] += 1
        address = data.draw(st.sampled_from(sorted(self.configs)))
        model, attempts = self.configs[address]
        self._write(address, model, attempts % 3 + 1)
        self.configs[address] = (model, attempts % 3 + 1)
        self.requests += 1
        self._commit_ci(f"Edit {address}")

    @precondition(lambda self: bool(self.configs))
    @rule(data=st.data(), edit=st.booleans())
    def commit_renamed_config(self, data: st.DataObject, edit: bool) -> None:
        old = data.draw(st.sampled_from(sorted(self.configs)))
        free = [a for a in ADDRESSES if a not in self.configs]
        if not free:
            return
        RULES["commit_renamed_and_edited_config" if edit else "commit_renamed_config"] += 1
        new = data.draw(st.sampled_from(free))
        model, attempts = self.configs.pop(old)
        (self.ci / "benchmarks" / f"{old}.toml").unlink()
        if edit:
            attempts = attempts % 3 + 1
            self.requests += 1
        self._write(new, model, attempts)
        self.configs[new] = (model, attempts)
        self._commit_ci(f"Rename {old} to {new}")

    @precondition(lambda self: bool(self.configs))
    @rule(data=st.data())
    def commit_deleted_config(self, data: st.DataObject) -> None:
        RULES["commit_deleted_config"] += 1
        address = data.draw(st.sampled_from(sorted(self.configs)))
        del self.configs[address]
        (self.ci / "benchmarks" / f"{address}.toml").unlink()
        self._commit_ci(f"Delete {address}")

    @precondition(lambda self: bool(self.configs))
    @rule(data=st.data(), skip=st.booleans())
    def commit_trailer(self, data: st.DataObject, skip: bool) -> None:
        address = data.draw(st.sampled_from(sorted(self.configs)))
        if skip:
            RULES["skip_trailer"] += 1
            self._commit_ci("Hold one back", f"Osmosis-Skip: {address}")
        else:
            RULES["rerun_trailer"] += 1
            self.requests += 1
            self._commit_ci("Run it again", f"Osmosis-Rerun: {address}")

    # -- rules: the CI job -----------------------------------------------------

    @rule(wait=st.booleans())
    def ci_apply(self, wait: bool) -> None:
        RULES["apply_wait" if wait else "apply"] += 1
        _git(self.ci, "pull", "-q", "--ff-only", "origin", "main")
        before = (self.ci / "state" / "osmosis.lock").read_bytes() if self._has_lock() else None
        args = ["--auto-approve", "--lock-timeout", "5"]
        if self.allow_mass_stop:
            args.append("--allow-mass-stop")  # a person read the refusal and agreed
            self.allow_mass_stop = False
        if wait:
            args += ["--wait", "--wait-timeout", "60"]
        active = {k for k, v in self._statuses().items() if v in ("pending", "queued", "running")}
        result = self._cli(self.ci, apply_main, *args)
        self.last_apply = result
        stopped = {k for k, v in self._statuses().items() if v == "stopped"} & active
        self._check_guard(result, stopped - self.colleague_runs)
        self._check_exit("apply", result, faulted=self.fault is not None)
        self._clear_fault()
        if PLANT == "lost-record":
            # The planted bug: what the apply recorded is lost, in the lockfile and in the
            # remote state record (harness seam only; the product has no such switch).
            if before is None:
                (self.ci / "state" / "osmosis.lock").unlink(missing_ok=True)
            else:
                (self.ci / "state" / "osmosis.lock").write_bytes(before)
            state_ref = GuardedRefs(self.platform.url, self.workspace).state
            subprocess.run(["git", "update-ref", "-d", state_ref], cwd=self.remote, check=False)
        self._commit_state()

    def _has_lock(self) -> bool:
        return (self.ci / "state" / "osmosis.lock").exists()

    def _commit_state(self) -> None:
        if _git(self.ci, "status", "--porcelain", "--", "state"):
            self._commit_ci("Record apply")

    @rule()
    def ci_drift(self) -> None:
        RULES["drift"] += 1
        _git(self.ci, "pull", "-q", "--ff-only", "origin", "main")
        result = self._cli(self.ci, plan_main, "--detailed-exitcode", "--refresh", "full")
        self._check_exit("plan", result, faulted=self.fault is not None)
        self._clear_fault()

    @rule()
    def ci_collect(self) -> None:
        RULES["collect"] += 1
        _git(self.ci, "pull", "-q", "--ff-only", "origin", "main")
        result = self._cli(self.ci, apply_main, "--auto-approve", "--only", "download")
        self._check_exit("apply", result, faulted=self.fault is not None)
        self._clear_fault()
        self._commit_state()

    @rule()
    def fresh_ci_clone(self) -> None:
        RULES["fresh_clone"] += 1
        _git(self.ci, "push", "-q", "origin", "main")
        target = self.dir / f"ci-{self.commits}-{uuid.uuid4().hex[:6]}"
        _git(self.dir, "clone", "-q", str(self.remote), str(target))
        self.ci = target

    @precondition(lambda self: bool(self.configs))
    @rule(point=st.sampled_from(CRASH_POINTS))
    def ci_apply_crashes(self, point: str) -> None:
        """A real process killed at a named crash point (the subprocess sample), then the
        next CI job runs on the lockfile it left (committed as found)."""
        RULES["crash"] += 1
        FAULTS[f"crash:{point}"] += 1
        _git(self.ci, "pull", "-q", "--ff-only", "origin", "main")
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
        if done.returncode not in (0, -9, 137, 1, 3):
            self._violate("exit_codes_documented", f"crashed apply exit {done.returncode}")
        CHECKS["exit_codes_documented"] += 1
        self._commit_state()

    # -- rules: the world ------------------------------------------------------

    @rule(minutes=st.sampled_from((5, 60, 600)))
    def time_passes(self, minutes: int) -> None:
        """Runs move on and end (finished or failed, as the Platform's simulation decides)."""
        RULES["runs_end" if minutes >= 60 else "time_passes"] += 1
        self.clock.advance(minutes * 60)

    @rule(kind=st.sampled_from(("outage", "unknown_outcome", "rate_limited")))
    def fault_on_next_command(self, kind: str) -> None:
        RULES["fault"] += 1
        FAULTS[kind] += 1
        self.fault = kind
        if kind == "outage":
            self._set_faults(Faults(benchmarks_disabled=True))
        elif kind == "unknown_outcome":
            self._set_faults(Faults(drop_after_submit_rate=1.0))
        else:
            self._set_faults(Faults(rate_limit_after_submit_rate=1.0, retry_after_s=0))

    def _clear_fault(self) -> None:
        if self.fault is not None:
            self._set_faults(Faults())
            self.fault = None

    @precondition(lambda self: bool(self.configs))
    @rule(data=st.data(), identical=st.booleans())
    def colleague_run(self, data: st.DataObject, identical: bool) -> None:
        """A colleague (same workspace, same token) applies the same config, or another."""
        RULES["colleague_identical" if identical else "colleague_different"] += 1
        address = data.draw(st.sampled_from(sorted(self.configs)))
        model, attempts = self.configs[address]
        if not identical:
            model = MODELS[(MODELS.index(model) + 1) % len(MODELS)]
        target = self.colleague / "benchmarks" / f"{address}.toml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_config(model, attempts))
        _git(self.colleague, "add", "-A")
        _git(self.colleague, "commit", "-q", "--allow-empty", "-m", "colleague")
        before = self._all_run_ids()
        self._clear_fault()
        result = self._cli(self.colleague, apply_main, "--auto-approve")
        self.colleague_runs |= self._all_run_ids() - before
        if result.code not in (0, 3):
            self._violate("exit_codes_documented", f"colleague apply: {result}")

    @rule()
    def laptop_tryout(self) -> None:
        """A try-out of main's configs against the embedded Platform on a laptop."""
        RULES["laptop_tryout"] += 1
        # A try-out before main had a lockfile wrote one for the embedded Platform (the
        # first-use default); the user moves it aside before pulling the team's.
        untracked = self.laptop / "state" / "osmosis.lock"
        if "?? state/" in _git(self.laptop, "status", "--porcelain", "--untracked-files=all"):
            untracked.rename(self.laptop / ".osmosis" / "moved-aside.lock")
        _git(self.laptop, "pull", "-q", "--ff-only", "origin", "main")
        local = LocalPlatform(self.laptop / ".osmosis" / "local-platform", auto_workspaces=True)
        for name in SECRET_NAMES:
            local.set_secret("local", name, SECRET_VALUE_PREFIX + name.lower())
        env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}
        out, err = io.StringIO(), io.StringIO()
        with _environ(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = apply_main(["--dir", str(self.laptop), "--platform", "local", "--auto-approve"])
        result = Result(code, out.getvalue(), err.getvalue())
        _check_clean(result)
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

    # -- invariants ------------------------------------------------------------

    def _statuses(self) -> dict[str, str]:
        """Run id -> status as the Platform lists them, read with its faults off (the
        checks look at the truth; the fault is for the next command)."""
        if not hasattr(self, "_client"):
            self._client = self.ws.client()
        local = self.platform.platform
        faults, injector = local.faults, local.injector
        local.faults, local.injector = Faults(), FaultInjector(Faults())
        try:
            return {run.id: run.status for run in self._client.list_runs()}
        finally:
            local.faults, local.injector = faults, injector

    def _all_run_ids(self) -> set[str]:
        return set(self._statuses())

    def _check_exit(self, command: str, result: Result, *, faulted: bool) -> None:
        CHECKS["exit_codes_documented"] += 1
        allowed = {"apply": {0, 3} if not faulted else {0, 1, 3}, "plan": {0, 2}}[command]
        if "--allow-mass-stop" in result.text:
            allowed = allowed | {1}  # the stop guard refused: exit 1, documented
        if faulted and command == "plan":
            allowed = {0, 1, 2}
        if result.code not in allowed:
            self._violate("exit_codes_documented", f"{command} exit {result.code}\n{result}")
        if command == "apply" and result.code == 0:
            CHECKS["unblocked_submits_accepted"] += 1
            if "refused" in result.out and "ok: submitted" not in result.out:
                self._violate("unblocked_submits_accepted", str(result))

    @invariant()
    def one_paid_run_per_request(self) -> None:
        if not hasattr(self, "requests"):
            return
        CHECKS["one_paid_run_per_request"] += 1
        ours = self._all_run_ids() - self.colleague_runs
        if len(ours) > self.requests:
            self._violate(
                "one_paid_run_per_request", f"{len(ours)} runs paid for {self.requests} requests"
            )

    @invariant()
    def unmanaged_never_touched(self) -> None:
        if not hasattr(self, "colleague_runs"):
            return
        CHECKS["unmanaged_never_touched"] += 1
        recorded = self._recorded_ids() & self.colleague_runs
        if recorded:
            self._violate("unmanaged_never_touched", f"recorded a colleague's run {recorded}")
        stopped = [
            run_id
            for run_id, status in self._statuses().items()
            if run_id in self.colleague_runs and status == "stopped"
        ]
        if stopped:
            self._violate("unmanaged_never_touched", f"stopped a colleague's run {stopped}")

    @invariant()
    def remote_holds_only_this_platforms_refs(self) -> None:
        if not hasattr(self, "remote"):
            return
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
            RULES["stop_guard_tripped"] += 1
            self.allow_mass_stop = True

    def teardown(self) -> None:
        """By the end of a sequence every ended managed run's outputs are downloaded: the
        runs end, the CI job applies once more (with the fault knobs off)."""
        try:
            if not hasattr(self, "ci"):
                return
            self._clear_fault()
            self.clock.advance(3600 * 48 / 300)
            _git(self.ci, "pull", "-q", "--ff-only", "origin", "main")
            result = self._cli(self.ci, apply_main, "--auto-approve", "--wait", "--allow-mass-stop")
            if PLANT == "lost-record":
                return
            self._commit_state()
            self.one_paid_run_per_request()
            CHECKS["ended_runs_downloaded"] += 1
            for address, entry in self._lockfile().get("runs", {}).items():
                if entry.get("status") not in ("finished", "failed", "stopped"):
                    continue
                if entry.get("status") == "finished" and not entry.get("downloads"):
                    self._violate("ended_runs_downloaded", f"{address}: not downloaded\n{result}")
        finally:
            self.last_apply = None
            if hasattr(self, "_client"):
                self._client.close()


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
    "FAULTS",
    "INVARIANTS",
    "RULES",
    "VIOLATIONS",
    "LifecycleMachine",
    "TOKEN",
    "machine_for",
    "world",
]
