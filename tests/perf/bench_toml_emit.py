"""Benchmark: the lockfile's own TOML emitter vs ``tomli-w`` and ``tomlkit`` (part of ``make perf``).

Run: ``python -m tests.perf.bench_toml_emit [--runs N] [--repeat K]``. Emits one lockfile
of N runs (20,000 by default) and 1,000 history entries with each, K times, and prints the
medians and their ratio to ours side by side, then what each library's text means for the
reader: whether the lockfile's fast reader accepts it (else ``tomllib`` reads it, slower),
whether ``peek_watermark`` finds the watermark, and the read time of each text. Not a test:
no timing is asserted anywhere; the figures are quoted in ``reconciler/state/toml_emit.py``.

Ours is timed cold (its per-entry cache cleared before every emit), as the libraries are; the
libraries are handed the same state as a plain mapping, and building that mapping is timed
with them (ours walks the models directly).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import tomli_w
import tomlkit

from reconciler.model import Downloads, HistoryEntry, LockState, RecordedRun
from reconciler.state import lockfile
from reconciler.state.lockfile import parse, peek_watermark_in, serialize
from reconciler.state.toml_fast import fast_load

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SPEC = {
    "benchmark": "terminal-bench",
    "tasks_config": {"task_set": "smoke", "limit": 12},
    "agents": [
        {
            "harness": "codex",
            "model": {"type": "provider", "model": "openai/gpt-5.2", "api_key_secret": "K"},
            "env": {"RUN_INDEX": "1"},
        }
    ],
    "attempts": 6,
}


def make_state(runs: int, history: int = 1000) -> LockState:
    """A lockfile of ``runs`` finished, downloaded runs and ``history`` retired ones."""
    entries = {}
    for i in range(runs):
        address = f"suite-{i % 50}/config-{i:05d}"
        entries[address] = RecordedRun(
            address=address,
            spec_digest=f"sha256:{i:064x}",
            spec=SPEC,
            run_id=f"run_{i:05d}",
            run_name=f"name-{i}",
            status="finished",
            observed_at=T0 + timedelta(hours=2),
            submitted_at=T0,
            requested_by="a" * 40,
            applied_at_commit="b" * 40,
            benchmark_id="bm_tb21",
            task_count=12,
            attempts=72,
            platform_url=f"https://platform.osmosis.ai/acme/benchmarks/runs/run_{i:05d}",
            downloads=Downloads(
                types=("summary", "results"),
                files=2,
                bytes=48213,
                sha256={"summary.json": "c" * 64, "results/results.jsonl": "d" * 64},
                directory=f".osmosis/benchmarks/name-{i}",
            ),
        )
    retired = tuple(
        HistoryEntry(
            address=f"suite-0/config-{i:05d}",
            run_id=f"old_{i}",
            run_name=None,
            spec_digest="sha256:" + "0" * 64,
            status="finished",
            reason="replaced",
        )
        for i in range(history)
    )
    return LockState(
        lineage="0b7c4c4e-1f1e-4a8e-9d4e-5d0c1a2b3c4d",
        serial=41,
        platform="https://platform.osmosis.ai",
        workspace="acme",
        observed_until=T0,
        runs=entries,
        history=retired,
    )


def as_mapping(state: LockState) -> dict[str, Any]:
    """The lockfile's content as a plain mapping (what a TOML library is handed)."""
    data = {k: v for k, v in state.model_dump(exclude_none=True).items() if v != {}}
    data["version"] = lockfile.LOCKFILE_VERSION
    for run in data["runs"].values():
        run.pop("address", None)
    return data


def ours(state: LockState) -> str:
    lockfile._RUN_LINES.clear()  # cold: the per-entry cache would make repeats free
    return serialize(state)


def with_tomli_w(state: LockState) -> str:
    return tomli_w.dumps(as_mapping(state))


def with_tomlkit(state: LockState) -> str:
    return tomlkit.dumps(as_mapping(state))


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="runs in the lockfile")
    parser.add_argument("--repeat", type=int, default=3, help="emits per measurement")
    args = parser.parse_args(argv)
    state = make_state(args.runs)
    emitters = {"ours": ours, "tomli-w": with_tomli_w, "tomlkit": with_tomlkit}
    texts = {name: fn(state) for name, fn in emitters.items()}
    print(
        f"\nEmit a lockfile of {args.runs:,} runs + 1,000 history (median of {args.repeat}; tomlkit once):"
    )
    print(f"  {'emitter':<9} {'emit s':>8} {'x ours':>7} {'bytes':>11} {'fast reader':>12} "
          f"{'watermark':>10} {'read s':>7}")  # fmt: skip
    base = 0.0
    expected = tomllib.loads(texts["ours"])
    for name, fn in emitters.items():
        # tomlkit takes over ten times as long as the others: timed once.
        repeat = 1 if name == "tomlkit" else args.repeat
        seconds = median_seconds(lambda fn=fn: fn(state), repeat)  # type: ignore[misc]
        base = base or seconds
        text = texts[name]
        same = tomllib.loads(text) == expected
        fast = "accepts" if fast_load(text) is not None else "declines"
        _, mark = peek_watermark_in(text.encode()[: lockfile.HEADER_BYTES])
        read = median_seconds(lambda text=text: parse(text, "osmosis.lock"), args.repeat)  # type: ignore[misc]
        print(
            f"  {name:<9} {seconds:8.3f} {seconds / base:7.2f} {len(text.encode()):11,} "
            f"{fast:>12} {'found' if mark else 'missed':>10} {read:7.3f}"
            + ("" if same else "  (content differs)")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
