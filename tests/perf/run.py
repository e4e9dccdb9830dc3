"""``make perf``: plans, applies and downloads at scale, each side by side with its floor.

Run: ``python -m tests.perf.run [--quick] [--repeat K] [--only SCENARIO] [--latency-ms MS]``.
Generates every workload in a temporary directory, serves the local Platform from a separate
process over loopback, runs each measured operation in a fresh process
(``tests.perf.driver``) and prints one table: the median of K runs, the spread (min-max),
the floor or reference, their ratio and the goal. Not a test: nothing here fails on a slow
machine; the table says what was met.
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
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.perf.workload import (
    WORKSPACE,
    PlanRepo,
    Server,
    build_plan_repo,
    config_body,
    seed_platform,
    seed_workspace_secrets,
)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def driver(mode: str, *args: object) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "tests.perf.driver", mode, *map(str, args)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"driver {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def process_seconds(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, cwd=ROOT, check=False)
    return time.perf_counter() - t0


@dataclass
class Stat:
    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def spread(self, fmt: str) -> str:
        if len(self.values) < 2:
            return "(1 run)"
        return f"{format(min(self.values), fmt)}-{format(max(self.values), fmt)}"


@dataclass
class Row:
    scenario: str
    metric: str
    value: str
    spread: str
    floor: str
    ratio: str
    goal: str
    met: str


ROWS: list[Row] = []
NOTES: list[str] = []


def row(
    scenario: str,
    metric: str,
    stat: Stat | float,
    fmt: str,
    floor: str = "",
    ratio: str = "",
    goal: str = "",
    met: bool | None = None,
) -> None:
    if isinstance(stat, Stat):
        value, spread = format(stat.median, fmt), stat.spread(fmt)
    else:
        value, spread = format(stat, fmt), ""
    ROWS.append(
        Row(
            scenario,
            metric,
            value,
            spread,
            floor,
            ratio,
            goal,
            "" if met is None else ("yes" if met else "NO"),
        )
    )


def repeat(k: int, fn: Callable[[], dict]) -> list[dict]:
    return [fn() for _ in range(k)]


def stat(results: list[dict], key: str, scale: float = 1.0) -> Stat:
    return Stat([r[key] * scale for r in results])


def log(text: str) -> None:
    sys.stderr.write(f"[perf {time.strftime('%H:%M:%S')}] {text}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- plan


def plan_size(
    work: Path, n: int, m: int, k: int, *, naive: int = 0, headline: bool = False
) -> dict:
    """Plan vs floor at one size; returns medians for the growth table."""
    extra = max(20, m // 40)
    data = work / f"plan-{n}-{m}" / "platform"
    seed_platform(data, m, extra)
    with Server(data) as server:
        repo: PlanRepo = build_plan_repo(data.parent, server, n, m)
        with server.client() as client:  # warm the server's caches before measuring
            client.list_runs()
        plans, floors, parses = [], [], []
        for _ in range(k):  # interleaved, so load from elsewhere hits both alike
            floors.append(driver("floor", repo.root, server.url))
            plans.append(driver("plan", repo.root, server.url))
            if headline:
                parses.append(driver("parse", repo.root, server.url))
        naives = [driver("naive", repo.root, server.url) for _ in range(naive)]
        # While the server is up (it closes with this block).
        traced = driver("trace", repo.root, server.url) if headline else {}
    wall, floor = stat(plans, "seconds"), stat(floors, "seconds")
    req, floor_req = plans[0]["requests"], floors[0]["requests"]
    label = f"plan N={n:,} M={m:,}"
    if headline:
        row(
            label,
            "wall s",
            wall,
            ".2f",
            f"{floor.median:.2f}",
            f"{wall.median / floor.median:.2f}x",
            "<= 1.5x floor",
            wall.median <= 1.5 * floor.median,
        )
        row("", "  floor: tomllib parse s", stat(floors, "parse"), ".2f")
        row("", "  floor: list pages s", stat(floors, "list"), ".2f")
        # The constant: one catalog info per distinct benchmark, one secrets list, and the
        # details of unrecorded same-benchmark runs that new configs could adopt.
        candidates = extra // 25
        row(
            "",
            "HTTP requests",
            req,
            "d",
            f"{floor_req}",
            f"+{req - floor_req}",
            f"floor + 2 + {candidates} cand.",
            req <= floor_req + 2 + candidates,
        )
        rss, floor_rss = stat(plans, "rss_mb"), stat(parses, "rss_mb")
        row(
            "",
            "peak RSS MB",
            rss,
            ".0f",
            f"parse {floor_rss.median:.0f}",
            f"{rss.median / floor_rss.median:.2f}x",
            "< 150",
            rss.median < 150,
        )
        NOTES.append(
            f"{label}: under tracemalloc the plan's traced peak is "
            f"{traced['traced_peak_mb']:.0f} MB, {traced['traced_held_mb']:.0f} MB held once "
            "planned; top files: "
            + ", ".join(f"{Path(f).name} {mb} MB" for f, mb, _n in traced["top"][:6])
            + "; the floor imports the tool and parses the same files with tomllib."
        )
        NOTES.append(
            f"{label}: the plan prints {plans[0]['summary']!r} "
            f"({plans[0]['drift']} drift items); the floor's list walk is "
            f"{floor_req} pages of 50 over {repo.workspace_runs:,} workspace runs."
        )
        if naives:
            nwall, nreq = stat(naives, "seconds"), naives[0]["requests"]
            row(
                "naive: one info per run",
                "wall s",
                nwall,
                ".2f",
                f"plan {wall.median:.2f}",
                f"{nwall.median / wall.median:.1f}x",
                ">= 10x slower",
                nwall.median >= 10 * wall.median,
            )
            row(
                "",
                "HTTP requests",
                nreq,
                "d",
                f"plan {req}",
                f"{nreq / req:.1f}x",
                ">= 20x more",
                nreq >= 20 * req,
            )
    return {
        "n": n,
        "m": m,
        "plan": wall.median,
        "floor": floor.median,
        "requests": req,
        "rss": stat(plans, "rss_mb").median,
    }


# --------------------------------------------------------------------------- history


def history_scenario(work: Path, k: int, total: int, managed: int) -> None:
    """A converged repository in a long-lived shared workspace: ``managed`` ended runs are
    this repository's, ``total - managed`` were made elsewhere over a month. The plan reads
    only runs newer than the lockfile's watermark (``--refresh incremental``, the default)
    against the full listing (``--refresh full``), at 0 and 50 ms of injected latency."""
    from datetime import UTC, datetime

    from reconciler.local_platform import LocalPlatform
    from reconciler.state.lockfile import read_lockfile, write_lockfile
    from tests.perf.workload import OTHER_BENCHMARK, SECRETS, TERMINAL_MIX

    data = work / "history" / "platform"
    platform = LocalPlatform(data, workspaces=(WORKSPACE,))
    for name in SECRETS:
        platform.set_secret(WORKSPACE, name, f"perf-{name.lower()}-value")
    platform.seed_runs(
        WORKSPACE, total - managed, benchmark_key=OTHER_BENCHMARK, status_mix=TERMINAL_MIX
    )
    platform.seed_runs(WORKSPACE, managed, status_mix=TERMINAL_MIX)
    benchmark = platform.resolve_benchmark("terminal-bench-2-1")
    assert benchmark is not None
    ours = benchmark["id"]
    platform.store.close()
    label = f"history {total:,} runs, {managed} ours"
    for latency in (0, 50):
        with Server(data, latency_ms=latency) as server:
            if latency == 0:
                with server.client() as client:
                    recorded = client.list_runs(benchmark_id=ours)
                    newest = max(
                        (r.created_at for r in client.run_page(0).runs if r.created_at),
                        default=datetime.now(UTC),
                    )
                repo = build_plan_repo(
                    data.parent, server, managed, managed, churn=False, listed=recorded
                )
                state = read_lockfile(repo.lockfile, platform=server.url, workspace=WORKSPACE)
                state = state.model_copy(update={"observed_until": newest})
            # Each server process listens on its own port: the state names the one in use.
            write_lockfile(repo.lockfile, state.model_copy(update={"platform": server.url}))
            runs: dict[str, list[dict]] = {"incremental": [], "full": []}
            for _ in range(k):  # interleaved, so load from elsewhere hits both alike
                for mode in runs:
                    runs[mode].append(driver("plan", repo.root, server.url, mode))
        inc, full = stat(runs["incremental"], "seconds"), stat(runs["full"], "seconds")
        req_inc, req_full = runs["incremental"][0]["requests"], runs["full"][0]["requests"]
        row(
            label if latency == 0 else "",
            f"{latency} ms: incremental s",
            inc,
            ".2f",
            f"full {full.median:.2f}",
            f"{full.median / inc.median:.1f}x faster",
        )
        row(
            "",
            f"{latency} ms: requests",
            req_inc,
            "d",
            f"full {req_full}",
            f"{req_full / req_inc:.0f}x fewer",
            "<= 10",
            req_inc <= 10,
        )
    lines = runs["incremental"][0]["output_lines"]
    row("", "plan output lines", lines, "d", "", "", "<= 40", lines <= 40)
    NOTES.append(
        f"{label}: a converged plan prints {runs['incremental'][0]['summary']!r}; the full "
        f"listing walks {req_full - (req_inc - 1)} list pages, the incremental one 1 "
        "(the newest page reaches back past the lockfile's watermark)."
    )


# --------------------------------------------------------------------------- apply


def apply_scenario(work: Path, k: int, submits: int) -> None:
    data = work / "apply" / "platform"
    seed_platform(data, 0, 0)
    repo = work / "apply" / "repo"
    from tests.perf.bench_config import generate

    generate(repo, submits)
    results: dict[int, list[dict]] = {}
    with Server(data, latency_ms=20) as server:
        for parallelism, reps in ((1, max(1, k - 1)), (8, k)):
            for rep in range(reps):
                workspace = f"apply-p{parallelism}-{rep}"
                seed_workspace_secrets(data, workspace)
                shutil.rmtree(repo / "state", ignore_errors=True)
                result = driver("apply", repo, server.url, workspace, parallelism)
                if result["submitted"] != submits:
                    raise RuntimeError(f"apply submitted {result['submitted']}: {result}")
                results.setdefault(parallelism, []).append(result)
    one, eight = stat(results[1], "seconds"), stat(results[8], "seconds")
    label = f"apply {submits} submits, 20 ms"
    row(label, "parallelism 1, s", one, ".2f")
    row(
        "",
        "parallelism 8, s",
        eight,
        ".2f",
        f"p1 {one.median:.2f}",
        f"{one.median / eight.median:.1f}x faster",
        ">= 5x faster",
        one.median >= 5 * eight.median,
    )
    row("", "requests (p8)", results[8][0]["requests"], "d", f"{submits} submits")


# --------------------------------------------------------------------------- download


DOWNLOAD_REPEAT = 7


def download_scenario(work: Path, k: int, runs: int, latency_ms: int = 0) -> None:
    """The product's downloads beside a plain httpx loop and a plain thread pool of httpx
    gets, at parallelism 1 and 8, with the server answering every request after
    ``latency_ms`` (0: loopback, where CPU is the limit; 50: a far Platform and store)."""
    data = work / f"download-{latency_ms}ms" / "platform"
    # The same shape as the generated configs (one task), so a run's outputs are the
    # summary, the results and that task's artifacts.
    seed_platform(data, runs, 0, mix={"finished": 1.0}, body=config_body(1))
    with Server(data, latency_ms=latency_ms) as server:
        repo = build_plan_repo(data.parent, server, runs, runs, churn=False, outputs=False)
        pristine = repo.lockfile.read_bytes()
        plain_root = work / f"download-{latency_ms}ms" / "plain"
        products, plains, products1, pools = [], [], [], []

        def reset() -> None:
            shutil.rmtree(repo.root / ".osmosis", ignore_errors=True)
            shutil.rmtree(plain_root, ignore_errors=True)
            repo.lockfile.write_bytes(pristine)

        for _ in range(k):  # interleaved, so load from elsewhere hits all alike
            reset()
            plains.append(driver("plain", repo.root, server.url, plain_root))
            reset()
            pools.append(driver("pool", repo.root, server.url, plain_root, 8))
            reset()
            products.append(driver("download", repo.root, server.url, 8))
            reset()
            products1.append(driver("download", repo.root, server.url, 1))
    for result in products + products1 + pools:
        if result.get("failed") or result["bytes"] != plains[0]["bytes"]:
            raise RuntimeError(f"download mismatch: {result} vs {plains[0]}")

    def rate(results: list[dict]) -> Stat:
        return Stat([r["bytes"] / r["seconds"] / 1e6 for r in results])

    plain, pool, rate1, rate8 = rate(plains), rate(pools), rate(products1), rate(products)
    label = f"download {runs} runs, {latency_ms} ms"
    row(label, "plain httpx loop MB/s", plain, ".3f")
    row("", "plain pool of 8 MB/s", pool, ".3f")
    if latency_ms == 0:
        row(
            "",
            "product p=1 MB/s",
            rate1,
            ".3f",
            f"loop {plain.median:.3f}",
            f"{rate1.median / plain.median:.0%}",
            ">= 90% of loop",
            rate1.median >= 0.9 * plain.median,
        )
        row(
            "",
            "product p=8 MB/s",
            rate8,
            ".3f",
            f"p=1 {rate1.median:.3f}",
            f"{rate8.median / rate1.median:.0%}",
            ">= 95% of p=1",
            rate8.median >= 0.95 * rate1.median,
        )
    else:
        row(
            "",
            "product p=1 MB/s",
            rate1,
            ".3f",
            f"loop {plain.median:.3f}",
            f"{rate1.median / plain.median:.0%}",
        )
        row(
            "",
            "product p=8 MB/s",
            rate8,
            ".3f",
            f"p=1 {rate1.median:.3f}",
            f"{rate8.median / rate1.median:.1f}x",
            ">= 5x p=1",
            rate8.median >= 5 * rate1.median,
        )
        row(
            "",
            "  p=8 vs plain pool",
            rate8,
            ".3f",
            f"pool {pool.median:.3f}",
            f"{rate8.median / pool.median:.0%}",
            ">= 90% of pool",
            rate8.median >= 0.9 * pool.median,
        )
    resume = max(r["resume_bytes"] for r in products + products1)
    row("", "resume: bytes sent again", resume, "d", "0", "", "0", resume == 0)
    left = max(r["replan_downloads"] for r in products + products1)
    NOTES.append(
        f"{label}: median of {k} rounds; {plains[0]['files']:,} files, "
        f"{plains[0]['bytes'] / 1e6:.1f} MB "
        f"(summary, results, artifacts); after the apply a re-plan lists {left} "
        f"downloads; the resume pass took "
        f"{statistics.median(r['resume_seconds'] for r in products):.2f} s."
    )


# --------------------------------------------------------------------------- start-up


def instructions(argv: list[str]) -> float | None:
    """Millions of instructions ``argv`` executes (valgrind's callgrind, the process itself,
    not its children such as git): unlike seconds, the count does not depend on what else
    the machine runs. None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    for line in out.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip()) / 1e6
    return None


# What a no-op plan's start-up is made of, cumulatively (instruction counts): each probe
# imports what the one before it did and more, so the differences are the parts' costs.
# httpx imports httpcore (its transport) only when a client is made; a plan makes one, so
# both are the libraries' cost, with msgspec (the value types), not the tool's.
LIBRARIES = "import msgspec, httpx, httpcore"
STARTUP_PARTS = (
    ("the libraries: msgspec, httpx, httpcore", LIBRARIES),
    ("+ the tool's modules", "import reconciler.cli.plan, reconciler.engine.plan"),
)


def startup_scenario(work: Path, k: int) -> None:
    # An installed wheel ships compiled bytecode; an editable install compiles on first
    # import, which PYTHONDONTWRITEBYTECODE (set in some CI and dev shells) turns into every
    # import. Compile first, so the figure is the tool's start-up, not the compiler's.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "reconciler")],
        capture_output=True, check=False,
    )  # fmt: skip
    data = work / "startup" / "platform"
    seed_platform(data, 10, 0)
    with Server(data) as server:
        repo = build_plan_repo(data.parent, server, 10, 10, churn=False)
        plan = str(BIN / "osmosis-plan")
        args = ["--dir", str(repo.root), "--platform", server.url, "--workspace", WORKSPACE]
        noop = [plan, *args, "--detailed-exitcode"]
        process_seconds([plan, "--help"])  # warm the page cache
        front = [str(BIN / "osmosis-reconciler"), "plan", "--help"]
        helps, noops, pythons, fronts = [], [], [], []
        for _ in range(max(5, k)):  # interleaved, so load from elsewhere hits all alike
            pythons.append(process_seconds([sys.executable, "-c", "pass"]))
            helps.append(process_seconds([plan, "--help"]))
            fronts.append(process_seconds(front))
            noops.append(process_seconds(noop))
        check = subprocess.run(noop, capture_output=True, text=True, cwd=ROOT, check=False)
        counts = {
            "python": instructions([sys.executable, "-c", "pass"]),
            **{label: instructions([sys.executable, "-c", code]) for label, code in STARTUP_PARTS},
            "no-op plan": instructions([sys.executable, plan, *noop[1:]]),
        }
    python, help_s, noop_s = Stat(pythons), Stat(helps), Stat(noops)
    row(
        "start-up",
        "osmosis-plan --help, s",
        help_s,
        ".3f",
        f"python {python.median:.3f}",
        f"+{help_s.median - python.median:.3f}",
        "< 0.3 s",
        help_s.median < 0.3,
    )
    # The front door dispatches through a static table (cli/front.py) and imports the
    # chosen verb's module only: it starts as fast as the command it runs (issue 37).
    front_s = Stat(fronts)
    row(
        "",
        "osmosis-reconciler plan --help, s",
        front_s,
        ".3f",
        f"osmosis-plan {help_s.median:.3f}",
        f"{front_s.median / help_s.median:.2f}x",
        "<= 1.10x osmosis-plan --help",
        front_s.median <= 1.10 * help_s.median,
    )
    row(
        "",
        "no-op plan, 10 configs, s",
        noop_s,
        ".3f",
        f"python {python.median:.3f}",
        f"{noop_s.median / python.median:.1f}x",
        "<= 10x python",
        noop_s.median <= 10 * python.median,
    )
    bare = counts["python"]
    if bare is not None and counts["no-op plan"] is not None:
        total = counts["no-op plan"]
        row(
            "",
            "no-op plan, M instructions",
            total,
            ".0f",
            f"python {bare:.0f}",
            f"{total / bare:.1f}x",
            "<= 10x python",
            total <= 10 * bare,
        )
        before = bare
        for label, _code in STARTUP_PARTS:
            now = counts[label]
            if now is not None:
                row("", f"  {label}", now - before, ".0f", "", f"{(now - before) / total:.0%}")
                before = now
        row("", "  + the plan itself", total - before, ".0f", "", f"{(total - before) / total:.0%}")
        floor = counts[STARTUP_PARTS[0][0]]
        if floor is not None:
            # What no start-up work in the tool can go under while a plan uses both libraries.
            row(
                "",
                "  floor: the libraries alone",
                floor,
                ".0f",
                f"python {bare:.0f}",
                f"{floor / bare:.1f}x",
                f"tool + plan <= {10 * bare - floor:.0f}",
                total - floor <= 10 * bare - floor,
            )
    else:
        NOTES.append("start-up: valgrind is not installed, so no instruction counts.")
    NOTES.append(
        f"no-op plan of 10 configs exits {check.returncode} "
        "(0 = nothing to do with --detailed-exitcode); instruction counts are callgrind's, "
        "of the Python process only (not git), one run each (they do not vary with load)."
    )


# --------------------------------------------------------------------------- main


def render() -> str:
    head = Row("scenario", "metric", "median", "spread", "floor/ref", "ratio", "goal", "met")
    rows = [head, *ROWS]
    widths = [max(len(getattr(r, f)) for r in rows) for f in Row.__dataclass_fields__]
    lines = []
    for i, r in enumerate(rows):
        cells = [getattr(r, f) for f in Row.__dataclass_fields__]
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--keep", type=Path, help="work directory to keep (default: temp)")
    parser.add_argument(
        "--only",
        choices=("plan", "history", "apply", "download", "startup"),
        action="append",
        help="run only these scenarios (repeatable; default: all)",
    )
    parser.add_argument(
        "--latency-ms",
        type=int,
        choices=(0, 50),
        action="append",
        help="download scenario: only this server latency (repeatable; default: 0 and 50)",
    )
    args = parser.parse_args(argv)
    k = args.repeat
    latencies = set(args.latency_ms or (0, 50))
    started = time.perf_counter()
    sizes = [(500, 2000), (1500, 6000), (5000, 20000)]
    submits, downloads = 500, 200
    if args.quick:
        sizes, submits, downloads = [(100, 400), (200, 800), (400, 1600)], 50, 20
    work = args.keep or Path(tempfile.mkdtemp(prefix="osmosis-perf-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        growth = []
        wanted = set(args.only or ("plan", "history", "apply", "download", "startup"))
        if "plan" in wanted:
            for n, m in sizes[:-1]:
                log(f"plan at N={n}, M={m}")
                growth.append(plan_size(work, n, m, k))
            n, m = sizes[-1]
            log(f"plan at N={n}, M={m} (headline) and the naive baseline")
            growth.append(plan_size(work, n, m, k, naive=max(1, k - 1), headline=True))
        if "history" in wanted:
            total, managed = (2000, 100) if args.quick else (20000, 500)
            log(f"history: {managed} managed runs in a workspace of {total}")
            history_scenario(work, k, total, managed)
        if "apply" in wanted:
            log(f"apply of {submits} submits")
            apply_scenario(work, k, submits)
        if "download" in wanted:
            if 0 in latencies:
                log(f"download of {downloads} runs")
                # Cheap (seconds a round) and the noisiest figure here: more rounds.
                download_scenario(work, max(k, DOWNLOAD_REPEAT), downloads)
            if 50 in latencies:
                far = 10 if args.quick else 40
                log(f"download of {far} runs at 50 ms latency")
                download_scenario(work, k, far, latency_ms=50)
        if "startup" in wanted:
            log("start-up")
            startup_scenario(work, k)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    base = growth[0] if growth else {}
    for g in growth:
        scale = (g["n"] + g["m"]) / (base["n"] + base["m"])
        row(
            "growth" if g is base else "",
            f"N={g['n']:,} M={g['m']:,}",
            g["plan"],
            ".2f",
            f"floor {g['floor']:.2f}",
            f"{g['plan'] / base['plan']:.2f}x time for {scale:.1f}x size",
            f"{g['requests']} req, {g['rss']:.0f} MB",
        )
    print(
        f"make perf: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"median of {k} runs (spread = min-max), server in its own process over loopback"
    )
    print()
    print(render())
    print()
    for note in NOTES:
        print(f"* {note}")
    print(f"\nTotal time: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
