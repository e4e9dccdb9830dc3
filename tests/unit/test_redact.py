"""The one redaction rule (``reconciler.redact``): secret values, exactly, in every form
they travel in; never anything else."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from reconciler.redact import (
    MIN_SECRET_LENGTH,
    REDACTED,
    redact,
    redact_value,
    register_secret,
    secret_forms,
)

TOKEN = "tok-RULE-7d3e9a1f0b2c/+="
SECRET = 'sk-rule-"quoted"\\value-5e6f'


def encodings(value: str) -> dict[str, str]:
    raw = value.encode()
    return {
        "raw": value,
        "url-encoded": quote(value, safe=""),
        "json-escaped": json.dumps(value)[1:-1],
        "base64": base64.b64encode(raw).decode(),
        "base64 of Bearer": base64.b64encode(b"Bearer " + raw).decode(),
        "basic auth user:token": base64.b64encode(b"user:" + raw).decode(),
        "basic auth x:token": base64.b64encode(b"x:" + raw).decode(),
        "urlsafe base64": base64.urlsafe_b64encode(b"ab" + raw).decode(),
    }


@pytest.mark.parametrize("value", [TOKEN, SECRET])
@pytest.mark.parametrize("form", list(encodings(TOKEN)))
def test_a_registered_value_is_removed_in_every_form_and_the_message_keeps_its_facts(
    value: str, form: str
) -> None:
    register_secret(value)
    encoded = encodings(value)[form]
    message = (
        f"GET https://platform.example.test/api/cli/benchmark-runs?workspace=local "
        f"failed for terminal-bench/smoke in workspace local: {encoded} (token local)"
    )
    text = redact(message)
    assert encoded not in text
    assert REDACTED in text
    # Everything that is not the secret stays: URL, address, workspace, the word local.
    for fact in (
        "https://platform.example.test/api/cli/benchmark-runs?workspace=local",
        "terminal-bench/smoke",
        "in workspace local",
        "(token local)",
    ):
        assert fact in text, text


def test_short_and_common_words_are_never_secrets() -> None:
    for word in ("local", "t", "default", "abc1234"):
        assert len(word) < MIN_SECRET_LENGTH
        register_secret(word)
        assert secret_forms(word) == set()
    text = "records runs of platform 'local' ... pass --platform local; t default abc1234"
    assert redact(text) == text


def test_the_longest_value_wins_and_also_values_count_for_one_call_only() -> None:
    register_secret("abcd-secret")
    register_secret("abcd-secret-longer")
    assert redact("x abcd-secret-longer y") == f"x {REDACTED} y"
    signature = "X-Amz-Signature=0f1e2d3c4b5a69788796"
    url = f"https://bucket.s3.test/runs/r1/summary.csv?{signature}"
    assert redact(f"HTTP 403 for {url}", also=[signature]) == (
        f"HTTP 403 for https://bucket.s3.test/runs/r1/summary.csv?{REDACTED}"
    )
    assert signature in redact(f"HTTP 403 for {url}")


def test_values_inside_structures_are_redacted() -> None:
    register_secret(TOKEN)
    event = {"a": [f"Bearer {TOKEN}", {"b": (TOKEN,)}], "n": 3, "e": ValueError(TOKEN)}
    assert TOKEN not in repr(redact_value(event))
    assert redact_value(event)["n"] == 3
