"""osmosis-reconciler: the repository is the source of truth for Osmosis benchmark runs."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("osmosis-reconciler")
    """From git tags at build time (setuptools-scm), as installed."""
except _metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0.0.0+unknown"
