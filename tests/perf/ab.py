"""Side by side: ``make perf``'s apply and download scenarios for several source trees.

Run from this tree: ``python -m tests.perf.ab apply|download TREE [TREE ...] [--rounds K]
[--runs N] [--parallelism 1,8] [--latency-ms MS] [--callgrind]``; e.g. a351ca0 in a
detached worktree against this tree: ``python -m tests.perf.ab apply /work/wt-a351 .``.

One harness for every tree: this tree's workload generator and local Platform (served by
this tree, in its own process) and one driver (``tests/perf/ab_driver.py``, run with
``PYTHONPATH=TREE``), so only the measured ``reconciler`` differs. The trees take turns in
each round (interleaved, so load from elsewhere hits them alike); a tree may carry driver
knobs after ``@`` (``.@AB_PREHTTP=1``; see ``ab_driver``). A download scenario's lockfile is
written by each tree's own ``tests.perf.workload`` (format 1 before b978c3e, 2 after) from
the same runs.

Prints one JSON line per driver run, then per tree and parallelism the medians of wall
seconds, CPU seconds (``process_time``: every thread, user and system; the system part apart) and, with
``--callgrind``, the instructions of the measured region (valgrind's callgrind, every
thread; deterministic up to thread interleaving, so it survives a loaded machine), each
per item and against the first tree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.perf.bench_config import generate
from tests.perf.workload import Server, config_body, seed_platform, seed_workspace_secrets

DRIVER = Path(__file__).with_name("ab_driver.py")

_BUILD = """
import sys
from pathlib import Path
from reconciler.platform import PlatformClient
from tests.perf.workload import build_plan_repo

class Served:
    url = sys.argv[2]

    def client(self):
        return PlatformClient(self.url, token="local", workspace="perf")

n = int(sys.argv[3])
repo = build_plan_repo(Path(sys.argv[1]), Served(), n, n, churn=False, outputs=False)
print(repo.root)
"""


def _tree(spec: str) -> tuple[Path, dict[str, str]]:
    path, _, knobs = spec.partition("@")
    env = dict(kv.split("=", 1) for kv in knobs.split(",") if kv)
    return Path(path).resolve(), env


def drive(spec: str, argv: list[object], callgrind: Path | None) -> dict:
    tree, knobs = _tree(spec)
    env = {**os.environ, "PYTHONPATH": str(tree), **knobs}
    command = [sys.executable, str(DRIVER), *map(str, argv)]
    if callgrind is not None:
        for old in callgrind.parent.glob(callgrind.name + "*"):
            old.unlink()
        command = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind}",
            "--zero-before=getppid", "--dump-before=getpgrp", *command,
        ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=tree, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"driver failed in {spec}:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if callgrind is not None:
        dump = Path(f"{callgrind}.1")  # the --dump-before dump: the measured region only
        totals = [ln for ln in dump.read_text().splitlines() if ln.startswith("totals:")]
        result["instructions"] = int(totals[0].split()[1])
    return result


def build_download_repo(spec: str, root: Path, url: str, runs: int) -> Path:
    tree, _ = _tree(spec)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, str(root), url, str(runs)],
        capture_output=True, text=True, cwd=tree, env=env,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"building the download repository in {spec}:\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["apply", "download"])
    parser.add_argument("trees", nargs="+", help="source trees, each PATH[@KNOB=V,...]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, help="submits or runs (default 500 or 200)")
    parser.add_argument("--parallelism", default="8", help="comma-separated, e.g. 1,8")
    parser.add_argument("--latency-ms", type=int, help="default 20 (apply) or 0 (download)")
    parser.add_argument("--callgrind", action="store_true")
    args = parser.parse_args(argv)
    apply = args.scenario == "apply"
    n = args.runs or (500 if apply else 200)
    latency = args.latency_ms if args.latency_ms is not None else (20 if apply else 0)
    levels = [int(p) for p in args.parallelism.split(",")]
    results: dict[tuple[int, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "platform"
        if apply:
            seed_platform(data, 0, 0)
            generate(work / "repo", n)
        else:
            seed_platform(data, n, 0, mix={"finished": 1.0}, body=config_body(1))
        with Server(data, latency_ms=latency) as server:
            repos: dict[str, tuple[Path, bytes]] = {}
            if not apply:
                for k, spec in enumerate(args.trees):
                    root = build_download_repo(spec, work / f"t{k}", server.url, n)
                    repos[spec] = (root, (root / "state" / "osmosis.lock").read_bytes())
            turn = 0
            for rnd in range(args.rounds):
                for level in levels:
                    for k, spec in enumerate(args.trees):
                        turn += 1
                        trace = work / f"cg-{rnd}-{level}-{k}.out" if args.callgrind else None
                        if apply:
                            workspace = f"ab-{turn}"  # nothing submitted there yet
                            seed_workspace_secrets(data, workspace)
                            shutil.rmtree(work / "repo" / "state", ignore_errors=True)
                            argv_ = ["apply", work / "repo", server.url, workspace, level]
                        else:
                            root, pristine = repos[spec]
                            shutil.rmtree(root / ".osmosis", ignore_errors=True)
                            (root / "state" / "osmosis.lock").write_bytes(pristine)
                            argv_ = ["download", root, server.url, "perf", level]
                        result = drive(spec, argv_, trace)
                        if result["succeeded"] != n or result["failed"]:
                            raise RuntimeError(f"{spec}: {result}")
                        results.setdefault((level, spec), []).append(result)
                        print(json.dumps({"tree": spec, "parallelism": level, **result}))
    print(f"\n{args.scenario}, {n} items, {latency} ms, medians of {args.rounds}:")
    for level in levels:
        first: dict[str, float] = {}
        for spec in args.trees:
            rows = results[(level, spec)]
            line = f"  p={level} {spec}:"
            for key, scale, unit in (
                ("seconds", 1.0, "s wall"),
                ("cpu_seconds", 1e3 / n, "ms CPU/item"),
                ("system_seconds", 1e3 / n, "ms of it system"),
                ("instructions", 1e-6 / n, "M instr/item"),
            ):
                if key not in rows[0]:
                    continue
                value = statistics.median(r[key] for r in rows) * scale
                base = first.setdefault(key, value)
                line += f"  {value:.3f} {unit} ({value / base - 1:+.1%})"
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
