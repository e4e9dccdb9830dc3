"""The documentation as test input: the fenced blocks of the README and of ``docs/`` pages.

Tests that run what a page shows find its blocks here, by page and section heading, so a
page can move or grow without each test keeping its own parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
README = PROJECT_ROOT / "README.md"
DOCS = PROJECT_ROOT / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, the headings it sits under (outermost first), its
    language and its text."""

    page: Path
    headings: tuple[str, ...]
    lang: str
    body: str

    @property
    def where(self) -> str:
        section = self.headings[-1] if self.headings else "(top)"
        return f"{self.page.relative_to(PROJECT_ROOT)} § {section}"


def pages() -> list[Path]:
    """The README and every page under ``docs/``."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order, with the headings above it (headings inside
    code blocks do not count)."""
    text = page.read_text(encoding="utf-8")
    fences = list(FENCE.finditer(text))
    inside = [(m.start(), m.end()) for m in fences]
    headings = [
        (m.start(), len(m.group(1)), m.group(0))
        for m in HEADING.finditer(text)
        if not any(start <= m.start() < end for start, end in inside)
    ]
    found = []
    for fence in fences:
        chain: list[tuple[int, str]] = []
        for start, level, heading in headings:
            if start > fence.start():
                break
            chain = [(lvl, h) for lvl, h in chain if lvl < level] + [(level, heading)]
        found.append(Block(page, tuple(h for _, h in chain), fence.group(1), fence.group(2)))
    return found


def section_blocks(page: Path, heading: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block under ``heading`` (the full heading line,
    ``"## Walkthrough"``) of ``page``, subsections included."""
    return [(b.lang, b.body) for b in blocks(page) if heading in b.headings]


def page_blocks(page: Path) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block of ``page``."""
    return [(b.lang, b.body) for b in blocks(page)]


def workflow_files() -> dict[str, str]:
    """The workflow files the CI page's set-up shows, by file name."""
    text = (DOCS / "ci.md").read_text(encoding="utf-8")
    section = text[text.index("## Set-up\n") : text.index("\n## ", text.index("## Set-up\n") + 1)]
    found = re.findall(r"`\.github/workflows/([\w-]+\.yml)`:\n\n```yaml\n(.*?)```", section, re.S)
    return dict(found)


def action_ref() -> str:
    """``owner/name@ref`` of the action the CI page's workflow files use (one for all)."""
    refs = {
        ref
        for text in workflow_files().values()
        for ref in re.findall(r"uses: (osmosis-ai/osmosis-reconciler@\S+)", text)
    }
    (ref,) = refs
    return ref
