"""The one way text from an agent or a record becomes text the editor shows
in a tab's name, a quick panel, the status bar or a notification (pure).

Taken where the text is adopted: one line, bounded, with the characters that
could spoof what is shown taken out: control characters (C0, DEL, C1: NUL,
ESC and the terminal sequences they start), format characters (the bidi
overrides and isolates such as U+202E, zero widths), surrogates, private-use
and unassigned code points, and line or paragraph separators; runs of white
space become one space."""

from __future__ import annotations

import re
import unicodedata

_DROPPED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_SPACES = re.compile(r"\s+")
# Scanned at most this many characters per character kept: a hostile string
# of a million zero-width characters costs a bounded scan, not a million.
_SCAN_FACTOR = 4


def display_text(value: object, limit: int) -> str:
    """`value` as one line of at most `limit` characters fit to show ("" for
    anything but a string); a longer one ends with "…"."""
    if not isinstance(value, str) or limit <= 0:
        return ""
    scanned = value[: limit * _SCAN_FACTOR + 1]
    kept = "".join(" " if char.isspace() else char for char in scanned
                   if char.isspace() or unicodedata.category(char) not in _DROPPED)
    line = _SPACES.sub(" ", kept).strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
