"""``osmosis-platform-emulator``: serve the local Platform, or look at and seed its data.

Every command but ``serve`` and ``runs seed`` works on a data directory in-process
(``--data``) or on a running server (``--platform URL``), through ``LocalPlatform.handle``
either way. ``--json`` prints the data a command shows as JSON. (A console command: it
prints and exits, as ``reconciler/cli`` does for the reconciler's own commands.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from reconciler import __version__
from reconciler.config.project import find_root
from reconciler.errors import UsageError
from reconciler.exit_codes import EMULATOR_USAGE, ERROR, OK
from reconciler.local_platform.app import LocalPlatform
from reconciler.local_platform.benchmarks import SYNC_STATUSES
from reconciler.local_platform.core import DEFAULT_WORKSPACE
from reconciler.local_platform.faults import Faults
from reconciler.local_platform.history import DEFAULT_STATUS_MIX, HISTORY_TEAM, parse_status_mix
from reconciler.local_platform.server import start_server
from reconciler.local_platform.users import parse_creator, users_from_specs

DEFAULT_DATA_DIR = ".osmosis/local-platform"
USER_DATA_DIR = "osmosis-reconciler/local-platform"
"""Under ``$XDG_DATA_HOME``: the data of commands run outside any repository."""
SPEED_ENV = "OSMOSIS_LOCAL_PLATFORM_SPEED"
"""Sets the stored speed when ``--speed`` is not given (what ``make demo`` uses: 2000)."""
SEED_ENV = "OSMOSIS_LOCAL_PLATFORM_SEED"
"""Fixes the seed (names, ids, outcomes) when ``--seed`` is not given."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="osmosis-platform-emulator",
        description="The local Osmosis Platform: serve it over loopback HTTP, or seed its data.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the Platform API on 127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="port (0 = a free port, printed)")
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    _data_arg(serve, "data directory (SQLite)")
    serve.add_argument(
        "--speed", type=float,
        help=f"simulated-time factor, stored in the data dir (default: ${SPEED_ENV}, else "
        "the stored one, else 1)",
    )  # fmt: skip
    serve.add_argument(
        "--seed", type=int,
        help=f"seed for names and outcomes (default: ${SEED_ENV}, else the data dir's own)",
    )  # fmt: skip
    serve.add_argument("--token", help="the only accepted bearer token (default: any)")
    serve.add_argument(
        "--user", action="append", default=[], metavar="TOKEN=NAME[:EMAIL]",
        help="a user and the token that stands for them (repeatable; other tokens are refused)",
    )  # fmt: skip
    serve.add_argument(
        "--workspace", action="append", default=[], help="workspace to create (repeatable)"
    )
    serve.add_argument(
        "--strict-workspaces", action="store_true",
        help="only the --workspace names exist, each with an empty catalog (benchmark add)",
    )  # fmt: skip
    serve.add_argument("--latency-ms", type=int, default=0)
    serve.add_argument("--latency-spike-ms", type=int, default=0)
    serve.add_argument("--latency-spike-rate", type=float, default=0.0)
    serve.add_argument("--error-rate", type=float, default=0.0, help="share of 5xx answers")
    serve.add_argument("--rate-limit-rate", type=float, default=0.0, help="share of 429 answers")
    serve.add_argument("--retry-after", type=int, default=1, help="Retry-After seconds on 429")
    serve.add_argument("--drop-rate", type=float, default=0.0, help="share of dropped connections")
    serve.add_argument(
        "--drop-after-submit-rate", type=float, default=0.0,
        help="share of submits committed and then answered by a dropped connection",
    )  # fmt: skip
    serve.add_argument("--after-submit-delay-ms", type=int, default=0)
    serve.add_argument("--presign-ttl", type=int, default=900, help="presigned URL lifetime (s)")
    serve.add_argument("--benchmarks-disabled", action="store_true", help="the feature gate")
    serve.add_argument(
        "--rate-limit-after-submit-rate", type=float, default=0.0,
        help="share of submits committed and then answered 429",
    )  # fmt: skip
    serve.add_argument(
        "--wrong-submit-reply-rate", type=float, default=0.0,
        help="share of submits committed and then answered with a body of the wrong shape",
    )  # fmt: skip
    serve.add_argument(
        "--list-omit-rate", type=float, default=0.0,
        help="share of runs the run list leaves out (a direct read still returns them)",
    )  # fmt: skip
    serve.add_argument(
        "--trickle-ms", type=int, default=0, help="write every API answer a byte at a time"
    )
    serve.add_argument("--silent", action="store_true", help="never answer API requests")
    serve.add_argument(
        "--stall-downloads-after", type=int, default=-1, metavar="N",
        help="presigned GETs after the first N stall halfway through the body",
    )  # fmt: skip
    serve.add_argument("--fault-seed", type=int, default=0)
    serve.add_argument("--access-log", help="file for access-log lines (default: stderr)")

    secret = sub.add_parser("secret", help="manage secrets")
    secret_sub = secret.add_subparsers(dest="secret_command", required=True)
    sset = secret_sub.add_parser(
        "set", help="store a secret through the S2 route (value from stdin or --from-env)"
    )
    sset.add_argument("name")
    # Personal is the default scope, as on the Platform (platform-api.md S2); runs submitted
    # from CI need --scope workspace.
    sset.add_argument("--scope", choices=("user", "workspace"), default="user")
    sset.add_argument(
        "--from-env", metavar="VAR", help="read the value from this env var (default: stdin)"
    )
    sset.add_argument("--json", action="store_true", help="print the stored record as JSON")
    _target_args(sset)
    slist = secret_sub.add_parser("list", help="list secret names and scopes (never values)")
    slist.add_argument("--scope", choices=("all", "user", "workspace"), default="all")
    slist.add_argument("--json", action="store_true", help="print the S1 items as JSON")
    _target_args(slist)

    bench = sub.add_parser("benchmark", help="see and manage the catalog")
    bench_sub = bench.add_subparsers(dest="benchmark_command", required=True)
    blist = bench_sub.add_parser("list", help="list the catalog (E1)")
    blist.add_argument("--json", action="store_true", help="print the E1 items as JSON")
    _target_args(blist)
    binfo = bench_sub.add_parser("info", help="show one benchmark (E2)")
    binfo.add_argument("ref", help="key, name or id")
    binfo.add_argument("--tasks", action="store_true", help="list every task")
    binfo.add_argument("--json", action="store_true", help="print the E2 body as JSON")
    _target_args(binfo)
    bsync = bench_sub.add_parser("sync", help="set a benchmark's sync status")
    bsync.add_argument("ref", help="key, name or id")
    bsync.add_argument("--status", choices=SYNC_STATUSES, required=True)
    bsync.add_argument("--synced", type=int)
    bsync.add_argument("--error")
    bsync.add_argument(
        "--workspace",
        help="move this workspace's entry only (default: the catalog, which every workspace "
        "entry without its own sync state follows)",
    )
    bsync.add_argument("--json", action="store_true", help="print the result as JSON")
    _target_args(bsync, workspace=False)
    badd = bench_sub.add_parser("add", help="add a catalog benchmark to a workspace")
    badd.add_argument("ref", help="key, name or id")
    badd.add_argument("--json", action="store_true", help="print the result as JSON")
    _target_args(badd)

    runs = sub.add_parser("runs", help="work with runs")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)
    seed = runs_sub.add_parser(
        "seed", help="make a history of runs over the past days (on --data, in seconds)"
    )
    seed.add_argument(
        "--workspace", default=DEFAULT_WORKSPACE, help=f"workspace (default: {DEFAULT_WORKSPACE})"
    )
    seed.add_argument("--count", type=int, required=True, help="how many runs")
    seed.add_argument("--days", type=float, default=30.0, help="spread over the past D days")
    seed.add_argument(
        "--creator", action="append", default=[], metavar="NAME[:EMAIL]",
        help="who made them (repeatable; default: a team of four, one a CI account)",
    )  # fmt: skip
    seed.add_argument("--like", metavar="CONFIG.toml", help="runs as this config would submit")
    seed.add_argument("--benchmark", help="benchmark key when no --like (default: Terminal-Bench)")
    seed.add_argument(
        "--status-mix", metavar="STATUS=W,...",
        help="status weights, e.g. finished=0.8,failed=0.15,stopped=0.05 (default: "
        + ",".join(f"{k}={v}" for k, v in DEFAULT_STATUS_MIX.items()) + ")",
    )  # fmt: skip
    seed.add_argument("--seed", type=int, help="seed (default: the data dir's own)")
    seed.add_argument("--json", action="store_true", help="print the result as JSON")
    _data_arg(seed, "data directory")
    return parser


def _data_arg(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--data-dir", "--data", dest="data", metavar="DIR",
        help=f"{what} (default: {DEFAULT_DATA_DIR} at the root of the repository this runs "
        f"in; outside a repository, $XDG_DATA_HOME/{USER_DATA_DIR}, printed)",
    )  # fmt: skip


def data_dir(given: str | None, cwd: Path | None = None) -> tuple[Path, bool]:
    """The data directory and whether it is the user's (outside any repository).

    ``--data-dir`` when given; else ``.osmosis/local-platform`` at the root of the
    repository the command runs in (found as every other command finds it), so a command
    run in a subdirectory sees the data the plan uses; else, outside any repository, the
    user's data directory (``$XDG_DATA_HOME``, by default ``~/.local/share``), so running
    it in ``$HOME`` or ``/tmp`` never leaves a ``.osmosis/`` there.
    """
    if given:
        return Path(given), False
    here = cwd or Path.cwd()
    try:
        return find_root(here) / DEFAULT_DATA_DIR, False
    except UsageError:
        pass
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    # The XDG rule: a relative XDG_DATA_HOME is invalid and is ignored.
    home = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return home / USER_DATA_DIR, True


def _open_data(args: argparse.Namespace) -> Path:
    """``data_dir`` for a command, saying on stderr where the data lives when it is the
    user's directory (nothing in the current directory tells)."""
    path, user = data_dir(args.data)
    if user:
        print(f"local Platform data: {path} (not inside a repository)", file=sys.stderr)
    return path


def _target_args(parser: argparse.ArgumentParser, *, workspace: bool = True) -> None:
    _data_arg(parser, "data directory, when no --platform is given")
    parser.add_argument(
        "--platform",
        metavar="URL",
        help="a running emulator (serve) to talk to over HTTP instead of the data directory; "
        "the token is OSMOSIS_TOKEN (any, unless the server was started with --token)",
    )
    if workspace:
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--workspace", help=f"workspace name (default: {DEFAULT_WORKSPACE})")
        scope.add_argument("--git", metavar="OWNER/REPO", help="the workspace of this repository")


class _Target:
    """Where a command goes: the data directory in-process, or a running server over HTTP.

    Both answer through ``LocalPlatform.handle`` (the server's own code path), so a command
    does the same thing either way.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.url = args.platform if args.platform not in (None, "", "local") else None
        self.headers = {
            "Authorization": f"Bearer {os.environ.get('OSMOSIS_TOKEN') or 'local'}",
            "Content-Type": "application/json",
        }
        git = getattr(args, "git", None)
        if git:
            self.headers["X-Osmosis-Git"] = git
        else:
            self.headers["X-Osmosis-Workspace"] = (
                getattr(args, "workspace", None) or DEFAULT_WORKSPACE
            )
        self.platform = None if self.url else LocalPlatform(_open_data(args))

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        raw = b"" if body is None else json.dumps(body).encode("utf-8")
        if self.platform is not None:
            answer = self.platform.handle(method, path, self.headers, raw)
            return answer.status, answer.json() if answer.body else {}
        import urllib.error
        import urllib.request

        assert self.url is not None  # no platform: the command was given --platform URL
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=raw or None, headers=self.headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read() or b"{}")
            except ValueError:
                return exc.code, {}
        except (urllib.error.URLError, OSError) as exc:
            return 0, {"error": f"cannot reach {self.url}: {exc}"}


def _fail(status: int, payload: Any) -> int:
    message = payload.get("error") if isinstance(payload, dict) else None
    print(f"error: {message or f'HTTP {status}'}", file=sys.stderr)
    for issue in (payload.get("issues") or []) if isinstance(payload, dict) else []:
        print(f"  - {issue.get('key')}: {issue.get('message')}", file=sys.stderr)
    return ERROR


def _env_number(name: str, kind: type[float] | type[int]) -> float | int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise SystemExit(f"error: {name}={raw!r} is not a number") from None


def _serve(args: argparse.Namespace) -> int:
    try:
        users = users_from_specs(args.user)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EMULATOR_USAGE
    if users and args.token:
        print("error: give --user TOKEN=NAME (one per user) or --token, not both", file=sys.stderr)
        return EMULATOR_USAGE
    speed = args.speed if args.speed is not None else _env_number(SPEED_ENV, float)
    seed = args.seed if args.seed is not None else _env_number(SEED_ENV, int)
    if speed is not None and not speed > 0:
        print("error: --speed must be positive", file=sys.stderr)
        return EMULATOR_USAGE
    faults = Faults(
        latency_ms=args.latency_ms,
        latency_spike_ms=args.latency_spike_ms,
        latency_spike_rate=args.latency_spike_rate,
        error_rate=args.error_rate,
        rate_limit_rate=args.rate_limit_rate,
        retry_after_s=args.retry_after,
        drop_rate=args.drop_rate,
        drop_after_submit_rate=args.drop_after_submit_rate,
        after_submit_delay_ms=args.after_submit_delay_ms,
        presign_ttl_s=args.presign_ttl,
        benchmarks_disabled=args.benchmarks_disabled,
        rate_limit_after_submit_rate=args.rate_limit_after_submit_rate,
        wrong_submit_reply_rate=args.wrong_submit_reply_rate,
        list_omit_rate=args.list_omit_rate,
        trickle_ms=args.trickle_ms,
        silent=args.silent,
        stall_downloads_after=args.stall_downloads_after,
        seed=args.fault_seed,
    )
    platform = LocalPlatform(
        _open_data(args),
        speed=speed,
        seed=None if seed is None else int(seed),
        token=args.token,
        users=users or None,
        faults=faults,
        auto_workspaces=not args.strict_workspaces,
        workspaces=tuple(args.workspace) or (DEFAULT_WORKSPACE,),
    )
    log: IO[str] = open(args.access_log, "a", encoding="utf-8") if args.access_log else sys.stderr  # noqa: SIM115
    handle = start_server(platform, args.host, args.port, access_log=log)
    print(f"listening on {handle.url}", flush=True)
    stop = threading.Event()
    try:
        import signal

        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    except ValueError:  # not the main thread
        pass
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()
        if log is not sys.stderr:
            log.close()
    return OK


def _secret_set(args: argparse.Namespace) -> int:
    if args.from_env:
        value = os.environ.get(args.from_env, "")
    else:
        value = sys.stdin.read().rstrip("\r\n")
    if not value:
        print("error: empty secret value", file=sys.stderr)
        return EMULATOR_USAGE
    target = _Target(args)
    status, payload = target.call(
        "POST",
        "/api/cli/environment-secrets",
        {"name": args.name, "value": value, "scope": args.scope},
    )
    if status != 200:
        return _fail(status, payload)
    if args.json:
        print(json.dumps(payload, indent=2))
        return OK
    where = f"git {args.git}" if args.git else f"workspace {args.workspace or DEFAULT_WORKSPACE}"
    print(f"secret {args.name} set ({args.scope} scope, {where})")
    return OK


def _secret_list(args: argparse.Namespace) -> int:
    target = _Target(args)
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        status, payload = target.call(
            "GET", f"/api/cli/environment-secrets?scope={args.scope}&limit=50&offset={offset}"
        )
        if status != 200:
            return _fail(status, payload)
        items.extend(payload.get("environment_secrets") or [])
        offset = payload.get("next_offset") if payload.get("has_more") else None
    if args.json:
        print(json.dumps(items, indent=2))
        return OK
    if not items:
        print("no secrets")
        return OK
    rows = [("NAME", "SCOPE", "UPDATED BY", "UPDATED")]
    for item in items:
        scope = "personal" if item.get("scope") == "user" else str(item.get("scope"))
        rows.append(
            (
                str(item["name"]),
                scope,
                str(item.get("updater_name") or "–"),
                str(item.get("updated_at") or "–"),
            )
        )
    _print_rows(rows)
    return OK


def _print_rows(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]))


def _benchmark_sync(args: argparse.Namespace) -> int:
    if args.platform not in (None, "", "local"):
        status, payload = _Target(args).call(
            "POST",
            f"/_emulator/benchmarks/{quote(args.ref, safe='')}/sync",
            {
                "status": args.status,
                "synced": args.synced,
                "error": args.error,
                "workspace": args.workspace,
            },
        )
        if status != 200:
            return _fail(status, payload)
    else:
        platform = LocalPlatform(_open_data(args))
        try:
            platform.set_benchmark_sync(
                args.ref,
                args.status,
                synced_task_count=args.synced,
                sync_error=args.error,
                workspace=args.workspace,
            )
        except KeyError:
            where = f" in workspace {args.workspace}" if args.workspace else ""
            print(f"error: no benchmark {args.ref!r}{where}", file=sys.stderr)
            return ERROR
    if args.json:
        result = {"benchmark": args.ref, "sync_status": args.status, "workspace": args.workspace}
        print(json.dumps(result, indent=2))
        return OK
    where = f" in workspace {args.workspace}" if args.workspace else ""
    print(f"benchmark {args.ref}: sync_status {args.status}{where}")
    return OK


def _benchmark_add(args: argparse.Namespace) -> int:
    status, payload = _Target(args).call(
        "POST", f"/_emulator/benchmarks/{quote(args.ref, safe='')}/add"
    )
    if status != 200:
        return _fail(status, payload)
    if args.json:
        print(json.dumps(payload, indent=2))
        return OK
    print(f"benchmark {payload['benchmark']} added to workspace {payload['workspace']}")
    return OK


def _like_body(path: str) -> dict[str, Any]:
    """The submit body the config at ``path`` asks for, validated as ``osmosis-plan`` would."""
    from reconciler.config.discover import Found
    from reconciler.config.load import load_file

    file = Path(path)
    if not file.is_file():
        raise ValueError(f"--like {path}: no such file")
    desired, issues = load_file(Found(file.stem, path, str(file)))
    if desired is None or issues:
        first = issues[0] if issues else None
        where = f"{first.file}:{first.line}" if first and first.line else path
        detail = f" {first.key}: {first.message}" if first and first.key else ""
        detail = detail or (f" {first.message}" if first else "")
        raise ValueError(f"--like {where}:{detail} (fix the config, or drop --like)")
    return dict(desired.spec)


def _runs_seed(args: argparse.Namespace) -> int:
    if args.count < 1:
        print("error: --count must be at least 1", file=sys.stderr)
        return EMULATOR_USAGE
    if not args.days > 0:
        print("error: --days must be positive", file=sys.stderr)
        return EMULATOR_USAGE
    try:
        mix = parse_status_mix(args.status_mix) if args.status_mix else None
        creators = [parse_creator(c) for c in args.creator] or list(HISTORY_TEAM)
        body = _like_body(args.like) if args.like else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EMULATOR_USAGE
    key = args.benchmark or (
        body["experiment_config"]["benchmark"] if body else "terminal-bench-2-1"
    )
    seed = args.seed if args.seed is not None else _env_number(SEED_ENV, int)
    platform = LocalPlatform(
        _open_data(args), seed=None if seed is None else int(seed), auto_workspaces=True
    )
    if platform._existing_workspace(args.workspace) is None:  # noqa: SLF001
        print(
            f"note: workspace {args.workspace} did not exist; made with the whole catalog",
            file=sys.stderr,
        )
    started = time.monotonic()
    try:
        ids = platform.seed_runs(
            args.workspace,
            args.count,
            benchmark_key=key,
            status_mix=mix,
            created_from=platform.clock() - args.days * 86400,
            body=body,
            creators=creators,
        )
    except KeyError:
        print(f"error: no benchmark {key!r} (see `osmosis-platform-emulator benchmark list`)",
              file=sys.stderr)  # fmt: skip
        return ERROR
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EMULATOR_USAGE
    took = time.monotonic() - started
    if args.json:
        result = {
            "workspace": args.workspace,
            "benchmark": key,
            "count": len(ids),
            "days": args.days,
            "creators": [c.name for c in creators],
            "first_id": ids[0],
            "last_id": ids[-1],
        }
        print(json.dumps(result, indent=2))
        return OK
    who = ", ".join(c.name for c in creators)
    print(
        f"seeded {len(ids):,} runs of {key} in workspace {args.workspace} over the past "
        f"{args.days:g} days (by {who}) in {took:.2f}s"
    )
    return OK


def _benchmark_list(args: argparse.Namespace) -> int:
    target = _Target(args)
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        status, payload = target.call("GET", f"/api/cli/benchmarks?limit=50&offset={offset}")
        if status != 200:
            return _fail(status, payload)
        items.extend(payload.get("benchmarks") or [])
        offset = payload.get("next_offset") if payload.get("has_more") else None
    if args.json:
        print(json.dumps(items, indent=2))
        return OK
    rows = [("KEY", "NAME", "TASKS", "SYNC")]
    for item in items:
        sync = item.get("sync_status") or "ready"
        if sync == "syncing":
            sync += f" ({item.get('synced_task_count', 0)}/{item.get('task_count', 0)})"
        tasks = "unavailable" if sync == "failed" else str(item.get("task_count", 0))
        rows.append((item["source_ref"], item["name"], tasks, sync))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print(
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[3]
        )
    return OK


def _benchmark_info(args: argparse.Namespace) -> int:
    status, payload = _Target(args).call("GET", f"/api/cli/benchmarks/{quote(args.ref, safe='')}")
    if status != 200:
        return _fail(status, payload)
    if args.json:
        print(json.dumps(payload, indent=2))
        return OK
    b = payload["benchmark"]
    harness = (
        "official scaffold only"
        if not b.get("supports_harness", True)
        else ("required" if b.get("requires_harness") else "optional")
    )
    if b.get("default_harness"):
        harness += f" (default: {b['default_harness']})"
    judge = "–"
    if b.get("requires_judge_model"):
        judge = f"required (default: {b.get('judge_model_default') or 'none'})"
    elif b.get("requires_judge_api_key"):
        judge = "API key only (pinned grader)"
    sets = ", ".join(
        f"{s['name']} ({s['task_count']}{', recommended' if s.get('recommended') else ''})"
        for s in b.get("task_sets") or []
    )
    categories = ", ".join(f"{c['name']} ({c['task_count']})" for c in b.get("categories") or [])
    unavailable = b.get("unavailable_tasks") or {}
    rows = [
        ("Name", b["name"]),
        ("Key", b["source_ref"]),
        ("ID", b["id"]),
        ("Source", b.get("source_url") or f"{b.get('source_type')}: {b['source_ref']}"),
        ("Sync", b.get("sync_status") or "ready"),
        ("Tasks", str(b.get("task_count", 0))),
        ("Categories", categories or "–"),
        ("Named Task Sets", sets or "–"),
        ("Harness", harness),
        ("LLM Judge", judge),
        ("Pass Threshold", f"{b.get('pass_threshold')}"),
        ("Required Secrets", ", ".join(b.get("required_secret_names") or []) or "–"),
        (
            "Unavailable",
            f"{len(unavailable.get('tasks') or [])} ({unavailable.get('reason') or 'no reason'})"
            if unavailable.get("tasks")
            else "–",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label.ljust(width)}  {value}")
    board = payload.get("leaderboard") or []
    if board:
        print("\nLeaderboard:")
        for entry in board:
            p1 = (entry.get("pass_at_1") or {}).get("value")
            shown = f"{p1 * 100:.1f}%" if isinstance(p1, int | float) else "–"
            agent = f"{entry.get('model')} ({entry.get('harness') or 'official scaffold'})"
            print(f"  #{entry.get('rank')}  {agent}  [{entry.get('task_set')}]  pass@1 {shown}")
    if args.tasks:
        print("\nTasks:")
        for task in b.get("tasks") or []:
            print(
                f"  {task['name']}  {task.get('category') or '–'}  {task.get('difficulty') or '–'}"
            )
    return OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``osmosis-platform-emulator``."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "secret":
        return _secret_set(args) if args.secret_command == "set" else _secret_list(args)
    if args.command == "runs":
        return _runs_seed(args)
    commands = {
        "list": _benchmark_list,
        "info": _benchmark_info,
        "sync": _benchmark_sync,
        "add": _benchmark_add,
    }
    return commands[args.benchmark_command](args)


if __name__ == "__main__":
    sys.exit(main())
