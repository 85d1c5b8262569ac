"""Where a window's review tabs go: the code's group split in two while the
window has a review (other groups, the chat's column, untouched), and the
window's arrangement put back as it was after its last review."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sublime

from ..editor import view_positions
from ..placement import code_group, keys_kept, open_beside

if TYPE_CHECKING:
    from sublime_types import WindowLayout


@dataclass
class SavedLayout:
    """A window's arrangement before its first review, restored after its last."""

    layout: WindowLayout
    active_group: int
    positions: list[tuple[sublime.View, int, int]]  # (view, group, index)
    sides: tuple[int, int]  # the groups of the reviews' original and proposal tabs


class ReviewLayouts:
    """The saved arrangement of every window that shows reviews (main thread)."""

    def __init__(self) -> None:
        self._saved: dict[int, SavedLayout] = {}

    def enter(self, window: sublime.Window, buffer: sublime.View | None) -> tuple[int, int]:
        """The groups of a review's two tabs: the code's group split in two
        (the file's group when it is open in this window), saved to restore."""
        saved = self._saved.get(window.id())
        if saved is not None:
            return saved.sides
        positions = []
        for group in range(window.num_groups()):
            for index, view in enumerate(window.views_in_group(group)):
                positions.append((view, group, index))
        code = code_group(window, buffer if buffer is not None and buffer.window() == window else None)
        sides = (code, window.num_groups())
        self._saved[window.id()] = SavedLayout(window.layout(), window.active_group(), positions, sides)
        open_beside(window, code)
        return sides

    def restore(self, window: sublime.Window) -> None:
        saved = self._saved.pop(window.id(), None)
        if saved is None or not window.is_valid():
            return
        # The review's end is not the user's doing: the keys stay where they are.
        with keys_kept(window):
            groups = len(saved.layout["cells"])
            target = min(saved.active_group, groups - 1)
            # Views in columns that are about to go (a kept proposal) join the group that had focus.
            for group in range(groups, window.num_groups()):
                for view in window.views_in_group(group):
                    window.set_view_index(view, target, window.num_views_in_group(target))
            window.set_layout(saved.layout)
            # Only views out of place move, and where the views are is read a group
            # at a time: a call per view made closing a review in a window of a
            # thousand tabs cost the main thread a thousand API calls.
            current = view_positions(window)
            for view, group, index in saved.positions:
                where = current.get(view.id())  # None: closed or in another window
                if where is not None and where != (group, index) and group < len(saved.layout["cells"]):
                    window.set_view_index(view, group, min(index, window.num_views_in_group(group)))
                    current = view_positions(window)
