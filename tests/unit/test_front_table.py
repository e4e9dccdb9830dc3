"""The front door's static table (``cli/front.py``, issue 33): every verb names a module
with a ``main``, and running a verb imports that module and no other verb's."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

from reconciler.cli.front import VERBS

PROBE = """
import json, sys
from reconciler.cli import front
{prelude}
front.main({argv!r})
loaded = sorted(v for v, verb in front.VERBS.items() if verb.module in sys.modules)
print("LOADED " + json.dumps(loaded), file=sys.stderr)
"""


def verbs_loaded(argv: list[str], prelude: str = "") -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, prelude=prelude)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return list(json.loads(line.removeprefix("LOADED ")))


def test_every_verb_names_a_module_with_a_main() -> None:
    for name, verb in VERBS.items():
        module = importlib.import_module(verb.module)
        assert callable(module.main), name
        parser = getattr(module, "parser", None)
        if parser is not None:
            assert isinstance(parser(), argparse.ArgumentParser), name


def test_a_verb_imports_its_own_module_only() -> None:
    assert verbs_loaded(["show", "--help"]) == ["show"]
    assert verbs_loaded(["--help"]) == []


def test_the_probe_sees_another_verb_imported() -> None:
    # The probe must be able to fail, or the test above proves nothing.
    assert verbs_loaded(["show", "--help"], prelude="import reconciler.cli.apply") == [
        "apply",
        "show",
    ]
