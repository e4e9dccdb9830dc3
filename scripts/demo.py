"""`make demo`: plan and apply the example configs against the embedded local Platform.

Works in a scratch git repository under .osmosis/demo (so this checkout's own state is
never touched), seeds the secret records the examples reference, runs a plan, an apply
that waits for the runs on a fast clock and downloads their outputs, prints pass@1 per
agent, and finally re-plans to show that nothing is left to do. Running it twice: the
second apply changes nothing on the Platform.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / ".osmosis" / "demo"
BIN = Path(sys.executable).parent
SECRETS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "CURSOR_API_KEY",
    "MSWEA_API_KEY",
    "MY_ENDPOINT_KEY",
    "HF_TOKEN",
)


def run(*args: str, check: bool = True, env: dict[str, str]) -> int:
    print(f"\n$ {' '.join(args)}", flush=True)
    code = subprocess.run(args, cwd=DEMO, env=env).returncode
    if check and code not in (0, 2):
        sys.exit(f"demo: `{' '.join(args)}` exited {code}")
    return code


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=DEMO, check=True, capture_output=True)


def prepare() -> None:
    if (DEMO / ".git").is_dir():
        return
    DEMO.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "benchmarks", DEMO / "benchmarks", dirs_exist_ok=True)
    (DEMO / ".gitignore").write_text(".osmosis/\nstate/.osmosis.lock.held\n", encoding="utf-8")
    git("init", "-q", "-b", "main")
    git("config", "user.email", "demo@example.invalid")
    git("config", "user.name", "Osmosis Demo")
    git("add", ".")
    git("commit", "-q", "-m", "Add benchmark run configs")


def seed_secrets() -> None:
    """Create the secret records through the same route the osmosis CLI uses (S2)."""
    sys.path.insert(0, str(ROOT))
    from reconciler.local_platform import LocalPlatform, LocalTransport
    from reconciler.platform import PlatformClient

    platform = LocalPlatform(DEMO / ".osmosis" / "local-platform", auto_workspaces=True)
    with PlatformClient(
        "http://localhost", token="local", workspace="local", transport=LocalTransport(platform)
    ) as client:
        existing = {s.name for s in client.list_secrets()}
        for name in SECRETS:
            if name not in existing:
                client.set_secret(name, f"demo-value-for-{name.lower()}", scope="workspace")


def main() -> None:
    prepare()
    env = {
        k: v for k, v in os.environ.items() if k not in ("OSMOSIS_TOKEN", "OSMOSIS_PLATFORM_URL")
    }
    env["OSMOSIS_LOCAL_PLATFORM_SPEED"] = env.get("OSMOSIS_LOCAL_PLATFORM_SPEED", "2000")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    seed_secrets()
    run("osmosis-plan", "--validate-only", env=env)
    run("osmosis-plan", env=env)
    run(
        "osmosis-apply",
        "--auto-approve",
        "--wait",
        "--wait-timeout",
        "300",
        "--download-types",
        "summary,results",
        env=env,
    )
    # A plan with nothing to do says so, alone (`--results` would add the table apply
    # --wait just printed).
    code = run("osmosis-plan", "--detailed-exitcode", env=env)
    print("  (osmosis-results shows every recorded run; osmosis-results compare compares two)")
    print(
        "\nA second apply now has nothing to do on the Platform (exit code of the re-plan: "
        f"{code}; 0 = no changes)."
    )
    print(
        f"The demo repository is {DEMO.relative_to(ROOT)}; run `make demo` again to see it "
        "stay unchanged, or `rm -rf .osmosis/demo` to start over."
    )


if __name__ == "__main__":
    main()
