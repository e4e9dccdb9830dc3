"""``osmosis-state migrate --platform URL``: a try-out's lockfile moved to another Platform.

A try-out records runs of a local Platform: the embedded one (``platform = "local"``) or one
served with ``osmosis-platform-emulator serve`` (a plain-http URL). Moving on, to a Platform
served to the team or to the real Platform, is one step: the lockfile's header names the
new Platform and workspace, through the lockfile's door (``state.door``: under the locks of
what it records, serial + 1).

What happens to the recorded runs:

* they do not exist on the new Platform (the usual case): each entry moves to the
  lockfile's history (reason ``forgotten``, as ``osmosis-state forget`` does), so the next
  plan there submits every config afresh, and ``osmosis-results`` still shows their scores.
  Nothing of them can be fetched there: no history entry waits for a download; the
  accepted baselines (simulated scores) and the try-out Platform's refusals are dropped; the
  run-list watermark is reset, so the first plan lists the new workspace in full;
* the new Platform *is* the one that holds them (the same local Platform instance, served
  under the URL, the same workspace): they are kept as they are; only the header changes.

Refused, with the reason and what to do: no lockfile; a lockfile of a real (https) Platform
(migrate moves try-outs, never a paid history); the Platform it already records; a submit or
stop whose outcome is unknown (an intent); a run still active (it would go on unwatched on
the old Platform) unless the runs are kept; the embedded Platform as the target; plain http
beyond loopback to anything but a local Platform that says so (a token would travel in
plaintext to a real Platform).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

from reconciler.errors import UsageError
from reconciler.gitinfo import GitRepo
from reconciler.loopback import is_loopback_url
from reconciler.model import LockState, RecordedRun, RunStatus, Settings
from reconciler.platform import LOCAL_PLATFORM, normalize_platform_url
from reconciler.platform.identity import local_platform_instance
from reconciler.platform.settings import git_identity_from_remote
from reconciler.state.door import LockScope, open_door
from reconciler.state.history import retire_run
from reconciler.state.lockfile import read_lockfile

__all__ = ["Migration", "migrate_lockfile", "migrated_state"]

Probe = Callable[[str], str | None]
"""Asks a URL which local Platform instance it serves (``platform.identity``)."""


@dataclass(frozen=True)
class Migration:
    """What ``osmosis-state migrate`` did (or, with ``dry_run``, would do)."""

    before: LockState
    """The lockfile as read."""
    after: LockState
    """The lockfile as written (or as it would be written)."""
    kept: bool
    """The recorded runs exist on the new Platform (the same local Platform instance and
    workspace) and stay recorded."""
    forgotten: tuple[RecordedRun, ...]
    """The entries moved to history (none when ``kept``)."""
    baselines_dropped: tuple[str, ...] = ()
    """Addresses whose accepted baseline was dropped."""
    dry_run: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)


def _is_tryout(platform: str) -> bool:
    """Whether a recorded Platform is a local one: the embedded Platform, or a plain-http URL
    (the real Platform is only ever https; plain http is allowed for a loopback or a
    self-identified local Platform only)."""
    return platform == LOCAL_PLATFORM or urlsplit(platform).scheme == "http"


def _unsettled(state: LockState, *, kept: bool) -> list[str]:
    """One line per entry that cannot move: an intent (always), an active run (unless kept)."""
    lines = []
    for address in sorted(state.runs):
        entry = state.runs[address]
        run = entry.run_name or entry.run_id or "no run yet"
        if entry.intent is not None:
            lines.append(f"{address} ({run}): a {entry.intent.op} whose outcome is not known yet")
        elif not kept and RunStatus.of(entry.status).is_active:
            lines.append(f"{address} ({run}): {entry.status or 'status not observed yet'}")
    return lines


def migrated_state(
    state: LockState, *, platform: str, workspace: str, kept: bool, now: datetime
) -> tuple[LockState, tuple[RecordedRun, ...], tuple[str, ...]]:
    """``state`` recorded against ``platform`` and ``workspace``: (the state, the entries
    moved to history, the addresses whose baseline was dropped). Pure."""
    header = {"platform": platform, "workspace": workspace, "platform_instance": None}
    if kept:
        return state.model_copy(update=header), (), ()
    forgotten = tuple(state.runs[address] for address in sorted(state.runs))
    moved = state
    for entry in forgotten:
        moved = retire_run(moved, entry.address, "forgotten", ended_at=now)
    history = tuple(
        h.model_copy(update={"outputs_pending": None}) if h.outputs_pending else h
        for h in moved.history
    )
    dropped = tuple(sorted(state.baselines))
    return (
        moved.model_copy(
            update={
                **header,
                "history": history,
                "baselines": {},
                "rejections": {},
                "observed_until": None,
            }
        ),
        forgotten,
        dropped,
    )


def _target(raw: str, probe: Probe) -> tuple[str, str | None, list[str]]:
    """(the normalised target URL, its local Platform instance or None, warnings)."""
    text = raw.strip()
    if not text:
        raise UsageError("osmosis-state migrate needs --platform URL", "e.g. --platform URL")
    if text.lower() == LOCAL_PLATFORM:
        raise UsageError(
            "osmosis-state migrate moves a try-out onto a served or the real Platform, not "
            "onto the embedded one",
            "pass --platform http://127.0.0.1:PORT (osmosis-platform-emulator serve) or "
            "--platform https://platform.osmosis.ai",
        )
    url = normalize_platform_url(text)
    if urlsplit(url).scheme == "https":
        return url, None, []
    instance = probe(url)
    if is_loopback_url(url):
        return url, instance, []
    if instance is None:
        raise UsageError(
            f"Refusing plain-http Platform URL {url}: it is not on this machine and does not "
            "identify itself as a local Platform (osmosis-platform-emulator serve), so a "
            "token sent to it would travel in plaintext",
            "use the https:// URL of a real Platform, or the URL a teammate's "
            "`osmosis-platform-emulator serve` prints",
        )
    warning = (
        f"{url} is a local Platform (instance {instance}) served over plain http beyond this "
        "machine: tokens travel in plaintext; use it for a try-out only"
    )
    return url, instance, [warning]


def _workspace(
    flag: str | None,
    settings: Settings,
    env: Mapping[str, str],
    repo_root: Path,
    recorded: LockState,
    *,
    local_target: bool,
) -> str:
    """The workspace label on the target, chosen as a plan there chooses it: the flag, the
    setting, ``OSMOSIS_WORKSPACE``, the clone's GitHub origin; on a local Platform, else,
    the one the lockfile records."""
    name = flag if flag is not None else settings.workspace or env.get("OSMOSIS_WORKSPACE")
    if name is not None and name.strip():
        return name.strip()
    if flag is not None:
        raise UsageError("--workspace requires a non-empty name")
    git = GitRepo.discover(repo_root)
    origin = git.origin_url() if git else None
    if origin:
        try:
            return "git:" + git_identity_from_remote(origin)
        except UsageError:
            if not local_target:
                raise
    if local_target:
        return recorded.workspace
    raise UsageError(
        "no workspace selected for the new Platform",
        "pass --workspace NAME (the workspace the team's runs go to) or set OSMOSIS_WORKSPACE",
    )


def migrate_lockfile(
    repo_root: Path,
    settings: Settings,
    *,
    target: str,
    workspace_flag: str | None,
    env: Mapping[str, str],
    now: datetime,
    dry_run: bool,
    timeout: float,
    command: str,
    say: Callable[[str], object] | None = None,
    probe: Probe = local_platform_instance,
) -> Migration:
    """Move the lockfile of ``repo_root`` to the Platform ``target`` (see the module)."""
    path, display = repo_root / settings.state, settings.state
    # OSMOSIS_ALLOW_INSECURE_PLATFORM_URL does not apply: a real Platform is never plain http.
    url, target_instance, warnings = _target(target, probe)
    if not path.exists():
        raise UsageError(
            f"nothing to migrate: {display} does not exist",
            f"the first `osmosis-apply --platform {url}` writes a lockfile for that Platform",
        )
    known = read_lockfile(path, platform=None, workspace=None, display_path=display)
    local_target = target_instance is not None or is_loopback_url(url)
    workspace = _workspace(
        workspace_flag, settings, env, repo_root, known, local_target=local_target
    )

    def decide(state: LockState) -> Migration:
        if not _is_tryout(state.platform):
            raise UsageError(
                f"{display} records runs of the Platform at {state.platform}: "
                "osmosis-state migrate moves a try-out's state (an embedded or served local "
                "Platform), never a real Platform's",
                "keep this lockfile; to start elsewhere, point --state at a new lockfile",
            )
        if state.platform.rstrip("/") == url.rstrip("/"):
            raise UsageError(
                f"{display} already records {url} (workspace {state.workspace}): nothing to "
                "migrate",
                "pass the URL of the Platform to move to",
            )
        source_instance = (
            state.platform_instance if state.platform == LOCAL_PLATFORM else probe(state.platform)
        )
        kept = (
            target_instance is not None
            and target_instance == source_instance
            and workspace == state.workspace
        )
        unsettled = _unsettled(state, kept=kept)
        if unsettled:
            raise UsageError(
                f"cannot migrate {display}: {len(unsettled)} recorded run(s) are not settled on "
                f"{state.platform}, and would be orphaned there: " + "; ".join(unsettled),
                "let them end first (`osmosis-apply --wait` against the try-out Platform), "
                "settle an unknown outcome (`osmosis-plan`, `osmosis-state resolve`), or "
                "`osmosis-state forget ADDR` what you are done with; then migrate",
            )
        after, forgotten, dropped = migrated_state(
            state, platform=url, workspace=workspace, kept=kept, now=now
        )
        return Migration(
            before=state,
            after=after,
            kept=kept,
            forgotten=forgotten,
            baselines_dropped=dropped,
            dry_run=dry_run,
            warnings=tuple(warnings),
        )

    if dry_run:
        return decide(known)
    scope = LockScope.recorded(path, display, repo_root=repo_root, settings=settings)
    with open_door(scope, timeout=timeout, command=command, say=say) as door:
        state = door.read()  # under the locks: what was read before may be stale
        if state is None:
            raise UsageError(f"nothing to migrate: {display} does not exist")
        planned = decide(state)
        written = door.write(planned.after)
    return Migration(
        before=planned.before,
        after=written,
        kept=planned.kept,
        forgotten=planned.forgotten,
        baselines_dropped=planned.baselines_dropped,
        warnings=planned.warnings,
    )
