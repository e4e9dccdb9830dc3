"""``make perf``: many projects in one repository (issue 38, docs/projects.md).

Run: ``python -m tests.perf.bench_projects [--projects 50] [--configs 1000]
[--workspaces 5] [--latency-ms 200]``. Builds a repository of P projects (``teams/pNN``)
holding C configs between them over W workspaces, serves the local Platform from its own
process answering every call after ``--latency-ms``, then times at the root:

* a pull request touching one project's config: ``osmosis-plan --changed-since HEAD~1``
  (goal <= 5 s at 50 projects and 200 ms per call);
* every project: ``osmosis-plan --all`` (goal <= 60 s on 2 cores);
* the same, serially: ``osmosis-plan --all --parallelism 1`` (the reference).

Not a test: nothing fails on a slow machine; the table says what was met.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.perf.bench_config import config_text
from tests.perf.workload import SECRETS
from tests.support.git import commit, git

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def build(repo: Path, projects: int, configs: int, workspaces: int) -> None:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text(".osmosis/\n", encoding="utf-8")
    (repo / "osmosis.toml").write_text(
        'projects = ["teams/*"]\nmax_attempts = 1000000\n', encoding="utf-8"
    )
    per = max(1, configs // projects)
    for p in range(projects):
        home = repo / "teams" / f"p{p:02d}"
        (home / "benchmarks").mkdir(parents=True)
        (home / "osmosis.toml").write_text(
            f'id = "p{p:02d}"\nworkspace = "ws{p % workspaces}"\n', encoding="utf-8"
        )
        for c in range(per):
            (home / "benchmarks" / f"c{c:03d}.toml").write_text(
                config_text(p * per + c), encoding="utf-8"
            )
    commit(repo, "projects")
    touched = repo / "teams" / f"p{min(7, projects - 1):02d}" / "benchmarks" / "c000.toml"
    touched.write_text(touched.read_text(encoding="utf-8") + "# touched\n", encoding="utf-8")
    commit(repo, "touch one project")


def serve(data: Path, workspaces: int, latency_ms: int) -> tuple[subprocess.Popen[str], str]:
    from reconciler.local_platform import LocalPlatform

    names = [f"ws{w}" for w in range(workspaces)]
    platform = LocalPlatform(data, workspaces=tuple(names))
    for name in names:
        for secret in SECRETS:
            platform.set_secret(name, secret, f"perf-{secret.lower()}-value")
    platform.store.close()
    args = [sys.executable, "-m", "tests.perf.serve", str(data), "--latency-ms", str(latency_ms)]
    for name in names:
        args += ["--workspace", name]
    proc = subprocess.Popen(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def timed(repo: Path, url: str, *args: str) -> tuple[float, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OSMOSIS_", "GITHUB_"))}
    env["OSMOSIS_TOKEN"] = "perf-token"
    start = time.perf_counter()
    done = subprocess.run(
        [str(BIN / "osmosis-plan"), "--dir", str(repo), "--platform", url, "--format", "json",
         "--log-format", "json", *args],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    document = json.loads(done.stdout)
    if done.returncode != 0:
        raise RuntimeError(
            f"osmosis-plan {' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}"
        )
    return seconds, document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=50)
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--workspaces", type=int, default=5)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--no-serial", action="store_true", help="skip the serial reference")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="osmosis-perf-projects-") as tmp:
        repo = Path(tmp) / "repo"
        build(repo, args.projects, args.configs, args.workspaces)
        proc, url = serve(Path(tmp) / "platform", args.workspaces, args.latency_ms)
        try:
            one, doc = timed(repo, url, "--changed-since", "HEAD~1")
            selected = [p["id"] for p in doc["projects"]]
            every, doc_all = timed(repo, url, "--all")
            serial = None
            if not args.no_serial:
                serial, _ = timed(repo, url, "--all", "--parallelism", "1")
        finally:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.close()
            proc.wait(timeout=30)
            proc.stdout.close()
    print(
        f"projects: {args.projects} projects, {args.configs} configs, {args.workspaces} "
        f"workspaces, {args.latency_ms} ms per Platform call"
    )
    print(f"  one project changed  {one:7.2f} s  (goal <= 5 s; selected: {', '.join(selected)})")
    print(
        f"  all projects         {every:7.2f} s  (goal <= 60 s; {len(doc_all['projects'])} planned)"
    )
    if serial is not None:
        print(f"  all, serially        {serial:7.2f} s  (reference: --parallelism 1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
