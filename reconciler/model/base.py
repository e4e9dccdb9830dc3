"""The base of every value type (``Frozen``) and the one canonical JSON digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any, Self

import msgspec


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


class Frozen(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base for every value type: immutable, keyword-built, no unknown fields when read.

    A ``msgspec.Struct``, not a pydantic model: a no-op plan defines some sixty of these
    and builds a few hundred, and pydantic's class construction and import were half of its
    start-up (1,414 M instructions, 16x ``python -c pass``; docs/performance.md). Building
    one does not check its fields' types (mypy does, statically); data read from outside
    (the lockfile's tables, a saved plan) goes through ``model_validate``, which does.

    The method names are the ones pydantic made familiar, so callers read the same.
    """

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A copy with ``update``'s fields replaced (``__post_init__`` checks run again)."""
        return msgspec.structs.replace(self, **update) if update else self

    def model_dump(
        self, *, mode: str = "python", exclude_none: bool = False, exclude_defaults: bool = False
    ) -> dict[str, Any]:
        """The fields as a dict, nested values too. ``mode="json"``: JSON types only
        (datetimes as ISO 8601, enums as values, tuples and sets as lists)."""
        data = _dump(self, exclude_none, exclude_defaults)
        return msgspec.to_builtins(data) if mode == "json" else data  # type: ignore[no-any-return]

    @classmethod
    def model_validate(cls, data: Any, *, strict: bool = False) -> Self:
        """``data`` (dicts, lists, scalars) checked against the field types and built;
        ``msgspec.ValidationError`` names the first problem and where (``$.key[0]``).
        ``strict``: no coercion between types (``"1"`` is not an int)."""
        return msgspec.convert(data, cls, strict=strict)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The fields, in declaration order."""
        return cls.__struct_fields__


def _dump(value: Any, exclude_none: bool, exclude_defaults: bool) -> Any:
    if isinstance(value, msgspec.Struct):
        defaults = _defaults(type(value)) if exclude_defaults else {}
        out = {}
        for name in value.__struct_fields__:
            field = getattr(value, name)
            if exclude_none and field is None:
                continue
            if name in defaults and field == defaults[name]:
                continue
            out[name] = _dump(field, exclude_none, exclude_defaults)
        return out
    if isinstance(value, dict):
        return {k: _dump(v, exclude_none, exclude_defaults) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(_dump(v, exclude_none, exclude_defaults) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _dump(getattr(value, f.name), exclude_none, exclude_defaults)
            for f in fields(value)
            if not (exclude_none and getattr(value, f.name) is None)
        }
    return value


@cache
def _defaults(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """Field name -> default value, for the fields that have one."""
    out = {}
    for field in msgspec.structs.fields(cls):
        if field.default is not msgspec.NODEFAULT:
            out[field.name] = field.default
        elif field.default_factory is not msgspec.NODEFAULT:
            out[field.name] = field.default_factory()
    return out


DEFAULT_ATTEMPTS_PER_TASK = 1
"""What the submit route uses when ``execution_config`` has no ``attempts_per_task``."""


def attempts_per_task(execution_config: Mapping[str, Any] | None) -> int:
    """``attempts_per_task`` of a submit body's ``execution_config`` (a config's
    ``[execution]``) as the Platform reads it: the integer when it is one, else the route
    default. The one reading of it: a config's is ``DesiredRun.attempts_per_task``, a
    recorded run's ``RecordedRun.attempts_per_task``."""
    value = (execution_config or {}).get("attempts_per_task", DEFAULT_ATTEMPTS_PER_TASK)
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_ATTEMPTS_PER_TASK
    return value
