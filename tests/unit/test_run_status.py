"""One run-status vocabulary (``reconciler.model.RunStatus``) with its behaviour."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reconciler import platform
from reconciler.model import RunStatus


@pytest.mark.parametrize(
    ("text", "active", "terminal", "unsuccessful", "outputs"),
    [
        ("pending", True, False, False, False),
        ("queued", True, False, False, False),
        ("running", True, False, False, True),
        ("finished", False, True, False, True),
        ("failed", False, True, True, True),
        ("stopped", False, True, True, True),
    ],
)
def test_each_reported_status_says_what_it_means(
    text: str, active: bool, terminal: bool, unsuccessful: bool, outputs: bool
) -> None:
    status = RunStatus.of(text)
    assert status == text and status is RunStatus(text)
    assert (status.is_active, status.is_terminal) == (active, terminal)
    assert status.is_unsuccessful is unsuccessful
    assert status.may_have_outputs is outputs


@pytest.mark.parametrize("text", ["exploding", "", None, "FINISHED", "unknown"])
def test_an_unknown_status_counts_as_active_never_as_ended(text: str | None) -> None:
    # Treating a new in-flight state as ended could pay for a second run.
    status = RunStatus.of(text)
    assert status is RunStatus.UNKNOWN
    assert status.is_active and not status.is_terminal and not status.is_unsuccessful
    assert RunStatus.parse(text) is None


def test_the_reported_statuses_leave_out_unknown_in_lifecycle_order() -> None:
    assert [str(s) for s in RunStatus.reported()] == [
        "pending",
        "queued",
        "running",
        "finished",
        "failed",
        "stopped",
    ]


def test_the_platform_client_uses_the_same_enum() -> None:
    assert platform.RunStatus is RunStatus
    summary = platform.RunSummary.from_api({"id": "r", "status": "failed"})
    assert summary.known_status is RunStatus.FAILED


def test_the_command_line_starts_without_the_value_types() -> None:
    # The output layer imports RunStatus (and Action) inside the functions that run after a
    # command's work, so `osmosis-plan --help` does not pay for the models or their library.
    probe = (
        "import sys, reconciler.cli.plan, reconciler.cli.apply; "
        "sys.exit(bool({'msgspec', 'reconciler.model'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
