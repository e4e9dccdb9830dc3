"""Benchmark: the worst configs the 1 MiB size limit allows, validated one per fresh process.

Run: ``python -m tests.perf.bench_hostile_config [--runs R]``. For each shape it writes one
config of (nearly) 1 MiB into a temporary repository, runs ``load_configs`` (what
``osmosis-plan --validate-only`` does) in a fresh interpreter and prints the median wall
time of the call, the peak RSS of the process and the first issue. The goal (issue 17):
every shape validates or fails clearly in under 2 s and 200 MB. Not a test: no timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LIMIT = 1024 * 1024
GOAL_S = 2.0
GOAL_MB = 200

SHAPES: dict[str, str] = {
    # One table header as deep as the size limit allows (524,286 levels).
    "deepest header": '"[" + ".".join(["a"] * ((L - 3) // 2)) + "]\\n"',
    # The 269 KB file of the issue: 40,000 levels (35 s and > 6 GB before).
    "header of 40,000 levels": '"[" + ".".join(f"t{i}" for i in range(40_000)) + "]\\n"',
    "deepest dotted key": '".".join(["a"] * ((L - 6) // 2)) + " = 1\\n"',
    "deepest arrays": '"x = " + "[" * ((L - 6) // 2) + "]" * ((L - 6) // 2) + "\\n"',
    "deepest inline tables": '"x = " + "{a=" * ((L - 10) // 4) + "1" + "}" * ((L - 10) // 4) + "\\n"',
    "104,857 unknown tables": '"".join(f"[t{i}]\\n" for i in range(L // 10))',
    "87,381 unknown keys": (
        '\'[experiment]\\nbenchmark = "hle"\\n\' + "".join(f"k{i} = 1\\n" for i in range(L // 12))'
    ),
    "14,563 headers of 32 levels": (
        '"".join("[" + ".".join(["a"] * 31) + f".k{i}]\\n" for i in range(L // 72))'
    ),
    "95,325 [[agents]]": '"[[agents]]\\n" * (L // 11)',
    "1 MiB string of dots": "'x = \"' + '.' * (L - 10) + '\"\\n'",
}

CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
from reconciler.config import load_configs
L = {limit}
text = {expr}
assert len(text.encode()) <= L
root = Path(tempfile.mkdtemp())
(root / "benchmarks").mkdir()
(root / "benchmarks" / "x.toml").write_text(text)
start = time.perf_counter()
result = load_configs(root)
seconds = time.perf_counter() - start
issue = result.issues[0].render() if result.issues else "valid"
print(json.dumps({{"bytes": len(text.encode()), "seconds": seconds,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "issues": len(result.issues), "first": issue}}))
"""


def measure(expr: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(limit=LIMIT, expr=expr)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[2],
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory():
        print(f"{'shape':<27} {'bytes':>9} {'median s':>9} {'peak MB':>8}  met  first issue")
        worst = {"seconds": 0.0, "rss_mb": 0.0}
        for name, expr in SHAPES.items():
            rows = [measure(expr) for _ in range(args.runs)]
            seconds = statistics.median(r["seconds"] for r in rows)
            rss = max(r["rss_mb"] for r in rows)
            worst["seconds"] = max(worst["seconds"], seconds)
            worst["rss_mb"] = max(worst["rss_mb"], rss)
            met = "yes" if seconds < GOAL_S and rss < GOAL_MB else "NO"
            print(
                f"{name:<27} {rows[0]['bytes']:>9,} {seconds:>9.2f} {rss:>8.0f}  {met:<3}  "
                f"{rows[0]['first'].removeprefix('benchmarks/x.toml:')[:70]}"
            )
        print(
            f"\nworst: {worst['seconds']:.2f} s, {worst['rss_mb']:.0f} MB "
            f"(goal: under {GOAL_S:g} s and {GOAL_MB} MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
