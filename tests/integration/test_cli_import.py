"""End-to-end: ``osmosis-import`` against the local Platform over real loopback HTTP, into
empty git repositories in temp dirs (issue 14, items 4 and 5: "Done when").

Every example config is submitted, imported into an empty repository with the flags the
import asks for, and ``osmosis-plan`` there shows "No changes"; each refusal says exactly
what is wrong and writes nothing.
"""

from __future__ import annotations

import contextlib
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.config import load_configs
from reconciler.model import RunStatus
from reconciler.state.locking import hold_lock
from tests.support.bodies import tb_body
from tests.support.clock import FakeClock
from tests.support.git import git
from tests.support.osmosis import (
    EXAMPLES,
    Osmosis,
    Platform,
    RequestLog,
    example_addresses,
    init_repo,
    read_lock,
    start_platform,
)

# What the run's details (E5) leave open for each example, and the flags that answer it.
FLAGS: dict[str, list[str]] = {
    "comparisons/terminal-bench-codex-vs-claude-code": [
        "--model-type",
        "provider",
        "--secret",
        "1=OPENAI_API_KEY",
        "--secret",
        "2=ANTHROPIC_API_KEY",
    ],
    "cursor/terminal-bench-cursor-cli": [
        "--model-type",
        "provider",
        "--secret",
        "ANTHROPIC_API_KEY",
    ],
    "endpoints/terminal-bench-self-hosted": [
        "--model-type",
        "endpoint",
        "--base-url",
        "https://llm.internal.example.com/v1",
        "--header",
        "X-Routing-Pool=benchmarks",
        "--header",
        "X-Request-Source=osmosis-reconciler",
    ],
    "gdpval/claude-sonnet": ["--model-type", "provider", "--secret", "ANTHROPIC_API_KEY"],
    "hle/parity": ["--model-type", "provider"],
    "hosted/toolathlon-qwen-lora": ["--model-type", "hosted"],
    "terminal-bench/smoke": ["--model-type", "provider"],
}
# What an import with only --model-type asks for (None: nothing, it imports).
ASKS: dict[str, str | None] = {
    "comparisons/terminal-bench-codex-vs-claude-code": "pass --secret 1=NAME --secret 2=NAME",
    "cursor/terminal-bench-cursor-cli": "pass --secret 1=NAME",
    "endpoints/terminal-bench-self-hosted": (
        "pass --base-url 1=URL --header 1=NAME=VALUE (once per header) or --no-extra-headers"
    ),
    "gdpval/claude-sonnet": "pass --secret 1=NAME",
    "hle/parity": None,
    "hosted/toolathlon-qwen-lora": None,
    "terminal-bench/smoke": None,
}
KINDS = {
    "comparisons/terminal-bench-codex-vs-claude-code": "multi-agent",
    "endpoints/terminal-bench-self-hosted": "endpoint",
    "hosted/toolathlon-qwen-lora": "hosted",
    "terminal-bench/smoke": "provider",
}


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    # Runs stay pending until the test moves the clock: no downloads are due, so a
    # converged plan is exactly "No changes".
    server = start_platform(tmp_path / "platform", clock=FakeClock(), access_log=RequestLog())
    yield server
    server.close()


def empty_repo(path: Path, platform: Platform) -> Osmosis:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return Osmosis(path, platform)


def tree(repo: Path) -> dict[str, bytes]:
    """Every file and directory of the repository except .git (directories as b"/")."""
    out: dict[str, bytes] = {}
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        out[rel] = b"/" if p.is_dir() else p.read_bytes()
    return out


def submit_example(platform: Platform, address: str) -> tuple[str, str]:
    """Submit an example config's body (as ``load_configs`` builds it) with the client;
    returns the run's (id, name)."""
    loaded = load_configs(EXAMPLES.parent, "benchmarks")
    desired = next(d for d in loaded.runs if d.address == address)
    with contextlib.closing(platform.client()) as client:
        created = client.submit_run(desired.spec)
    return created.id, created.name


def example_data(address: str) -> dict:
    return tomllib.loads((EXAMPLES / f"{address}.toml").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("address", example_addresses())
def test_each_example_s_run_imports_into_an_empty_repo_and_plans_no_changes(
    tmp_path: Path, platform: Platform, address: str
) -> None:
    # A workspace of its own, so the plan sees this run only.
    ws = platform.in_workspace(f"ws-{address.replace('/', '-')}")
    run_id, run_name = submit_example(ws, address)
    osm = empty_repo(tmp_path / "repo", ws)

    model_type = FLAGS[address][:2]
    first = osm.import_(run_name, *model_type)
    if ASKS[address] is None:
        assert first.code == 0, first
    else:
        assert first.code == 1, first
        assert f"  {ASKS[address]}\n" in first.err, first
        assert not (osm.repo / "benchmarks").exists() and not (osm.repo / "state").exists()
        done = osm.import_(run_name, *FLAGS[address])
        assert done.code == 0, done

    lock = read_lock(osm.repo)
    (recorded_address, entry), *others = lock["runs"].items()
    assert not others
    written = osm.repo / "benchmarks" / f"{recorded_address}.toml"
    key = example_data(address)["experiment"]["benchmark"]
    assert recorded_address == f"{key}/{run_name}"
    # The generated config asks for what the example asked for, value for value.
    assert tomllib.loads(written.read_text(encoding="utf-8")) == example_data(address)
    assert written.read_text(encoding="utf-8").startswith(
        f"# Imported by osmosis-import from Osmosis Platform run {run_name} ({run_id})\n"
    )
    assert f"# Run page: {ws.url}/{ws.workspace}/benchmarks/{run_id}\n" in written.read_text()
    assert entry["run_id"] == run_id and entry["status"] == "pending"
    assert entry["imported_with"].startswith(f"osmosis-import {run_name} --model-type")

    plan = osm.plan("--detailed-exitcode")
    assert plan.code == 0, plan
    assert plan.out == "No changes. Benchmark runs match the configuration.\n"


def test_all_examples_applied_by_one_repo_import_into_another_with_the_same_digests(
    tmp_path: Path, platform: Platform
) -> None:
    source = Osmosis(init_repo(tmp_path / "source", examples=True), platform)
    assert source.apply("--auto-approve").code == 0
    source_lock = read_lock(source.repo)
    osm = empty_repo(tmp_path / "target", platform)
    for address, entry in sorted(source_lock["runs"].items()):
        result = osm.import_(entry["run_name"], *FLAGS[address])
        assert result.code == 0, result
        assert result.out.startswith(f"Imported run {entry['run_name']} ({entry['run_id']}) as ")
    target_lock = read_lock(osm.repo)
    # Same runs, same spec digests: the generated configs are the examples, up to layout.
    assert sorted((e["run_id"], e["spec_digest"]) for e in target_lock["runs"].values()) == sorted(
        (e["run_id"], e["spec_digest"]) for e in source_lock["runs"].values()
    )
    assert target_lock["serial"] == 7
    plan = osm.plan("--detailed-exitcode")
    assert plan.code == 0, plan
    assert plan.out == "No changes. Benchmark runs match the configuration.\n"
    # And a finished run is then only downloaded, never submitted again.
    assert platform.platform.clock is not None
    platform.platform.clock.advance(365 * 86400)  # type: ignore[attr-defined]
    later = osm.plan("--format", "json")
    assert {a["action"] for a in later.json()["actions"]} <= {"download"}, later


@pytest.mark.parametrize("address", sorted(KINDS), ids=lambda a: KINDS[a])
def test_the_imported_config_of_each_model_type_says_what_came_from_flags(
    tmp_path: Path, platform: Platform, address: str
) -> None:
    _, run_name = submit_example(platform, address)
    osm = empty_repo(tmp_path / "repo", platform)
    result = osm.import_(run_name, *FLAGS[address], "--format", "json")
    assert result.code == 0, result
    doc = result.json()
    assert doc["format_version"] == "1.0" and doc["summary"]["imported"] == 1
    (item,) = doc["runs"]
    expected_flags = {
        "multi-agent": [
            "agents[0].model.type",
            "agents[0].model.api_key_secret",
            "agents[1].model.type",
            "agents[1].model.api_key_secret",
        ],
        "endpoint": [
            "agents[0].model.type",
            "agents[0].model.base_url",
            "agents[0].model.extra_headers",
        ],
        "hosted": ["agents[0].model.type"],
        "provider": ["agents[0].model.type"],
    }[KINDS[address]]
    expected_inferred = {
        "multi-agent": [],
        "endpoint": ["agents[0].model.api_key_secret"],
        "hosted": ["agents[0].model.base_model", "agents[0].model.lora_model_name"],
        "provider": ["agents[0].model.api_key_secret"],
    }[KINDS[address]]
    assert (item["from_flags"], item["inferred"]) == (expected_flags, expected_inferred)
    assert item["file"] == "new" and item["outcome"] == "imported"
    assert (osm.repo / item["path"]).exists()


# --------------------------------------------------------------------------- refusals


def refused(osm: Osmosis, *args: str) -> str:
    """Run an import that must be refused without writing anything; returns stderr."""
    before = tree(osm.repo)
    result = osm.import_(*args)
    assert result.code == 1, result
    assert result.out == ""
    assert tree(osm.repo) == before, "a refused import must write nothing"
    return result.err


def test_refused_when_the_model_secret_is_ambiguous(tmp_path: Path, platform: Platform) -> None:
    run_id, name = submit_example(platform, "gdpval/claude-sonnet")
    osm = empty_repo(tmp_path / "repo", platform)
    err = refused(osm, name, "--model-type", "provider")
    assert err.endswith(
        f"Error: cannot import run {name} ({run_id}): its details (E5) do not say agent 1's "
        "model secret (the run resolved ANTHROPIC_API_KEY and OPENAI_API_KEY)\n"
        "  pass --secret 1=NAME\n"
    )


def test_a_refusal_in_json_is_one_document_on_stdout(tmp_path: Path, platform: Platform) -> None:
    run_id, name = submit_example(platform, "gdpval/claude-sonnet")
    osm = empty_repo(tmp_path / "repo", platform)
    result = osm.import_(name, "--model-type", "provider", "--format", "json")
    assert result.code == 1, result
    doc = result.json()
    assert doc["summary"] == {"imported": 0, "would_import": 0, "skipped": 0, "refused": 1}
    assert doc["runs"] == [
        {
            "run_id": run_id,
            "run_name": name,
            "outcome": "refused",
            "message": f"cannot import run {name} ({run_id}): its details (E5) do not say agent "
            "1's model secret (the run resolved ANTHROPIC_API_KEY and OPENAI_API_KEY)",
            "hint": "pass --secret 1=NAME",
        }
    ]
    assert tree(osm.repo) == {}


def test_refused_when_the_model_type_is_not_given(tmp_path: Path, platform: Platform) -> None:
    run_id, name = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    err = refused(osm, name)
    assert err.endswith(
        f"Error: cannot import run {name} ({run_id}): its details do not say the model type of "
        'agent 1 (agent 1: model "openai/gpt-5.2", model_ref "provider:openai/gpt-5.2")\n'
        "  pass --model-type 1=provider|endpoint|hosted\n"
    )


def test_refused_when_the_round_trip_does_not_describe_the_run(
    tmp_path: Path, platform: Platform
) -> None:
    # A run whose stored configuration holds a null, which no TOML config can write back.
    body = tb_body("m", execution_config={"attempts_per_task": 1, "max_retries": None})
    (run_id,) = platform.platform.seed_runs(
        platform.workspace, 1, body=body, status_mix={RunStatus.RUNNING: 1.0}
    )
    osm = empty_repo(tmp_path / "repo", platform)
    err = refused(osm, run_id, "--model-type", "provider", "--secret", "OPENAI_API_KEY")
    with contextlib.closing(platform.client()) as client:
        name = client.get_run(run_id).summary.name
    assert err.endswith(
        f"Error: cannot import run {name} ({run_id}): the generated config would not describe "
        "the run; differences (run -> config): - config.max_retries\n"
        "  nothing was written: the run holds values a benchmark config cannot express, so it "
        "cannot be imported\n"
    )
    assert not (osm.repo / ".osmosis").exists(), "the round trip's scratch copy is removed"


def test_refused_when_the_run_is_already_recorded(tmp_path: Path, platform: Platform) -> None:
    run_id, name = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    assert osm.import_(name, "--model-type", "provider").code == 0
    err = refused(osm, name, "--model-type", "provider")
    assert err.endswith(
        f"Error: run {name} ({run_id}) is already recorded at terminal-bench-2-1/{name} in "
        "state/osmosis.lock\n"
        f"  nothing to import; see it with `osmosis-state show terminal-bench-2-1/{name}`\n"
    )
    err = refused(osm, run_id, "--model-type", "provider", "--to", "benchmarks/smoke.toml")
    # (--to is relative to the repository root, like --state)
    assert err.endswith(
        f"  to record it under smoke instead: osmosis-state mv terminal-bench-2-1/{name} smoke\n"
    )


def test_refused_when_the_file_exists_and_update_keeps_its_comments(
    tmp_path: Path, platform: Platform
) -> None:
    run_id, name = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    target = osm.repo / "benchmarks" / "tb" / "smoke.toml"
    target.parent.mkdir(parents=True)
    mine = (EXAMPLES / "terminal-bench" / "smoke.toml").read_text(encoding="utf-8")
    mine = mine.replace("max_retries = 0", "max_retries = 3  # flaky tasks")
    target.write_text(mine, encoding="utf-8")
    err = refused(osm, name, "--model-type", "provider", "--to", "benchmarks/tb/smoke.toml")
    assert err.endswith(
        f"Error: cannot import run {name} ({run_id}): benchmarks/tb/smoke.toml already exists\n"
        "  pass --update to rewrite it from the run in place (its comments and layout are "
        "kept), or --to another path\n"
    )

    to = "benchmarks/tb/smoke.toml"
    dry = osm.import_(name, "--model-type", "provider", "--to", to, "--update", "--dry-run")
    assert dry.code == 0, dry
    assert "-max_retries = 3  # flaky tasks\n    +max_retries = 0  # flaky tasks\n" in dry.out
    assert target.read_text(encoding="utf-8") == mine

    done = osm.import_(name, "--model-type", "provider", "--to", to, "--update")
    assert done.code == 0, done
    assert "  updated benchmarks/tb/smoke.toml\n" in done.out
    # Only the value the run contradicts changed; the comments (the header too) stayed.
    original = (EXAMPLES / "terminal-bench" / "smoke.toml").read_text(encoding="utf-8")
    assert target.read_text(encoding="utf-8") == original.replace(
        "max_retries = 0", "max_retries = 0  # flaky tasks"
    )
    assert list(read_lock(osm.repo)["runs"]) == ["tb/smoke"]
    assert osm.plan("--detailed-exitcode").code == 0


def test_an_address_recorded_for_another_run_needs_force_and_an_ended_run(
    tmp_path: Path, platform: Platform
) -> None:
    first_id, first = submit_example(platform, "terminal-bench/smoke")
    _, second = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    to = "benchmarks/smoke.toml"
    assert osm.import_(first, "--model-type", "provider", "--to", to).code == 0
    err = refused(osm, second, "--model-type", "provider", "--to", to, "--update")
    assert f"smoke is already recorded in state/osmosis.lock for run {first} ({first_id})\n" in err
    assert "or pass --force to move that entry to the lockfile's history" in err
    err = refused(osm, second, "--model-type", "provider", "--to", to, "--update", "--force")
    assert f"smoke records run {first} ({first_id}), which is still pending; --force only " in err

    with contextlib.closing(platform.client()) as client:
        client.stop_run(first_id)
    done = osm.import_(second, "--model-type", "provider", "--to", to, "--update", "--force")
    assert done.code == 0, done
    lock = read_lock(osm.repo)
    assert lock["runs"]["smoke"]["run_name"] == second
    assert [(h["run_name"], h["reason"]) for h in lock["history"]] == [(first, "replaced")]


def test_import_under_a_held_apply_lock_names_the_holder_and_writes_nothing(
    tmp_path: Path, platform: Platform
) -> None:
    run_id, name = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    (osm.repo / "state").mkdir()
    before = tree(osm.repo)
    with hold_lock(
        osm.repo / "state" / ".osmosis.lock.held", command="osmosis-apply --wait"
    ) as held:
        result = osm.import_(name, "--model-type", "provider")
        assert tree(osm.repo).keys() - before.keys() == {"state/.osmosis.lock.held"}
    assert result.code == 1, result
    assert "running `osmosis-apply --wait`" in result.err
    assert f"(lock id {held.lock_id})" in result.err
    assert tree(osm.repo) == before, "no config is written when the lock cannot be taken"


def test_a_config_written_before_a_crash_is_recorded_by_the_same_import_again(
    tmp_path: Path, platform: Platform
) -> None:
    # The config is written before the lockfile entry: a crash between the two leaves the
    # file alone, and running the same import again finds it identical and records the run.
    run_id, name = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    dry = osm.import_(name, "--model-type", "provider", "--dry-run", "--format", "json").json()
    (item,) = dry["runs"]
    target = osm.repo / item["path"]
    target.parent.mkdir(parents=True)
    target.write_text(item["content"], encoding="utf-8")
    result = osm.import_(name, "--model-type", "provider")
    assert result.code == 0, result
    assert f"  kept {item['path']}\n" in result.out
    assert target.read_text(encoding="utf-8") == item["content"]
    assert read_lock(osm.repo)["runs"][item["address"]]["run_id"] == run_id


# --------------------------------------------------------------------------- dry run, --all


def test_dry_run_shows_the_file_and_changes_nothing(tmp_path: Path, platform: Platform) -> None:
    run_id, name = submit_example(platform, "hosted/toolathlon-qwen-lora")
    osm = empty_repo(tmp_path / "repo", platform)
    before = tree(osm.repo)
    result = osm.import_(name, "--model-type", "hosted", "--dry-run")
    assert result.code == 0, result
    assert tree(osm.repo) == before
    path = f"benchmarks/toolathlon-verified/{name}.toml"
    assert result.out.startswith(
        f"Would import run {name} ({run_id}) as toolathlon-verified/{name}; would write {path}:\n"
        f"    # Imported by osmosis-import from Osmosis Platform run {name} ({run_id})\n"
    )
    assert (
        '    [agents.model]\n    type = "hosted"\n    base_model = "Qwen/Qwen3-8B"\n' in result.out
    )
    assert result.out.endswith("Dry run: nothing was written.\n")
    as_json = osm.import_(name, "--model-type", "hosted", "--dry-run", "--format", "json").json()
    assert as_json["dry_run"] is True and as_json["lockfile"]["serial"] == 0
    (item,) = as_json["runs"]
    assert item["outcome"] == "would_import" and item["path"] == path
    assert tomllib.loads(item["content"]) == example_data("hosted/toolathlon-qwen-lora")
    assert tree(osm.repo) == before


def test_all_imports_what_it_can_reports_each_run_and_skips_recorded_ones(
    tmp_path: Path, platform: Platform
) -> None:
    runs = {
        address: submit_example(platform, address)
        for address in (
            "terminal-bench/smoke",
            "hle/parity",
            "gdpval/claude-sonnet",
            "hosted/toolathlon-qwen-lora",
        )
    }
    osm = empty_repo(tmp_path / "repo", platform)

    none = osm.import_("--all", "--model-type", "provider", "--created-since", "2999-01-01")
    assert (none.code, none.out) == (0, "Import: 0 imported, 0 already recorded, 0 refused.\n")
    finished = osm.import_("--all", "--model-type", "provider", "--status", "finished")
    assert finished.out.startswith("Import: 0 imported"), finished

    smoke_id, smoke = runs["terminal-bench/smoke"]
    one = osm.import_("--all", "--benchmark", "terminal-bench-2-1", "--model-type", "provider")
    assert one.code == 0, one
    assert one.out.startswith(
        f"Imported run {smoke} ({smoke_id}) as terminal-bench-2-1/{smoke}\n"
        f"  wrote benchmarks/terminal-bench-2-1/{smoke}.toml\n"
    )
    assert "Import: 1 imported, 0 already recorded, 0 refused.\n" in one.out

    every = osm.import_("--all", "--status", "pending,running", "--model-type", "provider")
    assert every.code == 3, every  # some imported, some refused: the lockfile holds those
    gdpval_id, gdpval = runs["gdpval/claude-sonnet"]
    hosted_id, hosted = runs["hosted/toolathlon-qwen-lora"]
    hle_id, hle = runs["hle/parity"]
    lines = every.out.splitlines()
    assert (
        f"Skipped run {smoke} ({smoke_id}): already recorded at terminal-bench-2-1/{smoke}" in lines
    )
    assert f"Imported run {hle} ({hle_id}) as hle/{hle}" in lines
    assert (
        f"Refused run {gdpval} ({gdpval_id}): cannot import run {gdpval} ({gdpval_id}): its "
        "details (E5) do not say agent 1's model secret (the run resolved ANTHROPIC_API_KEY and "
        "OPENAI_API_KEY)"
    ) in lines
    # A hosted run taken for a provider one has no secret to give its model: refused too.
    assert (
        f"Refused run {hosted} ({hosted_id}): cannot import run {hosted} ({hosted_id}): its "
        "details (E5) do not say agent 1's model secret (the run reports no secret a model "
        "may use)"
    ) in lines
    assert "Import: 1 imported, 1 already recorded, 2 refused." in lines
    lock = read_lock(osm.repo)
    assert sorted(lock["runs"]) == [f"hle/{hle}", f"terminal-bench-2-1/{smoke}"]
    assert lock["serial"] == 2
    assert lock["runs"][f"hle/{hle}"]["imported_with"] == (
        "osmosis-import --all --status pending,running --model-type provider"
    )

    doc = osm.import_("--all", "--model-type", "hosted", "--format", "json").json()
    outcomes = {r["run_id"]: r["outcome"] for r in doc["runs"]}
    assert outcomes == {
        smoke_id: "skipped",
        hle_id: "skipped",
        gdpval_id: "refused",
        hosted_id: "imported",
    }
    assert doc["summary"] == {"imported": 1, "would_import": 0, "skipped": 2, "refused": 1}
    assert doc["lockfile"] == {"path": "state/osmosis.lock", "serial": 3}


def test_usage_errors_exit_1_and_name_the_flag(tmp_path: Path, platform: Platform) -> None:
    osm = empty_repo(tmp_path / "repo", platform)
    for args, message in [
        ((), "Error: osmosis-import needs a RUN (its name or id), or --all\n"),
        (("x", "--all"), "Error: osmosis-import needs a RUN (name or id) or --all, not both\n"),
        (
            ("--all", "--to", "benchmarks/a.toml"),
            "Error: --to names one file; it cannot be used with --all\n",
        ),
        (
            ("x", "--status", "done"),
            "Error: --benchmark, --status and --created-since filter --all\n",
        ),
        (("--all", "--status", "done"), "Error: --status done: not a run status\n"),
        (
            ("x", "--model-type", "local"),
            "Error: --model-type local: the model type is one of provider, endpoint, hosted\n",
        ),
        (("x", "--format", "markdown"), "Error: osmosis-import prints text or json\n"),
    ]:
        result = osm.import_(*args)
        assert (result.code, result.out) == (1, ""), result
        assert message in result.err, result
    assert platform.requests is not None and platform.requests.count() == 0


def test_to_must_be_a_config_inside_the_benchmarks_directory(
    tmp_path: Path, platform: Platform
) -> None:
    _, name = submit_example(platform, "terminal-bench/smoke")
    osm = empty_repo(tmp_path / "repo", platform)
    for to, message in [
        ("elsewhere/a.toml", "not inside the benchmarks directory benchmarks/"),
        ("benchmarks/a.txt", "a config file name ends in .toml"),
        ("benchmarks/.hidden/a.toml", "a hidden file or directory is never read as a config"),
    ]:
        result = osm.import_(name, "--model-type", "provider", "--to", to)
        assert result.code == 1 and message in result.err, result
    assert tree(osm.repo) == {}
    outside = tmp_path / "outside"
    outside.mkdir()
    (osm.repo / "benchmarks").mkdir()
    (osm.repo / "benchmarks" / "link").symlink_to(outside)
    result = osm.import_(name, "--model-type", "provider", "--to", "benchmarks/link/a.toml")
    assert result.code == 1, result
    assert "Error: --to benchmarks/link/a.toml: leads outside benchmarks/ through a symlink\n" in (
        result.err
    )
    assert list(outside.iterdir()) == []
