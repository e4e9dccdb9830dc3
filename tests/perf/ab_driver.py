"""The measured driver of ``tests.perf.ab``: one apply of submits or of downloads, against
whichever ``reconciler`` is first on ``PYTHONPATH`` (any tree from a351ca0 on).

Run as a file, not a module: ``PYTHONPATH=TREE python tests/perf/ab_driver.py MODE REPO URL
WORKSPACE PARALLELISM`` (MODE ``apply`` or ``download``); prints one JSON line. Like
``tests.perf.driver`` it plans (untimed), keeps the plan's submits or downloads, and times
``Session.apply`` (trees with ``engine/apply.py``'s ``apply`` operation: from the plan's view,
``on_plan``, to its end); unlike it, it finds the session, the CLI's parser and the printer
where each tree has them (the package moves of a351ca0..main renamed them), so one harness
measures every tree.

The measured region is bracketed by ``os.getppid()`` and ``os.getpgrp()``: under
``valgrind --tool=callgrind --zero-before=getppid --dump-before=getpgrp`` the first dump
counts that region only, every thread included. Knobs (environment), each applied before the
clock:

* ``AB_PREIMPORT=1``: import the apply engine and the downloads module (trees from 06fb1c4 on
  import them inside ``Session.apply``);
* ``AB_PREHTTP=1``: build the download client, which loads the CA bundle (from 06fb1c4 on it
  is built inside the apply, on the first download);
* ``AB_POOL=FILES:PER_SLOT``: the apply engine's ``MAX_DOWNLOAD_WORKERS`` and
  ``DOWNLOAD_RUNS_PER_SLOT`` (``8:1`` shapes main's download pool as a351ca0's).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import io
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

TYPES = "summary,results,artifacts"


def _first(*names: str) -> ModuleType:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"none of {names}")


def _operation(mode: str, repo: Path, url: str, workspace: str, parallelism: str) -> int:
    """A tree whose apply is one operation (``engine.apply.apply``, no ``Session``)."""
    from reconciler.cli import apply as cli_apply
    from reconciler.cli.common import invocation
    from reconciler.cli.output import ApplyReport, Output
    from reconciler.engine import apply as operation
    from reconciler.engine.load import open_command
    from reconciler.log import configure_logging

    configure_logging(fmt="json", verbosity=0, command="osmosis-apply")
    extra = ["--parallelism", parallelism]
    if mode == "download":
        extra += ["--download-types", TYPES]
    args = cli_apply.parser().parse_args(
        ["--dir", str(repo), "--platform", url, "--workspace", workspace, "--no-color",
         "--auto-approve", "--allow-over-budget", *extra]
    )  # fmt: skip
    output = Output("osmosis-apply", out=io.StringIO(), err=io.StringIO())
    if os.environ.get("AB_POOL"):
        files, per_slot = (int(v) for v in os.environ["AB_POOL"].split(":"))
        executor = importlib.import_module("reconciler.engine.executor")
        vars(executor).update(MAX_DOWNLOAD_WORKERS=files, DOWNLOAD_RUNS_PER_SLOT=per_slot)
    start: dict[str, Any] = {}
    with open_command(invocation(args, repo), output) as ctx:

        def started(_plan: object, _saved: bool) -> None:
            if os.environ.get("AB_PREHTTP"):
                ctx.http  # noqa: B018 (builds the download client)
            start["modules"] = set(sys.modules)
            start["requests"] = ctx.client.request_count
            os.getppid()  # callgrind: zero the counters here
            start["clock"] = (time.perf_counter(), time.process_time(), os.times())

        applied = operation.apply(
            ctx,
            output,
            operation.ApplyRequest(
                command="ab", only=frozenset({mode if mode == "download" else "submit"})
            ),
            progress=ApplyReport(output),
            on_plan=started,
            approve=None,
        )
        t1, c1, times1 = time.perf_counter(), time.process_time(), os.times()
        os.getpgrp()  # callgrind: dump the counters here
        requests = ctx.client.request_count - int(start["requests"])
    t0, c0, times0 = start["clock"]
    result = applied.result
    assert result is not None
    out = {
        "seconds": t1 - t0,
        "cpu_seconds": c1 - c0,
        "user_seconds": times1.user - times0.user,
        "system_seconds": times1.system - times0.system,
        "items": len(applied.plan.items),
        "succeeded": len(result.succeeded),
        "failed": len(result.failures),
        "errors": [o.message for o in result.failures[:3]],
        "requests": requests,
        "imported": sorted(
            m for m in set(sys.modules) - start["modules"] if m.startswith("reconciler")
        ),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


def main(argv: list[str]) -> int:
    mode, repo_arg, url, workspace, parallelism = argv
    repo = Path(repo_arg)
    if importlib.util.find_spec("reconciler.engine.executor") is not None:
        return _operation(mode, repo, url, workspace, parallelism)
    cli = _first("reconciler.cli.main", "reconciler.cli")
    printer = _first("reconciler.cli.output", "reconciler.output")
    Session = _first("reconciler.engine.session", "reconciler.session").Session
    from reconciler.log import configure_logging
    from reconciler.model import Action

    configure_logging(fmt="json", verbosity=0, command="osmosis-apply")
    extra = ["--parallelism", parallelism]
    if mode == "download":
        extra += ["--download-types", TYPES]
    args = cli._apply_parser().parse_args(
        ["--dir", str(repo), "--platform", url, "--workspace", workspace, "--no-color",
         "--auto-approve", "--allow-over-budget", *extra]
    )  # fmt: skip
    output = printer.Output("osmosis-apply", out=io.StringIO(), err=io.StringIO())
    if hasattr(cli, "_invocation"):
        opened = Session.open(cli._invocation(args, repo), output)
    else:
        opened = Session.open(args, repo, cli._overrides(args), output)
    if os.environ.get("AB_POOL"):
        files, per_slot = (int(v) for v in os.environ["AB_POOL"].split(":"))
        engine = importlib.import_module("reconciler.engine.apply")
        # Names of the older trees this knob is for (today's engine has neither).
        vars(engine).update(MAX_DOWNLOAD_WORKERS=files, DOWNLOAD_RUNS_PER_SLOT=per_slot)
    wanted = Action.SUBMIT if mode == "apply" else Action.DOWNLOAD
    with opened as session:
        made = session.make_plan()
        plan, snapshots = made if isinstance(made, tuple) else (made, None)
        items = tuple(i for i in plan.items if i.action is wanted)
        plan = plan.model_copy(update={"items": items})
        if os.environ.get("AB_PREIMPORT"):
            for name in ("reconciler.engine.apply", "reconciler.outputs.downloads"):
                try:
                    importlib.import_module(name)
                except ImportError:
                    pass  # an older tree: imported with the session
        if os.environ.get("AB_PREHTTP"):
            session.ctx.http  # noqa: B018 (builds the download client)
        report = printer.ApplyReport(output)
        modules = set(sys.modules)
        before = session.ctx.client.request_count
        os.getppid()  # callgrind: zero the counters here
        t0, c0, times0 = time.perf_counter(), time.process_time(), os.times()
        if "snapshots" in inspect.signature(session.apply).parameters:
            result = session.apply(plan, snapshots, report=report, wait=False, wait_timeout=0)
        else:
            result = session.apply(plan, report=report, wait=False, wait_timeout=0)
        seconds, cpu, times1 = time.perf_counter() - t0, time.process_time() - c0, os.times()
        os.getpgrp()  # callgrind: dump the counters here
        requests = session.ctx.client.request_count - before
    out = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "user_seconds": times1.user - times0.user,
        "system_seconds": times1.system - times0.system,
        "items": len(items),
        "succeeded": len(result.succeeded),
        "failed": len(result.failures),
        "errors": [o.message for o in result.failures[:3]],
        "requests": requests,
        "imported": sorted(m for m in set(sys.modules) - modules if m.startswith("reconciler")),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
