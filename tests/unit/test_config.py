"""Config loading: discovery, desired runs, the examples, rules as data, credentials."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from reconciler.config import LoadResult, build_spec, load_configs, rules, spec_digest
from reconciler.config.validate import looks_like_credential
from reconciler.model import digest
from reconciler.toml_locate import scan
from tests.support.bodies import tb_body

REPO = Path(__file__).resolve().parents[2]

VALID = """\
[experiment]
benchmark = "terminal-bench-2-1"

[[agents]]
harness = "codex"

[agents.model]
type = "provider"
model = "openai/gpt-5.2"
api_key_secret = "OPENAI_API_KEY"
"""


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / "benchmarks" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def errors(result: LoadResult) -> list[tuple[str, str, str]]:
    return [(i.file, i.key, i.message) for i in result.issues if i.severity == "error"]


# ----------------------------------------------------------------------------- examples


def test_examples_are_valid_and_realistic():
    result = load_configs(REPO)
    assert result.ok, [i.render() for i in result.issues]
    assert result.issues == ()
    assert result.files == len(result.runs) >= 6
    runs = {run.address: run for run in result.runs}
    smoke = runs["terminal-bench/smoke"]
    assert smoke.path == "benchmarks/terminal-bench/smoke.toml"
    assert smoke.spec == tb_body(
        "openai/gpt-5.2",
        execution_config={
            "attempts_per_task": 1,
            "max_concurrent_attempts": 1,
            "timeout_multiplier": 1.0,
            "max_retries": 0,
        },
    )
    assert runs["hle/parity"].task_set == "parity"
    assert runs["hle/parity"].judge_secret == "OPENAI_API_KEY"
    kinds = {a["model"]["type"] for run in result.runs for a in run.spec["agents"]}
    assert kinds == {"provider", "endpoint", "hosted"}
    assert any(run.agent_count == 2 for run in result.runs)
    assert any("extra_headers" in a["model"] for run in result.runs for a in run.spec["agents"])
    assert any(h == "cursor-cli" for run in result.runs for h in run.harnesses)
    used = {name for run in result.runs for name in run.secret_names}
    assert used <= {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CURSOR_API_KEY", "MY_ENDPOINT_KEY"}
    for path in (REPO / "benchmarks").rglob("*.toml"):
        assert path.read_text().startswith("# "), f"{path} needs a comment header"


# ----------------------------------------------------------------------------- desired runs


def test_desired_run_fields(tmp_path: Path):
    write(
        tmp_path,
        "team/a/run.toml",
        """\
[experiment]
benchmark = "HLE"
[tasks]
task_set = "parity"
categories = ["math"]
[[agents]]
harness = "cursor-cli"
harness_api_key_secret = "CURSOR_API_KEY"
model = { type = "endpoint", base_url = "https://x/v1", model = "m", api_key_secret = "EP_KEY" }
[[agents]]
model = { type = "provider", model = "openai/gpt-5", api_key_secret = "OPENAI_API_KEY" }
[[agents]]
model = { type = "provider", model = "openai/gpt-5", api_key_secret = "EP_KEY" }
[execution]
attempts_per_task = 3
judge_api_key_secret = "JUDGE"
[verifier]
required = ["GRADER", "OPENAI_API_KEY"]
[secrets]
required = ["EXTRA"]
""",
    )
    result = load_configs(tmp_path)
    assert result.ok and result.issues == ()
    (run,) = result.runs
    assert run.address == "team/a/run"
    assert run.path == "benchmarks/team/a/run.toml"
    assert run.benchmark == "HLE"
    assert (run.task_set, run.task_names, run.categories) == ("parity", None, ("math",))
    assert run.agent_count == 3
    assert run.attempts_per_task == 3
    assert run.harnesses == ("cursor-cli", None, None)
    # §9.5 order: model secrets, harness secrets, judge, verifier, per-run; de-duplicated.
    assert run.secret_names == (
        "EP_KEY",
        "OPENAI_API_KEY",
        "CURSOR_API_KEY",
        "JUDGE",
        "GRADER",
        "EXTRA",
    )
    assert run.judge_secret == "JUDGE"
    assert run.requested_by is None
    assert run.spec["execution_config"]["verifier_secrets"] == ["GRADER", "OPENAI_API_KEY"]
    assert run.spec["secrets"] == {"required": ["EXTRA"], "provided": {}}
    assert run.spec_digest == spec_digest(run.spec) == digest(run.spec)


def test_attempts_per_task_is_forwarded_and_counted(tmp_path):
    write(tmp_path, "a.toml", VALID + "[execution]\nattempts_per_task = 2\n")
    (run,) = load_configs(tmp_path).runs
    assert run.attempts_per_task == 2
    assert run.spec["execution_config"]["attempts_per_task"] == 2


@pytest.mark.parametrize(
    ("value", "got"), [("2.0", "a number"), ('"three"', "a string"), ("true", "a boolean")]
)
def test_attempts_per_task_of_another_type_is_refused(tmp_path, value, got):
    write(tmp_path, "a.toml", VALID + f"[execution]\nattempts_per_task = {value}\n")
    result = load_configs(tmp_path)
    assert result.runs == ()
    (issue,) = result.issues
    assert (issue.key, issue.message) == (
        "execution.attempts_per_task",
        f"must be an integer, got {got}",
    )
    assert issue.hint == "write a whole number without quotes, e.g. attempts_per_task = 3"
    assert issue.line == VALID.count("\n") + 2


def test_build_spec_omits_empty_parts_and_keeps_explicit_empty_task_names():
    doc = {
        "experiment": {"benchmark": "b"},
        "tasks": {},
        "agents": [{"model": {"type": "hosted", "base_model": "q", "lora_model_name": "l"}}],
        "execution": {},
        "verifier": {"required": []},
        "secrets": {"required": []},
        "env": {},
    }
    assert build_spec(doc) == {
        "experiment_config": {"benchmark": "b"},
        "agents": [
            {"model": {"type": "hosted", "base_model": "q", "lora_model_name": "l"}, "env": {}}
        ],
    }
    doc["tasks"] = {"task_names": []}
    assert build_spec(doc)["tasks_config"] == {"task_names": []}


def test_warning_does_not_block_the_run(tmp_path: Path):
    write(
        tmp_path,
        "hle.toml",
        VALID.replace("terminal-bench-2-1", "hle")
        + '[execution]\njudge_api_key_secret = "OPENAI_API_KEY"\n',
    )
    result = load_configs(tmp_path)
    assert result.ok
    assert len(result.runs) == 1
    (issue,) = result.issues
    assert issue.severity == "warning"
    assert (issue.key, issue.line, issue.column) == ("tasks.task_set", 2, 13)


def test_collisions_are_per_agent(tmp_path: Path):
    """Agent 2 may use agent 1's secret name as a literal env var (§9.4)."""
    write(
        tmp_path,
        "a.toml",
        VALID
        + """
[[agents]]
harness = "claude-code"
model = { type = "provider", model = "anthropic/claude-sonnet-4", api_key_secret = "ANTHROPIC_API_KEY" }
[agents.env]
OPENAI_API_KEY = "not-a-secret"
""",
    )
    result = load_configs(tmp_path)
    assert result.ok, [i.render() for i in result.issues]


def test_hosted_mini_swe_agent_may_set_mswea_only_if_not_managed(tmp_path: Path):
    # Page D3: MSWEA_API_KEY in a mini-swe-agent's env is rejected for every model type.
    write(
        tmp_path,
        "a.toml",
        """\
[experiment]
benchmark = "swe-bench-verified"
[[agents]]
harness = "mini-swe-agent"
harness_api_key_secret = "MSWEA_API_KEY"
model = { type = "hosted", base_model = "Qwen/Qwen3-8B", lora_model_name = "l" }
env = { MSWEA_API_KEY = "x" }
""",
    )
    assert errors(load_configs(tmp_path)) == [
        (
            "benchmarks/a.toml",
            "agents[0].env.MSWEA_API_KEY",
            "'MSWEA_API_KEY' appears in [agents.env] of agent 1 but is managed by agent 1's "
            "mini-swe-agent harness",
        )
    ]


def test_env_issue_shared_by_agents_is_reported_once(tmp_path: Path):
    write(tmp_path, "a.toml", VALID + VALID.split("\n", 3)[3] + '[env]\nHF_TOKEN = "x"\n')
    result = load_configs(tmp_path)
    assert [(i.key, i.line) for i in result.issues] == [("env.HF_TOKEN", 19)]


# ----------------------------------------------------------------------------- rules as data


def test_harness_credential_table_drives_the_rules(tmp_path: Path, monkeypatch):
    write(tmp_path, "a.toml", VALID.replace('"codex"', '"new-harness"'))
    assert load_configs(tmp_path).ok
    monkeypatch.setitem(rules.HARNESS_CREDENTIALS, "new-harness", "NEW_HARNESS_KEY")
    assert errors(load_configs(tmp_path)) == [
        (
            "benchmarks/a.toml",
            "agents[0].harness_api_key_secret",
            "Agent 1's new-harness harness requires harness_api_key_secret",
        )
    ]


def test_disabled_model_key_alias_row_can_be_enabled(tmp_path: Path, monkeypatch):
    write(
        tmp_path,
        "a.toml",
        VALID.replace('"codex"', '"alias-harness"') + '[agents.env]\nALIAS_KEY = "x"\n',
    )
    assert load_configs(tmp_path).ok
    monkeypatch.setitem(rules.HARNESS_MODEL_KEY_ALIASES, "alias-harness", "ALIAS_KEY")
    assert errors(load_configs(tmp_path)) == [
        (
            "benchmarks/a.toml",
            "agents[0].env.ALIAS_KEY",
            "'ALIAS_KEY' appears in [agents.env] of agent 1 but the platform injects agent 1's "
            "model key under that name for the alias-harness harness",
        )
    ]
    assert rules.DISABLED_HARNESS_MODEL_KEY_ALIASES == {"mini-swe-agent": "MSWEA_API_KEY"}


def test_page_rules_win_over_the_sdk():
    assert "HF_TOKEN" in rules.RESERVED_ENV_NAMES
    assert rules.RESERVED_MODEL_SECRET_NAMES == {"HF_TOKEN", "DAYTONA_API_KEY", "DAYTONA_API_URL"}
    assert rules.HARNESS_CREDENTIALS == {
        "cursor-cli": "CURSOR_API_KEY",
        "mini-swe-agent": "MSWEA_API_KEY",
    }
    assert rules.HARNESS_MODEL_KEY_ALIASES == {}


# ----------------------------------------------------------------------------- discovery


def test_discovery_is_recursive_sorted_and_skips_hidden(tmp_path: Path):
    for rel in (
        "b.toml",
        "a/z.toml",
        "a/b.toml",
        ".hidden.toml",
        ".git/x.toml",
        "a/.cache/c.toml",
        "notes.md",
        "a/readme.txt",
    ):
        write(tmp_path, rel, VALID)
    result = load_configs(tmp_path)
    assert [r.address for r in result.runs] == ["a/b", "a/z", "b"]
    assert result.files == 3


def test_symlink_outside_is_an_error_inside_is_followed(tmp_path: Path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "evil.toml").write_text(VALID)
    write(tmp_path, "real/ok.toml", VALID)
    bench = tmp_path / "benchmarks"
    os.symlink(outside / "evil.toml", bench / "evil.toml")
    os.symlink(outside, bench / "linked-dir")
    os.symlink(bench / "real" / "ok.toml", bench / "alias.toml")
    os.symlink(tmp_path / "missing.toml", bench / "dangling.toml")
    result = load_configs(tmp_path)
    assert [r.address for r in result.runs] == ["alias", "real/ok"]
    assert [(i.file, i.message) for i in result.issues] == [
        ("benchmarks/dangling.toml", "symlink points to a missing file"),
        ("benchmarks/evil.toml", "symlink points outside the benchmarks directory"),
        ("benchmarks/linked-dir", "symlink points outside the benchmarks directory"),
    ]
    assert not result.ok


def test_missing_benchmarks_dir(tmp_path: Path):
    result = load_configs(tmp_path, "configs")
    assert not result.ok and result.files == 0
    (issue,) = result.issues
    assert issue.file == "configs"
    assert "does not exist" in issue.message
    assert "mkdir -p configs" in (issue.hint or "")


def test_empty_benchmarks_dir_is_fine(tmp_path: Path):
    (tmp_path / "benchmarks").mkdir()
    result = load_configs(tmp_path)
    assert result.ok and result.runs == () and result.files == 0


# ----------------------------------------------------------------------------- credentials


@pytest.mark.parametrize(
    "value",
    [
        "sk-" + "ant-api03-" + "abcDEF123456",
        "Bearer " + "sk-" + "proj-0123456789abcdef",
        "ghp" + "_" + "A1b2C3d4E5f6G7h8I9j0",
        "github_pat" + "_" + "11AAAAAAA0abcdefghijkl",
        "hf" + "_" + "abcdefghijklmnopqrstuvwx",
        "xox" + "b-123456789012-abc",
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "Zk3" + "Lm9Qr2StUv8WxYz4Ab7Cd1Ef",
    ],
)
def test_credential_shapes_are_recognised(value: str):
    assert looks_like_credential(value)


@pytest.mark.parametrize(
    "value",
    [
        "OPENAI_API_KEY",
        "info",
        "openai/gpt-5.2",
        "Qwen/Qwen3-8B-Instruct-2507-FP8",
        "anthropic/claude-sonnet-4-20250514",
        "https://llm.internal.example.com/v1/chat",
        "/usr/local/bin:/usr/bin:/bin",
        "MY_ENDPOINT_KEY_FOR_PRODUCTION_2",
        "hf_transfer",
        "sk-learn",
        "a sentence with Many words and 123 numbers in it, quite long",
        "0123456789abcdef0123456789abcdef01234567",
    ],
)
def test_ordinary_values_are_not_credentials(value: str):
    assert not looks_like_credential(value)


def test_credential_is_never_echoed_anywhere(tmp_path: Path):
    secret = "sk-" + "live-" + "9fQ2xZ7pL4mN8vB3cD6hJ1kT"
    write(
        tmp_path,
        "a.toml",
        VALID.replace('"OPENAI_API_KEY"', f'"{secret}"')
        + f'[env]\n"{secret}" = "{secret}"\n[secrets]\nrequired = ["{secret}"]\n',
    )
    result = load_configs(tmp_path)
    assert not result.ok
    everything = json.dumps([vars(i) for i in result.issues]) + repr(result)
    everything += "".join(i.render() for i in result.issues)
    assert secret not in everything
    assert {i.message for i in result.issues} == {rules.INLINED_SECRET_MESSAGE}
    assert all("osmosis secret set NAME" in (i.hint or "") for i in result.issues)
    # The env entry is refused once (its name), the two secret-name fields once each.
    assert [i.key for i in result.issues] == [
        "env.[REDACTED]",
        "agents[0].model.api_key_secret",
        "secrets.required[0]",
    ]


# ----------------------------------------------------------------------------- locating


def test_scanner_positions_survive_tricky_strings():
    text = (
        '[experiment]\nbenchmark = "a [b] = c # d"  # comment [x]\n'
        'x = """\nmulti [[agents]]\nline = "\\""\n"""\n'
        "y = '''\n'' ''' \n"
        '[[agents]]\nmodel = { type = "p", extra_headers = { "X-A.b" = "v" } }\n'
        "[[agents]]\n[agents.model]\ntype = 'q'\n"
        "[agents.env]\nA = [1, [2, 3], {k = 'v'}]\n"
    )
    tomllib.loads(text)  # the text is valid TOML
    positions = scan(text)
    assert positions.find(("experiment", "benchmark"), "value") == (2, 13)
    assert positions.find(("agents", 0, "model", "extra_headers", "X-A.b"), "key") == (10, 41)
    assert positions.find(("agents", 1, "model", "type"), "value") == (13, 8)
    assert positions.find(("agents", 1, "env", "A", 1, 1), "value") == (15, 13)
    assert positions.find(("agents", 1, "env", "A", 2, "k"), "value") == (15, 22)
    assert positions.find(("agents", 1), "table") == (11, 1)
    assert positions.find(("nope", "deeper"), "value") == (1, 1)


@pytest.mark.parametrize(
    ("value", "path_like"),
    [
        ("./data/my-dataset.jsonl", True),
        ("data/my-dataset.jsonl", True),
        ("/srv/data/questions", True),
        ("~/datasets/hle", True),
        ("..\\data\\set", True),
        ("acme//custom", True),
        ("acme/./custom", True),
        ("questions.CSV", True),
        ("acme/custom@1.0", False),  # a Harbor registry key
        ("acme/custom", False),  # a Harbor registry benchmark's name
        ("Terminal-Bench 2.1", False),
        ("terminal-bench-2-1", False),
        ("bm_4a68d00f4bb63a21dec5", False),
    ],
)
def test_a_benchmark_value_is_a_catalog_reference_never_a_path(value: str, path_like: bool):
    from reconciler.config.validate import looks_like_path

    assert looks_like_path(value) is path_like
