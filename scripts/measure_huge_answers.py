"""Print the peak memory of a command that meets a 1 GB answer (issue 23, finding 4).

    .venv/bin/python scripts/measure_huge_answers.py [--size-mb 1024]

Runs ``osmosis-plan`` against a "Platform" and ``osmosis-ci comment`` against a "GitHub"
that answer every request with SIZE bytes (with and without ``Content-Length``), on
loopback, and prints each command's exit code, wall time and peak RSS (the child's own
``ru_maxrss`` from ``os.wait4``). The tests in tests/integration/test_hostile_servers.py
assert the same runs stay under 300 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.hostile_http import HostileServer, run_measured  # noqa: E402

BIN = Path(sys.executable).parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    size = parser.parse_args().size_mb * 1024 * 1024
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "OSMOSIS_"))}
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(ROOT / "benchmarks", repo / "benchmarks")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        (repo / "plan.md").write_text("Plan: nothing to do.\n")
        print(f"{'command':<14} {'answer':<28} {'exit':>4} {'seconds':>8} {'peak RSS MB':>12}")
        for announce in (True, False):
            label = f"{size // 2**20} MiB, " + ("Content-Length" if announce else "no length")
            server = HostileServer("huge", size=size, announce=announce).start()
            try:
                runs = {
                    "osmosis-plan": (
                        [
                            str(BIN / "osmosis-plan"),
                            "--dir",
                            str(repo),
                            "--platform",
                            server.url,
                            "--workspace",
                            "acme",
                        ],
                        {**base, "OSMOSIS_TOKEN": "tok-measure-0123456789"},
                    ),
                    "osmosis-ci": (
                        [
                            str(BIN / "osmosis-ci"),
                            "--dir",
                            str(repo),
                            "comment",
                            "--pr",
                            "1",
                            "--body-file",
                            "plan.md",
                        ],
                        {
                            **base,
                            "GITHUB_TOKEN": "ghs_measure_0123456789",
                            "GITHUB_API_URL": server.url,
                            "GITHUB_REPOSITORY": "acme/bench",
                        },
                    ),
                }
                for name, (argv, env) in runs.items():
                    done = run_measured(argv, env=env, cwd=str(repo))
                    print(
                        f"{name:<14} {label:<28} {done.code:>4} {done.seconds:>8.2f} "
                        f"{done.peak_rss_mb:>12.1f}"
                    )
            finally:
                server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
