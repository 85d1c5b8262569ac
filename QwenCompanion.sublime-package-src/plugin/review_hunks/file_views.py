"""Where a review of files (a turn's, a worktree's) undoes a hunk: the
file's open view, through the write path's buffer side, else the file on
disk; and the comments it shows: every chat's pending ones on its files
(a comment shows in every view of its file); and how it follows the
agent's writes while a turn runs."""

from __future__ import annotations

from collections.abc import Callable

import sublime

from ...core.chat.history.turn_changes import TurnChanges
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


def watch_writes(turns: TurnChanges | None, wrote: Callable[[str], None]) -> Callable[[], None]:
    """`wrote(path)` after each write of a chat's turns (on the writer's thread); the call that stops it."""
    if turns is None:
        return lambda: None
    turns.write_listeners.append(wrote)
    return lambda: turns.write_listeners.remove(wrote) if wrote in turns.write_listeners else None
