"""What Sublime does to a buffer as it saves it, before the packages'
``on_pre_save`` listeners: the two on-save settings of Default's
Preferences (build 4xxx; Default's ``trim_trailing_white_space.py`` holds
the commands of the same names).

- ``trim_trailing_white_space_on_save``: ``"none"`` (the default), ``"all"``,
  or ``"not_on_caret"`` (white space whose erasing would move a caret is
  kept: a caret after its start and up to its end); the older ``true`` is
  ``"all"`` and ``false`` ``"none"``. Trailing white space is ``[\\t ]+$``, as
  the command finds it. With ``trim_only_modified_white_space`` (default
  ``true``, build 4051) only lines changed since the file was loaded or last
  saved are trimmed (lines told apart as a line diff does); a buffer never
  loaded or saved has every line changed (build 4052).
- ``ensure_newline_at_eof_on_save`` (default ``false``): a buffer that is not
  empty and does not end with ``"\\n"`` gets one.

Trimming comes first, then the newline (the order Default declares its
listeners in). Default is the first package Sublime loads, so these run
before any other package's ``on_pre_save``, which run in the order the
packages were loaded; everything they leave in the buffer is what is written."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._app import App

TRAILING_WHITE_SPACE = re.compile(r"[\t ]+$", re.MULTILINE)
TRIM_MODES = {True: "all", False: "none", None: "none"}


def trim_mode(value: Any) -> str:
    """The setting's mode; a value Sublime does not know trims nothing."""
    mode = TRIM_MODES.get(value, value) if isinstance(value, (bool, type(None))) else value
    return mode if mode in ("all", "not_on_caret") else "none"


def changed_rows(saved: str | None, now: str) -> set[int] | None:
    """The rows of `now` not found unchanged in `saved` (None: every row)."""
    if saved is None:
        return None
    old, new = saved.split("\n"), now.split("\n")
    rows: set[int] = set()
    for tag, _, _, first, last in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            rows.update(range(first, last))
    return rows


def trailing_white_space(text: str, mode: str, rows: set[int] | None, carets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The regions the trim erases, first to last."""
    if mode == "none":
        return []
    points = [point for span in carets for point in span] if mode == "not_on_caret" else []
    found = []
    for match in TRAILING_WHITE_SPACE.finditer(text):
        begin, end = match.span()
        if rows is not None and text.count("\n", 0, begin) not in rows:
            continue
        if any(begin < point <= end for point in points):
            continue
        found.append((begin, end))
    return found


def rewrite_before_save(app: App, vid: int) -> None:
    """Trim and end the buffer as its settings say, as one edit (its events fired after)."""
    with app.lock:
        st = app.view(vid)
        if st is None:
            return
        settings = app.settings[st.settings_id]
        mode = trim_mode(settings.lookup("trim_trailing_white_space_on_save"))
        only_modified = settings.lookup("trim_only_modified_white_space") is not False
        newline = settings.lookup("ensure_newline_at_eof_on_save") is True
        text = st.buffer.text
        saved = st.buffer.saved_rope
        carets = list(st.sel)
    rows = changed_rows(None if saved is None else str(saved), text) if only_modified and mode != "none" else None
    erased = trailing_white_space(text, mode, rows, carets)
    if not erased and not (newline and text and not text.endswith("\n")):
        return
    before = app.snapshot(vid)
    token = app.new_id("edit")
    app.begin_edit(vid, token)
    try:
        for begin, end in reversed(erased):
            app.modify(vid, token, begin, end, "")
        size = len(text) - sum(end - begin for begin, end in erased)
        if newline and size and not app.buffer_text(vid).endswith("\n"):
            app.modify(vid, token, size, size, "\n")
    finally:
        app.end_edit(vid, token)
    app.flush_modifications(vid, before)

