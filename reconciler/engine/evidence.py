"""A person's decision, checked against what the Platform says: ``osmosis-state resolve ADDR
--submitted RUN`` and ``osmosis-state adopt ADDR RUN``.

Both record a run as an address's without an apply, so both pay nothing, but each decides
what later applies stop, replace and download. A run id typed by hand can be anyone's run:
``resolve --submitted`` believed any id, and after an ordinary edit of the config the next
apply stopped another user's running run as a replace (issue 34). So each is checked against
the run's details (E5) first, by the fingerprint adoption uses (benchmark, task selection,
execution settings, each agent's harness, model and env), and refused, saying what differs:

* ``resolve --submitted RUN``: the run must do exactly what the lost submit sent (the body
  its intent kept) and have been created after the intent was written (minus the clock
  skew the plan allows);
* ``adopt ADDR RUN``: the run must do exactly what the config at ADDR asks, as its full run
  or as its smoke run (``plan.smoke``'s narrowed body); it is recorded with that stage.

The functions here take values (a ``RunDetail`` already read) and return the differences;
the command reads, checks, then writes through the lockfile's door.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from reconciler.model import (
    DesiredRun,
    Intent,
    RecordedRun,
    canonical_digest,
    spec_fingerprint,
    spec_fingerprint_fields,
)
from reconciler.plan import CLOCK_SKEW, spec_changes
from reconciler.plan.draft import timestamp
from reconciler.platform import RunDetail

__all__ = ["adopted_entry", "body_differences", "submitted_differences"]


def body_differences(
    detail: RunDetail, spec: Mapping[str, Any], benchmark_id: str | None
) -> tuple[str, ...]:
    """Empty when the run does exactly what ``spec`` asks, else what differs (run -> body)."""
    if spec_fingerprint(spec, benchmark_id) == detail.fingerprint():
        return ()
    changes = spec_changes(detail.fingerprint_fields(), spec_fingerprint_fields(spec, benchmark_id))
    return changes or ("its configuration differs",)


def submitted_differences(intent: Intent, detail: RunDetail) -> tuple[str, ...]:
    """Why ``detail`` cannot be the run the lost submit of ``intent`` created (empty: it can)."""
    problems: list[str] = []
    if not intent.spec:
        problems.append("the pending submit kept no body to compare the run with")
    else:
        problems.extend(
            f"the run differs from the body that was sent: {change}"
            for change in body_differences(detail, intent.spec, intent.benchmark_id)
        )
    created = detail.summary.created_at
    if created is None:
        problems.append("the Platform gives no creation time for the run")
    elif _before(created, intent.started_at):
        problems.append(
            f"the run was created {created.isoformat()}, before the submit started "
            f"({intent.started_at.isoformat()})"
        )
    return tuple(problems)


def _before(created: datetime, started: datetime) -> bool:
    return timestamp(created) < timestamp(started) - CLOCK_SKEW.total_seconds()


def adopted_entry(
    wanted: DesiredRun,
    detail: RunDetail,
    benchmark_id: str,
    *,
    stage: str | None,
    spec: Mapping[str, Any],
    now: datetime,
    head: str | None,
) -> RecordedRun:
    """The lockfile entry recording ``detail`` as ``wanted``'s run (``stage``: ``smoke`` when
    it is the config's smoke run, whose ``spec`` is the narrowed body)."""
    run = detail.summary
    return RecordedRun(
        address=wanted.address,
        # A smoke run's entry records the digest of the full config it smoke-tests.
        spec_digest=canonical_digest(wanted.spec, benchmark_id),
        spec=dict(spec),
        run_id=run.id,
        run_name=run.name or None,
        status=run.status or None,
        observed_at=now,
        submitted_at=run.created_at,
        requested_by=wanted.requested_by,
        applied_at_commit=head,
        benchmark_id=benchmark_id,
        platform_url=run.platform_url,
        stage=stage,
    )
