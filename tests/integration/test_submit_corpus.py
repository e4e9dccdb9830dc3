"""The plan is a promise: for every config of the submit corpus (``tests/corpus/submit/``),
the plan's verdict is what the local Platform does with it, and every fix works as typed.

Each corpus file is a valid config (it passes ``--validate-only``) whose header says what
the local Platform does with it: ``# verdict: +`` (accepted) or ``# verdict: ! <reason>``
(refused, and why). Against one loopback local Platform:

* ``osmosis-plan`` shows ``+`` exactly for the accepted ones and ``!`` with the same reason
  (and the Platform's own words) for the refused ones;
* ``osmosis-apply`` submits every ``+`` and nothing else, and for each run the Platform
  reports ``task_count`` and ``tasks x agents x attempts_per_task`` equal to the plan's;
* every ``!`` config, POSTed as it is anyway, is refused by the Platform for that reason;
* every fix of every ``!`` item, carried out literally (commands through ``bash -c`` from
  the repository root, edits as written), turns the item into ``+`` on the next plan, and
  apply then submits it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import tomlkit

from tests.support.osmosis import (
    BIN_DIR,
    TOKEN,
    Osmosis,
    Platform,
    RequestLog,
    cli_env,
    init_repo,
    plan_items,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "submit"
VERDICT = re.compile(r"^# verdict: (\+|! (\w+))$", re.M)
EXTRA_SECRETS = ("MSWEA_API_KEY",)
"""Seeded besides the helpers' secrets; GEMINI/WANDB/MISTRAL keys are the missing ones."""


@dataclass(frozen=True)
class SubmitCase:
    name: str
    text: str
    accepted: bool
    reason: str | None

    @property
    def address(self) -> str:
        return f"corpus/{self.name}"


def submit_cases() -> list[SubmitCase]:
    cases = []
    for path in sorted(CORPUS.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        found = VERDICT.search(text)
        assert found, f"{path.name} has no '# verdict:' line"
        cases.append(SubmitCase(path.stem, text, found.group(1) == "+", found.group(2)))
    return cases


CASES = submit_cases()


def test_the_corpus_covers_every_known_rule() -> None:
    accepted = [c for c in CASES if c.accepted]
    refused = [c for c in CASES if not c.accepted]
    assert len(CASES) >= 30 and len(accepted) >= 15 and len(refused) >= 15
    assert {c.reason for c in refused} == {
        "execution_invalid",
        "verifier_rejected",
        "judge_required",
        "harness_required",
        "harness_unsupported",
        "tasks_not_found",
        "tasks_empty",
        "benchmark_not_found",
        "benchmark_not_ready",
        "secret_missing",
    }


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Platform]:
    served = start_platform(tmp_path / "platform")
    for name in EXTRA_SECRETS:
        served.platform.set_secret(served.workspace, name, "sk-e2e-secret-value-extra")
    yield served
    served.close()


def corpus_repo(tmp_path: Path, cases: list[SubmitCase]) -> Path:
    return init_repo(
        tmp_path / "repo",
        configs={case.address: case.text for case in cases},
        message="Add the submit corpus",
    )


def raw_submit(platform: Platform, spec: dict[str, Any]) -> httpx.Response:
    """POST a body exactly as apply would, bypassing the plan."""
    return httpx.post(
        f"{platform.url}/api/cli/benchmark-runs",
        json=spec,
        headers={"Authorization": f"Bearer {TOKEN}", "X-Osmosis-Workspace": platform.workspace},
        timeout=30,
    )


ISSUE_REASONS = {
    "execution_config.attempts_per_task": "execution_invalid",
    "execution_config.max_concurrent_attempts": "execution_invalid",
    "execution_config.verifier_secrets": "verifier_rejected",
    "execution_config.judge_api_key_secret": "judge_required",
    "execution_config.judge_model": "judge_required",
    "tasks_config.task_names": "tasks_not_found",
    "tasks_config.categories": "tasks_not_found",
    "tasks_config": "tasks_empty",
}


def refusal(answer: httpx.Response) -> tuple[str, str]:
    """(reason, the Platform's first message) of a refused submit, in the plan's terms."""
    body = answer.json()
    if answer.status_code == 409:
        return "benchmark_not_ready", body["error"]
    if answer.status_code == 404 and body.get("code") == "BENCHMARK_NOT_FOUND":
        return "benchmark_not_found", body["error"]
    if answer.status_code == 404 and body["error"].startswith("Secret(s) not found"):
        return "secret_missing", body["error"]
    assert answer.status_code == 400, body
    issue = body["issues"][0]
    key, message = issue["key"], issue["message"]
    if re.fullmatch(r"agents\.\d+\.harness", key):
        return ("harness_unsupported" if "official scaffold" in message else "harness_required"), (
            message
        )
    return ISSUE_REASONS[key], message


def test_plan_verdicts_and_costs_are_what_the_platform_does(
    tmp_path: Path, platform: Platform
) -> None:
    osm = Osmosis(corpus_repo(tmp_path, CASES), platform)
    assert osm.plan("--validate-only").code == 0
    items = plan_items(osm.plan("--format", "json"))
    assert sorted(items) == sorted(c.address for c in CASES)
    for case in CASES:
        item = items[case.address]
        want = ("submit", "new_config") if case.accepted else ("blocked", case.reason)
        assert (item["action"], item["reason"]) == want, (case.name, item["details"])

    result = osm.apply("--auto-approve")
    # The rest are applied; the blocked ones are reported as not attempted, each with its
    # fix, and do not set the exit code by themselves (docs/plan-and-apply.md, exit codes).
    assert result.code == 0, result
    accepted = [c for c in CASES if c.accepted]
    blocked = [c for c in CASES if not c.accepted]
    assert f"{len(accepted)} succeeded, 0 failed, {len(blocked)} blocked" in result.out, result
    for case in blocked:
        assert f"! {case.address} (blocked, not attempted): " in result.out, case.name
    assert platform.submits() == len(accepted)  # not one POST for a blocked config
    runs = read_lock(osm.repo)["runs"]
    assert sorted(runs) == sorted(c.address for c in accepted)
    with httpx.Client(
        base_url=platform.url,
        headers={"Authorization": f"Bearer {TOKEN}", "X-Osmosis-Workspace": platform.workspace},
    ) as http:
        for case in accepted:
            item, entry = items[case.address], runs[case.address]
            detail = http.get(f"/api/cli/benchmark-runs/{entry['run_id']}").json()
            # task_count as the submit answer reported it (recorded by apply), and tasks x
            # agents x attempts as the Platform schedules them (E5 progress.expected).
            assert entry["task_count"] == item["task_count"], case.name
            assert detail["progress"]["expected"] == item["attempts"], case.name

    for case in CASES:
        if case.accepted:
            continue
        item = items[case.address]
        answer = raw_submit(platform, item["spec"])
        assert answer.status_code != 200, case.name
        reason, message = refusal(answer)
        assert reason == case.reason == item["reason"], (case.name, answer.json())
        assert message.rstrip(".") in item["details"][0], (case.name, item["details"][0])
    assert platform.submits() == len(accepted)


def carry_out(fix: dict[str, Any], repo: Path, osm: Osmosis) -> None:
    """Do what a fix says, literally: run the command, or make the edit."""
    if "command" in fix:
        done = subprocess.run(
            ["bash", "-c", fix["command"]],
            cwd=repo,
            env=osm.env(),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, (fix["command"], done.stdout, done.stderr)
        return
    path = repo / fix["file"]
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    node: Any = doc
    parts = re.findall(r"([^.\[\]]+)(?:\[(\d+)\])?", fix["key"])
    for name, index in parts[:-1]:
        if name not in node:
            node[name] = tomlkit.table()
        node = node[name] if not index else node[name][int(index)]
    last, index = parts[-1]
    assert not index
    if fix.get("remove"):
        del node[last]
    else:
        node[last] = fix["value"]
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")


def test_every_fix_carried_out_as_shown_makes_the_item_pass(
    tmp_path: Path, platform: Platform
) -> None:
    refused = [c for c in CASES if not c.accepted]
    repo = corpus_repo(tmp_path, refused)
    osm = Osmosis(repo, platform)
    items = plan_items(osm.plan("--format", "json"))
    for case in refused:
        item = items[case.address]
        assert item["action"] == "blocked" and item["fixes"], (case.name, item["details"])
        for fix in item["fixes"]:
            # What the person reads is what is carried out.
            text = f"`{fix['command']}`" if "command" in fix else f"`{fix['key']}"
            assert any(text in detail for detail in item["details"]), (case.name, fix)
            carry_out(fix, repo, osm)
    after = plan_items(osm.plan("--format", "json"))
    for case in refused:
        assert after[case.address]["action"] == "submit", (case.name, after[case.address])
    result = osm.apply("--auto-approve")
    assert result.code == 0, result
    assert platform.submits() == len(refused)


def test_the_example_configs_plan_as_the_platform_answers(
    tmp_path: Path, platform: Platform
) -> None:
    osm = Osmosis(init_repo(tmp_path / "repo", examples=True), platform)
    items = plan_items(osm.plan("--format", "json"))
    assert items and all(item["action"] in ("submit", "blocked") for item in items.values())
    blocked = {a: item for a, item in items.items() if item["action"] == "blocked"}
    osm.apply("--auto-approve")
    runs = read_lock(osm.repo)["runs"]
    assert sorted(runs) == sorted(a for a in items if a not in blocked)
    with httpx.Client(
        base_url=platform.url,
        headers={"Authorization": f"Bearer {TOKEN}", "X-Osmosis-Workspace": platform.workspace},
    ) as http:
        for address, entry in runs.items():
            detail = http.get(f"/api/cli/benchmark-runs/{entry['run_id']}").json()
            assert entry["task_count"] == items[address]["task_count"], address
            assert detail["progress"]["expected"] == items[address]["attempts"], address
    for address, item in blocked.items():
        answer = raw_submit(platform, item["spec"])
        assert refusal(answer)[0] == item["reason"], (address, answer.json())
    assert platform.submits() == len(runs)


def test_the_catalog_is_listed_only_when_a_benchmark_does_not_resolve(tmp_path: Path) -> None:
    log = RequestLog()
    platform = start_platform(tmp_path / "platform", access_log=log)
    try:
        repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
        osm = Osmosis(repo, platform)
        listing = re.compile(r"^GET /api/cli/benchmarks \d")
        assert plan_items(osm.plan("--format", "json"))["tb/a"]["action"] == "submit"
        assert not any(listing.match(line) for line in log.lines), log.lines
        write_config(repo, "tb/typo", smoke_config().replace("terminal-bench-2-1", "terminal-bnch"))
        log.reset()
        item = plan_items(osm.plan("--format", "json"))["tb/typo"]
        assert sum(1 for line in log.lines if listing.match(line)) == 1  # one page: 9 entries
        assert item["fixes"] == [
            {
                "file": "benchmarks/tb/typo.toml",
                "key": "experiment.benchmark",
                "value": "terminal-bench-2-1",
            }
        ]
    finally:
        platform.close()


def test_fixes_for_the_embedded_local_platform_work_as_typed(tmp_path: Path) -> None:
    syncing = (
        '[experiment]\nbenchmark = "acme/custom@1.0"\n\n[[agents]]\nharness = "codex"\n\n'
        '[agents.model]\ntype = "provider"\nmodel = "openai/gpt-5"\n'
        'api_key_secret = "OPENAI_API_KEY"\n'
    )
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config(), "acme/a": syncing})
    env = {k: v for k, v in cli_env().items() if k != "OSMOSIS_TOKEN"}  # the embedded one

    def plan() -> dict[str, dict[str, Any]]:
        done = subprocess.run(
            [str(BIN_DIR / "osmosis-plan"), "--format", "json"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return {a["address"]: a for a in json.loads(done.stdout)["actions"]}

    items = plan()
    commands = [fix["command"] for item in items.values() for fix in item["fixes"]]
    assert sorted(set(commands)) == [
        "echo VALUE | osmosis-platform-emulator secret set OPENAI_API_KEY --scope workspace "
        "--workspace local",
        "osmosis-platform-emulator benchmark sync acme/custom@1.0 --status ready",
    ]
    for command in dict.fromkeys(commands):
        done = subprocess.run(
            ["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, (command, done.stderr)
    assert {a: item["action"] for a, item in plan().items()} == {
        "tb/a": "submit",
        "acme/a": "submit",
    }
