"""The banner of a review: an annotation beside the proposal's first line
with the Accept / Reject links and the notes, or the note on a proposal left
open after its review ended."""

from __future__ import annotations

import html
from collections.abc import Callable

import sublime

BANNER_KEY = "qwen_companion.review"
NOTE_KEY = "qwen_companion.review_note"  # on a proposal left open after its review ended

ORPHANED_NOTE = (
    "Orphaned: the Qwen Code session that proposed this change has ended. Accepting now "
    "sends nothing and changes no file."
)

_STYLE = """
<style>
    .qwen-review { padding: 0.4rem 0.6rem; border-radius: 0.3rem; background-color: color(var(--background) blend(var(--bluish) 85%)); }
    .qwen-review .note { margin-top: 0.3rem; color: var(--yellowish); }
    .qwen-review a { font-weight: bold; text-decoration: none; }
</style>
"""

# Drawn, not part of the text: no fill, no outline, no undo step.
_BANNER_FLAGS = sublime.RegionFlags.DRAW_NO_FILL | sublime.RegionFlags.DRAW_NO_OUTLINE | sublime.RegionFlags.NO_UNDO


def show_review_banner(
    view: sublime.View, name: str, notes: list[str], orphaned: bool, on_navigate: Callable[[str], None]
) -> None:
    """The banner of an open review of the file `name`: links `accept` and `reject`."""
    notes = [ORPHANED_NOTE, *notes] if orphaned else notes
    body = (
        f"Qwen Code proposes this change to <b>{html.escape(name)}</b>. Edit it here if you like, then "
        f'<a href="accept">Accept</a> &nbsp; <a href="reject">Reject</a>'
    )
    body += "".join(f'<div class="note">{html.escape(note)}</div>' for note in notes)
    show_banner(view, BANNER_KEY, body, on_navigate)


def show_banner(view: sublime.View, key: str, body: str, on_navigate: Callable[[str], None] | None = None) -> None:
    """The banner as an annotation beside the first line, the top of the tab.
    Sublime draws a block phantom below the line of its region, so a phantom
    at 0 would sit between the first line and the rest of the proposal."""
    content = f'<body id="qwen-review">{_STYLE}<div class="qwen-review">{body}</div></body>'
    view.add_regions(key, [sublime.Region(0, 0)], annotations=[content], flags=_BANNER_FLAGS, on_navigate=on_navigate)


def add_note(view: sublime.View, text: str) -> None:
    """A banner on a proposal left open after its review ended."""
    show_banner(view, NOTE_KEY, html.escape(text))
