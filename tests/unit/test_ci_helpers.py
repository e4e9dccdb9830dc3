"""osmosis-ci's helpers (reconciler/ci/): the sticky plan comment and the drift issue.

Their decisions are pure functions tested with plain values; ``osmosis-ci`` itself runs
against ``tests/support/github_fake.py``, a fake of the GitHub routes served over real loopback
HTTP, with the environment a workflow step gives it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reconciler.ci import comment as sticky
from reconciler.ci import drift
from reconciler.ci.github import GitHubAPI
from reconciler.ci.main import main
from reconciler.errors import GitHubError, UsageError
from tests.support.github_fake import FakeGitHub

TOKEN = FakeGitHub().token
BOT = {"login": "github-actions[bot]", "type": "Bot"}
HUMAN = {"login": "octocat", "type": "User"}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    server = FakeGitHub(repo="o/r").start()
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for key in ("GITHUB_SERVER_URL", "GITHUB_RUN_ID"):
        monkeypatch.delenv(key, raising=False)
    yield server
    server.close()


def run_ci(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert TOKEN not in text
    return code, text


# --------------------------------------------------------------------------- sticky comment

MARKER_LINE = "<!-- osmosis-reconciler:plan workspace=acme -->"
PLAN_MD = f"{MARKER_LINE}\n### Osmosis plan for `acme`\n\n| submit | 1 |\n"


def _comment(cid: int, body: str, user: dict[str, str] = BOT) -> dict[str, Any]:
    return {"id": cid, "body": body, "user": user}


class TestDecideCommentAction:
    def test_no_comments_creates(self) -> None:
        action = sticky.decide_comment_action([], sticky.MARKER_PREFIX, PLAN_MD)
        assert action == sticky.CommentAction("create", None)

    def test_updates_the_bot_comment_that_starts_with_the_marker(self) -> None:
        comments = [_comment(1, "LGTM", HUMAN), _comment(7, f"{MARKER_LINE}\nold plan\n")]
        action = sticky.decide_comment_action(comments, sticky.MARKER_PREFIX, PLAN_MD)
        assert action == sticky.CommentAction("update", 7)

    def test_marker_with_other_details_still_matches_by_prefix(self) -> None:
        comments = [_comment(9, "<!-- osmosis-reconciler:plan workspace=old -->\nplan")]
        action = sticky.decide_comment_action(comments, sticky.MARKER_PREFIX, PLAN_MD)
        assert action == sticky.CommentAction("update", 9)

    def test_identical_body_is_left_alone(self) -> None:
        comments = [_comment(7, PLAN_MD)]
        action = sticky.decide_comment_action(comments, sticky.MARKER_PREFIX, PLAN_MD)
        assert action == sticky.CommentAction("unchanged", 7)

    def test_a_quoted_marker_is_not_the_sticky_comment(self) -> None:
        quoted = f"> {MARKER_LINE}\n> old plan\n\nWhy does this submit?"
        action = sticky.decide_comment_action([_comment(3, quoted)], sticky.MARKER_PREFIX, PLAN_MD)
        assert action.kind == "create"

    def test_a_human_comment_with_the_marker_is_not_edited(self) -> None:
        comments = [_comment(3, f"{MARKER_LINE}\ncopied", HUMAN)]
        assert (
            sticky.decide_comment_action(comments, sticky.MARKER_PREFIX, PLAN_MD).kind == "create"
        )
        assert sticky.decide_comment_action(
            comments, sticky.MARKER_PREFIX, PLAN_MD, bot_login=None
        ) == sticky.CommentAction("update", 3)

    def test_oldest_of_several_sticky_comments_wins(self) -> None:
        comments = [_comment(4, f"{MARKER_LINE}\na"), _comment(5, f"{MARKER_LINE}\nb")]
        assert sticky.decide_comment_action(comments, sticky.MARKER_PREFIX, PLAN_MD).comment_id == 4


class TestPrepareCommentBody:
    def test_plan_markdown_keeps_its_marker_first_and_gets_a_run_link(self) -> None:
        body = sticky.prepare_comment_body(PLAN_MD, exit_code=0, run_url="https://gh/run/1")
        lines = body.splitlines()
        assert lines[0] == MARKER_LINE
        assert lines[1] == "### Osmosis plan for `acme`"
        assert "[workflow run](https://gh/run/1)" in body
        assert body.endswith("\n")

    def test_output_without_marker_gets_the_fallback_marker(self) -> None:
        body = sticky.prepare_comment_body("### some plan\n", exit_code=0)
        assert body.splitlines()[0] == sticky.FALLBACK_MARKER
        assert sticky.has_marker(body)
        assert "### some plan" in body

    def test_validation_failure_replaces_the_old_plan_with_a_note(self) -> None:
        body = sticky.prepare_comment_body("", exit_code=None, validation_failed=True)
        assert sticky.has_marker(body)
        assert "failed validation" in body
        assert "osmosis-plan --validate-only" in body

    def test_plan_error_keeps_the_output_under_a_warning(self) -> None:
        body = sticky.prepare_comment_body(PLAN_MD, exit_code=1)
        lines = body.splitlines()
        assert lines[0] == MARKER_LINE
        assert "osmosis-plan failed** (exit code 1)" in lines[1]
        assert "| submit | 1 |" in body

    def test_plan_error_with_no_output(self) -> None:
        body = sticky.prepare_comment_body("", exit_code=1)
        assert body.startswith(sticky.FALLBACK_MARKER + "\n### osmosis-plan\n")
        assert "exit code 1" in body

    def test_detailed_exit_code_2_is_not_an_error(self) -> None:
        body = sticky.prepare_comment_body(PLAN_MD, exit_code=2)
        assert "failed" not in body

    def test_long_output_is_cut_below_the_limit_with_a_note(self) -> None:
        markdown = MARKER_LINE + "\n" + ("| row | x |\n" * 10_000)
        body = sticky.prepare_comment_body(
            markdown, exit_code=0, run_url="https://gh/run/2", limit=5_000
        )
        assert len(body) <= 5_000
        assert body.splitlines()[0] == MARKER_LINE
        assert "cut to fit" in body
        assert body.rstrip().endswith("[workflow run](https://gh/run/2)</sub>")

    def test_default_limit_is_githubs(self) -> None:
        markdown = MARKER_LINE + "\n" + "x" * 70_000
        assert len(sticky.prepare_comment_body(markdown, exit_code=0)) <= 65_536


class TestCommentCommand:
    def _run(
        self,
        fake: FakeGitHub,
        tmp_path: Path,
        markdown: str | None,
        *extra: str,
        capsys: pytest.CaptureFixture[str],
    ) -> tuple[int, str]:
        plan = tmp_path / "plan.md"
        if markdown is not None:
            plan.write_text(markdown, encoding="utf-8")
        return run_ci(capsys, "comment", "--pr", "12", "--body-file", str(plan), *extra)

    def test_first_run_creates_then_later_runs_update_the_same_comment(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fake.comments[12] = [
            _comment(1, "first", HUMAN),
            _comment(2, "second", HUMAN),
            _comment(3, "third", HUMAN),
        ]
        code, out = self._run(fake, tmp_path, PLAN_MD, "--exit-code", "0", capsys=capsys)
        assert code == 0 and "plan comment: create" in out
        assert [c["id"] for c in fake.comments[12]][:3] == [1, 2, 3]
        created = fake.comments[12][3]
        assert created["body"].startswith(MARKER_LINE)

        newer = PLAN_MD.replace("| submit | 1 |", "| submit | 2 |")
        code, out = self._run(fake, tmp_path, newer, "--exit-code", "0", capsys=capsys)
        assert code == 0 and f"plan comment: update {created['id']}" in out
        assert len(fake.comments[12]) == 4  # still one sticky comment
        assert "| submit | 2 |" in fake.comments[12][3]["body"]

        code, out = self._run(fake, tmp_path, newer, "--exit-code", "0", capsys=capsys)
        assert "plan comment: unchanged" in out
        assert fake.calls("PATCH") == [f"PATCH /repos/o/r/issues/comments/{created['id']}"]

    def test_comments_are_read_page_by_page(self, fake: FakeGitHub) -> None:
        fake.comments[5] = [_comment(i, f"c{i}", HUMAN) for i in range(1, 251)]
        api = GitHubAPI("o/r", token=fake.token, api_url=fake.url)
        assert [c["id"] for c in api.list_issue_comments(5)] == list(range(1, 251))
        assert fake.calls("GET").count("GET /repos/o/r/issues/5/comments") == 3

    def test_validation_failure_updates_the_comment_even_without_a_plan_file(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fake.comments[12] = [_comment(50, PLAN_MD)]
        code, _ = self._run(fake, tmp_path, None, "--validation-failed", capsys=capsys)
        assert code == 0
        assert "failed validation" in fake.comments[12][0]["body"]
        assert "| submit | 1 |" not in fake.comments[12][0]["body"]

    def test_read_only_token_warns_and_passes(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fake.fail[("POST", r"/repos/o/r/issues/\d+/comments")] = 403
        code, out = self._run(fake, tmp_path, PLAN_MD, "--exit-code", "0", capsys=capsys)
        assert code == 0
        assert out.startswith("::warning::") and "HTTP 403" in out

    def test_server_error_fails(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fake.fail[("GET", r"/repos/o/r/issues/12/comments")] = 422
        code, out = self._run(fake, tmp_path, PLAN_MD, "--exit-code", "0", capsys=capsys)
        assert code == 1
        assert out.startswith("::error::") and "HTTP 422" in out

    def test_missing_token_fails_with_a_hint(
        self,
        fake: FakeGitHub,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.delenv("GITHUB_TOKEN")
        code, out = self._run(fake, tmp_path, PLAN_MD, capsys=capsys)
        assert code == 1
        assert "GITHUB_TOKEN is not set" in out
        assert fake.requests == []

    def test_a_wrong_token_is_a_github_error_that_never_shows_the_token(
        self, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        api = GitHubAPI("o/r", token="ghp_wrong_token_value", api_url=fake.url)
        with pytest.raises(GitHubError) as info:
            api.list_issue_comments(3)
        assert info.value.status == 401
        assert "ghp_wrong_token_value" not in str(info.value) + (info.value.hint or "")

    def test_unreachable_api_is_a_github_error(self) -> None:
        api = GitHubAPI("o/r", token="t", api_url="http://127.0.0.1:9")
        with pytest.raises(GitHubError, match="list comments"):
            api.list_issue_comments(3)

    @pytest.mark.parametrize("repo", ["noslash", "a/b/c", "/r", "o/"])
    def test_bad_repo_names(self, repo: str) -> None:
        with pytest.raises(UsageError, match="owner/name"):
            GitHubAPI(repo, token="t")


# --------------------------------------------------------------------------- drift issue


def _item(
    fp: str,
    kind: str = "run_missing",
    address: str | None = "tb/smoke",
    run_id: str | None = "run-1",
    message: str = "recorded run is gone",
) -> dict[str, Any]:
    return {
        "kind": kind,
        "address": address,
        "run_id": run_id,
        "message": message,
        "fingerprint": fp,
    }


class TestReadDrift:
    def test_reads_the_json_plan(self) -> None:
        entries = drift.read_drift(
            {
                "format_version": "1.0",
                "drift": [_item("sha256:b", kind="unknown_run", address=None), _item("sha256:a")],
            }
        )
        assert [e.fingerprint for e in entries] == ["sha256:a", "sha256:b"]
        assert entries[1].address is None and entries[1].kind == "unknown_run"

    def test_reads_a_saved_plan_and_drops_duplicates(self) -> None:
        entries = drift.read_drift({"kind": "saved", "plan": {"drift": [_item("x"), _item("x")]}})
        assert [e.fingerprint for e in entries] == ["x"]

    def test_no_drift_key_means_no_drift(self) -> None:
        assert drift.read_drift({"summary": {}}) == ()

    @pytest.mark.parametrize(
        "payload, message",
        [
            ({"drift": {"a": 1}}, "'drift' must be a list"),
            ({"drift": [{"kind": "run_missing"}]}, "drift[0] has no fingerprint"),
            ({"drift": ["text"]}, "drift[0] has no fingerprint"),
        ],
    )
    def test_malformed(self, payload: dict[str, Any], message: str) -> None:
        with pytest.raises(drift.PlanJsonError, match=re.escape(message)):
            drift.read_drift(payload)


class TestFingerprintMarker:
    def test_round_trip(self) -> None:
        body = drift.render_marker(["b", "a", "a"]) + "\n\nsome text"
        known = drift.known_fingerprints(body)
        assert known is not None and known.fingerprints == frozenset({"a", "b"})
        assert known.count == 2

    def test_hostile_fingerprint_cannot_close_the_comment_early(self) -> None:
        hostile = "x --> <script>alert(1)</script> <!-- y"
        marker = drift.render_marker([hostile, "ok"])
        assert marker.count("-->") == 1 and marker.endswith("-->")
        known = drift.known_fingerprints(marker)
        assert known is not None and known.fingerprints == frozenset({hostile, "ok"})

    def test_large_sets_keep_only_a_digest(self) -> None:
        many = [f"sha256:{i:064x}" for i in range(drift.MAX_LISTED_FINGERPRINTS + 1)]
        marker = drift.render_marker(many)
        assert len(marker) < 200
        known = drift.known_fingerprints(marker)
        assert known is not None and known.fingerprints is None
        assert known.count == len(many) and known.digest == drift.fingerprint_digest(many)

    @pytest.mark.parametrize(
        "body",
        [
            None,
            "",
            "hand-written issue",
            "<!-- osmosis-reconciler:drift {broken -->",
            '<!-- osmosis-reconciler:drift {"fingerprints": [1]} -->',
        ],
    )
    def test_unreadable_bodies(self, body: str | None) -> None:
        assert drift.known_fingerprints(body) is None


class TestDriftIssueAction:
    def body(self, *fps: str) -> str:
        return drift.render_marker(fps) + "\n\ntable"

    def test_clean_and_no_issue(self) -> None:
        assert drift.drift_issue_action(None, []) == drift.DriftDecision("none")

    def test_drift_and_no_issue_creates(self) -> None:
        assert drift.drift_issue_action(None, ["b", "a"]) == drift.DriftDecision(
            "create", new=("a", "b"), notify=True
        )

    def test_clean_with_an_open_issue_closes(self) -> None:
        assert drift.drift_issue_action(self.body("a"), []).kind == "close"

    def test_same_fingerprints_leave_the_issue_alone(self) -> None:
        assert drift.drift_issue_action(self.body("a", "b"), ["b", "a"]).kind == "none"

    def test_new_fingerprints_update_and_notify(self) -> None:
        decision = drift.drift_issue_action(self.body("a", "b"), ["b", "c"])
        assert decision == drift.DriftDecision("update", new=("c",), resolved=("a",), notify=True)

    def test_only_resolved_items_update_quietly(self) -> None:
        decision = drift.drift_issue_action(self.body("a", "b"), ["b"])
        assert decision == drift.DriftDecision("update", resolved=("a",), notify=False)

    def test_issue_without_a_marker_is_rewritten_and_notifies(self) -> None:
        decision = drift.drift_issue_action("edited by hand", ["a"])
        assert decision.kind == "update" and decision.notify and decision.new == ("a",)

    def test_digest_only_issue(self) -> None:
        many = [f"f{i}" for i in range(drift.MAX_LISTED_FINGERPRINTS + 5)]
        body = drift.render_marker(many)
        assert drift.drift_issue_action(body, reversed(many)).kind == "none"
        changed = drift.drift_issue_action(body, [*many, "extra"])
        assert changed.kind == "update" and changed.notify


class TestIssueBody:
    def test_lists_items_and_escapes_table_cells(self) -> None:
        entries = drift.read_drift(
            {
                "drift": [
                    _item("f1", message="status a|b\nsecond line"),
                    _item("f2", kind="unknown_run", address=None, run_id="run-9"),
                ]
            }
        )
        body = drift.render_issue_body(entries, run_url="https://gh/run/3")
        assert body.startswith("<!-- osmosis-reconciler:drift ")
        assert "| `run_missing` | tb/smoke | run-1 | status a\\|b second line |" in body
        assert "| `unknown_run` | — | run-9 |" in body
        assert "[this workflow run](https://gh/run/3)" in body
        known = drift.known_fingerprints(body)
        assert known is not None and known.fingerprints == frozenset({"f1", "f2"})

    def test_long_tables_are_counted_not_dropped(self) -> None:
        entries = drift.read_drift({"drift": [_item(f"f{i:04d}") for i in range(250)]})
        body = drift.render_issue_body(entries)
        assert body.count("| `run_missing` |") == drift.MAX_ROWS
        assert "…and 50 more" in body
        known = drift.known_fingerprints(body)
        assert known is not None and known.count == 250

    def test_title_counts_items(self) -> None:
        one = drift.read_drift({"drift": [_item("a")]})
        assert drift.issue_title(one) == "Osmosis drift: 1 item differs from the lockfile"


def _fingerprints(body: str) -> set[str] | None:
    known = drift.known_fingerprints(body)
    assert known is not None, body
    return None if known.fingerprints is None else set(known.fingerprints)


class TestDriftIssueCommand:
    def _run(
        self,
        fake: FakeGitHub,
        tmp_path: Path,
        items: list[dict[str, Any]],
        capsys: pytest.CaptureFixture[str],
        saved: bool = False,
    ) -> tuple[int, str]:
        payload: dict[str, Any] = {
            "format_version": "1.0",
            "drift": items,
            "summary": {"drift": len(items)},
        }
        if saved:
            payload = {"kind": "osmosis-saved-plan", "plan": payload}
        path = tmp_path / "drift.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        fake.requests.clear()
        return run_ci(
            capsys, "--run-url", "https://gh/run/4", "drift-issue", "--plan-json", str(path)
        )

    def test_lifecycle_open_keep_update_quiet_update_close(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        a, b = (
            _item("fp-a"),
            _item(
                "fp-b",
                kind="stopped_outside",
                address="tb/full",
                run_id="run-2",
                message="stopped outside the tool",
            ),
        )

        code, out = self._run(fake, tmp_path, [a], capsys)
        assert code == 0 and "drift issue: create #1" in out
        assert set(fake.labels) == {"osmosis-drift"}
        issue = fake.issues[1]
        assert issue["labels"] == ["osmosis-drift"] and issue["state"] == "open"
        assert _fingerprints(issue["body"]) == {"fp-a"}

        code, out = self._run(fake, tmp_path, [a], capsys, saved=True)
        assert code == 0 and "drift issue: none #1" in out
        assert fake.calls("PATCH") == [] and fake.calls("POST") == []

        code, out = self._run(fake, tmp_path, [a, b], capsys)
        assert "drift issue: update #1" in out and "1 new" in out
        assert _fingerprints(fake.issues[1]["body"]) == {"fp-a", "fp-b"}
        assert fake.issues[1]["title"] == "Osmosis drift: 2 items differ from the lockfile"
        new_comment = fake.comments[1][-1]["body"]
        assert "New drift: 1 item." in new_comment and "tb/full" in new_comment
        assert "tb/smoke" not in new_comment

        code, out = self._run(fake, tmp_path, [b], capsys)
        assert "drift issue: update #1" in out and "1 resolved" in out
        assert fake.calls("POST") == []  # quiet: no comment for resolved items
        assert len(fake.comments[1]) == 1

        code, out = self._run(fake, tmp_path, [], capsys)
        assert "drift issue: close #1" in out
        assert fake.issues[1]["state"] == "closed"
        assert "no drift" in fake.comments[1][-1]["body"]

        code, out = self._run(fake, tmp_path, [], capsys)
        assert "drift issue: none;" in out and fake.calls("POST") == []

        code, out = self._run(fake, tmp_path, [b], capsys)
        assert "drift issue: create #2" in out  # a fresh issue, the label reused
        assert fake.calls("POST") == ["POST /repos/o/r/issues"]

    def test_a_human_issue_with_the_label_is_not_ours(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fake.labels["osmosis-drift"] = {"name": "osmosis-drift"}
        fake.issues[1] = {
            "number": 1,
            "title": "question about drift",
            "body": "why?",
            "labels": ["osmosis-drift"],
            "state": "open",
            "user": HUMAN,
        }
        fake.next_issue = 2
        code, out = self._run(fake, tmp_path, [_item("fp")], capsys)
        assert "drift issue: create #2" in out
        code, out = self._run(fake, tmp_path, [], capsys)
        assert "drift issue: close #2" in out
        assert fake.issues[1]["state"] == "open" and fake.issues[1]["body"] == "why?"

    def test_pull_requests_are_not_issues(self, fake: FakeGitHub) -> None:
        fake.add_pull(3, "a" * 40)
        fake.issues[3]["labels"] = ["osmosis-drift"]
        api = GitHubAPI("o/r", token=fake.token, api_url=fake.url)
        assert api.list_open_issues("osmosis-drift") == []

    def test_unreadable_plan_json_fails(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "drift.json"
        path.write_text("Error: platform unreachable\n")
        code, out = run_ci(capsys, "drift-issue", "--plan-json", str(path))
        assert code == 1
        assert out.startswith(f"::error::{path}: cannot read the plan JSON")
        assert fake.requests == []

    def test_github_error_fails(
        self, fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fake.fail[("GET", "/repos/o/r/issues")] = 403
        code, out = self._run(fake, tmp_path, [_item("fp")], capsys)
        assert code == 1 and "HTTP 403" in out


# --------------------------------------------------------------------------- contract with render


@pytest.fixture(scope="module")
def render() -> ModuleType:
    return pytest.importorskip("reconciler.render")


def _plan_with_drift() -> Any:
    from reconciler.model import (
        Action,
        DriftItem,
        DriftKind,
        Plan,
        PlanItem,
        PlanSummary,
        Reason,
    )

    return Plan(
        items=(
            PlanItem(
                action=Action.SUBMIT,
                address="tb/new",
                reason=Reason.NEW_CONFIG,
                task_count=623,
                attempts=1246,
            ),
            PlanItem(
                action=Action.STOP, address="tb/old", reason=Reason.CONFIG_DELETED, run_id="r2"
            ),
        ),
        drift=(
            DriftItem(
                kind=DriftKind.RUN_MISSING,
                address="tb/smoke",
                run_id="r1",
                message="recorded run r1 is missing on the Platform",
                fingerprint="sha256:" + "1" * 64,
            ),
            DriftItem(
                kind=DriftKind.POSSIBLE_DUPLICATE,
                address=None,
                run_id="r9",
                message="run r9 is not in the lockfile",
                fingerprint="sha256:" + "9" * 64,
            ),
        ),
        summary=PlanSummary(submit=1, stop=1, attempts=1246, drift=2),
        workspace="acme",
        platform="local",
    )


def test_markdown_render_starts_with_the_marker_the_comment_script_finds(
    render: ModuleType,
) -> None:
    markdown = render.render_markdown(_plan_with_drift())
    assert sticky.has_marker(markdown)
    body = sticky.prepare_comment_body(markdown, exit_code=0)
    assert body.splitlines()[0] == markdown.splitlines()[0]
    existing = [_comment(77, body)]
    assert (
        sticky.decide_comment_action(
            existing, sticky.MARKER_PREFIX, body.replace("acme`", "acme` ")
        ).comment_id
        == 77
    )


def test_json_render_drift_is_what_the_drift_script_reads(render: ModuleType) -> None:
    plan = _plan_with_drift()
    entries = drift.read_drift(json.loads(render.render_json(plan)))
    assert {(e.kind, e.address, e.run_id, e.fingerprint) for e in entries} == {
        (d.kind.value, d.address, d.run_id, d.fingerprint) for d in plan.drift
    }
    saved = {"kind": "saved", "plan": render.plan_to_dict(plan)}
    assert drift.read_drift(saved) == entries
