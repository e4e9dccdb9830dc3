"""Benchmark configs: discover, parse and validate them, and build their submit bodies.

An edge module (reads files). ``load_configs`` turns the benchmarks directory into frozen
``DesiredRun`` values plus every ``ConfigIssue`` of every file; raw TOML never travels
further than this package. The rules that may change with the Platform live as data in
``reconciler.config.rules``.

::

    result = load_configs(Path("."), "benchmarks")
    result.ok        # no issue with severity "error"
    result.runs      # DesiredRun per valid file, sorted by address
    result.issues    # errors and warnings: file, line, column, key, message, hint
"""

from reconciler.config.load import LoadResult, format_path, load_configs
from reconciler.config.spec import build_spec, spec_digest

__all__ = ["LoadResult", "build_spec", "format_path", "load_configs", "spec_digest"]
