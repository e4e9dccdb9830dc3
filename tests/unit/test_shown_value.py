"""Values quoted in error messages stay a short, escaped line (issue 36: `make fuzz` found a
policy rule whose integer of over 4,300 digits made the error message itself a ValueError,
an internal error where a clear one was due)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.config.project import load_project_settings
from reconciler.errors import UsageError
from reconciler.escaping import SHOWN_VALUE_LIMIT, shown_value

HUGE = 10**5000 - 1  # 5,000 nines: more digits than Python will print
HUGE_TOML = "0x" + "f" * 4000  # TOML reads hex of any length; about 4,816 digits


def test_an_integer_too_long_to_print_is_named_by_its_size() -> None:
    assert shown_value(HUGE) == "an integer of about 5,000 digits"
    assert shown_value([1, HUGE]) == "a list holding an integer too long to show"


def test_a_long_or_hostile_value_is_cut_and_escaped() -> None:
    shown = shown_value("x" * 500)
    assert len(shown) == SHOWN_VALUE_LIMIT and shown.endswith("…")
    assert "\x1b" not in shown_value("a\x1b[2Jb") and "\\x1b" in shown_value("a\x1b[2Jb")
    assert shown_value(0.5) == "0.5" and shown_value("ok") == "'ok'"


@pytest.mark.parametrize("key", ["name", "effect", "match"])
def test_a_policy_rule_holding_a_huge_integer_is_a_clear_error(tmp_path: Path, key: str) -> None:
    values = {"name": '"cap"', "match": '["tb/*"]', "effect": '"deny"', "max_attempts": "3"}
    values[key] = HUGE_TOML if key != "match" else f"[{HUGE_TOML}]"
    rule = "[[policy]]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    (tmp_path / "osmosis.toml").write_text(rule, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        load_project_settings(tmp_path)
    message = str(caught.value)
    assert message.startswith("osmosis.toml:") and len(message) < 400, message
