"""Write the commit message for the lockfile commit the apply workflow pushes back.

Usage (from .github/workflows/osmosis-apply.yml)::

    python scripts/ci/apply_commit_message.py --output apply.out --exit-code 0 \\
        --sha "$GITHUB_SHA" [--run-url URL] > commit-message.txt

The subject carries the plan summary line ``osmosis-apply`` printed (``Plan: 2 to submit,
...``) and ``[skip ci]``, so the push does not start another workflow run; the body carries
the apply result line and any failures, the commit that was applied and the run link.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

SKIP_CI = "[skip ci]"
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MAX_FAILURE_LINES = 30


def _lines(output: str) -> list[str]:
    return [_ANSI_RE.sub("", line).rstrip() for line in output.splitlines()]


def plan_summary_line(output: str) -> str | None:
    """The ``Plan: ...`` summary line of ``osmosis-apply`` output (the last one, in case the
    output holds more than one plan), or ``None``."""
    found = [line.strip() for line in _lines(output) if line.strip().startswith("Plan: ")]
    return found[-1] if found else None


def apply_result_lines(output: str) -> list[str]:
    """``Apply complete: ...`` and the failure lines under it."""
    lines = _lines(output)
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip().startswith("Apply complete:"):
            result = [lines[index].strip()]
            failures = [ln.strip() for ln in lines[index + 1 :] if ln.startswith("  ! ")]
            result.extend(failures[:MAX_FAILURE_LINES])
            if len(failures) > MAX_FAILURE_LINES:
                result.append(f"... and {len(failures) - MAX_FAILURE_LINES} more failures")
            return result
    return []


def commit_message(output: str, *, exit_code: int, sha: str, run_url: str | None = None) -> str:
    """The full commit message for the updated lockfile."""
    summary = plan_summary_line(output) or "lockfile updated"
    partial = {0: "", 3: " (partial)"}.get(exit_code, f" (apply exit code {exit_code})")
    subject = f"osmosis-apply: {summary}{partial} {SKIP_CI}"
    body = apply_result_lines(output)
    body.append("")
    body.append(f"Applied at commit {sha}.")
    if run_url:
        body.append(f"Workflow run: {run_url}")
    return subject + "\n\n" + "\n".join(body).strip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, type=Path, help="captured osmosis-apply stdout")
    parser.add_argument("--exit-code", required=True, type=int)
    parser.add_argument("--sha", required=True, help="the commit that was applied")
    parser.add_argument("--run-url")
    args = parser.parse_args(argv)
    try:
        output = args.output.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        output = ""
    sys.stdout.write(
        commit_message(output, exit_code=args.exit_code, sha=args.sha, run_url=args.run_url)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
