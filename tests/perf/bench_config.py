"""Benchmark: ``load_configs`` on 5,000 generated configs vs. ``tomllib`` alone.

Run: ``python -m tests.perf.bench_config [--configs N] [--runs R]``. Prints the median of R
runs of each and the ratio. Not a test: no timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tomllib
from pathlib import Path

from reconciler.config import load_configs

HARNESSES = ("codex", "claude-code", "terminus-2")
MODELS = ("openai/gpt-5.2", "anthropic/claude-sonnet-4", "openai/gpt-5")


def config_text(i: int) -> str:
    """A realistic config; every tenth has two agents, every seventh an endpoint model."""
    agents = [
        f'[[agents]]\nharness = "{HARNESSES[i % 3]}"\n\n[agents.model]\ntype = "provider"\n'
        f'model = "{MODELS[i % 3]}"\napi_key_secret = "OPENAI_API_KEY"\n'
    ]
    if i % 10 == 0:
        agents.append(
            '[[agents]]\nharness = "claude-code"\nmodel = { type = "provider", '
            'model = "anthropic/claude-sonnet-4", api_key_secret = "ANTHROPIC_API_KEY" }\n'
            f'env = {{ RUN_INDEX = "{i}" }}\n'
        )
    if i % 7 == 0:
        agents.append(
            '[[agents]]\nharness = "terminus-2"\n[agents.model]\ntype = "endpoint"\n'
            'base_url = "https://llm.internal.example.com/v1"\nmodel = "our-org/coder"\n'
            'api_key_secret = "MY_ENDPOINT_KEY"\n[agents.model.extra_headers]\n'
            'X-Routing-Pool = "benchmarks"\n'
        )
    return (
        f'# generated config {i}\n\n[experiment]\nbenchmark = "terminal-bench-2-1"\n\n'
        '[tasks]\ntask_names = ["terminal-bench/git-multibranch"]\n\n'
        + "\n".join(agents)
        + f"\n[execution]\nattempts_per_task = {1 + i % 3}\nmax_concurrent_attempts = 2\n"
        'timeout_multiplier = 1.0\nmax_retries = 0\n\n[env]\nLOG_LEVEL = "info"\n'
    )


def generate(root: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = root / "benchmarks" / f"group-{i % 50:02d}" / f"run-{i:05d}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config_text(i))
        paths.append(path)
    return paths


def tomllib_only(paths: list[Path]) -> int:
    parsed = 0
    for path in paths:
        with open(path, "rb") as handle:
            tomllib.load(handle)
        parsed += 1
    return parsed


def median_seconds(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = sorted(generate(root, args.configs))
        result = load_configs(root)
        assert result.ok and len(result.runs) == args.configs, result.issues[:3]
        load = median_seconds(lambda: load_configs(root), args.runs)
        parse = median_seconds(lambda: tomllib_only(paths), args.runs)
    print(f"configs: {args.configs}, runs: {args.runs} (median)")
    print(
        f"load_configs (discover+parse+validate+spec+digest): {load * 1000:8.1f} ms "
        f"({load / args.configs * 1e6:6.1f} us/config)"
    )
    print(
        f"tomllib only (open+parse the same files):           {parse * 1000:8.1f} ms "
        f"({parse / args.configs * 1e6:6.1f} us/config)"
    )
    print(f"ratio load_configs / tomllib: {load / parse:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
