"""Many projects in one repository (issue 38, docs/projects.md): real git temp repos, the
local Platform over loopback HTTP, ``osmosis-plan`` / ``osmosis-apply`` at the root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.git import commit, git
from tests.support.osmosis import Osmosis, Platform, Result, smoke_config
from tests.support.projects import (
    ROOT_SETTINGS,
    add_project,
    project_config,
    projects_repo,
    write,
)


def entries(result: Result) -> dict[str, dict[str, Any]]:
    document = result.json()
    assert document["type"] == "projects", document
    return {p["id"]: p for p in document["projects"]}


def test_plan_at_the_root_plans_every_project_with_its_reason(
    tmp_path: Path, platform: Platform
) -> None:
    repo = projects_repo(tmp_path, {"a": "", "b": "", "c": ""})
    osm = Osmosis(repo, platform)
    result = osm.plan("--format", "json")
    assert result.code == 0, result
    found = entries(result)
    assert sorted(found) == ["a", "b", "c"]
    assert found["a"]["dir"] == "teams/a"
    assert found["a"]["reason"] == "all projects (--all)"
    assert found["a"]["actions"]["submit"] == 1
    assert result.json()["exit_code"] == 0
    assert platform.submits() == 0  # a plan submits nothing


def test_a_repository_without_projects_is_unchanged_and_refuses_root_flags(
    tmp_path: Path, platform: Platform
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / "benchmarks" / "tb" / "x.toml", smoke_config())
    commit(repo, "one project")
    osm = Osmosis(repo, platform)
    plan = osm.plan("--format", "json")
    assert plan.code == 0 and plan.json()["type"] == "plan", plan
    refused = osm.plan("--project", "a")
    assert refused.code == 1
    assert "--project selects projects, and this repository has none" in refused.err


def test_two_projects_claiming_one_id_is_an_error_naming_both(
    tmp_path: Path, platform: Platform
) -> None:
    repo = projects_repo(tmp_path, {"a": ""})
    add_project(repo, "teams/b", "a")
    result = Osmosis(repo, platform).plan()
    assert result.code == 1
    assert "two projects claim the id 'a': teams/a and teams/b" in result.err


def test_a_project_inherits_the_root_defaults_and_its_own_settings_win(
    tmp_path: Path, platform: Platform
) -> None:
    root = 'projects = ["teams/*"]\nmax_attempts = 1\n'
    repo = projects_repo(tmp_path, {"a": "", "b": "max_attempts = 100\n"}, root=root)
    for name in ("a", "b"):
        write(repo / "teams" / name / "benchmarks" / "tb" / "big.toml", smoke_config(attempts=5))
    result = Osmosis(repo, platform).plan("--format", "json", "--project", "a", "--project", "b")
    found = entries(result)
    assert found["a"]["exit_code"] == 1  # the inherited guard: 6 attempts > 1
    assert found["b"]["exit_code"] == 0
    assert result.code == 1  # the most severe project code
    assert result.json()["status"] == "partial"


def test_changed_since_selects_the_projects_whose_inputs_changed_with_reasons(
    tmp_path: Path, platform: Platform
) -> None:
    repo = projects_repo(tmp_path, {"a": "", "b": "", "c": ""})
    write(repo / "teams" / "b" / "benchmarks" / "tb" / "new.toml", smoke_config(attempts=3))
    write(repo / "README.md", "not an input\n")
    commit(repo, "touch b")
    osm = Osmosis(repo, platform)
    found = entries(osm.plan("--format", "json", "--changed-since", "HEAD~1"))
    assert list(found) == ["b"]
    assert found["b"]["reason"] == "planned because teams/b/benchmarks/tb/new.toml changed"
    write(repo / "osmosis.toml", ROOT_SETTINGS + "max_stops = 3\n")
    commit(repo, "root settings")
    found = entries(osm.plan("--format", "json", "--changed-since", "HEAD~1"))
    assert sorted(found) == ["a", "b", "c"]
    assert found["c"]["reason"] == "planned because osmosis.toml (max_stops) changed"


def test_moving_a_project_directory_keeps_its_id_and_its_runs(
    tmp_path: Path, platform: Platform
) -> None:
    repo = projects_repo(tmp_path, {"a": ""})
    osm = Osmosis(repo, platform)
    applied = osm.apply("--auto-approve", "--format", "json")
    assert applied.code == 0, applied
    assert platform.submits() == 1
    git(repo, "add", "-A")
    commit(repo, "lockfile")
    git(repo, "mv", "teams/a", "teams/renamed")
    commit(repo, "move a")
    found = entries(osm.plan("--format", "json", "--changed-since", "HEAD~1"))
    assert found["a"]["dir"] == "teams/renamed"
    assert found["a"]["actions"]["submit"] == 0
    again = osm.apply("--auto-approve", "--format", "json")
    assert again.code == 0, again
    assert platform.submits() == 1  # nothing submitted twice


def test_a_failed_project_skips_its_dependents_and_the_rest_complete(
    tmp_path: Path, platform: Platform
) -> None:
    repo = projects_repo(
        tmp_path,
        {
            "base": "",
            "child": 'after = ["base"]\n',
            "grandchild": 'after = ["child"]\n',
            "free": "",
        },
    )
    # base's config is invalid: its apply fails (exit 1) before it submits anything. (A
    # missing secret would not do: a blocked item is reported, never a failure by itself.)
    write(
        repo / "teams" / "base" / "benchmarks" / "tb" / "r0.toml",
        project_config("base").replace("attempts_per_task = 1", 'attempts_per_task = "one"'),
    )
    commit(repo, "break base")
    osm = Osmosis(repo, platform)
    result = osm.apply("--auto-approve", "--format", "json")
    document = result.json()
    found = entries(result)
    assert found["base"]["status"] == "failed"
    assert found["base"]["exit_code"] == 1
    assert any("attempts_per_task" in e for e in found["base"]["errors"]), found["base"]
    assert found["child"]["status"] == "skipped"
    assert found["grandchild"]["status"] == "skipped"
    assert found["free"]["status"] == "done"
    assert document["status"] == "partial"
    assert document["failed"] == ["base"]
    assert document["skipped"] == ["child", "grandchild"]
    assert result.code == 1
    assert platform.submits() == 1  # free's only: the dependents submitted nothing
    recorded = json.loads((repo / ".osmosis" / "projects-last-apply.json").read_text())
    assert recorded["undone"] == ["base", "child", "grandchild"]

    write(repo / "teams" / "base" / "benchmarks" / "tb" / "r0.toml", project_config("base"))
    commit(repo, "fix base")
    rerun = osm.apply("--auto-approve", "--failed", "--format", "json")
    assert rerun.code == 0, rerun
    assert list(entries(rerun)) == ["base", "child", "grandchild"]
    assert platform.submits() == 4  # free was not applied again


def test_disjoint_projects_in_one_workspace_have_their_own_locks(
    tmp_path: Path, platform: Platform
) -> None:
    from reconciler.config.project import load_project_settings
    from reconciler.state.gitlock import GuardedRefs
    from reconciler.state.locking import machine_lock_path

    repo = projects_repo(tmp_path, {"a": "", "b": ""})
    a = load_project_settings(repo / "teams" / "a")["id"]
    b = load_project_settings(repo / "teams" / "b")["id"]
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert machine_lock_path(platform.url, "w", env, a) != machine_lock_path(
        platform.url, "w", env, b
    )
    # A repository of one project keeps the key of every earlier version.
    assert machine_lock_path(platform.url, "w", env) == machine_lock_path(
        platform.url, "w", env, None
    )
    assert GuardedRefs(platform.url, "w", a).lock != GuardedRefs(platform.url, "w", b).lock
    assert GuardedRefs(platform.url, "w").key == GuardedRefs(platform.url, "w", None).key


def test_emit_matrix_lists_the_selected_projects(
    tmp_path: Path, platform: Platform, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = projects_repo(tmp_path, {"a": 'workspace = "wa"\n', "b": ""})
    result = Osmosis(repo, platform).plan("--emit-matrix")
    assert result.code == 0, result
    matrix = json.loads(result.out)
    assert matrix == {
        "include": [
            {"project": "a", "dir": "teams/a", "workspace": "wa", "reason": "all projects (--all)"},
            {"project": "b", "dir": "teams/b", "workspace": "", "reason": "all projects (--all)"},
        ]
    }


@pytest.mark.parametrize("setting", ["", 'on_project_remove = "stop"\n'])
def test_a_deleted_project_forgets_its_runs_unless_the_root_says_stop(
    tmp_path: Path, platform: Platform, setting: str
) -> None:
    repo = projects_repo(tmp_path, {"a": "", "gone": ""}, root=ROOT_SETTINGS + setting)
    osm = Osmosis(repo, platform)
    assert osm.apply("--auto-approve", "--format", "json").code == 0
    git(repo, "add", "-A")
    commit(repo, "lockfiles")
    git(repo, "rm", "-r", "-q", "teams/gone")
    commit(repo, "delete gone")
    plan = osm.plan("--format", "json", "--changed-since", "HEAD~1")
    assert plan.code == 0, plan
    found = entries(plan)
    verb = "stopped" if setting else "forgotten"
    assert found["gone"]["reason"].startswith(
        f"removed: teams/gone was deleted since HEAD~1; its runs are {verb}"
    )
    action = "stop" if setting else "forget"
    assert found["gone"]["actions"][action] == 1, found["gone"]
    statuses_before = platform.statuses()
    applied = osm.apply("--auto-approve", "--format", "json", "--changed-since", "HEAD~1")
    assert applied.code == 0, applied
    stopped = [r for r, s in platform.statuses().items() if s != statuses_before[r]]
    assert len(stopped) == (1 if setting else 0)
    assert platform.submits() == 2


def test_the_json_document_follows_the_published_schema(tmp_path: Path, platform: Platform) -> None:
    from jsonschema import Draft202012Validator

    from reconciler.cli.output import SCHEMA_FILE

    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))

    def check_schema(document: dict[str, Any]) -> None:
        errors = [e.message for e in validator.iter_errors(document)]
        assert errors == [], errors

    repo = projects_repo(tmp_path, {"a": "", "b": 'after = ["a"]\n'})
    check_schema(Osmosis(repo, platform).plan("--format", "json").json())
    applied = Osmosis(repo, platform).apply("--auto-approve", "--format", "json")
    assert applied.code == 0, applied
    check_schema(applied.json())


def test_the_pages_commands(tmp_path: Path, platform: Platform) -> None:
    import shlex

    from tests.support import docs

    (block,) = [
        b
        for b in docs.blocks(docs.DOCS / "projects.md")
        if b.lang == "sh" and "## Trying it on the local Platform" in b.headings
    ]
    repo = projects_repo(tmp_path, {"coding-agents": "", "browsing": 'after = ["coding-agents"]\n'})
    write(
        repo / "teams" / "browsing" / "benchmarks" / "tb" / "new.toml",
        project_config("browsing", 1),
    )
    commit(repo, "browsing grows")
    osm = Osmosis(repo, platform)
    outputs = {}
    for line in block.body.splitlines():
        name, *args = shlex.split(line)
        result = osm.run(name, *args)
        assert result.code == 0, result
        outputs[line] = result.out
    assert "coding-agents" in outputs["osmosis-plan --all"]
    assert "browsing" not in outputs["osmosis-plan --project coding-agents"]
    assert (
        "planned because teams/browsing/benchmarks/tb/new.toml changed"
        in outputs["osmosis-plan --changed-since HEAD~1"]
    )
    assert json.loads(outputs["osmosis-plan --emit-matrix"])["include"][0]["project"] == (
        "coding-agents"
    )
    assert platform.submits() == 3
    assert "No project selected." in outputs["osmosis-apply --failed --auto-approve"]


PAIRS_IN_MAKE_TEST = 4
"""``make test`` runs the first four of the 100 generated pairs (one of each kind and
checkout); ``make reliability`` runs all of them (tests/reliability/test_project_pairs.py)."""


def test_generated_pairs_disjoint_projects_never_wait_overlapping_ones_exclude(
    tmp_path: Path,
) -> None:
    from reconciler.local_platform import Faults
    from tests.support import project_pairs
    from tests.support.osmosis import start_platform

    gate = tmp_path / "gate"
    platform = start_platform(tmp_path / "platform", faults=Faults(hold_submits_while=str(gate)))
    try:
        template = project_pairs.template(tmp_path)
        tally = project_pairs.Tally()
        pairs = project_pairs.generate(PAIRS_IN_MAKE_TEST)
        assert {(p.kind, p.clones) for p in pairs} == {
            (kind, clones) for kind in ("disjoint", "overlapping") for clones in (False, True)
        }
        for pair in pairs:
            repo = project_pairs.copy_template(template, tmp_path / f"pair-{pair.index}" / "repo")
            project_pairs.run_pair(pair, platform, repo, gate, tally)
    finally:
        platform.close()
    assert tally.failures() == 0, tally.notes
    assert tally.held_together == tally.disjoint == 2
    assert tally.refused_naming_holder == sum(len(p.shared) for p in pairs)


def test_an_apply_waits_only_for_its_own_projects_lock(tmp_path: Path, platform: Platform) -> None:
    from reconciler.state.locking import hold_lock, machine_lock_path

    repo = projects_repo(tmp_path, {"a": "", "b": ""})
    osm = Osmosis(repo, platform)
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "run")}
    held = machine_lock_path(platform.url, platform.workspace, env, "a")
    held.parent.mkdir(parents=True, exist_ok=True)
    with hold_lock(held, timeout=0.0, command="another apply of a"):
        result = osm.apply("--auto-approve", "--format", "json", env=env)
    found = entries(result)
    assert found["b"]["status"] == "done"
    assert found["a"]["status"] == "failed"
    assert any("lock" in e.lower() for e in found["a"]["errors"]), found["a"]
    assert platform.submits() == 1  # b's; a submitted nothing while its lock was held


def test_an_identical_active_run_of_another_project_is_a_twin_until_allowed(
    tmp_path: Path, platform: Platform
) -> None:
    repo = projects_repo(tmp_path, {"a": "", "b": 'after = ["a"]\n'})
    for name in ("a", "b"):  # the same body in both projects of one workspace
        write(repo / "teams" / name / "benchmarks" / "tb" / "same.toml", smoke_config(attempts=3))
    commit(repo, "one run, twice")
    osm = Osmosis(repo, platform)
    applied = osm.apply("--auto-approve", "--format", "json")
    assert applied.code == 0, applied  # a blocked item is reported, never a failure
    found = entries(applied)
    assert found["a"]["actions"]["submit"] == 2
    assert found["b"]["actions"]["submit"] == 1
    assert found["b"]["actions"]["blocked"] == 1  # a's run of the same body is its twin
    assert platform.submits() == 3  # b paid for its own config only
    plan = osm.run("osmosis-plan", "--project", "b")
    assert "does exactly what this config asks" in plan.out, plan
    allowed = osm.apply(
        "--auto-approve", "--format", "json", "--project", "b", "--allow-duplicate", "tb/same"
    )
    assert allowed.code == 0, allowed
    assert entries(allowed)["b"]["actions"]["submit"] == 1
    assert platform.submits() == 4


def test_changed_since_inside_a_project_plans_its_changed_configs(
    tmp_path: Path, platform: Platform
) -> None:
    # What a matrix job runs: the plan inside the project's directory, below the git root.
    repo = projects_repo(tmp_path, {"a": "", "b": ""})
    write(repo / "teams" / "b" / "benchmarks" / "tb" / "new.toml", project_config("b", 1))
    commit(repo, "b grows")
    inside = Osmosis(repo / "teams" / "b", platform)
    plan = inside.plan("--format", "json", "--changed-since", "HEAD~1")
    assert plan.code == 0, plan
    assert {a["address"]: a["action"] for a in plan.json()["actions"]} == {"tb/new": "submit"}


def test_two_applies_at_one_root_at_once_both_keep_their_failures(tmp_path: Path) -> None:
    """Two applies at one root, both inside their projects' locks at once (the Platform
    holds every submit while the gate exists): each records the project that failed, so
    ``--failed`` re-runs both; a third apply refused a held project's lock reads the
    holder's command."""
    import time

    from reconciler.local_platform import Faults
    from tests.support.osmosis import LineReader, start_platform
    from tests.support.project_pairs import WAIT_S

    gate = tmp_path / "gate"
    platform = start_platform(tmp_path / "platform", faults=Faults(hold_submits_while=str(gate)))
    try:
        repo = projects_repo(tmp_path, dict.fromkeys("abcd", ""))
        for broken in ("b", "d"):  # an invalid config: the apply fails before it submits
            write(
                repo / "teams" / broken / "benchmarks" / "tb" / "r0.toml",
                project_config(broken).replace(
                    "attempts_per_task = 1", 'attempts_per_task = "one"'
                ),
            )
        commit(repo, "break b and d")
        osm = Osmosis(repo, platform)
        env = {"XDG_RUNTIME_DIR": str(tmp_path / "run")}
        gate.write_text("held\n", encoding="utf-8")
        procs = []
        try:
            for held, broken in (("a", "b"), ("c", "d")):
                proc = osm.popen(
                    "osmosis-apply",
                    *("--project", held, "--project", broken),
                    *("--auto-approve", "--format", "json"),
                    env=env,
                )
                procs.append((proc, LineReader(proc.stdout), LineReader(proc.stderr)))
                procs[-1][2].wait_for(f"{broken}: failed", timeout=WAIT_S)
            deadline = time.monotonic() + WAIT_S
            while platform.submits() < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert platform.submits() == 2  # a and c submitted, held inside their locks
            third = osm.apply(
                *("--project", "a", "--auto-approve", "--lock-timeout", "0"),
                *("--format", "json"),
                env=env,
            )
            refused = " ".join(entries(third)["a"]["errors"])
            assert f"running `osmosis-apply --dir {repo / 'teams' / 'a'} " in refused, refused
        finally:
            gate.unlink(missing_ok=True)
            texts = []
            for proc, out, err in procs:
                proc.wait(timeout=WAIT_S)
                texts.append(out.finish())
                err.finish()
                for stream in (proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
        ended = [json.loads(text)["projects"] for text in texts]
        assert [{p["id"]: p["status"] for p in e} for e in ended] == [
            {"a": "done", "b": "failed"},
            {"c": "done", "d": "failed"},
        ]
        recorded = json.loads((repo / ".osmosis" / "projects-last-apply.json").read_text())
        # The third apply's refusal of a came before the first apply applied a.
        assert recorded == {"failed": ["b", "d"], "skipped": [], "undone": ["b", "d"]}

        for broken in ("b", "d"):
            write(repo / "teams" / broken / "benchmarks" / "tb" / "r0.toml", project_config(broken))
        commit(repo, "fix b and d")
        rerun = osm.apply("--failed", "--auto-approve", "--format", "json", env=env)
        assert rerun.code == 0, rerun
        assert list(entries(rerun)) == ["b", "d"]
        assert platform.submits() == 4  # a and c were not applied again
    finally:
        platform.close()
