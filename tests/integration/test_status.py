"""``osmosis-reconciler status`` over loopback (issue 37, finding 4): one row per address,
with what was spread over ``osmosis-state list``, ``osmosis-results`` and the plan.

A repository with a run re-run against an accepted baseline (downloaded, with a verdict),
a config changed since its run (pending), a config whose secret is missing (blocked) and a
run that is still active (not downloaded yet); the text table, the JSON document (checked
against the published schema) and the markdown table agree.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from reconciler.cli.output import SCHEMA_FILE
from reconciler.cli.results import main as results_main
from reconciler.cli.status import main as status_main
from tests.support.git import commit
from tests.support.osmosis import (
    Osmosis,
    Result,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
    write_config,
)

VALIDATOR = Draft202012Validator(
    json.loads(SCHEMA_FILE.read_text(encoding="utf-8")), format_checker=FormatChecker()
)
RERUN = "tb/regular"
CHANGED = "tb/changed"
BLOCKED = "tb/needs-a-secret"
LONG = "tb/a-very-long-directory-name-for-grouping/and-an-even-longer-config-name"


class Team(Osmosis):
    def status(self, *args: str) -> Result:
        return self._call(status_main, list(args), None)

    def results(self, *args: str) -> Result:
        return self._call(results_main, list(args), None)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("status")
    server = start_platform(tmp / "platform", speed=2000.0)
    configs = {RERUN: smoke_config(attempts=2), CHANGED: smoke_config(), LONG: smoke_config()}
    repo = init_repo(tmp / "repo", configs=configs)
    osm = Team(repo, server)
    done = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120")
    assert done.code == 0, done
    # Re-run until the history holds a finished run (the local Platform fails 1 in 10).
    for _attempt in range(5):
        done = osm.apply("--auto-approve", "--wait", "--wait-timeout", "120", "--replace", RERUN)
        assert done.code == 0, done
        lock = read_lock(repo)
        finished = [
            h["run_name"]
            for h in lock["history"]
            if h["address"] == RERUN and h["status"] == "finished"
        ]
        if finished and lock["runs"][RERUN]["status"] == "finished":
            break
    older = finished[0]
    assert osm.results("accept", f"{RERUN}@{older}").code == 0
    write_config(repo, CHANGED, smoke_config(model="openai/gpt-5"))
    write_config(repo, BLOCKED, smoke_config().replace("OPENAI_API_KEY", "NOT_STORED_KEY"))
    commit(repo, "Change one config, add one that needs a secret")
    yield osm, older
    server.close()


def test_one_row_per_address_with_run_download_baseline_verdict_pending_blocked(team) -> None:
    osm, older = team
    lock = read_lock(osm.repo)
    done = osm.status("--format", "json")
    assert done.code == 0, done
    document = done.json()
    VALIDATOR.validate(document)
    assert document["type"] == "status"
    rows = {row["address"]: row for row in document["addresses"]}
    assert sorted(rows) == sorted([RERUN, CHANGED, BLOCKED, LONG])
    rerun = rows[RERUN]
    assert rerun["run"] == lock["runs"][RERUN]["run_name"] and rerun["status"] == "finished"
    assert rerun["downloaded"] is True and rerun["baseline"] == older
    assert rerun["verdict"] in ("better", "worse", "no change", "inconclusive")
    assert rerun["pending"] == [] and rerun["blocked"] is None
    assert rows[CHANGED]["pending"] == ["submit"] and rows[CHANGED]["downloaded"] is True
    assert rows[BLOCKED]["run"] is None and rows[BLOCKED]["blocked"] == "submit: secret missing"
    assert rows[LONG]["baseline"] is None and rows[LONG]["verdict"] is None


def test_the_text_table_fits_100_columns_and_shortens_a_long_address(team) -> None:
    osm, _ = team
    done = osm.status()
    assert done.code == 0, done
    lines = done.out.splitlines()
    assert lines[0].startswith("Osmosis status · workspace ")
    assert all(len(line) <= 100 for line in lines), done.out
    header = next(line for line in lines if line.lstrip().startswith("address"))
    assert header.split() == [
        "address", "run", "status", "downloaded", "baseline:", "verdict", "pending",
    ]  # fmt: skip
    shortened = next(line for line in lines if "…" in line)
    assert shortened.split()[0] == "tb/a-very-long…r-config-name"
    row = {line.split()[0]: line.split() for line in lines if line.startswith("  tb/")}
    assert row[BLOCKED][1:] == ["–", "–", "–", "–", "blocked"]
    assert row[CHANGED][-1] == "submit" and row[CHANGED][3] == "yes"
    assert "  blocked: tb/needs-a-secret: submit: secret missing" in lines
    assert lines[-1] == "4 address(es): 1 with something pending, 1 blocked."
    markdown = osm.status("--format", "markdown").out
    assert f"| `{LONG}` |" in markdown and "| `tb/needs-a-secret` |" in markdown


def test_the_pr_comment_has_the_same_status_in_a_collapsed_section(team, tmp_path) -> None:
    osm, older = team
    saved = tmp_path / "plan.json"
    markdown = osm.plan("--format", "markdown", "--out", str(saved))
    assert markdown.code in (0, 4), markdown
    (tmp_path / "plan.md").write_text(markdown.out)
    args = ["comment", "--print", "--body-file", str(tmp_path / "plan.md")]
    args += ["--exit-code", "0", "--plan-json", str(saved), "--state", "state/osmosis.lock"]
    done = osm_ci(osm, *args)
    assert done.code == 0, done
    body = done.out
    section = body[body.index("<details><summary>Status of every address (4)</summary>") :]
    status_md = osm.status("--format", "markdown").out.strip()
    assert status_md in section
    assert f"| `{RERUN}` |" in section and f"| {older} |" in section
    assert "| `tb/needs-a-secret` | – | – | – | – | – | – | submit: secret missing |" in section


def osm_ci(osm: Osmosis, *args: str) -> Result:
    from reconciler.ci.main import main as ci_main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = ci_main(["--dir", str(osm.repo), *args])
    return Result(code, out.getvalue(), err.getvalue())
