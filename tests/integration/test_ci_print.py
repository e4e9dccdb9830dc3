"""``osmosis-ci comment --print`` and ``drift-issue --print``: the body GitHub would get,
offline (no token, no GitHub call), as real processes with no GitHub variables at all."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from jsonschema import Draft202012Validator

from reconciler.model import DriftItem, DriftKind, Plan
from reconciler.plan import drift_fingerprint
from reconciler.render import plan_to_dict
from tests.support.osmosis import BIN_DIR, PROJECT_ROOT, Osmosis, Platform, init_repo, smoke_config

SCHEMA = json.loads((PROJECT_ROOT / "reconciler/schema/output.schema.json").read_text())


def ci(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))}
    return subprocess.run(
        [str(BIN_DIR / "osmosis-ci"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_comment_print_writes_the_sticky_comment_body_without_a_token(
    tmp_path: Path, platform: Platform
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/a": smoke_config()})
    markdown = Osmosis(repo, platform).plan("--format", "markdown")
    body_file = tmp_path / "plan.md"
    body_file.write_text(markdown.out, encoding="utf-8")

    done = ci("comment", "--body-file", str(body_file), "--print", "--exit-code", "0", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<!-- osmosis-reconciler:plan")
    assert "+ tb/a" in done.stdout
    as_json = ci("comment", "--body-file", str(body_file), "--print", "--format", "json", cwd=repo)
    document = json.loads(as_json.stdout)
    assert not list(Draft202012Validator(SCHEMA).iter_errors(document))
    assert document["action"] == "printed" and "+ tb/a" in document["body"]
    without = ci("comment", "--body-file", str(body_file), cwd=repo)
    assert without.returncode == 1 and "--pr is required (or --print" in without.stderr


def test_drift_issue_print_writes_the_title_and_body_without_a_token(tmp_path: Path) -> None:
    drift = DriftItem(
        kind=DriftKind.STOPPED_OUTSIDE,
        address="tb/a",
        run_id="run-1",
        message="run run-1 was stopped outside osmosis-reconciler",
        fingerprint=drift_fingerprint(DriftKind.STOPPED_OUTSIDE, "tb/a", "run-1"),
    )
    plan_json = tmp_path / "plan.json"
    plan_json.write_text(json.dumps(plan_to_dict(Plan(drift=(drift,)))), encoding="utf-8")

    done = ci("drift-issue", "--plan-json", str(plan_json), "--print", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Osmosis drift: 1 item differs from the lockfile\n\n")
    assert "| tb/a | run-1 |" in done.stdout.replace("`", "")
    as_json = json.loads(
        ci(
            "drift-issue",
            "--plan-json",
            str(plan_json),
            "--print",
            "--format",
            "json",
            cwd=tmp_path,
        ).stdout
    )
    assert not list(Draft202012Validator(SCHEMA).iter_errors(as_json))
    assert as_json["action"] == "printed" and as_json["drift_items"] == 1
