"""The local Osmosis Platform: the benchmark API of platform-api.md, emulated over SQLite.

::

    from reconciler.local_platform import LocalPlatform, Faults, LocalTransport, start_server

    platform = LocalPlatform(Path(".osmosis/local-platform"), speed=50)
    http = httpx.Client(transport=LocalTransport(platform))      # in-process
    handle = start_server(platform, port=0)                      # loopback HTTP
    ...; handle.close()

One code path: ``LocalPlatform.handle(method, target, headers, body) -> Response`` answers
both. Modules: ``catalog`` (seeded benchmarks, data), ``rules`` (submit validation, data
tables), ``simulation`` (lifecycle, outcomes, metrics, outputs, logs), ``store`` (SQLite),
``faults``, ``users``, ``core`` (shared state: clock, callers, workspaces, catalogs),
``app`` (entry point and routing) over one module per route family (``benchmarks``,
``secret_routes``, ``runs``, ``outputs``, ``history``, ``pages``), ``answers``,
``transport``, ``server`` (loopback server) and ``cli`` (``osmosis-platform-emulator``).

Choices for the points platform-api.md §13 calls "not determinable" (also in
docs/local-platform.md):

* Feature gate: HTTP 403, body ``{"error": "Benchmarks is not available for your account"}``
  (no ``code``) on every benchmark and run route (E1-E9), checked after authentication and
  before scoping. Secrets, workspaces and verify are not gated.
* Unknown benchmark: 404, code ``BENCHMARK_NOT_FOUND`` on submit, ``NOT_FOUND`` on E2.
  Benchmark still syncing or failed: 409 ``BENCHMARK_NOT_READY`` with the CLI's sync wording
  (``submit_rules.NOT_READY_STATUS`` / ``NOT_READY_MESSAGES``). Missing judge secret and every other
  config rule: 400 ``VALIDATION`` with ``issues`` (never 422).
* ``WORKSPACE_SCOPE_HEADER_CONFLICT`` → 400; ``WORKSPACE_SCOPE_HEADER_ACCESS_DENIED`` → 403;
  workspace names match exactly and case-sensitively; Git identities case-insensitively.
  Unknown names and identities are created on first sight unless ``auto_workspaces=False``
  (``--strict-workspaces``); an auto-created Git workspace is named after its ``owner/repo``.
* ``benchmark.required_secret_names`` is served (D2): ``hle → ["HF_TOKEN"]``, others ``[]``.
* Stop of a terminal run: 409 ``CONFLICT`` "Benchmark run <name> is already <status>; ..."
  (``rules.STOP_TERMINAL_STATUS``). Stop of an active run: 200 ``{id, name, status:
  "stopped", completed_at}``.
* Run names: adjective-animal from a seeded walk over 48x48 pairs (``-2``... on later
  cycles, ``-x2``... on a collision with a stored name). Runs always start ``pending``
  (never ``queued``). Lists are newest first (``created_at`` desc, then insertion order).
  Submit answers 200.
* ``[execution]``: ``attempts_per_task`` 1-16 (default 1), ``max_concurrent_attempts`` 1-64
  (default 4), integers, else 400; other keys are stored and echoed unvalidated. These and
  the other catalog-dependent rules (judge, ``[verifier]``, harness flags, task selection:
  ``task_names`` + ``categories`` select their union) are ``reconciler.plan.submit_rules``,
  which the plan's preflight reads too.
* Rate limits only through fault injection; a 429 always carries ``Retry-After``.
* Presigned URLs live ``Faults.presign_ttl_s`` (default 900 s = the docs' 15 minutes); an
  expired or forged URL answers 403. Manifest ``totals`` = ``{files, bytes}``.
* The harness catalogue is open: any harness string is accepted except where the data
  tables say otherwise (credential harnesses, ``supports_harness``, ``requires_harness``).
* Secrets: only a keyed digest of each value is stored; values are never returned or
  logged. ``resolved_secret_scopes`` uses the page's ``workspace``, ``user`` and
  ``user_override``; a value supplied in ``secrets.provided`` counts as the submitting
  user's own. Personal (``user``) secrets belong to the user whose token stored them
  (``LOCAL_USER`` without ``users``), per workspace.
* Users: ``users={token: User}`` (``serve --user TOKEN=NAME[:EMAIL]``); every run records
  its creator. Without users, every token is ``LOCAL_USER``.
* Stored run bodies keep ``secrets.provided`` as a sorted list of names only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reconciler.local_platform.answers import Response
from reconciler.local_platform.app import LocalPlatform
from reconciler.local_platform.faults import Faults
from reconciler.local_platform.server import ServerHandle, start_server
from reconciler.local_platform.users import LOCAL_USER, User, make_user, users_from_specs

if TYPE_CHECKING:
    from reconciler.local_platform.transport import LocalTransport

__all__ = [
    "LOCAL_USER",
    "Faults",
    "LocalPlatform",
    "LocalTransport",
    "Response",
    "ServerHandle",
    "User",
    "make_user",
    "start_server",
    "users_from_specs",
]


def __getattr__(name: str) -> Any:
    # Lazy: the transport needs httpx, which the emulator server does not (fast start-up).
    if name == "LocalTransport":
        from reconciler.local_platform.transport import LocalTransport

        return LocalTransport
    raise AttributeError(name)
