"""What shell completion offers for an address or a run: ``osmosis-reconciler __complete``.

The completion scripts (``osmosis-reconciler completion bash|zsh|fish``) call it for the
arguments that name an address (``--target``, ``--replace``, ``state show ADDR``, ...) or
an address's run (``osmosis-results tb/smoke@eager-hare``, ``osmosis-logs``): it prints one
candidate a line, from the repository the shell is in: every config's address under the
benchmarks directory and every address and run the lockfile records. It reads two
directories and one TOML file, never the Platform, and prints nothing (exit 0) where there
is nothing to offer: completion must never fail in a person's shell.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

from reconciler.exit_codes import Ending, exit_code

KINDS = ("addresses", "refs")
"""``addresses``: addresses only; ``refs``: addresses and ``ADDRESS@RUN`` of recorded runs."""


def _settings(root: Path) -> tuple[str, str]:
    from reconciler.config.project import load_project_settings

    settings = load_project_settings(root)
    return settings.get("benchmarks", "benchmarks"), settings.get("state", "state/osmosis.lock")


def _config_addresses(directory: Path) -> Iterator[str]:
    if not directory.is_dir():
        return
    for path in sorted(directory.rglob("*.toml")):
        relative = path.relative_to(directory)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.name.endswith(".matrix.toml"):
            continue  # a generator's cells are named by the lockfile once planned
        yield relative.with_suffix("").as_posix()


def _recorded(state: Path) -> tuple[list[str], list[str]]:
    """(addresses, ``address@run`` refs) the lockfile records, current runs first."""
    try:
        data = tomllib.loads(state.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return [], []
    addresses: list[str] = []
    refs: list[str] = []
    runs = data.get("runs")
    for address, entry in runs.items() if isinstance(runs, dict) else ():
        addresses.append(address)
        name = entry.get("run_name") if isinstance(entry, dict) else None
        if isinstance(name, str):
            refs.append(f"{address}@{name}")
    history = data.get("history")
    for entry in history if isinstance(history, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("address"), str):
            name = entry.get("run_name")
            if isinstance(name, str):
                refs.append(f"{entry['address']}@{name}")
    return addresses, refs


def candidates(kind: str, cwd: Path) -> list[str]:
    """Every completion of ``kind`` for a shell in ``cwd``, each once, in a stable order."""
    from reconciler.config.project import find_root

    try:
        root = find_root(cwd, None)
        benchmarks, state = _settings(root)
    except Exception:  # noqa: BLE001 - completion never fails: outside a repository, nothing
        return []
    recorded, refs = _recorded(root / state)
    found = [*_config_addresses(root / benchmarks), *recorded]
    if kind == "refs":
        found += refs
    return list(dict.fromkeys(found))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    kind = args[0] if args and args[0] in KINDS else "addresses"
    for line in candidates(kind, Path.cwd()):
        print(line)
    return exit_code(Ending.DONE)
