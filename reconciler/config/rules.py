"""Every config rule that may change with the Osmosis Platform, kept as data.

platform-api.md ("Where the Benchmark Runs page and the SDK differ") asks for one table or
constant per rule, so that a later Platform change is a one-line edit here and never a hunt
through validation code. Where the Benchmark Runs page and osmosis-ai 0.3.8 disagree, the
page wins (D1-D4); the 0.3.8 behaviour that the page superseded stays here as a disabled
row so the history is visible.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- schema (§9.2)

TOP_LEVEL_KEYS = (
    "experiment",
    "tasks",
    "agents",
    "execution",
    "verifier",
    "secrets",
    "env",
    "decide",
)
EXPERIMENT_KEYS = ("benchmark",)
TASKS_KEYS = ("task_set", "task_names", "categories")
AGENT_KEYS = ("harness", "harness_api_key_secret", "model", "env")
EXECUTION_KEYS = (
    "attempts_per_task",
    "max_concurrent_attempts",
    "timeout_multiplier",
    "max_retries",
    "pass_threshold",
    "judge_model",
    "judge_api_key_secret",
)
# §9.2 lets the SDK forward [execution] values unvalidated ("any TOML type"), so a wrong
# type was refused only by the Platform, after the plan was approved. These are the types
# the Platform reads (its route defaults and the page's examples), with the example the
# hint shows: key -> (accepted TOML types, example value).
EXECUTION_TYPES: dict[str, tuple[tuple[str, ...], str]] = {
    "attempts_per_task": (("integer",), "3"),
    "max_concurrent_attempts": (("integer",), "4"),
    "timeout_multiplier": (("integer", "float"), "1.5"),
    "max_retries": (("integer",), "0"),
    "pass_threshold": (("integer", "float"), "1.0"),
    "judge_model": (("string",), '"openai/gpt-5.2"'),
    "judge_api_key_secret": (("string",), '"OPENAI_API_KEY"'),
}
VERIFIER_KEYS = ("required",)
SECRETS_KEYS = ("required",)

# §9.3: model variant -> (required keys, optional keys). ``type`` is the discriminator.
MODEL_VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "provider": (("model", "api_key_secret"), ()),
    "endpoint": (("base_url", "model", "api_key_secret"), ("extra_headers",)),
    "hosted": (("base_model", "lora_model_name"), ()),
}
# Variants whose api_key_secret is a referenced secret (hosted models carry no secret).
MODEL_VARIANTS_WITH_SECRET = ("provider", "endpoint")
# An endpoint's auth goes through api_key_secret; this header name is refused in any casing.
FORBIDDEN_EXTRA_HEADER = "authorization"

# [experiment].benchmark is a catalog reference (key, name or ID), never a local dataset
# path (page, platform-api.md §9.2). A value is taken for a path when it starts like one,
# ends in a data-file suffix, or has path segments no catalog key has; a plain "owner/name"
# or "owner/name@version" (Harbor registry keys and names) is not.
PATH_PREFIXES = ("./", "../", "/", "~", ".\\", "..\\")
DATA_FILE_SUFFIXES = (
    ".jsonl", ".json", ".csv", ".tsv", ".parquet", ".arrow", ".txt", ".toml", ".yaml",
    ".yml", ".xml", ".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".zst",
)  # fmt: skip

ALLOWED_TASK_SETS = ("parity",)
MIN_AGENTS = 1
MAX_AGENTS = 8
MAX_VERIFIER_NAMES = 16
MAX_SECRETS_NAMES = 16

# --------------------------------------------------------------------------- names (§9.4)

ENV_NAME_PATTERN = "^[A-Z_][A-Z0-9_]*$"
ENV_NAME_RE = re.compile(ENV_NAME_PATTERN)
RESERVED_ENV_PREFIX = "_OSMOSIS_"
SECRET_NAME_PATTERN = "^[A-Z][A-Z0-9_]*$"
SECRET_NAME_RE = re.compile(SECRET_NAME_PATTERN)

# Literal env var names no agent's effective env may set (page D1).
RESERVED_ENV_NAMES = frozenset({"HF_TOKEN"})
# Names a provider/endpoint model's api_key_secret may not use (page D1 + 0.3.8).
RESERVED_MODEL_SECRET_NAMES = frozenset({"HF_TOKEN", "DAYTONA_API_KEY", "DAYTONA_API_URL"})

# Harness -> the secret record name its harness_api_key_secret must be (= the env var the
# harness reads). Page D3/D4: only these harnesses accept harness_api_key_secret, and it is
# required for them.
HARNESS_CREDENTIALS: dict[str, str] = {
    "cursor-cli": "CURSOR_API_KEY",
    "mini-swe-agent": "MSWEA_API_KEY",
}
# 0.3.8 rule 9: the Platform injects a provider/endpoint model's key under this name for the
# harness, so a literal env var of that name is refused. The page superseded it (D3): kept
# disabled. To re-enable, move the row into HARNESS_MODEL_KEY_ALIASES.
HARNESS_MODEL_KEY_ALIASES: dict[str, str] = {}
DISABLED_HARNESS_MODEL_KEY_ALIASES: dict[str, str] = {"mini-swe-agent": "MSWEA_API_KEY"}

# The page's non-blocking HLE recommendation (§9.4 last paragraph).
PARITY_RECOMMENDED_BENCHMARKS = frozenset({"hle"})
PARITY_TASK_SET = "parity"

# --------------------------------------------------------------------------- safety limits

# A benchmark config is a few hundred bytes; anything this large is a mistake (or an
# attack on the parser) and is refused before parsing.
MAX_CONFIG_BYTES = 1024 * 1024
# Arrays/inline tables nested deeper than this cannot be a meaningful [execution] value.
MAX_NESTING_DEPTH = 32
# Parts of one dotted key or table header (``[a.b.c]`` has 3). A config needs at most 5;
# tomllib's time grows with the square of this, so deeper keys are refused before parsing.
MAX_KEY_PARTS = 32

# --------------------------------------------------------------------------- error output

# Issues listed per config file, and in all (50,000 unknown keys once printed 8.3 MB); the
# rest are counted in one closing issue.
MAX_ISSUES_PER_FILE = 20
MAX_ISSUES_TOTAL = 200

# --------------------------------------------------------------------------- credentials

# Well-known credential shapes. Matched anywhere in a value (after a non-alphanumeric
# boundary), so "Bearer sk-..." is caught too.
CREDENTIAL_PATTERNS: tuple[tuple[str, str], ...] = (
    ("OpenAI/Anthropic/Stripe-style key", r"sk[-_][A-Za-z0-9_\-]{12,}"),
    ("GitHub token", r"gh[pousr]_[A-Za-z0-9]{16,}"),
    ("GitHub fine-grained token", r"github_pat_[A-Za-z0-9_]{16,}"),
    ("Hugging Face token", r"hf_[A-Za-z0-9]{16,}"),
    ("Slack token", r"xox[abposre]-[A-Za-z0-9\-]{8,}"),
    ("AWS access key id", r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
    ("Google API key", r"AIza[0-9A-Za-z_\-]{30,}"),
    ("GitLab token", r"glpat-[A-Za-z0-9_\-]{16,}"),
    ("JSON web token", r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("private key block", r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
CREDENTIAL_RE = re.compile(
    "|".join(f"(?<![A-Za-z0-9])(?:{pattern})" for _, pattern in CREDENTIAL_PATTERNS)
)
# A random-looking token: at least this long without whitespace, containing a run of
# letters and digits at least RANDOM_RUN long that mixes upper case, lower case and digits
# (model names such as "Qwen/Qwen3-8B-Instruct" have short runs; paths and URLs are lower case).
RANDOM_TOKEN_MIN_LENGTH = 24
RANDOM_RUN_MIN_LENGTH = 20
RANDOM_RUN_RE = re.compile("[A-Za-z0-9]{" + str(RANDOM_RUN_MIN_LENGTH) + ",}")

INLINED_SECRET_MESSAGE = "a secret value appears to be inlined here (value not shown)"
INLINED_SECRET_HINT = (
    "store it with `osmosis secret set NAME` and reference the record name instead"
)
