"""What part of a view is on screen: a fixed number of rows from a top row.

Facts (Sublime's ``sublime.py``): ``visible_region()`` is "the currently
visible area of the view"; ``show()`` "scrolls the view to show the given
location" (for a ``Selection`` only its first region) and ``show_at_center``
centres it; ``set_viewport_position`` scrolls to a layout position. None of
them moves the selection, and scrolling with the mouse wheel moves only the
viewport. Text a plugin inserts does not scroll the view (the ``append``
command scrolls only with ``scroll_to_end``); after a command the user runs
from a key or by typing, Sublime scrolls to keep the first caret in view.

The model: no word wrap, so a row is a line; ``VISIBLE_ROWS`` rows fit in
``viewport_extent``. The viewport keeps its layout position while text
changes; past the end of a shorter text it shows the last row. Rows are
found in the buffer's rope (O(log n)), as Sublime keeps its line index.
"""

from __future__ import annotations

from ._rope import Rope

LINE_HEIGHT = 18.0
EM_WIDTH = 8.0
VIEWPORT_EXTENT = (800.0, 600.0)
VISIBLE_ROWS = int(VIEWPORT_EXTENT[1] // LINE_HEIGHT)  # 33


def top_row(viewport_y: float, rows: int) -> int:
    return max(0, min(int(viewport_y // LINE_HEIGHT), rows - 1))


def visible_span(text: Rope, viewport_y: float) -> tuple[int, int]:
    """The characters from the top row's start to the last shown row's end."""
    rows = text.newlines + 1
    top = top_row(viewport_y, rows)
    last = top + VISIBLE_ROWS - 1
    end = text.row_start(last + 1) - 1 if last + 1 < rows else len(text)
    return text.row_start(top), end


def y_to_show(text: Rope, viewport_y: float, begin: int, end: int) -> float:
    """The viewport's y once ``show`` has brought rows begin..end into view
    (unchanged if they are already visible)."""
    top = top_row(viewport_y, text.newlines + 1)
    first, last = text.newlines_before(begin), text.newlines_before(end)
    if first < top:
        top = first
    elif last >= top + VISIBLE_ROWS:
        top = min(first, last - VISIBLE_ROWS + 1)  # a region taller than the view: its start
    return top * LINE_HEIGHT


def y_to_center(text: Rope, point: int) -> float:
    return max(text.newlines_before(point) - VISIBLE_ROWS // 2, 0) * LINE_HEIGHT


def scrolled_y(text: Rope, viewport_y: float, rows: int) -> float:
    """The mouse wheel: ``rows`` down (up if negative), within the text."""
    count = text.newlines + 1
    return max(0, min(top_row(viewport_y, count) + rows, count - 1)) * LINE_HEIGHT
