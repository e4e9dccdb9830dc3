"""The base of every value type (``Frozen``) and the one canonical JSON digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


def canonical_digest(spec: Mapping[str, Any], benchmark_id: str | None) -> str:
    """The spec digest with ``[experiment].benchmark`` replaced by the benchmark's resolved
    id: a key, the exact name and the id of one benchmark are the same request, so editing
    one into another is no change (and no paid replace). Without an id, the plain digest."""
    if not benchmark_id:
        return digest(spec)
    experiment = dict(spec.get("experiment_config") or {})
    # An object, so no benchmark string written in a config can collide with it.
    experiment["benchmark"] = {"id": benchmark_id}
    return digest({**spec, "experiment_config": experiment})


def recorded_benchmark(spec: Mapping[str, Any]) -> str | None:
    """``[experiment].benchmark`` as written in a submit body."""
    value = (spec.get("experiment_config") or {}).get("benchmark")
    return value if isinstance(value, str) else None


def canonical_json(value: Any) -> str:
    """The one canonical JSON encoding used for digests: sorted keys, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


class Frozen(BaseModel):
    """Base for every value type: immutable, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")
