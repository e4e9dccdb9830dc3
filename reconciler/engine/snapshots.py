"""The values one command hands along: the configs as loaded, the snapshots a plan is computed from, and what the commit trailers ask for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from reconciler.model import (
    DesiredRun,
    GeneratorProduct,
    LockState,
    Observation,
    Settings,
)

LockfileReader = Callable[[Path, str], bytes | None]
"""Reads the lockfile at a path (named as the user wrote it): its bytes, None when there is
none (``state.lockfile.read_lockfile_bytes``)."""


class Configs(msgspec.Struct, frozen=True):
    """The desired runs as loaded from the config files, with what loading them noticed."""

    runs: tuple[DesiredRun, ...]
    """Every valid config, with git provenance (``requested_by``) where history has it."""
    ignored: tuple[tuple[str, str], ...] = ()
    """Config files left out on purpose: (path, why), why = ``marker`` or ``setting``."""
    provenance_note: str | None = None
    """In a shallow clone whose history misses some configs: which, and how to deepen."""
    generators: tuple[GeneratorProduct, ...] = ()
    """What each run generator (``*.matrix.toml``) expanded to (``LoadResult.generators``)."""


@dataclass(frozen=True)
class Snapshots:
    """The inputs of one plan, loaded once per command and handed on as a value:
    ``engine.load.load`` -> ``Snapshots`` -> ``engine.plan.plan_snapshots`` ->
    ``engine.apply.apply``."""

    desired: tuple[DesiredRun, ...]
    """The configs, with ``Osmosis-Rerun`` trailers' commits as their ``requested_by``."""
    state: LockState
    """The lockfile as read (one read per command), or as this command last wrote it."""
    observation: Observation
    """What the Platform and the local disk said when this command looked."""
    settings: Settings
    """The settings a plan of these snapshots uses: flags over the settings file, plus the
    re-runs and skips the commit trailers ask for."""
    ignored: tuple[tuple[str, str], ...] = ()
    """Config files left out on purpose (``Configs.ignored``)."""
    notes: tuple[str, ...] = ()
    """Warnings loading found (trailers that match nothing, a shallow clone's gaps)."""
    generators: tuple[GeneratorProduct, ...] = ()
    """What each run generator expanded to (``Configs.generators``)."""


class TrailerRequests(msgspec.Struct, frozen=True):
    """What the ``Osmosis-Rerun`` / ``Osmosis-Skip`` trailers since the lockfile's last
    commit ask for (``engine.load.trailer_requests``)."""

    replace: tuple[str, ...] = ()
    """Addresses to re-run, in the order first asked for."""
    skip: tuple[str, ...] = ()
    """Address globs to hold back."""
    requested: Mapping[str, tuple[str, str]] | None = None
    """Address -> (commit, subject) of the trailer that asked to re-run it."""
    notes: tuple[str, ...] = ()
    """Trailers that match no config."""
    skip_smoke: tuple[str, ...] = ()
    """Address globs whose smoke stage is skipped (``Osmosis-Skip-Smoke``)."""
    allow_duplicate: tuple[str, ...] = ()
    """Address globs that may pay although an identical active run exists
    (``Osmosis-Allow-Duplicate``)."""
    reruns: Mapping[str, tuple[str, ...]] | None = None
    """Address -> every pending re-run request's commit, oldest first."""
    retry_errored: tuple[str, ...] = ()
    """Addresses whose errored attempts a pending ``Osmosis-Retry-Errored`` trailer asks to
    retry."""
    retries: Mapping[str, tuple[str, ...]] | None = None
    """Address -> every pending retry request's commit, oldest first."""

    def settings(self, settings: Settings) -> Settings:
        """``settings`` with these re-runs, skips and permissions added."""
        if not (
            self.replace
            or self.skip
            or self.skip_smoke
            or self.allow_duplicate
            or self.retry_errored
        ):
            return settings
        added = tuple(a for a in self.replace if a not in settings.replace)
        replace_ = (*settings.replace, *added)
        return settings.model_copy(
            update={
                "replace": replace_,
                "skip": (*settings.skip, *self.skip),
                "skip_smoke": (*settings.skip_smoke, *self.skip_smoke),
                "allow_duplicate": (*settings.allow_duplicate, *self.allow_duplicate),
                "retry_errored": (
                    *settings.retry_errored,
                    *(a for a in self.retry_errored if a not in settings.retry_errored),
                ),
            }
        )

    def desired(self, runs: tuple[DesiredRun, ...]) -> tuple[DesiredRun, ...]:
        """``runs`` with the requesting trailer's commit as ``requested_by`` where one asked
        to re-run it."""
        requested = self.requested or {}
        reruns = self.reruns or {}
        retries = self.retries or {}
        if retries:
            runs = tuple(
                r.model_copy(update={"retry_requests": retries[r.address]})
                if r.address in retries
                else r
                for r in runs
            )
        return tuple(
            r.model_copy(
                update={
                    "requested_by": requested[r.address][0],
                    "requested_subject": requested[r.address][1],
                    "reruns": reruns.get(r.address, (requested[r.address][0],)),
                }
            )
            if r.address in requested
            else r
            for r in runs
        )
