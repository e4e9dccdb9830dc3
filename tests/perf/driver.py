"""One measured operation, in a fresh process so its peak memory and imports are its own.

Run: ``python -m tests.perf.driver MODE REPO URL [ARG ...]``; prints one JSON line. Modes:

* ``plan [REFRESH]``: what ``osmosis-plan --format text --refresh REFRESH`` does after parsing
  flags (``engine.plan.make_plan`` and the text render), timed from before the first product
  import;
* ``naive``: the baseline a script around ``osmosis benchmark runs info`` gives: read the
  configs and the lockfile, then one E5 info request per recorded run (current and history);
* ``parse``: the memory floor: import the tool, then ``tomllib`` parsing the same configs
  and lockfile into dicts;
* ``trace``: ``plan`` under ``tracemalloc`` (traced peak, what is held, top sites by file);
* ``floor``: ``tomllib`` parsing the same configs and lockfile, then the minimum number of
  list requests (one per 50 runs of the workspace) with a plain httpx loop;
* ``apply WORKSPACE PARALLELISM``: plan (untimed), then ``engine.apply.apply`` of its
  submits (``--only submit``), timed from the plan's view (``on_plan``) to the end;
* ``download PARALLELISM``: the same for its downloads (``--only download``); a second
  ``download_run`` of every run right after, which must transfer nothing (resume);
* ``plain ROOT``: the same runs' files with a plain httpx loop (E8, E9, one streamed GET per
  file, written to disk), the reference for download throughput.

Times are wall seconds; ``rss_mb`` is the process's own peak resident set (``VmHWM``; see
``peak_rss_mb``), which includes the interpreter and imports (~40 MB).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _plan(
    repo: Path, url: str, refresh: str = "incremental", snapshots: list | None = None
) -> dict:
    started = time.perf_counter()
    import argparse
    import io

    from reconciler.cli import plan as cli_plan
    from reconciler.cli.common import invocation
    from reconciler.cli.output import Output, render_plan
    from reconciler.engine.load import open_command
    from reconciler.engine.plan import make_plan
    from reconciler.log import configure_logging

    imported = time.perf_counter()
    configure_logging(fmt="json", verbosity=0, command="osmosis-plan")
    args: argparse.Namespace = cli_plan.parser().parse_args(
        ["--dir", str(repo), "--platform", url, "--workspace", "perf", "--no-color",
         "--refresh", refresh]
    )  # fmt: skip
    output = Output("osmosis-plan", out=io.StringIO(), err=io.StringIO())
    with open_command(invocation(args, repo), output) as ctx:
        t0 = time.perf_counter()
        plan, _snapshots = make_plan(ctx, output)
        t1 = time.perf_counter()
        if snapshots is not None:  # ``trace``: what the plan holds once it is made
            import tracemalloc

            snapshots.append(tracemalloc.take_snapshot())
        text = render_plan(plan, "text", color=False)
        t2 = time.perf_counter()
        requests = ctx.client.request_count
    return {
        "seconds": t2 - started,
        "imports": imported - started,
        "make_plan": t1 - t0,
        "render": t2 - t1,
        "requests": requests,
        "items": len(plan.items),
        "drift": len(plan.drift),
        "output_chars": len(text),
        "output_lines": len(text.splitlines()),
        "summary": text.strip().splitlines()[-1] if text.strip() else "",
    }


def _naive(repo: Path, url: str) -> dict:
    started = time.perf_counter()
    from reconciler.config import load_configs
    from reconciler.platform import PlatformClient
    from reconciler.state.lockfile import read_lockfile

    load_configs(repo)
    state = read_lockfile(repo / "state" / "osmosis.lock", platform=url, workspace="perf")
    ids = [e.run_id for e in state.runs.values() if e.run_id]
    ids += [h.run_id for h in state.history if h.run_id]
    statuses = {}
    with PlatformClient(url, token="local", workspace="perf") as client:
        for run_id in ids:
            statuses[run_id] = client.get_run(run_id).summary.status
        requests = client.request_count
    return {"seconds": time.perf_counter() - started, "requests": requests, "runs": len(statuses)}


def _floor(repo: Path, url: str) -> dict:
    import tomllib

    import httpx

    paths = sorted((repo / "benchmarks").rglob("*.toml")) + [repo / "state" / "osmosis.lock"]
    t0 = time.perf_counter()
    for path in paths:
        with open(path, "rb") as handle:
            tomllib.load(handle)
    t1 = time.perf_counter()
    headers = {"Authorization": "Bearer local", "X-Osmosis-Workspace": "perf"}
    pages = 0
    with httpx.Client(base_url=url, headers=headers) as http:
        offset: int | None = 0
        while offset is not None:
            body = json.loads(
                http.get("/api/cli/benchmark-runs", params={"limit": 50, "offset": offset}).content
            )
            pages += 1
            offset = body.get("next_offset") if body.get("benchmark_runs") else None
    t2 = time.perf_counter()
    return {"seconds": t2 - t0, "parse": t1 - t0, "list": t2 - t1, "requests": pages}


def _parse(repo: Path, url: str) -> dict:
    """The memory floor: import what ``osmosis-plan`` imports, then parse the same configs
    and lockfile into dicts with ``tomllib`` (each dropped after it is parsed)."""
    import tomllib

    import reconciler.cli.plan  # noqa: F401
    import reconciler.engine.load  # noqa: F401
    import reconciler.engine.plan  # noqa: F401

    paths = sorted((repo / "benchmarks").rglob("*.toml")) + [repo / "state" / "osmosis.lock"]
    t0 = time.perf_counter()
    for path in paths:
        with open(path, "rb") as handle:
            tomllib.load(handle)
    return {"seconds": time.perf_counter() - t0}


def _trace(repo: Path, url: str) -> dict:
    """``plan`` under ``tracemalloc``: the traced peak, what is held once the plan is made,
    and the top allocation sites then (by file), to say where the bytes go."""
    import tracemalloc

    tracemalloc.start()
    snapshots: list = []
    result = _plan(repo, url, snapshots=snapshots)
    _now, peak = tracemalloc.get_traced_memory()
    snapshot = snapshots[0].filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    top = snapshot.statistics("filename")[:12]
    return {
        **result,
        "traced_peak_mb": peak / 1e6,
        "traced_held_mb": sum(s.size for s in snapshot.statistics("filename")) / 1e6,
        "top": [(str(s.traceback[0].filename), round(s.size / 1e6, 1), s.count) for s in top],
    }


def _apply_args(repo: Path, url: str, workspace: str, extra: list[str]):
    from reconciler.cli import apply as cli_apply
    from reconciler.log import configure_logging

    configure_logging(fmt="json", verbosity=0, command="osmosis-apply")

    return cli_apply.parser().parse_args(
        ["--dir", str(repo), "--platform", url, "--workspace", workspace, "--no-color",
         "--auto-approve", "--allow-over-budget", *extra]
    )  # fmt: skip


def _applied(ctx, output, only: str, on_start) -> Any:
    """``engine.apply.apply`` of the plan's ``only`` items; ``on_start`` is called once the
    plan is made, just before the executor starts (the clock starts there)."""
    from reconciler.cli.output import ApplyReport
    from reconciler.engine.apply import ApplyRequest, apply

    return apply(
        ctx,
        output,
        ApplyRequest(command="perf", only=frozenset({only})),
        progress=ApplyReport(output),
        on_plan=lambda _plan, _saved: on_start(),
        approve=None,
    )


def _apply(repo: Path, url: str, workspace: str, parallelism: str) -> dict:
    import io

    from reconciler.cli.common import invocation
    from reconciler.cli.output import Output
    from reconciler.engine.load import open_command

    args = _apply_args(repo, url, workspace, ["--parallelism", parallelism])
    output = Output("osmosis-apply", out=io.StringIO(), err=io.StringIO())
    start: list[tuple[float, int]] = []
    with open_command(invocation(args, repo), output) as ctx:
        applied = _applied(
            ctx,
            output,
            "submit",
            lambda: start.append((time.perf_counter(), ctx.client.request_count)),
        )
        seconds = time.perf_counter() - start[0][0]
        requests = ctx.client.request_count - start[0][1]
    result = applied.result
    return {
        "seconds": seconds,
        "requests": requests,
        "submitted": len(result.succeeded),
        "failed": len(result.failures),
        "errors": [o.message for o in result.failures[:3]],
    }


TYPES = ("summary", "results", "artifacts")


def _download(repo: Path, url: str, parallelism: str) -> dict:
    import io

    from reconciler.cli.common import invocation
    from reconciler.cli.output import Output
    from reconciler.engine.load import open_command
    from reconciler.engine.plan import make_plan
    from reconciler.model import Action
    from reconciler.outputs.downloads import download_run

    args = _apply_args(
        repo, url, "perf", ["--parallelism", parallelism, "--download-types", ",".join(TYPES)]
    )
    output = Output("osmosis-apply", out=io.StringIO(), err=io.StringIO())
    start: list[tuple[float, float]] = []

    def started() -> None:
        # The download client is built before the clock, as the references build theirs:
        # its CA bundle load (20-170 ms here) is a one-time cost, not a transfer rate.
        ctx.http  # noqa: B018
        start.append((time.perf_counter(), time.process_time()))

    with open_command(invocation(args, repo), output) as ctx:
        applied = _applied(ctx, output, "download", started)
        seconds, cpu = time.perf_counter() - start[0][0], time.process_time() - start[0][1]
        result, state = applied.result, applied.state
        items = applied.plan.items
        downloaded = sum(e.downloads.bytes for e in state.runs.values() if e.downloads)
        files = sum(e.downloads.files for e in state.runs.values() if e.downloads)
        # Resume: every file is complete on disk, so nothing may be transferred again.
        t1 = time.perf_counter()
        again = 0
        for entry in state.runs.values():
            res = download_run(
                ctx.client,
                ctx.http,
                run_id=entry.run_id or "",
                run_name=entry.run_name,
                root=ctx.download_root,
                types=TYPES,
            )
            again += res.bytes_downloaded
        resume_seconds = time.perf_counter() - t1
        replan, _snapshots = make_plan(ctx, output)
        left = sum(1 for i in replan.items if i.action is Action.DOWNLOAD)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "bytes": downloaded,
        "files": files,
        "runs": len(items),
        "failed": len(result.failures),
        "errors": [o.message for o in result.failures[:3]],
        "resume_bytes": again,
        "resume_seconds": resume_seconds,
        "replan_downloads": left,
    }


def _plain(repo: Path, url: str, root: str) -> dict:
    """Reference loop: no checks, no hashing, no temp files, no parallelism."""
    import httpx

    from reconciler.state.lockfile import read_lockfile

    state = read_lockfile(repo / "state" / "osmosis.lock", platform=url, workspace="perf")
    headers = {"Authorization": "Bearer local", "X-Osmosis-Workspace": "perf"}
    out = Path(root)
    total = files = 0
    # The clients are built before the clock starts, as the product's Platform and download
    # clients are: a CA bundle load took 20-170 ms on the 2-core machine.
    with httpx.Client(base_url=url, headers=headers) as api, httpx.Client() as plain:
        t0, c0 = time.perf_counter(), time.process_time()
        for entry in state.runs.values():
            base = f"/api/cli/benchmark-runs/{entry.run_id}/outputs"
            manifest = api.get(base + "/manifest", params={"types": ",".join(TYPES)}).json()
            wanted = [
                {"path": f["path"], **({"token": f["token"]} if f.get("token") else {})}
                for f in manifest["files"]
            ]
            urls = api.post(base + "/download-urls", json={"items": wanted}).json()["items"]
            for item in urls:
                dest = out / str(entry.run_id) / item["path"]
                dest.parent.mkdir(parents=True, exist_ok=True)
                with plain.stream("GET", item["url"]) as response, open(dest, "wb") as handle:
                    for chunk in response.iter_bytes(1024 * 1024):
                        handle.write(chunk)
                        total += len(chunk)
                files += 1
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "bytes": total,
        "files": files,
    }


def _pool(repo: Path, url: str, root: str, workers: str = "8") -> dict:
    """Reference: the same gets as ``_plain`` on a plain ThreadPoolExecutor (no checks, no
    hashing, no temp files): what parallelism alone buys under latency."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from reconciler.state.lockfile import read_lockfile

    state = read_lockfile(repo / "state" / "osmosis.lock", platform=url, workspace="perf")
    headers = {"Authorization": "Bearer local", "X-Osmosis-Workspace": "perf"}
    out = Path(root)
    limits = httpx.Limits(max_connections=int(workers) * 2)
    with (
        httpx.Client(base_url=url, headers=headers, limits=limits) as api,
        httpx.Client(limits=limits) as plain,
        ThreadPoolExecutor(max_workers=int(workers)) as pool,
    ):

        def fetch(dest: Path, file_url: str) -> int:
            dest.parent.mkdir(parents=True, exist_ok=True)
            received = 0
            with plain.stream("GET", file_url) as response, open(dest, "wb") as handle:
                for chunk in response.iter_bytes(1024 * 1024):
                    handle.write(chunk)
                    received += len(chunk)
            return received

        def run(entry) -> list[int]:
            base = f"/api/cli/benchmark-runs/{entry.run_id}/outputs"
            manifest = api.get(base + "/manifest", params={"types": ",".join(TYPES)}).json()
            wanted = [
                {"path": f["path"], **({"token": f["token"]} if f.get("token") else {})}
                for f in manifest["files"]
            ]
            urls = api.post(base + "/download-urls", json={"items": wanted}).json()["items"]
            return [fetch(out / str(entry.run_id) / item["path"], item["url"]) for item in urls]

        t0, c0 = time.perf_counter(), time.process_time()  # clients built, as in ``_plain``
        sizes = [size for sizes in pool.map(run, state.runs.values()) for size in sizes]
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "bytes": sum(sizes),
        "files": len(sizes),
    }


def peak_rss_mb() -> float:
    """This process's own peak resident set. ``ru_maxrss`` is not: Linux carries the
    parent's resident set at ``fork``/``vfork`` into the child's, so a driver started by a
    large ``make perf`` process reported the parent's peak (~200 MB) whatever it did itself.
    ``VmHWM`` is the high-water mark of the address space ``exec`` gave this process."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    mode, repo, url, *rest = argv if argv is not None else sys.argv[1:]
    modes: dict[str, Callable[..., dict[str, Any]]] = {
        "plan": _plan,
        "naive": _naive,
        "floor": _floor,
        "parse": _parse,
        "trace": _trace,
        "apply": _apply,
        "download": _download,
        "plain": _plain,
        "pool": _pool,
    }
    result = modes[mode](Path(repo), url, *rest)
    result["rss_mb"] = peak_rss_mb()
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
