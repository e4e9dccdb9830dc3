"""osmosis-reconciler: the repository is the source of truth for Osmosis benchmark runs."""

__version__ = "0.1.0"
