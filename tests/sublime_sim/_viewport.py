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
changes; past the end of a shorter text it shows the last row.
"""

from __future__ import annotations

LINE_HEIGHT = 18.0
EM_WIDTH = 8.0
VIEWPORT_EXTENT = (800.0, 600.0)
VISIBLE_ROWS = int(VIEWPORT_EXTENT[1] // LINE_HEIGHT)  # 33


def line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def row_of(starts: list[int], point: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:  # the last line start <= point
        middle = (low + high + 1) // 2
        if starts[middle] <= point:
            low = middle
        else:
            high = middle - 1
    return low


def top_row(viewport_y: float, rows: int) -> int:
    return max(0, min(int(viewport_y // LINE_HEIGHT), rows - 1))


def visible_span(text: str, viewport_y: float) -> tuple[int, int]:
    """The characters from the top row's start to the last shown row's end."""
    starts = line_starts(text)
    top = top_row(viewport_y, len(starts))
    last = top + VISIBLE_ROWS - 1
    end = starts[last + 1] - 1 if last + 1 < len(starts) else len(text)
    return starts[top], end


def y_to_show(text: str, viewport_y: float, begin: int, end: int) -> float:
    """The viewport's y once ``show`` has brought rows begin..end into view
    (unchanged if they are already visible)."""
    starts = line_starts(text)
    top = top_row(viewport_y, len(starts))
    first, last = row_of(starts, begin), row_of(starts, end)
    if first < top:
        top = first
    elif last >= top + VISIBLE_ROWS:
        top = min(first, last - VISIBLE_ROWS + 1)  # a region taller than the view: its start
    return top * LINE_HEIGHT


def y_to_center(text: str, point: int) -> float:
    row = row_of(line_starts(text), point)
    return max(row - VISIBLE_ROWS // 2, 0) * LINE_HEIGHT


def scrolled_y(text: str, viewport_y: float, rows: int) -> float:
    """The mouse wheel: ``rows`` down (up if negative), within the text."""
    count = len(line_starts(text))
    return max(0, min(top_row(viewport_y, count) + rows, count - 1)) * LINE_HEIGHT
