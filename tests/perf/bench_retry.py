"""Benchmark: the per-request cost of the Platform client's retry loop vs ``tenacity`` and
``stamina`` (part of ``make perf``).

Run: ``python -m tests.perf.bench_retry [--calls N]``. Each variant runs a request that
succeeds at once (the common case) N times; what is measured is what the retry machinery
adds around it. The tenacity variant is configured as the loop would need it (a stop that
sees the deadline before sleeping, the Retry-After wait, the injected sleep, the log hook);
stamina has no knob for those, so it runs with its own defaults. Not a test: no timing is
asserted; the figures are quoted in ``reconciler/platform/transport.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import stamina
import tenacity

from reconciler.platform.transport import RetryPolicy


def request() -> dict[str, int]:
    return {"ok": 1}


POLICY = RetryPolicy()


def ours(policy: RetryPolicy = POLICY) -> dict[str, int]:
    # The shape of PlatformConnection._attempts around one successful attempt.
    attempt = 0
    while True:
        attempt += 1
        try:
            return request()
        except OSError:
            if attempt >= policy.max_attempts:
                raise
            time.sleep(policy.backoff(attempt))


def _wait(state: tenacity.RetryCallState) -> float:
    return RetryPolicy().backoff(state.attempt_number)


def _stop(state: tenacity.RetryCallState) -> bool:
    return state.attempt_number >= 5 or (state.upcoming_sleep or 0.0) >= 60.0


def with_tenacity() -> dict[str, int]:
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(OSError),
        wait=_wait,
        stop=_stop,
        sleep=time.sleep,
        before_sleep=lambda state: None,
        reraise=True,
    )
    return retrying(request)


@stamina.retry(on=OSError, attempts=5, timeout=60.0)
def with_stamina() -> dict[str, int]:
    return request()


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args(argv)
    print(f"\nRetry machinery around a request that succeeds at once ({args.calls:,} calls):")
    print(f"  {'variant':<9} {'us/call':>8} {'x ours':>7}")
    base = 0.0
    for name, fn in (("ours", ours), ("tenacity", with_tenacity), ("stamina", with_stamina)):
        us = per_call_us(fn, args.calls)
        base = base or us
        print(f"  {name:<9} {us:8.2f} {us / base:7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
