"""`open_file`: show the user a place in a file, in the code's group, the
lines highlighted for a moment, the keys left where they were (only the
user moves them). Posted to the main thread, never waited for."""

from __future__ import annotations

from collections.abc import Callable

import sublime

from ...core import threads
from ..editor import find_open_view
from ..placement import code_group, keys_kept, show_without_focus

HIGHLIGHT_KEY = "qwen_ide_open_file"
HIGHLIGHT_MS = 2000
LOAD_POLL_MS = 50
LOAD_POLLS = 200  # a file Sublime takes more than 10 s to load is shown unhighlighted


def show_place(window: sublime.Window, path: str, line: int | None, column: int | None, end_line: int | None) -> None:
    open_view = find_open_view(path)  # here: finding it may resolve paths on the disk
    sublime.set_timeout(lambda: _show(window, path, open_view, line, column, end_line))


@threads.on_main
def _show(window: sublime.Window, path: str, view: sublime.View | None, line: int | None, column: int | None,
          end_line: int | None) -> None:
    if not window.is_valid():
        return
    if view is not None and view.is_valid() and view.window() == window:
        keep = window.active_view()
        if view != keep:
            show_without_focus(window, view, keep)
    else:
        with keys_kept(window):
            # A preview tab (transient) with no position: the cursor of a
            # file the user has open is theirs, so it is never set here.
            view = window.open_file(path, sublime.TRANSIENT, group=code_group(window))
    _when_loaded(view, lambda: _highlight(view, line, column, end_line), LOAD_POLLS)


def _when_loaded(view: sublime.View, then: Callable[[], None], polls: int) -> None:
    if view.is_loading() and polls > 0:
        sublime.set_timeout(lambda: _when_loaded(view, then, polls - 1), LOAD_POLL_MS)
    elif view.is_valid():
        then()


@threads.on_main
def _highlight(view: sublime.View, line: int | None, column: int | None, end_line: int | None) -> None:
    if line is None:
        return
    first = view.text_point(line - 1, max((column or 1) - 1, 0))
    last_row = max(end_line or line, line) - 1
    region = sublime.Region(view.line(view.text_point(line - 1, 0)).begin(), view.line(view.text_point(last_row, 0)).end())
    view.show_at_center(first)
    view.add_regions(HIGHLIGHT_KEY, [region], scope="region.yellowish", flags=sublime.RegionFlags.DRAW_NO_OUTLINE)
    sublime.set_timeout(lambda: view.erase_regions(HIGHLIGHT_KEY), HIGHLIGHT_MS)
