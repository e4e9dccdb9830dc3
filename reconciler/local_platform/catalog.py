"""The seeded benchmark catalog of the local Platform, kept as data.

Every benchmark is a plain dict in the E2 shape (platform-api.md §3) plus a few private keys
that start with ``_`` and are never sent: ``_task_set_members`` (which tasks a named task set
selects), ``_leaderboard`` (served as E2's top-level ``leaderboard``), ``_skill_bias``
(how hard the benchmark is for the simulated agents) and ``_pending_tasks`` (the tasks a
sync that is not finished has not listed yet; they join ``tasks`` once it is ``ready``);
``_task_revisions`` (tasks whose definition changed, ``simulation.task_checksum``) is set by
``revise_task`` only.

The catalog exercises every rule of the submit route: HLE (judge, implicit ``HF_TOKEN``,
recommended parity set), Terminal-Bench 2.1 (harness required, default ``terminus-2``,
categories and difficulties), GDPVal (judge), BrowseComp (pinned grader: judge key only),
SWE-bench Verified (harness optional), Toolathlon-Verified (no harness support), a Harbor
registry benchmark that is ready and lists unavailable tasks (``[verifier]`` allowed), one
still syncing and one whose sync failed.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

CATALOG_CREATOR = "Osmosis"


def _h(*parts: object) -> int:
    """A stable 64-bit hash of the parts (Python's ``hash`` is salted per process)."""
    raw = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big")


def benchmark_id(key: str) -> str:
    """Deterministic benchmark id from its key, so ids are the same in every data dir."""
    return "bm_" + hashlib.sha256(("benchmark:" + key).encode()).hexdigest()[:20]


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` observed over ``n`` trials."""
    if n <= 0:
        return (0.0, 0.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _assign(names: list[str], counts: list[tuple[str, int]], salt: str) -> dict[str, str]:
    """Spread categories over tasks with exact per-category counts, in a hashed order."""
    order = sorted(names, key=lambda n: _h(salt, n))
    out: dict[str, str] = {}
    i = 0
    for category, count in counts:
        for name in order[i : i + count]:
            out[name] = category
        i += count
    return out


def _difficulty(salt: str, name: str, weights: tuple[int, int, int, int]) -> str | None:
    """easy / medium / hard / None by hashed weights (None = the source gave none)."""
    roll = _h(salt, "difficulty", name) % sum(weights)
    for level, weight in zip(("easy", "medium", "hard", None), weights, strict=True):
        if roll < weight:
            return level
        roll -= weight
    return None


def _leaderboard(
    key: str, n_tasks: int, task_set: str, rows: list[tuple[str, str | None, float, float, int]]
) -> list[dict[str, Any]]:
    """Leaderboard entries from (model, harness, pass@1, cost/task, tokens/task) rows."""
    ranked = sorted(rows, key=lambda r: -r[2])
    out: list[dict[str, Any]] = []
    best = ranked[0][2] if ranked else None
    for i, (model, harness, value, cost, tokens) in enumerate(ranked):
        low, high = wilson(value, n_tasks)
        k_value = min(1.0, value + (1 - value) * 0.18)
        k_low, k_high = wilson(k_value, n_tasks)
        run_id = "bmr_lb" + hashlib.sha256(f"{key}:{model}:{harness}".encode()).hexdigest()[:12]
        out.append(
            {
                "rank": i + 1 if value != best or i == 0 else 1,
                "tied": value == best and sum(1 for r in ranked if r[2] == best) > 1,
                "task_set": task_set,
                "harness": harness,
                "model": model,
                "pass_at_1": {
                    "value": round(value, 4),
                    "ci_low": round(low, 4),
                    "ci_high": round(high, 4),
                    "n": n_tasks,
                    "method": "wilson",
                },
                "pass_at_k": [
                    {
                        "k": 2,
                        "value": round(k_value, 4),
                        "ci_low": round(k_low, 4),
                        "ci_high": round(k_high, 4),
                        "n": n_tasks,
                    }
                ],
                "cost_per_task": cost,
                "reported_cost_usd": round(cost * n_tasks, 2),
                "mean_duration_seconds": 40 + _h(key, model, "dur") % 400,
                "tokens_per_task": tokens,
                "run": {"id": run_id, "name": None, "platform_url": None},
            }
        )
    return out


# --------------------------------------------------------------------------- task lists

_TB_VERBS = [
    "build", "fix", "configure", "debug", "migrate", "optimize", "recover", "secure",
    "profile", "compile", "package", "deploy", "parse", "train", "audit", "patch",
    "restore", "schedule", "convert", "extract", "validate", "bisect",
]  # fmt: skip
_TB_NOUNS = [
    "nginx-proxy", "cython-extension", "sqlite-index", "rust-workspace", "kernel-module",
    "cron-jobs", "postgres-replica", "tls-certificates", "python-wheel", "docker-image",
    "json-logs", "csv-pipeline", "ssh-tunnel", "redis-cache", "makefile", "grpc-service",
    "wasm-module", "onnx-model", "fortran-solver", "latex-report", "shell-history",
    "zip-archive",
]  # fmt: skip
TB_CATEGORIES = [
    ("software-engineering", 30),
    ("system-administration", 16),
    ("security", 10),
    ("data-science", 9),
    ("scientific-computing", 8),
    ("debugging", 7),
    ("machine-learning", 5),
    ("games", 4),
]


def _terminal_bench_tasks() -> list[dict[str, Any]]:
    names = ["terminal-bench/git-multibranch"]
    i = 0
    while len(names) < 89:
        verb = _TB_VERBS[_h("tb-verb", i) % len(_TB_VERBS)]
        noun = _TB_NOUNS[_h("tb-noun", i) % len(_TB_NOUNS)]
        name = f"terminal-bench/{verb}-{noun}"
        if name not in names:
            names.append(name)
        i += 1
    cats = _assign(names, TB_CATEGORIES, "tb")
    return [
        {"name": n, "category": cats[n], "difficulty": _difficulty("tb", n, (20, 45, 30, 5))}
        for n in names
    ]


HLE_CATEGORIES = [
    ("Math", 1021),
    ("Biology/Medicine", 280),
    ("Computer Science/AI", 241),
    ("Other", 233),
    ("Physics", 230),
    ("Humanities/Social Science", 219),
    ("Chemistry", 165),
    ("Engineering", 111),
]


def _hle_tasks() -> list[dict[str, Any]]:
    names = [
        "hle/" + hashlib.sha256(f"hle-question-{i}".encode()).hexdigest()[:24] for i in range(2500)
    ]
    cats = _assign(names, HLE_CATEGORIES, "hle")
    # HLE gives no difficulty: null, never inferred (platform-api.md E2).
    return [{"name": n, "category": cats[n], "difficulty": None} for n in names]


GDPVAL_CATEGORIES = [
    ("Professional, Scientific, and Technical Services", 35),
    ("Health Care and Social Assistance", 30),
    ("Finance and Insurance", 30),
    ("Information", 25),
    ("Manufacturing", 25),
    ("Government", 20),
    ("Retail Trade", 20),
    ("Real Estate and Rental and Leasing", 20),
    ("Wholesale Trade", 15),
]


def _gdpval_tasks() -> list[dict[str, Any]]:
    names = [f"gdpval/task-{i:03d}" for i in range(220)]
    cats = _assign(names, GDPVAL_CATEGORIES, "gdpval")
    return [{"name": n, "category": cats[n], "difficulty": None} for n in names]


SWE_REPOS = [
    ("django/django", 231),
    ("sympy/sympy", 75),
    ("sphinx-doc/sphinx", 44),
    ("matplotlib/matplotlib", 34),
    ("scikit-learn/scikit-learn", 32),
    ("pydata/xarray", 22),
    ("astropy/astropy", 22),
    ("pytest-dev/pytest", 19),
    ("pylint-dev/pylint", 10),
    ("psf/requests", 8),
    ("mwaskom/seaborn", 2),
    ("pallets/flask", 1),
]


def _swe_tasks() -> list[dict[str, Any]]:
    tasks = []
    for repo, count in SWE_REPOS:
        owner, name = repo.split("/")
        number = 1000 + _h("swe", repo) % 5000
        for _ in range(count):
            number += 1 + _h("swe-step", repo, number) % 97
            task = f"{owner}__{name}-{number}"
            tasks.append(
                {
                    "name": task,
                    "category": repo,
                    "difficulty": _difficulty("swe", task, (39, 52, 9, 0)),
                }
            )
    return tasks


TOOLATHLON_CATEGORIES = [
    ("productivity", 30),
    ("devops", 22),
    ("finance", 18),
    ("education", 14),
    ("e-commerce", 14),
    ("research", 10),
]


def _toolathlon_tasks() -> list[dict[str, Any]]:
    names = [f"toolathlon/{c}-{i:02d}" for c, n in TOOLATHLON_CATEGORIES for i in range(n)]
    cats = {n: n.split("/")[1].rsplit("-", 1)[0] for n in names}
    return [
        {"name": n, "category": cats[n], "difficulty": _difficulty("tool", n, (25, 50, 25, 0))}
        for n in names
    ]


def _browsecomp_tasks() -> list[dict[str, Any]]:
    names = [f"browsecomp/q{i:04d}" for i in range(1266)]
    return [{"name": n, "category": None, "difficulty": None} for n in names]


def _categories(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: dict[str, int] = {}
    for task in tasks:
        if task.get("category") is not None:
            counts[task["category"]] = counts.get(task["category"], 0) + 1
    return [{"name": n, "task_count": c} for n, c in sorted(counts.items(), key=lambda x: -x[1])]


def _benchmark(
    key: str,
    name: str,
    tasks: list[dict[str, Any]],
    *,
    description: str,
    source_type: str = "osmosis_managed",
    source_url: str | None = None,
    runner_family: str = "harbor",
    supports_harness: bool = True,
    requires_harness: bool = False,
    default_harness: str | None = None,
    requires_judge_model: bool = False,
    requires_judge_api_key: bool = False,
    judge_model_default: str | None = None,
    pass_threshold: float = 1.0,
    required_secret_names: list[str] | None = None,
    task_sets: list[tuple[str, int, bool, str]] | None = None,
    sync_status: str = "ready",
    synced_task_count: int | None = None,
    task_count: int | None = None,
    sync_error: str | None = None,
    leaderboard: list[tuple[str, str | None, float, float, int]] | None = None,
    skill_bias: float = 0.0,
    unavailable: tuple[str, list[str]] | None = None,
    pending_tasks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    members: dict[str, list[str]] = {}
    sets: list[dict[str, Any]] = []
    for set_name, count, recommended, set_description in task_sets or []:
        ordered = sorted((t["name"] for t in tasks), key=lambda n: _h(key, set_name, n))
        members[set_name] = sorted(ordered[:count])
        sets.append(
            {
                "name": set_name,
                "task_count": count,
                "recommended": recommended,
                "description": set_description,
            }
        )
    n_tasks = len(tasks) if task_count is None else task_count
    board_set, board_n = ("full", len(tasks))
    for set_name, count, recommended, _ in task_sets or []:
        if recommended:
            board_set, board_n = set_name, count
    return {
        "id": benchmark_id(key),
        "name": name,
        "description": description,
        "source_type": source_type,
        "source_ref": key,
        "source_url": source_url,
        "task_count": n_tasks,
        "category_count": len(_categories(tasks)),
        "task_sets": sets,
        "sync_status": sync_status,
        "synced_task_count": n_tasks if synced_task_count is None else synced_task_count,
        "sync_error": sync_error,
        "platform_url": None,  # filled per workspace when served
        "runner_family": runner_family,
        "supports_harness": supports_harness,
        "requires_harness": requires_harness,
        "default_harness": default_harness,
        "requires_judge_model": requires_judge_model,
        "requires_judge_api_key": requires_judge_api_key,
        "judge_model_default": judge_model_default,
        "pass_threshold": pass_threshold,
        "required_secret_names": list(required_secret_names or []),
        "categories": _categories(tasks),
        "tasks": tasks,
        "unavailable_tasks": None
        if unavailable is None
        else {
            "reason": unavailable[0],
            "tasks": [{"name": n, "category": None, "difficulty": None} for n in unavailable[1]],
        },
        "_pending_tasks": list(pending_tasks or []),
        "_task_set_members": members,
        "_leaderboard": _leaderboard(key, board_n, board_set, leaderboard or []),
        "_skill_bias": skill_bias,
    }


def seed_catalog() -> list[dict[str, Any]]:
    """The benchmarks every local Platform data dir starts with."""
    tb_tasks = _terminal_bench_tasks()
    acme_tasks = [
        {"name": f"acme/custom/case-{i:03d}", "category": "custom", "difficulty": None}
        for i in range(120)
    ]
    return [
        _benchmark(
            "hle",
            "HLE",
            _hle_tasks(),
            description="Humanity's Last Exam: expert-written questions across academic "
            "subjects, graded by an LLM judge.",
            source_url="https://lastexam.ai",
            requires_judge_model=True,
            requires_judge_api_key=True,
            judge_model_default="openai/gpt-5",
            required_secret_names=["HF_TOKEN"],
            task_sets=[("parity", 249, True, "Stratified sample used for published scores.")],
            leaderboard=[
                ("openai/gpt-5", "codex", 0.253, 0.41, 38_000),
                ("anthropic/claude-sonnet-4", "claude-code", 0.187, 0.52, 45_500),
                ("google/gemini-2.5-pro", None, 0.213, 0.33, 31_200),
                ("deepseek/deepseek-r1", None, 0.086, 0.07, 27_900),
            ],
            skill_bias=-0.45,
        ),
        _benchmark(
            "terminal-bench-2-1",
            "Terminal-Bench 2.1",
            tb_tasks,
            description="Hard, realistic tasks solved by an agent in a Linux terminal.",
            source_url="https://www.tbench.ai",
            requires_harness=True,
            default_harness="terminus-2",
            leaderboard=[
                ("openai/gpt-5", "terminus-2", 0.494, 1.84, 1_100_000),
                ("anthropic/claude-sonnet-4", "terminus-2", 0.427, 2.31, 1_420_000),
                ("anthropic/claude-sonnet-4", "claude-code", 0.438, 2.02, 1_250_000),
                ("google/gemini-2.5-pro", "terminus-2", 0.326, 1.12, 960_000),
            ],
            skill_bias=-0.1,
        ),
        _benchmark(
            "gdpval",
            "GDPVal",
            _gdpval_tasks(),
            description="Economically valuable knowledge-work tasks across occupations, "
            "graded against expert deliverables by an LLM judge.",
            source_url="https://openai.com/index/gdpval/",
            requires_judge_model=True,
            requires_judge_api_key=True,
            judge_model_default="openai/gpt-5",
            pass_threshold=0.5,
            leaderboard=[
                ("anthropic/claude-opus-4-1", None, 0.476, 0.88, 64_000),
                ("openai/gpt-5", None, 0.406, 0.61, 52_000),
            ],
        ),
        _benchmark(
            "browsecomp",
            "BrowseComp",
            _browsecomp_tasks(),
            description="Hard-to-find facts that need persistent web browsing; answers "
            "checked by a pinned grader.",
            source_url="https://openai.com/index/browsecomp/",
            requires_judge_api_key=True,
            leaderboard=[("openai/gpt-5", "codex", 0.549, 0.29, 210_000)],
            skill_bias=-0.2,
        ),
        _benchmark(
            "swe-bench-verified",
            "SWE-bench Verified",
            _swe_tasks(),
            description="Human-validated GitHub issues from 12 Python repositories; the "
            "agent's patch must pass the hidden tests.",
            source_url="https://www.swebench.com",
            leaderboard=[
                ("anthropic/claude-sonnet-4", "mini-swe-agent", 0.648, 0.39, 610_000),
                ("openai/gpt-5", "mini-swe-agent", 0.652, 0.28, 540_000),
                ("openai/gpt-5", "codex", 0.712, 0.47, 720_000),
            ],
            skill_bias=0.1,
        ),
        _benchmark(
            "toolathlon-verified",
            "Toolathlon-Verified",
            _toolathlon_tasks(),
            description="Long-horizon tasks across real software tools, run with the "
            "official Toolathlon scaffold.",
            source_url="https://toolathlon.xyz",
            runner_family="toolathlon",
            supports_harness=False,
            leaderboard=[("anthropic/claude-sonnet-4", None, 0.384, 1.21, 890_000)],
            skill_bias=-0.15,
        ),
        _benchmark(
            "acme/support-tickets@2.0",
            "acme/support-tickets",
            [
                {
                    "name": f"acme/support-tickets/{area}-{i:02d}",
                    "category": area,
                    "difficulty": _difficulty("acme-st", f"{area}-{i}", (30, 50, 20, 0)),
                }
                for area, count in (("billing", 12), ("shipping", 10), ("returns", 8))
                for i in range(count)
            ],
            description="A Harbor registry dataset of customer-support tasks, checked by the "
            "dataset's own verifier.",
            source_type="harbor_registry",
            source_url="https://registry.harborframework.com/datasets/acme/support-tickets",
            pass_threshold=0.8,
            unavailable=(
                "Fixture files missing from the 2.0 release",
                ["acme/support-tickets/returns-08", "acme/support-tickets/returns-09"],
            ),
            leaderboard=[("openai/gpt-5", "codex", 0.71, 0.12, 18_000)],
        ),
        _benchmark(
            "acme/custom@1.0",
            "acme/custom",
            acme_tasks[:45],
            description="A Harbor registry dataset added to this workspace; its task list "
            "is still paging in.",
            source_type="harbor_registry",
            source_url="https://registry.harborframework.com/datasets/acme/custom",
            sync_status="syncing",
            task_count=120,
            synced_task_count=45,
            pending_tasks=acme_tasks[45:],
        ),
        _benchmark(
            "acme/broken-eval@0.3",
            "acme/broken-eval",
            [],
            description="A Harbor registry dataset whose sync failed.",
            source_type="harbor_registry",
            source_url="https://registry.harborframework.com/datasets/acme/broken-eval",
            sync_status="failed",
            task_count=12,
            synced_task_count=0,
            sync_error="Registry returned 404 for acme/broken-eval@0.3: tag not found.",
            pending_tasks=[
                {"name": f"acme/broken-eval/case-{i:02d}", "category": None, "difficulty": None}
                for i in range(12)
            ],
        ),
    ]


def public_view(spec: dict[str, Any]) -> dict[str, Any]:
    """The E2 ``benchmark`` object: the spec without its private keys."""
    return {k: v for k, v in spec.items() if not k.startswith("_")}


def with_sync(
    spec: dict[str, Any], sync_status: str, synced: int | None, error: str | None
) -> dict[str, Any]:
    """``spec`` with its sync moved to ``sync_status``: on ``ready`` the tasks the sync had
    not listed yet join the list and every count follows it; otherwise ``synced`` (when
    given) is how many tasks it has listed, never more than the benchmark has."""
    out = dict(spec)
    out["sync_status"] = sync_status
    out["sync_error"] = error if sync_status == "failed" else None
    if sync_status == "ready":
        out["tasks"] = [*spec.get("tasks", []), *spec.get("_pending_tasks", [])]
        out["_pending_tasks"] = []
        out["categories"] = _categories(out["tasks"])
        out["category_count"] = len(out["categories"])
        out["task_count"] = len(out["tasks"]) or spec.get("task_count", 0)
        out["synced_task_count"] = out["task_count"]
    elif synced is not None:
        out["synced_task_count"] = max(0, min(int(synced), int(out.get("task_count") or 0)))
    return out
