"""Every config ``osmosis-reconciler expand --write`` writes is one the real ``osmosis``
CLI submits (against the loopback local Platform). Opt-in like the other real-CLI test:
``OSMOSIS_REAL_CLI`` names the executable (``make test`` sets it when it could install it)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from reconciler.config import load_configs
from tests.support.osmosis import BIN_DIR, init_repo

from .test_generators import GENERATOR, generator, write_generator
from .test_local_platform_real_cli import osmosis, pytestmark  # noqa: F401 (the opt-in)


def test_every_expanded_config_is_accepted_by_the_real_cli(
    make_local_server: Any, tmp_path: Path
) -> None:
    server = make_local_server()
    repo = init_repo(tmp_path / "repo")
    write_generator(repo, generator(["tb-smoke"], ["gpt-5-2", "gpt-5"], exclude=""))
    out = tmp_path / "expanded"
    done = subprocess.run(
        [str(BIN_DIR / "osmosis-reconciler"), "expand", GENERATOR, "--write", str(out)],
        cwd=repo, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    files = sorted(out.rglob("*.toml"))
    assert len(files) == 2
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        made = osmosis(
            server, tmp_path, "secret", "set", name, "--scope", "workspace", "--env", "MY_KEY"
        )
        assert made.returncode == 0, made.stderr
    for path in files:
        submitted = osmosis(server, path.parent, "benchmark", "submit", path.name, "--yes")
        assert submitted.returncode == 0, (path, submitted.stderr)
    # And they are what the plan would submit: the same digests as the generator's cells.
    (tmp_path / "copy" / "benchmarks").mkdir(parents=True)
    for path in files:
        target = tmp_path / "copy" / "benchmarks" / path.relative_to(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    expected = {r.address: r.spec_digest for r in load_configs(repo, "benchmarks").runs}
    written = {r.address: r.spec_digest for r in load_configs(tmp_path / "copy", "benchmarks").runs}
    assert written == expected
