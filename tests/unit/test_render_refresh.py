"""The refresh renders (``osmosis-plan --refresh-only``): text and markdown."""

from __future__ import annotations

from reconciler.model import DriftItem, DriftKind, Plan, RecordedChange
from reconciler.render import MARKDOWN_MARKER, render_refresh_markdown, render_refresh_text

PLAN = Plan(
    platform="local",
    workspace="team",
    serial=3,
    drift=(
        DriftItem(
            kind=DriftKind.FAILED_OUTSIDE,
            address="tb/a",
            run_id="r1",
            message="run r1 failed outside osmosis-reconciler",
            fingerprint="sha256:" + "0" * 64,
        ),
    ),
)
CHANGE = RecordedChange(
    address="tb/a", run_id="r1", run_name="eager-hare", before="running", after="failed"
)


def test_the_markdown_refresh_lists_changes_and_drift_and_closes() -> None:
    text = render_refresh_markdown(PLAN, (CHANGE,), recorded=False, pending=1)
    assert text.startswith(f"{MARKDOWN_MARKER} workspace=team -->\n### Osmosis refresh for `team`")
    assert "**Would record 1 change:**" in text
    assert "- `tb/a eager-hare (r1): status running -> failed`" in text
    assert "| failed on the Platform | tb/a | run r1 failed outside osmosis-reconciler |" in text
    assert text.endswith("1 pending action is not part of a refresh; `osmosis-plan` shows them.\n")


def test_the_markdown_refresh_of_nothing_says_so() -> None:
    text = render_refresh_markdown(Plan(workspace="team"), (), recorded=True, pending=0)
    assert text.endswith("No changes. The lockfile already records what the Platform reports.\n")


def test_the_text_refresh_names_the_lockfile() -> None:
    text = render_refresh_text(PLAN, (CHANGE,), recorded=True, pending=0, state_path="state/x.lock")
    assert "Recorded 1 change in state/x.lock:" in text
    assert text.endswith("Refresh complete: 1 change recorded.\n")
