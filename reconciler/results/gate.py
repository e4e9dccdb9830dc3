"""The regression gate: a family of comparisons whose false-alarm rate is the one it states
(pure).

Every address's newest full run against its accepted baseline is one comparison; the
family is adjusted with Holm (``compare.holm``), so with nothing changed the gate fails in
at most α = 5% of runs however many configs it checks. It fails only on **worse beyond
the margin** (the whole adjusted interval below −``regression_margin_pp``); a significant
decline within the margin is shown and passes. ``strict`` (``--fail-on-inconclusive-drop``)
fails unless non-inferiority is shown (the interval's lower end above −margin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reconciler.results.compare import Verdict
from reconciler.results.report import CompareReport

__all__ = ["Gate", "gate_to_dict"]


@dataclass(frozen=True)
class Gate:
    """The regression gate's family of comparisons, adjusted with Holm."""

    comparisons: tuple[CompareReport, ...]
    strict: bool = False
    """``--fail-on-inconclusive-drop``: fail unless non-inferiority is shown."""

    def failing(self, report: CompareReport) -> bool:
        c = report.comparison
        return c.beyond_margin or (self.strict and not c.non_inferior)

    @property
    def failed(self) -> bool:
        return any(self.failing(r) for r in self.comparisons)

    def summary_line(self) -> str:
        """``gate: 0 worse, 2 inconclusive, 8 no change; 10 comparisons, Holm``."""
        cs = [r.comparison for r in self.comparisons]
        worse = sum(1 for c in cs if c.beyond_margin)
        within = sum(1 for c in cs if c.verdict is Verdict.WORSE and not c.beyond_margin)
        parts = [f"{worse} worse"]
        if within:
            parts.append(f"{within} worse within the margin")
        parts.append(f"{sum(1 for c in cs if c.verdict is Verdict.INCONCLUSIVE)} inconclusive")
        parts.append(f"{sum(1 for c in cs if c.verdict is Verdict.NO_CHANGE)} no change")
        better = sum(1 for c in cs if c.verdict is Verdict.BETTER)
        if better:
            parts.append(f"{better} better")
        m = len(cs)
        family = "Holm" if m > 1 else "no adjustment"
        line = f"gate: {', '.join(parts)}; {m} comparison{'s' if m != 1 else ''}, {family}"
        if self.strict:
            line += "; strict (--fail-on-inconclusive-drop)"
        return line + ("; FAILED" if self.failed else "; passed")


def gate_to_dict(gate: Gate) -> dict[str, Any]:
    return {
        "summary": gate.summary_line(),
        "comparisons": len(gate.comparisons),
        "family": "Holm" if len(gate.comparisons) > 1 else None,
        "strict": gate.strict,
        "failed": gate.failed,
        "failing": [f"{r.right} vs {r.left}" for r in gate.comparisons if gate.failing(r)],
    }
