"""The local Platform on loopback, in its own process, for the perf scenarios.

Run: ``python -m tests.perf.serve DATA_DIR [--latency-ms N] [--workspace NAME]``. Prints
``URL`` on one line once it listens, then serves until its stdin closes (the parent owns
the pipe, so the server never outlives the benchmark). A separate process keeps the
server's CPU time off the measured client's interpreter lock.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconciler.local_platform import Faults, LocalPlatform, start_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--latency-ms", type=int, default=0)
    parser.add_argument(
        "--workspace", action="append", help="a workspace it serves (repeatable; default perf)"
    )
    args = parser.parse_args(argv)
    platform = LocalPlatform(
        args.data,
        speed=1.0,
        faults=Faults(latency_ms=args.latency_ms),
        workspaces=tuple(args.workspace or ["perf"]),
    )
    handle = start_server(platform, host="127.0.0.1", port=0)
    sys.stdout.write(handle.url + "\n")
    sys.stdout.flush()
    try:
        sys.stdin.read()  # returns when the parent closes the pipe (or exits)
    finally:
        handle.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
