"""Renderers: a ``Plan`` in, a string out (design.md §9). Pure; they never recompute the plan.

* ``render_text``      Terraform-like terminal output (ANSI colours only when asked);
* ``render_markdown``  a sticky pull-request comment, capped below ``max_chars``;
* ``render_json``      machine-readable, ``format_version`` "1.0".

``plan_to_dict`` is the JSON shape of a plan, also the body of a saved plan (``--out``),
whose format and reader live in ``reconciler.engine.saved_plan``.

Modules: ``pieces`` (words, colours, escaping shared by the renders), ``text``,
``markdown``, ``jsondoc``, ``refresh``,
``tables`` (the results tables the renders share). This module only re-exports: ``from
reconciler.render import X`` works for every public name.

Every name from outside (addresses, run names and ids, commit subjects, config values in
diffs, the Platform's texts in details and drift) goes through ``escape_text`` in the text
and markdown renders, so a newline or an ANSI/OSC sequence in a file name cannot forge
lines or rewrite the terminal; in markdown, names are also put in code spans and a ``<``
in plain text cannot open HTML.
"""

from __future__ import annotations

from reconciler.render.jsondoc import plan_to_dict, refresh_to_dict, render_json
from reconciler.render.markdown import render_markdown
from reconciler.render.pieces import (
    ACTION_VERBS,
    DRIFT_TEXT,
    IGNORED_SHOWN,
    MARKDOWN_MARKER,
    NO_CHANGES,
    REASON_TEXT,
    UNMANAGED_LIST_MAX,
    ignored_line,
    reason_text,
    unmanaged_line,
)
from reconciler.render.refresh import render_refresh_markdown, render_refresh_text
from reconciler.render.tables import (
    TEXT_RESULT_ROWS,
    format_table,
    render_results_markdown,
    render_results_text,
)
from reconciler.render.text import render_text, summary_line

__all__ = [
    "ACTION_VERBS",
    "DRIFT_TEXT",
    "IGNORED_SHOWN",
    "MARKDOWN_MARKER",
    "NO_CHANGES",
    "REASON_TEXT",
    "TEXT_RESULT_ROWS",
    "UNMANAGED_LIST_MAX",
    "format_table",
    "ignored_line",
    "plan_to_dict",
    "reason_text",
    "refresh_to_dict",
    "render_json",
    "render_markdown",
    "render_refresh_markdown",
    "render_refresh_text",
    "render_results_markdown",
    "render_results_text",
    "render_text",
    "summary_line",
    "unmanaged_line",
]
