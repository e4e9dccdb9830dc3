"""Named crash points for the reliability suite: a no-op unless ``OSMOSIS_CRASH_AT`` is set.

``OSMOSIS_CRASH_AT=<label>:<n>`` makes the process SIGKILL itself the n-th time it reaches
``crash_point(<label>)`` (n defaults to 1). SIGKILL, not an exception: nothing runs after it
(no ``finally``, no atexit), exactly like a power cut or the OOM killer, so the tests prove
what the lockfile and the disk hold at that instant. Labels are listed in ``LABELS``.
"""

from __future__ import annotations

import os
import signal
import threading

ENV = "OSMOSIS_CRASH_AT"
LABELS = (
    "submit.before_intent",  # apply: about to write the submit intent
    "submit.before_post",  # apply: intent on disk, POST not sent yet
    "submit.after_post",  # apply: the Platform answered, response not recorded yet
    "stop.before_post",  # apply: stop intent on disk, POST not sent yet
    "lockfile.before_rename",  # lockfile: temp file written and synced, not renamed yet
    "lockfile.after_rename",  # lockfile: renamed, directory not synced yet
    "download.mid_file",  # downloads: first chunk written to the .partial file
    "download.before_rename",  # downloads: .partial complete, not renamed yet
)

_lock = threading.Lock()
_hits: dict[str, int] = {}


def crash_point(label: str) -> None:
    """SIGKILL this process when ``OSMOSIS_CRASH_AT`` names ``label`` and this is hit n."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    wanted, _, count = spec.partition(":")
    if wanted != label:
        return
    with _lock:
        _hits[label] = _hits.get(label, 0) + 1
        hit = _hits[label]
    if hit == int(count or 1):
        os.kill(os.getpid(), signal.SIGKILL)
