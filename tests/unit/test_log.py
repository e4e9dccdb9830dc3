"""Structured logging: every logger goes through the tool's one redaction rule."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from reconciler.log import configure_logging, get_logger, reset_logging
from reconciler.redact import register_secret


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    """configure_logging is process-global; leave later tests the defaults."""
    yield
    reset_logging()


def test_json_lines_carry_command_and_context_and_never_a_secret() -> None:
    secret = "tok-UNIQUE-4f9d1c2b-not-for-logs"
    register_secret(secret)
    stream = io.StringIO()
    configure_logging(fmt="json", verbosity=1, command="osmosis-apply", stream=stream)
    get_logger(address="hle/parity", run_id="run-1").info(
        "submitting", detail=f"Bearer {secret}", nested={"headers": [secret]}
    )
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 1
    event = lines[0]
    assert event["command"] == "osmosis-apply"
    assert event["address"] == "hle/parity"
    assert event["run_id"] == "run-1"
    assert event["detail"] == "Bearer [REDACTED]"
    assert event["nested"] == {"headers": ["[REDACTED]"]}
    assert secret not in stream.getvalue()


def test_verbosity_filters_levels() -> None:
    stream = io.StringIO()
    configure_logging(fmt="json", verbosity=0, command="osmosis-plan", stream=stream)
    log = get_logger()
    log.info("hidden")
    log.warning("shown")
    messages = [json.loads(line)["event"] for line in stream.getvalue().splitlines()]
    assert messages == ["shown"]
