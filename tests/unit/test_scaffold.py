"""What ``osmosis-reconciler init`` writes (issue 37, finding 2): the files, on real disks.

The workflows are docs/ci.md's, pinned (one text, held together here), and pass actionlint;
the settings file is valid as written and with every line uncommented; the example config
validates; a second run changes nothing; nothing that differs is overwritten without force.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.config import load_configs
from reconciler.config.project import load_project_settings
from reconciler.scaffold import (
    EXAMPLE,
    WORKFLOW_DIR,
    WORKFLOWS,
    Outcome,
    scaffold_files,
    workflow,
    write_scaffold,
)
from reconciler.scaffold.pin import running_pin
from tests.support import docs
from tests.support.git import git
from tests.unit.test_workflows import run_actionlint

SHA = "35dc349762d8620362a6aecd6a1e52630a009bb6"


def outcomes(written: list) -> dict[str, Outcome]:
    return {w.path: w.outcome for w in written}


def test_the_ci_pages_workflows_are_inits_with_the_pages_pin() -> None:
    shown = docs.workflow_files()
    _, ref = docs.action_ref().split("@")
    assert sorted(shown) == sorted(WORKFLOWS)
    for name, text in shown.items():
        assert workflow(name, ref) == text, name


def test_the_written_workflows_pass_actionlint(tmp_path: Path) -> None:
    write_scaffold(tmp_path, scaffold_files(SHA))
    files = sorted((tmp_path / WORKFLOW_DIR).glob("*.yml"))
    assert [f.name for f in files] == sorted(WORKFLOWS)
    for path in files:
        assert f"uses: osmosis-ai/osmosis-reconciler@{SHA}\n" in path.read_text()
    done = run_actionlint(*files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_second_init_changes_nothing_and_a_changed_file_is_kept(tmp_path: Path) -> None:
    files = scaffold_files(SHA)
    first = outcomes(write_scaffold(tmp_path, files))
    assert set(first.values()) == {Outcome.CREATED}
    assert sorted(first) == sorted(files)
    before = {p: (tmp_path / p).read_bytes() for p in files}
    assert set(outcomes(write_scaffold(tmp_path, files)).values()) == {Outcome.UNCHANGED}
    assert {p: (tmp_path / p).read_bytes() for p in files} == before

    plan = tmp_path / WORKFLOW_DIR / "osmosis-plan.yml"
    plan.write_text(plan.read_text() + "# our own change\n")
    again = write_scaffold(tmp_path, scaffold_files("a" * 40))
    kept = [w for w in again if w.outcome is Outcome.KEPT]
    assert {w.path for w in kept} == {f"{WORKFLOW_DIR}/{n}" for n in WORKFLOWS}
    assert all("--force overwrites it" in w.note for w in kept)
    assert plan.read_text().endswith("# our own change\n")
    forced = outcomes(write_scaffold(tmp_path, scaffold_files("a" * 40), force=True))
    assert forced[f"{WORKFLOW_DIR}/osmosis-plan.yml"] is Outcome.OVERWRITTEN
    assert "# our own change" not in plan.read_text()
    assert f"@{'a' * 40}\n" in plan.read_text()


def test_gitignore_gains_only_the_lines_it_lacks(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n.osmosis/")
    written = outcomes(write_scaffold(tmp_path, scaffold_files(SHA)))
    assert written[".gitignore"] is Outcome.UPDATED
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules/", ".osmosis/"]
    assert lines[-1] == "/state/.osmosis.lock.held"
    assert "/.osmosis/" not in lines  # ".osmosis/" already ignores it
    assert outcomes(write_scaffold(tmp_path, scaffold_files(SHA)))[".gitignore"] is (
        Outcome.UNCHANGED
    )


def test_gitignore_comes_before_any_osmosis_directory_is_tracked(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    write_scaffold(tmp_path, scaffold_files(SHA))
    (tmp_path / ".osmosis" / "local-platform").mkdir(parents=True)
    (tmp_path / ".osmosis" / "local-platform" / "platform.sqlite3").write_text("x")
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / ".osmosis.lock.held").write_text("x")
    git(tmp_path, "add", "-A")
    tracked = git(tmp_path, "ls-files").splitlines()
    assert not [p for p in tracked if ".osmosis" in p], tracked


def test_settings_kept_elsewhere_get_no_osmosis_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.osmosis-reconciler]\nbenchmarks = "evals"\n')
    (tmp_path / "benchmarks" / "tb").mkdir(parents=True)
    (tmp_path / "benchmarks" / "tb" / "mine.toml").write_text("")
    written = write_scaffold(tmp_path, scaffold_files(SHA))
    skipped = {w.path: w.note for w in written if w.outcome is Outcome.SKIPPED}
    assert skipped == {
        "osmosis.toml": "the settings are in pyproject.toml",
        f"benchmarks/{EXAMPLE}": "benchmarks/ already holds configs",
    }
    assert not (tmp_path / "osmosis.toml").exists()
    assert load_project_settings(tmp_path) == {"benchmarks": "evals"}


def test_the_settings_file_is_valid_as_written_and_with_every_line_uncommented(
    tmp_path: Path,
) -> None:
    text = scaffold_files(SHA)["osmosis.toml"]
    (tmp_path / "osmosis.toml").write_text(text)
    assert load_project_settings(tmp_path) == {}
    uncommented = re.sub(r"^# (?=\w+ = |\[\[)", "", text, flags=re.M)
    assert uncommented != text
    (tmp_path / "osmosis.toml").write_text(uncommented)
    settings = load_project_settings(tmp_path)
    assert settings["max_attempts"] == 5000 and settings["policy"][0].name == "frontier-models"
    assert settings["smoke"]


def test_the_example_config_validates(tmp_path: Path) -> None:
    write_scaffold(tmp_path, scaffold_files(SHA))
    result = load_configs(tmp_path, "benchmarks")
    assert result.ok, result.issues
    assert [run.address for run in result.runs] == ["terminal-bench/smoke"]


def test_the_running_pin_is_a_release_tag_or_a_full_commit(tmp_path: Path) -> None:
    assert running_pin("0.2.0", tmp_path).ref == "v0.2.0"  # type: ignore[union-attr]
    here = Path(__file__).resolve().parents[2] / "reconciler"
    pin = running_pin("0.1.1.dev9+g1234567", here)
    assert pin is not None and re.fullmatch(r"[0-9a-f]{40}", pin.ref)
    if "direct_url" not in pin.source and "checkout" in pin.source:
        assert pin.ref == git(here.parent, "rev-parse", "HEAD")


@pytest.mark.parametrize("name", WORKFLOWS)
def test_this_repositorys_workflows_are_the_templates_with_the_local_action(name: str) -> None:
    ours = (docs.PROJECT_ROOT / WORKFLOW_DIR / name).read_text(encoding="utf-8")
    assert ours == workflow(name, "X").replace("osmosis-ai/osmosis-reconciler@X", "./")
