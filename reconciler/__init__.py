"""osmosis-reconciler: the repository is the source of truth for Osmosis benchmark runs."""

from pathlib import Path as _Path


def _version() -> str:
    """From git tags at build time (setuptools-scm writes ``VERSION`` beside this file);
    a source tree that was never installed asks the installed metadata, if any."""
    try:
        return (_Path(__file__).parent / "VERSION").read_text(encoding="utf-8").strip()
    except OSError:
        pass
    from importlib import metadata

    try:
        return metadata.version("osmosis-reconciler")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


__version__ = _version()
"""The installed version (``0.3.1``, ``0.3.2.dev4+g1234abc``)."""
