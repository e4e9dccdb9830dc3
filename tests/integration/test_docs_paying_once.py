"""docs/paying-once.md runs as written: its ``sh`` blocks, in one bash process, against a
loopback local Platform that dropped the answer to a submit and leaves the run out of its
list; the plan block's output matches the page's ``text`` block (``...`` stands for a time)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from reconciler.local_platform import Faults
from reconciler.local_platform.faults import FaultInjector
from tests.support.clock import FakeClock
from tests.support.docs import section_blocks
from tests.support.osmosis import (
    Osmosis,
    cli_env,
    init_repo,
    read_lock,
    smoke_config,
    start_platform,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "paying-once.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def page_blocks() -> list[tuple[str, str]]:
    """The blocks of the unknown-outcome section (the other sections have their own tests:
    ``test_docs_paying_once_three``)."""
    return section_blocks(PAGE, "## An unknown outcome (`?`)")


def matches(expected: str, actual: str) -> bool:
    """Every line of ``expected`` appears in ``actual`` (``...`` matching anything)."""
    for line in expected.strip("\n").splitlines():
        pattern = ".*".join(re.escape(part) for part in line.split("..."))
        if not re.search(f"^{pattern}$", actual, re.M):
            return False
    return True


def test_the_paying_once_page_runs_as_written(tmp_path: Path, clock: FakeClock) -> None:
    faults = Faults(drop_after_submit_rate=1.0, list_omit_rate=1.0)
    platform = start_platform(tmp_path / "p", clock=clock, faults=faults)
    try:
        osm = Osmosis(init_repo(tmp_path / "repo", configs={"tb/smoke": smoke_config()}), platform)
        assert osm.apply("--auto-approve").code == 1  # the answer was dropped
        calm = Faults(list_omit_rate=1.0)  # the list still leaves the run out
        platform.platform.faults = calm
        platform.platform.injector = FaultInjector(calm)
        ((run_id,),) = platform.platform.store.read().execute("SELECT id FROM runs").fetchall()

        blocks = page_blocks()
        commands = [body for lang, body in blocks if lang == "sh"]
        expected = [
            body
            for (lang, body), (before, _) in zip(blocks[1:], blocks, strict=False)
            if lang == "text" and before == "sh"
        ]
        assert len(commands) == 2 and len(expected) == 1
        script = ["set -e", "exec 2>&1"]
        for index, body in enumerate(commands):
            script += [f"echo '@@block {index}@@'", body.rstrip("\n")]
        script.append("echo '@@end@@'")
        env = cli_env(
            {
                "OSMOSIS_PLATFORM_URL": platform.url,
                "OSMOSIS_WORKSPACE": platform.workspace,
                "RUN": str(run_id),
            }
        )
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=osm.repo,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )
        assert done.returncode == 0 and "@@end@@" in done.stdout, done.stdout
        outputs = re.split(r"^@@block \d+@@\n", done.stdout.split("@@end@@")[0], flags=re.M)[1:]
        assert matches(expected[0], outputs[0]), outputs[0]
        assert read_lock(osm.repo)["runs"]["tb/smoke"]["run_id"] == run_id
        assert platform.submits() == 1
    finally:
        platform.close()
