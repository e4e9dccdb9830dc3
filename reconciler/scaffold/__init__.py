"""What ``osmosis-reconciler init`` writes into a consumer repository, and how.

The files (``scaffold_files``): the ``.gitignore`` lines that keep ``.osmosis/`` (downloads,
the local Platform's data) and the apply lock's file out of git, a commented
``osmosis.toml``, the four workflows of docs/ci.md's set-up with the action pinned to one
ref, and one example config. The texts live in ``templates/`` beside this file; docs/ci.md
shows the same workflows (``tests/unit/test_scaffold.py`` holds the two together).

Writing (``write_scaffold``) never loses anything: a file that exists with other content is
kept unless ``force``; ``.gitignore`` only gains the lines it lacks; a repository that
already keeps its settings in ``pyproject.toml`` or ``.osmosis.toml`` gets no
``osmosis.toml`` (two settings files are an error); the example config is written only
while the configs directory holds no config. Running it twice changes nothing the second
time.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from reconciler.config.project import SETTINGS_FILES, settings_source

WORKFLOWS = ("osmosis-plan.yml", "osmosis-apply.yml", "osmosis-collect.yml", "osmosis-drift.yml")
WORKFLOW_DIR = ".github/workflows"
EXAMPLE = "terminal-bench/smoke.toml"
ACTION = "osmosis-ai/osmosis-reconciler"
_REF = "{ref}"
"""Where a workflow template names the action's ref (replaced as text: the templates hold
GitHub's own ``${{ }}`` expressions, so they are no format strings)."""


def template(name: str) -> str:
    """The text of template ``name`` (``osmosis-plan.yml``, ``osmosis.toml``, ...)."""
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def workflow(name: str, ref: str) -> str:
    """Workflow ``name`` with the action pinned to ``ref``."""
    return template(name).replace(_REF, ref)


class Outcome(enum.Enum):
    """What ``write_scaffold`` did with one file."""

    CREATED = "created"
    UPDATED = "updated"
    """``.gitignore``: the missing lines were appended."""
    OVERWRITTEN = "overwritten"
    UNCHANGED = "unchanged"
    KEPT = "kept"
    """It exists with other content and ``force`` was not given."""
    SKIPPED = "skipped"
    """Not needed here (settings kept elsewhere; configs already there)."""


@dataclass(frozen=True)
class Written:
    """One file's outcome, with the reason a person reads."""

    path: str
    outcome: Outcome
    note: str = ""


def scaffold_files(ref: str, benchmarks: str = "benchmarks") -> dict[str, str]:
    """Every file init writes, by path relative to the root (``.gitignore`` as its lines)."""
    files = {".gitignore": template("gitignore"), "osmosis.toml": template("osmosis.toml")}
    for name in WORKFLOWS:
        files[f"{WORKFLOW_DIR}/{name}"] = workflow(name, ref)
    files[f"{benchmarks}/{EXAMPLE}"] = template("smoke.toml")
    return files


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.init-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _gitignore(path: Path, wanted: str) -> Outcome:
    if not path.exists():
        _write(path, wanted)
        return Outcome.CREATED
    have = path.read_text(encoding="utf-8")
    present = {line.strip() for line in have.splitlines()}
    # ``.osmosis/`` (no slash in front) ignores the same directory as ``/.osmosis/``.
    present |= {"/" + line for line in present if not line.startswith(("/", "#"))}
    missing = [
        line
        for line in wanted.splitlines()
        if line and not line.startswith("#") and line not in present
    ]
    if not missing:
        return Outcome.UNCHANGED
    comment = wanted.splitlines()[0]
    lead = "" if have.endswith("\n") or not have else "\n"
    _write(path, have + lead + "\n".join([comment, *missing]) + "\n")
    return Outcome.UPDATED


def write_scaffold(root: Path, files: dict[str, str], *, force: bool = False) -> list[Written]:
    """Write ``files`` under ``root`` as the module docstring says; what happened to each."""
    done: list[Written] = []
    settings = settings_source(root)
    benchmarks_dir = next((root / p).parent.parent for p in files if p.endswith(EXAMPLE))
    has_configs = benchmarks_dir.is_dir() and any(benchmarks_dir.rglob("*.toml"))
    for rel, text in files.items():
        path = root / rel
        if rel == ".gitignore":
            done.append(Written(rel, _gitignore(path, text)))
            continue
        if rel in SETTINGS_FILES and settings is not None and settings.path != path:
            done.append(Written(rel, Outcome.SKIPPED, f"the settings are in {settings.name}"))
            continue
        if rel.endswith(EXAMPLE) and has_configs and not path.exists():
            shown = benchmarks_dir.relative_to(root)
            done.append(Written(rel, Outcome.SKIPPED, f"{shown}/ already holds configs"))
            continue
        if path.is_symlink() or (path.exists() and not path.is_file()):
            done.append(Written(rel, Outcome.KEPT, "not a regular file; left as it is"))
            continue
        if not path.exists():
            _write(path, text)
            done.append(Written(rel, Outcome.CREATED))
        elif path.read_text(encoding="utf-8", errors="replace") == text:
            done.append(Written(rel, Outcome.UNCHANGED))
        elif force:
            _write(path, text)
            done.append(Written(rel, Outcome.OVERWRITTEN))
        else:
            done.append(Written(rel, Outcome.KEPT, "it differs; --force overwrites it"))
    return done
