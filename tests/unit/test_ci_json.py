"""``osmosis-ci --format json`` (issue 16, "a machine interface for every command"): every
subcommand, on success and on failure, prints exactly one JSON document on stdout that
validates against the published schema; the lines for people go to stderr. GitHub is the
loopback fake, git is the real binary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from reconciler.ci.main import main
from reconciler.cli.output import SCHEMA_FILE
from reconciler.state.lockfile import write_lockfile
from tests.support.git import git, make_clones
from tests.support.github_fake import FakeGitHub
from tests.support.plan_fixtures import SHA, entry, lock
from tests.unit.test_ci_lockfile_helpers import finished

VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)
MARKER = "<!-- osmosis-reconciler:plan workspace=acme -->"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    server = FakeGitHub(repo="o/r").start()
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    for key in ("GITHUB_ACTIONS", "GITHUB_SERVER_URL", "GITHUB_RUN_ID"):
        monkeypatch.delenv(key, raising=False)
    yield server
    server.close()


def ci_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    """Run ``osmosis-ci`` with ``--format json``: (exit code, the document, stderr)."""
    code = main(["--format", "json", *argv])
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # exactly one document: anything else fails here
    errors = sorted(VALIDATOR.iter_errors(document), key=str)
    assert not errors, [e.message for e in errors]
    assert document["command"] == "osmosis-ci" and document["exit_code"] == code
    assert FakeGitHub().token not in captured.out + captured.err
    return code, document, captured.err


def test_comment_create_then_unchanged(
    fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "plan.md"
    body.write_text(f"{MARKER}\n### plan\n", encoding="utf-8")
    code, doc, err = ci_json(capsys, "comment", "--pr", "4", "--body-file", str(body))
    assert code == 0 and doc["type"] == "ci_comment" and doc["action"] == "create"
    assert doc["comment_id"] == fake.comments[4][0]["id"]
    assert "plan comment: create" in err  # the line for people, on stderr
    # --format after the subcommand works the same.
    code = main(["comment", "--pr", "4", "--body-file", str(body), "--format", "json"])
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and again["action"] == "unchanged" and not again["errored"]


def test_comment_with_a_read_only_token_is_skipped_with_a_warning(
    fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.fail[("POST", r"/repos/o/r/issues/\d+/comments")] = 403
    body = tmp_path / "plan.md"
    body.write_text(f"{MARKER}\n", encoding="utf-8")
    code, doc, _ = ci_json(capsys, "comment", "--pr", "4", "--body-file", str(body))
    assert code == 0 and doc["action"] == "skipped" and doc["errored"] is False
    (warning,) = doc["diagnostics"]
    assert warning["severity"] == "warning" and "read-only" in warning["message"]


def test_drift_issue_opens_then_closes(
    fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "drift.json"
    item = {"kind": "run_missing", "address": "tb/a", "run_id": "r1", "message": "gone"}
    plan.write_text(json.dumps({"drift": [{**item, "fingerprint": "f1"}]}), encoding="utf-8")
    code, doc, _ = ci_json(capsys, "drift-issue", "--plan-json", str(plan))
    assert code == 0 and doc["type"] == "ci_drift_issue"
    assert (doc["action"], doc["drift_items"], doc["new"]) == ("create", 1, 1)
    assert doc["issue"] in fake.issues
    plan.write_text(json.dumps({"drift": []}), encoding="utf-8")
    code, doc, _ = ci_json(capsys, "drift-issue", "--plan-json", str(plan))
    assert doc["action"] == "close" and doc["drift_items"] == 0


def test_commit_message_is_in_the_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = tmp_path / "before.lock", tmp_path / "state" / "osmosis.lock"
    write_lockfile(before, lock(entry("tb/a", "r1")))
    write_lockfile(after, lock(entry("tb/a", "r1"), entry("tb/new", "r2")))
    code, doc, _ = ci_json(
        capsys, "--dir", str(tmp_path), "commit-message", "--before", str(before)
    )
    assert code == 0 and doc["type"] == "ci_commit_message"
    assert doc["message"].startswith("osmosis-apply") and "tb/new" in doc["message"]


def test_commit_lockfile_pushes_then_has_nothing_to_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote, repo, _ = make_clones(tmp_path)
    write_lockfile(repo / "state" / "osmosis.lock", lock(entry("tb/a", "r1")))
    message = tmp_path / "message.txt"
    message.write_text("osmosis-apply: 1 run [skip ci]\n", encoding="utf-8")
    argv = ("--dir", str(repo), "commit-lockfile", "--message-file", str(message))
    code, doc, err = ci_json(capsys, *argv, "--branch", "main")
    assert code == 0 and doc["type"] == "ci_commit_lockfile"
    assert doc["sha"] == git(remote, "rev-parse", "main")
    assert doc["subject"] == "osmosis-apply: 1 run [skip ci]" and doc["results_written"] == []
    assert "Pushed" in err
    code, doc, _ = ci_json(capsys, *argv, "--branch", "main")
    assert code == 0 and doc["sha"] is None and doc["subject"] is None


def test_announce_posts_and_a_failure_exits_1_with_an_error_diagnostic(
    fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.add_pull(7, SHA)
    state = tmp_path / "state" / "osmosis.lock"
    write_lockfile(state, lock(finished(observed_at=datetime.now(UTC))))
    fake.fail[("POST", r"/repos/o/r/statuses/.*")] = 403
    code, doc, _ = ci_json(capsys, "--dir", str(tmp_path), "announce")
    assert code == 1 and doc["type"] == "ci_announce" and doc["errored"] is True
    assert len(doc["failed"]) == 1 and "HTTP 403" in doc["errors"][0]
    fake.fail.clear()
    code, doc, _ = ci_json(capsys, "--dir", str(tmp_path), "announce")
    assert code == 0 and len(doc["posted"]) == 1 and doc["failed"] == []
    code, doc, err = ci_json(capsys, "--dir", str(tmp_path), "announce")
    assert code == 0 and doc["posted"] == [] and "Nothing to announce." in err


@pytest.mark.parametrize(
    ("argv", "token", "kind", "words"),
    [
        (("comment", "--pr", "x", "--body-file", "p.md"), True, "UsageError", "invalid int"),
        (("comment", "--pr", "1", "--body-file", "p.md"), False, "UsageError", "GITHUB_TOKEN"),
        (("drift-issue", "--plan-json", "missing.json"), True, "UsageError", "missing.json"),
        (
            ("commit-lockfile", "--message-file", "missing.txt", "--branch", "main"),
            True,
            "ReconcilerError",
            "missing.txt: No such file or directory",
        ),
    ],
)
def test_failures_are_an_error_document(
    fake: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: tuple[str, ...],
    token: bool,
    kind: str,
    words: str,
) -> None:
    if not token:
        monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.chdir(tmp_path)
    code, doc, err = ci_json(capsys, "--dir", str(tmp_path), *argv)
    assert code == 1 and doc["type"] == "error" and doc["errored"] is True
    (diagnostic,) = doc["diagnostics"]
    assert diagnostic["kind"] == kind and words in diagnostic["message"]
    assert err.startswith("Error: ")  # and in words on stderr
    assert fake.requests == []


def test_a_bug_still_ends_with_one_document(
    fake: FakeGitHub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("reconciler.ci.comment.sync_comment", broken)
    (tmp_path / "p.md").write_text(MARKER + "\n", encoding="utf-8")
    code, doc, err = ci_json(capsys, "comment", "--pr", "1", "--body-file", str(tmp_path / "p.md"))
    assert code == 1 and doc["type"] == "error"
    assert doc["diagnostics"][0]["kind"] == "InternalError"
    assert "RuntimeError: boom" in err
