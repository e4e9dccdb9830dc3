"""The output layer (reconciler/cli/output.py): formats, colour rules, errors once."""

from __future__ import annotations

import io
import json

import pytest

from reconciler.cli.output import Output, color_enabled, requested_format
from reconciler.errors import ConfigError, ConfigIssue, LockHeldError


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("flag", "env", "tty", "expected"),
    [
        (False, {}, True, True),
        (False, {}, False, False),
        (True, {"FORCE_COLOR": "1"}, True, False),  # the flag wins
        (False, {"NO_COLOR": "1"}, True, False),
        (False, {"NO_COLOR": ""}, True, True),  # no-color.org: empty means unset
        (False, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),
        (False, {"FORCE_COLOR": "1"}, False, True),
        (False, {"FORCE_COLOR": "0"}, False, False),
        (False, {"TERM": "dumb"}, True, False),
        (False, {"TERM": "dumb", "FORCE_COLOR": "1"}, False, True),
    ],
)
def test_colour_rules(flag: bool, env: dict[str, str], tty: bool, expected: bool) -> None:
    stream = Tty() if tty else io.StringIO()
    assert color_enabled(flag, stream, env) is expected


def test_the_format_is_read_before_parsing() -> None:
    assert requested_format(["--format", "json", "--bogus"]) == "json"
    assert requested_format(["--format=jsonl"]) == "jsonl"
    assert requested_format(["--format", "yaml"]) == "text"
    assert requested_format([]) == "text"


def test_a_config_error_prints_each_issue_once_and_becomes_diagnostics() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = Output("osmosis-plan", "json", out=out, err=err)
    warning = ConfigIssue("benchmarks/a.toml", 3, 1, "tasks", "deprecated", severity="warning")
    error = ConfigIssue("benchmarks/a.toml", 2, 13, "experiment.benchmark", "must be a string")
    output.issue(warning)  # shown when the configs were read
    output.error(ConfigError([warning, error]))
    assert output.finish(1) == 1
    assert err.getvalue().count("deprecated") == 1
    assert err.getvalue().count("must be a string") == 1
    doc = json.loads(out.getvalue())
    assert doc["type"] == "error" and doc["errored"] is True and doc["exit_code"] == 1
    assert [d["kind"] for d in doc["diagnostics"]] == ["ConfigIssue", "ConfigIssue", "ConfigError"]
    assert doc["errors"][0] == "benchmarks/a.toml:2:13: experiment.benchmark: must be a string"


def test_quiet_silences_notes_and_progress_but_not_results_or_errors() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = Output("osmosis-apply", "text", out=out, err=err, quiet=True)
    output.info("Platform: local")
    output.progress("Waiting for 1 run(s) ...")
    output.progress("+ tb/a: submit x: ok: submitted", essential=True)
    output.show("Plan: 1 to submit\n")
    output.error(LockHeldError("the apply lock is held", "wait", holder={"pid": 1}))
    assert out.getvalue() == "+ tb/a: submit x: ok: submitted\nPlan: 1 to submit\n"
    assert err.getvalue() == "Error: the apply lock is held\n  wait\n"
    assert output.finish(1) == 1 and out.getvalue().count("\n") == 2  # no document in text


def test_jsonl_events_come_first_and_the_document_last() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = Output("osmosis-apply", "jsonl", out=out, err=err)
    output.event("wait_progress", counts={"queued": 1})
    output.result("unlock", {"lock_id": "x", "released": True})
    output.finish(0)
    first, last = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["type"] == "wait_progress" and "command" not in first
    assert last["type"] == "unlock" and last["exit_code"] == 0 and last["errored"] is False


def test_every_flag_of_every_command_has_help_text() -> None:
    from reconciler.cli import apply, plan
    from reconciler.exit_codes import PLAN_AND_APPLY_HELP

    for parser in (plan.parser(), apply.parser()):
        missing = [
            "/".join(action.option_strings) or action.dest
            for action in parser._actions
            if not action.help or not action.help.strip()
        ]
        assert missing == [], (parser.prog, missing)
        assert PLAN_AND_APPLY_HELP in parser.format_help()
    assert "4  only with --wait" in PLAN_AND_APPLY_HELP
