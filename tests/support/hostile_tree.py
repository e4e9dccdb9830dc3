"""Hostile repository trees, every command run against them, and what each read and wrote.

The file-access rule (issue 36; docs/limits.md, "Files"): no command reads or writes
outside the repository because of what the repository holds. Each tree here is a real
repository after a real apply (a finished run, its downloads, its kept results, a
generator) with one hazard planted: a committed symlink to a file or a directory outside
(a config, a generator, the lockfile, ``state/``, ``results/``, a download directory), a
FIFO, a file past its size cap, or a directory a command is told to write into that is a
link elsewhere. ``COMMANDS`` is every command of the front door with the arguments that
make it touch the files in question.

Each command runs in its own process under a probe: a Python audit hook that records
every ``open`` (and every directory listing) whose resolved path is outside the
repository, by mode, before the call is made; an ``O_NOFOLLOW`` open of a final symlink,
which the kernel refuses, is not a read. Writes are seen twice: by the hook, and by
comparing a snapshot of the outside directory (names, sizes, bytes) before and after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
MARKER = "OUTSIDE-MARKER-5f1c"
"""Planted in every file outside the repository: found anywhere in the repository or in
a command's output, it was read."""

PROBE = r"""
import os, sys
OUTSIDE = os.path.realpath(sys.argv[1])
LOG = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
busy = []

def outside(path):
    real = os.path.realpath(path)
    return real == OUTSIDE or real.startswith(OUTSIDE + os.sep)

def hook(event, args):
    if busy or event not in ("open", "os.listdir", "os.scandir", "os.rename", "os.replace",
                             "os.remove", "os.mkdir", "os.link", "os.symlink", "os.truncate",
                             "os.chmod", "shutil.copyfile", "shutil.rmtree"):
        return
    busy.append(1)
    try:
        path = args[0]
        if isinstance(path, int) or path is None:
            return
        path = os.fsdecode(path)
        if event == "open":
            mode, flags = args[1], args[2] or 0
            writing = bool(flags & WRITE_FLAGS) or any(c in (mode or "") for c in "wax+")
            if (
                not writing
                and flags & getattr(os, "O_NOFOLLOW", 0)
                and os.path.islink(path)
                and not outside(os.path.dirname(path) or ".")
            ):
                return  # the kernel refuses it (ELOOP): nothing is read
            kind = "write" if writing else "read"
        elif event in ("os.listdir", "os.scandir"):
            kind = "read"
        elif event in ("os.rename", "os.replace", "os.link", "shutil.copyfile"):
            target = os.fsdecode(args[1]) if not isinstance(args[1], int) else path
            # A rename replaces a link at the target, it does not follow it: only the
            # directory it lands in says where the bytes go.
            where = os.path.dirname(target) or "."
            if event == "shutil.copyfile" and outside(target) or outside(where):
                os.write(LOG, f"write\t{target}\n".encode("utf-8", "replace"))
            if event == "shutil.copyfile" and outside(path):
                os.write(LOG, f"read\t{path}\n".encode("utf-8", "replace"))
            return
        else:
            kind = "write"
        if outside(path):
            os.write(LOG, f"{kind}\t{path}\n".encode("utf-8", "replace"))
    finally:
        busy.pop()

sys.addaudithook(hook)
from reconciler.cli.front import main
sys.exit(main(sys.argv[3:]))
"""


@dataclass
class Outcome:
    """One command against one tree."""

    command: str
    tree: str
    code: int
    text: str
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)

    @property
    def internal_error(self) -> bool:
        return (
            "internal error" in self.text
            or "Traceback" in self.text
            or self.code not in (0, 1, 2, 3)
        )

    @property
    def refused(self) -> bool:
        return self.code != 0


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry below ``directory`` (not following links): name -> kind and digest."""
    out: dict[str, str] = {}
    for top, dirs, files in os.walk(directory):
        for name in [*dirs, *files]:
            path = Path(top) / name
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[rel] = "special"
    return out


def probe(
    command: str,
    tree: str,
    repo: Path,
    outside: Path,
    argv: list[str],
    *,
    env: Mapping[str, str],
    timeout: float = 120,
) -> Outcome:
    """Run ``osmosis-reconciler ARGV`` in ``repo`` under the probe; what it read and wrote
    outside ``outside``'s tree, and whether outside bytes reached the repository."""
    log = repo.parent / f"probe-{os.getpid()}.log"
    log.unlink(missing_ok=True)
    before = snapshot(outside)
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(outside), str(log), *argv],
            cwd=repo,
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = -1, f"timed out after {timeout} s: {exc}"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    reads = sorted({line.split("\t", 1)[1] for line in lines if line.startswith("read\t")})
    writes = sorted({line.split("\t", 1)[1] for line in lines if line.startswith("write\t")})
    if snapshot(outside) != before:
        writes.append("(the outside directory changed)")
    leaked = [
        str(p.relative_to(repo))
        for p in repo.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and ".git" not in p.parts
        and p.stat().st_size < 4 * 1024 * 1024
        and MARKER.encode() in p.read_bytes()
    ]
    reads += [f"(outside bytes copied into {name})" for name in leaked]
    if MARKER in text:
        reads.append("(outside bytes in the output)")
    return Outcome(command, tree, code, text, reads, writes)


# --------------------------------------------------------------------------- trees


@dataclass(frozen=True)
class Layout:
    """Where the template's files are (relative to the repository root)."""

    config: str = "benchmarks/tb/c00.toml"
    address: str = "tb/c00"
    generator: str = "benchmarks/g/pair.matrix.toml"
    lockfile: str = "state/osmosis.lock"
    run_dir: str = ""
    """``.osmosis/benchmarks/<run-dir>`` of the finished run."""
    kept_dir: str = ""
    """``results/tb/c00/<run-dir>``."""
    import_run: str = ""
    """A run of the workspace that the repository does not manage (for osmosis-import)."""


def _link_file(repo: Path, outside: Path, rel: str, name: str, text: str) -> None:
    target = outside / name
    target.write_text(text, encoding="utf-8")
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def _move_out(repo: Path, outside: Path, rel: str, name: str) -> None:
    """Move ``rel`` outside (marking every file in it) and leave a link in its place."""
    source = repo / rel
    target = outside / name
    shutil.move(str(source), str(target))
    for path in [target, *target.rglob("*")] if target.is_dir() else [target]:
        if path.is_file() and path.suffix in (".toml", ".lock", ".csv", ".json"):
            with path.open("a", encoding="utf-8") as handle:
                handle.write(f"\n# {MARKER}\n" if path.suffix != ".json" else "")
    source.symlink_to(target, target_is_directory=target.is_dir())


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("r+b" if path.exists() else "wb") as handle:
        handle.truncate(size)


def _fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def outside_config(layout: Layout, repo: Path) -> str:
    text = (repo / layout.config).read_text(encoding="utf-8")
    return f"# {MARKER}: a planted token sk-planted-{MARKER}-000000\n" + text.replace(
        'RELIABILITY_INDEX = "0"', 'RELIABILITY_INDEX = "outside"'
    )


Plant = Callable[[Layout, Path, Path], None]


def _config_link(layout: Layout, repo: Path, outside: Path) -> None:
    text = outside_config(layout, repo)
    _link_file(repo, outside, "benchmarks/tb/creds.toml", "creds.toml", text)


def _generator_link(layout: Layout, repo: Path, outside: Path) -> None:
    text = (repo / layout.generator).read_text(encoding="utf-8")
    _link_file(
        repo, outside, "benchmarks/g/leak.matrix.toml", "leak.matrix.toml", f"# {MARKER}\n" + text
    )


def _named_generator_link(layout: Layout, repo: Path, outside: Path) -> None:
    text = (repo / layout.generator).read_text(encoding="utf-8")
    (outside / "pair.matrix.toml").write_text(f"# {MARKER}\n" + text, encoding="utf-8")
    (repo / layout.generator).unlink()
    (repo / layout.generator).symlink_to(outside / "pair.matrix.toml")


TREES: dict[str, Plant] = {
    "config link": _config_link,
    "generator link": _named_generator_link,
    "extra generator link": _generator_link,
    "benchmarks link": lambda lay, repo, out: _move_out(repo, out, "benchmarks", "benchmarks"),
    "lockfile link": lambda lay, repo, out: _move_out(repo, out, lay.lockfile, "osmosis.lock"),
    "state link": lambda lay, repo, out: _move_out(repo, out, "state", "state"),
    "results link": lambda lay, repo, out: _move_out(repo, out, "results", "results"),
    "kept file link": lambda lay, repo, out: _move_out(
        repo, out, f"{lay.kept_dir}/results.csv", "results.csv"
    ),
    "download link": lambda lay, repo, out: _move_out(repo, out, lay.run_dir, "run"),
    "output dir link": lambda lay, repo, out: _move_out(repo, out, "out", "out"),
    "config FIFO": lambda lay, repo, out: _fifo(repo / "benchmarks/tb/pipe.toml"),
    "lockfile FIFO": lambda lay, repo, out: _fifo(repo / lay.lockfile),
    "kept file FIFO": lambda lay, repo, out: _fifo(repo / lay.kept_dir / "results.csv"),
    "huge config": lambda lay, repo, out: _sparse(repo / "benchmarks/tb/huge.toml", 64 << 20),
    "huge lockfile": lambda lay, repo, out: _sparse(repo / lay.lockfile, 256 << 20),
    "huge kept file": lambda lay, repo, out: _sparse(
        repo / lay.kept_dir / "results.csv", 256 << 20
    ),
}
"""Each hostile tree: one hazard planted in a copy of the template repository."""


def plant_all(layout: Layout, repo: Path, outside: Path) -> None:
    """The one tree every command must refuse: a link on each command's path."""
    _config_link(layout, repo, outside)
    TREES["generator link"](layout, repo, outside)
    TREES["lockfile link"](layout, repo, outside)
    TREES["output dir link"](layout, repo, outside)


# --------------------------------------------------------------------------- commands


def commands(layout: Layout, platform: str, workspace: str) -> dict[str, list[str]]:
    """Every command of the front door, with the arguments that make it touch the files
    the trees plant hazards on (one entry per way in)."""
    common = ["--platform", platform, "--workspace", workspace, "--no-color"]
    ref = layout.address
    return {
        "plan --validate-only": ["plan", "--validate-only", *common],
        "plan": ["plan", *common],
        "plan --out": ["plan", "--out", "out/plan.json", *common],
        "apply": ["apply", "--auto-approve", *common],
        "apply PLANFILE": ["apply", "out/plan.json", *common],
        "show PLANFILE": ["show", "out/plan.json"],
        "fmt": ["fmt"],
        "fmt --check": ["fmt", "--check"],
        "fmt FILE": ["fmt", "benchmarks/tb/creds.toml", layout.generator],
        "expand": ["expand", layout.generator],
        "expand --write": ["expand", layout.generator, "--write", "out/expanded"],
        "import": ["import", layout.import_run, "--to", "benchmarks/tb/imported.toml", *common],
        "state list": ["state", "list", "--no-color"],
        "state show": ["state", "show", ref],
        "state forget": ["state", "forget", ref],
        "state mv": ["state", "mv", ref, "tb/moved"],
        "results": ["results", *common],
        "results --html": ["results", "--html", "out/report.html", *common],
        "results compare": ["results", "compare", ref, ref, *common],
        "logs": ["logs", ref, *common],
        "ci commit-message": ["ci", "commit-message", "--plan", "out/plan.json"],
        "ci comment --print": ["ci", "comment", "--body-file", "out/plan.json", "--print"],
        "ci drift-issue --print": ["ci", "drift-issue", "--plan-json", "out/plan.json", "--print"],
    }


# --------------------------------------------------------------------------- the template

CONFIG = """\
# Terminal-Bench 2.1 smoke config (hostile-tree suite).
[experiment]
benchmark = "terminal-bench-2-1"

[tasks]
task_names = ["terminal-bench/git-multibranch"]

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"

[agents.env]
RELIABILITY_INDEX = "{index}"

[execution]
attempts_per_task = 1
max_concurrent_attempts = 1
"""
GENERATOR = """\
[generate]
version = 1
address = "{model}"

[base.experiment]
benchmark = "terminal-bench-2-1"

[base.tasks]
task_names = ["terminal-bench/git-multibranch"]

[base.agent]
harness = "codex"

[base.execution]
attempts_per_task = 1
max_concurrent_attempts = 1

[[axis.model]]
key = "gpt-5-2"
agent.model = { type = "provider", model = "openai/gpt-5.2", api_key_secret = "OPENAI_API_KEY" }

[[axis.model]]
key = "gpt-5"
agent.model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }
"""


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OSMOSIS_", "GITHUB_"))}
    env["NO_COLOR"] = "1"
    return env


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _front(repo: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "osmosis-reconciler"), *argv],
        cwd=repo,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def build_template(root: Path, url: str, workspace: str) -> Layout:
    """``root/template``: a repository with a config and a two-cell generator, applied
    against the Platform at ``url`` until its runs finished and were downloaded, their
    results kept, and a saved plan at ``out/plan.json``; a second repository's run in the
    same workspace is left for ``osmosis-import``."""
    common = ["--platform", url, "--workspace", workspace, "--no-color"]
    repo = root / "template"
    (repo / "benchmarks" / "tb").mkdir(parents=True)
    (repo / "benchmarks" / "g").mkdir()
    (repo / "benchmarks" / "tb" / "c00.toml").write_text(CONFIG.format(index=0))
    (repo / "benchmarks" / "g" / "pair.matrix.toml").write_text(GENERATOR)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "configs")
    done = _front(repo, "apply", "--auto-approve", "--wait", "--wait-timeout", "120", *common)
    assert done.returncode == 0, done.stdout + done.stderr
    done = _front(repo, "results", *common)
    assert done.returncode == 0, done.stdout + done.stderr
    (repo / "out").mkdir()
    done = _front(repo, "plan", "--out", "out/plan.json", *common)
    assert done.returncode == 0, done.stdout + done.stderr

    other = root / "other"
    (other / "benchmarks" / "tb").mkdir(parents=True)
    (other / "benchmarks" / "tb" / "x.toml").write_text(CONFIG.format(index=99))
    _git(other, "init", "-q", "-b", "main")
    done = _front(other, "apply", "--auto-approve", *common, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr

    from reconciler.outputs.downloads import run_dir_name
    from reconciler.state.lockfile import parse

    def read_lockfile(path: Path):
        return parse(path.read_text(encoding="utf-8"), str(path))

    state = read_lockfile(repo / "state" / "osmosis.lock")
    address, entry = next(
        (a, e)
        for a, e in sorted(state.runs.items())
        if e.status == "finished" and e.downloads is not None and e.run_id is not None
    )
    assert entry.run_id is not None and entry.downloads is not None
    imported = read_lockfile(other / "state" / "osmosis.lock").runs["tb/x"]
    assert imported.run_id is not None
    kept = f"results/{address}/{run_dir_name(entry.run_name, entry.run_id)}"
    assert (repo / kept / "results.csv").is_file(), kept
    return Layout(
        address=address,
        run_dir=entry.downloads.directory,
        kept_dir=kept,
        import_run=imported.run_id,
    )


def prepare(template: Path, layout: Layout, tree: str | None, where: Path) -> tuple[Path, Path]:
    """A fresh copy of the template at ``where/repo`` with ``tree`` planted (None: every
    link of ``plant_all``), and its ``where/outside`` directory."""
    if where.exists():
        shutil.rmtree(where)
    repo, outside = where / "repo", where / "outside"
    shutil.copytree(template, repo, symlinks=True)
    outside.mkdir(parents=True)
    if tree is None:
        plant_all(layout, repo, outside)
    else:
        TREES[tree](layout, repo, outside)
    return repo, outside
