"""Every page a user reads (README.md and docs/) stands on its own: its relative links point
at files in this repository, their ``#anchors`` at headings of those pages, and it never
sends the reader to the design notes the project was built from (``shared/``), which users
do not have."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
OUTSIDE = re.compile(r"(?<![\w.-])(?:\.\./)*shared/[\w./-]*|/work/\S*")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative file links of ``page`` that do not resolve to a file or directory
    inside ``root`` (anchors and external URLs are not checked)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    targets = LINK.findall(text) + REFERENCE.findall(text)
    broken = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue  # https:, mailto:, an anchor on the same page
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not path:
            continue
        resolved = (root / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
        resolved = resolved.resolve()
        if not resolved.is_relative_to(root) or not resolved.exists():
            broken.append(target)
    return broken


def anchors(page: Path) -> set[str]:
    """The ``#anchors`` of ``page``'s headings, made as GitHub makes them: lower case, every
    character but letters, digits, ``_``, ``-`` and spaces dropped, spaces as ``-``; a
    repeated heading gets ``-1``, ``-2``, ..."""
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n, candidate = 0, slug
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def broken_anchors(page: Path) -> list[str]:
    """The links of ``page`` to a ``#anchor`` of a Markdown page (itself or a relative one)
    that names no heading there; a link to a missing file is ``broken_links``' to report."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text) + REFERENCE.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        linked = (page.parent / path).resolve() if path else page
        if linked.suffix == ".md" and linked.is_file() and anchor not in anchors(linked):
            broken.append(target)
    return broken


def outside_references(page: Path) -> list[str]:
    """Mentions of files outside the repository (``shared/...``, absolute work paths)."""
    return OUTSIDE.findall(page.read_text(encoding="utf-8"))


def test_every_relative_link_resolves_inside_the_repository() -> None:
    found = {str(p.relative_to(ROOT)): broken_links(p) for p in pages()}
    assert {page: links for page, links in found.items() if links} == {}


def test_every_anchor_names_a_heading_of_its_page() -> None:
    found = {str(p.relative_to(ROOT)): broken_anchors(p) for p in pages()}
    assert {page: links for page, links in found.items() if links} == {}


def test_no_page_sends_the_reader_outside_the_repository() -> None:
    found = {str(p.relative_to(ROOT)): outside_references(p) for p in pages()}
    assert {page: refs for page, refs in found.items() if refs} == {}


def test_the_probes_find_what_they_look_for(tmp_path: Path) -> None:
    # The checks above pass on a clean tree; this shows they can fail.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text(
        "# There\n\n## Where a plan's `memory` goes\n\n## Again\n\n## Again\n", encoding="utf-8"
    )
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Intro\n"
        "See [the API](../shared/platform-api.md), [there](there.md#top), [gone](gone.md),\n"
        "[up](../../outside.md), [web](https://example.com/x.md), [here](#intro).\n"
        "```\n[in a code block](nowhere.md)\n```\n"
        "[ref]: missing.md\n"
        "[memory](there.md#where-a-plans-memory-goes), [twice](there.md#again-1),\n"
        "[renamed](there.md#where-a-plans-start-up-goes), [no heading](#nowhere).\n",
        encoding="utf-8",
    )
    assert broken_links(page, tmp_path.resolve()) == [
        "../shared/platform-api.md",
        "gone.md",
        "../../outside.md",
        "missing.md",
    ]
    assert outside_references(page) == ["../shared/platform-api.md"]
    assert broken_anchors(page) == [
        "there.md#top",
        "there.md#where-a-plans-start-up-goes",
        "#nowhere",
    ]
