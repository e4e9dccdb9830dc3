"""docs/ownership.md: its command blocks run as shown (one bash, in a temp directory, with
the embedded Platform and a bare origin), and the output block is what the try-out prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "ownership.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def test_the_try_out_shown_in_the_docs_runs_and_prints_what_it_shows(tmp_path: Path) -> None:
    blocks = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    commands = [body for lang, body in blocks if lang == "sh"]
    (shown,) = [body for lang, body in blocks if lang == "text"]
    assert len(commands) == 2
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OSMOSIS_", "GITHUB_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    script = "set -e\nexec 2>&1\n" + commands[0] + "\necho @@try-out@@\n" + commands[1]
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = done.stdout.split("@@try-out@@\n", 1)[1]
    assert printed == shown, printed
    team = tmp_path / "team"
    assert "platform.osmosis.ai" in (team / "state" / "osmosis.lock").read_text()
    assert (team / ".osmosis" / "try-out" / "osmosis.lock").exists()
