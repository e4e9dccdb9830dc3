"""``generate_config``: a run's details (E5) -> the config that asks for exactly that run.

Values are built through the Platform models' named constructors from E5/E2-shaped JSON
(platform-api.md §3), the same conversion the client does at the boundary.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.config.spec import build_spec
from reconciler.engine.importer import ImportFlags, generate_config, round_trip_differences
from reconciler.errors import ImportRefusedError, UsageError
from reconciler.model import DesiredRun, spec_fingerprint
from reconciler.platform import BenchmarkDetail, RunDetail


def detail(
    agents: list[dict[str, Any]],
    *,
    scopes: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
    task_filters: dict[str, Any] | None = None,
) -> RunDetail:
    return RunDetail.from_api(
        {
            "benchmark_run": {
                "id": "bmr_1",
                "name": "calm-yak",
                "status": "running",
                "created_at": "2026-05-01T10:00:00Z",
                "platform_url": "https://platform.osmosis.ai/acme/benchmarks/bmr_1",
            },
            "configuration": {
                "benchmark_id": "bm_tb",
                "benchmark_name": "Terminal-Bench 2.1",
                "source_ref": "terminal-bench-2-1",
                "task_filters": task_filters if task_filters is not None else {"task_set": "x"},
                "config": config if config is not None else {"attempts_per_task": 1},
                "resolved_secret_scopes": scopes if scopes is not None else {},
            },
            "agents": [{"agent_index": i, **a} for i, a in enumerate(agents)],
        }
    )


def benchmark(**extra: Any) -> BenchmarkDetail:
    return BenchmarkDetail.from_api(
        {
            "benchmark": {
                "id": "bm_tb",
                "name": "Terminal-Bench 2.1",
                "source_ref": "terminal-bench-2-1",
                "supports_harness": True,
                "requires_harness": True,
                "requires_judge_model": False,
                "pass_threshold": 1,
                **extra,
            }
        }
    )


PROVIDER = {"harness": "codex", "model": "openai/gpt-5.2", "environment_variables": {}}


def refusal(run: RunDetail, flags: ImportFlags, bench: BenchmarkDetail | None = None) -> str:
    with pytest.raises(ImportRefusedError) as caught:
        generate_config(run, bench or benchmark(), flags)
    return f"{caught.value.message}\n{caught.value.hint}"


def flags(**values: Any) -> ImportFlags:
    return ImportFlags.parse(**values)


# --------------------------------------------------------------------------- asks


def test_the_model_type_is_always_asked_for_naming_what_e5_shows() -> None:
    run = detail([{**PROVIDER, "model_ref": "provider:openai/gpt-5.2"}], scopes={"K": "workspace"})
    assert refusal(run, flags()) == (
        "cannot import run calm-yak (bmr_1): its details do not say the model type of agent 1 "
        '(agent 1: model "openai/gpt-5.2", model_ref "provider:openai/gpt-5.2")\n'
        "pass --model-type 1=provider|endpoint|hosted"
    )


def test_model_types_of_several_agents_are_asked_for_at_once() -> None:
    run = detail([PROVIDER, {**PROVIDER, "model": "m2"}])
    assert refusal(run, flags(model_types=["2=provider"])).endswith(
        "pass --model-type 1=provider|endpoint|hosted, or --model-type "
        "provider|endpoint|hosted for every agent"
    )


def test_one_resolved_secret_is_the_model_secret_two_are_ambiguous() -> None:
    one = generate_config(
        detail([PROVIDER], scopes={"OPENAI_API_KEY": "workspace"}),
        benchmark(),
        flags(model_types=["provider"]),
    )
    assert one.data["agents"][0]["model"]["api_key_secret"] == "OPENAI_API_KEY"
    assert one.inferred == ("agents[0].model.api_key_secret",)
    assert one.from_flags == ("agents[0].model.type",)

    two = detail([PROVIDER], scopes={"OPENAI_API_KEY": "workspace", "ANTHROPIC_API_KEY": "user"})
    assert refusal(two, flags(model_types=["provider"])) == (
        "cannot import run calm-yak (bmr_1): its details (E5) do not say agent 1's model "
        "secret (the run resolved OPENAI_API_KEY and ANTHROPIC_API_KEY)\n"
        "pass --secret 1=NAME"
    )


def test_names_the_runner_reserves_are_never_a_model_secret() -> None:
    # HLE resolves HF_TOKEN too (its implicit dataset credential): still one candidate.
    generated = generate_config(
        detail([PROVIDER], scopes={"OPENAI_API_KEY": "workspace", "HF_TOKEN": "workspace"}),
        benchmark(required_secret_names=["HF_TOKEN"]),
        flags(model_types=["provider"]),
    )
    assert generated.data["agents"][0]["model"]["api_key_secret"] == "OPENAI_API_KEY"


def test_no_resolved_secret_asks_for_it() -> None:
    assert refusal(detail([PROVIDER]), flags(model_types=["provider"])) == (
        "cannot import run calm-yak (bmr_1): its details (E5) do not say agent 1's model "
        "secret (the run reports no secret a model may use)\npass --secret 1=NAME"
    )


def test_a_secret_given_for_a_name_the_run_did_not_resolve_is_refused() -> None:
    run = detail([PROVIDER], scopes={"OPENAI_API_KEY": "workspace", "B_KEY": "workspace"})
    assert refusal(run, flags(model_types=["provider"], secrets=["OPENAI_KEY"])) == (
        "cannot import run calm-yak (bmr_1): --secret 1=OPENAI_KEY: the run resolved no "
        "secret OPENAI_KEY (it resolved OPENAI_API_KEY and B_KEY)\nname a secret the run used"
    )


def test_every_resolved_secret_must_be_accounted_for() -> None:
    run = detail([PROVIDER], scopes={"OPENAI_API_KEY": "workspace", "DATASET_TOKEN": "run"})
    message = refusal(run, flags(model_types=["provider"], secrets=["OPENAI_API_KEY"]))
    assert message == (
        "cannot import run calm-yak (bmr_1): its details (E5) do not say which config key "
        "used the run's secret DATASET_TOKEN\npass --secret AGENT=DATASET_TOKEN if an agent's "
        "model used it, or --required-secret DATASET_TOKEN if the config listed it under "
        "[secrets].required"
    )
    generated = generate_config(
        run,
        benchmark(),
        flags(
            model_types=["provider"],
            secrets=["OPENAI_API_KEY"],
            required_secrets=["DATASET_TOKEN"],
        ),
    )
    assert generated.data["secrets"] == {"required": ["DATASET_TOKEN"]}


def test_endpoint_needs_its_url_and_says_whether_it_sent_headers() -> None:
    run = detail(
        [{"harness": "terminus-2", "model": "org/coder", "environment_variables": {}}],
        scopes={"MY_ENDPOINT_KEY": "workspace"},
    )
    assert refusal(run, flags(model_types=["endpoint"])) == (
        "cannot import run calm-yak (bmr_1): its details (E5) do not say the base URL of agent "
        "1's endpoint model; the extra_headers of agent 1's endpoint model\n"
        "pass --base-url 1=URL --header 1=NAME=VALUE (once per header) or --no-extra-headers"
    )
    generated = generate_config(
        run,
        benchmark(),
        flags(
            model_types=["endpoint"],
            base_urls=["https://llm.example.com/v1"],
            headers=["1=X-Pool=bench", "X-Source=ci"],
        ),
    )
    # A header flag for one agent wins over one for every agent, like every other flag.
    assert generated.data["agents"][0]["model"] == {
        "type": "endpoint",
        "base_url": "https://llm.example.com/v1",
        "model": "org/coder",
        "api_key_secret": "MY_ENDPOINT_KEY",
        "extra_headers": {"X-Pool": "bench"},
    }
    no_headers = generate_config(
        run,
        benchmark(),
        flags(
            model_types=["endpoint"],
            base_urls=["https://llm.example.com/v1"],
            no_extra_headers=True,
        ),
    )
    assert "extra_headers" not in no_headers.data["agents"][0]["model"]


def test_hosted_model_splits_on_its_one_colon_else_asks_for_the_lora_name() -> None:
    hosted = {"model": "Qwen/Qwen3-8B:tool-use-v3", "environment_variables": {}}
    generated = generate_config(detail([hosted]), benchmark(), flags(model_types=["hosted"]))
    assert generated.data["agents"] == [
        {
            "model": {
                "type": "hosted",
                "base_model": "Qwen/Qwen3-8B",
                "lora_model_name": "tool-use-v3",
            }
        }
    ]
    two_colons = detail([{"model": "org:base:lora", "environment_variables": {}}])
    assert refusal(two_colons, flags(model_types=["hosted"])).endswith(
        "how agent 1's hosted model 'org:base:lora' splits into base_model and "
        "lora_model_name\npass --lora-model 1=NAME"
    )
    split = generate_config(
        two_colons, benchmark(), flags(model_types=["hosted"], lora_models=["base:lora"])
    )
    assert split.data["agents"][0]["model"]["base_model"] == "org"
    assert refusal(two_colons, flags(model_types=["hosted"], lora_models=["other"])) == (
        "cannot import run calm-yak (bmr_1): --lora-model 1=other: agent 1's model "
        "'org:base:lora' does not end in ':other'\nthe hosted model is reported as "
        "BASE_MODEL:LORA_MODEL_NAME"
    )


def test_a_flag_for_an_agent_whose_model_does_not_take_it_is_refused() -> None:
    run = detail([{"model": "a:b", "environment_variables": {}}])
    assert refusal(run, flags(model_types=["hosted"], secrets=["1=K"])) == (
        "cannot import run calm-yak (bmr_1): --secret 1=...: agent 1's model is hosted, which "
        "does not take it\ndrop --secret 1=..., or correct --model-type 1"
    )


def test_an_agent_number_beyond_the_run_s_agents_is_refused() -> None:
    assert refusal(detail([PROVIDER]), flags(model_types=["provider"], secrets=["2=K"])) == (
        "cannot import run calm-yak (bmr_1): --secret 2=...: the run has 1 agent\n"
        "number agents from 1 in the order the run lists them"
    )


# --------------------------------------------------------------------------- mapping


def test_a_harness_credential_is_the_name_the_harness_reads() -> None:
    cursor = {**PROVIDER, "harness": "cursor-cli"}
    generated = generate_config(
        detail([cursor], scopes={"CURSOR_API_KEY": "workspace", "ANTHROPIC_API_KEY": "workspace"}),
        benchmark(),
        flags(model_types=["provider"], secrets=["ANTHROPIC_API_KEY"]),
    )
    assert generated.data["agents"][0]["harness_api_key_secret"] == "CURSOR_API_KEY"


def test_shared_env_goes_to_env_the_rest_stays_with_its_agent() -> None:
    run = detail(
        [
            {**PROVIDER, "environment_variables": {"LOG_LEVEL": "info", "A": "1"}},
            {**PROVIDER, "environment_variables": {"LOG_LEVEL": "info", "A": "2", "B": "x"}},
        ],
        scopes={"K": "workspace"},
    )
    generated = generate_config(run, benchmark(), flags(model_types=["provider"]))
    assert generated.data["env"] == {"LOG_LEVEL": "info"}
    assert [a.get("env") for a in generated.data["agents"]] == [{"A": "1"}, {"A": "2", "B": "x"}]


def test_execution_verifier_and_tasks_come_from_the_configuration() -> None:
    run = detail(
        [PROVIDER],
        scopes={"K": "workspace", "V1": "workspace"},
        config={"attempts_per_task": 2, "verifier_secrets": ["V1"], "judge_api_key_secret": "K"},
        task_filters={"task_names": ["a", "b"]},
    )
    # V1 could be a model's secret as far as E5 tells: two candidates, so it is asked for.
    assert "agent 1's model secret (the run resolved K and V1)" in refusal(
        run, flags(model_types=["provider"])
    )
    generated = generate_config(run, benchmark(), flags(model_types=["provider"], secrets=["K"]))
    assert generated.data["tasks"] == {"task_names": ["a", "b"]}
    assert generated.data["execution"] == {"attempts_per_task": 2, "judge_api_key_secret": "K"}
    assert generated.data["verifier"] == {"required": ["V1"]}
    assert generated.data["experiment"] == {"benchmark": "terminal-bench-2-1"}


def test_task_filters_a_config_cannot_express_are_refused() -> None:
    run = detail([PROVIDER], scopes={"K": "w"}, task_filters={"difficulty": "hard"})
    assert refusal(run, flags(model_types=["provider"])) == (
        "cannot import run calm-yak (bmr_1): its task filters hold difficulty, which [tasks] "
        "cannot express\nthe run cannot be described by a benchmark config"
    )


def test_the_documented_e5_example_needs_the_judge_secret_it_does_not_report() -> None:
    # platform-api.md §3 E5: HLE, config {"attempts_per_task": 2}, no judge secret in it.
    run = RunDetail.from_api(
        {
            "benchmark_run": {"id": "bmr_hle", "name": "hle-smoke", "status": "running"},
            "configuration": {
                "benchmark_id": "bm_hle",
                "benchmark_name": "HLE",
                "source_ref": "hle",
                "task_filters": {"task_set": "parity"},
                "config": {"attempts_per_task": 2},
                "resolved_secret_scopes": {"OPENAI_API_KEY": "workspace"},
            },
            "agents": [
                {
                    "id": "agent-1",
                    "agent_index": 0,
                    "harness": "codex",
                    "model_display_name": "GPT-5",
                    "model": "openai/gpt-5",
                    "environment_variables": {"MSWEA_COST_LIMIT": "20"},
                }
            ],
        }
    )
    hle = BenchmarkDetail.from_api(
        {
            "benchmark": {
                "id": "bm_hle",
                "name": "HLE",
                "source_ref": "hle",
                "requires_judge_model": True,
                "requires_judge_api_key": True,
                "required_secret_names": ["HF_TOKEN"],
            }
        }
    )
    assert refusal(run, flags(model_types=["provider"]), hle) == (
        "cannot import run hle-smoke (bmr_hle): its details (E5) do not say the "
        "judge_api_key_secret HLE requires\npass --judge-secret NAME"
    )
    generated = generate_config(
        run, hle, flags(model_types=["provider"], judge_secret="OPENAI_API_KEY")
    )
    assert generated.judge_from_flag
    assert generated.data["execution"] == {
        "attempts_per_task": 2,
        "judge_api_key_secret": "OPENAI_API_KEY",
    }
    assert "execution.judge_api_key_secret" in generated.from_flags
    # The round trip compares everything E5 reports; the judge secret it cannot.
    spec = build_spec(generated.data)
    desired = DesiredRun(
        address="hle/hle-smoke",
        path="benchmarks/hle/hle-smoke.toml",
        spec=spec,
        spec_digest="sha256:x",
        benchmark="hle",
        agent_count=1,
    )
    assert spec_fingerprint(spec, "bm_hle") != run.fingerprint()
    assert round_trip_differences(run, desired, "bm_hle", judge_from_flag=True) == ()
    assert round_trip_differences(run, desired, "bm_hle") == (
        '+ config.judge_api_key_secret: "OPENAI_API_KEY"',
    )


def test_round_trip_names_a_value_that_could_not_be_written() -> None:
    run = detail(
        [PROVIDER], scopes={"K": "w"}, config={"attempts_per_task": 1, "max_retries": None}
    )
    generated = generate_config(run, benchmark(), flags(model_types=["provider"]))
    assert generated.data["execution"] == {"attempts_per_task": 1}
    spec = build_spec(generated.data)
    desired = DesiredRun(
        address="a",
        path="benchmarks/a.toml",
        spec=spec,
        spec_digest="x",
        benchmark="b",
        agent_count=1,
    )
    assert round_trip_differences(run, desired, "bm_tb") == ("- config.max_retries",)
    assert round_trip_differences(run, desired, "bm_other") == (
        'benchmark_id: "bm_tb" -> "bm_other"',
        "- config.max_retries",
    )


# --------------------------------------------------------------------------- flags


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"model_types": ["1=local"]},
            "--model-type 1=local: the model type is one of provider, endpoint, hosted",
        ),
        ({"model_types": ["0=provider"]}, "--model-type 0=provider: agents are numbered from 1"),
        ({"secrets": ["1=A", "1=B"]}, "--secret is given twice for agent 1"),
        ({"secrets": ["1=lower"]}, "--secret 1=lower: not a secret record name"),
        ({"headers": ["X-A"]}, "--header X-A: expected [AGENT=]NAME=VALUE"),
        ({"judge_secret": "bad name"}, "bad name: not a secret record name"),
    ],
)
def test_malformed_flags_are_usage_errors_naming_the_flag(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        ImportFlags.parse(**values)
    assert caught.value.message.startswith(message)


def test_flags_describe_themselves_as_a_command_line() -> None:
    parsed = ImportFlags.parse(
        model_types=["provider", "2=endpoint"],
        secrets=["1=A_KEY"],
        base_urls=["2=https://x/v1?a=b"],
        headers=["2=X-A=b=c"],
        required_secrets=["R", "R"],
    )
    assert parsed.base_urls == {2: "https://x/v1?a=b"}
    assert parsed.headers == {2: {"X-A": "b=c"}}
    assert parsed.describe() == [
        "--model-type provider",
        "--model-type 2=endpoint",
        "--secret 1=A_KEY",
        "--base-url 2=https://x/v1?a=b",
        "--header 2=X-A=b=c",
        "--required-secret R",
    ]
