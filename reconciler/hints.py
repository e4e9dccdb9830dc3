"""Words shared by the core and the output layer, in a module that imports nothing (the
commands' start-up must not pay for pydantic before they need it)."""

UNSUCCESSFUL_STATUSES = ("failed", "stopped")
"""Ended, but not with results to trust: shown as such, with ``RERUN_HINT``."""
RERUN_HINT = (
    "re-run it with `osmosis-apply --replace {address}`, or from CI with an empty commit: "
    '`git commit --allow-empty -m "Re-run {address}" -m "Osmosis-Rerun: {address}"`'
)
