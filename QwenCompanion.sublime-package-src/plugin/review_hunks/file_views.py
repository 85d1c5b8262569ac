"""Where a review of files (a turn's, a worktree's) undoes a hunk: the
file's open view, through the write path's buffer side, else the file on disk."""

from __future__ import annotations

import sublime

from ..view_writes import undo_in_view


class FileViews:
    """The part of a review source that writes into the user's open views."""

    def view_of(self, window: sublime.Window, path: str) -> sublime.View | None:
        return window.find_open_file(path)

    def write_view(self, view: sublime.View, text: str, read: str) -> str | None:
        return undo_in_view(view, text, read)
