"""Results you can decide with: statistics, comparisons, reports (issue 24).

Pure modules (no I/O, no edge library): ``stats`` (intervals, tests, power), ``data``
(results.csv by header name), ``runs`` (an address's recorded runs, comparability),
``summary`` (per-run scores), ``compare`` (paired comparisons and verdicts), ``build``
(reports from the lockfile), ``table`` (text that fits the terminal), ``report`` (text,
markdown, JSON), ``svg`` and ``html`` (the self-contained report). The package is
part of the pure core (model, plan, render may import it); its one edge, each run's outputs
kept under ``results/<address>/<run-dir>/`` and fetched on demand, is ``outputs.kept``.
"""
