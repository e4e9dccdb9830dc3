"""Secret hygiene (issue 7, suite 5): a recognisable token and secret values never leak.

An end-to-end plan / saved plan / apply / wait / download / refresh flow over loopback with
``OSMOSIS_TOKEN=tok-RECOGNISABLE-...`` (the Platform accepts only that token) and every
secret the example configs reference set through the S2 route with recognisable values.
Every byte the commands produce is captured: stdout, stderr (JSON logs at -vv), plan files
in every format, the lockfile, downloaded outputs (all types), anything else written in the
repository, and the failure paths (a wrong token, a Platform that goes down mid-command).
None may contain a token or a secret value, raw or in a common encoding.

Issue 23 adds ``GITHUB_TOKEN`` and every ``osmosis-ci`` subcommand (both formats, against
the fake GitHub and against one that quotes the ``Authorization`` header back).

Fast: part of ``make test``, and of ``make reliability`` (marker ``secret_hygiene``).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from reconciler.local_platform import LocalPlatform
from reconciler.state.lockfile import new_state, write_lockfile
from tests.support.emulator import serve

from .harness import BIN, WORKSPACE, cli_env, command

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tok-RECOGNISABLE-3f9a7c21e85d4b60"
WRONG_TOKEN = "tok-RECOGNISABLE-WRONG-0c1d2e3f4a5b"
SECRETS = {
    "OPENAI_API_KEY": "sk-RECOGNISABLE-openai-8d1f0e2a9b7c",
    "ANTHROPIC_API_KEY": "sk-ant-RECOGNISABLE-5e6f7a8b9c0d",
    "CURSOR_API_KEY": "cur-RECOGNISABLE-1a2b3c4d5e6f",
    "MY_ENDPOINT_KEY": "ep-RECOGNISABLE-9f8e7d6c5b4a",
    "HF_TOKEN": "hf_RECOGNISABLE_0a9b8c7d6e5f",
}
LOG_FLAGS = ("--log-format", "json", "-vv")
pytestmark = pytest.mark.secret_hygiene  # in `make test`, and in `make reliability` too


def forms(value: str) -> set[bytes]:
    """The value as bytes, URL-encoded, base64 (alone and as ``Bearer`` / basic-auth)."""
    raw = value.encode()
    out = {raw, quote(value, safe="").encode()}
    for blob in (raw, b"Bearer " + raw, b"x:" + raw, b"local:" + raw):
        out.add(base64.b64encode(blob).rstrip(b"="))
    return out


NEEDLES = {
    form: name
    for name, value in {"token": TOKEN, "wrong token": WRONG_TOKEN, **SECRETS}.items()
    for form in forms(value)
}


def leaks(data: bytes) -> list[str]:
    return sorted({name for form, name in NEEDLES.items() if form in data})


def test_the_scanner_finds_every_form() -> None:
    # Without this the hygiene test could pass by scanning wrongly.
    for value in (TOKEN, *SECRETS.values()):
        for form in forms(value):
            assert leaks(b"prefix " + form + b" suffix")
    assert leaks(b"nothing to see") == []


@pytest.fixture
def platform_url(tmp_path: Path) -> Iterator[tuple[str, LocalPlatform]]:
    platform = LocalPlatform(
        tmp_path / "platform", speed=5000, token=TOKEN, workspaces=(WORKSPACE,)
    )
    handle = serve(platform)
    try:
        yield handle.url, platform
    finally:
        handle.close()


def _set_secrets_over_s2(url: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Osmosis-Workspace": WORKSPACE}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        for name, value in SECRETS.items():
            answer = http.post(
                "/api/cli/environment-secrets",
                json={"name": name, "value": value, "scope": "workspace"},
            )
            assert answer.status_code == 200, answer.text
            assert value not in answer.text


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copytree(ROOT / "benchmarks", repo / "benchmarks")
    (repo / "pyproject.toml").write_text(
        "[tool.osmosis-reconciler]\nmax_attempts = 100000\nparallelism = 4\n"
    )
    git = ["git", "-c", "user.email=h@example.invalid", "-c", "user.name=h"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "configs"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True, timeout=60)
    return repo


def test_no_token_or_secret_value_anywhere(
    tmp_path: Path, platform_url: tuple[str, LocalPlatform]
) -> None:
    url, platform = platform_url
    _set_secrets_over_s2(url)
    repo = _repo(tmp_path)
    captured: list[tuple[str, bytes]] = []

    def cli(tool: str, *args: str, token: str = TOKEN, expect: tuple[int, ...] = (0,)) -> str:
        done = subprocess.run(
            command(tool, repo, url, *LOG_FLAGS, *args),
            env=cli_env({"OSMOSIS_TOKEN": token, "OSMOSIS_CRASH_LOG": str(repo / "crash.log")}),
            cwd=repo,
            capture_output=True,
            timeout=300,
        )
        label = f"{tool} {' '.join(args)}"
        captured.append((f"{label} [stdout]", done.stdout))
        captured.append((f"{label} [stderr]", done.stderr))
        assert done.returncode in expect, (label, done.returncode, done.stderr[-3000:])
        return done.stdout.decode() + done.stderr.decode()

    cli("osmosis-plan", "--validate-only")
    for fmt in ("text", "markdown", "json"):
        cli("osmosis-plan", "--format", fmt, "--out", str(repo / f"plan-{fmt}.json"))
    applied = cli("osmosis-apply", str(repo / "plan-json.json"), expect=(0, 3))
    assert "submitted" in applied
    cli(
        "osmosis-apply",
        "--auto-approve",
        "--wait",
        "--wait-timeout",
        "120",
        "--download-types",
        "all",
        expect=(0, 3),
    )
    cli("osmosis-plan", "--refresh-only", "--format", "json", expect=(0,))
    cli("osmosis-apply", "--refresh-only", "--format", "jsonl")
    cli("osmosis-apply", "--auto-approve", "--format", "jsonl", expect=(0, 3))
    cli("osmosis-plan", "--detailed-exitcode", "--format", "json", expect=(0, 2))
    # Failure paths: a token the Platform refuses, and a Platform that is gone.
    refused = cli("osmosis-plan", token=WRONG_TOKEN, expect=(1,))
    assert "401" in refused or "token" in refused.lower()
    assert platform.submit_count() >= 5  # the flow really ran, with the real token

    files = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.relative_to(repo).parts]
    downloads = [p for p in files if ".osmosis/benchmarks" in p.as_posix()]
    assert any(p.name == "logs.txt" for p in downloads) and any(
        "artifacts" in p.parts for p in downloads
    ), "the flow must have downloaded every output type"
    assert (repo / "state" / "osmosis.lock").is_file()
    for path in files:
        captured.append((str(path.relative_to(repo)), path.read_bytes()))
    # What would be committed: the lockfile as git stores it.
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, capture_output=True)
    staged = subprocess.run(
        ["git", "diff", "--cached"], cwd=repo, capture_output=True, check=True
    ).stdout
    captured.append(("git diff --cached", staged))

    found = {label: leaks(data) for label, data in captured if leaks(data)}
    assert found == {}, found
    assert sum(len(data) for _label, data in captured) > 10_000


def test_no_leak_when_the_platform_goes_away(tmp_path: Path) -> None:
    platform = LocalPlatform(
        tmp_path / "platform", speed=5000, token=TOKEN, workspaces=(WORKSPACE,)
    )
    handle = serve(platform)
    url = handle.url
    _set_secrets_over_s2(url)
    repo = _repo(tmp_path)
    handle.close()  # connection refused from now on
    done = subprocess.run(
        command("osmosis-apply", repo, url, *LOG_FLAGS, "--auto-approve"),
        env=cli_env({"OSMOSIS_TOKEN": TOKEN}),
        cwd=repo,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert b"Error:" in done.stderr
    assert leaks(done.stdout + done.stderr) == []


def test_error_messages_keep_their_urls_workspace_and_addresses(
    tmp_path: Path, platform_url: tuple[str, LocalPlatform]
) -> None:
    """Redaction removes the token and secret values only: every fact an error is about
    (the Platform URL, the workspace, an address, a secret's name) stays readable, also
    where the placeholder token of a loopback Platform ("local") is in play."""
    url, _platform = platform_url
    _set_secrets_over_s2(url)
    repo = _repo(tmp_path)
    write_config = repo / "benchmarks" / "extra" / "needs-a-secret.toml"
    write_config.parent.mkdir()
    write_config.write_text(
        (repo / "benchmarks" / "terminal-bench" / "smoke.toml")
        .read_text()
        .replace('"OPENAI_API_KEY"', '"NEVER_STORED_KEY"')
    )

    def cli(*args: str, token: str | None = TOKEN, at: str = url, code: int = 1) -> str:
        argv = [str(BIN / args[0]), "--dir", str(repo), "--platform", at, *args[1:]]
        env = cli_env({"OSMOSIS_TOKEN": token} if token else {})
        done = subprocess.run(argv, env=env, cwd=repo, capture_output=True, timeout=300)
        text = (done.stdout + done.stderr).decode()
        assert done.returncode == code, text
        assert leaks(done.stdout + done.stderr) == []
        assert "[REDACTED]" not in text, text
        return text

    # A token the Platform refuses: the message says which Platform refused it.
    refused = cli("osmosis-plan", "--workspace", WORKSPACE, token=WRONG_TOKEN)
    assert "OSMOSIS_TOKEN" in refused, refused
    # A missing secret: the blocked item names its address and the secret record.
    blocked = cli("osmosis-plan", "--workspace", WORKSPACE, "--target", "extra/*", code=4)
    assert "extra/needs-a-secret" in blocked and "NEVER_STORED_KEY" in blocked, blocked
    # The case: a lockfile of the embedded Platform, read with a loopback URL and
    # no token (placeholder "local"), used to say "platform '[REDACTED]'".
    gone = "http://127.0.0.1:9"
    lockfile = repo / "state" / "osmosis.lock"
    lockfile.parent.mkdir()
    write_lockfile(lockfile, new_state("local", "local"))
    mismatch = cli("osmosis-plan", "--workspace", "local", token=None, at=gone)
    assert "platform 'local'" in mismatch and "--platform local" in mismatch, mismatch
    assert gone in mismatch, mismatch
    # The Platform is gone: the message keeps its URL and says what to check.
    unreachable = cli(
        "osmosis-plan", "--workspace", WORKSPACE, "--state", "state/other.lock", at=gone
    )
    assert f"Could not connect to the Platform at {gone}" in unreachable, unreachable


# --------------------------------------------------------------------------- osmosis-ci
# Issue 23: GITHUB_TOKEN is a secret like OSMOSIS_TOKEN, and every osmosis-ci subcommand is
# scanned, in both formats, on its success path (the loopback fake GitHub) and on the
# failure path where GitHub quotes the Authorization header back (a hostile server).

GITHUB_TOKEN = "ghs_RECOGNISABLE_github_7e3d9a1c5b"
NEEDLES.update({form: "GITHUB_TOKEN" for form in forms(GITHUB_TOKEN)})


def test_no_github_token_in_any_osmosis_ci_subcommand(tmp_path: Path) -> None:
    from tests.support.git import make_clones
    from tests.support.github_fake import FakeGitHub
    from tests.support.hostile_http import HostileServer
    from tests.support.plan_fixtures import desired, lock, recorded_run
    from tests.support.plan_fixtures import done as downloads_done

    from . import report

    _remote, repo, _other = make_clones(tmp_path)
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    summary = b"agent,score\na,0.5\n"
    run_dir = repo / ".osmosis" / "benchmarks" / "run"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.csv").write_bytes(summary)
    import hashlib

    entry = recorded_run(desired("tb/a"), "r1", status="finished", run_name="a-1").model_copy(
        update={
            "requested_by": sha,
            "downloads": downloads_done({"summary.csv": hashlib.sha256(summary).hexdigest()}),
        }
    )
    (repo / "state").mkdir()
    write_lockfile(repo / "state" / "osmosis.lock", lock(entry))
    (repo / "plan.md").write_text("<!-- osmosis-plan -->\nPlan: nothing to do.\n")
    (repo / "plan.json").write_text('{"drift": [], "actions": []}\n')
    (repo / "message.txt").write_text("osmosis-apply: results [skip ci]\n")
    fake = FakeGitHub(token=GITHUB_TOKEN).start()
    fake.add_pull(7, sha)
    hostile = HostileServer("echo_auth").start()
    captured: list[tuple[str, bytes]] = []
    subcommands = {
        "comment": ["comment", "--pr", "7", "--body-file", "plan.md"],
        "drift-issue": ["drift-issue", "--plan-json", "plan.json"],
        "commit-message": ["commit-message", "--plan", "plan.json", "--before-rev", "HEAD"],
        "commit-lockfile": [
            "commit-lockfile",
            "--message-file",
            "message.txt",
            "--branch",
            "main",
            "--results-dir",
            "results",
        ],
        "announce": ["announce"],
    }
    try:
        for name, args in subcommands.items():
            for fmt in ("text", "json"):
                for github in (fake.url, hostile.url):
                    env = cli_env(
                        {
                            "OSMOSIS_TOKEN": TOKEN,
                            "GITHUB_TOKEN": GITHUB_TOKEN,
                            "GITHUB_API_URL": github,
                            "GITHUB_REPOSITORY": fake.repo,
                            "GITHUB_ACTIONS": "true",
                        }
                    )
                    done = subprocess.run(
                        [str(BIN / "osmosis-ci"), "--format", fmt, *args],
                        cwd=repo,
                        env=env,
                        capture_output=True,
                        timeout=120,
                    )
                    where = "fake" if github == fake.url else "quoting"
                    captured.append((f"{name} {fmt} {where}", done.stdout + done.stderr))
        assert hostile.requests >= 3, "the quoting GitHub must have been asked"
        assert fake.requests, "the fake GitHub must have been asked"
    finally:
        fake.close()
        hostile.close()
    found = {label: leaks(data) for label, data in captured if leaks(data)}
    report.record(
        "secret hygiene", "osmosis-ci runs scanned (5 subcommands x 2 formats x 2)", len(captured)
    )
    report.record(
        "secret hygiene", "osmosis-ci runs leaking a token", len(found), must_be_zero=True
    )
    assert found == {}, found
    # The quoting GitHub's answer did reach the output: redacted, not dropped.
    assert any(b"[REDACTED]" in data for label, data in captured if "quoting" in label)
