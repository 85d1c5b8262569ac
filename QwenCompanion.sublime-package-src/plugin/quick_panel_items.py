"""The one way the package makes a quick panel row: from plain text.

Sublime reads a `QuickPanelItem`'s `details` as minihtml (sublimetext.com/
docs/minihtml.html): `Vec<u8>` would lose `<u8>`, and an agent's `<a
href>` would be a live link in the panel. The trigger and annotation are
plain text; the details are escaped here, so no caller can forget."""

from __future__ import annotations

import html
from collections.abc import Sequence

import sublime


def panel_item(trigger: str, details: str | Sequence[str] = "", annotation: str = "",
               kind: tuple[sublime.KindId, str, str] = sublime.KIND_AMBIGUOUS) -> sublime.QuickPanelItem:
    """A quick panel row showing `trigger`, `annotation` and each line of `details` as written."""
    shown = html.escape(details, quote=False) if isinstance(details, str) else [
        html.escape(line, quote=False) for line in details]
    return sublime.QuickPanelItem(trigger, shown, annotation, kind)
