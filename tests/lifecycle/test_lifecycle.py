"""The short version of the lifecycle suite for ``make test`` (a few sequences); ``make
lifecycle`` runs the long one (``tests.lifecycle.run``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from .machine import VIOLATIONS, machine_for, world


@pytest.mark.slow
def test_a_few_team_lifecycles_keep_every_invariant(tmp_path: Path) -> None:
    with world(tmp_path):
        run_state_machine_as_test(
            machine_for(tmp_path),
            settings=settings(
                max_examples=3,
                stateful_step_count=8,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            ),
        )
    assert sum(VIOLATIONS.values()) == 0
