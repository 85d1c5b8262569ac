"""Where a review of files (a turn's, a worktree's) undoes a hunk: the
file's open view, through the write path's buffer side, else the file on
disk; and the comments it shows: every chat's pending ones on its files
(a comment shows in every view of its file)."""

from __future__ import annotations

import sublime

from ...core.review_hunks.review_text import Comment
from ..chat.comments.comment_marks import book
from ..view_writes import undo_in_view


class FileViews:
    """The part of a review source that writes into the user's open views."""

    def view_of(self, window: sublime.Window, path: str) -> sublime.View | None:
        return window.find_open_file(path)

    def write_view(self, view: sublime.View, text: str, read: str) -> str | None:
        return undo_in_view(view, text, read)

    def comments(self) -> list[Comment]:
        return [Comment(c.path, c.line, c.text) for c in book.pending_in(None)]
