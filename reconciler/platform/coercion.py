"""Loose Platform JSON to plain values: every field read through one of these, so a missing or mistyped value becomes None (or a clear error for an id), never a crash."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def nonempty(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def as_bool(value: Any, default: bool = False) -> bool:
    return value if isinstance(value, bool) else default


def as_datetime(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    # A naive timestamp from the Platform is UTC; comparing naive and aware datetimes
    # would raise later in the plan.
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in obj(value).items() if v is not None}


def as_plain(value: Any) -> Any:
    """A JSON value with non-finite floats dropped, for pass-through dicts."""
    if isinstance(value, Mapping):
        return {str(k): as_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def shape_of(value: Any) -> str:
    """A value's type for an error message (never the value: it may be anything)."""
    if value is None:
        return "nothing"
    return type(value).__name__


def require_id(raw: Mapping[str, Any], what: str) -> str:
    value = raw.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} without an 'id'")
    return value
