"""Numbers a person types, checked where they enter (issue 23): finite and in range.

``float("nan")`` and ``float("inf")`` parse without complaint, and a comparison with NaN is
always false: ``--lock-timeout nan`` and ``--wait-timeout nan`` waited forever, and
``--wait-timeout -5`` was accepted. Every number given on a command line goes through one
of these ``argparse`` types, whose refusal names the flag and the accepted range.

Standard library only (the CLIs import it before anything else).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["MAX_SECONDS", "bounded_int", "days", "seconds"]

MAX_SECONDS = 366 * 24 * 3600.0
"""The longest wait any flag accepts: a year. Longer is a typo, and a ``time.monotonic()``
deadline that far out is no deadline at all."""


def _finite(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of {what}")
    return value


def seconds(text: str) -> float:
    """A number of seconds, 0 to ``MAX_SECONDS``."""
    value = _finite(text, "seconds")
    if not 0 <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range: give 0 to {MAX_SECONDS:.0f} seconds"
        )
    return value


def days(text: str) -> float:
    """A number of days, more than 0 and at most 3660 (ten years)."""
    value = _finite(text, "days")
    if not 0 < value <= 3660:
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range: give more than 0 days, up to 3660"
        )
    return value


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An integer from ``low`` to ``high`` inclusive (its digits counted before converting:
    Python refuses to convert more than 4,300 of them)."""

    def parse(text: str) -> int:
        stripped = text.strip()
        if len(stripped) > 20 or not stripped.lstrip("+-").isdigit():
            # argparse words a ValueError as "invalid integer value: 'x'".
            raise ValueError(text)
        value = int(stripped)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text!r} is out of range: give {low} to {high}")
        return value

    parse.__name__ = "integer"
    return parse
