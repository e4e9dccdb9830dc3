"""``--changed-since`` at a root of many projects selects what a change affects (issue 38):
30 indirect-input cases on a real git repository, each checked against an oracle that
loads every project at the base and at HEAD (its resolved settings and its configs' spec
digests, the way a plan loads them) and calls a project affected when they differ.
The selection must hold every affected project (100 %) and at least 95 % of what it
selects must be affected."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from reconciler.cli.projects import root_keys_changed
from reconciler.config import load_configs
from reconciler.engine.context import resolve_settings
from reconciler.gitinfo import GitRepo
from reconciler.projects.discover import load_root
from reconciler.projects.select import select
from tests.support.git import commit, git
from tests.support.osmosis import smoke_config

ROOT = 'projects = ["teams/*", "labs/**/evals"]\nmax_attempts = 100\n'
PROJECTS = {
    "teams/a": 'id = "a"\n',
    "teams/b": 'id = "b"\n',
    "teams/c": 'id = "c"\nmax_attempts = 50\n',
    "teams/d": 'id = "d"\nafter = ["a"]\n',
    "labs/x/evals": 'id = "x"\n',
    "labs/y/z/evals": 'id = "y"\n',
}
GENERATOR = """[generate]
name = "sweep-{model}"

[base]
experiment = { benchmark = "terminal-bench-2-1" }
tasks = { task_names = ["terminal-bench/git-multibranch"] }
execution = { attempts_per_task = 1, max_concurrent_attempts = 1 }

[base.agent]
harness = "terminus-2"
model = { type = "provider", api_key_secret = "OPENAI_API_KEY" }

[[axis.model]]
name = "gpt"
agent.model.model = "openai/gpt-5.2"
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build(repo: Path) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / ".gitignore", ".osmosis/\n")
    write(repo / "osmosis.toml", ROOT)
    write(repo / "shared" / "README.md", "notes\n")
    for directory, settings in PROJECTS.items():
        write(repo / directory / "osmosis.toml", settings)
        for n in range(2):
            write(
                repo / directory / "benchmarks" / "tb" / f"r{n}.toml", smoke_config(attempts=n + 1)
            )
    write(repo / "teams" / "b" / "benchmarks" / "sweep.matrix.toml", GENERATOR)
    commit(repo, "base")


def fingerprint(root: Path) -> dict[str, object]:
    """Project id -> what a plan of it loads (settings and (address, digest) pairs)."""
    found: dict[str, object] = {}
    for project in load_root(root).projects:
        where = root / project.dir
        settings = resolve_settings(where, {})
        result = load_configs(
            where, settings.benchmarks, ignore=settings.ignore, policy=settings.policy
        )
        runs = sorted((r.address, r.spec_digest) for r in result.runs)
        issues = sorted(i.message for i in result.issues)
        # Where it lives is an input too: a moved project's jobs run in its new directory.
        found[project.id] = (project.dir, repr(_fields(settings)), runs, issues)
    return found


def _fields(settings: object) -> dict[str, object]:
    return {name: getattr(settings, name) for name in settings.__struct_fields__}  # type: ignore[attr-defined]


def at(repo: Path, rev: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", rev], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        subprocess.run(["git", "init", "-q", tmp], check=True)
        return fingerprint(Path(tmp))


def edit(path: str, text: str) -> Callable[[Path], None]:
    return lambda repo: write(repo / path, text)


def append(path: str, text: str) -> Callable[[Path], None]:
    return lambda repo: write(repo / path, (repo / path).read_text(encoding="utf-8") + text)


def run_git(*args: str) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        git(repo, *args)

    return change


def both(*changes: Callable[[Path], None]) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        for one in changes:
            one(repo)

    return change


CASES: list[tuple[str, Callable[[Path], None]]] = [
    ("config attempts", edit("teams/a/benchmarks/tb/r0.toml", smoke_config(attempts=7))),
    (
        "config model",
        edit("teams/b/benchmarks/tb/r1.toml", smoke_config("anthropic/claude-opus-4.5")),
    ),
    ("new config", edit("teams/c/benchmarks/tb/new.toml", smoke_config(attempts=3))),
    ("deleted config", run_git("rm", "-q", "teams/d/benchmarks/tb/r1.toml")),
    (
        "renamed config",
        run_git("mv", "teams/a/benchmarks/tb/r1.toml", "teams/a/benchmarks/tb/moved.toml"),
    ),
    (
        "config in a deep project",
        edit("labs/y/z/evals/benchmarks/tb/r0.toml", smoke_config(attempts=4)),
    ),
    (
        "generator axis",
        append(
            "teams/b/benchmarks/sweep.matrix.toml",
            '\n[[axis.model]]\nname = "claude"\nagent.model.model = "anthropic/claude-opus-4.5"\n',
        ),
    ),
    ("new generator", edit("teams/c/benchmarks/sweep.matrix.toml", GENERATOR)),
    ("deleted generator", run_git("rm", "-q", "teams/b/benchmarks/sweep.matrix.toml")),
    (
        "root policy",
        append(
            "osmosis.toml",
            '\n[[policy]]\nname = "no-gpt"\nmatch = ["**"]\nmodels = ["anthropic/*"]\n',
        ),
    ),
    ("root budget", edit("osmosis.toml", ROOT.replace("100", "90"))),
    ("root smoke", append("osmosis.toml", "\n[[smoke]]\nabove = 1\n")),
    ("root ignore", edit("osmosis.toml", 'ignore = ["tb/r1"]\n' + ROOT)),
    ("project budget", append("teams/a/osmosis.toml", "max_attempts = 10\n")),
    (
        "project policy",
        append("teams/b/osmosis.toml", '\n[[policy]]\nname = "p"\nmodels = ["openai/*"]\n'),
    ),
    ("project smoke", append("labs/x/evals/osmosis.toml", "\n[[smoke]]\nabove = 1\n")),
    ("project ignore", append("teams/d/osmosis.toml", 'ignore = ["tb/r0"]\n')),
    ("project overrides root", append("teams/c/osmosis.toml", "max_stops = 2\n")),
    ("project workspace", append("teams/a/osmosis.toml", 'workspace = "other"\n')),
    ("move a project", run_git("mv", "teams/b", "teams/b2")),
    (
        "move to a deep glob",
        both(edit("labs/q/.keep", ""), run_git("mv", "teams/c", "labs/q/evals")),
    ),
    ("new project", edit("teams/e/osmosis.toml", 'id = "e"\n')),
    (
        "two projects' configs",
        both(
            edit("teams/a/benchmarks/tb/r0.toml", smoke_config(attempts=9)),
            edit("labs/x/evals/benchmarks/tb/r1.toml", smoke_config(attempts=9)),
        ),
    ),
    (
        "root and a config",
        both(
            append("osmosis.toml", "max_stops = 4\n"),
            edit("teams/d/benchmarks/tb/r0.toml", smoke_config(attempts=5)),
        ),
    ),
    ("config of the dependency", edit("teams/a/benchmarks/tb/r1.toml", smoke_config(attempts=6))),
    ("shared notes only", edit("shared/README.md", "changed notes\n")),
    ("root readme only", edit("README.md", "hello\n")),
    ("a non-project dir", edit("teams/notes/todo.txt", "later\n")),
    ("a lockfile only", edit("teams/a/state/osmosis.lock", "# written by an apply\n")),
    ("a gitignored scratch file", edit("teams/b/.osmosis/scratch", "x\n")),
]


def test_thirty_indirect_input_cases(tmp_path: Path) -> None:
    assert len(CASES) == 30
    repo = tmp_path / "repo"
    build(repo)
    affected_total = selected_total = hits = 0
    misses: list[str] = []
    for name, change in CASES:
        base = git(repo, "rev-parse", "HEAD").strip()
        change(repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", name)
        before, after = at(repo, base), at(repo, "HEAD")
        affected = {i for i in set(before) | set(after) if before.get(i) != after.get(i)}
        gitrepo = GitRepo.discover(repo)
        assert gitrepo is not None
        root = load_root(repo)
        changed = gitrepo.changed_since(base)
        keys = root_keys_changed(root, gitrepo, base) if "osmosis.toml" in changed else None
        chosen = {s.project.id for s in select(root, changed=changed, root_keys=keys)}
        affected &= {p.id for p in load_root(repo).projects}  # removals are planned apart
        affected_total += len(affected)
        selected_total += len(chosen)
        hits += len(chosen & affected)
        if not affected <= chosen:
            misses.append(f"{name}: affected {sorted(affected)}, selected {sorted(chosen)}")
    assert not misses, misses
    assert affected_total > 30
    assert hits / selected_total >= 0.95, (hits, selected_total)
