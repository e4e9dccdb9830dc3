"""What is recorded can be named (issue 36, finding 6).

On main (35dc349) a config whose file name held control characters was planned, applied
and recorded, and then ``osmosis-state show``, ``forget`` and ``mv`` refused its recorded
address as "not an address". Now the plan refuses such a config, naming the file, before
anything is paid; an address recorded so before can still be given to every
``osmosis-state`` verb, exactly as recorded or as the output prints it (escaped).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reconciler.model import Intent
from reconciler.state.lockfile import parse, serialize
from tests.support.osmosis import BIN_DIR, cli_env, init_repo, smoke_config
from tests.support.plan_fixtures import NOW, desired, lock, recorded_run

ESCAPED = "tb/e\x1b]0;pwned\x07\x1b[2Jvil"
"""An address with an OSC title sequence and a screen clear in it."""
SHOWN = "tb/e\\x1b]0;pwned\\x07\\x1b[2Jvil"
NEWLINE = "tb/two\nPlan: 0 to submit"
NEWLINE_SHOWN = "tb/two\\nPlan: 0 to submit"


def run(repo: Path, tool: str, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [str(BIN_DIR / tool), *args],
        cwd=repo,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    text = done.stdout + done.stderr
    assert "internal error" not in text and "Traceback" not in text, text
    return done.returncode, text


def test_the_plan_refuses_a_config_whose_address_holds_control_characters(
    tmp_path: Path,
) -> None:
    repo = init_repo(tmp_path / "repo", configs={"tb/ok": smoke_config()})
    (repo / "benchmarks" / f"{ESCAPED}.toml").write_text(smoke_config(), encoding="utf-8")
    (repo / "benchmarks" / "tb" / "back\\slash.toml").write_text(smoke_config(), encoding="utf-8")
    for tool, args in (
        ("osmosis-plan", ("--validate-only",)),
        ("osmosis-apply", ("--auto-approve", "--platform", "local")),
    ):
        code, text = run(repo, tool, *args)
        assert code == 1, text
        assert "\x1b" not in text and "\x07" not in text, text
        assert (
            f"benchmarks/{SHOWN}.toml: the path holds a control character (\\x1b), so its "
            f"address {SHOWN} cannot be typed or printed as it is"
        ) in text, text
        assert "benchmarks/tb/back\\\\slash.toml: the path holds a backslash" in text, text
    # Nothing was paid and nothing recorded: the apply stopped at the configs.
    assert not (repo / "state" / "osmosis.lock").exists()


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A repository whose lockfile records addresses with control characters (from before
    the plan refused them), one of them with a submit whose outcome is unknown."""
    repo = init_repo(tmp_path / "repo", configs={"tb/ok": smoke_config()})
    intent = Intent(op="submit", started_at=NOW, body_digest="sha256:" + "0" * 64)
    pending = recorded_run(desired("tb/ok"), None, address=NEWLINE, status=None, intent=intent)
    entries = [
        recorded_run(desired("tb/ok"), "bmr_1", address=ESCAPED, status="finished"),
        pending,
        recorded_run(desired("tb/ok"), "bmr_3", address="tb/ok", status="finished"),
    ]
    (repo / "state").mkdir()
    (repo / "state" / "osmosis.lock").write_text(serialize(lock(*entries)), encoding="utf-8")
    return repo


def _recorded(repo: Path) -> set[str]:
    state = parse((repo / "state" / "osmosis.lock").read_text(encoding="utf-8"), "lock")
    return set(state.runs)


@pytest.mark.parametrize("form", ["exact", "as printed"])
def test_every_state_verb_takes_a_recorded_address_exact_or_as_printed(
    recorded: Path, form: str
) -> None:
    name = ESCAPED if form == "exact" else SHOWN
    pending = NEWLINE if form == "exact" else NEWLINE_SHOWN

    code, text = run(recorded, "osmosis-state", "list")
    assert code == 0 and "\x1b" not in text and "\x07" not in text, text
    assert SHOWN in text and NEWLINE_SHOWN in text, text
    assert "\nPlan: 0 to submit" not in text, text

    code, text = run(recorded, "osmosis-state", "list", name)
    assert code == 0 and SHOWN in text and "tb/ok" not in text.split("\n")[1], text

    code, text = run(recorded, "osmosis-state", "show", name)
    assert code == 0 and text.startswith(SHOWN + "\n") and "\x1b" not in text, text

    code, text = run(recorded, "osmosis-state", "resolve", pending, "--not-submitted")
    assert code == 0 and f"Resolved {NEWLINE_SHOWN}: not submitted" in text, text
    assert NEWLINE not in _recorded(recorded)

    code, text = run(recorded, "osmosis-state", "mv", name, "tb/renamed")
    assert code == 0 and f"Moved {SHOWN} -> tb/renamed" in text, text
    assert _recorded(recorded) == {"tb/renamed", "tb/ok"}

    code, text = run(recorded, "osmosis-state", "mv", "tb/renamed", name)
    assert code == 1 and "is not an address" in text, text  # no new address of that kind

    code, text = run(recorded, "osmosis-state", "forget", "tb/renamed")
    assert code == 0 and _recorded(recorded) == {"tb/ok"}, text


def test_a_recorded_control_address_can_be_forgotten(recorded: Path) -> None:
    code, text = run(recorded, "osmosis-state", "forget", SHOWN)
    assert code == 0 and f"Forgot {SHOWN}" in text and "\x1b" not in text, text
    assert ESCAPED not in _recorded(recorded)
    code, text = run(recorded, "osmosis-state", "show", SHOWN)
    assert code == 1 and "no run is recorded" in text, text
